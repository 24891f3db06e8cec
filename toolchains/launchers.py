"""Launchers: how a toolchain's tools are started on this host.

``HostLauncher`` runs binaries from directories of this machine (the PyPI CUDA wheels, a
system CUDA, a ROCm install in /opt/rocm). ``ChrootLauncher`` runs tools inside a separate OS
root (the Debian trixie root that carries ROCm 5.7), which models a vendor host with its own
toolchain; scratch directories are created inside that root so the tools can see them.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from toolchains.base import passed_env
from toolchains.executor import Launcher

BASE_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}


class HostLauncher(Launcher):
    """Runs tools found in ``bin_dirs`` of this machine, with a clean environment."""

    def __init__(self, bin_dirs: list[Path], extra_env: dict[str, str] | None = None,
                 scratch: Path | None = None):
        self.bin_dirs = [Path(d) for d in bin_dirs]
        self.extra_env = dict(extra_env or {})
        self._scratch = scratch or Path(tempfile.gettempdir()) / "cass-jobs"

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
        return [str(path or tool), *args]

    def env(self) -> dict[str, str]:
        path = ":".join([*map(str, self.bin_dirs), "/usr/bin", "/bin"])
        return {**BASE_ENV, "PATH": path, **passed_env(), **self.extra_env}


class ChrootLauncher(Launcher):
    """Runs tools inside the OS root ``root`` (needs root privileges): util-linux's unshare(1)
    enters the root in a private mount namespace with its own ``/proc`` mounted there (ROCm 6's
    hipcc finds itself through ``/proc/self/exe``); nothing is mounted on the machine itself."""

    SCRATCH_IN_ROOT = "/var/tmp/cass-jobs"

    def __init__(self, root: Path, extra_env: dict[str, str] | None = None):
        self.root = Path(root)
        self.extra_env = dict(extra_env or {})

    def scratch_parent(self) -> Path:
        return self.root / self.SCRATCH_IN_ROOT.lstrip("/")

    def host_path(self, inner: str) -> Path:
        """Where a path of the root's filesystem lies on this machine."""
        return self.root / inner.lstrip("/")

    def argv(self, tool: str, args: tuple[str, ...], scratch: Path) -> list[str]:
        try:
            inner = "/" + str(scratch.relative_to(self.root))
        except ValueError:
            inner = "/"
        unshare = shutil.which("unshare") or "/usr/bin/unshare"
        return [unshare, "--mount", "--mount-proc", f"--root={self.root}", f"--wd={inner}", tool, *args]

    def env(self) -> dict[str, str]:
        return {**BASE_ENV, "PATH": "/usr/bin:/bin", **passed_env(), **self.extra_env}
