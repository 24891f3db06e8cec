"""One interface for running tool invocations, wherever the tools live.

A :class:`Job` is hermetic: the tool's name, arguments that use only relative paths, the input
files as bytes, and the names of the files it should produce. An executor runs jobs and returns
:class:`JobResult` objects; nothing above this interface may assume the job ran locally. The
local executor runs jobs in parallel in a fresh scratch directory each, in the job's own process
group, and kills the whole group on timeout.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Job:
    """One hermetic tool invocation.

    ``vendor`` names the toolchain that provides ``tool`` (``"nvidia"`` or ``"amd"``).
    ``stdout_as`` names an output that receives the tool's standard output.
    """

    vendor: str
    tool: str
    args: tuple[str, ...]
    inputs: Mapping[str, bytes]
    outputs: tuple[str, ...]
    timeout_s: float
    stdout_as: str | None = None


@dataclass
class JobResult:
    """What a job produced. ``transient`` marks failures that must never be cached."""

    exit_code: int
    outputs: dict[str, bytes] = field(default_factory=dict)
    stderr: bytes = b""
    transient: str | None = None

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


class Executor(ABC):
    """Runs jobs; yields ``(index, result)`` pairs as they finish."""

    @abstractmethod
    def run(self, jobs: list[Job]) -> Iterator[tuple[int, JobResult]]:
        ...


TRANSIENT_EXIT_CODES = {137: "killed (SIGKILL, likely out of memory)", 143: "terminated (SIGTERM)"}
TRANSIENT_STDERR = re.compile(
    rb"died due to signal \d+|unable to execute command: Killed|\bKilled\b|terminated by signal"
    rb"|out of memory|std::bad_alloc|Cannot allocate memory")
"""What compiler drivers print when one of their own subprocesses was killed or ran out of
memory: such a run says nothing about the source and is never cached."""


def run_in_scratch(launcher: Launcher, job: Job) -> JobResult:
    """Run one job in a fresh scratch directory created by ``launcher``; always cleans up."""
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
        try:
            proc = subprocess.Popen(
                argv,
                cwd=scratch,
                env=launcher.env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return JobResult(exit_code=-1, stderr=f"cannot start {argv[0]}: {exc}".encode(),
                             transient=f"tool not startable: {exc}")
        try:
            stdout, stderr = proc.communicate(timeout=job.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            stdout, stderr = proc.communicate()
            return JobResult(exit_code=-1, stderr=stderr,
                             transient=f"timeout after {job.timeout_s:g} s")
        except BaseException:
            _kill_group(proc)
            raise
        if proc.returncode < 0:
            return JobResult(exit_code=proc.returncode, stderr=stderr,
                             transient=f"killed by signal {signal.Signals(-proc.returncode).name}")
        if proc.returncode in TRANSIENT_EXIT_CODES:
            return JobResult(exit_code=proc.returncode, stderr=stderr,
                             transient=TRANSIENT_EXIT_CODES[proc.returncode])
        if proc.returncode and (match := TRANSIENT_STDERR.search(stderr)):
            return JobResult(exit_code=proc.returncode, stderr=stderr,
                             transient=f"a compiler subprocess failed: {match.group(0).decode(errors='replace')}")
        outputs = {}
        for name in job.outputs:
            if name == job.stdout_as:
                outputs[name] = stdout
            elif (scratch / name).is_file():
                outputs[name] = (scratch / name).read_bytes()
        return JobResult(exit_code=proc.returncode, outputs=outputs, stderr=stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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

    def run(self, jobs: list[Job]) -> Iterator[tuple[int, JobResult]]:
        launchers = [self._launcher(job.vendor) for job in jobs]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {pool.submit(run_in_scratch, launchers[i], job): i for i, job in enumerate(jobs)}
            try:
                for fut in as_completed(futures):
                    yield futures[fut], fut.result()
            finally:
                for fut in futures:
                    fut.cancel()
