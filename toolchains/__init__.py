"""Vendor toolchains behind one interface, and the executors that run their tools.

Where the toolchains are is configuration of this machine, not of the dataset, so it comes from
the environment: ``CASS_CUDA_HOME`` (default: the PyPI CUDA wheels of this Python environment),
``CASS_ROCM_PATH`` (a native ROCm tree) or ``CASS_AMD_ROOT`` (an OS root entered with chroot;
default ``/opt/cass-amd-root``). Which compiler was used is recorded through its fingerprint.
"""

from __future__ import annotations

import os
from pathlib import Path

from toolchains.amd import AmdToolchain
from toolchains.base import Step, Target, Toolchain, ToolchainMissingError, ToolchainReport, ToolStatus
from toolchains.executor import Executor, Job, JobResult, LocalExecutor
from toolchains.nvidia import NvidiaToolchain, default_cuda_home

DEFAULT_AMD_ROOT = Path("/opt/cass-amd-root")

TOOLCHAIN_CLASSES: dict[str, type[Toolchain]] = {"nvidia": NvidiaToolchain, "amd": AmdToolchain}


def load_toolchains() -> dict[str, Toolchain]:
    """The NVIDIA and AMD toolchains of this machine, as configured by the environment."""
    cuda_home = Path(os.environ.get("CASS_CUDA_HOME") or default_cuda_home())
    if os.environ.get("CASS_ROCM_PATH"):
        amd = AmdToolchain.native(Path(os.environ["CASS_ROCM_PATH"]))
    else:
        amd = AmdToolchain.in_root(Path(os.environ.get("CASS_AMD_ROOT") or DEFAULT_AMD_ROOT))
    return {"nvidia": NvidiaToolchain(cuda_home), "amd": amd}


def local_executor(toolchains: dict[str, Toolchain], workers: int | None = None) -> LocalExecutor:
    """An executor that runs every toolchain's tools on this machine."""
    return LocalExecutor({v: tc.launcher for v, tc in toolchains.items()}, workers=workers)


__all__ = [
    "TOOLCHAIN_CLASSES",
    "AmdToolchain",
    "Executor",
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
    "load_toolchains",
    "local_executor",
]
