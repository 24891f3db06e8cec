"""The AMD toolchain with the Debian packages' build root's headers after its own, where the AMD root lacks a header.

A Debian package's code includes the headers of its build dependencies (``dmlc/``, ``glog/``, ``gflags/``), which
:mod:`toolchains.build_root` installs into the build root of the packages' suite, and which the AMD root (another
suite, with ROCm) does not hold. hipcc still runs in the AMD root, on its system headers, HIP and ROCm's libraries;
the entries of the build root's ``/usr/include`` are mounted read-only under :data:`MOUNT` and searched last
(``-idirafter``), so only a header the AMD root lacks is taken from them. CUDA's own headers, which
``nvidia.debian_cuda`` installs there (:func:`toolchains.debian_cuda.toolkit_packages`), are left out: HIP code must
not build against them. The build root's dpkg status (every package and version in it) enters hipcc's identity, so
installing more there rekeys these compiles, and only these.

A header the build root reaches through an absolute link below a folder (Debian's alternatives:
``x86_64-linux-gnu/cblas.h`` -> ``/etc/alternatives/...``) is not found: the link resolves in the AMD root.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

from toolchains.amd import AMD_ENV, AmdToolchain
from toolchains.base import digest_paths
from toolchains.build_root import STATUS
from toolchains.debian_cuda import include_paths, toolkit_packages
from toolchains.launchers import ChrootLauncher

MOUNT = "/tmp/cass-build-root"
"""Where hipcc sees the build root's ``/usr`` headers (under the job's private ``/tmp``: the AMD root stays read-only,
and every job sees them at this one path, which host assembly may name)."""
INCLUDE_DIRS = ("usr/include", "usr/include/x86_64-linux-gnu")
"""The build root's system header folders, searched in this order after every folder of the AMD root."""


MAX_LINKS = 40
"""Links followed from one entry before it counts as leading nowhere (the kernel's own limit)."""


def inside(root: Path, path: Path) -> Path | None:
    """Where ``path`` (a path of the Debian root ``root``, as this machine sees it) leads with every link on the way
    followed inside the root (an absolute target is the root's, never this machine's), or None where it leads
    nowhere there."""
    for _ in range(MAX_LINKS):
        if not path.is_symlink():
            return path if path.exists() else None
        target = os.readlink(path)
        path = root / target.lstrip("/") if target.startswith("/") else path.parent / target
    return None


def header_mounts(build_root: Path) -> dict[str, Path]:
    """Where hipcc sees each entry of ``build_root``'s ``/usr/include`` (under :data:`MOUNT`) and the file or folder
    of this machine mounted there: every entry but those of the CUDA toolkit's packages
    (:func:`toolchains.debian_cuda.toolkit_packages`), links followed inside the root, and none that leads nowhere
    there."""
    include = build_root / "usr/include"
    cuda = {line.removeprefix("/usr/include/").split("/")[0]
            for line in include_paths(build_root, toolkit_packages(build_root))}
    return {f"{MOUNT}/usr/include/{entry.name}": source for entry in sorted(include.iterdir())
            if entry.name not in cuda and (source := inside(build_root, entry)) is not None}


class AmdBuildRootToolchain(AmdToolchain):
    """hipcc of the AMD root ``amd_root`` with ``build_root``'s system headers searched last (bwrap mode only)."""

    vendor = "amd-build-root"
    side = "amd"

    def __init__(self, amd_root: Path, build_root: Path):
        self.build_root = Path(build_root)
        if not (self.build_root / STATUS).is_file():
            raise ValueError(f"amd.build_root_headers is on, but {self.build_root} is no Debian root (no {STATUS}): "
                             "stage fetch_debian makes it where debian_sources is on and lists a CMake package, or "
                             "where nvidia.debian_cuda is on")
        launcher = ChrootLauncher(amd_root, extra_env=AMD_ENV, mounts=header_mounts(self.build_root))
        if launcher.sandbox.mode != "bwrap":
            raise ValueError(f"amd.build_root_headers needs the bubblewrap sandbox to mount {self.build_root}'s "
                             f"headers; this machine's is {launcher.sandbox.mode} (`cass toolchains` says why)")
        super().__init__(launcher)

    @classmethod
    def in_root(cls, root: Path) -> AmdToolchain:
        raise TypeError(f"{cls.__name__} needs the build root too: AmdBuildRootToolchain(amd_root, build_root)")

    @classmethod
    def native(cls, rocm_path: Path) -> AmdToolchain:
        raise TypeError(f"{cls.__name__} runs in the AMD root only, not in a native ROCm install")

    @functools.cached_property
    def build_root_identity(self) -> str:
        """The digest of the build root's dpkg status."""
        return digest_paths([self.build_root / STATUS])

    def identity(self, tool: str) -> str:
        """The AMD root's (its stored tree), and for hipcc the build root's too."""
        own = super().identity(tool)
        return f"{own} build-root={self.build_root_identity}" if tool == "hipcc" else own

    def _common_flags(self, flags: dict, include_dirs: Sequence[str] = (".",)) -> tuple[str, ...]:
        return (*super()._common_flags(flags, include_dirs),
                *(arg for folder in INCLUDE_DIRS for arg in ("-idirafter", f"{MOUNT}/{folder}")))
