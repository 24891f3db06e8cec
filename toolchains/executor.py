"""One interface for running tool invocations, wherever the tools live.

A :class:`Job` is hermetic: the tool's name, arguments that use only relative paths, the input
files as bytes, and the names of the files it should produce. An executor runs jobs and returns
:class:`JobResult` objects; nothing above this interface may assume the job ran locally. The
local executor runs jobs in parallel in a fresh scratch directory each, in the job's own process
group, and kills the whole group on timeout or cancellation; the cluster executor
(:mod:`hosts.cluster`) sends them to vendor hosts, which run them the same way. Jobs start
in the order given (callers put the longest first); a caller's ``follow`` hook adds the jobs a
finished one unblocks, ahead of those not started yet, while the others still run, so no core
waits for a batch's stragglers.
Every result carries the tool's CPU time (its own and its waited-for subprocesses') and wall time.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from toolchains.sandbox import Sandbox


@dataclass(frozen=True)
class Job:
    """One hermetic tool invocation.

    ``vendor`` names the toolchain that provides ``tool`` (``"nvidia"`` or ``"amd"``).
    ``stdout_as`` names an output that receives the tool's standard output. ``fingerprint`` is
    the tool's fingerprint the job's action key was computed with (a host whose own differs
    refuses the job); ``action`` is that key (for names and logs); ``limits`` are a program job's
    run limits (:class:`toolchains.sandboxed_runs.ProgramLimits` fields), for a host that runs it elsewhere.
    """

    vendor: str
    tool: str
    args: tuple[str, ...]
    inputs: Mapping[str, bytes]
    outputs: tuple[str, ...]
    timeout_s: float
    stdout_as: str | None = None
    fingerprint: str | None = None
    action: str | None = None
    limits: Mapping[str, float] | None = None


@dataclass
class JobResult:
    """What a job produced. ``transient`` marks failures that must never be cached; ``host``
    names where it ran; ``cpu_s`` is the user + system CPU time of the tool process and of the
    subprocesses it waited for, ``wall_s`` its wall time (both 0 where no tool ran); ``sandbox`` the
    mode the tool ran in (:mod:`toolchains.sandbox`)."""

    exit_code: int
    outputs: dict[str, bytes] = field(default_factory=dict)
    stderr: bytes = b""
    transient: str | None = None
    host: str | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    sandbox: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.transient is None


class Launcher(ABC):
    """How one toolchain's tools are started on a host: where scratch directories live and the
    command line that runs a tool inside one."""

    @abstractmethod
    def scratch_parent(self) -> Path:
        """Directory under which per-job scratch directories are created."""

    @abstractmethod
    def argv(self, tool: str, args: tuple[str, ...], scratch: Path) -> list[str]:
        """Full command line that runs ``tool args`` with ``scratch`` as working directory."""

    @abstractmethod
    def env(self) -> dict[str, str]:
        """The environment of the tool process (a clean, explicit one)."""

    sandbox: Sandbox
    """How the tools are confined (:mod:`toolchains.sandbox`); its mode enters every fingerprint."""

    def path_view(self) -> str:
        """Where the tools see their folders, where that is not where they are (it enters the fingerprints); ""
        for none."""
        return ""

    def run_job(self, job: Job, cancelled: Callable[[], bool] | None = None) -> JobResult:
        """Run one job and say what came of it (default: a compiler-like tool, :func:`run_in_scratch`)."""
        return run_in_scratch(self, job, cancelled)


FollowUp = Callable[[int, "JobResult"], Iterable[Job]]
"""Called with each finished job's index and result after the caller has taken that result;
returns the jobs it unblocks, which get the next indices and start before the jobs not yet
started."""


class Executor(ABC):
    """Runs jobs; yields ``(index, result)`` pairs as they finish."""

    @abstractmethod
    def run(self, jobs: list[Job], follow: FollowUp | None = None) -> Iterator[tuple[int, JobResult]]:
        """Start ``jobs`` in their order; yield each result as it arrives, then start what ``follow``
        returns for it first. Stopping the iteration early cancels what has not finished."""


TRANSIENT_EXIT_CODES = {137: "killed (SIGKILL, likely out of memory)", 143: "terminated (SIGTERM)"}
TRANSIENT_STDERR = re.compile(
    rb"died due to signal \d+|unable to execute command: Killed|\bKilled\b|terminated by signal"
    rb"|out of memory|std::bad_alloc|Cannot allocate memory")
"""What compiler drivers print when one of their own subprocesses was killed or ran out of
memory: such a run says nothing about the source and is never cached."""


POLL_S = 0.2
"""How often a running tool is checked for cancellation."""

_running: set[int] = set()
_running_lock = threading.Lock()


def kill_running() -> int:
    """Kill the process group of every tool this process is running now (a host shutting down
    must not leave compilers behind); returns how many groups were killed."""
    with _running_lock:
        groups = list(_running)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    return len(groups)


@dataclass
class ToolRun:
    """How a tool process ended, before anything is made of it: ``returncode`` (negative: killed by
    that signal), ``stopped`` (why the runner stopped it: timeout, cancelled) and the outputs it
    left, with its CPU and wall seconds, and where it was sampled (:class:`PeakMemory`) the peak resident
    memory of its descendants in KiB."""

    returncode: int
    stopped: str | None
    stdout: bytes
    stderr: bytes
    outputs: dict[str, bytes]
    cpu_s: float
    wall_s: float
    peak_rss_kib: int | None


class PeakMemory:
    """The peak resident memory of a process's descendants, sampled while it runs: the largest ``VmHWM`` (the
    kernel's high-water mark of each process's memory, so a sample misses only growth after the last one)
    in KiB. The process itself is left out, and so is ``wait4``'s ``ru_maxrss``: a forked process starts at
    its parent's size, here this Python process's, while a sandboxed program is forked by a small shell."""

    interval_s = 0.005

    def __init__(self) -> None:
        self.peak_kib: int | None = None   # None: the program ended before the first sample

    def sample(self, root: int) -> None:
        pending = _children(root)
        while pending:
            pid = pending.pop()
            pending += _children(pid)
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:   # gone since it was listed
                continue
            if match := re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE):
                self.peak_kib = max(self.peak_kib or 0, int(match.group(1)))


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def run_tool(launcher: Launcher, job: Job, cancelled: Callable[[], bool] | None = None,
             memory: PeakMemory | None = None) -> ToolRun | JobResult:
    """Run one job in a fresh scratch directory created by ``launcher``; always cleans up. A tool that
    cannot start gives a transient :class:`JobResult` at once; a toolchain that is not installed (an OS
    root that is not there) raises ``ToolchainMissingError``, which stops the stage, as at its start.

    ``cancelled`` is polled while the tool runs; when it says so the tool's process group is killed.
    ``memory``, where given, samples the tool's descendants' memory while it runs."""
    parent = launcher.scratch_parent()
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="job-", dir=parent))
    try:
        for rel, data in job.inputs.items():
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise ValueError(f"job input path escapes its scratch directory: {rel!r}")
            dest = scratch / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        argv = launcher.argv(job.tool, job.args, scratch)
        with tempfile.TemporaryFile(dir=parent) as out_file, tempfile.TemporaryFile(dir=parent) as err_file:
            started = time.monotonic()
            try:
                proc = subprocess.Popen(argv, cwd=scratch, env=launcher.env(), stdin=subprocess.DEVNULL,
                                        stdout=out_file, stderr=err_file, start_new_session=True)
            except OSError as exc:
                return JobResult(exit_code=-1, stderr=f"cannot start {argv[0]}: {exc}".encode(),
                                 transient=f"tool not startable: {exc}", sandbox=launcher.sandbox.mode)
            with _running_lock:
                _running.add(proc.pid)
            try:
                returncode, cpu_s, stopped = _wait(proc, job.timeout_s, cancelled, memory)
            except BaseException:
                _kill_group(proc)
                raise
            finally:
                with _running_lock:
                    _running.discard(proc.pid)
            wall_s = time.monotonic() - started
            stdout, stderr = _read(out_file), _read(err_file)
        outputs = {name: stdout if name == job.stdout_as else (scratch / name).read_bytes()
                   for name in job.outputs if name == job.stdout_as or _plain_file(scratch / name)}
        return ToolRun(returncode, stopped, stdout, stderr, outputs, cpu_s, wall_s, memory and memory.peak_kib)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _plain_file(path: Path) -> bool:
    """A regular file, not a symlink (a tool could leave a link to a host file under an output's name)."""
    return path.is_file() and not path.is_symlink()


def run_in_scratch(launcher: Launcher, job: Job, cancelled: Callable[[], bool] | None = None) -> JobResult:
    """Run one compiler-like job (:func:`run_tool`): a run killed, stopped or whose driver reports a
    killed subprocess is a transient failure, never a result about the source."""
    run = run_tool(launcher, job, cancelled)
    if isinstance(run, JobResult):
        return run
    base = {"stderr": run.stderr, "cpu_s": run.cpu_s, "wall_s": run.wall_s, "sandbox": launcher.sandbox.mode}
    if run.stopped:
        return JobResult(exit_code=-1, transient=run.stopped, **base)
    if run.returncode not in TRANSIENT_EXIT_CODES and (sig := launcher.sandbox.exit_signal(run.returncode)):
        return JobResult(exit_code=run.returncode, transient=f"killed by signal {sig.name}", **base)
    if run.returncode in TRANSIENT_EXIT_CODES:
        return JobResult(exit_code=run.returncode, transient=TRANSIENT_EXIT_CODES[run.returncode], **base)
    if run.returncode and (match := TRANSIENT_STDERR.search(run.stderr)):
        return JobResult(exit_code=run.returncode,
                         transient=f"a compiler subprocess failed: {match.group(0).decode(errors='replace')}", **base)
    return JobResult(exit_code=run.returncode, outputs=run.outputs, **base)


def _wait(proc: subprocess.Popen, timeout_s: float,
          cancelled: Callable[[], bool] | None, memory: PeakMemory | None = None) -> tuple[int, float, str | None]:
    """Wait for ``proc``: its return code, the CPU seconds of it and its waited-for subprocesses
    (from ``wait4``), and why its group was killed (timeout, cancellation) or None; ``memory`` is sampled
    meanwhile."""
    finished = threading.Event()
    stopped: list[str] = []

    def watch() -> None:
        deadline = time.monotonic() + timeout_s
        tick = memory.interval_s if memory else POLL_S
        while not finished.wait(min(tick, max(deadline - time.monotonic(), 0))):
            if memory:
                memory.sample(proc.pid)
            reason = (f"timeout after {timeout_s:g} s" if time.monotonic() >= deadline
                      else "cancelled" if cancelled is not None and cancelled() else None)
            if reason:
                stopped.append(reason)
                _kill_group(proc)
                return

    watcher = threading.Thread(target=watch, name=f"watch-{proc.pid}", daemon=True)
    watcher.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:   # reaped elsewhere (a waitpid(-1) in this process): no status, no times
        proc.returncode = -signal.SIGKILL
        return proc.returncode, 0.0, "reaped by another part of this process"
    finally:
        finished.set()
        watcher.join()
    proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here: Popen must not wait again
    return proc.returncode, usage.ru_utime + usage.ru_stime, stopped[0] if stopped else None


def _read(file) -> bytes:
    file.seek(0)
    return file.read()


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


class LocalExecutor(Executor):
    """Runs jobs on this machine, ``workers`` at a time (default: all cores)."""

    def __init__(self, launchers: Mapping[str, Launcher], workers: int | None = None):
        self.launchers = dict(launchers)
        self.workers = workers or os.cpu_count() or 1

    def _launcher(self, vendor: str) -> Launcher:
        try:
            return self.launchers[vendor]
        except KeyError:
            raise LookupError(f"no toolchain configured for vendor {vendor!r} on this host") from None

    def run(self, jobs: list[Job], follow: FollowUp | None = None) -> Iterator[tuple[int, JobResult]]:
        jobs = list(jobs)
        for job in jobs:
            self._launcher(job.vendor)   # an unknown vendor fails before anything starts
        stop = threading.Event()
        done: queue.SimpleQueue = queue.SimpleQueue()
        waiting = deque(range(len(jobs)))   # not started; follow-ups go to the front
        running: dict[int, Future] = {}
        with ThreadPoolExecutor(max_workers=self.workers) as pool:

            def fill() -> None:
                while waiting and len(running) < self.workers:
                    index = waiting.popleft()
                    future = pool.submit(self._launcher(jobs[index].vendor).run_job, jobs[index], stop.is_set)
                    future.add_done_callback(lambda _, i=index: done.put(i))
                    running[index] = future

            fill()
            try:
                while running:
                    index = done.get()
                    result = running.pop(index).result()
                    result.host = "local"
                    yield index, result
                    more = list(follow(index, result)) if follow else []
                    jobs.extend(more)
                    waiting.extendleft(reversed(range(len(jobs) - len(more), len(jobs))))
                    fill()
            finally:  # the caller stopped early (an error, Ctrl-C): kill what still runs
                stop.set()
                for future in running.values():
                    future.cancel()
