"""Cached tool runs: action keys, store lookups, and executing only the misses.

An action is one :class:`toolchains.Step` applied to named input blobs. Its key is the BLAKE3
digest of the canonical description (tool, arguments, expected outputs, the tool's toolchain
fingerprint, the input names and digests; the store adds its schema version). A hit costs one
lookup; a miss is sent to the executor with the input bytes, and its outputs, its stderr and
then its record are written to the store. Transient failures are returned but never recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tqdm import tqdm

from store import ActionRecord, CorruptObjectError, MissingObjectError, Store
from toolchains import Executor, Job, Step, Toolchain, local_executor


@dataclass(frozen=True)
class Action:
    """A step bound to its inputs (name -> digest) and the toolchain that runs it."""

    vendor: str
    step: Step
    inputs: tuple[tuple[str, str], ...]
    key: str


@dataclass(frozen=True)
class Outcome:
    """The result of an action: a cached (or fresh) record, or a transient failure."""

    record: ActionRecord | None
    transient: str | None = None

    @property
    def ok(self) -> bool:
        return self.record is not None and self.record.status == "ok"


def plan(toolchain: Toolchain, step: Step, inputs: Mapping[str, str]) -> Action:
    """Bind ``step`` to its inputs and compute its action key."""
    frozen = tuple(sorted(inputs.items()))
    description = {
        "vendor": toolchain.vendor,
        "tool": step.tool,
        "args": list(step.args),
        "outputs": list(step.outputs),
        "stdout_as": step.stdout_as,
        "toolchain": toolchain.fingerprint(step.tool),
        "inputs": [list(p) for p in frozen],
    }
    return Action(toolchain.vendor, step, frozen, Store.action_key(description))


@dataclass
class ActionCounts:
    """How many actions were store hits, ran, or failed transiently."""

    hits: int = 0
    misses: int = 0
    transient: int = 0

    corrupt: int = 0

    def as_dict(self) -> dict:
        return {"hits": self.hits, "misses": self.misses, "transient_failures": self.transient,
                "corrupt_recomputed": self.corrupt}


class ActionRunner:
    """Runs actions through the store: hits are read, misses executed, results recorded."""

    def __init__(self, store: Store, executor: Executor, timeout_s: float):
        self.store = store
        self.executor = executor
        self.timeout_s = timeout_s
        self.counts = ActionCounts()
        self.keys: set[str] = set()

    def _inputs(self, action: Action) -> dict[str, bytes]:
        try:
            return {name: self.store.get(d) for name, d in action.inputs}
        except (CorruptObjectError, MissingObjectError) as exc:
            raise RuntimeError(
                f"{action.step.tool}: input {exc} was produced by an earlier stage; rebuild it with "
                "`dvc repro --force` (every intact result is a store hit)") from exc

    def run(self, actions: list[Action], desc: str) -> dict[str, Outcome]:
        """Outcomes of ``actions`` by key (duplicates run once)."""
        unique = {a.key: a for a in actions}
        self.keys.update(unique)
        outcomes: dict[str, Outcome] = {}
        misses = []
        for key, action in unique.items():
            record = self.store.lookup(key)
            if record is None:
                misses.append(action)
            else:
                outcomes[key] = Outcome(record)
        self.counts.hits += len(outcomes)
        self.counts.corrupt = len(self.store.corrupt_found)  # damaged outputs found by lookups: rerun
        if not misses:
            return outcomes
        jobs = [
            Job(vendor=a.vendor, tool=a.step.tool, args=a.step.args, inputs=self._inputs(a),
                outputs=a.step.outputs, timeout_s=self.timeout_s, stdout_as=a.step.stdout_as)
            for a in misses
        ]
        with tqdm(total=len(jobs), desc=desc, unit="run", disable=None) as bar:
            for index, result in self.executor.run(jobs):
                action = misses[index]
                bar.update()
                if result.transient:
                    self.counts.transient += 1
                    outcomes[action.key] = Outcome(None, result.transient)
                    continue
                self.counts.misses += 1
                outputs = {name: self.store.put(data) for name, data in sorted(result.outputs.items())}
                record = ActionRecord(
                    status="ok" if result.exit_code == 0 and set(outputs) == set(action.step.outputs) else "failed",
                    exit_code=result.exit_code,
                    outputs=outputs,
                    stderr=self.store.put(result.stderr),
                )
                self.store.record(action.key, record)
                outcomes[action.key] = Outcome(record)
        return outcomes


def stage_runner(store: Store, toolchain: Toolchain, params: dict, timeout_s: float) -> ActionRunner:
    """A runner on the local executor with the pipeline's worker count (``executor.workers``)."""
    return ActionRunner(store, local_executor({toolchain.vendor: toolchain}, params["executor"]["workers"] or None),
                        timeout_s)
