// statistics_random_common.cuh - RNG and reduction helpers shared by the
// statistics / random number sample programs. Everything is header-only.
#pragma once

#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        cudaError_t e_ = (call);                                              \
        if (e_ != cudaSuccess) {                                              \
            fprintf(stderr, "[CUDA] %s:%d %s -> %s\n", __FILE__, __LINE__,    \
                    #call, cudaGetErrorString(e_));                           \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define TWO_PI_F 6.28318530717958647692f

// Host-side 32-bit LCG (Numerical Recipes constants).
struct HostRng {
    uint32_t s;
    explicit HostRng(uint32_t seed) : s(seed ^ 0x9E3779B9u) {}
    uint32_t next() { s = 1664525u * s + 1013904223u; return s; }
    float next_float() { return (next() >> 8) * (1.0f / 16777216.0f); }
};

// Per-thread device RNG state: xorshift128 seeded through a hash.
struct DevRng {
    uint32_t x, y, z, w;
};

// PCG-style integer hash, used to decorrelate seeds of neighbouring threads.
__host__ __device__ __forceinline__ uint32_t pcg_hash(uint32_t v) {
    uint32_t state = v * 747796405u + 2891336453u;
    uint32_t word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

__device__ __forceinline__ void rng_init(DevRng& r, uint32_t seed, uint32_t id) {
    r.x = pcg_hash(seed ^ pcg_hash(id));
    r.y = pcg_hash(r.x + 0x68E31DA4u);
    r.z = pcg_hash(r.y + 0xB5297A4Du);
    r.w = pcg_hash(r.z + 0x1B56C4E9u) | 1u;  // never all-zero
}

__device__ __forceinline__ uint32_t rng_next(DevRng& r) {
    uint32_t t = r.x ^ (r.x << 11);
    r.x = r.y; r.y = r.z; r.z = r.w;
    r.w = r.w ^ (r.w >> 19) ^ (t ^ (t >> 8));
    return r.w;
}

// Uniform in (0, 1]; never returns 0 so it is safe for logf().
__device__ __forceinline__ float rng_uniform(DevRng& r) {
    return ((rng_next(r) >> 8) + 1u) * (1.0f / 16777216.0f);
}

// Box-Muller transform: two independent standard normals.
__device__ __forceinline__ float2 rng_normal2(DevRng& r) {
    float u1 = rng_uniform(r);
    float u2 = rng_uniform(r);
    float rad = sqrtf(-2.0f * logf(u1));
    float s, c;
    sincosf(TWO_PI_F * u2, &s, &c);
    return make_float2(rad * c, rad * s);
}
