#include "hip/hip_runtime.h"
// Fused residual add + layer normalisation over a 4096 x 1024 activation matrix: one warp per row
// forms h = x + r, reduces the row's mean and variance with __shfl_xor_sync butterflies (a fixed
// order, so the result is deterministic), and writes h, the normalised y = (h - mean) * rstd *
// gamma + beta, and the per-row mean and rstd. The host prints checksums and sampled values.
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

constexpr int ROWS = 4096, COLS = 1024, WARP = 32, PER_LANE = COLS / WARP;
constexpr int WARPS_PER_BLOCK = 8;

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = WARP / 2; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
    return v;
}

__global__ void residual_layernorm(const float* __restrict__ x, const float* __restrict__ r,
                                   const float* __restrict__ gamma, const float* __restrict__ beta,
                                   float* __restrict__ h_out, float* __restrict__ y_out,
                                   float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                   float eps) {
    const int lane = threadIdx.x % WARP;
    const int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP;
    if (row >= ROWS) return;  // whole warps leave together
    const size_t base = (size_t)row * COLS;

    float vals[PER_LANE];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < PER_LANE; ++k) {
        int c = k * WARP + lane;  // coalesced: consecutive lanes read consecutive columns
        float h = x[base + c] + r[base + c];
        vals[k] = h;
        h_out[base + c] = h;
        sum += h;
    }
    const float mean = warp_sum(sum) / (float)COLS;

    float sq = 0.0f;
#pragma unroll
    for (int k = 0; k < PER_LANE; ++k) {
        float d = vals[k] - mean;
        sq += d * d;
    }
    const float var = warp_sum(sq) / (float)COLS;
    const float rstd = 1.0f / sqrtf(var + eps);

#pragma unroll
    for (int k = 0; k < PER_LANE; ++k) {
        int c = k * WARP + lane;
        y_out[base + c] = (vals[k] - mean) * rstd * gamma[c] + beta[c];
    }
    if (lane == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float next_uniform() {  // [0, 1), 64-bit LCG
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_rng >> 40) * (1.0 / 16777216.0));
}

static double weighted_sum(const std::vector<float>& a) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); ++i) s += (double)a[i] * (double)((i % 101) + 1);
    return s;
}

int main(int argc, char** argv) {
    if (argc > 1) g_rng = strtoull(argv[1], nullptr, 0);
    const size_t n = (size_t)ROWS * COLS;
    std::vector<float> x(n), r(n), gamma(COLS), beta(COLS);
    for (int row = 0; row < ROWS; ++row) {
        float scale = 0.5f + 4.0f * (float)(row % 17) / 17.0f;  // rows of different spread
        float shift = (float)(row % 29) - 14.0f;                // and offset
        for (int c = 0; c < COLS; ++c) {
            size_t i = (size_t)row * COLS + c;
            x[i] = shift + scale * (2.0f * next_uniform() - 1.0f);
            r[i] = 0.25f * (2.0f * next_uniform() - 1.0f);
        }
    }
    for (int c = 0; c < COLS; ++c) {
        gamma[c] = 0.75f + 0.5f * next_uniform();
        beta[c] = 0.2f * (next_uniform() - 0.5f);
    }

    const size_t bytes = n * sizeof(float);
    float *d_x, *d_r, *d_g, *d_b, *d_h, *d_y, *d_mean, *d_rstd;
    CHECK(hipMalloc(&d_x, bytes));
    CHECK(hipMalloc(&d_r, bytes));
    CHECK(hipMalloc(&d_g, COLS * sizeof(float)));
    CHECK(hipMalloc(&d_b, COLS * sizeof(float)));
    CHECK(hipMalloc(&d_h, bytes));
    CHECK(hipMalloc(&d_y, bytes));
    CHECK(hipMalloc(&d_mean, ROWS * sizeof(float)));
    CHECK(hipMalloc(&d_rstd, ROWS * sizeof(float)));
    CHECK(hipMemcpy(d_x, x.data(), bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_r, r.data(), bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_g, gamma.data(), COLS * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_b, beta.data(), COLS * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_h, 0xFF, bytes));  // NaN sentinels
    CHECK(hipMemset(d_y, 0xFF, bytes));
    CHECK(hipMemset(d_mean, 0xFF, ROWS * sizeof(float)));
    CHECK(hipMemset(d_rstd, 0xFF, ROWS * sizeof(float)));

    residual_layernorm<<<ROWS / WARPS_PER_BLOCK, WARPS_PER_BLOCK * WARP>>>(d_x, d_r, d_g, d_b, d_h, d_y,
                                                                          d_mean, d_rstd, 1e-5f);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<float> h(n), y(n), mean(ROWS), rstd(ROWS);
    CHECK(hipMemcpy(h.data(), d_h, bytes, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(y.data(), d_y, bytes, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(mean.data(), d_mean, ROWS * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(rstd.data(), d_rstd, ROWS * sizeof(float), hipMemcpyDeviceToHost));

    printf("checksum h %.10e\n", weighted_sum(h));
    printf("checksum y %.10e\n", weighted_sum(y));
    printf("checksum mean %.10e\n", weighted_sum(mean));
    printf("checksum rstd %.10e\n", weighted_sum(rstd));
    const int rows[2] = {5, ROWS - 1};
    for (int rr : rows) printf("row %d: mean = %.10e rstd = %.10e\n", rr, mean[rr], rstd[rr]);
    const size_t s[2] = {(size_t)77 * COLS + 500, n - 3};
    for (size_t k : s) printf("y[%zu] = %.10e\n", k, y[k]);

    CHECK(hipFree(d_x));
    CHECK(hipFree(d_r));
    CHECK(hipFree(d_g));
    CHECK(hipFree(d_b));
    CHECK(hipFree(d_h));
    CHECK(hipFree(d_y));
    CHECK(hipFree(d_mean));
    CHECK(hipFree(d_rstd));
    return 0;
}
