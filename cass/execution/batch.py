"""GPU hosts reached by copying files: a batch of binaries out, their runs back into the store.

``export``: build both programs of every pair with a ``main`` (cached actions, as the ``execute``
stage builds them) and write ``DIR/binaries/<digest>``, the data files of their run specs as ``DIR/inputs/<digest>``,
the kernel counter and its probe in ``DIR/launch_counter`` and ``DIR/batch.json`` (every run the stage plans:
binary, arguments, working directory, data files, limits and run number). The GPU host runs
``python -m hosts.gpu run-batch DIR`` (:mod:`hosts.gpu`). ``import``: every run of
``DIR/results.json`` becomes the cached run action the ``execute`` stage looks up (keyed by the
binary, the GPU host's fingerprint, the invocation, the limits and the run's number), and the host's facts are
recorded in ``gpu_hosts/<name>.json``; ``execute.host: recorded:<name>`` then takes those runs.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from cass.engine.actions import ActionRunner
from cass.engine.cached import CachedMap
from cass.engine.placement import Placement
from cass.execution.hosts import ExecutionHost, record_host
from cass.execution.programs import ProgramRun, build_programs, routed_toolchains
from cass.execution.verify import planned_runs
from cass.pipeline.manifests import read_manifest
from cass.text.cuda import main_signature
from hosts.gpu import BATCH_FILE, COUNTER_DIR, RESULTS_FILE, RunHost
from store import Store
from toolchains import JobResult
from toolchains.launches import CounterBuildError, LaunchCounter, build_counter, build_probe
from toolchains.sandboxed_runs import DEVICE_READS, PROGRAM_OUTPUTS, RUN_FACT_KEYS, RUN_FACTS, Invocation, ProgramLimits


def write_batch(store: Store, folder: Path, planned: set[ProgramRun], params: dict) -> int:
    """The ``planned`` runs as a batch directory (binaries and data files by digest, the kernel counter); returns
    the number of runs."""
    for sub in ("binaries", "inputs"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    order = sorted(planned, key=lambda r: (r.binary, r.invocation.args, r.number))
    for digest in {r.binary for r in planned}:
        (folder / "binaries" / digest).write_bytes(store.get(digest))
    for digest in {d for r in planned for _, d in r.invocation.inputs}:
        (folder / "inputs" / digest).write_bytes(store.get(digest))
    try:
        build_counter().copy_to(folder / COUNTER_DIR, build_probe(params["archs"]))
    except CounterBuildError as error:   # the GPU host refuses the batch unless told to run it uncounted
        print(f"gpu-batch: kernel launches will not be counted: {error}", file=sys.stderr)
    runs = [{"binary": r.binary, "run": r.number, **r.invocation.describe(), "limits": asdict(r.limits)}
            for r in order]
    (folder / BATCH_FILE).write_text(json.dumps({"limits": params["limits"], "runs": runs}, indent=1) + "\n")
    return len(runs)


def merge_batches(folder: Path, batches: list[Path]) -> int:
    """Write the batches as one batch in ``folder`` (every run once, each with its own limits, in the order of the
    batches, so that a host stopped by a deadline has run the first ones; their kernel counter, which must be one);
    returns the number of runs."""
    runs: dict[str, dict] = {}
    counters = {b: LaunchCounter.found_in(b / COUNTER_DIR) for b in batches}
    if len({c.digest() if c else None for c in counters.values()}) > 1:
        raise ValueError(f"the batches carry different kernel counters: {sorted(map(str, batches))}")
    for batch in batches:
        listed = json.loads((batch / BATCH_FILE).read_text())
        for sub in ("binaries", "inputs"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            for path in (batch / sub).iterdir():
                if not (folder / sub / path.name).exists():
                    shutil.copyfile(path, folder / sub / path.name)
        for entry in listed["runs"]:
            entry = {"limits": listed["limits"], **entry}
            runs.setdefault(json.dumps(entry, sort_keys=True), entry)
        counter = counters[batch]
        if counter and not (folder / COUNTER_DIR).exists():
            shutil.copytree(counter.folder, folder / COUNTER_DIR)
    limits = json.loads((batches[0] / BATCH_FILE).read_text())["limits"]
    (folder / BATCH_FILE).write_text(json.dumps({"limits": limits, "runs": list(runs.values())}, indent=1) + "\n")
    return len(runs)


def not_recorded(store: Store, planned: set[ProgramRun], recorded: ExecutionHost) -> set[ProgramRun]:
    """The planned runs the store holds no result of for the ``recorded`` host (what a new batch must run)."""
    return planned - set(CachedMap(store).split({r: r.action(recorded.host).spec for r in planned})[0])


def export_batch(store: Store, params: dict, folder: Path, recorded: ExecutionHost | None = None) -> dict:
    """Write the batch of the pair stage's programs to ``folder`` (without the runs the store holds for the
    ``recorded`` host, where given: a batch of what changed), built as the execute stage builds them (``params``:
    params.yaml's); returns what it holds."""
    placement, execute = Placement.of(params), params["execute"]
    pairs = list(read_manifest("pair").iter_rows(named=True))
    rows = [r for r in pairs if main_signature(store.get_text(r["files"][0]["digest"], "replace")) is not None]
    builds, counts = build_programs(store, execute, rows, placement, {(r["origin"], r["path"]): r for r in pairs},
                                    routed_toolchains(params, placement, rows))
    planned = {r for runs in planned_runs(rows, builds, execute).values() for r in runs}
    missing = not_recorded(store, planned, recorded) if recorded else planned
    runs = write_batch(store, folder, missing, execute)
    return {"pairs": len(rows), "binaries": len({r.binary for r in missing}), "runs": runs,
            "already_recorded": len(planned) - len(missing),
            "build_failures": sum(b.binary is None for b in builds.values()), "builds": dict(counts)}


def import_results(store: Store, params: dict, folder: Path, name: str) -> dict:
    """Record a run batch's results in the store and its host in ``gpu_hosts/<name>.json``."""
    results = json.loads((folder / RESULTS_FILE).read_text())
    host = RunHost(**results["host"])
    path = record_host(name, host)   # refuses a name recorded with other facts before anything is stored
    recorder = ActionRunner(store, executor=None, timeout_s=results["limits"]["wall_s"])
    for entry in results["runs"]:
        base = folder / "results" / entry["name"]
        outputs = {output: Path(f"{base}.{output}").read_bytes() for output in PROGRAM_OUTPUTS}
        if (reads := Path(f"{base}.{DEVICE_READS}")).is_file():   # a counted run of a program that initialised CUDA
            outputs[DEVICE_READS] = reads.read_bytes()
        missing = RUN_FACT_KEYS - set(json.loads(outputs[RUN_FACTS]))
        if missing:   # a GPU host whose checkout runs programs the old way: its runs would not read back
            raise ValueError(f"{base}.{RUN_FACTS} lacks {sorted(missing)}: the batch was run by an older "
                             "`python -m hosts.gpu run-batch`; update the GPU host's checkout and run it again")
        result = JobResult(exit_code=entry["exit_code"], outputs=outputs, stderr=Path(f"{base}.stderr").read_bytes(),
                           host=name, sandbox=host.sandbox)
        invocation = Invocation(tuple(entry.get("args", ())), entry.get("workdir", ""),
                                tuple(map(tuple, entry.get("inputs", ()))))
        limits = ProgramLimits(**entry.get("limits", results["limits"]))
        recorder.record(ProgramRun(entry["binary"], invocation, limits, entry["run"]).action(host), result)
    return {"runs": len(results["runs"]), "host": host.describe(), "recorded": str(path),
            "limits_match_params": results["limits"] == params["limits"]}
