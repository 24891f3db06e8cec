"""Counting the kernels a program runs on the GPU, and digesting what it reads back from the GPU: CUPTI's kernel
activity records and its callbacks on the calls that copy device memory to the host, turned on by a small library the
CUDA driver loads into the program (``CUDA_INJECTION64_PATH``; source ``launch_counter.c``).

The counter is built once per machine with the C compiler against the CUPTI wheel (``nvidia-cuda-cupti-cu12``) and
lives in a folder beside ``libcupti.so.12``; that folder travels to a GPU host in a run batch. A run with the
counter gets ``kernel_launches``: the kernels that ran (0 for a program that never initialised CUDA); without it,
None (not counted). Where the run names a file in ``CASS_DEVICE_READS``, the library also writes there a header (the
copies in all, those still pending at exit) and one line per copy from device to host memory, those past 4,096
folded into the last (:data:`DEVICE_READS_FILE`; read by :mod:`cass.execution.device_reads`).
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import blake3

from store.machine_cache import machine_cache
from toolchains.nvidia import default_cuda_home

SOURCE = Path(__file__).with_name("launch_counter.c")
LIBRARY = "liblaunch_counter.so"
CUPTI = "libcupti.so.12"
PROBE = "probe"
"""The probe program's name in a counter folder: it launches one kernel, copies its 4-byte result to the host and
prints ``probe 1``."""
PROBE_SOURCE = r"""#include <cstdio>
__global__ void probe(int *flag) { *flag = 1; }
int main() {
  int *flag = nullptr, host = 0;
  if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess) return 2;
  probe<<<1, 1>>>(flag);
  if (cudaMemcpy(&host, flag, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) return 3;
  std::printf("probe %d\n", host);
  return host == 1 ? 0 : 4;
}
"""
COUNTER_FLAGS = ("-O3", "-march=x86-64-v2")
"""How the counter is optimised: its digest of the copies back from the GPU runs inside every counted program, on
the copying thread (popcnt and SSE4.2, which every x86-64 GPU host of this decade has; bench/digest_speed.py)."""
COUNT_FILE = ".cass-kernel-launches"
"""Where in the run's scratch directory the counter writes its count."""
DEVICE_READS_FILE = ".cass-device-reads"
"""Where in the run's scratch directory the counter writes its digests of the copies from device to host."""


class CounterBuildError(RuntimeError):
    """The counter library could not be built (no C compiler, no CUPTI wheel, or a compile error)."""


@dataclass(frozen=True)
class LaunchCounter:
    """A folder holding the counter library and the CUPTI library it loads."""

    folder: Path

    @property
    def library(self) -> Path:
        return self.folder / LIBRARY

    def digest(self) -> str:
        """BLAKE3 over both libraries: counts made with other libraries are other results."""
        hasher = blake3.blake3()
        for name in (LIBRARY, CUPTI):
            hasher.update((self.folder / name).read_bytes())
        return hasher.hexdigest()

    def env(self) -> dict[str, str]:
        return {"CUDA_INJECTION64_PATH": str(self.library)}

    @property
    def probe(self) -> Path:
        return self.folder / PROBE

    def copy_to(self, folder: Path, probe: bytes | None = None) -> LaunchCounter:
        """A copy in ``folder`` (a run batch's), with the ``probe`` program where given."""
        folder.mkdir(parents=True, exist_ok=True)
        for name in (LIBRARY, CUPTI):
            shutil.copyfile(self.folder / name, folder / name)
        if probe is not None:
            (folder / PROBE).write_bytes(probe)
        return LaunchCounter(folder)

    @classmethod
    def found_in(cls, folder: Path) -> LaunchCounter | None:
        """The counter of ``folder`` (a run batch's copy), or None where it has none."""
        folder = folder.resolve()   # a relative path would be looked up from the run's own working directory
        return cls(folder) if (folder / LIBRARY).is_file() and (folder / CUPTI).is_file() else None


def wheel_root() -> Path:
    """Where pip put the NVIDIA wheels of this Python environment."""
    return Path(sysconfig.get_paths()["purelib"]) / "nvidia"


def build_counter(cc: str = "cc") -> LaunchCounter:
    """The counter of this machine: built with ``cc`` into the machine cache, once per source and CUPTI library."""
    cupti = wheel_root() / "cuda_cupti"
    if not (cupti / "lib" / CUPTI).is_file():
        raise CounterBuildError(f"no {CUPTI} under {cupti}: pip install nvidia-cuda-cupti-cu12 "
                                "(`bash scripts/setup.sh` does)")
    compiler = shutil.which(cc)
    if compiler is None:
        raise CounterBuildError(f"no C compiler {cc!r} on PATH to build {SOURCE.name}")
    key = blake3.blake3(SOURCE.read_bytes() + " ".join(COUNTER_FLAGS).encode()
                        + (cupti / "lib" / CUPTI).read_bytes()).hexdigest()[:16]
    counter = LaunchCounter(machine_cache("launch-counter") / key)
    if counter.found_in(counter.folder):
        return counter
    counter.folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cupti / "lib" / CUPTI, counter.folder / CUPTI)
    built = counter.folder / f".{LIBRARY}.tmp"
    cuda_h = default_cuda_home() / "include"   # cuda.h, which cupti.h includes
    proc = subprocess.run([compiler, "-shared", "-fPIC", *COUNTER_FLAGS, f"-I{cupti / 'include'}", f"-I{cuda_h}",
                           str(SOURCE), "-o", str(built), f"-L{counter.folder}", f"-l:{CUPTI}",
                           "-Wl,-rpath,$ORIGIN"], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise CounterBuildError(f"{compiler} could not build {SOURCE}: {proc.stderr.strip()[:2000]}")
    built.replace(counter.library)
    return counter


def counter_harness_command(harness: Path, output: Path, source_dir: Path = SOURCE.parent,
                            flags: tuple[str, ...] = COUNTER_FLAGS) -> list[str]:
    """The ``cc`` command that builds ``harness``, a C program that ``#include``s ``launch_counter.c`` (found in
    ``source_dir``) to call its digest on the CPU, against this environment's CUPTI wheel."""
    cupti = wheel_root() / "cuda_cupti"
    return ["cc", *flags, f"-I{source_dir}", f"-I{cupti / 'include'}", f"-I{default_cuda_home() / 'include'}",
            str(harness), "-o", str(output), f"-L{cupti / 'lib'}", f"-l:{CUPTI}", f"-Wl,-rpath,{cupti / 'lib'}"]


def build_probe(archs: list[str]) -> bytes:
    """The probe program (:data:`PROBE_SOURCE`) built by this environment's nvcc with SASS for ``archs`` and the
    static CUDA runtime, once per arch list into the machine cache."""
    nvcc = default_cuda_home() / "bin" / "nvcc"
    if not nvcc.is_file():
        raise CounterBuildError(f"no nvcc at {nvcc}: `bash scripts/setup.sh` installs the NVIDIA wheels")
    key = blake3.blake3(PROBE_SOURCE.encode() + " ".join(archs).encode() + nvcc.read_bytes()[:1 << 16]).hexdigest()
    binary = machine_cache("launch-probe") / key[:16]
    if binary.is_file():
        return binary.read_bytes()
    binary.parent.mkdir(parents=True, exist_ok=True)
    source = binary.with_suffix(".cu")
    source.write_text(PROBE_SOURCE)
    codes = [f"-gencode=arch=compute_{a.removeprefix('sm_')},code={a}" for a in archs]
    built = binary.with_suffix(".tmp")
    proc = subprocess.run([str(nvcc), "-O2", "-cudart=static", *codes, str(source), "-o", str(built)],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        raise CounterBuildError(f"nvcc could not build the probe: {proc.stderr.strip()[:2000]}")
    built.replace(binary)
    return binary.read_bytes()
