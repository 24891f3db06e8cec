"""Running untrusted programs (a pair's CUDA or HIP binary) and saying how each run ended.

A program runs in the sandbox of :mod:`toolchains.sandbox` with its binary and inputs in a scratch
directory (an :class:`Invocation` says its arguments, its working directory and the data files laid out around it,
which it can read but not change), as an unprivileged user id of its own (a fresh one per run, so the
process-count limit counts only that run's processes), under rlimits (CPU seconds, data size, file size, processes) and
a wall-clock timeout. It runs in a PID namespace of its own, so killing the run kills everything it
started, ``setsid`` children included. In ``bwrap`` mode it sees read-only only the system
libraries and the ``libraries`` it is given (a CUDA runtime), the GPU's device nodes when asked, no
network and nothing else of the host; in the ``rlimits`` mode (no bubblewrap) it can read what any
user can read on the host.

:func:`verdict` names the end of a run: ``exited`` (with its exit code), ``timeout``,
``cpu_limit`` (SIGXCPU at the CPU limit), ``file_limit`` (SIGXFSZ: wrote too much),
``crashed:<signal>`` (see :func:`toolchains.sandbox.exit_signal`). A program that ignores SIGXCPU is
killed a CPU second later by the hard limit: ``crashed:SIGKILL``. With a :class:`toolchains.launches.LaunchCounter`
each run also says how many kernels ran on the GPU (``kernel_launches``) and gives the digests of what it copied from
the GPU to the host (the output ``device_reads``, where the program initialised CUDA).
"""

from __future__ import annotations

import glob
import json
import secrets
import signal
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from toolchains.executor import Job, JobResult, Launcher, PeakMemory, ToolRun, run_tool
from toolchains.launches import COUNT_FILE, DEVICE_READS_FILE, LaunchCounter
from toolchains.sandbox import Sandbox, detect, exit_signal

PROGRAM = "program"
"""The binary's name in its scratch directory."""

RUN_UIDS = (200_000, 65_536)
"""Run user ids are drawn from [200000, 265536): ids no account of the host has."""


@dataclass(frozen=True)
class ProgramLimits:
    """What one program run may use."""

    wall_s: float
    cpu_s: int
    data_bytes: int
    file_bytes: int
    processes: int

    def prlimit(self) -> list[str]:
        # CPU: SIGXCPU at the soft limit, SIGKILL a second later (equal limits would give SIGKILL only)
        return ["/usr/bin/prlimit", "--core=0", f"--cpu={self.cpu_s}:{self.cpu_s + 1}", f"--data={self.data_bytes}",
                f"--fsize={self.file_bytes}", f"--nproc={self.processes}", "--"]


RUN_FACTS = "run.json"
"""The output a program job adds to the program's stdout: its verdict, wall seconds, peak resident memory (KiB,
sampled over the sandbox's processes: :class:`toolchains.executor.PeakMemory`), sandbox mode and the kernels it ran
(None: not counted)."""
RUN_FACT_KEYS = frozenset({"verdict", "wall_s", "max_rss_kib", "sandbox", "kernel_launches"})
PROGRAM_OUTPUTS = ("stdout", RUN_FACTS)
DEVICE_READS = "device_reads"
"""The output of a counted run that initialised CUDA: the counter's digests of its copies from device to host."""
PROGRAM_DIR = "/run/program"
"""Where the run's scratch directory is in the sandbox (bwrap): one path, so a program that prints its own path or
working directory prints the same bytes on every run."""


@dataclass(frozen=True)
class Invocation:
    """How a program is started: its arguments, its working directory (a folder of the run's tree; the binary is
    placed there as ``program``) and the data files of its tree (tree path, bytes' digest) laid out around it."""

    args: tuple[str, ...] = ()
    workdir: str = ""
    inputs: tuple[tuple[str, str], ...] = ()

    @property
    def tool(self) -> str:
        """The binary's path in the scratch directory."""
        return f"{self.workdir}/{PROGRAM}" if self.workdir else PROGRAM

    def describe(self) -> dict:
        return {"args": list(self.args), "workdir": self.workdir, "inputs": [list(i) for i in self.inputs]}


class ProgramLauncher(Launcher):
    """Starts ``./program`` in its scratch directory inside the sandbox, as a fresh user id, under ``limits``."""

    def __init__(self, limits: ProgramLimits, libraries: list[Path] = (), gpu: bool = False,
                 sandbox: Sandbox | None = None, scratch: Path | None = None, counter: LaunchCounter | None = None,
                 device: int | None = None):
        self.limits = limits
        self.device = device
        """The GPU (index) the program sees, where the host has several; None: every GPU."""
        self.counter = counter
        self.libraries = [Path(p) for p in libraries] + ([counter.folder] if counter else [])
        self.gpu = gpu
        self.sandbox = sandbox or detect()
        self._scratch = scratch or Path(tempfile.gettempdir()) / "cass-runs"

    def scratch_parent(self) -> Path:
        return self._scratch

    def env(self) -> dict[str, str]:
        return {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin",
                **({"LD_LIBRARY_PATH": ":".join(map(str, self.libraries))} if self.libraries else {}),
                **(self.counter.env() if self.counter else {}),
                **({"CUDA_VISIBLE_DEVICES": str(self.device)} if self.device is not None else {})}

    def argv(self, tool: str, args: tuple[str, ...], scratch: Path) -> list[str]:
        uid = RUN_UIDS[0] + secrets.randbelow(RUN_UIDS[1])
        # as root: make the binary executable and the directory writable for the run's user, then drop to it
        drop = ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        # the shell stays as the program's parent (never PID 1, which ignores SIGXCPU/SIGXFSZ) and reports a
        # death by signal N as 128 + N; the data files stay root's (read-only to the run), their folders not writable
        # but the working directory; the kernel counter writes its count and device reads into the scratch directory
        folder, name = tool.rpartition("/")[::2]
        start = ["/bin/sh", "-c", 'chmod -R a+rX . && chmod 0755 "$1" && chmod 0777 . "$2" && '
                 f'export CASS_KERNEL_LAUNCHES="$PWD/{COUNT_FILE}" CASS_DEVICE_READS="$PWD/{DEVICE_READS_FILE}" && '
                 'cd "$2" && shift 2 && "$@"',
                 "sh", tool, folder or ".", *drop, f"./{name}", *args]
        if self.sandbox.mode != "bwrap":
            # a /proc of the new PID namespace: the CUDA driver fails ("OS call failed") when /proc/self is not the
            # program's own process
            return [*self.limits.prlimit(), "/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--mount-proc",
                    *start]
        devices = [arg for node in sorted(glob.glob("/dev/nvidia*")) if self.gpu for arg in ("--dev-bind", node, node)]
        mounts = [*reachable([*self.libraries, Path(PROGRAM_DIR)]), *self.sandbox.system_view(self.libraries), *devices]
        # no user namespace: the run's user id must be a real one of the host for the process limit to hold
        sandbox = self.sandbox.command(mounts, unshare=("--unshare-net", "--unshare-pid", "--unshare-ipc",
                                                        "--unshare-uts", "--unshare-cgroup-try"), tool=False)
        return [*self.limits.prlimit(), *sandbox, *self.sandbox.workdir(scratch, PROGRAM_DIR), "--", *start]

    def run_job(self, job: Job, cancelled: Callable[[], bool] | None = None) -> JobResult:
        """Run a program job: any end of the program is a result (its verdict in ``run.json``); a sandbox that
        could not start it, or a run cancelled from outside, is transient."""
        run = run_tool(self, replace(job, outputs=(*job.outputs, COUNT_FILE, DEVICE_READS_FILE)), cancelled,
                       PeakMemory())
        if isinstance(run, JobResult):
            return run
        base = {"stderr": run.stderr, "cpu_s": run.cpu_s, "wall_s": run.wall_s, "sandbox": self.sandbox.mode}
        if run.stopped and not run.stopped.startswith("timeout"):
            return JobResult(exit_code=-1, transient=run.stopped, **base)
        if run.returncode == 1 and run.stderr.startswith((b"bwrap: ", b"setpriv: ", b"unshare: ", b"prlimit: ")):
            return JobResult(exit_code=-1, transient="the sandbox could not start the program", **base)
        count = run.outputs.pop(COUNT_FILE, b"0")   # a program that never initialised CUDA leaves no count
        reads = run.outputs.pop(DEVICE_READS_FILE, None)
        facts = {"verdict": verdict(run), "wall_s": round(run.wall_s, 4), "max_rss_kib": run.peak_rss_kib,
                 "sandbox": self.sandbox.mode,
                 "kernel_launches": int(count.strip() or 0) if self.counter and count.strip().isdigit() else None}
        outputs = {**run.outputs, "stdout": run.stdout, RUN_FACTS: json.dumps(facts, sort_keys=True).encode(),
                   **({DEVICE_READS: reads} if self.counter and reads is not None else {})}
        return JobResult(exit_code=run.returncode, outputs=outputs, **base)


def reachable(paths: list[Path]) -> list[str]:
    """bubblewrap arguments that make the folders above ``paths`` in the sandbox, searchable by the run's user: left
    to bubblewrap they get the caller's umask (a GPU host's runner with umask 077, or a file system such as gVisor's,
    leaves them root's alone, and the run cannot reach its working directory or its libraries)."""
    above = sorted({str(parent) for path in paths for parent in Path(path).parents if str(parent) != "/"},
                   key=lambda p: p.count("/"))
    return [arg for folder in above for arg in ("--perms", "0755", "--dir", folder)]


@dataclass(frozen=True)
class SandboxedRun:
    """One run of a program: how it ended (:func:`verdict`), its exit code, output, time, peak memory, the kernels it
    ran and its device reads (None: not counted)."""

    verdict: str
    exit_code: int
    stdout: bytes
    stderr: bytes
    wall_s: float
    max_rss_kib: int | None
    sandbox: str
    kernel_launches: int | None
    device_reads: bytes | None = None

    @classmethod
    def from_result(cls, result: JobResult) -> SandboxedRun:
        facts = json.loads(result.outputs[RUN_FACTS])
        return cls(facts["verdict"], result.exit_code, result.outputs["stdout"], result.stderr, facts["wall_s"],
                   facts["max_rss_kib"], facts["sandbox"], facts["kernel_launches"],
                   result.outputs.get(DEVICE_READS))


class SandboxFailedError(OSError):
    """The sandbox around a program could not be set up (nothing of the program ran)."""


def verdict(run: ToolRun) -> str:
    """``exited``, ``timeout``, ``cpu_limit``, ``file_limit`` or ``crashed:<SIGNAL>``."""
    if run.stopped:
        return "timeout"
    sig = exit_signal(run.returncode, shell_status=True)
    if sig is None:
        return "exited"
    return {signal.SIGXCPU: "cpu_limit", signal.SIGXFSZ: "file_limit"}.get(sig, f"crashed:{sig.name}")


def program_job(binary: bytes, limits: ProgramLimits, invocation: Invocation = Invocation(),
                inputs: dict[str, bytes] | None = None, **identity) -> Job:
    """The job that runs ``binary`` once under ``limits`` as ``invocation`` says, with ``inputs`` (tree path: bytes)
    laid out around it (``identity``: the job's vendor, fingerprint and action)."""
    return Job(identity.pop("vendor", "program"), invocation.tool, invocation.args,
               {**(inputs or {}), invocation.tool: binary}, PROGRAM_OUTPUTS, timeout_s=limits.wall_s,
               stdout_as="stdout", limits=asdict(limits), **identity)


def run_program(launcher: ProgramLauncher, binary: bytes, args: tuple[str, ...] = (),
                inputs: dict[str, bytes] | None = None) -> SandboxedRun:
    """Run ``binary`` once in a fresh scratch directory (with ``inputs`` beside it)."""
    result = launcher.run_job(program_job(binary, launcher.limits, Invocation(args), inputs))
    if result.transient:
        raise SandboxFailedError(f"{result.transient}: {result.stderr.decode(errors='replace')}")
    return SandboxedRun.from_result(result)
