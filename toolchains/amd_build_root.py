"""The AMD toolchain with the Debian packages' build root's headers after its own, where the AMD root lacks a header.

A Debian package's code includes the headers of its build dependencies (``dmlc/``, ``glog/``, ``gflags/``), which
:mod:`toolchains.build_root` installs into the build root of the packages' suite, and which the AMD root (another
suite, with ROCm) does not hold. hipcc still runs in the AMD root, on its system headers, HIP and ROCm's libraries;
the build root's ``/usr/include`` is mounted read-only at :data:`MOUNT` and searched last (``-idirafter``), so only
a header the AMD root lacks is taken from it. The build root's dpkg status (every package and version in it) enters
hipcc's identity, so installing more there rekeys these compiles, and only these.

A header the build root reaches through an absolute link (Debian's alternatives: ``cblas.h`` ->
``/etc/alternatives/...``) is not found: the link resolves in the AMD root.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from toolchains.amd import AMD_ENV, AmdToolchain
from toolchains.base import digest_paths
from toolchains.build_root import STATUS
from toolchains.launchers import ChrootLauncher

MOUNT = "/tmp/cass-build-root"
"""Where hipcc sees the build root's ``/usr`` headers (under the job's private ``/tmp``: the AMD root stays read-only,
and every job sees them at this one path, which host assembly may name)."""
INCLUDE_DIRS = ("usr/include", "usr/include/x86_64-linux-gnu")
"""The build root's system header folders, searched in this order after every folder of the AMD root."""


class AmdBuildRootToolchain(AmdToolchain):
    """hipcc of the AMD root ``amd_root`` with ``build_root``'s system headers searched last (bwrap mode only)."""

    vendor = "amd-build-root"
    side = "amd"

    def __init__(self, amd_root: Path, build_root: Path):
        self.build_root = Path(build_root)
        if not (self.build_root / STATUS).is_file():
            raise ValueError(f"amd.build_root_headers is on, but {self.build_root} is no Debian root (no {STATUS}): "
                             "stage fetch_debian makes it (debian_sources.build_root)")
        super().__init__(ChrootLauncher(amd_root, extra_env=AMD_ENV,
                                        mounts={self.build_root / "usr/include": f"{MOUNT}/usr/include"}))

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
