"""Stage yield_report: per corpus, files compiled by NVIDIA, by AMD, by both, and every failure's
category and cause (:mod:`cass.report.yields`).

Candidates are the deduplicated samples (what both stacks were asked to build). Writes
``metrics/yield.json`` (a DVC metric), ``data/yield_report/failures.parquet`` (one row per failed
sample and vendor) and ``data/yield_report/yield.md`` (the tables bench/RESULTS.md carries).
"""

from __future__ import annotations

import polars as pl

from cass.report.yields import failures, markdown, report
from stages.common import DATA_DIR, manifest_path, read_manifest, write_metrics, write_parquet

STAGE = "yield_report"


def main() -> None:
    candidates = read_manifest("dedup")
    nvidia_ok = set(read_manifest("compile_nvidia")["sample_id"])
    amd_ok = set(read_manifest("compile_amd")["sample_id"])
    repaired = set(read_manifest("repair").filter(pl.col("hip_repaired"))["sample_id"])
    dropped = {
        "nvidia": pl.read_parquet(manifest_path("compile_nvidia", "dropped")),
        "amd": pl.concat([pl.read_parquet(manifest_path(s, "dropped")) for s in ("hipify", "compile_amd")]),
    }
    failed = failures(candidates, dropped, nvidia_ok)
    write_parquet(failed, DATA_DIR / STAGE / "failures.parquet", sort_by=None)
    yields = report(candidates, nvidia_ok, amd_ok, failed, repaired)
    (DATA_DIR / STAGE / "yield.md").write_text(markdown(yields))
    write_metrics("yield", yields)
    for origin, y in [*yields["corpora"].items(), ("all", yields["all"])]:
        print(f"{origin}: {y['files']} files, NVIDIA ok {y['nvidia_ok']}, AMD ok {y['amd_ok']}, both {y['both']} "
              f"({y['both_over_nvidia_ok']} of NVIDIA ok)")


if __name__ == "__main__":
    main()
