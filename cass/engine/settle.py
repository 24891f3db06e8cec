"""A tool stage's rows settled by the engine: the two passes over the stage's workers, the store lookups, the executor
round trip for what the store lacks, transient failures and the merged counts.

A tool stage gives only its chunk's work (:data:`ChunkWork`): for a chunk of rows, what each row needs from the tools
and what it makes of their outcomes. The engine runs it twice (:meth:`cass.engine.stage_work.StageWork.settle`):

1. on the workers, from the store alone (:class:`Lookups`: read-only runners, told the actions that failed
   transiently in this run): every row whose actions the store has is settled (added to the stage's columns, or
   dropped with why); the others wait (:meth:`Settled.wait`), with the actions or target runs they miss, by vendor,
   and what the chunk made for them (its carry);
2. on the driver, the missing actions of every chunk run on the executor where params.yaml places the vendor's tools
   (a target run's later steps as soon as its earlier ones succeed);
3. on the workers again, the rows that waited, given only their carries (what they missed stays on the driver).

The drops go to the stage's output, and its run report gets the actions (the distinct keys found in the store,
wherever they were looked up, and the runs) and the tools' time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl

from cass.engine.actions import Action, ActionCounts, ActionRunner, Outcome, stage_runner
from cass.engine.stage_work import StageWork
from cass.engine.targets import TargetRun, run_targets
from store import Store
from toolchains import Toolchain


@dataclass
class Settled:
    """A chunk as the engine settles it: the columns the stage adds for the rows it settled, the rows it drops
    (identity, reason, detail), the rows that wait (sample id -> what the first pass made for it, handed to the
    second, which does not make it again) and what they miss (sample id -> by vendor, actions or target runs at their
    next step: for the driver alone), and the store lookups of the first pass (the keys found, by vendor; the damaged
    outputs set aside). A stage subclasses it for what else its chunks count."""

    added: list[dict] = field(default_factory=list)
    dropped: list[tuple[dict, str, str]] = field(default_factory=list)
    unsettled: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, Mapping[str, list[Action] | list[TargetRun]]] = field(default_factory=dict)
    found: dict[str, set[str]] = field(default_factory=dict)
    corrupt: int = 0

    def wait(self, sample: str, missing: Mapping[str, list[Action] | list[TargetRun]], carry: Any = None) -> None:
        """``sample`` waits for the actions (or target runs) ``missing``, by vendor; ``carry``: what the second pass
        gets for it."""
        self.unsettled[sample] = carry
        self.missing[sample] = missing


class Lookups:
    """A chunk's view of the store (on a worker: nothing runs a tool): read-only runners per vendor, told the actions
    that failed transiently in this stage run."""

    def __init__(self, store: Store, vendors: tuple[str, ...], transients: Mapping[str, str]):
        self.store = store
        self.runners = {vendor: ActionRunner(store, None, timeout_s=0) for vendor in vendors}
        for runner in self.runners.values():
            runner.transients.update(transients)

    def outcomes(self, vendor: str, actions: list[Action]) -> dict[str, Outcome]:
        """The outcomes the store (or this run's transient failures) has for ``actions``, by key; a miss has none."""
        return self.runners[vendor].run(actions, desc=f"{vendor} (store)")

    def advance(self, toolchain: Toolchain, runs: list[TargetRun]) -> None:
        """Every target run as far as the store's records go (one left ``pending`` needs an action run)."""
        run_targets(toolchain, self.runners[toolchain.vendor], runs)


ChunkWork = Callable[..., Settled]
"""``work(rows, carried, lookups, *args)``: a chunk of rows settled as far as ``lookups`` go. ``carried`` is None in
the first pass; in the second, what the first made for each waiting row (sample id -> its ``carry``), and ``rows``
are those rows. A module-level function whose arguments pickle (it runs on the stage's workers)."""


def settle_chunk(part: tuple[pl.DataFrame, dict[str, Any] | None], work: ChunkWork, store_root: str,
                 vendors: tuple[str, ...], args: tuple, transients: dict[str, str]) -> Settled:
    """One chunk through ``work`` on a worker (``part``: its rows, and in the second pass their carries); the first
    pass's lookups are kept (the second only repeats them)."""
    rows, carried = part
    lookups = Lookups(Store(store_root), vendors, transients)
    chunk = work(rows, carried, lookups, *args)
    if carried is None:
        chunk.found = {vendor: set(runner.found) for vendor, runner in lookups.runners.items()}
        chunk.corrupt = len(lookups.store.corrupt_found)
    return chunk


class StageRun(Protocol):
    """What the engine needs of a stage (:class:`cass.pipeline.context.Stage`)."""

    name: str
    params: dict
    store: Store
    work: StageWork


class Drops(Protocol):
    """A stage's output (``StageOutput``): its drops and its run report."""

    run: dict

    def drop(self, row: dict, reason: str, detail: str = "") -> None: ...


@dataclass(frozen=True)
class SettledRows:
    """A stage's settled chunks: the first pass's in chunk order, then the second's."""

    chunks: list[Settled]

    @property
    def added(self) -> list[dict]:
        """The stage's columns for every row it keeps (a dict per row, with its ``sample_id``)."""
        return [row for chunk in self.chunks for row in chunk.added]


def settle(stage: StageRun, out: Drops, rows: pl.DataFrame, toolchains: Mapping[str, Toolchain], timeout_s: float,
           work: ChunkWork, *args: object) -> SettledRows:
    """``rows`` settled by ``work`` in the two passes, the actions planned with ``toolchains`` (by vendor, as
    :func:`cass.engine.actions.pipeline_toolchains` gives them) and missed ones run where params.yaml places them
    (``timeout_s`` each); the drops recorded in ``out``, and the actions and tool time in its run report."""
    chunks, runners = _settled(stage, rows, toolchains, timeout_s, work, args)
    merge(out, chunks, runners)
    return SettledRows(chunks)


def settle_ladder(stage: StageRun, out: Drops, rows: pl.DataFrame, rungs: Sequence[Toolchain],
                  retried: Callable[[dict, str], bool], timeout_s: float, work: ChunkWork,
                  *args: object) -> SettledRows:
    """:func:`settle` on the first toolchain of ``rungs``, then each row it drops (its identity and reason) that
    ``retried`` accepts on the next one, and so on; ``work`` gets the rung's toolchain before ``args``. A row no rung
    keeps is dropped with the first rung's reason, the later rungs' reasons (a timeout too) added to its detail."""
    if len({tc.vendor for tc in rungs}) < len(rungs):
        raise ValueError(f"stage {stage.name}: a ladder's toolchains must be of distinct vendors "
                         f"({', '.join(tc.vendor for tc in rungs)})")
    chunks: list[Settled] = []
    runners: dict[str, ActionRunner] = {}
    held: dict[str, tuple[dict, str, str]] = {}   # the first rung's drops of the rows later rungs tried
    tried: dict[str, list[str]] = {}   # the later rungs' reasons for them
    for rung, toolchain in enumerate(rungs):
        settled, rung_runners = _settled(stage, rows, {toolchain.vendor: toolchain}, timeout_s, work,
                                         (toolchain, *args), f"{toolchain.vendor}: " if rung else "")
        chunks += settled
        runners.update(rung_runners)
        again: set[str] = set()
        for chunk in settled:
            drops, chunk.dropped = chunk.dropped, []
            for identity, reason, detail in drops:
                sample = identity["sample_id"]
                if rung:
                    tried.setdefault(sample, []).append(f"{toolchain.vendor}: {reason}: {detail}")
                if rung + 1 < len(rungs) and retried(identity, reason):
                    again.add(sample)
                    held.setdefault(sample, (identity, reason, detail))
                elif not rung:
                    chunk.dropped.append((identity, reason, detail))
        rows = rows.filter(pl.col("sample_id").is_in(sorted(again)))
        if rows.is_empty():
            break
    merge(out, chunks, runners)
    kept = {row["sample_id"] for chunk in chunks for row in chunk.added}
    for sample, (identity, reason, detail) in held.items():
        if sample not in kept:
            out.drop(identity, reason, " | ".join([detail, *tried.get(sample, [])]))
    return SettledRows(chunks)


def _settled(stage: StageRun, rows: pl.DataFrame, toolchains: Mapping[str, Toolchain], timeout_s: float,
             work: ChunkWork, args: tuple, label: str = "") -> tuple[list[Settled], dict[str, ActionRunner]]:
    """``rows`` through ``work``'s two passes (:func:`settle`), with the runners that ran the missed actions
    (``label``: what the work is named with in progress and errors, before the work's name)."""
    if strays := [f"{name}: {tc.vendor}" for name, tc in toolchains.items() if name != tc.vendor]:
        raise ValueError(f"stage {stage.name}: toolchains must be given by their vendor ({', '.join(strays)})")
    vendors = tuple(toolchains)
    runners = {vendor: stage_runner(stage.store, tc, stage.params, timeout_s) for vendor, tc in toolchains.items()}

    def run_misses(chunks: list[Settled]) -> dict[str, str]:
        for vendor, runner in runners.items():
            missing = [m for chunk in chunks for by_vendor in chunk.missing.values() for m in by_vendor.get(vendor, ())]
            if runs := [m for m in missing if isinstance(m, TargetRun)]:
                run_targets(toolchains[vendor], runner, runs)
            if actions := [m for m in missing if isinstance(m, Action)]:
                runner.run(actions, desc=f"{vendor} {'+'.join(sorted({a.step.tool for a in actions}))}")
        return {key: why for runner in runners.values() for key, why in runner.transients.items()}

    chunks = stage.work.settle(settle_chunk, rows, run_misses, work, str(stage.store.root), vendors, args,
                               name=f"{stage.name} ({label}{work.__name__})")
    return chunks, runners


def merge(out: Drops, chunks: list[Settled], runners: Mapping[str, ActionRunner]) -> None:
    """The ``chunks``' drops recorded in ``out``; their lookups in the driver's ``runners``' counts (hits: the
    distinct keys found here or on a worker; the damaged outputs set aside here or on the workers, on the first
    runner: the runners share one store), and the runners' actions and time in ``out``'s run report."""
    for chunk in chunks:
        for identity, reason, detail in chunk.dropped:
            out.drop(identity, reason, detail)
    for vendor, runner in runners.items():
        runner.counts.hits = len(runner.found.union(*(chunk.found.get(vendor, ()) for chunk in chunks)))
    # the runners share the stage's store: the damaged outputs their lookups set aside are counted once, on the first
    first, *others = runners.values()
    first.counts.corrupt = max(r.counts.corrupt for r in runners.values()) + sum(chunk.corrupt for chunk in chunks)
    for runner in others:
        runner.counts.corrupt = 0
    out.run.update(run_metrics(runners))


def run_metrics(runners: Mapping[str, ActionRunner]) -> dict:
    """The run report's actions and tool time: one vendor's as they are; several vendors' summed, and each apart."""
    if len(runners) == 1:
        runner = next(iter(runners.values()))
        return {"actions": runner.counts.as_dict(), **runner.time_metrics()}
    times = {vendor: runner.time_metrics() for vendor, runner in runners.items()}
    return {"actions": sum((r.counts for r in runners.values()), ActionCounts()).as_dict(),
            **{k: round(sum(t[k] for t in times.values()), 3) for k in ("tool_jobs", "tool_cpu_s", "tool_wall_s")},
            "actions_by_vendor": {vendor: runner.counts.as_dict() for vendor, runner in runners.items()},
            "by_vendor": times}
