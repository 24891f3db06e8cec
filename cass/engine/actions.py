"""Cached tool runs: action keys, store lookups, and executing only the misses.

An action is one :class:`toolchains.Step` applied to named input blobs, described as every cached result is
(:class:`store.ActionSpec`: the vendor, the tool and its toolchain's fingerprint, the arguments, the input names and
digests, the outputs kept), which alone derives its key. A hit costs one
lookup; a miss is sent to the executor with the input bytes, and its outputs, its stderr and
then its record are written to the store. Transient failures are returned but never recorded.
Misses start largest inputs first (input size stands in for a job's length, so the longest jobs
do not end a batch on one busy core); an action's follow-ups (the next step of its target) are
planned as soon as it finishes and start before the remaining first steps, so a stage never
waits for a batch's stragglers. ``follow`` is called for every arrival of an action, also when
that action already finished (a step two targets share). The tools' CPU
and wall seconds are summed per tool for the stage's time metrics.

The executor is local by default; with a Dask scheduler configured (``CASS_SCHEDULER`` or
``executor.scheduler``) the toolchains are the connected vendor hosts' and misses run there.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tqdm import tqdm

from cass.engine.cached import CachedMap
from cass.engine.placement import Placement
from store import ActionRecord, ActionSpec, CorruptObjectError, MissingObjectError, Store
from toolchains import Executor, HipNvidiaToolchain, Job, JobResult, Step, Toolchain


@dataclass(frozen=True)
class Action:
    """A step bound to its inputs and the toolchain that runs it, described by ``spec`` (which derives its key)."""

    step: Step
    spec: ActionSpec

    @property
    def vendor(self) -> str:
        return self.spec.vendor

    @property
    def inputs(self) -> tuple[tuple[str, str], ...]:
        return self.spec.inputs

    @property
    def fingerprint(self) -> str:
        return self.spec.toolchain

    @property
    def key(self) -> str:
        return self.spec.key


@dataclass(frozen=True)
class Outcome:
    """The result of an action: a cached (or fresh) record, or a transient failure."""

    record: ActionRecord | None
    transient: str | None = None

    @property
    def ok(self) -> bool:
        return self.record is not None and self.record.status == "ok"


def plan(toolchain: Toolchain, step: Step, inputs: Mapping[str, str]) -> Action:
    """Bind ``step`` to its inputs, described as its toolchain runs it."""
    return Action(step, ActionSpec(toolchain.vendor, step.tool, toolchain.fingerprint(step.tool), step.args, inputs,
                                   step.outputs, step.stdout_as))


@dataclass
class ActionCounts:
    """How many actions were store hits, ran, or failed transiently; jobs sent to the executor
    and how many of them each host ran."""

    hits: int = 0
    misses: int = 0
    transient: int = 0
    corrupt: int = 0
    sent: int = 0
    by_host: Counter = field(default_factory=Counter)
    by_sandbox: Counter = field(default_factory=Counter)

    def __add__(self, other: ActionCounts) -> ActionCounts:
        return ActionCounts(self.hits + other.hits, self.misses + other.misses, self.transient + other.transient,
                            self.corrupt + other.corrupt, self.sent + other.sent, self.by_host + other.by_host,
                            self.by_sandbox + other.by_sandbox)

    def as_dict(self) -> dict:
        return {"hits": self.hits, "misses": self.misses, "transient_failures": self.transient,
                "corrupt_recomputed": self.corrupt, "jobs_sent": self.sent,
                "jobs_by_host": dict(sorted(self.by_host.items())),
                "jobs_by_sandbox": dict(sorted(self.by_sandbox.items()))}


@dataclass
class ToolTime:
    """The jobs one tool ran and their summed CPU and wall seconds."""

    jobs: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0

    def add(self, result: JobResult) -> None:
        self.jobs += 1
        self.cpu_s += result.cpu_s
        self.wall_s += result.wall_s


FollowActions = Callable[[Action, Outcome], Iterable[Action]]
"""Given an action and its outcome, the actions it unblocks (may be called again for the same
action; must return each unblocked action once)."""


class ActionRunner:
    """Runs actions through the store: hits are read, misses executed, results recorded. Without an executor it
    only reads: a miss gets no outcome, and nothing that follows it is planned. ``transients``: the keys that failed
    transiently in this stage run, with why (never recorded in the store, so a runner elsewhere is told them)."""

    def __init__(self, store: Store, executor: Executor | None, timeout_s: float, limits: dict | None = None):
        self.store = store
        self.executor = executor
        self.timeout_s = timeout_s
        self.limits = limits
        self.counts = ActionCounts()
        self.cache = CachedMap(store)
        self.tool_time: dict[str, ToolTime] = {}
        self.transients: dict[str, str] = {}
        self.found: set[str] = set()
        """The keys answered from the store."""

    def _inputs(self, action: Action) -> dict[str, bytes]:
        try:
            return {name: self.store.get(d) for name, d in action.inputs}
        except (CorruptObjectError, MissingObjectError) as exc:
            raise RuntimeError(
                f"{action.step.tool}: input {exc} was produced by an earlier stage; rebuild it with "
                "`dvc repro --force` (every intact result is a store hit)") from exc

    def job(self, action: Action) -> Job:
        """The hermetic job of ``action``: its step, its input bytes from the store, its fingerprint."""
        return Job(vendor=action.vendor, tool=action.step.tool, args=action.step.args, inputs=self._inputs(action),
                   outputs=action.step.outputs, timeout_s=self.timeout_s, stdout_as=action.step.stdout_as,
                   fingerprint=action.fingerprint, action=action.key, limits=self.limits)

    def run(self, actions: list[Action], desc: str, follow: FollowActions | None = None) -> dict[str, Outcome]:
        """Outcomes of ``actions`` and of every action ``follow`` unblocks, by key (each key runs
        once). Misses go to the executor largest inputs first."""
        outcomes: dict[str, Outcome] = {}
        queued: set[str] = set()

        def resolve(batch: Iterable[Action]) -> list[tuple[Action, Job]]:
            """Hits answered (their follow-ups resolved in turn); the misses with their jobs,
            largest inputs first."""
            todo, misses = deque(batch), []
            while todo:
                action = todo.popleft()
                if action.key not in outcomes:
                    if action.key in queued:
                        continue   # running: its follow-ups come when it finishes
                    if (transient := self.transients.get(action.key)) is not None:
                        outcomes[action.key] = Outcome(None, transient)
                    elif (record := self.cache.lookup(action.spec)) is None:
                        queued.add(action.key)
                        if self.executor is not None:
                            misses.append((action, self.job(action)))
                            self.counts.sent += 1
                        continue
                    else:
                        self.counts.hits += 1
                        self.found.add(action.key)
                        outcomes[action.key] = Outcome(record)
                todo.extend(follow(action, outcomes[action.key]) if follow else ())   # again if known already
            self.counts.corrupt = len(self.store.corrupt_found)  # damaged outputs found by lookups: rerun
            return sorted(misses, key=lambda m: -sum(map(len, m[1].inputs.values())))

        sent = resolve(actions)
        if not sent:
            return outcomes
        with tqdm(total=len(sent), desc=desc, unit="run", disable=None) as bar:

            def unblocked(index: int, result: JobResult) -> list[Job]:
                action = sent[index][0]
                more = resolve(follow(action, outcomes[action.key])) if follow else []
                sent.extend(more)
                bar.total += len(more)
                bar.refresh()
                return [job for _, job in more]

            for index, result in self.executor.run([job for _, job in sent], unblocked):
                bar.update()
                action = sent[index][0]
                outcomes[action.key] = self.record(action, result)
        return outcomes

    def record(self, action: Action, result: JobResult) -> Outcome:
        """Store a finished job's outputs and record (a transient failure is returned, never recorded)."""
        if result.host:
            self.counts.by_host[result.host] += 1
        if result.sandbox:
            self.counts.by_sandbox[result.sandbox] += 1
        self.tool_time.setdefault(action.step.tool, ToolTime()).add(result)
        if result.transient:
            self.counts.transient += 1
            self.transients[action.key] = result.transient
            return Outcome(None, result.transient)
        self.counts.misses += 1
        ok = result.exit_code == 0 and set(action.step.outputs) <= set(result.outputs)   # and optional ones
        return Outcome(self.cache.record(action.spec, result.outputs, "ok" if ok else "failed", result.exit_code,
                                         result.stderr))

    def time_metrics(self) -> dict:
        """The tools' jobs, CPU and wall seconds, in all and per tool."""
        tools = {t: {"jobs": v.jobs, "cpu_s": round(v.cpu_s, 3), "wall_s": round(v.wall_s, 3)}
                 for t, v in sorted(self.tool_time.items())}
        return {"tool_jobs": sum(v.jobs for v in self.tool_time.values()),
                "tool_cpu_s": round(sum(v.cpu_s for v in self.tool_time.values()), 3),
                "tool_wall_s": round(sum(v.wall_s for v in self.tool_time.values()), 3),
                "workers": getattr(self.executor, "workers", None), "by_tool": tools}


def pipeline_toolchains(params: Mapping, vendors: tuple[str, ...] = ("nvidia", "amd")) -> dict[str, Toolchain]:
    """The toolchains actions are planned with, where params.yaml places the tools (:mod:`cass.engine.placement`)."""
    return Placement.of(params).toolchains(params["amd"]["toolchain"], vendors)


def toolchain_record(params: Mapping) -> dict:
    """{vendor: {tool: {version, fingerprint}}} of the toolchains ``params`` (``executor``, ``amd.toolchain``) place:
    the nvidia and amd ones, and HIP's NVIDIA back end (what stage ``toolchain_fingerprints`` records)."""
    hip_nvidia = Placement.of(params).toolchain(HipNvidiaToolchain.vendor)
    toolchains = {**pipeline_toolchains(params), hip_nvidia.vendor: hip_nvidia}
    with ThreadPoolExecutor(max_workers=8) as pool:   # version commands wait on processes: start them together
        for tc in toolchains.values():
            for tool in tc.tools():
                pool.submit(tc.version, tool)   # cached on tc; a failure is raised again below, where it was
    return {vendor: {tool: {"version": tc.version(tool), "fingerprint": tc.fingerprint(tool)} for tool in tc.tools()}
            for vendor, tc in toolchains.items()}


def stage_runner(store: Store, toolchain: Toolchain, params: dict, timeout_s: float) -> ActionRunner:
    """A runner of ``toolchain``'s actions where params.yaml places them (:mod:`cass.engine.placement`)."""
    return ActionRunner(store, Placement.of(params).tool_executor({toolchain.vendor: toolchain}), timeout_s)
