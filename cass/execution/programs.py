"""A pair's two programs: which pairs have one, building both as cached actions, and running them.

The CUDA original is built with the pipeline's nvcc, the HIP translation through HIP's NVIDIA back end
(:class:`toolchains.hip_nvidia.HipNvidiaToolchain`), except on a route (below), both with the same flags and SASS for
``execute.archs``, each from its main file and the other units its run spec lists (on the HIP side, the units'
translations: a unit that is a pair of its own gives its HIP files, one that uses no CUDA name is taken as it is,
any other stops the HIP build). This module describes the builds; the engine runs them
(:func:`cass.engine.targets.run_plans`) where the placement runs their toolchain's tools (with a scheduler, the HIP
builds on the hosts serving ``hip-nvidia``). A run is an action
too: its key is the binary's digest, the run host's fingerprint, the invocation (arguments, working directory, data
files), the limits and the run's number, so a rerun with nothing changed runs nothing, and runs brought back from a
GPU host elsewhere are store hits here. A pair one of whose sides a compile stage's fallback compiled is built, and
its HIP side checked, on its route's toolchains (:data:`ROUTES`).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

import polars as pl

from cass.engine.actions import Action, ActionRunner, Outcome
from cass.engine.cached import CachedMap
from cass.engine.placement import Placement
from cass.engine.settle import Drops, Lookups, Settled, StageRun, settle
from cass.engine.targets import STOPPED, Build, TargetRun, failure_reason, run_plans
from cass.execution.hosts import ExecutionHost
from hosts.gpu import RunHost
from store import ActionSpec, Store
from toolchains import HipNvidiaToolchain, Step, Toolchain
from toolchains.amd_build_root import AmdBuildRootToolchain
from toolchains.debian_cuda import DebianCudaToolchain, build_root_of
from toolchains.hip_nvidia import HipNvidiaBuildRootToolchain, HipNvidiaDebianCudaToolchain
from toolchains.language import is_opencl
from toolchains.sandboxed_runs import DEVICE_READS, PROGRAM_OUTPUTS, RUN_FACTS, Invocation, ProgramLimits

RUNNER_VERSION = 5
"""Changes when the way programs are run changes (the launcher's environment, mounts, verdicts): every run's
key includes it, so no run made the old way is reused."""

SIDES = ("cuda", "hip")
"""The two programs of a pair: the CUDA original and the HIP translation."""

CUDA_NAMES = re.compile(rb"\bcu(?:da|blas|rand|fft|sparse|solver)?[A-Z_]\w*\s*\(|__global__|__device__|<<<|"
                        rb"#\s*include\s*[<\"](?:cuda|cu[a-z]+[._])")
"""A unit that matches none of these is plain C or C++: the same file serves both sides."""


def takes_arguments(signature: str) -> bool:
    """Whether a ``main`` with this parameter list reads command-line arguments."""
    return signature not in ("", "void")


def build_toolchains(placement: Placement) -> dict[str, Toolchain]:
    """The toolchain of each side, as ``placement`` plans its actions."""
    return {"cuda": placement.toolchain("nvidia"), "hip": placement.toolchain("hip-nvidia")}


def tree_path(row: dict, path: str) -> str:
    """The sample path (with the tree's prefix) of ``path``, a file of ``row``'s tree."""
    main = row["files"][0]["path"]
    return row["path"].removesuffix(main) + path


def program_sources(store: Store, row: dict, pairs: dict[tuple[str, str], dict]) -> dict[str, tuple[dict, str | None]]:
    """Each side's files (path: digest) for ``row``'s program, with why the side cannot be built (or None): the
    row's files, its other units' files, and on the HIP side each unit's translation."""
    cuda = {f["path"]: f["digest"] for f in (*row["unit_files"], *row["files"])}
    hip = {**cuda, **{f["path"]: f["digest"] for f in row["hip_files"]}}
    problem = None
    own = {f["path"] for f in row["hip_files"]}
    for unit in row["units"] or ():
        if (pair := pairs.get((row["origin"], tree_path(row, unit)))) is not None:
            hip |= {f["path"]: f["digest"] for f in pair["hip_files"] if f["path"] not in own}
            hip[unit] = next(f["digest"] for f in pair["hip_files"] if f["path"] == unit)
        elif CUDA_NAMES.search(store.get(cuda[unit])):
            problem = problem or (f"unit {unit} uses CUDA and has no HIP translation: it is not among the pairs "
                                  "(dropped, or failed to compile, before pairing)")
    return {"cuda": (cuda, None), "hip": (hip, problem)}


def hip_nvidia_checks(stage: StageRun, out: Drops, rows: pl.DataFrame) -> dict[str, tuple[str, str]]:
    """The HIP side of every row (a pair: ``hip_files``, ``include_dirs``, ``build_flags``) compiled, not linked,
    through HIP's NVIDIA back end as the execute stage builds it (``execute`` of the stage's params), settled by the
    engine in its two passes (the actions and tool time in ``out``'s run report): by sample id, ``ok`` or the
    failure's category, and its error. Whether the translation builds on the platform its programs run on; OpenCL
    pairs have no HIP side and are left out, and so is a run that was stopped (a timeout, a killed compiler: counted
    in the actions, tried again next run). A row one of :data:`ROUTES` takes is checked with its route's toolchain."""
    params = stage.params["execute"]
    placement = Placement.of(stage.params)
    platform = placement.toolchain(HipNvidiaToolchain.vendor)
    routed = routed_toolchains(stage.params, placement, rows.select(*(r.column for r in ROUTES)).to_dicts(), ("hip",),
                               platform)
    toolchains = {platform.vendor: platform, **routed}
    checked = settle(stage, out, rows.select("sample_id", "hip_files", "include_dirs", "build_flags",
                                             *(route.column for route in ROUTES)),
                     toolchains, params["timeout_s"], hip_nvidia_chunk, toolchains, params)
    return {row["sample_id"]: (row["hip_nvidia_build"], row["hip_nvidia_error"]) for row in checked.added}


class Route(NamedTuple):
    """Where a pair's programs are built (and its HIP side checked) when a fallback of a compile stage compiled one
    of its sides: its row's ``column`` names ``compiled_by``; the HIP side is built with ``hip``, the CUDA side with
    ``cuda`` (None: the pipeline's nvcc). Each toolchain is made only where a row takes the route and the setting
    that asks for the fallback is on, and needs HIP's NVIDIA platform on this machine and the Debian build root."""

    column: str
    compiled_by: str
    hip: type[HipNvidiaDebianCudaToolchain] | type[HipNvidiaBuildRootToolchain]
    cuda: type[DebianCudaToolchain] | None


ROUTES = (Route("nvidia_toolchain", DebianCudaToolchain.vendor, HipNvidiaDebianCudaToolchain, DebianCudaToolchain),
          Route("amd_toolchain", AmdBuildRootToolchain.vendor, HipNvidiaBuildRootToolchain, None))
"""The routes in the order a row takes the first that holds: a pair whose CUDA side only Debian's CUDA compiled is
built on that CUDA, both sides (in the build root, whose headers it sees too); one whose AMD side took the build root's
headers has its HIP side built with them."""


def routed_toolchains(params: dict, placement: Placement, rows: Sequence[Mapping], sides: Sequence[str] = SIDES,
                      platform: Toolchain | None = None) -> dict[str, Toolchain]:
    """The toolchains of ``sides``, by vendor, of the :data:`ROUTES` some of ``rows`` take whose setting ``params``
    turns on (HIP's over ``platform``, default: ``placement``'s); a ValueError where a setting is on and the rows lack
    its route's column (a pair manifest made before the column was kept)."""
    toolchains: dict[str, Toolchain] = {}
    for route in ROUTES:
        section, name = route.hip.setting.split(".")
        if not params[section][name] or not rows:
            continue
        if any(route.column not in row for row in rows):
            raise ValueError(f"{route.hip.setting} is on, but the pairs have no {route.column} (the compile stage's, "
                             "which the pair stage's manifest keeps): run `dvc repro pair` again")
        if any(row[route.column] == route.compiled_by for row in rows):
            root = build_root_of(params["debian_sources"], route.hip.setting)
            if "hip" in sides:
                platform = platform or placement.toolchain(HipNvidiaToolchain.vendor)
                toolchains[route.hip.vendor] = route.hip.over(platform, root)
            if "cuda" in sides and route.cuda is not None:
                toolchains[route.cuda.vendor] = route.cuda(root)
    return toolchains


def builder_of(row: Mapping, side: str, own: Toolchain, routed: Mapping[str, Toolchain]) -> Toolchain:
    """The toolchain that builds (or checks) ``row``'s ``side`` (``cuda``, ``hip``): the first route of :data:`ROUTES`
    the row takes whose HIP toolchain is among ``routed`` (:func:`routed_toolchains`) gives it (where the route names
    none for the side, the side's ``own``); no route, ``own``. Only the row's main file decides, not its units'."""
    route = next((r for r in ROUTES if row.get(r.column) == r.compiled_by and r.hip.vendor in routed), None)
    chosen = None if route is None else route.hip if side == "hip" else route.cuda
    if chosen is not None and chosen.vendor not in routed:
        raise ValueError(f"{row.get('sample_id', 'a row')}: its {side} side is built by {chosen.vendor}, which was not "
                         f"made (routed: {sorted(routed)}; routed_toolchains' sides)")
    return own if chosen is None else routed[chosen.vendor]


def hip_nvidia_chunk(rows: pl.DataFrame, carried: dict | None, lookups: Lookups, toolchains: dict[str, Toolchain],
                     params: dict) -> Settled:
    """A chunk's HIP-NVIDIA checks as far as the store goes (:func:`hip_nvidia_checks`; planned afresh in the second
    pass): a verdict per row whose check is recorded, the others waiting for their compile."""
    chunk = Settled()
    runs: dict[str, tuple[Toolchain, TargetRun]] = {}
    for row in rows.iter_rows(named=True):
        if is_opencl(row["hip_files"][0]["path"]):
            continue
        toolchain = builder_of(row, "hip", toolchains[HipNvidiaToolchain.vendor], toolchains)
        runs[row["sample_id"]] = toolchain, TargetRun(toolchain.build_check_target(
            row["hip_files"][0]["path"], params["archs"], toolchain.build_flags(params["flags"], row["build_flags"]),
            row["include_dirs"]), {f["path"]: f["digest"] for f in row["hip_files"]})
    for toolchain in toolchains.values():
        lookups.advance(toolchain, [run for tc, run in runs.values() if tc.vendor == toolchain.vendor])
    for sample, (toolchain, run) in runs.items():
        if run.pending:
            chunk.wait(sample, {toolchain.vendor: [run]})
            continue
        reason, detail = ("ok", "") if run.failure is None else failure_reason(toolchain, run, lookups.store)
        if reason not in STOPPED:   # a run stopped says nothing of the pair: no verdict, not cached
            chunk.added.append({"sample_id": sample, "hip_nvidia_build": reason.removeprefix("compile_failed:"),
                                "hip_nvidia_error": detail})
    return chunk


def build_programs(store: Store, params: dict, rows: list[dict], placement: Placement,
                   pairs: dict[tuple[str, str], dict] | None = None, routed: Mapping[str, Toolchain] | None = None,
                   ) -> tuple[dict[tuple[str, str], Build], Counter]:
    """Both programs of every row (its main file and ``units``; ``include_dirs``), by (sample id, side), with the
    builds' action counts; ``pairs`` (by origin and path) give the units' translations; a row that takes one of
    :data:`ROUTES` is built with its route's toolchains where ``routed`` (:func:`routed_toolchains`) has them."""
    builds: dict = {}
    programs: dict = {}
    own = build_toolchains(placement)
    for row in rows:
        for side, (files, problem) in program_sources(store, row, pairs or {}).items():
            if problem:
                builds[row["sample_id"], side] = Build(None, "unit_untranslated", problem)
            else:
                units = [row["files"][0]["path"], *(row["units"] or ())]
                programs[row["sample_id"], side] = ProgramSource(side, units, row["include_dirs"], files,
                                                                 row["build_flags"],
                                                                 routed_vendor(row, side, own, routed))
    built, counts = build_program_targets(store, params, programs, placement, routed, own)
    return builds | built, counts


def routed_vendor(row: Mapping, side: str, own: Mapping[str, Toolchain], routed: Mapping[str, Toolchain] | None,
                   ) -> str | None:
    """The vendor of the routed toolchain that builds ``row``'s ``side`` (:func:`builder_of`), or None where it is
    the side's own (``own``, by side)."""
    builder = builder_of(row, side, own[side], routed or {})
    return None if builder is own[side] else builder.vendor


class ProgramSource(NamedTuple):
    """What one program is built from: its side (``cuda``, ``hip``), ``units`` (the main file first), its include
    folders, ``files`` (path: digest) laid out as its tree, the flags of its own build (``build_flags``), and the
    vendor of the toolchain that builds it (``builder``; None: the side's own, :func:`build_toolchains`)."""

    side: str
    units: list[str]
    include_dirs: list[str]
    files: dict[str, str]
    build_flags: Sequence[str] = ()
    builder: str | None = None


def build_program_targets(store: Store, params: dict, programs: dict[Hashable, ProgramSource],
                          placement: Placement, routed: Mapping[str, Toolchain] | None = None,
                          own: Mapping[str, Toolchain] | None = None) -> tuple[dict[Hashable, Build], Counter]:
    """Every program built by its toolchain (its side's own, of ``own`` or :func:`build_toolchains`, or the one of
    ``routed`` its ``builder`` names; ``execute.archs``, ``execute.flags`` and its own build's); with the builds'
    action counts."""
    builds: dict = {}
    counts: Counter = Counter()
    own = own or build_toolchains(placement)
    if unknown := sorted({p.builder for p in programs.values() if p.builder and p.builder not in (routed or {})}):
        raise ValueError(f"programs name toolchains {unknown} to build them, which were not made (routed: "
                         f"{sorted(routed or {})})")
    for vendor, toolchain in {**{tc.vendor: tc for tc in own.values()}, **(routed or {})}.items():
        plans = {key: [TargetRun(toolchain.program_target(p.units, params["archs"],
                                                          toolchain.build_flags(params["flags"], p.build_flags),
                                                          p.include_dirs), p.files)]
                 for key, p in programs.items() if (p.builder or own[p.side].vendor) == vendor}
        done, vendor_counts = run_plans(store, toolchain, plans, params["timeout_s"], placement)
        builds |= done
        counts.update(vendor_counts)   # `+=` would drop the zero counts
    return builds, counts


@dataclass(frozen=True)
class ProgramRun:
    """One planned run: a binary started as ``invocation`` under ``limits``, the ``number``-th time."""

    binary: str
    invocation: Invocation
    limits: ProgramLimits
    number: int

    def action(self, host: RunHost) -> Action:
        return run_action(host, self.limits, self.binary, self.number, self.invocation)


def limits_for(params: dict, timeout_s: float | None = None) -> ProgramLimits:
    """``execute.limits``, with a run spec's own time limit where it has one."""
    limits = ProgramLimits(**params["limits"])
    if timeout_s:
        limits = replace(limits, wall_s=float(timeout_s), cpu_s=max(limits.cpu_s, int(timeout_s)))
    return limits


def run_plan(row: dict, params: dict) -> tuple[list[Invocation], ProgramLimits]:
    """How ``row``'s programs are run: one invocation per argument set of its run spec (one without arguments where
    it has none), and the limits (the spec's time limit, else ``execute.limits``)."""
    spec = row.get("run_spec")
    if not spec:
        return [Invocation()], limits_for(params)
    limits = limits_for(params, spec["timeout_s"])
    inputs = tuple(sorted((f["path"], f["digest"]) for f in row["run_inputs"] or ()))
    workdir = spec["workdir"] or posixpath.dirname(row["files"][0]["path"])
    return [Invocation(tuple(args), workdir, inputs) for args in spec["arg_sets"] or [[]]], limits


def run_action(host: RunHost, limits: ProgramLimits, binary: str, run: int,
               invocation: Invocation) -> Action:
    """Run number ``run`` of ``binary`` on ``host`` under ``limits`` as ``invocation`` says, as an action."""
    step = Step(invocation.tool, invocation.args, PROGRAM_OUTPUTS, stdout_as="stdout")
    return Action(step, ActionSpec("gpu", invocation.tool, host.fingerprint(), invocation.args,
                                   ((invocation.tool, binary), *invocation.inputs), PROGRAM_OUTPUTS, "stdout",
                                   {"runner": RUNNER_VERSION, "limits": asdict(limits), "run": run}))


@dataclass(frozen=True)
class Run:
    """One finished run as the store holds it."""

    verdict: str
    exit_code: int
    stdout: str
    stderr: str
    wall_s: float
    max_rss_kib: int | None
    kernel_launches: int | None
    args: tuple[str, ...] = ()
    device_reads: str | None = None
    """The digest of the run's device reads (:mod:`cass.execution.device_reads`); None: not observed."""

    @classmethod
    def of(cls, store: Store, outcome: Outcome, args: tuple[str, ...] = ()) -> Run:
        record = outcome.record
        facts = json.loads(store.get(record.outputs[RUN_FACTS]))
        return cls(facts["verdict"], record.exit_code, record.outputs["stdout"], record.stderr, facts["wall_s"],
                   facts["max_rss_kib"], facts.get("kernel_launches"), args, record.outputs.get(DEVICE_READS))

    @property
    def ok(self) -> bool:
        return self.verdict == "exited" and self.exit_code == 0

    def failure(self, store: Store, number: int) -> str:
        """How run ``number`` ended when it did not exit 0: its verdict, exit code and first stderr line."""
        lines = store.get_text(self.stderr, "replace").strip().splitlines()
        return f"run {number}: {self.verdict}, exit {self.exit_code}: {lines[0][:200] if lines else ''}"


def program_runner(store: Store, host: ExecutionHost, limits: ProgramLimits, workers: int) -> ActionRunner:
    """Runs program actions on ``host``: its placement's GPU hosts, or this machine ``workers`` at a time."""
    executor = (host.placement or Placement.local()).program_executor(host.host, limits, workers)
    return ActionRunner(store, executor, limits.wall_s, limits=asdict(limits))


def run_programs(store: Store, host: ExecutionHost, planned: set[ProgramRun], workers: int,
                 ) -> tuple[dict[ProgramRun, Outcome | None], dict]:
    """Every planned run on ``host``: taken from the store, and on a live host the others run there (one runner per
    set of limits). A run without a result (none recorded for a recorded host, or a transient failure) is None."""
    actions = {run: run.action(host.host) for run in planned}
    counts: Counter = Counter()
    outcomes: dict[str, Outcome] = {}
    if host.live:
        for limits in sorted({run.limits for run in planned}, key=lambda lim: lim.wall_s):
            runner = program_runner(store, host, limits, workers)
            outcomes |= runner.run([a for r, a in actions.items() if r.limits == limits], desc=f"run on {host.name}")
            counts.update({k: v for k, v in runner.counts.as_dict().items() if isinstance(v, int)})
    else:
        recorded, missing = CachedMap(store).split({a.key: a.spec for a in actions.values()})
        outcomes = {key: Outcome(record) for key, record in recorded.items()}
        counts.update(hits=len(recorded), not_recorded=len(missing))
    found = {run: (o if (o := outcomes.get(action.key)) and o.record else None) for run, action in actions.items()}
    return found, dict(counts)
