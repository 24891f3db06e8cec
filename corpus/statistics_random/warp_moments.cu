// warp_moments.cu
// Two-pass computation of the first four moments (mean, variance, skewness,
// excess kurtosis) of a large sample, plus min/max and a 3-sigma outlier
// count. Reductions are done at warp level with shuffle intrinsics:
//   __shfl_down_sync  - tree reduction of the moment sums
//   __shfl_xor_sync   - butterfly all-reduce for min/max
//   __ballot_sync     - vote to count outliers in a warp
// Per-block partial sums are written to global memory and combined on the
// host in a fixed order to keep the printed numbers reproducible.

#include "statistics_random_common.cuh"
#include <cmath>
#include <cstring>
#include <vector>

#define THREADS 256
#define WARP 32
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = WARP / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;  // valid in lane 0
}

__device__ __forceinline__ float warp_allmin(float v) {
    for (int mask = WARP / 2; mask > 0; mask >>= 1)
        v = fminf(v, __shfl_xor_sync(FULL_MASK, v, mask));
    return v;  // valid in every lane
}

__device__ __forceinline__ float warp_allmax(float v) {
    for (int mask = WARP / 2; mask > 0; mask >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, mask));
    return v;
}

// Order-preserving float <-> uint mapping valid for negative values too.
__device__ __forceinline__ unsigned int float_to_ordered(float f) {
    unsigned int u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
static float ordered_to_float_host(unsigned int u) {
    u = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

// Pass 1: sum of x per block, global min/max.
__global__ void pass1_sum_minmax(const float* __restrict__ x, int n, float* block_sum,
                                 unsigned int* g_min, unsigned int* g_max) {
    __shared__ float s_warp[THREADS / WARP];
    float sum = 0.0f, lo = INFINITY, hi = -INFINITY;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        sum += v;
        lo = fminf(lo, v);
        hi = fmaxf(hi, v);
    }
    const int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP;
    sum = warp_sum(sum);
    lo = warp_allmin(lo);
    hi = warp_allmax(hi);
    if (lane == 0) {
        s_warp[wid] = sum;
        atomicMin(g_min, float_to_ordered(lo));
        atomicMax(g_max, float_to_ordered(hi));
    }
    __syncthreads();
    if (wid == 0) {
        float v = (lane < THREADS / WARP) ? s_warp[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) block_sum[blockIdx.x] = v;
    }
}

// Pass 2: central moments m2, m3, m4 and outlier count.
__global__ void pass2_central(const float* __restrict__ x, int n, float mean, float thresh,
                              float4* block_moments, unsigned int* outliers) {
    __shared__ float4 s_warp[THREADS / WARP];
    float m2 = 0.0f, m3 = 0.0f, m4 = 0.0f;
    unsigned int local_out = 0;
    const int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP;
    // Loop bound is uniform across the warp so every lane reaches the ballot.
    const int stride = gridDim.x * blockDim.x;
    for (int base = blockIdx.x * blockDim.x; base < n; base += stride) {
        int i = base + threadIdx.x;
        float d = (i < n) ? x[i] - mean : 0.0f;
        float d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
        unsigned int vote = __ballot_sync(FULL_MASK, fabsf(d) > thresh);
        if (lane == 0) local_out += __popc(vote);
    }
    m2 = warp_sum(m2);
    m3 = warp_sum(m3);
    m4 = warp_sum(m4);
    if (lane == 0) {
        s_warp[wid] = make_float4(m2, m3, m4, 0.0f);
        if (local_out) atomicAdd(outliers, local_out);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int w = 0; w < THREADS / WARP; ++w) {
            acc.x += s_warp[w].x; acc.y += s_warp[w].y; acc.z += s_warp[w].z;
        }
        block_moments[blockIdx.x] = acc;
    }
}

int main() {
    const int n = 1 << 20, blocks = 128;
    // Host data: Box-Muller normals N(2, 1.5^2) with a handful of spikes.
    std::vector<float> h(n);
    HostRng rng(99);
    for (int i = 0; i < n; i += 2) {
        float u1 = (rng.next() >> 8) * (1.0f / 16777216.0f) + 1e-7f;
        float u2 = rng.next_float();
        float r = std::sqrt(-2.0f * std::log(u1));
        h[i] = 2.0f + 1.5f * r * std::cos(TWO_PI_F * u2);
        h[i + 1] = 2.0f + 1.5f * r * std::sin(TWO_PI_F * u2);
    }
    for (int i = 0; i < n; i += 4099) h[i] += (i & 1) ? 25.0f : -25.0f;

    float *d_x, *d_sum;
    float4* d_mom;
    unsigned int *d_min, *d_max, *d_out;
    CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_sum, blocks * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_mom, blocks * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&d_min, sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_max, sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_out, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(d_x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_min, 0xff, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemset(d_max, 0x00, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemset(d_out, 0x00, sizeof(unsigned int)));

    pass1_sum_minmax<<<blocks, THREADS>>>(d_x, n, d_sum, d_min, d_max);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> h_sum(blocks);
    CUDA_CHECK(cudaMemcpy(h_sum.data(), d_sum, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    double total = 0.0;
    for (float s : h_sum) total += s;
    const double mean = total / n;

    // Rough sigma for the outlier threshold comes from the known generator.
    pass2_central<<<blocks, THREADS>>>(d_x, n, (float)mean, 3.0f * 1.5f, d_mom, d_out);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float4> h_mom(blocks);
    unsigned int umin, umax, nout;
    CUDA_CHECK(cudaMemcpy(h_mom.data(), d_mom, blocks * sizeof(float4), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&umin, d_min, sizeof(umin), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&umax, d_max, sizeof(umax), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&nout, d_out, sizeof(nout), cudaMemcpyDeviceToHost));

    double m2 = 0, m3 = 0, m4 = 0;
    for (const float4& m : h_mom) { m2 += m.x; m3 += m.y; m4 += m.z; }
    m2 /= n; m3 /= n; m4 /= n;
    const double skew = m3 / std::pow(m2, 1.5);
    const double kurt = m4 / (m2 * m2) - 3.0;

    printf("n=%d mean=%.4f var=%.4f\n", n, mean, m2);
    printf("skewness=%.4f excess_kurtosis=%.4f\n", skew, kurt);
    printf("min=%.4f max=%.4f outliers(>3sigma)=%u\n", ordered_to_float_host(umin),
           ordered_to_float_host(umax), nout);

    CUDA_CHECK(cudaFree(d_x)); CUDA_CHECK(cudaFree(d_sum)); CUDA_CHECK(cudaFree(d_mom));
    CUDA_CHECK(cudaFree(d_min)); CUDA_CHECK(cudaFree(d_max)); CUDA_CHECK(cudaFree(d_out));
    return 0;
}
