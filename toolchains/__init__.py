"""Vendor toolchains behind one interface, and the executors that run their tools.

Which AMD toolchain builds the dataset is a parameter (``amd.toolchain``: a suite of
:data:`toolchains.amd.AMD_SUITES`); where the toolchains are is configuration of this machine:
``CASS_CUDA_HOME`` (default: the PyPI CUDA wheels of this Python environment), ``CASS_ROCM_PATH``
(a native ROCm tree) or ``CASS_AMD_ROOT`` (the OS root of the chosen suite; default its
``/opt/cass-amd-root[-sid|-experimental]``). Which compiler was used is recorded through its fingerprint.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from toolchains.amd import AMD_SUITES, DEFAULT_AMD_SUITE, AmdToolchain
from toolchains.amd import amd_suite as amd_suite_named
from toolchains.base import Step, Target, Toolchain, ToolchainMissingError, ToolchainReport, ToolStatus
from toolchains.executor import Executor, Job, JobResult, LocalExecutor
from toolchains.hip_nvidia import HipNvidiaToolchain, default_cuda12_root, default_hip_headers
from toolchains.nvidia import NvidiaToolchain, default_cuda_home

TOOLCHAIN_CLASSES: dict[str, type[Toolchain]] = {"nvidia": NvidiaToolchain, "amd": AmdToolchain,
                                                  "hip-nvidia": HipNvidiaToolchain}


def load_toolchains(amd_suite: str | None = None, vendors: Sequence[str] = ("nvidia", "amd")) -> dict[str, Toolchain]:
    """This machine's toolchains of ``vendors`` (of :data:`TOOLCHAIN_CLASSES`): NVIDIA's, AMD's (the native ROCm tree
    ``CASS_ROCM_PATH`` names, else the root of ``amd_suite``: params.yaml ``amd.toolchain``; a vendor host without the
    parameters takes ``CASS_AMD_SUITE``, else :data:`DEFAULT_AMD_SUITE`), and HIP's NVIDIA back end (the pipeline's
    nvcc, HIP's NVIDIA headers, CUDA 12's runtime)."""
    if isinstance(vendors, str):
        raise TypeError(f"vendors: a sequence of vendor names, not the string {vendors!r}")
    if unknown := sorted(set(vendors) - set(TOOLCHAIN_CLASSES)):
        raise ValueError(f"no toolchain of vendor {', '.join(unknown)}: one of {', '.join(TOOLCHAIN_CLASSES)}")
    cuda_home = Path(os.environ.get("CASS_CUDA_HOME") or default_cuda_home())
    found: dict[str, Toolchain] = {}
    for vendor in vendors:
        if vendor == NvidiaToolchain.vendor:
            found[vendor] = NvidiaToolchain(cuda_home)
        elif vendor == HipNvidiaToolchain.vendor:
            found[vendor] = HipNvidiaToolchain(cuda_home, default_hip_headers(), default_cuda12_root())
        elif os.environ.get("CASS_ROCM_PATH"):
            found[vendor] = AmdToolchain.native(Path(os.environ["CASS_ROCM_PATH"]))
        else:
            suite = amd_suite or os.environ.get("CASS_AMD_SUITE") or DEFAULT_AMD_SUITE
            found[vendor] = AmdToolchain.in_root(amd_root_path(suite))
    return found


def amd_root_path(suite: str) -> Path:
    """Where this machine's AMD root of ``suite`` is: ``CASS_AMD_ROOT``, else the suite's default."""
    return Path(os.environ.get("CASS_AMD_ROOT") or amd_suite_named(suite).default_root)


def load_hip_nvidia() -> HipNvidiaToolchain:
    """This machine's HIP-on-NVIDIA build (:func:`load_toolchains`)."""
    return load_toolchains(vendors=(HipNvidiaToolchain.vendor,))[HipNvidiaToolchain.vendor]


def local_executor(toolchains: dict[str, Toolchain], workers: int | None = None) -> LocalExecutor:
    """An executor that runs every toolchain's tools on this machine."""
    return LocalExecutor({v: tc.launcher for v, tc in toolchains.items()}, workers=workers)


__all__ = [
    "AMD_SUITES",
    "TOOLCHAIN_CLASSES",
    "AmdToolchain",
    "Executor",
    "HipNvidiaToolchain",
    "Job",
    "JobResult",
    "LocalExecutor",
    "NvidiaToolchain",
    "Step",
    "Target",
    "ToolStatus",
    "Toolchain",
    "ToolchainMissingError",
    "ToolchainReport",
    "amd_root_path",
    "load_hip_nvidia",
    "load_toolchains",
    "local_executor",
]
