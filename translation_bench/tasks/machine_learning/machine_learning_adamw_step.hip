#include "hip/hip_runtime.h"
// One AdamW optimiser step over a 2^20-parameter model: from the parameters, their gradients and
// the first/second moment estimates, a grid-stride elementwise kernel computes the updated moments
// and the bias-corrected, weight-decayed parameters into separate output buffers. The host prints
// position-weighted checksums of the three outputs and a few sampled values.
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

struct AdamParams {
    float lr, beta1, beta2, eps, weight_decay;
    float inv_bc1, inv_bc2;  // 1 / (1 - beta^t), computed on the host
};

__global__ void adamw_step(const float* __restrict__ w, const float* __restrict__ g,
                           const float* __restrict__ m, const float* __restrict__ v,
                           float* __restrict__ w_out, float* __restrict__ m_out,
                           float* __restrict__ v_out, AdamParams p, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float gi = g[i];
        float mi = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
        float vi = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
        float mhat = mi * p.inv_bc1;
        float vhat = vi * p.inv_bc2;
        float wi = w[i];
        float update = mhat / (sqrtf(vhat) + p.eps) + p.weight_decay * wi;
        w_out[i] = wi - p.lr * update;
        m_out[i] = mi;
        v_out[i] = vi;
    }
}

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
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
    const int n = 1 << 20;
    const int step = 7;
    std::vector<float> w(n), g(n), m(n), v(n);
    for (int i = 0; i < n; ++i) {
        w[i] = 2.0f * next_uniform() - 1.0f;
        // roughly normal gradient: sum of four uniforms, with a per-parameter scale
        float s = next_uniform() + next_uniform() + next_uniform() + next_uniform() - 2.0f;
        g[i] = s * (0.01f + 0.1f * (float)(i % 13));
        m[i] = 0.05f * (2.0f * next_uniform() - 1.0f);
        v[i] = 1e-4f * next_uniform();
    }

    AdamParams p;
    p.lr = 3e-4f;
    p.beta1 = 0.9f;
    p.beta2 = 0.999f;
    p.eps = 1e-8f;
    p.weight_decay = 0.01f;
    p.inv_bc1 = (float)(1.0 / (1.0 - std::pow(0.9, step)));
    p.inv_bc2 = (float)(1.0 / (1.0 - std::pow(0.999, step)));

    const size_t bytes = (size_t)n * sizeof(float);
    float *d_w, *d_g, *d_m, *d_v, *d_wo, *d_mo, *d_vo;
    CHECK(hipMalloc(&d_w, bytes));
    CHECK(hipMalloc(&d_g, bytes));
    CHECK(hipMalloc(&d_m, bytes));
    CHECK(hipMalloc(&d_v, bytes));
    CHECK(hipMalloc(&d_wo, bytes));
    CHECK(hipMalloc(&d_mo, bytes));
    CHECK(hipMalloc(&d_vo, bytes));
    CHECK(hipMemcpy(d_w, w.data(), bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_g, g.data(), bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_m, m.data(), bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_v, v.data(), bytes, hipMemcpyHostToDevice));
    // sentinel: 0xFF bytes are NaNs, so an output the kernel does not write shows in the checksum
    CHECK(hipMemset(d_wo, 0xFF, bytes));
    CHECK(hipMemset(d_mo, 0xFF, bytes));
    CHECK(hipMemset(d_vo, 0xFF, bytes));

    adamw_step<<<1024, 256>>>(d_w, d_g, d_m, d_v, d_wo, d_mo, d_vo, p, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<float> wo(n), mo(n), vo(n);
    CHECK(hipMemcpy(wo.data(), d_wo, bytes, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(mo.data(), d_mo, bytes, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(vo.data(), d_vo, bytes, hipMemcpyDeviceToHost));

    printf("checksum w_out %.10e\n", weighted_sum(wo));
    printf("checksum m_out %.10e\n", weighted_sum(mo));
    printf("checksum v_out %.10e\n", weighted_sum(vo));
    const int samples[3] = {17, 65537, n - 1};
    for (int k = 0; k < 3; ++k) {
        int i = samples[k];
        printf("sample[%d] w = %.10e m = %.10e v = %.10e\n", i, wo[i], mo[i], vo[i]);
    }

    CHECK(hipFree(d_w));
    CHECK(hipFree(d_g));
    CHECK(hipFree(d_m));
    CHECK(hipFree(d_v));
    CHECK(hipFree(d_wo));
    CHECK(hipFree(d_mo));
    CHECK(hipFree(d_vo));
    return 0;
}
