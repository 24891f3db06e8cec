// Linear-octree keys: each of 2^20 points in the unit cube (a mix of uniform points and tight
// clusters) is quantised to 21 bits per axis and its 63-bit Morton (Z-order) code is built by
// interleaving the bits with magic-number bit spreading. The host checks every key against a
// bit-by-bit reference and counts the occupied octree cells at depths 4, 8 and 12.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, cudaGetErrorString(err_));                              \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static constexpr int N = 1 << 20;
static constexpr int BITS = 21;

static uint64_t g_rng = 0xBB67AE8584CAA73Bull;
static uint64_t xorshift64() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static double uniform01() { return (double)(xorshift64() >> 11) * (1.0 / 9007199254740992.0); }

// Spreads the low 21 bits of v so that bit i moves to bit 3i.
__host__ __device__ inline uint64_t spread_bits(uint64_t v) {
    v &= 0x1FFFFFull;
    v = (v | (v << 32)) & 0x1F00000000FFFFull;
    v = (v | (v << 16)) & 0x1F0000FF0000FFull;
    v = (v | (v << 8)) & 0x100F00F00F00F00Full;
    v = (v | (v << 4)) & 0x10C30C30C30C30C3ull;
    v = (v | (v << 2)) & 0x1249249249249249ull;
    return v;
}

__host__ __device__ inline uint32_t quantise(float c) {
    float s = c * 2097152.0f;  // 2^21, exact scaling
    if (s < 0.0f) s = 0.0f;
    uint32_t q = (uint32_t)s;
    return q > 0x1FFFFFu ? 0x1FFFFFu : q;
}

__global__ void morton_keys(const float* __restrict__ xyz, int n,
                            unsigned long long* __restrict__ keys) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t qx = quantise(xyz[3 * i]), qy = quantise(xyz[3 * i + 1]);
    uint64_t qz = quantise(xyz[3 * i + 2]);
    keys[i] = (unsigned long long)(spread_bits(qx) | (spread_bits(qy) << 1) |
                                   (spread_bits(qz) << 2));
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        g_rng = strtoull(argv[1], nullptr, 0);
        if (g_rng == 0) g_rng = 0xBB67AE8584CAA73Bull;
    }
    std::vector<float> h_xyz(3 * (size_t)N);
    double centre[16][3];
    for (int c = 0; c < 16; ++c)
        for (int d = 0; d < 3; ++d) centre[c][d] = 0.1 + 0.8 * uniform01();
    for (int i = 0; i < N; ++i) {
        int c = (int)(xorshift64() % 16);
        for (int d = 0; d < 3; ++d) {
            double v = (i % 4 == 0) ? uniform01() : centre[c][d] + 0.02 * (uniform01() - 0.5);
            h_xyz[3 * (size_t)i + d] = (float)v;
        }
    }

    float* d_xyz;
    unsigned long long* d_keys;
    CHECK(cudaMalloc(&d_xyz, 3 * (size_t)N * sizeof(float)));
    CHECK(cudaMalloc(&d_keys, N * sizeof(unsigned long long)));
    CHECK(cudaMemcpy(d_xyz, h_xyz.data(), 3 * (size_t)N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_keys, 0xFF, N * sizeof(unsigned long long)));  // sentinel

    const int threads = 256;
    morton_keys<<<(N + threads - 1) / threads, threads>>>(d_xyz, N, d_keys);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<unsigned long long> keys(N);
    CHECK(cudaMemcpy(keys.data(), d_keys, N * sizeof(unsigned long long), cudaMemcpyDeviceToHost));

    // Reference: interleave one bit at a time.
    int mismatches = 0;
    uint64_t hash = 0xCBF29CE484222325ull;
    for (int i = 0; i < N; ++i) {
        uint32_t q[3];
        for (int d = 0; d < 3; ++d) q[d] = quantise(h_xyz[3 * (size_t)i + d]);
        uint64_t ref = 0;
        for (int b = 0; b < BITS; ++b)
            for (int d = 0; d < 3; ++d) ref |= (uint64_t)((q[d] >> b) & 1u) << (3 * b + d);
        if (ref != keys[i]) ++mismatches;
        hash ^= keys[i];
        hash *= 0x100000001B3ull;
        hash ^= hash >> 29;
    }
    std::vector<unsigned long long> sorted(keys);
    std::sort(sorted.begin(), sorted.end());
    const int depths[3] = {4, 8, 12};
    int occupied[3];
    for (int k = 0; k < 3; ++k) {
        int shift = 3 * (BITS - depths[k]);
        occupied[k] = 1;
        for (int i = 1; i < N; ++i)
            if ((sorted[i] >> shift) != (sorted[i - 1] >> shift)) ++occupied[k];
    }
    printf("checksum_keys 0x%016llx\n", (unsigned long long)hash);
    printf("mismatches vs reference %d\n", mismatches);
    printf("occupied cells depth 4: %d depth 8: %d depth 12: %d\n", occupied[0], occupied[1],
           occupied[2]);
    printf("min key 0x%016llx max key 0x%016llx\n", sorted[0], sorted[N - 1]);
    const int samples[3] = {0, 31337, N - 1};
    for (int s = 0; s < 3; ++s) printf("key[%d] = 0x%016llx\n", samples[s], keys[samples[s]]);

    CHECK(cudaFree(d_xyz));
    CHECK(cudaFree(d_keys));
    return 0;
}
