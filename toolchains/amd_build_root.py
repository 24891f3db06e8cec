"""The AMD toolchain with the Debian packages' build root's headers after its own, where the AMD root lacks a header.

hipcc still runs in the AMD root, on its system headers, HIP and ROCm's libraries; the build root's headers are
mounted and searched last as :mod:`toolchains.build_root_headers` describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolchains import build_root_headers as root_headers
from toolchains.amd import AMD_ENV, AmdToolchain
from toolchains.launchers import ChrootLauncher


class AmdBuildRootToolchain(root_headers.WithBuildRootHeaders, AmdToolchain):
    """hipcc of the AMD root ``amd_root`` with ``build_root``'s system headers searched last (bwrap mode only)."""

    vendor = "amd-build-root"
    side = "amd"
    compiler = "hipcc"

    def __init__(self, amd_root: Path, build_root: Path):
        self.build_root = root_headers.checked_build_root(build_root, self.setting)
        launcher = ChrootLauncher(amd_root, extra_env=AMD_ENV, mounts=root_headers.header_mounts(self.build_root))
        root_headers.require_bwrap(launcher.sandbox.mode, self.build_root, self.setting)
        super().__init__(launcher)

    @classmethod
    def in_root(cls, root: Path) -> AmdToolchain:
        raise TypeError(f"{cls.__name__} needs the build root too: AmdBuildRootToolchain(amd_root, build_root)")

    @classmethod
    def native(cls, rocm_path: Path) -> AmdToolchain:
        raise TypeError(f"{cls.__name__} runs in the AMD root only, not in a native ROCm install")

    def _common_flags(self, flags: dict, include_dirs: Sequence[str] = (".",)) -> tuple[str, ...]:
        return (*super()._common_flags(flags, include_dirs),
                *(arg for folder in self.searched_last() for arg in ("-idirafter", folder)))
