"""Recording the own suite's references on a GPU host (``cass bench-tasks export-own`` / ``record-own``): each
task's CUDA program run ``execute.runs`` times on the visible arguments (none) and on the hidden ones (its seed),
its reference HIP once on each, through the batch route.

A task's references are kept only when they hold: every CUDA run exited 0 with a counted kernel; its runs agree
byte for byte (the programs are deterministic); the visible output is the committed ``<id>.stdout``; the hidden
output differs from it (else the seed reaches no printed value, and a program printing the visible answer would
pass); the reference HIP passes on both sets. Recording writes ``<id>.hidden.stdout`` and the kernel counts into
``references.json``; a task that fails a check is reported with its reason and keeps no hidden set.
"""

from __future__ import annotations

import json
from pathlib import Path

from cass.benchmark.evaluate import judge_sets
from cass.benchmark.tasks import REFERENCES_FILE, Task
from cass.engine.placement import Placement
from cass.engine.targets import Build
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import (
    ProgramRun,
    ProgramSource,
    Run,
    build_program_targets,
    limits_for,
    run_programs,
)
from store import Store
from toolchains.sandboxed_runs import Invocation

SETS = ("visible", "hidden")


def plan(store: Store, params: dict, tasks: dict[str, Task], placement: Placement,
         ) -> tuple[dict[tuple[str, str], Build], dict[tuple[str, str, str], list[ProgramRun]]]:
    """Both programs of every task with hidden arguments built (``execute``'s builds, under the task's path), and
    their runs by (task, side, argument set): the CUDA program ``execute.runs`` times, the reference HIP once."""
    programs = {(t, side): ProgramSource(side, [task.path], ["."], {task.path: store.put_text(text)})
                for t, task in tasks.items() if task.hidden_args
                for side, text in (("cuda", task.cuda), ("hip", task.reference_hip))}
    builds, _ = build_program_targets(store, params, programs, placement)
    limits = limits_for(params)
    runs = {(t, side, s): [ProgramRun(b.binary, Invocation(tasks[t].arguments(s)), limits, n)
                           for n in range(1, (params["runs"] if side == "cuda" else params["hip_runs"]) + 1)]
            for (t, side), b in builds.items() if b.binary for s in SETS}
    return builds, runs


def check(store: Store, task: Task, builds: dict, done: dict[tuple[str, str], list[Run]], tolerance: dict,
          ) -> str | None:
    """Why ``task``'s recorded runs cannot be its references (the rules of this module's docstring), or None."""
    for side in ("cuda", "hip"):
        if builds[task.id, side].binary is None:
            return f"{side}_build_failed: {builds[task.id, side].detail[:300]}"
    for arg_set in SETS:
        runs = done["cuda", arg_set]
        if bad := next((r for r in runs if not r.ok or not r.kernel_launches), None):
            return (f"cuda_failed: {arg_set} arguments: {bad.failure(store, runs.index(bad) + 1)}, "
                    f"{bad.kernel_launches} kernels")
        if len({store.get(r.stdout) for r in runs}) > 1:
            return f"nondeterministic: the CUDA program's {arg_set} runs print different outputs"
    visible, hidden = (store.get(done["cuda", s][0].stdout) for s in SETS)
    if visible != task.reference_stdout:
        return "visible_output_changed: the CUDA program no longer prints the committed <id>.stdout"
    if hidden == visible:
        return "hidden_output_same: the hidden arguments change nothing the program prints"
    verdict, detail = judge_sets(store, {s: done["cuda", s] for s in SETS}, {s: done["hip", s] for s in SETS},
                                 False, tolerance)
    return None if verdict == "pass" else f"reference_fails: {verdict}: {detail[:300]}"


def record(store: Store, params: dict, tasks: dict[str, Task], host: ExecutionHost, root: Path,
           placement: Placement) -> dict[str, str]:
    """Record the references of every task with hidden arguments from ``host``'s runs into ``root`` (the tasks
    folder): ``<id>.hidden.stdout`` and the kernel counts in ``references.json`` beside it. Returns why each task that
    was not recorded was not."""
    builds, planned = plan(store, params, tasks, placement)
    found, _ = run_programs(store, host, {r for rs in planned.values() for r in rs}, params["workers"])
    if missing := sum(o is None for o in found.values()):
        raise ValueError(f"{missing} of {len(found)} planned runs have no result for GPU host {host.name}: run "
                         "and import the batch of `cass bench-tasks export-own` first")
    references = root.parent / REFERENCES_FILE
    data = json.loads(references.read_text())
    problems = {}
    for t, task in tasks.items():
        if not task.hidden_args:
            continue
        done = {(side, s): [Run.of(store, found[r], r.invocation.args) for r in planned.get((t, side, s), [])]
                for side in ("cuda", "hip") for s in SETS}
        stem = root / Path(task.path).with_suffix("")
        if why := check(store, task, builds, done, params["tolerance"]):
            problems[t] = why
            stem.with_suffix(".hidden.stdout").unlink(missing_ok=True)
            data["tasks"].setdefault(t, {}).pop("kernel_launches", None)
            continue
        stem.with_suffix(".hidden.stdout").write_bytes(store.get(done["cuda", "hidden"][0].stdout))
        data["tasks"].setdefault(t, {})["kernel_launches"] = {s: [r.kernel_launches for r in done["cuda", s]]
                                                              for s in SETS}
    data["kernel_launches_host"] = {"name": host.name, **host.host.__dict__}
    references.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return problems
