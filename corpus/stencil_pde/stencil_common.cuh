// stencil_common.cuh - helpers shared by the finite-difference solvers.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <cuda_runtime.h>

#define CHECK_CUDA(expr)                                                         \
    do {                                                                         \
        cudaError_t status_ = (expr);                                            \
        if (status_ != cudaSuccess) {                                            \
            fprintf(stderr, "[%s:%d] %s -> %s\n", __FILE__, __LINE__, #expr,      \
                    cudaGetErrorString(status_));                                \
            std::exit(EXIT_FAILURE);                                             \
        }                                                                        \
    } while (0)

#define DIV_UP(a, b) (((a) + (b) - 1) / (b))

// Row-major linear index helpers.
__host__ __device__ inline int idx2(int i, int j, int nx) { return j * nx + i; }
__host__ __device__ inline int idx3(int i, int j, int k, int nx, int ny) { return (k * ny + j) * nx + i; }

// atomicMax for non-negative floats: IEEE-754 ordering of non-negative values
// matches the ordering of their bit patterns interpreted as signed ints.
__device__ inline void atomic_max_nonneg(float* addr, float value) {
    atomicMax(reinterpret_cast<int*>(addr), __float_as_int(value));
}

// 5-point Laplacian (unscaled) from explicit neighbour values.
__device__ inline float lap5(float c, float w, float e, float s, float n) {
    return (w + e + s + n) - 4.0f * c;
}

struct HostRng {
    uint32_t x;
    explicit HostRng(uint32_t seed) : x(seed ? seed : 1u) {}
    uint32_t next() { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; }   // xorshift32
    double unit() { return (next() >> 8) * (1.0 / 16777216.0); }
};
