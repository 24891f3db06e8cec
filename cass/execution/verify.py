"""Verifying pairs by execution: both programs of every pair with a ``main`` built for an NVIDIA GPU, run as the run
spec says, and their outputs judged (stage ``execute``: :mod:`cass.stages.execute`); the benchmark judges a
translation's runs with the same :func:`judge`.

Per argument set, in this order: a run out of time is ``timeout``; a run that did not exit 0 is ``needs_input`` (the
CUDA original takes arguments and got none) or ``<side>_failed``; a CUDA original that prints its usage is
``needs_input``; two programs that print nothing are ``no_output``; CUDA runs whose lines do not align are
``nondeterministic``. Then each HIP run's output is compared with the CUDA original's runs
(:class:`cass.execution.compare.Calibration`): ``match`` (the same bytes), ``match_masked`` (equal once the volatile
fields are masked, the other fields that vary within the CUDA runs' range), ``match_tolerant`` (numbers within
``execute.tolerance``, integers exact), else ``mismatch`` (where it first differs). A matching pair is still
``mismatch`` where the HIP self-check fails and the CUDA one does not; ``no_kernel`` where a run launched no kernel;
``kernel_count_differs`` where the HIP runs launched other numbers of kernels than the CUDA original's (:func:`
kernel_problem`); ``no_signal`` where the CUDA original's output holds no computed value
(:meth:`~cass.execution.compare.Calibration.computed_values`: only labels, self-check words, timings or echoed
arguments), so that no output could tell a wrong program. Where the runs were counted, what each program copied back
from the GPU is compared too (:mod:`cass.execution.device_reads`): a match, ``no_signal`` or ``no_output`` whose
device reads differ is ``device_mismatch``; ``no_signal`` or ``no_output`` whose steady device reads agree is
``match_device``. A pair is verified (``exec_verified``) when every argument set matches, every run of both sides
launched a counted kernel and the CUDA original's own self-check did not fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import polars as pl

from cass.engine.placement import Placement
from cass.engine.targets import Build
from cass.execution.compare import MIN_CALIBRATION_RUNS, Calibration, first_difference, prints_usage, self_check
from cass.execution.device_reads import DeviceReads, DeviceReadsError, ReadsComparison, compare_reads
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import (
    SIDES,
    ProgramRun,
    Run,
    build_programs,
    run_plan,
    run_programs,
    takes_arguments,
)
from cass.text.cuda import main_signature
from store import Store
from toolchains import Toolchain

RUNS_DTYPE = pl.List(pl.Struct({"args": pl.List(pl.String), "verdict": pl.String, "exit_code": pl.Int64,
                                "stdout": pl.String, "stderr": pl.String, "wall_s": pl.Float64,
                                "max_rss_kib": pl.Int64, "kernel_launches": pl.Int64,
                                "device_reads": pl.String}))
COLUMNS = {"exec_status": pl.String, "exec_detail": pl.String, "exec_host": pl.String, "exec_verified": pl.Boolean,
           "exec_masked_fields": pl.Int64, "cuda_self_check": pl.String, "hip_self_check": pl.String,
           "exec_units": pl.List(pl.String), "run_spec_source": pl.String,
           "cuda_program": pl.String, "hip_program": pl.String, "cuda_runs": RUNS_DTYPE, "hip_runs": RUNS_DTYPE}
MATCHES = ("match", "match_masked", "match_tolerant", "match_device")
"""The statuses of outputs that agree, weakest last (``match_device``: the output told nothing, what the programs
read back from the GPU agreed)."""


@dataclass
class Verdict:
    """How one argument set (or the whole pair) went."""

    status: str
    detail: str = ""
    masked: int = 0
    self_checks: tuple[str | None, str | None] = (None, None)


def compare(store: Store, cuda: list[Run], hip: list[Run], tolerance: dict) -> Verdict:
    """The outputs of two programs that both ran to exit 0: every HIP run against the CUDA original's runs (the
    weakest match, or the first mismatch), and ``no_signal`` where the CUDA output holds no computed value."""
    cuda_out, hip_out = [store.get(r.stdout) for r in cuda], [store.get(r.stdout) for r in hip]
    if not any(c.strip() for c in cuda_out) and not any(h.strip() for h in hip_out):
        return Verdict("no_output", "neither program printed anything")
    calibration = Calibration.of(cuda_out)
    if calibration is None:
        other = next(o for o in cuda_out if o.count(b"\n") != cuda_out[0].count(b"\n")) \
            if len({o.count(b"\n") for o in cuda_out}) > 1 else cuda_out[1]
        return Verdict("nondeterministic", f"cuda: {first_difference(cuda_out[0], other)}")
    found = [calibration.compare(out, tolerance) for out in hip_out]
    if failed := next((c for c in found if c.status == "mismatch"), None):
        return Verdict("mismatch", failed.detail, failed.masked)
    weakest = max(found, key=lambda c: MATCHES.index(c.status))
    fields = f"{weakest.masked} fields masked, {weakest.ranged} within the CUDA runs' range"
    detail = weakest.detail or (fields if weakest.masked or weakest.ranged else "")
    if not calibration.computed_values(cuda[0].args):
        return Verdict("no_signal", "the CUDA original's output holds no computed value (only labels, self-check "
                       "words, timings or its arguments echoed): no output could tell a wrong program",
                       weakest.masked)
    return Verdict(weakest.status, detail, weakest.masked)


def reads_of(store: Store, run: Run) -> DeviceReads | None:
    """A run's device reads, or None where they were not recorded or do not read (said on the verdict by
    :func:`compare_reads`: the CUDA original's are then not compared, a translation's differ)."""
    try:
        return DeviceReads.parse(store.get(run.device_reads)) if run.device_reads else None
    except DeviceReadsError:
        return None


def with_device_reads(store: Store, verdict: Verdict, cuda: list[Run], hip: list[Run], tolerance: dict) -> Verdict:
    """An output verdict (a match, ``no_signal`` or ``no_output``) with what both programs read back from the GPU:
    ``device_mismatch`` where the reads differ, ``match_device`` where the output told nothing and the reads agree;
    else as it was."""
    if verdict.status not in (*MATCHES, "no_signal", "no_output") or any(r.kernel_launches is None for r in hip):
        return verdict   # a translation run without the counter has no reads to compare (nor is it verified)
    reads: ReadsComparison = compare_reads([reads_of(store, r) for r in cuda], [reads_of(store, r) for r in hip],
                                           tolerance)
    if reads.status == "differ":
        return Verdict("device_mismatch", reads.detail, verdict.masked)
    if reads.status == "agree" and verdict.status in ("no_signal", "no_output"):
        return Verdict("match_device", reads.detail, verdict.masked)
    return verdict


def kernel_problem(cuda: list[Run], hip: list[Run]) -> tuple[str, str] | None:
    """Why the HIP runs' kernel launches disagree with the CUDA original's (``no_kernel``, ``kernel_count_differs``),
    or None: each HIP run launched as many kernels as the CUDA original where its runs agree on the number, and a
    number within their range widened by their spread where they do not. Runs not counted are no problem here (such
    a pair is not verified: :func:`verified`)."""
    expected, got = [r.kernel_launches for r in cuda], [r.kernel_launches for r in hip]
    if None in expected or None in got:
        return None
    for side, counts in (("cuda", expected), ("hip", got)):
        if 0 in counts:
            return "no_kernel", f"a {side} run launched no kernel on the GPU"
    lo, hi = min(expected), max(expected)
    if all(lo - (hi - lo) <= g <= hi + (hi - lo) for g in got):
        return None
    wanted = f"{lo}" if lo == hi else f"{lo} to {hi} (within {2 * lo - hi} to {2 * hi - lo})"
    return "kernel_count_differs", f"kernel launches per HIP run: {got}; the CUDA original's runs launched {wanted}"


def judge(store: Store, runs: dict[str, list[Run]], takes_arguments: bool, tolerance: dict) -> Verdict:
    """The verdict of one argument set whose runs all came back (at least ``MIN_CALIBRATION_RUNS`` of the CUDA
    original)."""
    if len(runs["cuda"]) < MIN_CALIBRATION_RUNS:
        raise ValueError(f"{len(runs['cuda'])} runs of the CUDA original; judging needs at least "
                         f"{MIN_CALIBRATION_RUNS} (execute.runs)")
    if not runs["hip"]:
        raise ValueError("no run of the HIP translation to judge (execute.hip_runs)")
    for side in SIDES:
        for n, run in enumerate(runs[side], 1):
            if run.verdict == "timeout":
                return Verdict("timeout", f"{side} run {n} ran out of time after {run.wall_s:.1f} s")
    without_arguments = not runs["cuda"][0].args
    for side in SIDES:
        for n, run in enumerate(runs[side], 1):
            if not run.ok:
                status = "needs_input" if side == "cuda" and takes_arguments and without_arguments else f"{side}_failed"
                return Verdict(status, f"{side} {run.failure(store, n)}")
    first = runs["cuda"][0]
    if prints_usage(store.get(first.stdout), store.get(first.stderr)):
        return Verdict("needs_input", "the CUDA original printed its usage")
    verdict = with_device_reads(store, compare(store, runs["cuda"], runs["hip"], tolerance), runs["cuda"],
                                runs["hip"], tolerance)
    checks = (self_check(store.get(first.stdout)),
              min((self_check(store.get(r.stdout)) or "~" for r in runs["hip"]), default=None))
    verdict.self_checks = (checks[0], None if checks[1] == "~" else checks[1])
    if verdict.status in (*MATCHES, "no_signal"):
        if verdict.self_checks[1] == "fail" and verdict.self_checks[0] != "fail":
            return Verdict("mismatch", "the HIP program's self-check failed where the CUDA original's did not",
                           self_checks=verdict.self_checks)
        if problem := kernel_problem(runs["cuda"], runs["hip"]):
            return Verdict(*problem, self_checks=verdict.self_checks)
    return verdict


def combine(verdicts: list[Verdict]) -> Verdict:
    """A pair's verdict over its argument sets: the first that does not match (a set that only could not tell,
    ``no_signal``, after any other), else the weakest match."""
    failed = [v for v in verdicts if v.status not in MATCHES]
    if failed:
        return min(failed, key=lambda v: v.status == "no_signal")
    weakest = max(verdicts, key=lambda v: MATCHES.index(v.status))
    checks = tuple("fail" if "fail" in found else "pass" if "pass" in found else None
                   for found in ({v.self_checks[side] for v in verdicts} for side in (0, 1)))
    return Verdict(weakest.status, weakest.detail, sum(v.masked for v in verdicts), checks)


def judge_pair(store: Store, runs: dict[str, list[Run]], takes_arguments: bool, tolerance: dict) -> Verdict:
    """A pair's verdict: each argument set judged (:func:`judge`), then combined (:func:`combine`)."""
    by_args: dict[tuple[str, ...], dict[str, list[Run]]] = {}
    for side in SIDES:
        for run in runs[side]:
            by_args.setdefault(run.args, {s: [] for s in SIDES})[side].append(run)
    verdicts = [judge(store, sets, takes_arguments, tolerance) for sets in by_args.values()]
    if len(verdicts) > 1:
        for verdict, args in zip(verdicts, by_args, strict=True):
            verdict.detail = f"arguments {' '.join(args) or '(none)'}: {verdict.detail}".rstrip(": ")
    return combine(verdicts)


def verified(verdict: Verdict, runs: dict[str, list[Run]]) -> bool:
    """Matched, with a kernel counted in every run of both sides, and a CUDA self-check that did not fail."""
    counts = [r.kernel_launches for side in SIDES for r in runs[side]]
    return (verdict.status in MATCHES and verdict.self_checks[0] != "fail"
            and all(c is not None and c > 0 for c in counts))


def main_signatures(rows: pl.DataFrame, store_root: str) -> dict[str, str | None]:
    """Per sample, the signature of its main file's ``main`` function, or None (a chunk, on a stage's worker)."""
    store = Store(store_root)
    return {sample: main_signature(store.get_text(files[0]["digest"], "replace"))
            for sample, files in zip(rows["sample_id"], rows["files"], strict=True)}


def execute(store: Store, params: dict, rows: list[dict], mains: dict[str, str | None], host: ExecutionHost | None,
            placement: Placement, routed: Mapping[str, Toolchain] | None = None) -> tuple[list[dict], dict]:
    """The execution columns of every row (``mains``: each one's :func:`main_signatures`), built where ``placement``
    puts the tools (a row that takes a route, with ``routed``'s toolchains: :func:`build_programs`), and the stage's
    run report."""
    if params["runs"] < MIN_CALIBRATION_RUNS or params["hip_runs"] < 1:
        raise ValueError(f"params.yaml execute.runs is {params['runs']} and hip_runs {params['hip_runs']}: the CUDA "
                         f"original's outputs are calibrated on at least {MIN_CALIBRATION_RUNS} runs of it, and the "
                         "HIP translation runs at least once")
    results = {row["sample_id"]: {"exec_host": host.name if host else None, "exec_verified": False,
                                  "exec_units": row["units"] or [],
                                  "run_spec_source": (row["run_spec"] or {}).get("source")} for row in rows}
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
    pairs = {(row["origin"], row["path"]): row for row in rows}
    builds, build_counts = build_programs(store, params, runnable, placement, pairs, routed)
    planned = planned_runs(runnable, builds, params)
    found, run_counts = run_programs(store, host, {r for rs in planned.values() for r in rs}, params["workers"])
    for row in runnable:
        sample, result = row["sample_id"], results[row["sample_id"]]
        built: dict[str, Build] = {side: builds[sample, side] for side in SIDES}
        result.update({f"{side}_program": b.binary for side, b in built.items()})
        for side in SIDES:   # every side that ran keeps its runs, also where the pair fails on the other
            done = planned.get((sample, side), [])
            if done and all(found[r] is not None for r in done):
                result[f"{side}_runs"] = [asdict(Run.of(store, found[r], r.invocation.args)) for r in done]
        if failed := next((s for s in SIDES if built[s].binary is None), None):
            # a build that failed for no reason of the source (killed, out of time) is not a verdict on the pair
            result.update(exec_status="not_run:transient" if built[failed].stopped else f"{failed}_failed",
                          exec_detail=f"build: {built[failed].reason}: {built[failed].detail[:2000]}")
            continue
        if missing := (row["run_spec"] or {}).get("missing_inputs"):
            result.update(exec_status="needs_input", exec_detail=f"the run spec reads {', '.join(missing[:3])}, which "
                          f"the tree does not have or which is over 16 MiB ({len(missing)} in all)")
            continue
        if lost := [s for s in SIDES if any(found[r] is None for r in planned[sample, s])]:
            why = ("no run recorded for GPU host " + host.name) if not host.live else "a run failed transiently"
            result.update(exec_status="not_run:no_gpu_host" if not host.live else "not_run:transient",
                          exec_detail=f"{'+'.join(lost)}: {why}")
            continue
        runs = {side: [Run.of(store, found[r], r.invocation.args) for r in planned[sample, side]] for side in SIDES}
        verdict = judge_pair(store, runs, takes_arguments(mains[sample]), params["tolerance"])
        result.update(exec_status=verdict.status, exec_detail=verdict.detail, exec_masked_fields=verdict.masked,
                      cuda_self_check=verdict.self_checks[0], hip_self_check=verdict.self_checks[1],
                      exec_verified=verified(verdict, runs))
    report = {"host": {"name": host.name, **asdict(host.host), "description": host.host.describe(),
                       "fingerprint": host.host.fingerprint()},
              "builds": dict(build_counts), "runs": run_counts}
    return [{"sample_id": s, **r} for s, r in results.items()], report


def planned_runs(rows: list[dict], builds: dict[tuple[str, str], Build], params: dict,
                 ) -> dict[tuple[str, str], list[ProgramRun]]:
    """The runs of every built program whose run spec's inputs are all there, by (sample id, side): each argument
    set ``execute.runs`` times on the CUDA side, ``execute.hip_runs`` times on the HIP side."""
    planned = {}
    for row in rows:
        if (row["run_spec"] or {}).get("missing_inputs"):
            continue
        invocations, limits = run_plan(row, params)
        for side in SIDES:
            if binary := builds[row["sample_id"], side].binary:
                count = params["runs"] if side == "cuda" else params["hip_runs"]
                planned[row["sample_id"], side] = [ProgramRun(binary, invocation, limits, n)
                                                   for invocation in invocations for n in range(1, count + 1)]
    return planned
