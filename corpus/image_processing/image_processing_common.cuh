// image_processing_common.cuh
// Shared helpers for the image processing samples: error checking,
// clamped pixel access, pixel conversion and a deterministic test-image
// generator (host side LCG so results are reproducible run to run).
#pragma once

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        cudaError_t err__ = (call);                                           \
        if (err__ != cudaSuccess) {                                           \
            fprintf(stderr, "CUDA error '%s' at %s:%d (%s)\n",                \
                    cudaGetErrorString(err__), __FILE__, __LINE__, #call);    \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define DIV_UP(a, b) (((a) + (b) - 1) / (b))

struct ImageSize {
    int width;
    int height;
};

// Clamp an integer coordinate into [0, n-1] (replicate-border addressing).
__host__ __device__ __forceinline__ int clamp_index(int v, int n)
{
    return v < 0 ? 0 : (v >= n ? n - 1 : v);
}

// Fetch a float pixel with replicate-border semantics.
__device__ __forceinline__ float fetch_clamped(const float* img, ImageSize sz,
                                               int x, int y)
{
    x = clamp_index(x, sz.width);
    y = clamp_index(y, sz.height);
    return img[y * sz.width + x];
}

// Convert a float intensity in [0,255] to a saturated 8-bit value.
__host__ __device__ __forceinline__ unsigned char saturate_u8(float v)
{
    v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
    return (unsigned char)(v + 0.5f);
}

// Small 32-bit LCG (Numerical Recipes constants) used for test data.
struct HostLcg {
    uint32_t state;
    explicit HostLcg(uint32_t seed) : state(seed) {}
    uint32_t next() { state = state * 1664525u + 1013904223u; return state; }
    float uniform() { return (next() >> 8) * (1.0f / 16777216.0f); }
};

// Build a synthetic grayscale image: smooth gradients, a few bright
// rectangles and a little noise, so filters have edges to work with.
static inline void make_test_image(float* img, int w, int h, uint32_t seed)
{
    HostLcg rng(seed);
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            float base = 60.0f + 80.0f * (float)x / (float)w
                       + 40.0f * (float)y / (float)h;
            bool boxA = (x > w / 8 && x < w / 3 && y > h / 5 && y < h / 2);
            bool boxB = (x > w / 2 && x < (7 * w) / 8 && y > (3 * h) / 5 && y < (9 * h) / 10);
            if (boxA) base += 70.0f;
            if (boxB) base -= 45.0f;
            base += (rng.uniform() - 0.5f) * 16.0f;
            img[y * w + x] = base < 0.0f ? 0.0f : (base > 255.0f ? 255.0f : base);
        }
    }
}
