"""Where work runs, read in one place from params.yaml's ``executor`` section (and ``CASS_SCHEDULER``).

* Tool actions (compiles, hipify-perl, disassembly, the programs' builds, the benchmark's compiles):
  :meth:`Placement.tool_executor`, on ``workers`` local processes or, with a Dask scheduler, on the vendor hosts it
  connects (waiting ``host_wait_s`` for one that serves a job); HIP's NVIDIA back end on the hosts serving
  ``hip-nvidia``, or here where no connected host does.
* The toolchains actions are planned with: :meth:`Placement.toolchains` and :meth:`Placement.toolchain`, this
  machine's or the hosts'.
* A stage's own per-item work: :meth:`Placement.stage_work`, on local processes or the scheduler's stage hosts.
* Program runs: the run host a setting names (:func:`cass.execution.hosts.resolve_host`; ``auto``: this placement's
  :meth:`Placement.gpu_host`), run by :meth:`Placement.program_executor`: on the scheduler's GPU hosts, or here in
  the program sandbox, ``execute.workers`` at a time.
"""

from __future__ import annotations

import atexit
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cass.engine.stage_work import IN_PROCESS_S, ClusterWork, LocalWork, StageWork
from hosts.cluster import RESOURCE_VENDOR, STAGE_RESOURCE, Cluster, scheduler_address
from hosts.gpu import RunHost, launcher_for
from toolchains import Executor, HipNvidiaToolchain, LocalExecutor, Toolchain, load_toolchains, local_executor
from toolchains.sandboxed_runs import ProgramLimits


@functools.cache
def cluster_at(address: str) -> Cluster:
    """The connection to the scheduler at ``address`` (one per process, closed at exit)."""
    cluster = Cluster(address)
    atexit.register(cluster.close)
    return cluster


@dataclass(frozen=True)
class Placement:
    """Where work runs: ``scheduler`` (a Dask scheduler's address; None: this machine), ``workers`` (local processes;
    None: one per core), ``host_wait_s`` (how long a job waits for a host that can serve it) and ``in_process_s``
    (seconds of a stage's own items done in the stage process before its local workers start)."""

    scheduler: str | None
    workers: int | None
    host_wait_s: float
    in_process_s: float = IN_PROCESS_S

    @classmethod
    def of(cls, params: Mapping) -> Placement:
        """The placement params.yaml's ``executor`` section gives (``CASS_SCHEDULER`` overrides its scheduler)."""
        executor = params["executor"]
        return cls(scheduler_address(executor), executor["workers"] or None, executor["host_wait_s"],
                   executor["in_process_s"])

    @classmethod
    def local(cls, workers: int | None = None) -> Placement:
        """This machine alone, ``workers`` processes (None: one per core)."""
        return cls(None, workers, 0.0)

    @property
    def processes(self) -> int:
        """Local processes for a stage's own work: ``workers``, else one per core."""
        return self.workers or os.cpu_count() or 1

    def toolchains(self, amd_suite: str | None, vendors: tuple[str, ...] = ("nvidia", "amd")) -> dict[str, Toolchain]:
        """The toolchains actions are planned with: this machine's (``amd_suite``: its AMD root), or the cluster
        hosts' when a scheduler is configured (a vendor no connected host serves is an error naming the fix)."""
        if self.scheduler is None:
            return load_toolchains(amd_suite, vendors)
        cluster = cluster_at(self.scheduler)
        hosts = cluster.hosts()
        return {v: cluster.toolchain(v, hosts) for v in vendors}

    def toolchain(self, vendor: str, amd_suite: str | None = None) -> Toolchain:
        """``vendor``'s toolchain as :meth:`toolchains` gives it (``amd_suite``: the AMD one's root), or HIP's NVIDIA
        back end (``hip-nvidia``): the hosts' where a connected host serves it, else this machine's (a cluster
        without such a host builds HIP on NVIDIA here, as a pipeline without a scheduler does)."""
        if vendor == HipNvidiaToolchain.vendor and not self.hosts_serve(vendor):
            return load_toolchains(amd_suite, (vendor,))[vendor]
        return self.toolchains(amd_suite, (vendor,))[vendor]

    def hosts_serve(self, vendor: str) -> bool:
        """Whether a scheduler is configured and some host connected to it serves ``vendor``'s tools."""
        return self.scheduler is not None and any(
            RESOURCE_VENDOR.get(resource) == vendor and units > 0
            for resources in cluster_at(self.scheduler).resources().values() for resource, units in resources.items())

    def tool_executor(self, toolchains: Mapping[str, Toolchain]) -> Executor:
        """Where ``toolchains``' tool actions run: on ``workers`` local processes for this machine's toolchains, on
        the scheduler's hosts for toolchains known from the hosts' report (:meth:`toolchain`)."""
        reported = sorted(vendor for vendor, tc in toolchains.items() if tc.launcher is None)
        if not reported:
            return local_executor(dict(toolchains), self.workers)
        if self.scheduler is None or len(reported) < len(toolchains):
            raise ValueError(f"toolchains {', '.join(reported)} are known from hosts' reports and run on a scheduler's "
                             f"hosts; {', '.join(sorted(set(toolchains) - set(reported))) or 'no scheduler'} here: "
                             "one executor cannot run both")
        return cluster_at(self.scheduler).executor(self.host_wait_s)

    def stage_work(self, report: Path) -> StageWork:
        """Where a stage's own per-item work runs: the scheduler's stage hosts if it has any, else local processes
        (``report``: where it says how that went)."""
        if self.scheduler is not None:
            cluster = cluster_at(self.scheduler)
            if slots := int(sum(r.get(STAGE_RESOURCE, 0) for r in cluster.resources().values())):
                return ClusterWork(cluster.client, slots, report)
        return LocalWork(self.processes, report, self.in_process_s)

    def gpu_host(self) -> RunHost | None:
        """The scheduler's GPU host (its workers with the ``gpu`` resource), None without a scheduler or one."""
        return cluster_at(self.scheduler).gpu_host() if self.scheduler is not None else None

    def program_executor(self, host: RunHost, limits: ProgramLimits, workers: int) -> Executor:
        """Where program runs go: the scheduler's GPU hosts (waiting ``host_wait_s`` for one), else this machine,
        ``workers`` at a time, in the program sandbox ``host`` and ``limits`` describe."""
        if self.scheduler is not None:
            return cluster_at(self.scheduler).executor(self.host_wait_s)
        return LocalExecutor({"gpu": launcher_for(host, limits)}, workers=workers)
