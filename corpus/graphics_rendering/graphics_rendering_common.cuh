// graphics_rendering_common.cuh
// Minimal vector math and utilities shared by the rendering samples.
#pragma once

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>

#define GFX_CHECK(call)                                                       \
    do {                                                                      \
        cudaError_t status_ = (call);                                         \
        if (status_ != cudaSuccess) {                                         \
            fprintf(stderr, "[gfx] %s failed at %s:%d: %s\n", #call,          \
                    __FILE__, __LINE__, cudaGetErrorString(status_));         \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define HD __host__ __device__ __forceinline__

struct Vec3 {
    float x, y, z;
};

HD Vec3 make_vec3(float x, float y, float z) { Vec3 v; v.x = x; v.y = y; v.z = z; return v; }
HD Vec3 operator+(Vec3 a, Vec3 b) { return make_vec3(a.x + b.x, a.y + b.y, a.z + b.z); }
HD Vec3 operator-(Vec3 a, Vec3 b) { return make_vec3(a.x - b.x, a.y - b.y, a.z - b.z); }
HD Vec3 operator*(Vec3 a, float s) { return make_vec3(a.x * s, a.y * s, a.z * s); }
HD Vec3 operator*(float s, Vec3 a) { return a * s; }
HD Vec3 mul(Vec3 a, Vec3 b) { return make_vec3(a.x * b.x, a.y * b.y, a.z * b.z); }
HD float dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
HD Vec3 cross(Vec3 a, Vec3 b)
{
    return make_vec3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
HD float length(Vec3 a) { return sqrtf(dot(a, a)); }
HD Vec3 normalize(Vec3 a)
{
    float inv = 1.0f / sqrtf(fmaxf(dot(a, a), 1e-20f));
    return a * inv;
}
HD Vec3 reflect(Vec3 d, Vec3 n) { return d - n * (2.0f * dot(d, n)); }
HD float clamp01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

struct Ray {
    Vec3 origin;
    Vec3 dir;   // normalized
};

HD Vec3 ray_at(const Ray& r, float t) { return r.origin + r.dir * t; }

// Pack a linear [0,1] color into 0x00RRGGBB with a cheap gamma of 1/2.
HD uint32_t pack_rgb(Vec3 c)
{
    uint32_t r = (uint32_t)(sqrtf(clamp01(c.x)) * 255.0f + 0.5f);
    uint32_t g = (uint32_t)(sqrtf(clamp01(c.y)) * 255.0f + 0.5f);
    uint32_t b = (uint32_t)(sqrtf(clamp01(c.z)) * 255.0f + 0.5f);
    return (r << 16) | (g << 8) | b;
}

// Order-independent-ish image digest (position weighted) used by the samples.
static inline unsigned long long image_digest(const uint32_t* px, size_t n)
{
    unsigned long long h = 0;
    for (size_t i = 0; i < n; ++i) h += (unsigned long long)px[i] * (unsigned long long)((i % 8191) + 1);
    return h;
}
