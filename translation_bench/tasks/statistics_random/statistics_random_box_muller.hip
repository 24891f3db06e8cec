#include "hip/hip_runtime.h"
// Counter-based Gaussian random numbers: each thread hashes its pair index with a SplitMix64
// finaliser into two 24-bit uniforms and turns them into two N(mu, sigma^2) samples with the
// Box-Muller transform, filling 2^22 floats. The host computes the sample mean, variance, skewness
// and the tail counts beyond 2 and 3 sigma in index order, and prints them with a checksum.
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        hipError_t err_ = (call);                                                    \
        if (err_ != hipSuccess) {                                                    \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, __LINE__, \
                    hipGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void box_muller(float* __restrict__ out, int npairs, uint64_t seed, float mu, float sigma) {
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < npairs; i += stride) {
        uint64_t bits = splitmix64(seed ^ ((uint64_t)i * 0xD1B54A32D192ED03ull));
        uint32_t hi = (uint32_t)(bits >> 32), lo = (uint32_t)bits;
        float u1 = (float)((hi >> 8) + 1u) * (1.0f / 16777216.0f);  // (0, 1]: log is finite
        float u2 = (float)(lo >> 8) * (1.0f / 16777216.0f);         // [0, 1)
        float radius = sqrtf(-2.0f * logf(u1));
        float s, c;
        sincospif(2.0f * u2, &s, &c);
        out[2 * i] = mu + sigma * radius * c;
        out[2 * i + 1] = mu + sigma * radius * s;
    }
}

int main(int argc, char** argv) {
    const int n = 1 << 22, npairs = n / 2;
    const float mu = 1.5f, sigma = 0.75f;
    uint64_t seed = 0x5EEDC0FFEE123457ull;
    if (argc > 1) seed = strtoull(argv[1], nullptr, 0);
    float* d_out;
    CHECK(hipMalloc(&d_out, (size_t)n * sizeof(float)));
    CHECK(hipMemset(d_out, 0xFF, (size_t)n * sizeof(float)));  // NaN sentinel

    box_muller<<<2048, 256>>>(d_out, npairs, seed, mu, sigma);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<float> z(n);
    CHECK(hipMemcpy(z.data(), d_out, (size_t)n * sizeof(float), hipMemcpyDeviceToHost));

    double checksum = 0.0, s1 = 0.0;
    for (int i = 0; i < n; ++i) {
        checksum += (double)z[i] * (double)((i % 101) + 1);
        s1 += z[i];
    }
    const double mean = s1 / n;
    double m2 = 0.0, m3 = 0.0;
    long long beyond2 = 0, beyond3 = 0;
    for (int i = 0; i < n; ++i) {
        double d = (double)z[i] - mean;
        m2 += d * d;
        m3 += d * d * d;
        double t = std::fabs(((double)z[i] - mu) / sigma);
        beyond2 += t > 2.0;
        beyond3 += t > 3.0;
    }
    const double var = m2 / (n - 1);
    const double skew = (m3 / n) / std::pow(m2 / n, 1.5);

    printf("checksum %.10e\n", checksum);
    printf("mean %.10e variance %.10e skewness %.10e\n", mean, var, skew);
    printf("beyond 2 sigma: %lld, beyond 3 sigma: %lld of %d\n", beyond2, beyond3, n);
    const int samples[4] = {0, 1, 12345, n - 1};
    for (int k : samples) printf("sample[%d] = %.10e\n", k, z[k]);

    CHECK(hipFree(d_out));
    return 0;
}
