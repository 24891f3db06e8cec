#include "hip/hip_runtime.h"
// Impulse-noise removal with a 9-tap running median over a 2^22-sample signal: each block stages
// its 256 samples plus a 4-sample halo on each side (clamped at the ends) in shared memory, every
// thread sorts its window with a fully unrolled compare-exchange network and writes the median,
// flags the sample as a spike when it differs from the median by more than a threshold, and the
// spikes are counted with shared then global integer atomics. The host prints checksums, the spike
// count next to the number of impulses it injected, and sampled values.
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

constexpr int N = 1 << 22, R = 4, WIN = 2 * R + 1, BLOCK = 256;

__global__ void median_despike(const float* __restrict__ x, float* __restrict__ y,
                               unsigned char* __restrict__ spike, int* __restrict__ count,
                               float threshold) {
    __shared__ float tile[BLOCK + 2 * R];
    __shared__ int block_count;
    const int tid = threadIdx.x;
    const int i = blockIdx.x * BLOCK + tid;
    if (tid == 0) block_count = 0;
    tile[tid + R] = x[min(i, N - 1)];
    if (tid < R) {
        tile[tid] = x[max(i - R, 0)];                         // left halo
        tile[BLOCK + R + tid] = x[min(i + BLOCK, N - 1)];     // right halo
    }
    __syncthreads();

    if (i < N) {
        float w[WIN];
#pragma unroll
        for (int k = 0; k < WIN; ++k) w[k] = tile[tid + k];
        // odd-even transposition sort: WIN rounds of compare-exchange with constant indices
#pragma unroll
        for (int round = 0; round < WIN; ++round) {
#pragma unroll
            for (int k = round & 1; k + 1 < WIN; k += 2) {
                float lo = fminf(w[k], w[k + 1]), hi = fmaxf(w[k], w[k + 1]);
                w[k] = lo;
                w[k + 1] = hi;
            }
        }
        const float med = w[R];
        const bool is_spike = fabsf(tile[tid + R] - med) > threshold;
        y[i] = med;
        spike[i] = is_spike ? 1 : 0;
        if (is_spike) atomicAdd(&block_count, 1);
    }
    __syncthreads();
    if (tid == 0 && block_count > 0) atomicAdd(count, block_count);
}

static uint64_t g_rng = 0x3C6EF372FE94F82Bull;
static double next_uniform() {  // [0, 1), 64-bit LCG
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

int main(int argc, char** argv) {
    if (argc > 1) g_rng = strtoull(argv[1], nullptr, 0);
    const double kPi = 3.14159265358979323846;
    std::vector<double> slow(4096), fast(97);  // one period of each tone
    for (int k = 0; k < 4096; ++k) slow[k] = std::sin(2.0 * kPi * k / 4096.0);
    for (int k = 0; k < 97; ++k) fast[k] = 0.3 * std::sin(2.0 * kPi * k / 97.0);
    std::vector<float> x(N);
    int injected = 0;
    for (int i = 0; i < N; ++i) {
        double v = slow[i % 4096] + fast[i % 97];
        v += 0.05 * (next_uniform() - 0.5);
        if (next_uniform() < 0.01) {  // 1% impulses of magnitude 2..4 and random sign
            double mag = 2.0 + 2.0 * next_uniform();
            v += next_uniform() < 0.5 ? -mag : mag;
            ++injected;
        }
        x[i] = (float)v;
    }

    float *d_x, *d_y;
    unsigned char* d_spike;
    int* d_count;
    CHECK(hipMalloc(&d_x, N * sizeof(float)));
    CHECK(hipMalloc(&d_y, N * sizeof(float)));
    CHECK(hipMalloc(&d_spike, N));
    CHECK(hipMalloc(&d_count, sizeof(int)));
    CHECK(hipMemcpy(d_x, x.data(), N * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_y, 0xFF, N * sizeof(float)));  // NaN sentinel
    CHECK(hipMemset(d_spike, 0xFF, N));              // neither 0 nor 1
    CHECK(hipMemset(d_count, 0, sizeof(int)));

    median_despike<<<(N + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_y, d_spike, d_count, 1.0f);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<float> y(N);
    std::vector<unsigned char> spike(N);
    int count = 0;
    CHECK(hipMemcpy(y.data(), d_y, N * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(spike.data(), d_spike, N, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(&count, d_count, sizeof(int), hipMemcpyDeviceToHost));

    double cs = 0.0;
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a over the spike flags
    long long flagged = 0;
    for (int i = 0; i < N; ++i) {
        cs += (double)y[i] * (double)((i % 101) + 1);
        h = (h ^ spike[i]) * 0x100000001B3ull;
        flagged += spike[i];
    }
    printf("checksum median %.10e\n", cs);
    printf("spike flags hash 0x%016llx (sum %lld)\n", (unsigned long long)h, flagged);
    printf("spikes counted %d, impulses injected %d\n", count, injected);
    const int s[4] = {0, 3, 1000003, N - 1};
    for (int k : s) printf("y[%d] = %.10e (x = %.10e)\n", k, y[k], x[k]);

    CHECK(hipFree(d_x));
    CHECK(hipFree(d_y));
    CHECK(hipFree(d_spike));
    CHECK(hipFree(d_count));
    return 0;
}
