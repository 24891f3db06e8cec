// linear_algebra_common.cuh
// Shared helpers for the dense linear algebra samples: error checking,
// a deterministic host-side random generator and small device utilities.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#define LA_CHECK(call)                                                        \
    do {                                                                      \
        cudaError_t err__ = (call);                                           \
        if (err__ != cudaSuccess) {                                           \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, \
                    __LINE__, cudaGetErrorString(err__));                     \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

// Minimal 64-bit linear congruential generator (Knuth MMIX constants).
struct HostLcg {
    uint64_t state;
    explicit HostLcg(uint64_t seed) : state(seed * 2862933555777941757ULL + 3037000493ULL) {}
    uint32_t next_u32() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<uint32_t>(state >> 33);
    }
    // Uniform value in [lo, hi)
    double uniform(double lo, double hi) {
        return lo + (hi - lo) * (next_u32() / 2147483648.0);
    }
};

static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Row-major index helper usable on both host and device.
__host__ __device__ __forceinline__ int rm_index(int row, int col, int ld) {
    return row * ld + col;
}

// Fused multiply-add that picks the right precision for the template type.
template <typename T>
__device__ __forceinline__ T fma_t(T a, T b, T c);

template <>
__device__ __forceinline__ float fma_t<float>(float a, float b, float c) {
    return fmaf(a, b, c);
}

template <>
__device__ __forceinline__ double fma_t<double>(double a, double b, double c) {
    return fma(a, b, c);
}
