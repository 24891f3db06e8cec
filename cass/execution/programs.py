"""A pair's two programs: which pairs have one, building both as cached actions, and running them.

The CUDA original is built with the pipeline's nvcc, the HIP translation through HIP's NVIDIA back end
(:class:`toolchains.hip_nvidia.HipNvidiaToolchain`), both with the same flags and SASS for
``execute.archs``. Builds run on this machine's toolchains. A run is an action too: its key is the
binary's digest, the run host's fingerprint, the limits and the run's number, so a rerun with
nothing changed runs nothing, and runs brought back from a GPU host elsewhere are store hits here.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable
from dataclasses import asdict, dataclass

from cass.engine.actions import Action, ActionRunner, Outcome, cluster_at
from cass.engine.cached import CachedMap
from cass.engine.targets import TargetRun, failure_reason, run_targets
from cass.execution.compare import first_difference
from cass.execution.hosts import ExecutionHost
from store import Store
from toolchains import LocalExecutor, Step, Toolchain, load_hip_nvidia, load_toolchains, local_executor
from toolchains.gpu import RunHost, launcher_for
from toolchains.programs import PROGRAM, PROGRAM_OUTPUTS, RUN_FACTS, ProgramLimits

RUNNER_VERSION = 3
"""Changes when the way programs are run changes (the launcher's environment, mounts, verdicts): every run's
key includes it, so no run made the old way is reused."""

SIDES = ("cuda", "hip")
"""The two programs of a pair: the CUDA original and the HIP translation."""

def takes_arguments(signature: str) -> bool:
    """Whether a ``main`` with this parameter list reads command-line arguments."""
    return signature not in ("", "void")


def build_toolchains() -> dict[str, Toolchain]:
    """The toolchain of each side."""
    return {"cuda": load_toolchains()["nvidia"], "hip": load_hip_nvidia()}


@dataclass
class Build:
    """A side's binary (its digest) or why it did not build."""

    binary: str | None
    reason: str | None = None
    detail: str = ""


def run_plans(store: Store, toolchain: Toolchain, plans: dict[Hashable, list[TargetRun]], timeout_s: float,
              workers: int | None) -> tuple[dict[Hashable, Build], Counter, set[str]]:
    """Every key's target runs, as cached actions on this machine: a key's :class:`Build` is its last target's
    artifact, or why its first failing target failed; with the action counts and keys."""
    runner = ActionRunner(store, local_executor({toolchain.vendor: toolchain}, workers), timeout_s)
    run_targets(toolchain, runner, [run for runs in plans.values() for run in runs])
    builds = {}
    for key, runs in plans.items():
        if failed := next((run for run in runs if run.failure is not None), None):
            reason, detail = failure_reason(toolchain, failed, store)
            builds[key] = Build(None, reason.removeprefix("compile_failed:"), detail)
        else:
            builds[key] = Build(runs[-1].inputs[runs[-1].target.artifact])
    counts = Counter({k: v for k, v in runner.counts.as_dict().items() if isinstance(v, int)})
    return builds, counts, runner.keys


def build_programs(store: Store, params: dict, rows: list[dict], workers: int | None,
                   ) -> tuple[dict[tuple[str, str], Build], Counter, set[str]]:
    """Both programs of every row (``files``/``hip_files``, ``include_dirs``), by (sample id, side), with the
    builds' action counts and keys."""
    builds: dict = {}
    counts: Counter = Counter()
    keys: set[str] = set()
    for side, toolchain in build_toolchains().items():
        plans = {}
        for row in rows:
            files = row["files" if side == "cuda" else "hip_files"]
            target = toolchain.program_target(files[0]["path"], params["archs"], params["flags"], row["include_dirs"])
            plans[row["sample_id"], side] = [TargetRun(target, {f["path"]: f["digest"] for f in files})]
        done, side_counts, side_keys = run_plans(store, toolchain, plans, params["timeout_s"], workers)
        builds |= done
        counts.update(side_counts)   # `+=` would drop the zero counts
        keys |= side_keys
    return builds, counts, keys


def run_action(host: RunHost, limits: ProgramLimits, binary: str, run: int) -> Action:
    """Run number ``run`` of ``binary`` on ``host`` under ``limits``, as an action."""
    description = {"vendor": "gpu", "tool": PROGRAM, "runner": RUNNER_VERSION, "host": host.fingerprint(),
                   "limits": asdict(limits),
                   "inputs": [[PROGRAM, binary]], "outputs": list(PROGRAM_OUTPUTS), "run": run}
    return Action("gpu", Step(PROGRAM, (), PROGRAM_OUTPUTS, stdout_as="stdout"), ((PROGRAM, binary),),
                  Store.action_key(description), host.fingerprint())


@dataclass(frozen=True)
class Run:
    """One finished run as the store holds it."""

    verdict: str
    exit_code: int
    stdout: str
    stderr: str
    wall_s: float
    max_rss_kib: int | None

    @classmethod
    def of(cls, store: Store, outcome: Outcome) -> Run:
        record = outcome.record
        facts = json.loads(store.get(record.outputs[RUN_FACTS]))
        return cls(facts["verdict"], record.exit_code, record.outputs["stdout"], record.stderr, facts["wall_s"],
                   facts["max_rss_kib"])

    @property
    def ok(self) -> bool:
        return self.verdict == "exited" and self.exit_code == 0

    def failure(self, store: Store, number: int) -> str:
        """How run ``number`` ended when it did not exit 0: its verdict, exit code and first stderr line."""
        lines = store.get_text(self.stderr, "replace").strip().splitlines()
        return f"run {number}: {self.verdict}, exit {self.exit_code}: {lines[0][:200] if lines else ''}"


def disagreement(store: Store, runs: list[Run]) -> str | None:
    """Where a program's runs printed different output (the first one against the first that differs), or None."""
    first, *others = [store.get(run.stdout) for run in runs]
    other = next((o for o in others if o != first), None)
    return None if other is None else first_difference(first, other)


def program_runner(store: Store, host: ExecutionHost, limits: ProgramLimits, workers: int,
                   host_wait_s: float) -> ActionRunner:
    """Runs program actions on ``host``: the cluster's GPU hosts, or this machine ``workers`` at a time."""
    if host.scheduler:
        executor = cluster_at(host.scheduler).executor(host_wait_s)
    else:
        executor = LocalExecutor({"gpu": launcher_for(host.host, limits)}, workers=workers)
    return ActionRunner(store, executor, limits.wall_s, limits=asdict(limits))


def run_programs(store: Store, host: ExecutionHost, limits: ProgramLimits, binaries: set[str], runs: int,
                 workers: int, host_wait_s: float) -> tuple[dict[str, list[Outcome | None]], dict, set[str]]:
    """``runs`` runs of every binary on ``host``: taken from the store, and on a live host the others run there.
    A run without a result (none recorded for a recorded host, or a transient failure) is None."""
    actions = {(b, n): run_action(host.host, limits, b, n) for b in sorted(binaries) for n in range(1, runs + 1)}
    if host.live:
        runner = program_runner(store, host, limits, workers, host_wait_s)
        outcomes = runner.run(list(actions.values()), desc=f"run on {host.name}")
        counts = runner.counts.as_dict()
    else:
        recorded, missing = CachedMap(store).split({a.key: a.key for a in actions.values()})
        outcomes = {key: Outcome(record) for key, record in recorded.items()}
        counts = {"hits": len(recorded), "not_recorded": len(missing)}
    found = {b: [(o if (o := outcomes.get(actions[b, n].key)) and o.record else None) for n in range(1, runs + 1)]
             for b in binaries}
    return found, counts, {a.key for a in actions.values()}
