"""The AMD toolchain with the Debian packages' build root's headers after its own, where the AMD root lacks a header.

hipcc still runs in the AMD root, on its system headers, HIP and ROCm's libraries; the build root's headers are
mounted and searched last as :mod:`toolchains.build_root_headers` describes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from toolchains.amd import AMD_ENV, AmdToolchain
from toolchains.build_root_headers import (
    INCLUDE_DIRS,
    MOUNT,
    build_root_identity,
    checked_build_root,
    header_mounts,
    require_bwrap,
)
from toolchains.launchers import ChrootLauncher

SETTING = "amd.build_root_headers"


class AmdBuildRootToolchain(AmdToolchain):
    """hipcc of the AMD root ``amd_root`` with ``build_root``'s system headers searched last (bwrap mode only)."""

    vendor = "amd-build-root"
    side = "amd"

    def __init__(self, amd_root: Path, build_root: Path):
        self.build_root = checked_build_root(build_root, SETTING)
        launcher = ChrootLauncher(amd_root, extra_env=AMD_ENV, mounts=header_mounts(self.build_root))
        require_bwrap(launcher.sandbox.mode, self.build_root, SETTING)
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
        return build_root_identity(self.build_root)

    def identity(self, tool: str) -> str:
        """The AMD root's (its stored tree), and for hipcc the build root's too."""
        own = super().identity(tool)
        return f"{own} build-root={self.build_root_identity}" if tool == "hipcc" else own

    def _common_flags(self, flags: dict, include_dirs: Sequence[str] = (".",)) -> tuple[str, ...]:
        return (*super()._common_flags(flags, include_dirs),
                *(arg for folder in INCLUDE_DIRS for arg in ("-idirafter", f"{MOUNT}/{folder}")))
