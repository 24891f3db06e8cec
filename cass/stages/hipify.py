"""Stage ``hipify``: translate every CUDA file of every sample (main file and local headers) to HIP
with AMD's hipify-perl, cached actions per distinct (path, content).

The HIP text comes from ``hipify-perl -quiet-warnings`` (the same text as its default mode, far
faster). Its diagnostics (identifiers it cannot map, such as ``unsupported device function
"__shfl_down_sync"``) are rebuilt as :mod:`cass.translate.hipify_warnings` describes: the real
hipify-perl's per-line checks on the lines that can warn, plus its check of the translated text;
they are kept per sample. The HIP files keep the CUDA files' relative paths, so
``#include "..."`` still resolves. OpenCL C samples pass through untranslated (both vendors compile the
same OpenCL source).
"""

from __future__ import annotations

import polars as pl

from cass.engine.actions import pipeline_toolchains, stage_runner
from cass.pipeline.context import Stage
from cass.pipeline.manifests import FILES_DTYPE, attach
from cass.translate.hipify import file_warnings, plan_files
from cass.translate.hipify_warnings import (
    WarningTables,
)
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    amd = pipeline_toolchains(stage.params, ("amd",))["amd"]
    tables = WarningTables(*amd.hipify_warning_tables())
    rows = stage.upstream("dedup")
    out = stage.output(rows.height)
    runner = stage_runner(stage.store, amd, stage.params, params["hipify"]["timeout_s"])
    cuda_files = {(f["path"], f["digest"]) for fs in rows["files"] for f in fs if not is_opencl(fs[0]["path"])}
    translate, checked = plan_files(store, amd, tables, cuda_files)
    outcomes = runner.run([*translate.values(), *(a for _, a in checked.values())], desc="hipify-perl")
    hip = {key: o.record.outputs["hip"] for key, a in translate.items() if (o := outcomes[a.key]).ok}
    warnings = {key: file_warnings(store, tables, key, d, checked.get(key), outcomes) for key, d in hip.items()}

    added = []
    empty = store.put_text("")
    for row in rows.iter_rows(named=True):
        if is_opencl(row["files"][0]["path"]):
            added.append({"sample_id": row["sample_id"], "hip_files": row["files"], "hipify_warnings": empty,
                          "hipify_warning_count": 0})
            continue
        keys = [(f["path"], f["digest"]) for f in row["files"]]
        failed = [(k[0], outcomes[translate[k].key]) for k in keys if k not in hip]
        failed += [(k[0], outcomes[checked[k][1].key]) for k in keys
                   if k in checked and not outcomes[checked[k][1].key].ok]
        if failed:
            path, outcome = failed[0]
            if outcome.transient:
                out.drop(row, "transient", f"hipify-perl {path}: {outcome.transient}")
            else:
                out.drop(row, "hipify_failed", f"{path}: {store.get_text(outcome.record.stderr, 'replace')}")
            continue
        text = "".join(warnings[k] for k in keys)
        added.append({
            "sample_id": row["sample_id"],
            "hip_files": [{"path": k[0], "digest": hip[k]} for k in keys],
            "hipify_warnings": store.put_text(text),
            "hipify_warning_count": sum("warning" in ln for ln in text.splitlines()),
        })
    out.run["actions"] = runner.counts.as_dict()
    out.run.update(runner.time_metrics())
    out.extra_metrics["files"] = {"translated": len(translate), "checked_for_warnings": len(checked),
                                  "lines_that_can_warn": sum(c.candidates for c, _ in checked.values()),
                                  "lines_checked": sum(len(c.lines) for c, _ in checked.values())}
    out.action_keys = runner.keys
    out.extra_metrics["samples_with_hipify_warnings"] = sum(1 for a in added if a["hipify_warning_count"])
    kept = attach(rows, added, {"hip_files": FILES_DTYPE, "hipify_warnings": pl.String,
                                "hipify_warning_count": pl.Int64})
    print(out.write(kept))
