"""Building and running the real-program suite's programs: a task's CUDA original, and any translation of it (the
human port, a baseline's, a prediction) over the task's layout; and the reference outputs recorded from the CUDA
original on a GPU host.

Builds are the ``execute`` stage's (:mod:`cass.execution.programs`): the CUDA original with the pipeline's nvcc, a
translation through HIP's NVIDIA back end, both from the main file and the units its run spec lists, with
``execute.archs`` and ``execute.flags``, so a task's CUDA build is the very action the pipeline makes for the same
program. Runs are the same cached actions too.

References (``cass bench-tasks record``): per argument set the CUDA original runs ``execute.runs`` times (the
calibration that masks what varies between its own runs: timings) and the human port once. A task is kept when
its CUDA original ran cleanly on the visible set (exit 0, kernels launched, no usage printout, no failing
self-check) and the human port verifies against it on both sets (:func:`cass.execution.verify.judge`); where the
CUDA original fails on the hidden set, the hidden set becomes the visible one. Every other task is left out with
the reason.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import polars as pl

from cass.benchmark.real_tasks import MANIFEST, REAL_DIR, RealTask, card, load_files, read_manifest
from cass.engine.placement import Placement
from cass.engine.targets import Build
from cass.execution.compare import Calibration, prints_usage, self_check
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import (
    ProgramRun,
    ProgramSource,
    Run,
    build_program_targets,
    limits_for,
    run_programs,
)
from cass.execution.verify import judge, kernel_problem, verified
from store import Store
from toolchains.sandboxed_runs import Invocation

REFERENCES = REAL_DIR / "references.parquet"
ARG_SETS = ("visible", "hidden")
REFERENCE_SCHEMA = {"task_id": pl.String, "arg_set": pl.String, "args": pl.List(pl.String), "run": pl.Int64,
                    "verdict": pl.String, "exit_code": pl.Int64, "stdout": pl.Binary, "wall_s": pl.Float64,
                    "max_rss_kib": pl.Int64, "kernel_launches": pl.Int64, "device_reads": pl.Binary}


def load_suite(store: Store, params: dict, root: Path = Path()) -> tuple[dict[str, RealTask], dict[str, str],
                                                                        pl.DataFrame]:
    """The suite of ``root``'s ``translation_bench/real``: its tasks whose files check against the mirror
    (``benchmark.real.source``; put in ``store``) by id, why each other task's do not, and the references."""
    tasks, problems = load_files(store, Path(params["benchmark"]["real"]["source"]), read_manifest(root / MANIFEST)[1])
    references = pl.read_parquet(root / REFERENCES) if (root / REFERENCES).is_file() else None
    return {t.id: t for t in tasks}, problems, references


def build_task_programs(store: Store, params: dict, programs: dict[Hashable, tuple[str, RealTask, dict[str, str]]],
          placement: Placement) -> tuple[dict[Hashable, Build], Counter]:
    """Every ``key: (side, task, files)`` built (``cuda``: nvcc; ``hip``: HIP's NVIDIA back end) from the task's
    main file and units, ``files`` (path: digest) laid out as the task's tree."""
    builds, counts = build_program_targets(
        store, params, {key: ProgramSource(side, [task.main, *task.units], task.include_dirs, files)
                        for key, (side, task, files) in programs.items()}, placement)
    return builds, counts


def task_runs(task: RealTask, binary: str, arg_set: str, count: int, params: dict) -> list[ProgramRun]:
    """``count`` runs of ``binary`` as the task runs its programs with argument set ``arg_set``."""
    invocation = Invocation(tuple(task.arguments(arg_set)), task.workdir or task.folder,
                            tuple(sorted(task.inputs.items())))
    return [ProgramRun(binary, invocation, limits_for(params, task.timeout_s), n) for n in range(1, count + 1)]


@dataclass
class Recording:
    """What recording a suite's references needs: both programs of every task and their planned runs."""

    builds: dict[tuple[str, str], Build]
    runs: dict[tuple[str, str, str], list[ProgramRun]]
    """By (task id, side, argument set): the CUDA original ``execute.runs`` times, the human port once."""

    @property
    def planned(self) -> set[ProgramRun]:
        return {r for runs in self.runs.values() for r in runs}


def plan_recording(store: Store, params: dict, tasks: list[RealTask], placement: Placement) -> Recording:
    programs = {(t.id, side): (side, t, t.files if side == "cuda" else t.overlay(t.human))
                for t in tasks for side in ("cuda", "hip")}
    builds, _ = build_task_programs(store, params, programs, placement)
    runs = {}
    for task in tasks:   # a task one of whose programs does not build is left out: nothing of it runs
        if builds[task.id, "cuda"].binary and builds[task.id, "hip"].binary:
            for side, count in (("cuda", params["runs"]), ("hip", params["hip_runs"])):
                for arg_set in ARG_SETS[:1 + task.hidden_differs]:
                    runs[task.id, side, arg_set] = task_runs(task, builds[task.id, side].binary, arg_set, count,
                                                             params)
    return Recording(builds, runs)


def clean_run(store: Store, runs: list[Run]) -> str | None:
    """Why the CUDA original's runs cannot be a reference, or None: each exited 0 and launched a kernel, printed
    no usage and no failing self-check, and their outputs align line by line."""
    for n, run in enumerate(runs, 1):
        if not run.ok:
            return f"cuda_failed: {run.failure(store, n)}"
        if not run.kernel_launches:
            return f"no_kernel: run {n} launched {'no kernel' if run.kernel_launches == 0 else 'uncounted kernels'}"
        out = store.get(run.stdout)
        if prints_usage(out, store.get(run.stderr)):
            return "needs_input: the CUDA original printed its usage"
        if self_check(out) == "fail":
            return "cuda_self_check_failed: the CUDA original's own check failed"
    if len({store.get(r.stdout).count(b"\n") for r in runs}) > 1:
        return "nondeterministic: the CUDA original's runs print different numbers of lines"
    if not store.get(runs[0].stdout).strip():
        return "no_output: the CUDA original prints nothing"
    return None


def output_facts(store: Store, visible: list[Run], hidden: list[Run], tolerance: dict) -> tuple[bool, bool, bool]:
    """Of the CUDA original's runs: whether its visible output holds a computed value a wrong program would get
    wrong (:meth:`~cass.execution.compare.Calibration.computed_values`, its arguments echoed not counted); whether its
    hidden output does not match the visible runs'; whether its hidden runs launch other numbers of kernels. Where
    neither of the last two, a program that prints the visible answer and launches as many kernels would pass."""
    outs = {s: [store.get(r.stdout) for r in runs] for s, runs in (("visible", visible), ("hidden", hidden))}
    calibration = Calibration.of(outs["visible"])
    signal = calibration.computed_values(visible[0].args) > 0
    output_differs = any(calibration.compare(o, tolerance).status == "mismatch" for o in outs["hidden"])
    return signal, output_differs, kernel_problem(visible, hidden) is not None


def record(store: Store, params: dict, tasks: list[RealTask], host: ExecutionHost, placement: Placement,
           ) -> tuple[list[RealTask], list[dict], list[dict]]:
    """The kept tasks (with the hidden set settled and how each set went), the reference rows, and the tasks left
    out (benchmark, reason, detail), from the runs of ``host``."""
    plan = plan_recording(store, params, tasks, placement)
    found, _ = run_programs(store, host, plan.planned, params["workers"])
    if missing := sum(outcome is None for outcome in found.values()):   # a partial batch: record nothing yet
        raise ValueError(f"{missing} of {len(found)} planned runs have no result for GPU host {host.name}: export "
                         f"the missing ones (--missing-for {host.name}), run and import them, then record")
    kept, rows, left_out = [], [], []

    def leave(task: RealTask, reason: str, detail: str) -> None:
        left_out.append({"benchmark": task.benchmark, "reason": reason, "detail": detail})

    for task in tasks:
        failed = next((s for s in ("cuda", "hip") if plan.builds[task.id, s].binary is None), None)
        if failed:
            b = plan.builds[task.id, failed]
            leave(task, f"{'cuda' if failed == 'cuda' else 'port'}_build_failed", f"{b.reason}: {b.detail[:300]}")
            continue
        planned = {k[1:]: v for k, v in plan.runs.items() if k[0] == task.id}
        done = {k: [Run.of(store, found[r], r.invocation.args) for r in v] for k, v in planned.items()}
        if why := clean_run(store, done["cuda", "visible"]):
            leave(task, *why.split(": ", 1))
            continue
        notes = {}
        if task.hidden_differs and (why := clean_run(store, done["cuda", "hidden"])):
            notes["hidden"] = f"the visible set (with the halved arguments: {why})"
            task = replace(task, hidden_args=task.visible_args, hidden_differs=False)
        used = {"visible": "visible", "hidden": task.verified_set}
        verdicts = {s: judge(store, {side: done[side, used[s]] for side in ("cuda", "hip")}, bool(task.visible_args),
                             params["tolerance"]) for s in ARG_SETS}
        bad = next((s for s, v in verdicts.items()
                    if not verified(v, {side: done[side, used[s]] for side in ("cuda", "hip")})), None)
        if bad and verdicts[bad].status == "no_signal":
            leave(task, "no_output_signal", "the CUDA original's output holds no computed value (only labels, "
                  "timings, self-check words or its arguments echoed): it cannot tell a wrong program")
            continue
        if bad:
            leave(task, "port_disagrees", f"{bad} arguments: {verdicts[bad].status}: {verdicts[bad].detail[:300]}")
            continue
        signal, output_differs, kernels_differ = output_facts(store, done["cuda", "visible"],
                                                              done["cuda", task.verified_set], params["tolerance"])
        if not signal:
            leave(task, "no_output_signal", "the CUDA original's output holds no computed value (only labels, "
                  "timings, self-check words or its arguments echoed): it cannot tell a wrong program")
            continue
        if not output_differs and not kernels_differ:
            leave(task, "no_hidden_input", "no hidden argument set changes the CUDA original's output or its kernel "
                  "count: a program that prints the visible answer and launches as many kernels would pass")
            continue
        notes = {s: f"{verdicts[s].status}; {notes[s]}" if s in notes else verdicts[s].status for s in ARG_SETS}
        kept.append(replace(task, references=notes, hidden_output_differs=output_differs,
                            hidden_kernels_differ=kernels_differ))
        for arg_set in ARG_SETS[:1 + task.hidden_differs]:
            for n, run in enumerate(done["cuda", arg_set], 1):
                rows.append({"task_id": task.id, "arg_set": arg_set, "args": list(run.args), "run": n,
                             "verdict": run.verdict, "exit_code": run.exit_code, "stdout": store.get(run.stdout),
                             "wall_s": run.wall_s, "max_rss_kib": run.max_rss_kib,
                             "kernel_launches": run.kernel_launches,
                             "device_reads": store.get(run.device_reads) if run.device_reads else None})
    return kept, rows, left_out


def write_recorded(manifest: dict, kept: list[RealTask], rows: list[dict], left_out: list[dict], host: dict,
                   manifest_path: Path = MANIFEST, references_path: Path = REFERENCES) -> dict:
    """Write the manifest with only the kept tasks (the others left out with their reasons) and the references."""
    before = {x["benchmark"] for x in manifest["left_out"]}
    left = [*manifest["left_out"], *(x for x in left_out if x["benchmark"] not in before)]
    data = {**manifest, "references_host": host, "references_runs": max((r["run"] for r in rows), default=0),
            "tasks": [asdict(t) for t in kept],
            "left_out": sorted(left, key=lambda x: x["benchmark"]),
            "left_out_by_reason": dict(Counter(x["reason"] for x in left).most_common())}
    manifest_path.write_text(json.dumps(data, indent=1) + "\n")
    (manifest_path.parent / "README.md").write_text(card(data))
    pl.DataFrame(rows, schema=REFERENCE_SCHEMA).write_parquet(references_path, compression="zstd",
                                                               compression_level=19)
    return data
