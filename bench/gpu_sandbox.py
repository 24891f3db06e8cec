"""A CUDA program in the program sandbox on a GPU host: does it run there as it runs outside, and does
the sandbox cost anything? Run on a machine with an NVIDIA GPU (the lent device): needs only this
checkout, `blake3`, `nvcc` (CASS_CUDA_HOME or /usr/local/cuda) and `bwrap` on PATH.

    python bench/gpu_sandbox.py [--runs N]

Prints one JSON object: the GPU, each mode's verdict, exit code, stdout digest and median wall
seconds (outside the sandbox as root; in the sandbox with the GPU's device nodes; in the sandbox
without them, which must fail to find a device).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolchains.sandbox import detect
from toolchains.sandboxed_runs import ProgramLauncher, ProgramLimits, run_program

PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void saxpy(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
    const int n = 1 << 20;
    float *x, *y;
    if (cudaMallocManaged(&x, n * sizeof(float)) != cudaSuccess || cudaMallocManaged(&y, n * sizeof(float))) {
        printf("cuda error: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    for (int i = 0; i < n; i++) { x[i] = i % 7; y[i] = 1.0f; }
    saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) { printf("cuda error: %s\n", cudaGetErrorString(err)); return 2; }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += y[i];
    printf("sum %.1f\n", sum);
    return 0;
}
"""


def build(out: Path) -> bytes:
    nvcc = Path(os.environ.get("CASS_CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc"
    src = out / "saxpy.cu"
    src.write_text(PROGRAM)
    subprocess.run([str(nvcc), "-O2", "-arch=native", "-o", str(out / "saxpy"), str(src)], check=True)
    return (out / "saxpy").read_bytes()


def commit() -> str:
    """``CASS_COMMIT`` (a copy of the working tree on a GPU machine may carry a stale .git), else git's HEAD."""
    if os.environ.get("CASS_COMMIT"):
        return os.environ["CASS_COMMIT"]
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                          text=True, check=False)
    return proc.stdout.strip() or "unknown"


def unsandboxed(binary: Path) -> tuple[int, bytes, float]:
    start = time.monotonic()
    proc = subprocess.run([str(binary)], capture_output=True, check=False)
    return proc.returncode, proc.stdout, time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        binary = build(out)
        limits = ProgramLimits(wall_s=60, cpu_s=60, data_bytes=8 << 30, file_bytes=64 << 20, processes=64)
        results = {"gpu": gpu, "sandbox": detect().mode, "limits": limits.__dict__, "runs": args.runs,
                   "commit": commit()}
        plain = [unsandboxed(out / "saxpy") for _ in range(args.runs)]
        results["outside"] = {"exit_code": plain[0][0], "stdout": plain[0][1].decode().strip(),
                              "stdout_sha256": hashlib.sha256(plain[0][1]).hexdigest()[:16],
                              "median_wall_s": round(statistics.median(p[2] for p in plain), 4)}
        for name, with_gpu in (("sandbox_gpu", True), ("sandbox_no_gpu_nodes", False)):
            launcher = ProgramLauncher(limits, gpu=with_gpu, scratch=out / "runs")
            runs = [run_program(launcher, binary) for _ in range(args.runs)]
            results[name] = {"verdict": runs[0].verdict, "exit_code": runs[0].exit_code,
                             "stdout": runs[0].stdout.decode().strip(),
                             "stdout_sha256": hashlib.sha256(runs[0].stdout).hexdigest()[:16],
                             "same_every_run": len({(r.exit_code, r.stdout) for r in runs}) == 1,
                             "median_wall_s": round(statistics.median(r.wall_s for r in runs), 4)}
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
