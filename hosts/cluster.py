"""Vendor hosts on Dask ``distributed``: tool jobs run where the vendor's toolchain lives.

A host runs ``dask worker <scheduler> --resources "nvidia=N" --preload hosts.cluster``
(``amd=N`` and/or ``hipify=N`` on an AMD host; ``hip-nvidia=N`` on a host that builds HIP through HIP's NVIDIA back
end, with the CUDA 12 runtime wheels and HIP's headers of ``scripts/setup.sh``; ``gpu=N`` on a host whose NVIDIA
GPU runs pairs' programs: the preload then refuses to start without a GPU that ``nvidia-smi`` lists, and the host
checks every program job's run-host fingerprint as it checks a tool's). The preload hook (:func:`dask_setup`) loads the
host's own toolchains for the vendors it advertises, refuses to start when one is missing, and
fingerprints every tool once. The driver (:class:`Cluster`) asks every host for its
:class:`~toolchains.base.ToolchainReport`, plans and keys actions with the hosts' fingerprints
(all hosts serving a tool must agree), and sends only cache misses: each job carries its input
bytes and comes back with its output bytes, so hosts share no filesystem with the driver.

A job asks for one unit of its resource (``hipify`` for hipify-perl, else its vendor), so it
only runs on a host with that toolchain. On the host, :func:`run_job` refuses a job whose
fingerprint is not the host's own, runs the tool in its own process group (killed on timeout,
on cancellation and when the worker shuts down) and logs each job it starts and finishes.
A job whose host dies is rescheduled by the scheduler on another host with the resource, up to
its ``allowed-failures`` (3 by default), then comes back as a transient failure, never cached.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from hosts.gpu import RunHost, launcher_for, local_gpu_host
from toolchains.base import Toolchain, ToolchainReport
from toolchains.executor import Executor, FollowUp, Job, JobResult, Launcher, kill_running
from toolchains.sandboxed_runs import ProgramLimits

RESOURCE_VENDOR = {"nvidia": "nvidia", "amd": "amd", "hipify": "amd", "hip-nvidia": "hip-nvidia"}
"""Worker resources and the vendor toolchain each one stands for."""
GPU_RESOURCE = "gpu"
"""The resource of a host that runs programs on its NVIDIA GPU (jobs of vendor ``gpu``)."""
STAGE_RESOURCE = "stage"
"""The resource of a stage host: it runs the stages' own work (``cass.engine.stage_work``), no tool, so it needs no
toolchain; it starts one thread per worker process (``--nworkers N --nthreads 1``)."""

log = logging.getLogger("cass.worker")


def resource_for(vendor: str, tool: str) -> str:
    """The worker resource a job of ``tool`` asks for: HIPIFY has its own, compilers their vendor's."""
    return "hipify" if tool == "hipify-perl" else vendor


def resource_tools(toolchain: Toolchain, resource: str) -> tuple[str, ...]:
    """The tools of ``toolchain`` that jobs asking for ``resource`` run."""
    return tuple(t for t in toolchain.tools() if resource_for(toolchain.vendor, t) == resource)


def scheduler_address(executor_params: dict) -> str | None:
    """The scheduler to send jobs to: ``CASS_SCHEDULER``, else ``executor.scheduler``, else none (local)."""
    return os.environ.get("CASS_SCHEDULER") or executor_params.get("scheduler") or None


class NoHostError(RuntimeError):
    """No connected host has the resource a job needs."""


class ToolchainMismatchError(RuntimeError):
    """A host's toolchain is not the one an action key was computed for."""


# ----------------------------------------------------------------------------- on the worker

_toolchains: dict[str, Toolchain] = {}
_reports: dict[str, ToolchainReport] = {}
_gpu_hosts: list[RunHost] = []


class HostSetupError(SystemExit):
    """This host cannot serve a resource it advertises. A SystemExit, because Dask logs and
    ignores ordinary exceptions of a preload hook and would start a worker that fails every job."""


def dask_setup(worker) -> None:
    """Preload hook: load and fingerprint this host's toolchains for the advertised resources."""
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s - cass.worker - %(levelname)s - %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            _kill_tools_on(signum)
    try:
        _load_toolchains(worker)
    except Exception as exc:
        log.error("host %s cannot start: %s", worker.name, exc)
        raise HostSetupError(f"cass: host {worker.name} cannot start: {exc}") from exc


def _load_toolchains(worker) -> None:
    from toolchains import load_toolchains

    advertised = {r for r, n in worker.state.total_resources.items() if n > 0}
    resources = advertised & set(RESOURCE_VENDOR)
    if GPU_RESOURCE in advertised:
        host = local_gpu_host()
        if host is None:
            raise RuntimeError(f"worker {worker.name} advertises {GPU_RESOURCE!r} but nvidia-smi finds no NVIDIA GPU "
                               "on this host")
        _gpu_hosts[:] = [host]
        log.info("host %s serves gpu: %s, fingerprint %s", worker.name, host.describe(), host.fingerprint()[:16])
    elif STAGE_RESOURCE in advertised:
        log.info("host %s serves stage work", worker.name)
    elif not resources:
        raise RuntimeError(f"worker {worker.name} advertises none of the resources "
                           f"{sorted([*RESOURCE_VENDOR, GPU_RESOURCE, STAGE_RESOURCE])}: start it with --resources "
                           "\"nvidia=N\" (or amd=N, hipify=N, hip-nvidia=N, gpu=N, stage=1)")
    if not resources:
        return
    local = load_toolchains(vendors=sorted({RESOURCE_VENDOR[r] for r in resources}))
    for resource in sorted(resources):
        tc = local[RESOURCE_VENDOR[resource]]
        for tool in resource_tools(tc, resource):
            tc.require(tool)   # ToolchainMissingError says how to install it; the worker does not start
        _toolchains[tc.vendor] = tc
    for vendor, tc in _toolchains.items():
        _reports[vendor] = tc.report()
    for vendor, report in _reports.items():
        tools = ", ".join(f"{t} {(r['fingerprint'] or 'missing')[:16]}" for t, r in report.tools.items())
        log.info("host %s serves %s: %s", worker.name, vendor, tools)


def dask_teardown(worker) -> None:
    """Preload hook: a worker that shuts down kills the tools it still runs."""
    if killed := kill_running():
        log.info("host %s shutting down: killed %d running tool(s)", worker.name, killed)


def _kill_tools_on(signum: int) -> None:
    """Make ``signum`` (SIGTERM, SIGINT: a host being stopped) kill the running tools' process
    groups before the worker process goes (they run in their own groups, so the signal that
    stops the worker never reaches them)."""
    previous = signal.getsignal(signum)

    def handler(sig, frame):
        kill_running()
        if callable(previous):
            previous(sig, frame)
        else:
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            os.kill(os.getpid(), sig)

    signal.signal(signum, handler)


def host_reports(dask_worker=None) -> dict[str, ToolchainReport]:
    """This host's toolchain reports (run on every worker by :meth:`Cluster.hosts`)."""
    return dict(_reports)


def host_gpu(dask_worker=None) -> dict | None:
    """This host's GPU facts, where it serves ``gpu`` (run on the GPU workers by :meth:`Cluster.gpu_host`)."""
    return asdict(_gpu_hosts[0]) if _gpu_hosts else None


def _served(job: Job, worker) -> tuple[Launcher, str]:
    """The launcher and fingerprint this host runs ``job`` with."""
    if job.vendor == GPU_RESOURCE:
        if not _gpu_hosts:
            raise NoHostError(f"host {worker.name} serves no GPU (was it started with --resources gpu=N and "
                              "--preload hosts.cluster?)")
        return launcher_for(_gpu_hosts[0], ProgramLimits(**job.limits)), _gpu_hosts[0].fingerprint()
    toolchain = _toolchains.get(job.vendor)
    if toolchain is None:
        raise NoHostError(f"host {worker.name} has no {job.vendor} toolchain loaded (was it started with "
                          "--preload hosts.cluster?)")
    return toolchain.launcher, toolchain.fingerprint(job.tool)


def run_job(job: Job) -> JobResult:
    """Run one job on this host, after checking that its toolchain is the one the key names."""
    from distributed import get_worker

    worker = get_worker()
    launcher, own = _served(job, worker)
    if job.fingerprint != own:
        raise ToolchainMismatchError(
            f"host {worker.name} ({worker.address}) refuses {job.tool} job {job.action}: its {job.tool} "
            f"fingerprint {own[:16]} is not {str(job.fingerprint)[:16]}, the one the action key was computed "
            "with; make the hosts' toolchains identical (restart a worker after changing its toolchain)")
    key = worker.get_current_task()

    def cancelled() -> bool:
        task = worker.state.tasks.get(key)
        return task is None or task.state in ("cancelled", "released")

    log.info("started %s action=%s", job.tool, job.action)
    start = time.monotonic()
    result = launcher.run_job(job, cancelled)
    result.host = worker.name
    log.info("finished %s action=%s exit=%d transient=%s in %.2f s", job.tool, job.action, result.exit_code,
             result.transient, time.monotonic() - start)
    return result


# ----------------------------------------------------------------------------- on the driver

@dataclass(frozen=True)
class Host:
    """A connected worker: its name, address, resources, threads and toolchain reports."""

    name: str
    address: str
    resources: dict[str, float]
    nthreads: int
    reports: dict[str, ToolchainReport]


class Cluster:
    """A connection to a Dask scheduler whose workers are vendor hosts."""

    def __init__(self, address: str, connect_timeout_s: float = 30):
        from distributed import Client

        self.address = address
        try:
            self.client = Client(address, timeout=connect_timeout_s, set_as_default=False)
        except OSError as exc:
            raise ConnectionError(f"cannot reach the Dask scheduler at {address} (from CASS_SCHEDULER or "
                                  f"params.yaml executor.scheduler): {exc}") from exc

    def close(self) -> None:
        self.client.close()

    def resources(self) -> dict[str, dict[str, float]]:
        """The resources of every connected worker, by address."""
        return {addr: w.get("resources", {}) for addr, w in self.client.scheduler_info(n_workers=-1)["workers"].items()}

    def hosts(self, with_reports: bool = True) -> list[Host]:
        """Every connected worker, by name, with its toolchain reports (asked of every worker)."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        ask = workers and with_reports
        reports = self.client.run(host_reports, on_error="ignore") if ask else {}  # a host leaving now is skipped
        return sorted((Host(str(w.get("name", addr)), addr, dict(w.get("resources", {})), int(w.get("nthreads", 0)),
                            reports.get(addr, {})) for addr, w in workers.items()), key=lambda h: h.name)

    def toolchain(self, vendor: str, hosts: list[Host] | None = None) -> Toolchain:
        """``vendor``'s toolchain as the connected hosts have it: each tool's fingerprint from the
        hosts that serve it (they must agree); a tool no host serves is reported missing."""
        from toolchains import TOOLCHAIN_CLASSES

        hosts = self.hosts() if hosts is None else hosts
        serving = [h for h in hosts if vendor in h.reports and
                   any(RESOURCE_VENDOR.get(r) == vendor and n > 0 for r, n in h.resources.items())]
        if not serving:
            raise NoHostError(self._no_host(vendor, hosts))
        tools: dict[str, dict] = {}
        for tool in serving[0].reports[vendor].tools:
            resource = resource_for(vendor, tool)
            entries = {h.name: h.reports[vendor].tools.get(tool) for h in serving if h.resources.get(resource, 0) > 0}
            fingerprints = {name: e and e["fingerprint"] for name, e in entries.items()}
            if len(set(fingerprints.values())) > 1:
                raise ToolchainMismatchError(
                    f"hosts serving {resource} disagree on {tool}'s fingerprint: "
                    + ", ".join(f"{name} {str(fp)[:16]}" for name, fp in sorted(fingerprints.items()))
                    + "; give them identical toolchains (or stop the odd one)")
            tools[tool] = next(iter(entries.values())) if entries else {
                "path": None, "version": None, "fingerprint": None,
                "problem": f"no connected host has the resource {resource!r}"}
        compiling = [h for h in serving if h.resources.get(vendor, 0) > 0] or serving   # the layout is theirs
        layouts = {h.name: h.reports[vendor].layout for h in compiling}
        if len({repr(sorted(v.items())) for v in layouts.values()}) > 1:
            raise ToolchainMismatchError(f"hosts serving {vendor} have different installations: {layouts}")
        first = compiling[0].reports[vendor]
        report = ToolchainReport(vendor, tools, first.layout, first.include_root, first.missing_libraries,
                                 first.headers)
        return TOOLCHAIN_CLASSES[vendor].from_report(report)

    def gpu_host(self) -> RunHost | None:
        """The GPU hosts' facts (they must agree: a run's key names one host's facts), or None without one."""
        serving = [h.address for h in self.hosts(with_reports=False) if h.resources.get(GPU_RESOURCE, 0) > 0]
        if not serving:
            return None
        facts = {addr: f for addr, f in self.client.run(host_gpu, workers=serving, on_error="ignore").items()
                 if isinstance(f, dict)}
        kinds = {json.dumps(f, sort_keys=True) for f in facts.values()}
        if len(kinds) > 1:
            raise ToolchainMismatchError(
                f"the hosts serving {GPU_RESOURCE!r} differ ({'; '.join(sorted(kinds))}); a run is keyed by one "
                "host's facts: give each kind of GPU host its own scheduler")
        return RunHost(**json.loads(kinds.pop())) if kinds else None

    def _no_host(self, resource: str, hosts: list[Host]) -> str:
        connected = "; ".join(f"{h.name} ({', '.join(f'{r}={n:g}' for r, n in sorted(h.resources.items()))})"
                              for h in hosts) or "none"
        return (f"no worker connected to the scheduler at {self.address} has the resource {resource!r}; "
                f"connected: {connected}. Start one on a host with that toolchain: "
                f'dask worker {self.address} --resources "{resource}=N" --preload hosts.cluster')

    def executor(self, host_wait_s: float) -> DaskExecutor:
        return DaskExecutor(self, host_wait_s)


class DaskExecutor(Executor):
    """Sends jobs to the cluster, each asking for one unit of its resource; yields results as they
    arrive (and forgets them there at once, so a host that dies later loses nothing delivered).

    A job whose resource no connected host has fails fast when it is submitted; if every such
    host goes away during the run, its jobs wait ``host_wait_s`` for one to come back, then
    come back as transient failures."""

    POLL_S = 1.0

    def __init__(self, cluster: Cluster, host_wait_s: float):
        self.cluster = cluster
        self.host_wait_s = host_wait_s

    def _available(self) -> set[str]:
        return {r for res in self.cluster.resources().values() for r, n in res.items() if n > 0}

    def run(self, jobs: list[Job], follow: FollowUp | None = None) -> Iterator[tuple[int, JobResult]]:
        jobs = list(jobs)
        resources = [resource_for(job.vendor, job.tool) for job in jobs]
        self._require(jobs, resources)
        needed = set(resources)
        done: queue.SimpleQueue[int] = queue.SimpleQueue()
        run_id = uuid.uuid4().hex[:8]
        futures = {}

        def start(i: int, priority: int = 0) -> None:
            job = jobs[i]
            future = self.cluster.client.submit(run_job, job, key=f"{job.tool}-{(job.action or '')[:16]}-{run_id}-{i}",
                                                resources={resources[i]: 1}, pure=False, priority=priority)
            future.add_done_callback(lambda _, i=i: done.put(i))
            futures[i] = future

        for i in range(len(jobs)):
            start(i)
        missing_since: dict[str, float] = {}
        try:
            while futures:
                try:
                    i = done.get(timeout=self.POLL_S)
                except queue.Empty:
                    finished = list(self._give_up_waiting(futures, jobs, resources, missing_since))
                else:
                    if (future := futures.pop(i, None)) is None:
                        continue
                    finished = [(i, self._result(future, jobs[i]))]
                    future.release()
                for i, result in finished:
                    yield i, result
                    more = list(follow(i, result)) if follow else []
                    more_resources = [resource_for(job.vendor, job.tool) for job in more]
                    if not needed.issuperset(more_resources):   # a resource this run has not needed yet
                        self._require(more, more_resources)
                        needed.update(more_resources)
                    resources += more_resources
                    for job in more:
                        jobs.append(job)
                        start(len(jobs) - 1, priority=1)   # follow-ups before the jobs still queued
        finally:  # stopped early or done: nothing of this run stays queued or running on the hosts
            for future in futures.values():
                future.cancel()

    def _require(self, jobs: list[Job], resources: list[str]) -> None:
        """Fail fast when some job needs a resource no connected host has (looked up twice, a poll
        apart: the scheduler's view of a worker's resources can lag right after a run)."""
        if not set(resources) - self._available():
            return
        time.sleep(self.POLL_S)
        hosts = self.cluster.hosts(with_reports=False)
        if lacking := set(resources) - {r for h in hosts for r, n in h.resources.items() if n > 0}:
            resource = sorted(lacking)[0]
            need = Counter(j.tool for j, r in zip(jobs, resources, strict=True) if r == resource)
            raise NoHostError(f"{sum(need.values())} job(s) ({', '.join(sorted(need))}) need "
                              + self.cluster._no_host(resource, hosts))

    def _give_up_waiting(self, futures: dict, jobs: list[Job], resources: list[str],
                         missing_since: dict[str, float]) -> Iterator[tuple[int, JobResult]]:
        """Transient results for pending jobs whose resource has had no host for ``host_wait_s``."""
        available, now = self._available(), time.monotonic()
        for resource in {resources[i] for i in futures}:
            if resource in available:
                missing_since.pop(resource, None)
            elif now - missing_since.setdefault(resource, now) > self.host_wait_s:
                for i in [i for i in futures if resources[i] == resource]:
                    futures.pop(i).cancel()
                    yield i, JobResult(-1, transient=f"no host with the resource {resource!r} for "
                                                     f"{self.host_wait_s:g} s (all of them left the cluster)")

    @staticmethod
    def _result(future, job: Job) -> JobResult:
        from distributed import KilledWorker

        try:
            return future.result()
        except KilledWorker as exc:
            return JobResult(-1, stderr=str(exc).encode(),
                             transient=f"the hosts running it died too often: {exc}")
        except (ToolchainMismatchError, NoHostError):
            raise
        except Exception as exc:
            raise RuntimeError(f"{job.tool} job {job.action} failed on the cluster: {exc!r}") from exc
