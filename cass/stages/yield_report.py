"""Stage yield_report: per corpus, files compiled by NVIDIA, by AMD, by both, and every failure's cause.
"""

from __future__ import annotations

import polars as pl

from cass.compiling.compile import Scope
from cass.pipeline.context import Stage
from cass.pipeline.manifests import write_parquet
from cass.pipeline.metrics import percent_of, write_metrics
from cass.report.yields import failures, markdown, report, template_yield
from store import Store


def run(stage: Stage) -> None:
    candidates = stage.upstream("dedup")
    nvidia = stage.upstream("compile_nvidia")
    nvidia_ok = set(nvidia["sample_id"])
    nvidia_fallback = set(nvidia.filter(pl.col("nvidia_toolchain") != "nvidia")["sample_id"])
    amd = stage.upstream("compile_amd")
    amd_ok = set(amd["sample_id"])
    amd_fallback = set(amd.filter(pl.col("amd_toolchain") != "amd")["sample_id"])
    repaired = set(stage.upstream("repair").filter(pl.col("hip_repaired"))["sample_id"])
    dropped = {
        "nvidia": pl.read_parquet(stage.upstream_path("compile_nvidia", "dropped")),
        "amd": pl.concat([pl.read_parquet(stage.upstream_path(s, "dropped")) for s in ("hipify", "compile_amd")]),
    }
    failed = failures(candidates, dropped, nvidia_ok)
    write_parquet(failed, stage.data_dir / "failures.parquet", sort_by=None)
    ingest_dropped = pl.read_parquet(stage.upstream_path("ingest", "dropped"))
    included = dict(ingest_dropped.filter(pl.col("reason") == "included_unit")["origin"].value_counts().iter_rows())
    parity = stage.upstream("branch_parity").select("sample_id", "branch_parity", "branch_divergences")
    needs_api = {i for ids in stage.work.chunks(needing_api, candidates.select("sample_id", "files"),
                                                str(stage.store.root), dict(stage.params["scope"])) for i in ids}
    hip_nvidia = stage.upstream("pair").select("sample_id", "hip_nvidia_build")
    yields = report(candidates, nvidia_ok, amd_ok, failed, repaired, included, parity, needs_api, hip_nvidia,
                    nvidia_fallback, amd_fallback)
    requests = stage.upstream_path("synthesize", "requests")
    if requests.exists():
        yields["synthetic_templates"] = template_yield(pl.read_parquet(requests), candidates, nvidia_ok, amd_ok)
    (stage.data_dir / "yield.md").write_text(markdown(yields))
    write_metrics("yield", yields)
    y = yields["all"]
    print(f"{stage.name}: {len(yields['corpora'])} corpora, {y['files']} files, NVIDIA ok {y['nvidia_ok']}, pairs "
          f"{y['both']} ({percent_of(y['both'], y['nvidia_ok'])} of NVIDIA ok); tables in {stage.data_dir}/yield.md")


def needing_api(rows: pl.DataFrame, store_root: str, scope: dict) -> list[str]:
    """The ids of the ``rows`` whose files use an API outside the scope (read from the store on a worker)."""
    store, needs = Store(store_root), Scope(scope).needs
    return [row["sample_id"] for row in rows.iter_rows(named=True)
            if needs([store.get_text(f["digest"], "replace") for f in row["files"]])]
