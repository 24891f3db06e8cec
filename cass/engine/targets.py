"""Targets of several steps as chains of cached actions: a target's next step runs as soon as the one before
it succeeds (a follow-up of the runner), and a failed target says why.

Compiling samples (the compile stages, settled in two passes: :mod:`cass.engine.settle`) uses this; so does work
that is not a stage's rows (building programs for ``execute`` and its batches, the benchmark's compiles, builds and
hipify-perl runs), which hands the engine its plans (:func:`run_plans`) and gets each one's :class:`Build` back.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Hashable
from dataclasses import dataclass
from itertools import pairwise

from cass.engine.actions import Action, ActionRunner, Outcome, plan
from cass.engine.placement import Placement
from store import Store
from toolchains import Target, Toolchain
from toolchains.diagnostics import categorize, first_error_line

STOPPED = ("timeout", "transient")
"""The reasons of a target run that was stopped (out of time, or the host or the process lost): they say nothing of
its source, and nothing of them is recorded, so the next run tries again."""


class TargetRun:
    """Progress of one target of one sample through its steps; ``then`` (set by :func:`chain`), the target run that
    starts once this one succeeded (never, where it fails: it is then ``skipped``, as are the runs after it)."""

    def __init__(self, target: Target, inputs: dict[str, str]):
        self.target = target
        self.inputs = inputs
        self.then: TargetRun | None = None
        self.next_step = 0
        self.failure: Outcome | None = None
        self.skipped = False

    @property
    def pending(self) -> bool:
        return self.failure is None and not self.skipped and self.next_step < len(self.target.steps)

    def fail(self, outcome: Outcome) -> None:
        """This run failed with ``outcome``: the runs chained after it are skipped."""
        self.failure = outcome
        after = self.then
        while after is not None:
            after.skipped = True
            after = after.then


def chain(runs: list[TargetRun]) -> list[TargetRun]:
    """``runs`` run one after another, up to the first that fails; returns them."""
    if len({id(run) for run in runs}) < len(runs):
        raise ValueError(f"a target run appears twice in one chain ({runs[0].target.name}, ...)")
    for run, after in pairwise(runs):
        run.then = after
    return runs


def run_targets(toolchain: Toolchain, runner: ActionRunner, runs: list[TargetRun]) -> None:
    """Advance every target run through all its steps (or to its first failure), a chained run once the run before
    it succeeded; with a runner that only reads the store (no executor), as far as the store's records go (a run
    left ``pending`` needs an action run)."""
    waiting: dict[str, list[TargetRun]] = defaultdict(list)

    def next_action(run: TargetRun) -> Action:
        action = plan(toolchain, run.target.steps[run.next_step], run.inputs)
        waiting[action.key].append(run)
        return action

    def follow(action: Action, outcome: Outcome) -> list[Action]:
        unblocked = []
        for run in waiting.pop(action.key, []):
            if not outcome.ok:
                run.fail(outcome)
                continue
            run.next_step += 1
            if run.pending:
                step = run.target.steps[run.next_step]
                named = set(step.args if step.reads is None else step.reads)
                run.inputs = {n: d for n, d in outcome.record.outputs.items() if n in named}
                unblocked.append(next_action(run))
            else:
                run.inputs = dict(outcome.record.outputs)
                if run.then is not None:
                    unblocked.append(next_action(run.then))
        return unblocked

    tools = sorted({step.tool for run in runs for step in run.target.steps})
    chained = {id(r.then) for r in runs if r.then is not None}
    runner.run([next_action(r) for r in runs if r.pending and id(r) not in chained],
               desc=f"{toolchain.vendor} {'+'.join(tools)}", follow=follow)
    if runner.executor is not None and (stalled := [r for r in runs if r.pending]):
        raise RuntimeError(f"{len(stalled)} target(s) never got past step {stalled[0].next_step} of "
                           f"{stalled[0].target.name}: a follow-up was lost (a bug)")


def failure_reason(toolchain: Toolchain, run: TargetRun, store, unresolved: Collection[str] = ()) -> tuple[str, str]:
    """(reason, detail) of a failed target run: ``timeout`` or ``transient``, else ``compile_failed:<category>``
    (``unresolved``: the sample's includes of project headers its tree does not hold)."""
    outcome = run.failure
    if outcome.transient:
        kind = "timeout" if outcome.transient.startswith("timeout") else "transient"
        return kind, f"{run.target.name}: {outcome.transient}"
    stderr = store.get_text(outcome.record.stderr, "replace")
    if outcome.record.exit_code == 0:
        return "compile_failed:no_output", f"{run.target.name}: exit 0 but no output"
    category = categorize(stderr, toolchain.side, unresolved)
    return f"compile_failed:{category}", f"{run.target.name}: {first_error_line(stderr)}\n{stderr[:3000]}"


@dataclass
class Build:
    """The artifact of a plan's last target (its digest), or why the plan did not get there."""

    binary: str | None
    reason: str | None = None
    detail: str = ""

    @property
    def stopped(self) -> bool:
        """Whether the build was stopped (:data:`STOPPED`) rather than failed: no verdict on its source."""
        return self.reason in STOPPED


def stop_error(what: str, stopped: int, total: int, why: str) -> RuntimeError:
    """The error of work that later work takes as given, stopped halfway: ``what`` was stopped on ``stopped`` of
    ``total`` inputs, the first for ``why``."""
    return RuntimeError(f"{what} was stopped on {stopped} of {total} inputs ({why[:300]}): nothing of a stop is "
                        "recorded, and what finished is in the store: run it again")


def finished(builds: dict[Hashable, Build], what: str) -> dict[Hashable, Build]:
    """``builds``, where none was stopped; else :func:`stop_error` (for builds whose output later work takes as
    given, such as a baseline's translations)."""
    if stopped := [build for build in builds.values() if build.stopped]:
        raise stop_error(what, len(stopped), len(builds), f"{stopped[0].reason}: {stopped[0].detail}")
    return builds


def run_plans(store: Store, toolchain: Toolchain, plans: dict[Hashable, list[TargetRun]], timeout_s: float,
              placement: Placement) -> tuple[dict[Hashable, Build], Counter]:
    """Every key's target runs, as cached actions where ``placement`` runs the toolchain's tools, one after another
    up to the first that fails: a key's :class:`Build` is its last target's artifact, or why its failing target
    failed (``compile_failed:`` taken off the category); with the action counts."""
    runner = ActionRunner(store, placement.tool_executor({toolchain.vendor: toolchain}), timeout_s)
    run_targets(toolchain, runner, [run for runs in plans.values() for run in chain(runs)])
    builds = {}
    for key, runs in plans.items():
        if failed := next((run for run in runs if run.failure is not None), None):
            reason, detail = failure_reason(toolchain, failed, store)
            builds[key] = Build(None, reason.removeprefix("compile_failed:"), detail)
        else:
            builds[key] = Build(runs[-1].inputs[runs[-1].target.artifact])
    return builds, Counter({k: v for k, v in runner.counts.as_dict().items() if isinstance(v, int)})
