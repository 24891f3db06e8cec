#include "hip/hip_runtime.h"
// Fermi-Pasta-Ulam-Tsingou (beta) chains: 4096 independent chains of 256 unit masses joined by
// nonlinear springs (force d + beta d^3) with fixed ends, each started in a low normal mode with
// a random amplitude. One thread block holds one chain in shared memory and advances it 4000
// velocity-Verlet steps; the total energy of each chain before and after is reduced with warp
// shuffles and a fixed shared-memory tree (deterministic order).
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
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, hipGetErrorString(err_));                              \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static constexpr int CHAIN = 256;      // masses per chain == threads per block
static constexpr int NCHAINS = 4096;   // 2^20 masses in total
static constexpr int STEPS = 4000;
static constexpr float DT = 0.1f;
static constexpr float BETA = 1.5f;

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t xorshift64() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static double uniform01() { return (double)(xorshift64() >> 11) * (1.0 / 9007199254740992.0); }

__device__ __forceinline__ float spring_force(float d) { return d + BETA * d * d * d; }
__device__ __forceinline__ float spring_energy(float d) {
    float d2 = d * d;
    return 0.5f * d2 + 0.25f * BETA * d2 * d2;
}

// q holds the displacements with the fixed walls at q[0] and q[CHAIN+1].
__device__ __forceinline__ float net_force(const float* q, int j) {
    return spring_force(q[j + 1] - q[j]) - spring_force(q[j] - q[j - 1]);
}

// Energy of the whole chain: kinetic energy of every mass plus the spring to the left of every
// mass; the last thread also adds the spring to the right wall. Fixed-order block reduction.
__device__ float chain_energy(const float* q, float v, float* warp_sums) {
    int i = threadIdx.x, lane = i & 31, warp = i >> 5;
    float e = 0.5f * v * v + spring_energy(q[i + 1] - q[i]);
    if (i == CHAIN - 1) e += spring_energy(q[CHAIN + 1] - q[CHAIN]);
    for (int off = 16; off > 0; off >>= 1) e += __shfl_down(e, off);
    if (lane == 0) warp_sums[warp] = e;
    __syncthreads();
    float total = 0.0f;
    if (warp == 0) {
        total = lane < CHAIN / 32 ? warp_sums[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) total += __shfl_down(total, off);
    }
    __syncthreads();
    return total;  // valid in thread 0
}

__global__ void __launch_bounds__(CHAIN)
fput_evolve(const float* __restrict__ pos_in, const float* __restrict__ vel_in,
            float* __restrict__ pos_out, float* __restrict__ vel_out,
            float* __restrict__ energy_start, float* __restrict__ energy_end) {
    __shared__ float q[CHAIN + 2];
    __shared__ float warp_sums[CHAIN / 32];
    int c = blockIdx.x, i = threadIdx.x;
    float x = pos_in[c * CHAIN + i], v = vel_in[c * CHAIN + i];
    if (i == 0) { q[0] = 0.0f; q[CHAIN + 1] = 0.0f; }
    q[i + 1] = x;
    __syncthreads();
    float e0 = chain_energy(q, v, warp_sums);
    if (i == 0) energy_start[c] = e0;
    float a = net_force(q, i + 1);
    for (int s = 0; s < STEPS; ++s) {
        v += 0.5f * DT * a;
        x += DT * v;
        __syncthreads();          // everyone has finished reading the old positions
        q[i + 1] = x;
        __syncthreads();
        a = net_force(q, i + 1);
        v += 0.5f * DT * a;
    }
    pos_out[c * CHAIN + i] = x;
    vel_out[c * CHAIN + i] = v;
    float e1 = chain_energy(q, v, warp_sums);
    if (i == 0) energy_end[c] = e1;
}

static double weighted_sum(const std::vector<float>& v) {
    double s = 0.0;
    for (size_t i = 0; i < v.size(); ++i) s += (double)v[i] * (double)(i % 1000 + 1);
    return s;
}

int main(int argc, char** argv) {
    if (argc > 1) g_rng = strtoull(argv[1], nullptr, 0);
    if (g_rng == 0) g_rng = 0x9E3779B97F4A7C15ull;  // xorshift state must be nonzero
    const int n = CHAIN * NCHAINS;
    const double PI = 3.14159265358979323846;
    std::vector<float> h_pos(n), h_vel(n);
    for (int c = 0; c < NCHAINS; ++c) {
        int mode = 1 + (int)(xorshift64() % 4);
        double amp = 2.0 + 8.0 * uniform01();
        for (int i = 0; i < CHAIN; ++i) {
            h_pos[c * CHAIN + i] = (float)(amp * sin(PI * mode * (i + 1) / (CHAIN + 1)));
            h_vel[c * CHAIN + i] = (float)(0.01 * (uniform01() - 0.5));
        }
    }

    float *d_pos, *d_vel, *d_pos_out, *d_vel_out, *d_e0, *d_e1;
    CHECK(hipMalloc(&d_pos, n * sizeof(float)));
    CHECK(hipMalloc(&d_vel, n * sizeof(float)));
    CHECK(hipMalloc(&d_pos_out, n * sizeof(float)));
    CHECK(hipMalloc(&d_vel_out, n * sizeof(float)));
    CHECK(hipMalloc(&d_e0, NCHAINS * sizeof(float)));
    CHECK(hipMalloc(&d_e1, NCHAINS * sizeof(float)));
    CHECK(hipMemcpy(d_pos, h_pos.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_vel, h_vel.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_pos_out, 0xFF, n * sizeof(float)));   // NaN sentinels
    CHECK(hipMemset(d_vel_out, 0xFF, n * sizeof(float)));
    CHECK(hipMemset(d_e0, 0xFF, NCHAINS * sizeof(float)));
    CHECK(hipMemset(d_e1, 0xFF, NCHAINS * sizeof(float)));

    fput_evolve<<<NCHAINS, CHAIN>>>(d_pos, d_vel, d_pos_out, d_vel_out, d_e0, d_e1);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<float> pos(n), vel(n), e0(NCHAINS), e1(NCHAINS);
    CHECK(hipMemcpy(pos.data(), d_pos_out, n * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(vel.data(), d_vel_out, n * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(e0.data(), d_e0, NCHAINS * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(e1.data(), d_e1, NCHAINS * sizeof(float), hipMemcpyDeviceToHost));

    double total0 = 0.0, total1 = 0.0, max_drift = 0.0;
    for (int c = 0; c < NCHAINS; ++c) {
        total0 += e0[c];
        total1 += e1[c];
        double drift = fabs((double)e1[c] - (double)e0[c]) / (double)e0[c];
        if (!(drift <= max_drift)) max_drift = drift;  // NaN propagates
    }
    printf("checksum_pos %.10e\n", weighted_sum(pos));
    printf("checksum_vel %.10e\n", weighted_sum(vel));
    printf("checksum_energy_start %.10e\n", weighted_sum(e0));
    printf("checksum_energy_end %.10e\n", weighted_sum(e1));
    printf("total energy start %.10e end %.10e\n", total0, total1);
    printf("max relative energy drift %.10e\n", max_drift);
    printf("chain[7] energy %.10e -> %.10e\n", (double)e0[7], (double)e1[7]);
    printf("pos[%d] = %.10e vel[%d] = %.10e\n", 1000, (double)pos[1000], 1000, (double)vel[1000]);
    printf("pos[%d] = %.10e vel[%d] = %.10e\n", n - 3, (double)pos[n - 3], n - 3,
           (double)vel[n - 3]);

    CHECK(hipFree(d_pos)); CHECK(hipFree(d_vel)); CHECK(hipFree(d_pos_out));
    CHECK(hipFree(d_vel_out)); CHECK(hipFree(d_e0)); CHECK(hipFree(d_e1));
    return 0;
}
