// physics_common.cuh - vector math, error checking and RNG shared by the
// particle simulations in this directory.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                          \
    do {                                                                          \
        cudaError_t e_ = (call);                                                  \
        if (e_ != cudaSuccess) {                                                  \
            fprintf(stderr, "%s:%d: CUDA call '%s' failed: %s\n", __FILE__,       \
                    __LINE__, #call, cudaGetErrorString(e_));                     \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

#define PI_F 3.14159265358979f

// ---- float3 helpers -------------------------------------------------------
__host__ __device__ inline float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__host__ __device__ inline float3 operator-(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }
__host__ __device__ inline float3 operator*(float s, float3 a) { return make_float3(s * a.x, s * a.y, s * a.z); }
__host__ __device__ inline float dot3(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
__host__ __device__ inline float length2(float3 a) { return dot3(a, a); }

__host__ __device__ inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// ---- SPH smoothing kernels (Mueller et al. 2003) --------------------------
__device__ inline float poly6(float r2, float h) {
    float h2 = h * h;
    if (r2 >= h2) return 0.0f;
    float d = h2 - r2;
    float h9 = h2 * h2 * h2 * h2 * h;
    return 315.0f / (64.0f * PI_F * h9) * d * d * d;
}

__device__ inline float spiky_grad_mag(float r, float h) {
    if (r >= h || r <= 0.0f) return 0.0f;
    float d = h - r;
    float h6 = h * h * h * h * h * h;
    return -45.0f / (PI_F * h6) * d * d;
}

// ---- stateless per-thread hash RNG (device) --------------------------------
__device__ inline uint32_t hash_u32(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352dU;
    x ^= x >> 15; x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

__device__ inline float hash_uniform(uint32_t a, uint32_t b) {
    return (hash_u32(a * 0x9E3779B9U ^ hash_u32(b)) >> 8) * (1.0f / 16777216.0f);
}

// ---- host LCG for deterministic initial conditions ------------------------
struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed) {}
    uint32_t u32() { s = s * 6364136223846793005ULL + 1442695040888963407ULL; return (uint32_t)(s >> 33); }
    float uniform() { return (u32() & 0xFFFFFF) * (1.0f / 16777216.0f); }
    float range(float lo, float hi) { return lo + (hi - lo) * uniform(); }
};
