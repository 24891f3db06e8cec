"""Verifying pairs by execution: both programs of every pair with a ``main`` built for an NVIDIA GPU, run, and their
outputs judged (stage ``execute``: :mod:`cass.stages.execute`)."""

from __future__ import annotations

from dataclasses import asdict

import polars as pl

from cass.execution.compare import first_difference, tolerant_equal
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import (
    SIDES,
    Build,
    Run,
    build_programs,
    disagreement,
    run_programs,
    takes_arguments,
)
from cass.text.cuda import main_signature
from store import Store
from toolchains.programs import ProgramLimits

RUNS_DTYPE = pl.List(pl.Struct({"verdict": pl.String, "exit_code": pl.Int64, "stdout": pl.String,
                                "stderr": pl.String, "wall_s": pl.Float64, "max_rss_kib": pl.Int64}))
COLUMNS = {"exec_status": pl.String, "exec_detail": pl.String, "exec_host": pl.String,
           "cuda_program": pl.String, "hip_program": pl.String, "cuda_runs": RUNS_DTYPE, "hip_runs": RUNS_DTYPE}


def judge(store: Store, runs: dict[str, list[Run]], takes_arguments: bool, tolerance: dict) -> tuple[str, str]:
    """(exec_status, detail) of a pair whose both programs ran."""
    for side in SIDES:
        for n, run in enumerate(runs[side], 1):
            if run.verdict == "timeout":
                return "timeout", f"{side} run {n} ran out of time"
    for side in SIDES:
        for n, run in enumerate(runs[side], 1):
            if not run.ok:
                status = "needs_input" if side == "cuda" and takes_arguments else f"{side}_failed"
                return status, f"{side} {run.failure(store, n)}"
    for side in SIDES:
        if differs := disagreement(store, runs[side]):
            return "nondeterministic", f"{side}: {differs}"
    cuda, hip = store.get(runs["cuda"][0].stdout), store.get(runs["hip"][0].stdout)
    if cuda == hip:
        return "match", ""
    status = "match_tolerant" if tolerant_equal(cuda, hip, **tolerance) else "mismatch"
    return status, first_difference(cuda, hip)


def execute(store: Store, params: dict, rows: list[dict], host: ExecutionHost | None,
            executor: dict) -> tuple[list[dict], dict]:
    """The execution columns of every row, and the stage's run report."""
    limits = ProgramLimits(**params["limits"])
    results = {row["sample_id"]: {"exec_host": host.name if host else None} for row in rows}
    mains = {row["sample_id"]: main_signature(store.get_text(row["files"][0]["digest"], "replace")) for row in rows}
    runnable = [row for row in rows if mains[row["sample_id"]] is not None]
    for sample, signature in mains.items():
        if signature is None:
            results[sample].update(exec_status="no_main", exec_detail="the main file defines no main function")
    if host is None:
        for row in runnable:
            results[row["sample_id"]].update(exec_status="not_run:no_gpu_host",
                                             exec_detail="no GPU host (params.yaml execute.host)")
        return [{"sample_id": s, **r} for s, r in results.items()], {"host": None}
    host.require_arch(params["archs"])
    builds, build_counts, build_keys = build_programs(store, params, runnable, executor["workers"] or None)
    binaries = {b.binary for b in builds.values() if b.binary}
    found, run_counts, run_keys = run_programs(store, host, limits, binaries, params["runs"], params["workers"],
                                               executor["host_wait_s"])
    for row in runnable:
        sample, result = row["sample_id"], results[row["sample_id"]]
        built: dict[str, Build] = {side: builds[sample, side] for side in SIDES}
        result.update({f"{side}_program": b.binary for side, b in built.items()})
        if failed := next((s for s in SIDES if built[s].binary is None), None):
            # a build that failed for no reason of the source (killed, out of time) is not a verdict on the pair
            transient = built[failed].reason in ("transient", "timeout")
            result.update(exec_status="not_run:transient" if transient else f"{failed}_failed",
                          exec_detail=f"build: {built[failed].reason}: {built[failed].detail[:2000]}")
            continue
        if missing := [s for s in SIDES if None in found[built[s].binary]]:
            why = ("no run recorded for GPU host " + host.name) if not host.live else "a run failed transiently"
            result.update(exec_status="not_run:no_gpu_host" if not host.live else "not_run:transient",
                          exec_detail=f"{'+'.join(missing)}: {why}")
            continue
        runs = {side: [Run.of(store, o) for o in found[built[side].binary]] for side in SIDES}
        result.update({f"{side}_runs": [asdict(r) for r in runs[side]] for side in SIDES})
        status, detail = judge(store, runs, takes_arguments(mains[sample]), params["tolerance"])
        result.update(exec_status=status, exec_detail=detail)
    keys = build_keys | run_keys
    report = {"host": {"name": host.name, **asdict(host.host), "description": host.host.describe(),
                       "fingerprint": host.host.fingerprint()},
              "builds": dict(build_counts), "runs": run_counts, "keys": sorted(keys)}
    return [{"sample_id": s, **r} for s, r in results.items()], report
