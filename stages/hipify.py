"""Stage hipify: translate every CUDA file of every sample (main file and local headers) to HIP
with AMD's hipify-perl, one cached action per distinct (path, content).

hipify-perl writes the HIP text on stdout and its diagnostics (identifiers it cannot map, such as
``unsupported device function "__shfl_down_sync"``) on stderr; those warnings are kept per
sample. The HIP files keep the CUDA files' relative paths, so ``#include "..."`` still resolves.
"""

from __future__ import annotations

import polars as pl

from stages.actions import pipeline_toolchains, plan, stage_runner
from stages.common import FILES_DTYPE, StageOutput, attach, load_params, open_store, read_manifest

STAGE = "hipify"


def main() -> None:
    params = load_params()
    store = open_store(params)
    amd = pipeline_toolchains(params, ("amd",))["amd"]
    rows = read_manifest("dedup")
    out = StageOutput(STAGE, rows_in=rows.height)
    runner = stage_runner(store, amd, params, params["hipify"]["timeout_s"])
    actions = {
        (f["path"], f["digest"]): plan(amd, amd.hipify_step(f["path"]), {f["path"]: f["digest"]})
        for files in rows["files"] for f in files
    }
    outcomes = runner.run(list(actions.values()), desc="hipify-perl")
    added = []
    for row in rows.iter_rows(named=True):
        results = [(f["path"], outcomes[actions[(f["path"], f["digest"])].key]) for f in row["files"]]
        failed = [(p, o) for p, o in results if not o.ok]
        if failed:
            path, outcome = failed[0]
            if outcome.transient:
                out.drop(row, "transient", f"hipify-perl {path}: {outcome.transient}")
            else:
                out.drop(row, "hipify_failed", f"{path}: {store.get_text(outcome.record.stderr, 'replace')}")
            continue
        text = "".join(store.get_text(o.record.stderr, "replace") for _, o in results)
        added.append({
            "sample_id": row["sample_id"],
            "hip_files": [{"path": p, "digest": o.record.outputs["hip"]} for p, o in results],
            "hipify_warnings": store.put_text(text),
            "hipify_warning_count": sum("warning" in ln for ln in text.splitlines()),
        })
    out.extra_metrics["actions"] = runner.counts.as_dict()
    out.action_keys = runner.keys
    out.extra_metrics["samples_with_hipify_warnings"] = sum(1 for a in added if a["hipify_warning_count"])
    kept = attach(rows, added, {"hip_files": FILES_DTYPE, "hipify_warnings": pl.String,
                                "hipify_warning_count": pl.Int64})
    print(out.write(kept))


if __name__ == "__main__":
    main()
