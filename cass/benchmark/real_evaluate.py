"""Scoring translations on the real-program suite (:mod:`cass.benchmark.real_tasks`).

A prediction is a set of HIP files over the task's layout (:meth:`RealTask.overlay`). It compiles (the compile rate)
when hipcc builds every unit of the program for ``amd.archs`` (host and device); where there is a run host (or for a
GPU host's batch), a prediction that compiles is built through HIP's NVIDIA back end and run ``benchmark.real.runs``
times on each argument set: the **visible** one a prompt
may show and the **hidden** one none shows (every task has one that changes the CUDA original's output or its
kernel count: :func:`cass.benchmark.real_programs.record`). Each set's runs are judged against the CUDA original's
recorded runs of it as the ``execute`` stage judges a pair (:func:`cass.execution.verify.judge`: volatile fields
masked, other varying numbers held to the runs' range, integers exact, the rest within ``execute.tolerance``, and as
many kernel launches as the CUDA original's runs make); a pass needs both sets to pass. A program that computes the
expected output on the CPU does not pass, nor one that launches a token kernel beside a printed answer, nor one that
prints the visible answer on the hidden set.

Verdicts: ``pass`` (match, or match once masked), ``pass_tolerant``, ``wrong_output``, ``no_kernel``,
``kernel_count_differs``, ``run_failed``, ``timeout``, ``build_failed``, ``compile_failed``, with the argument set
that failed first in the detail;
``not_run:no_gpu_host``, ``not_run:transient`` (a compile or build that was stopped, as in the own suite) (and
``not_run:no_reference``, a harness error: a task without recorded outputs). The runtime ratio is the
prediction's wall time over the human port's, run in the same evaluation; chrF compares the program's text (every
file of the layout, by path) with the human port's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import polars as pl
from sacrebleu.metrics import CHRF

from cass.benchmark.evaluate import NOT_BUILT, amd_program_compiles, compiles, judge_sets, unbuilt
from cass.benchmark.real_programs import build_task_programs, task_runs
from cass.benchmark.real_tasks import RealTask
from cass.benchmark.tasks import Prediction
from cass.engine.placement import Placement
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import Run, run_programs
from store import Store

REFERENCE = "reference"
SOURCE_ERRORS = "surrogateescape"
"""How a translation's text holds bytes that are not UTF-8 (upstream files in Latin-1): they go back byte for byte."""

def prediction_files(task: RealTask, prediction: str | dict[str, str]) -> dict[str, str]:
    """A prediction's files by path: a text alone is the main file's translation; a mapping (checked by
    :func:`cass.benchmark.tasks.read_predictions`) gives paths of the task's files or of new files in its folder."""
    return {task.main: prediction} if isinstance(prediction, str) else dict(prediction)


def program_text(store: Store, files: dict[str, str]) -> str:
    """The text of a program's files (path: digest), each under a ``// <path>`` line, by path."""
    return "\n".join(f"// {path}\n{store.get_text(digest, 'replace')}" for path, digest in sorted(files.items()))


def arg_sets(task: RealTask) -> tuple[str, ...]:
    """The argument sets a translation of ``task`` runs on: the visible one, and the hidden one where it differs."""
    return ("visible", "hidden") if task.hidden_differs else ("visible",)


def reference_runs(store: Store, references: pl.DataFrame, task: RealTask, arg_set: str) -> list[Run]:
    """The CUDA original's recorded runs of one of the task's argument sets, as runs whose outputs (and device reads,
    where recorded) are in ``store``."""
    rows = references.filter((pl.col("task_id") == task.id) & (pl.col("arg_set") == arg_set)).sort("run")
    empty = store.put(b"")
    return [Run(r["verdict"], r["exit_code"], store.put(r["stdout"]), empty, r["wall_s"], r["max_rss_kib"],
                r["kernel_launches"], tuple(r["args"]), store.put(r["device_reads"]) if r.get("device_reads") else None)
            for r in rows.iter_rows(named=True)]


def verdict_of(store: Store, task: RealTask, references: dict[str, list[Run]], runs: dict[str, list[Run]],
               tolerance: dict) -> tuple[str, str]:
    """(verdict, detail) of a prediction whose runs came back, by argument set (:func:`judge_sets`)."""
    missing = [s for s in arg_sets(task) if not references.get(s)]
    if missing:
        return "not_run:no_reference", f"no reference output of {task.id}'s {missing[0]} arguments"
    return judge_sets(store, references, runs, bool(task.visible_args), tolerance)


def evaluate_real(store: Store, params: dict, tasks: dict[str, RealTask], references: pl.DataFrame,
                  predictions: list[Prediction], host: ExecutionHost | None, build_programs: bool = False,
                  progress: Callable = iter) -> tuple[list[dict], dict]:
    """Per-prediction verdicts (the human port's own rows, ``baseline_reference``, first, then the predictions in
    order) and the run report (with ``planned``: the runs of every program built, and ``programs``: each one's
    binary, by key: ``reference:<task>``, then the predictions' indices). Programs are built where there is a run
    host, or where ``build_programs`` says so (a batch for a GPU host); without either only the compile rate is
    measured."""
    placement = Placement.of(params)
    execute, suite_params = params["execute"], params["benchmark"]["real"]
    wanted = sorted({p.task_id for p in predictions})
    entries = {f"{REFERENCE}:{t}": (t, 0, tasks[t].human, True) for t in wanted}
    for i, p in enumerate(predictions):
        files = {path: store.put(text.encode("utf-8", SOURCE_ERRORS))
                 for path, text in prediction_files(tasks[p.task_id], p.prediction).items()}
        entries[f"{i}"] = (p.task_id, p.sample, files, False)
    programs = {key: (tasks[t], tasks[t].overlay(files)) for key, (t, _, files, _) in entries.items()}
    compiled, amd_counts = amd_program_compiles(
        store, params, {key: ([task.main, *task.units], task.include_dirs, files)
                        for key, (task, files) in programs.items()})
    built, counts = build_task_programs(
        store, execute, {k: ("hip", task, files) for k, (task, files) in programs.items()
                         if compiled[k].binary and (host is not None or build_programs)}, placement)
    report = {"host": host and {"name": host.name, **host.host.__dict__},
              "builds": {"amd": dict(amd_counts), "hip_nvidia": dict(counts)}}
    planned = {k: {arg_set: task_runs(programs[k][0], b.binary, arg_set, suite_params["runs"], execute)
                   for arg_set in arg_sets(programs[k][0])} for k, b in built.items() if b.binary}
    found = {}
    if host is not None:
        host.require_arch(execute["archs"])
        found, report["runs"] = run_programs(store, host, {r for sets in planned.values()
                                                              for rs in sets.values() for r in rs},
                                                execute["workers"])
    chrf, rows = CHRF(), []
    human_text = {t: program_text(store, tasks[t].overlay(tasks[t].human)) for t in wanted}
    for key, (task_id, sample, _, is_reference) in progress(list(entries.items())):
        task, files = programs[key]
        row = {"task_id": task_id, "task": "source", "sample": sample, "baseline_reference": is_reference,
               "amd_compiles": compiles(compiled[key]), "runtime_ratio": None, "peak_rss_mib": None,
               "memory_ratio": None, "_wall": None,
               "chrf": None if is_reference else round(chrf.sentence_score(program_text(store, files),
                                                                          [human_text[task_id]]).score, 2)}
        if failed := unbuilt(compiled[key], built.get(key)):
            row.update(verdict=failed[0], detail=failed[1])
        elif key not in built:
            row.update(verdict="not_run:no_gpu_host", detail=NOT_BUILT)
        elif host is None or any(found.get(r) is None for rs in planned[key].values() for r in rs):
            row.update(verdict="not_run:no_gpu_host", detail="no run host, or no run recorded there")
        else:
            runs = {s: [Run.of(store, found[r], r.invocation.args) for r in rs] for s, rs in planned[key].items()}
            verdict, detail = verdict_of(store, task, {s: reference_runs(store, references, task, s) for s in runs},
                                         runs, execute["tolerance"])
            timed = runs[task.verified_set]   # the runtime and memory ratios: on the hidden set
            peaks = [r.max_rss_kib for r in timed if r.max_rss_kib is not None]
            row.update(verdict=verdict, detail=detail, _wall=statistics.median(r.wall_s for r in timed),
                       peak_rss_mib=round(max(peaks) / 1024, 1) if peaks else None)
        rows.append(row)
    human = {r["task_id"]: (r["_wall"], r["peak_rss_mib"]) for r in rows
             if r["baseline_reference"] and r["verdict"] == "pass"}
    for row in rows:   # against the human port's runs in this evaluation, where the port itself passed
        wall, ref = row.pop("_wall"), human.get(row["task_id"])
        if wall is not None and ref and row["verdict"].startswith("pass"):
            row["runtime_ratio"] = round(wall / ref[0], 4)
            row["memory_ratio"] = round(row["peak_rss_mib"] / ref[1], 4) if ref[1] and row["peak_rss_mib"] else None
    report["binaries"] = sorted({b.binary for b in built.values() if b.binary})
    report["programs"] = {key: build.binary for key, build in built.items()}   # reference:<task>, then "0", "1", ...
    report["planned"] = {k: [r for rs in sets.values() for r in rs] for k, sets in planned.items()}
    return rows, report
