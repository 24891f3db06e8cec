"""The sandbox every tool that reads untrusted input runs in.

``bwrap`` mode (bubblewrap): the tool sees its toolchain read-only (the toolchain's trees, or its
whole OS root for a chroot toolchain), the job's scratch directory read-write, a private ``/tmp``,
a fresh ``/proc`` and ``/dev``, and nothing else of the host: no home, no project, no store, no
other job's scratch directory. Every namespace is unshared (no network) and the tool dies with its
parent. An ``#include`` of a host file by absolute or escaping path is "file not found".

``rlimits`` mode, where bubblewrap is missing or refused (no user namespaces): the tool keeps its
clean environment, its scratch directory as working directory, the wall-clock timeout that kills
its process group and the rlimits below, but it can read whatever the user running it can read.
Both modes apply the rlimits; which mode ran enters every tool's fingerprint (a tool that can read
the host may produce other bytes for the same input), so it is recorded with each action.

``CASS_SANDBOX=rlimits`` selects the weaker mode on purpose (to compare, or where bubblewrap
cannot work); nothing selects "no sandbox".
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SYSTEM_TREES = ("/usr", "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
"""What a host toolchain needs of the OS (the host compiler, its headers and libraries, the loader's
cache): read-only, everything else of ``/etc`` and the rest of the host stays out."""

MERGED_USR_LINKS = (("usr/bin", "/bin"), ("usr/sbin", "/sbin"), ("usr/lib", "/lib"), ("usr/lib64", "/lib64"))
"""Debian's merged-/usr links, recreated inside the sandbox."""

FILE_SIZE_LIMIT = 4 << 30
"""No file a tool writes may exceed 4 GiB (the largest assembly of real code is a few MiB)."""

MODE_ENV = "CASS_SANDBOX"
JOB_DIR = "/tmp/job"
"""Where a host tool sees its job's scratch directory (bwrap mode): one path for every job, since outputs can depend on
it (nvcc names a translation unit's internal symbols, ``_INTERNAL_<hash>``, after its source's absolute path)."""


@dataclass(frozen=True)
class Sandbox:
    """How tools are confined on this host: ``mode`` is ``bwrap`` or ``rlimits``."""

    mode: str
    bwrap: str | None = None

    @classmethod
    def weak(cls) -> Sandbox:
        return cls("rlimits")

    def limits(self) -> list[str]:
        """The rlimit prefix both modes put in front of a tool (no core files, a file-size cap)."""
        prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
        return [prlimit, "--core=0", f"--fsize={FILE_SIZE_LIMIT}", "--"]

    def command(self, mounts: list[str], root: list[str] = (), unshare: tuple[str, ...] = ("--unshare-all",),
                tool: bool = True) -> list[str]:
        """bubblewrap dying with its parent, with ``unshare``'s namespaces (default: all), ``root``'s
        mounts first, then a fresh ``/proc`` and ``/dev``, a private ``/tmp``, then ``mounts``. A ``tool``
        runs without capabilities and as PID 1 of its namespace: bubblewrap then waits for it itself, so
        the CPU seconds of the tool and its subprocesses reach the run report (with bubblewrap's own init
        in between they are lost), and when it ends everything it started ends with it."""
        return [self.bwrap or "bwrap", *unshare, "--die-with-parent",
                *(["--cap-drop", "ALL", "--as-pid-1"] if tool else []),
                *root, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *mounts]

    @staticmethod
    def workdir(scratch: Path, inner: str) -> list[str]:
        """The job's scratch directory, read-write at ``inner``, as the working directory; a version
        probe (``scratch`` is ``/``, no input) gets no scratch directory."""
        if scratch == Path("/"):
            return ["--chdir", "/"]
        return ["--bind", str(scratch), inner, "--chdir", inner]

    @staticmethod
    def system_view(trees: list[Path], system_root: Path | None = None) -> list[str]:
        """Read-only mounts of the system's trees and of ``trees`` (each at its real path, with a link
        where the given path is a symlink, such as ``/opt/rocm``), and the merged-/usr links. With a
        ``system_root`` (another Debian root of this machine) its system trees stand in for the host's, and a tree of
        ``trees`` inside the host's ``/usr`` is the root's."""
        real = {str(t): os.path.realpath(t) for t in trees}

        def source(tree: str) -> str:
            return f"{system_root}{tree}" if system_root is not None and tree in SYSTEM_TREES else tree

        binds = [arg for tree in _outermost([*SYSTEM_TREES, *real.values()])
                 for arg in ("--ro-bind", source(tree), tree)]
        aliases = [arg for given, target in real.items() if given != target and os.path.lexists(target)
                   for arg in ("--symlink", target, given)]
        links = [arg for target, link in MERGED_USR_LINKS if os.path.islink(link)
                 for arg in ("--symlink", target, link)]
        return [*binds, *aliases, *links]

    def host(self, argv: list[str], scratch: Path, trees: list[Path], system_root: Path | None = None,
             binds: Sequence[str] = ()) -> list[str]:
        """``argv`` of a host toolchain whose files lie in ``trees``, with ``scratch`` as working directory (and
        ``system_root``'s system trees for the host's, ``binds``' mounts after them: bwrap mode only)."""
        if self.mode != "bwrap":
            if system_root is not None:
                raise ValueError(f"a system root ({system_root}) needs the bwrap sandbox, not {self.mode}")
            if binds:
                raise ValueError(f"mounts ({list(binds)}) need the bwrap sandbox, not {self.mode}")
            return [*self.limits(), *argv]
        return [*self.limits(), *self.command([*self.system_view(trees, system_root), *binds]),
                *self.workdir(scratch, JOB_DIR), "--", *argv]

    def chroot(self, root: Path, argv: list[str], scratch: Path, scratch_parent: str,
               binds: Sequence[str] = ()) -> list[str]:
        """``argv`` inside the OS root ``root``, read-only, with ``scratch`` (a directory under the root's
        ``scratch_parent``, where other jobs' directories are hidden) as working directory, at one path for every job,
        and ``binds``' mounts after the private ``/tmp`` (under which they may make their mount points) (bwrap
        mode)."""
        return [*self.limits(), *self.command(["--tmpfs", scratch_parent, *binds], root=["--ro-bind", str(root), "/"]),
                *self.workdir(scratch, f"{scratch_parent}/job"), "--", *argv]

    def exit_signal(self, returncode: int) -> signal.Signals | None:
        """The signal that ended a tool, if one did (bubblewrap reports it as 128 + N: :func:`exit_signal`)."""
        return exit_signal(returncode, self.mode == "bwrap")


def exit_signal(returncode: int, shell_status: bool) -> signal.Signals | None:
    """The signal that ended a process, if one did: a negative return code, or where a parent reports a
    child killed by signal N as exit code 128 + N (``shell_status``: bubblewrap, a shell), an exit code
    of 129-192 (a process that calls ``exit(139)`` itself then reads as crashed)."""
    number = -returncode if returncode < 0 else returncode - 128 if shell_status else 0
    try:
        return signal.Signals(number) if number > 0 else None
    except ValueError:
        return None


def inner_path(root: Path, scratch: Path) -> str:
    """Where ``scratch`` (a directory under the OS root ``root``, or ``/`` for none) lies inside the root."""
    return "/" + str(scratch.relative_to(root)) if scratch != Path("/") else "/"


def _outermost(trees: list[str]) -> list[str]:
    """The existing ``trees`` that no other of them contains, in their order."""
    present = [t for t in dict.fromkeys(trees) if os.path.lexists(t)]
    return [t for t in present if not any(o != t and Path(t).is_relative_to(o) for o in present)]


@functools.cache
def detect() -> Sandbox:
    """This host's sandbox: bubblewrap when it is installed and can create its namespaces here
    (checked once by running ``true`` in it), else the rlimits mode; ``CASS_SANDBOX=rlimits`` forces
    the latter."""
    if os.environ.get(MODE_ENV) == "rlimits":
        return Sandbox.weak()
    path = shutil.which("bwrap")
    if path is None:
        return Sandbox.weak()
    probe = Sandbox("bwrap", path).host(["/usr/bin/true"], Path("/"), [])
    try:
        ok = subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return Sandbox("bwrap", path) if ok else Sandbox.weak()
