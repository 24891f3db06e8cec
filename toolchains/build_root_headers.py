"""The Debian packages' build root's headers, for a HIP toolchain to search after its own.

A Debian package's code includes the headers of its build dependencies (``dmlc/``, ``glog/``, ``gflags/``), which
:mod:`toolchains.build_root` installs into the build root of the packages' suite, and which neither the AMD root
(another suite, with ROCm) nor this machine holds. The HIP toolchains that take them (:mod:`toolchains.amd_build_root`,
:class:`toolchains.hip_nvidia.HipNvidiaBuildRootToolchain`) see the entries of the build root's ``/usr/include``
mounted read-only under :data:`MOUNT` and search them last (``-idirafter``), so only a header the toolchain lacks is
taken from them. CUDA's own headers, which ``nvidia.debian_cuda`` installs there
(:func:`toolchains.debian_cuda.toolkit_packages`), are left out: HIP code must not build against them. The build
root's dpkg status (every package and version in it) enters the compiler's identity, so installing more there rekeys
these compiles, and only these.

A header the build root reaches through an absolute link below a folder (Debian's alternatives:
``x86_64-linux-gnu/cblas.h`` -> ``/etc/alternatives/...``) resolves in the tool's own view (the AMD root's, or this
machine's for HIP's NVIDIA platform), never to the build root's target: it is found only where that view has an
alternative of its own.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from toolchains.base import digest_paths
from toolchains.build_root import STATUS
from toolchains.debian_cuda import include_paths, toolkit_packages

MOUNT = "/tmp/cass-build-root"
"""Where the tools see the build root's ``/usr`` headers (under the job's private ``/tmp``: a toolchain's root stays
read-only, and every job sees them at this one path, which host assembly may name)."""
INCLUDE_DIRS = ("usr/include", "usr/include/x86_64-linux-gnu")
"""The build root's system header folders, searched in this order after every folder of the toolchain's own."""
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
    """Where the tools see each entry of ``build_root``'s ``/usr/include`` (under :data:`MOUNT`) and the file or
    folder of this machine mounted there: every entry but those of the CUDA toolkit's packages
    (:func:`toolchains.debian_cuda.toolkit_packages`), links followed inside the root, and none that leads nowhere
    there."""
    include = build_root / "usr/include"
    cuda = {line.removeprefix("/usr/include/").split("/")[0]
            for line in include_paths(build_root, toolkit_packages(build_root))}
    return {f"{MOUNT}/usr/include/{entry.name}": source for entry in sorted(include.iterdir())
            if entry.name not in cuda and (source := inside(build_root, entry)) is not None}


def checked_build_root(build_root: Path, setting: str) -> Path:
    """``build_root``, a Debian root; else a ValueError naming ``setting``, the parameter that asked for it."""
    if not (Path(build_root) / STATUS).is_file():
        raise ValueError(f"{setting} is on, but {build_root} is no Debian root (no {STATUS}): stage fetch_debian makes "
                         "it where debian_sources is on and lists a CMake package, or where nvidia.debian_cuda is on")
    return Path(build_root)


def require_bwrap(mode: str, build_root: Path, setting: str) -> None:
    """A ValueError naming ``setting`` unless the sandbox's ``mode`` is bubblewrap, which mounts the headers."""
    if mode != "bwrap":
        raise ValueError(f"{setting} needs the bubblewrap sandbox to mount {build_root}'s headers; this machine's is "
                         f"{mode} (`cass toolchains` says why)")


class WithBuildRootHeaders:
    """A toolchain whose ``compiler`` also reads the headers of ``build_root`` (set by the toolchain): the compiler's
    identity takes the root's dpkg status too. Listed before the toolchain's class among the bases."""

    setting = "amd.build_root_headers"
    """The parameter that asks for the build root's headers."""
    build_root: Path
    compiler: str

    @functools.cached_property
    def build_root_identity(self) -> str:
        """The digest of the build root's dpkg status."""
        return digest_paths([self.build_root / STATUS])

    @staticmethod
    def searched_last() -> list[str]:
        """The folders, as the tools see them, that the compiler searches after all of its own."""
        return [f"{MOUNT}/{folder}" for folder in INCLUDE_DIRS]

    def identity(self, tool: str) -> str:
        """The toolchain's own, and for its compiler the build root's too."""
        own = super().identity(tool)
        return f"{own} build-root={self.build_root_identity}" if tool == self.compiler else own
