#include "hip/hip_runtime.h"
// Segmented reduction: 2^21 float values are split into variable-length segments
// (0..96 elements, described by a CSR-style offsets array). One thread per segment
// sums its elements in index order in double precision and also records the
// segment maximum (or -inf for an empty segment). Prints a position-weighted sum
// of all results, an FNV-1a hash of their bits and a few sampled segments.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>

#define CK(call)                                                              \
    do {                                                                      \
        hipError_t err_ = (call);                                            \
        if (err_ != hipSuccess) {                                            \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,  \
                    __LINE__, hipGetErrorString(err_));                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static uint64_t g_lcg = 0x0123456789ABCDEFULL;
static uint32_t lcg_next() {
    g_lcg = g_lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_lcg >> 32);
}

__global__ void segment_sum(const float* __restrict__ vals, const int* __restrict__ offsets,
                            int num_segments, double* __restrict__ sums,
                            float* __restrict__ maxima) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= num_segments) return;
    int begin = offsets[s], end = offsets[s + 1];
    double acc = 0.0;
    float mx = -INFINITY;
    for (int i = begin; i < end; ++i) {
        float v = vals[i];
        acc += (double)v;
        mx = fmaxf(mx, v);
    }
    sums[s] = acc;
    maxima[s] = mx;
}

int main(int argc, char** argv) {
    if (argc > 1) g_lcg = strtoull(argv[1], nullptr, 0);
    const int n = 1 << 21;
    std::vector<float> h_vals(n);
    for (int i = 0; i < n; ++i)
        h_vals[i] = ((float)(lcg_next() >> 8) / 16777216.0f) * 2.0f - 1.0f;

    std::vector<int> h_off;
    h_off.push_back(0);
    while (h_off.back() < n) {
        int len = (int)(lcg_next() % 97u);
        h_off.push_back(std::min(n, h_off.back() + len));
    }
    const int m = (int)h_off.size() - 1;

    float *d_vals, *d_max;
    int* d_off;
    double* d_sums;
    CK(hipMalloc(&d_vals, n * sizeof(float)));
    CK(hipMalloc(&d_off, (m + 1) * sizeof(int)));
    CK(hipMalloc(&d_sums, m * sizeof(double)));
    CK(hipMalloc(&d_max, m * sizeof(float)));
    CK(hipMemcpy(d_vals, h_vals.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CK(hipMemcpy(d_off, h_off.data(), (m + 1) * sizeof(int), hipMemcpyHostToDevice));
    CK(hipMemset(d_sums, 0xFF, m * sizeof(double)));  // NaN sentinel
    CK(hipMemset(d_max, 0xFF, m * sizeof(float)));

    const int block = 128;
    segment_sum<<<(m + block - 1) / block, block>>>(d_vals, d_off, m, d_sums, d_max);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());

    std::vector<double> sums(m);
    std::vector<float> maxima(m);
    CK(hipMemcpy(sums.data(), d_sums, m * sizeof(double), hipMemcpyDeviceToHost));
    CK(hipMemcpy(maxima.data(), d_max, m * sizeof(float), hipMemcpyDeviceToHost));

    double weighted = 0.0;
    uint64_t h = 0xCBF29CE484222325ULL;
    int empty = 0;
    for (int s = 0; s < m; ++s) {
        weighted += (double)(s % 1009 + 1) * sums[s];
        if (std::isfinite(maxima[s])) weighted += 1e-3 * (double)(s % 13) * maxima[s];
        uint64_t bits;
        uint32_t fbits;
        memcpy(&bits, &sums[s], sizeof(bits));
        memcpy(&fbits, &maxima[s], sizeof(fbits));
        h ^= bits;
        h *= 0x100000001B3ULL;
        h ^= fbits;
        h *= 0x100000001B3ULL;
        empty += (h_off[s] == h_off[s + 1]);
    }
    printf("segments = %d (empty = %d)\n", m, empty);
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("weighted sum = %.10e\n", weighted);
    const int idx[3] = {0, m / 3, m - 1};
    for (int k = 0; k < 3; ++k)
        printf("segment %d: len %d sum %.10e max %.10e\n", idx[k], h_off[idx[k] + 1] - h_off[idx[k]],
               sums[idx[k]], (double)maxima[idx[k]]);

    CK(hipFree(d_vals));
    CK(hipFree(d_off));
    CK(hipFree(d_sums));
    CK(hipFree(d_max));
    return 0;
}
