"""Generate a synthetic CUDA corpus of any size for the benchmarks: varied, compilable programs.

Each program combines 3-6 kernels (by default) drawn from seven families (elementwise expression trees,
grid-stride loops with unrolling, shared-memory block reductions with atomics, constant-memory
stencils, shared-memory histograms, tiled matrix products, shared-memory scans), each with
random sizes, constants, expressions and identifiers, plus a host ``main`` (its names varied
too) that fills inputs
deterministically, launches the kernels and prints a checksum. Same seed, same corpus.

    python bench/gen_corpus.py OUT_DIR --count 500 [--seed 1]
    python bench/gen_corpus.py OUT_DIR --projects 16 --files-per-project 12   # a tree with shared headers

The tree (:func:`generate_tree`) is laid out like public CUDA repositories: projects whose programs
include their project's header of device helpers and a ``common/helper_cuda.cuh`` of error checks
and timers, and graphics projects whose programs also include a vendored copy of Khronos'
``GL/glext.h`` (about 13k lines, from this machine's ``/usr/include``), as CUDA samples vendor GL
headers.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

NOUNS = ["signal", "field", "grid", "values", "samples", "weights", "pixels", "particles", "cells", "coeffs",
         "density", "energy", "flux", "charge", "mass", "score", "logits", "tiles", "rows", "bins"]
VERBS = ["scale", "blend", "smooth", "accumulate", "normalize", "filter", "reduce", "transform", "update",
         "project", "mix", "warp", "relax", "integrate", "shade"]
DOMAINS = ["physics", "imaging", "ml", "finance", "audio", "geo", "bio", "crypto", "graph", "fluid"]
UNARY = ["sinf", "cosf", "expf", "tanhf", "sqrtf(fabsf", "logf(1.0f + fabsf"]
BINARY = ["+", "-", "*"]


def ident(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{rng.randrange(1000)}"


def const(rng: random.Random) -> str:
    return f"{rng.uniform(-4, 4):.4f}f"


def expression(rng: random.Random, depth: int, leaves: list[str]) -> str:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([*leaves, const(rng)])
    if rng.random() < 0.3:
        fn = rng.choice(UNARY)
        close = "))" if "(" in fn else ")"
        return f"{fn}({expression(rng, depth - 1, leaves)}{close}"
    op = rng.choice(BINARY)
    return f"({expression(rng, depth - 1, leaves)} {op} {expression(rng, depth - 1, leaves)})"


def k_elementwise(rng, name):
    expr = expression(rng, rng.randint(2, 4), ["x", "a", "b"])
    return f"""// Elementwise transform: out = f(in) with a fixed expression tree.
__device__ __forceinline__ float {name}_op(float x, float a, float b) {{
    return {expr};
}}

__global__ void {name}(const float *in, float *out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = {name}_op(in[i], {const(rng)}, {const(rng)});
}}
""", f"{name}<<<(n + 255) / 256, 256>>>(d_in, d_out, n);"


def k_gridstride(rng, name):
    unroll = rng.choice([1, 2, 4])
    body = "\n".join(f"        acc = acc * {const(rng)} + in[j] * {const(rng)};" for _ in range(unroll))
    return f"""// Grid-stride loop with {unroll} fused multiply-adds per element.
__global__ void {name}(const float *in, float *out, int n) {{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {{
        float acc = out[j];
{body}
        out[j] = acc;
    }}
}}
""", f"{name}<<<{rng.choice([32, 64, 128])}, {rng.choice([128, 256])}>>>(d_in, d_out, n);"


def k_reduce(rng, name):
    block = rng.choice([128, 256, 512])
    return f"""// Block reduction in shared memory, one atomicAdd per block.
#define {name.upper()}_BLOCK {block}
__global__ void {name}(const float *in, float *out, int n) {{
    __shared__ float partial[{name.upper()}_BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    partial[tid] = (i < n) ? in[i] * {const(rng)} : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {{
        if (tid < stride) partial[tid] += partial[tid + stride];
        __syncthreads();
    }}
    if (tid == 0) atomicAdd(&out[blockIdx.x % 64], partial[0]);
}}
""", f"{name}<<<(n + {block} - 1) / {block}, {block}>>>(d_in, d_out, n);"


def k_stencil(rng, name):
    radius = rng.randint(1, 4)
    weights = ", ".join(const(rng) for _ in range(2 * radius + 1))
    return f"""// 1-D stencil of radius {radius}, weights in constant memory.
__constant__ float {name}_w[{2 * radius + 1}] = {{{weights}}};
__global__ void {name}(const float *in, float *out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sum = 0.0f;
    for (int k = -{radius}; k <= {radius}; ++k) {{
        int j = min(max(i + k, 0), n - 1);
        sum += {name}_w[k + {radius}] * in[j];
    }}
    out[i] = sum;
}}
""", f"{name}<<<(n + 127) / 128, 128>>>(d_in, d_out, n);"


def k_histogram(rng, name):
    bins = rng.choice([16, 32, 64, 128])
    return f"""// Histogram of {bins} bins: shared-memory atomics, then one global atomic per bin.
__global__ void {name}(const float *in, float *out, int n) {{
    __shared__ float local[{bins}];
    for (int b = threadIdx.x; b < {bins}; b += blockDim.x) local[b] = 0.0f;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
        float v = fabsf(in[i] * {const(rng)});
        int b = min((int)(v * {bins}), {bins - 1});
        atomicAdd(&local[b], 1.0f);
    }}
    __syncthreads();
    for (int b = threadIdx.x; b < {bins}; b += blockDim.x) atomicAdd(&out[b], local[b]);
}}
""", f"{name}<<<64, 256>>>(d_in, d_out, n);"


def k_matmul(rng, name):
    tile = rng.choice([8, 16, 32])
    return f"""// Tiled product of the input viewed as a 256x256 matrix with itself ({tile}x{tile} tiles).
#define {name.upper()}_TILE {tile}
__global__ void {name}(const float *in, float *out, int n) {{
    __shared__ float ta[{name.upper()}_TILE][{name.upper()}_TILE];
    __shared__ float tb[{name.upper()}_TILE][{name.upper()}_TILE];
    const int dim = 256;
    int row = blockIdx.y * {name.upper()}_TILE + threadIdx.y;
    int col = blockIdx.x * {name.upper()}_TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < dim; t += {name.upper()}_TILE) {{
        ta[threadIdx.y][threadIdx.x] = in[row * dim + t + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = in[(t + threadIdx.y) * dim + col];
        __syncthreads();
        for (int k = 0; k < {name.upper()}_TILE; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }}
    if (row * dim + col < n) out[row * dim + col] = acc * {const(rng)};
}}
""", f"{name}<<<dim3(256 / {tile}, 256 / {tile}), dim3({tile}, {tile})>>>(d_in, d_out, n);"


def k_scan(rng, name):
    block = rng.choice([128, 256])
    return f"""// Inclusive Hillis-Steele scan within each block of {block} elements.
__global__ void {name}(const float *in, float *out, int n) {{
    extern __shared__ float buf[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    buf[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {{
        float v = (tid >= offset) ? buf[tid - offset] : 0.0f;
        __syncthreads();
        buf[tid] += v;
        __syncthreads();
    }}
    if (i < n) out[i] = buf[tid] * {const(rng)};
}}
""", f"{name}<<<(n + {block} - 1) / {block}, {block}, {block} * sizeof(float)>>>(d_in, d_out, n);"


FAMILIES = [k_elementwise, k_gridstride, k_reduce, k_stencil, k_histogram, k_matmul, k_scan]


def program(rng: random.Random, index: int, kernel_count: tuple[int, int] = (3, 6)) -> str:
    """One program with a number of kernels drawn from ``kernel_count`` (inclusive range)."""
    kernels, launches = [], []
    k = rng.randint(*kernel_count)
    families = rng.sample(FAMILIES, k) if k <= len(FAMILIES) else [rng.choice(FAMILIES) for _ in range(k)]
    for family in families:
        code, launch = family(rng, f"{ident(rng)}_{index}")
        kernels.append(code)
        launches.append(f"    {launch}\n    CHECK(cudaGetLastError());")
    mul, add, mod = rng.randrange(3, 97), rng.randrange(1000), rng.choice([251, 509, 1021, 4093])
    # host-side names vary too, so that programs share no more boilerplate than real ones do
    check = f"{rng.choice(['CUDA_CHECK', 'CHECK_CUDA', 'GPU_ASSERT', 'CK', 'SAFE_CALL'])}_{index}"
    host, din, dout, total = (f"{rng.choice(NOUNS)}_{w}" for w in ("host", "dev_in", "dev_out", "sum"))
    launches = [ln.replace("d_in", din).replace("d_out", dout).replace("CHECK", check) for ln in launches]
    return f"""// Synthetic benchmark program {index} ({rng.choice(DOMAINS)}), generated by bench/gen_corpus.py.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define {check}(call)                                                              \\
    do {{                                                                         \\
        cudaError_t e_ = (call);                                                 \\
        if (e_ != cudaSuccess) {{                                                 \\
            fprintf(stderr, "%s:%d: %s\\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \\
            exit(1);                                                             \\
        }}                                                                        \\
    }} while (0)

{chr(10).join(kernels)}
int main() {{
    const int n = 1 << 16;
    float *{host} = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) {host}[i] = (float)((i * {mul} + {add}) % {mod}) / {mod}.0f;
    float *{din}, *{dout};
    {check}(cudaMalloc(&{din}, n * sizeof(float)));
    {check}(cudaMalloc(&{dout}, n * sizeof(float)));
    {check}(cudaMemcpy({din}, {host}, n * sizeof(float), cudaMemcpyHostToDevice));
    {check}(cudaMemset({dout}, 0, n * sizeof(float)));
{chr(10).join(launches)}
    {check}(cudaMemcpy({host}, {dout}, n * sizeof(float), cudaMemcpyDeviceToHost));
    double {total} = 0.0;
    for (int i = 0; i < n; ++i) {total} += {host}[i];
    printf("program {index}: checksum %.6e\\n", {total});
    {check}(cudaFree({din}));
    {check}(cudaFree({dout}));
    free({host});
    return 0;
}}
"""


HELPER_CUDA = """// Shared helpers of the generated tree: error checks, timers, device queries.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(call) check_cuda((call), #call, __FILE__, __LINE__)

static inline void check_cuda(cudaError_t result, const char *what, const char *file, int line) {
    if (result != cudaSuccess) {
        fprintf(stderr, "%s:%d: CUDA error %d (%s) in %s\\n", file, line, (int)result,
                cudaGetErrorString(result), what);
        exit(EXIT_FAILURE);
    }
}

static inline const char *cuda_error_name(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "unknown";
    }
}

struct GpuTimer {
    cudaEvent_t start_, stop_;
    GpuTimer() { cudaEventCreate(&start_); cudaEventCreate(&stop_); }
    ~GpuTimer() { cudaEventDestroy(start_); cudaEventDestroy(stop_); }
    void start(cudaStream_t s = 0) { cudaEventRecord(start_, s); }
    float stop(cudaStream_t s = 0) {
        float ms = 0.0f;
        cudaEventRecord(stop_, s);
        cudaEventSynchronize(stop_);
        cudaEventElapsedTime(&ms, start_, stop_);
        return ms;
    }
};

static inline int device_sm_count(int device) {
    cudaDeviceProp prop;
    checkCudaErrors(cudaGetDeviceProperties(&prop, device));
    return prop.multiProcessorCount;
}

template <typename T>
__device__ __forceinline__ T clamp_value(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

__device__ __forceinline__ unsigned int lane_id() { return threadIdx.x & 31u; }
"""

GLEXT_SOURCE = Path("/usr/include/GL/glext.h")


def project_header(rng: random.Random, name: str) -> str:
    """A project's header of device helpers its programs share."""
    helpers = []
    for i in range(rng.randint(6, 14)):
        expr = expression(rng, rng.randint(2, 4), ["x", "y"])
        helpers.append(f"__device__ __forceinline__ float {name}_helper_{i}(float x, float y) {{\n"
                       f"    return {expr};\n}}\n")
    return f"// Device helpers of project {name}.\n#pragma once\n\n" + "\n".join(helpers)


def generate_tree(out: Path, projects: int, files_per_project: int, seed: int = 1,
                  graphics_every: int = 4) -> list[Path]:
    """Write a tree of ``projects`` projects with ``files_per_project`` programs each (every
    ``graphics_every``-th project includes the vendored ``GL/glext.h``); return the programs."""
    rng = random.Random(seed)
    common = out / "common"
    (common / "GL").mkdir(parents=True, exist_ok=True)
    (common / "helper_cuda.cuh").write_text(HELPER_CUDA)
    (common / "GL" / "glext.h").write_bytes(GLEXT_SOURCE.read_bytes())
    paths = []
    for p in range(projects):
        name = f"{rng.choice(DOMAINS)}_{rng.choice(NOUNS)}_{p:03d}"
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.cuh").write_text(project_header(rng, name))
        includes = f'#include "../common/helper_cuda.cuh"\n#include "{name}.cuh"\n'
        if p % graphics_every == graphics_every - 1:
            includes = '#include <GL/gl.h>\n#include "../common/GL/glext.h"\n' + includes
        for f in range(files_per_project):
            index = p * files_per_project + f
            text = program(rng, index)
            head, _, rest = text.partition("#include <cuda_runtime.h>\n")
            path = folder / f"{name}_{f:03d}.cu"
            path.write_text(f"{head}#include <cuda_runtime.h>\n{includes}{rest}")
            paths.append(path)
    return paths


def generate(out: Path, count: int, seed: int = 1) -> list[Path]:
    """Write ``count`` programs under ``out/<domain>/``; return their paths."""
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        path = out / rng.choice(DOMAINS) / f"prog_{i:06d}.cu"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(program(rng, i))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--projects", type=int, help="write a tree of projects with shared headers instead")
    parser.add_argument("--files-per-project", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.projects:
        paths = generate_tree(args.out, args.projects, args.files_per_project, args.seed)
    else:
        paths = generate(args.out, args.count, args.seed)
    print(f"wrote {len(paths)} programs to {args.out}")


if __name__ == "__main__":
    main()
