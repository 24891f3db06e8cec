// math_common.cuh - shared helpers for the math sample programs.
#pragma once

#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CUDA_CHECK(call)                                                       \
    do {                                                                       \
        cudaError_t err_ = (call);                                             \
        if (err_ != cudaSuccess) {                                             \
            fprintf(stderr, "CUDA error '%s' at %s:%d (%s)\n",                 \
                    cudaGetErrorString(err_), __FILE__, __LINE__, #call);      \
            exit(EXIT_FAILURE);                                                \
        }                                                                      \
    } while (0)

#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// Simple 64-bit LCG used on the host to create reproducible inputs.
struct HostLcg {
    uint64_t state;
    explicit HostLcg(uint64_t seed) : state(seed * 2862933555777941757ULL + 3037000493ULL) {}
    uint32_t next_u32() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<uint32_t>(state >> 32);
    }
    // Uniform float in [lo, hi)
    float uniform(float lo, float hi) {
        return lo + (hi - lo) * (next_u32() >> 8) * (1.0f / 16777216.0f);
    }
};

static inline int div_up(int a, int b) { return (a + b - 1) / b; }

// Map a non-negative float to an unsigned int that preserves ordering,
// so atomicMax on the integer is equivalent to a float max.
__device__ __forceinline__ unsigned int ordered_bits(float x) {
    return __float_as_uint(fmaxf(x, 0.0f));
}

static inline float ordered_to_float(unsigned int bits) {
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

// Kahan-style compensated add, handy for accumulating many small terms.
template <typename T>
__device__ __forceinline__ void kahan_add(T& sum, T& comp, T value) {
    T y = value - comp;
    T t = sum + y;
    comp = (t - sum) - y;
    sum = t;
}
