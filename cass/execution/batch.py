"""GPU hosts reached by copying files: a batch of binaries out, their runs back into the store.

``export``: build both programs of every pair with a ``main`` (cached actions, as the ``execute``
stage builds them) and write ``DIR/binaries/<digest>`` and ``DIR/batch.json`` (the limits of
params.yaml ``execute.limits``, and ``execute.runs`` runs of each binary). The GPU host runs
``python -m toolchains.gpu run-batch DIR`` (:mod:`toolchains.gpu`). ``import``: every run of
``DIR/results.json`` becomes the cached run action the ``execute`` stage looks up (keyed by the
binary, the GPU host's fingerprint, the limits and the run's number), and the host's facts are
recorded in ``gpu_hosts/<name>.json``; ``execute.host: recorded:<name>`` then takes those runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from cass.engine.actions import ActionRunner
from cass.execution.hosts import record_host
from cass.execution.programs import build_programs, run_action
from cass.pipeline.manifests import read_manifest
from cass.text.cuda import main_signature
from store import Store
from toolchains import JobResult
from toolchains.gpu import BATCH_FILE, RESULTS_FILE, RunHost
from toolchains.programs import PROGRAM_OUTPUTS, RUN_FACT_KEYS, RUN_FACTS, ProgramLimits


def write_batch(store: Store, folder: Path, binaries: set[str], params: dict) -> int:
    """``binaries`` (store digests) and ``execute.runs`` runs of each under ``execute.limits``, as a batch
    directory; returns the number of runs."""
    (folder / "binaries").mkdir(parents=True, exist_ok=True)
    for digest in sorted(binaries):
        (folder / "binaries" / digest).write_bytes(store.get(digest))
    runs = [{"binary": digest, "run": n} for digest in sorted(binaries) for n in range(1, params["runs"] + 1)]
    (folder / BATCH_FILE).write_text(json.dumps({"limits": params["limits"], "runs": runs}, indent=1) + "\n")
    return len(runs)


def export_batch(store: Store, params: dict, folder: Path, workers: int | None = None) -> dict:
    """Write the batch of the pair stage's programs to ``folder``; returns what it holds."""
    rows = [r for r in read_manifest("pair").iter_rows(named=True)
            if main_signature(store.get_text(r["files"][0]["digest"], "replace")) is not None]
    builds, counts, _ = build_programs(store, params, rows, workers)
    binaries = {b.binary for b in builds.values() if b.binary}
    runs = write_batch(store, folder, binaries, params)
    return {"pairs": len(rows), "binaries": len(binaries), "runs": runs,
            "build_failures": sum(b.binary is None for b in builds.values()), "builds": dict(counts)}


def import_results(store: Store, params: dict, folder: Path, name: str) -> dict:
    """Record a run batch's results in the store and its host in ``gpu_hosts/<name>.json``."""
    results = json.loads((folder / RESULTS_FILE).read_text())
    host = RunHost(**results["host"])
    path = record_host(name, host)   # refuses a name recorded with other facts before anything is stored
    limits = ProgramLimits(**results["limits"])
    recorder = ActionRunner(store, executor=None, timeout_s=limits.wall_s)
    for entry in results["runs"]:
        base = folder / "results" / entry["name"]
        outputs = {output: Path(f"{base}.{output}").read_bytes() for output in PROGRAM_OUTPUTS}
        missing = RUN_FACT_KEYS - set(json.loads(outputs[RUN_FACTS]))
        if missing:   # a GPU host whose checkout runs programs the old way: its runs would not read back
            raise ValueError(f"{base}.{RUN_FACTS} lacks {sorted(missing)}: the batch was run by an older "
                             "`python -m toolchains.gpu run-batch`; update the GPU host's checkout and run it again")
        result = JobResult(exit_code=entry["exit_code"], outputs=outputs, stderr=Path(f"{base}.stderr").read_bytes(),
                           host=name, sandbox=host.sandbox)
        recorder.record(run_action(host, limits, entry["binary"], entry["run"]), result)
    return {"runs": len(results["runs"]), "host": host.describe(), "recorded": str(path),
            "limits_match_params": results["limits"] == params["limits"]}
