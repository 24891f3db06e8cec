"""Running untrusted programs (a pair's CUDA or HIP binary) and saying how each run ended.

A program runs in the sandbox of :mod:`toolchains.sandbox` with its binary and inputs in a scratch
directory, as the unprivileged user ``nobody`` (so the process-count limit holds), under rlimits
(CPU seconds, data size, file size, processes) and a wall-clock timeout that kills everything it
started. In ``bwrap`` mode it sees read-only only the system libraries and the ``libraries`` it is
given (a CUDA runtime), the GPU's device nodes when asked, no network and nothing else of the host.

:func:`verdict` names the end of a run: ``exited`` (with its exit code), ``timeout``,
``cpu_limit`` (SIGXCPU), ``file_limit`` (SIGXFSZ: wrote too much), ``crashed:<signal>`` (see
:func:`killed_by` for how a signal is told from an exit code).
"""

from __future__ import annotations

import glob
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolchains.executor import Job, JobResult, Launcher, ToolRun, run_tool
from toolchains.sandbox import Sandbox, detect

NOBODY = 65534
PROGRAM = "program"
"""The binary's name in its scratch directory."""


@dataclass(frozen=True)
class ProgramLimits:
    """What one program run may use (params.yaml ``execute.limits`` in the execute stage)."""

    wall_s: float = 60
    cpu_s: int = 60
    data_bytes: int = 8 << 30
    file_bytes: int = 64 << 20
    processes: int = 64

    def prlimit(self) -> list[str]:
        # CPU: SIGXCPU at the soft limit, SIGKILL a second later (equal limits would give SIGKILL only)
        return ["/usr/bin/prlimit", "--core=0", f"--cpu={self.cpu_s}:{self.cpu_s + 1}", f"--data={self.data_bytes}",
                f"--fsize={self.file_bytes}", f"--nproc={self.processes}", "--"]


class ProgramLauncher(Launcher):
    """Starts ``./program`` in its scratch directory inside the sandbox, as ``nobody``, under ``limits``."""

    def __init__(self, limits: ProgramLimits, libraries: list[Path] = (), gpu: bool = False,
                 sandbox: Sandbox | None = None, scratch: Path | None = None):
        self.limits = limits
        self.libraries = [Path(p) for p in libraries]
        self.gpu = gpu
        self.sandbox = sandbox or detect()
        self._scratch = scratch or Path(tempfile.gettempdir()) / "cass-runs"

    def scratch_parent(self) -> Path:
        return self._scratch

    def env(self) -> dict[str, str]:
        return {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin",
                **({"LD_LIBRARY_PATH": ":".join(map(str, self.libraries))} if self.libraries else {})}

    def argv(self, tool: str, args: tuple[str, ...], scratch: Path) -> list[str]:
        # as root: make the binary executable and the directory writable for nobody, then drop to nobody
        drop = ["/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
        start = ["/bin/sh", "-c", 'chmod 0755 "$1" && chmod 0777 . && shift && exec "$@"', "sh", tool,
                 *drop, f"./{tool}", *args]
        if self.sandbox.mode != "bwrap":
            return [*self.limits.prlimit(), *start]
        binds, links = self.sandbox.system_view(self.libraries)
        devices = [arg for node in sorted(glob.glob("/dev/nvidia*")) if self.gpu for arg in ("--dev-bind", node, node)]
        return [*self.limits.prlimit(), self.sandbox.bwrap or "bwrap", "--unshare-net", "--unshare-pid",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", *binds,
                "--proc", "/proc", "--dev", "/dev", *devices, "--tmpfs", "/tmp", *links,
                "--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--", *start]


@dataclass(frozen=True)
class ProgramRun:
    """One run of a program: how it ended (:func:`verdict`), its exit code, output and time."""

    verdict: str
    exit_code: int
    stdout: bytes
    stderr: bytes
    wall_s: float
    sandbox: str


def killed_by(run: ToolRun, sandbox: Sandbox) -> signal.Signals | None:
    """The signal that ended the program, if one did. bubblewrap reports a child killed by signal N as
    exit code 128 + N (as a shell does), so in ``bwrap`` mode an exit code of 129-192 reads as that
    signal: a program that calls ``exit(130)`` itself is read as interrupted."""
    number = -run.returncode if run.returncode < 0 else run.returncode - 128 if sandbox.mode == "bwrap" else 0
    try:
        return signal.Signals(number) if number > 0 else None
    except ValueError:
        return None


def verdict(run: ToolRun, sandbox: Sandbox) -> str:
    """``exited``, ``timeout``, ``cpu_limit``, ``file_limit`` or ``crashed:<SIGNAL>``."""
    if run.stopped:
        return "timeout"
    sig = killed_by(run, sandbox)
    if sig is None:
        return "exited"
    return {signal.SIGXCPU: "cpu_limit", signal.SIGXFSZ: "file_limit"}.get(sig, f"crashed:{sig.name}")


def run_program(launcher: ProgramLauncher, binary: bytes, args: tuple[str, ...] = (),
                inputs: dict[str, bytes] | None = None) -> ProgramRun:
    """Run ``binary`` once in a fresh scratch directory (with ``inputs`` beside it)."""
    job = Job("program", PROGRAM, args, {PROGRAM: binary, **(inputs or {})}, ("stdout",),
              timeout_s=launcher.limits.wall_s, stdout_as="stdout")
    run = run_tool(launcher, job)
    if isinstance(run, JobResult):   # the sandbox itself could not start
        raise OSError(run.stderr.decode(errors="replace"))
    return ProgramRun(verdict(run, launcher.sandbox), run.returncode, run.stdout, run.stderr, run.wall_s,
                      launcher.sandbox.mode)
