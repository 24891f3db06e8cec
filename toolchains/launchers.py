"""Launchers: how a toolchain's tools are started on this host, always inside the sandbox
(:mod:`toolchains.sandbox`).

``HostLauncher`` runs binaries from directories of this machine (the PyPI CUDA wheels, a
system CUDA, a ROCm install in /opt/rocm). ``ChrootLauncher`` runs tools inside a separate OS
root (a Debian root that carries ROCm: :data:`toolchains.amd.AMD_SUITES`), which models a vendor host with its own
toolchain; scratch directories are created inside that root so the tools can see them.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from toolchains.base import ToolchainMissingError, passed_env
from toolchains.executor import Launcher
from toolchains.sandbox import Sandbox, detect, inner_path

BASE_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}


class HostLauncher(Launcher):
    """Runs tools found in ``bin_dirs`` of this machine, with a clean environment; in the sandbox
    they see ``trees`` (default: ``bin_dirs``) and the system's compiler trees, read-only: this machine's, or
    those of ``system_root`` (a Debian root, such as the Debian packages' build root)."""

    def __init__(self, bin_dirs: list[Path], extra_env: dict[str, str] | None = None,
                 scratch: Path | None = None, trees: list[Path] | None = None, sandbox: Sandbox | None = None,
                 system_root: Path | None = None, mounts: Mapping[Path, str] | None = None,
                 binds: Mapping[str, Path] | None = None):
        self.bin_dirs = [Path(d) for d in bin_dirs]
        self.system_root = system_root
        self.trees = [Path(d) for d in trees] if trees is not None else self.bin_dirs
        self.extra_env = dict(extra_env or {})
        self._scratch = scratch or Path(tempfile.gettempdir()) / "cass-jobs"
        self.sandbox = sandbox or detect()
        self.mounts = {str(Path(host)): inner for host, inner in (mounts or {}).items()}
        """Folders of this machine the tools see at a fixed path (bwrap mode), host path -> inner path: what a tool
        writes of their paths into its outputs (nvlink keeps its ``-L`` folders in an executable) is then the same
        on every machine, wherever the folders are installed."""
        self.binds = {inner: Path(host) for inner, host in (binds or {}).items()}
        """Files and folders of this machine the tools see at a fixed path (bwrap mode), inner path -> host path, which
        no argument names by its host path (several may be one file): a Debian root's headers."""

    def scratch_parent(self) -> Path:
        return self._scratch

    def resolve(self, tool: str) -> Path | None:
        """Path of ``tool`` in the launcher's bin directories, if present."""
        for d in self.bin_dirs:
            if (d / tool).is_file():
                return d / tool
        return None

    def argv(self, tool: str, args: tuple[str, ...], scratch: Path) -> list[str]:
        path = self.resolve(tool)
        mounted = self._mounted()
        bind_args = [arg for host, inner in mounted.items() for arg in ("--ro-bind", os.path.realpath(host), inner)]
        bind_args += [arg for inner, host in self.binds.items() for arg in ("--ro-bind", str(host), inner)]
        trees = [t for t in self.trees if str(t) not in mounted]   # a path left untranslated is not found: loud
        return self.sandbox.host([self.as_seen(str(path or tool)), *args], scratch, trees, self.system_root, bind_args)

    def env(self) -> dict[str, str]:
        path = ":".join([*map(self.as_seen, map(str, self.bin_dirs)), "/usr/bin", "/bin"])
        return {**BASE_ENV, "PATH": path,
                **{k: self.as_seen(v) for k, v in {**passed_env(), **self.extra_env}.items()}}

    def _mounted(self) -> dict[str, str]:
        """The :attr:`mounts` in effect: in the bwrap mode only (the rlimits mode cannot move a folder)."""
        return self.mounts if self.sandbox.mode == "bwrap" else {}

    def as_seen(self, text: str) -> str:
        """``text`` (a path, flags, a search path) with each mounted folder's path as the tools see it: where it
        stands alone, after ``-I``/``-L`` or a separator (space, ``=``, ``:``, ``,``, a quote) and is followed by
        its own sub-path, a separator or the end."""
        mounted = self._mounted()
        if not mounted:
            return text
        hosts = "|".join(re.escape(h) for h in sorted(mounted, key=len, reverse=True))
        pattern = rf"""(?:(?<![^\s=:,"'])|(?<=-I)|(?<=-L))({hosts})(?![^/\s:,"'])"""
        return re.sub(pattern, lambda m: mounted[m.group(1)], text)

    def path_view(self) -> str:
        """Where the tools see the mounted folders (bwrap mode), or, where they cannot be moved (rlimits mode),
        the folders' own paths: outputs may hold them, so they enter the fingerprints; then what :attr:`binds` puts
        where (the tools see those paths, whatever lies behind them)."""
        views = []
        if self.mounts:
            views.append(f"mounts={sorted(self.mounts.values())}" if self.sandbox.mode == "bwrap"
                         else f"paths={sorted(self.mounts)}")
        if self.binds:
            views.append(f"binds={sorted(self.binds)}")
        return " ".join(views)


class ChrootLauncher(Launcher):
    """Runs tools inside the OS root ``root`` (needs root privileges): bubblewrap mounts the root
    read-only with the job's scratch directory and a fresh ``/proc`` (ROCm 6's hipcc finds itself
    through ``/proc/self/exe``); in the rlimits mode util-linux's unshare(1) enters the root in a
    private mount namespace instead. Nothing is mounted on the machine itself."""

    SCRATCH_IN_ROOT = "/var/tmp/cass-jobs"

    def __init__(self, root: Path, extra_env: dict[str, str] | None = None, mounts: Mapping[str, Path] | None = None):
        self.root = Path(root)
        self.extra_env = dict(extra_env or {})
        self.sandbox: Sandbox = detect()
        self.mounts = {inner: Path(host) for inner, host in (mounts or {}).items()}
        """Files and folders of this machine the tools see read-only, by the inner path under ``/tmp`` they see each at
        (the root stays read-only: bubblewrap makes the mount points in the job's private ``/tmp``); bwrap mode
        only."""

    def scratch_parent(self) -> Path:
        """The jobs' folder inside the root. A missing root raises ToolchainMissingError, as a missing
        tool does: creating the folder would leave a stub where ``scripts/setup.sh`` is to build the root."""
        if not self.root.is_dir():
            raise ToolchainMissingError(f"no OS root at {self.root}: scripts/setup.sh builds it")
        return self.root / self.SCRATCH_IN_ROOT.lstrip("/")

    def host_path(self, inner: str) -> Path:
        """Where a path of the root's filesystem lies on this machine."""
        return self.root / inner.lstrip("/")

    def argv(self, tool: str, args: tuple[str, ...], scratch: Path) -> list[str]:
        if not scratch.is_relative_to(self.root):
            scratch = Path("/")   # a version probe: no scratch directory
        if self.sandbox.mode == "bwrap":
            if self.root.is_dir():   # a missing root: bubblewrap fails to bind it, and says so
                self.scratch_parent().mkdir(parents=True, exist_ok=True)   # the mount point of the jobs' tmpfs
            binds = [arg for inner, host in self.mounts.items() for arg in ("--ro-bind", str(host), inner)]
            return self.sandbox.chroot(self.root, [tool, *args], scratch, self.SCRATCH_IN_ROOT, binds)
        if self.mounts:
            mounted = ", ".join(map(str, self.mounts.values()))
            raise ValueError(f"mounts ({mounted}) in the root {self.root} need the bwrap sandbox, "
                             f"not {self.sandbox.mode}")
        unshare = shutil.which("unshare") or "/usr/bin/unshare"
        return [*self.sandbox.limits(), unshare, "--mount", "--mount-proc", f"--root={self.root}",
                f"--wd={inner_path(self.root, scratch)}", tool, *args]

    def env(self) -> dict[str, str]:
        return {**BASE_ENV, "PATH": "/usr/bin:/bin", **passed_env(), **self.extra_env}

    def path_view(self) -> str:
        """The folders mounted into the root, where the tools see them: which ones are there decides what a tool
        finds, so they enter the fingerprints (none: "")."""
        return f"mounts={sorted(self.mounts)}" if self.mounts else ""
