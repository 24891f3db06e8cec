"""Stage ``hipify``: translate every CUDA file of every sample (main file and local headers) to HIP
with AMD's hipify-perl, cached actions per distinct (path, content).

The HIP text comes from ``hipify-perl -quiet-warnings`` (the same text as its default mode, far
faster). Its diagnostics (identifiers it cannot map, such as ``unsupported device function
"__shfl_down_sync"``) are rebuilt as :mod:`cass.translate.hipify_warnings` describes: the real
hipify-perl's per-line checks on the lines that can warn, plus its check of the translated text;
they are kept per sample. The HIP files keep the CUDA files' relative paths, so
``#include "..."`` still resolves. OpenCL C samples pass through untranslated (both vendors compile the
same OpenCL source). The files are planned, looked up and their warnings rebuilt a chunk of samples at a time
on the stage's workers; the driver runs only the translations the store lacks (:mod:`cass.engine.settle`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from cass.engine.actions import pipeline_toolchains
from cass.engine.settle import Lookups, Settled, settle
from cass.pipeline.context import Stage
from cass.pipeline.manifests import FILES_DTYPE, SAMPLE_COLUMNS, attach
from cass.translate.hipify import file_warnings, plan_files
from cass.translate.hipify_warnings import WarningTables
from toolchains import Toolchain
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    amd = pipeline_toolchains(stage.params, ("amd",))["amd"]
    rows = stage.upstream("dedup")
    out = stage.output(rows.height)
    hipified = settle(stage, out, rows, {"amd": amd}, stage.params["hipify"]["timeout_s"], hipified_chunk, amd,
                      WarningTables(*amd.hipify_warning_tables()))
    added = hipified.added
    checked = {key: lines for c in hipified.chunks for key, lines in c.checked.items()}
    out.extra_metrics["files"] = {"translated": len(set().union(*(c.translated for c in hipified.chunks))),
                                  "checked_for_warnings": len(checked),
                                  "lines_that_can_warn": sum(candidates for candidates, _ in checked.values()),
                                  "lines_checked": sum(lines for _, lines in checked.values())}
    out.extra_metrics["samples_with_hipify_warnings"] = sum(1 for a in added if a["hipify_warning_count"])
    kept = attach(rows, added, {"hip_files": FILES_DTYPE, "hipify_warnings": pl.String,
                                "hipify_warning_count": pl.Int64})
    print(out.write(kept))


@dataclass
class Hipified(Settled):
    """A chunk's samples translated as far as the store's records go (the samples waiting with the actions the store
    lacks), and the files translated and those checked for warnings (with their lines that can warn and the lines
    checked)."""

    translated: set[tuple[str, str]] = field(default_factory=set)
    checked: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)


def hipified_chunk(rows: pl.DataFrame, carried: dict | None, lookups: Lookups, amd: Toolchain,
                   tables: WarningTables) -> Hipified:
    """The CUDA files of a chunk's samples translated and their warnings rebuilt as far as the store goes
    (:mod:`cass.engine.settle`; planned afresh in the second pass)."""
    store = lookups.store
    cuda_files = {(f["path"], f["digest"]) for fs in rows["files"] for f in fs if not is_opencl(fs[0]["path"])}
    translate, checked = plan_files(store, amd, tables, cuda_files)
    outcomes = lookups.outcomes("amd", [*translate.values(), *(a for _, a in checked.values())])
    hip = {key: o.record.outputs["hip"] for key, a in translate.items() if (o := outcomes.get(a.key)) and o.ok}
    chunk = Hipified(translated=set(translate), checked={k: (c.candidates, len(c.lines)) for k, (c, _) in
                                                         checked.items()})
    warnings: dict[tuple[str, str], str] = {}
    empty = store.put_text("")
    for row in rows.iter_rows(named=True):
        if is_opencl(row["files"][0]["path"]):
            chunk.added.append({"sample_id": row["sample_id"], "hip_files": row["files"], "hipify_warnings": empty,
                                "hipify_warning_count": 0})
            continue
        keys = [(f["path"], f["digest"]) for f in row["files"]]
        needed = [translate[k] for k in keys] + [checked[k][1] for k in keys if k in checked]
        if missing := [a for a in needed if a.key not in outcomes]:
            chunk.wait(row["sample_id"], {"amd": missing})
            continue
        failed = [(k[0], outcomes[translate[k].key]) for k in keys if k not in hip]
        failed += [(k[0], outcomes[checked[k][1].key]) for k in keys
                   if k in checked and not outcomes[checked[k][1].key].ok]
        if failed:
            path, outcome = failed[0]
            identity = {c: row[c] for c in SAMPLE_COLUMNS}
            if outcome.transient:
                chunk.dropped.append((identity, "transient", f"hipify-perl {path}: {outcome.transient}"))
            else:
                stderr = store.get_text(outcome.record.stderr, "replace")
                chunk.dropped.append((identity, "hipify_failed", f"{path}: {stderr}"))
            continue
        for k in keys:
            if k not in warnings:
                warnings[k] = file_warnings(store, tables, k, hip[k], checked.get(k), outcomes)
        text = "".join(warnings[k] for k in keys)
        chunk.added.append({
            "sample_id": row["sample_id"],
            "hip_files": [{"path": k[0], "digest": hip[k]} for k in keys],
            "hipify_warnings": store.put_text(text),
            "hipify_warning_count": sum("warning" in ln for ln in text.splitlines()),
        })
    return chunk
