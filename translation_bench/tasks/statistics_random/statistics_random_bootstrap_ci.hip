#include "hip/hip_runtime.h"
// Nonparametric bootstrap of the mean of 65536 skewed (log-normal-like) observations: each of
// 2048 blocks builds one resample with per-thread xorshift64* generators, reduces the resample's
// sum and sum of squares with a fixed shared-memory tree, and writes the replicate's mean and
// standard deviation; replicates whose mean exceeds the observed mean are counted with an integer
// atomic. The host sorts the replicate means for a 95% percentile interval and prints it with the
// bootstrap standard error, the count and checksums.
#include <hip/hip_runtime.h>
#include <algorithm>
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

constexpr int NDATA = 1 << 16, NREP = 2048, BLOCK = 256, DRAWS = NDATA / BLOCK;

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void bootstrap_replicates(const float* __restrict__ data, float* __restrict__ rep_mean,
                                     float* __restrict__ rep_sd, int* __restrict__ above,
                                     float observed_mean, uint64_t seed) {
    __shared__ float s_sum[BLOCK];
    __shared__ float s_sq[BLOCK];
    const int tid = threadIdx.x, rep = blockIdx.x;
    uint64_t state = splitmix64(seed + (uint64_t)rep * BLOCK + tid) | 1ull;  // never zero
    float sum = 0.0f, sq = 0.0f;
    for (int k = 0; k < DRAWS; ++k) {
        state ^= state >> 12;  // xorshift64*
        state ^= state << 25;
        state ^= state >> 27;
        uint32_t idx = (uint32_t)((state * 0x2545F4914F6CDD1Dull) >> 48);  // 16 bits: [0, NDATA)
        float v = data[idx];
        sum += v;
        sq += v * v;
    }
    s_sum[tid] = sum;
    s_sq[tid] = sq;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) {
            s_sum[tid] += s_sum[tid + half];
            s_sq[tid] += s_sq[tid + half];
        }
        __syncthreads();
    }
    if (tid == 0) {
        float mean = s_sum[0] / (float)NDATA;
        float var = fmaxf(s_sq[0] / (float)NDATA - mean * mean, 0.0f);
        rep_mean[rep] = mean;
        rep_sd[rep] = sqrtf(var);
        if (mean > observed_mean) atomicAdd(above, 1);
    }
}

static uint64_t g_rng = 0x6A09E667F3BCC909ull;
static double next_uniform() {  // [0, 1), 64-bit LCG
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

int main(int argc, char** argv) {
    if (argc > 1) g_rng = strtoull(argv[1], nullptr, 0);
    std::vector<float> data(NDATA);
    double obs = 0.0;
    for (int i = 0; i < NDATA; ++i) {
        double g = -6.0;  // Irwin-Hall approximation of a standard normal
        for (int k = 0; k < 12; ++k) g += next_uniform();
        data[i] = (float)std::exp(0.6 * g);
        obs += data[i];
    }
    obs /= NDATA;

    float *d_data, *d_mean, *d_sd;
    int* d_above;
    CHECK(hipMalloc(&d_data, NDATA * sizeof(float)));
    CHECK(hipMalloc(&d_mean, NREP * sizeof(float)));
    CHECK(hipMalloc(&d_sd, NREP * sizeof(float)));
    CHECK(hipMalloc(&d_above, sizeof(int)));
    CHECK(hipMemcpy(d_data, data.data(), NDATA * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_mean, 0xFF, NREP * sizeof(float)));  // NaN sentinels
    CHECK(hipMemset(d_sd, 0xFF, NREP * sizeof(float)));
    CHECK(hipMemset(d_above, 0, sizeof(int)));

    bootstrap_replicates<<<NREP, BLOCK>>>(d_data, d_mean, d_sd, d_above, (float)obs, 0xB0075742ull);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<float> mean(NREP), sd(NREP);
    int above = 0;
    CHECK(hipMemcpy(mean.data(), d_mean, NREP * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(sd.data(), d_sd, NREP * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(&above, d_above, sizeof(int), hipMemcpyDeviceToHost));

    double cs_mean = 0.0, cs_sd = 0.0, m = 0.0, v = 0.0;
    for (int i = 0; i < NREP; ++i) {
        cs_mean += (double)mean[i] * (double)((i % 101) + 1);
        cs_sd += (double)sd[i] * (double)((i % 101) + 1);
        m += mean[i];
    }
    m /= NREP;
    for (int i = 0; i < NREP; ++i) v += ((double)mean[i] - m) * ((double)mean[i] - m);
    std::vector<float> sorted(mean);
    std::sort(sorted.begin(), sorted.end());

    printf("observed mean %.10e\n", obs);
    printf("checksum rep_mean %.10e\n", cs_mean);
    printf("checksum rep_sd %.10e\n", cs_sd);
    printf("bootstrap standard error %.10e\n", std::sqrt(v / (NREP - 1)));
    printf("95%% interval [%.10e, %.10e]\n", sorted[(int)(0.025 * NREP)], sorted[(int)(0.975 * NREP)]);
    printf("replicates above observed mean: %d of %d\n", above, NREP);
    printf("rep_mean[7] = %.10e rep_sd[%d] = %.10e\n", mean[7], NREP - 1, sd[NREP - 1]);

    CHECK(hipFree(d_data));
    CHECK(hipFree(d_mean));
    CHECK(hipFree(d_sd));
    CHECK(hipFree(d_above));
    return 0;
}
