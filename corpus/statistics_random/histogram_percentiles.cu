// histogram_percentiles.cu
// Generates normally distributed samples on the device, builds a fixed-range
// histogram using per-block privatized bins in dynamic shared memory, scans
// the histogram into a CDF and finally estimates several quantiles by
// binary-searching the CDF and interpolating inside the selected bin.
//
// Kernels:
//   generate_normals   - grid-stride Box-Muller generator (xorshift128 state)
//   histogram_shared   - extern __shared__ bins, shared + global atomicAdd
//   inclusive_scan     - single-block Hillis-Steele scan of the bin counts
//   quantile_lookup    - binary search of the CDF for each requested quantile

#include "statistics_random_common.cuh"
#include <cmath>
#include <vector>

#define NUM_BINS 512
#define NUM_QUANTILES 7

__constant__ float c_quantiles[NUM_QUANTILES];

__global__ void generate_normals(float* out, int n, uint32_t seed, float mu, float sigma) {
    DevRng rng;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    rng_init(rng, seed, tid);
    // Each iteration writes a pair of samples.
    for (int i = 2 * tid; i < n; i += 2 * gridDim.x * blockDim.x) {
        float2 z = rng_normal2(rng);
        out[i] = fmaf(sigma, z.x, mu);
        if (i + 1 < n) out[i + 1] = fmaf(sigma, z.y, mu);
    }
}

__device__ __forceinline__ int value_to_bin(float v, float lo, float inv_width) {
    int b = __float2int_rd((v - lo) * inv_width);
    return min(max(b, 0), NUM_BINS - 1);  // clamp tails into the edge bins
}

__global__ void histogram_shared(const float* __restrict__ data, int n, float lo, float hi,
                                 unsigned int* __restrict__ bins) {
    extern __shared__ unsigned int s_bins[];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) s_bins[b] = 0;
    __syncthreads();

    const float inv_width = NUM_BINS / (hi - lo);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&s_bins[value_to_bin(data[i], lo, inv_width)], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (s_bins[b]) atomicAdd(&bins[b], s_bins[b]);
}

// One block of NUM_BINS threads; double-buffered Hillis-Steele scan.
__global__ void inclusive_scan(const unsigned int* __restrict__ bins, unsigned int* __restrict__ cdf) {
    __shared__ unsigned int buf[2][NUM_BINS];
    int cur = 0;
    buf[cur][threadIdx.x] = bins[threadIdx.x];
    __syncthreads();
    for (int offset = 1; offset < NUM_BINS; offset <<= 1) {
        unsigned int v = buf[cur][threadIdx.x];
        if (threadIdx.x >= offset) v += buf[cur][threadIdx.x - offset];
        buf[cur ^ 1][threadIdx.x] = v;
        cur ^= 1;
        __syncthreads();
    }
    cdf[threadIdx.x] = buf[cur][threadIdx.x];
}

__global__ void quantile_lookup(const unsigned int* __restrict__ cdf, const unsigned int* __restrict__ bins,
                                float lo, float hi, float* out) {
    int q = threadIdx.x;
    if (q >= NUM_QUANTILES) return;
    const unsigned int total = cdf[NUM_BINS - 1];
    const float target = c_quantiles[q] * total;
    // First bin whose cumulative count reaches the target.
    int left = 0, right = NUM_BINS - 1;
    while (left < right) {
        int mid = (left + right) >> 1;
        if ((float)cdf[mid] < target) left = mid + 1; else right = mid;
    }
    const float width = (hi - lo) / NUM_BINS;
    const float before = (left > 0) ? (float)cdf[left - 1] : 0.0f;
    const float frac = bins[left] ? (target - before) / (float)bins[left] : 0.5f;
    out[q] = lo + width * (left + frac);
}

int main() {
    const int n = 1 << 21;
    const float mu = 10.0f, sigma = 2.0f, lo = 0.0f, hi = 20.0f;
    const float h_q[NUM_QUANTILES] = {0.01f, 0.05f, 0.25f, 0.5f, 0.75f, 0.95f, 0.99f};
    const double z_ref[NUM_QUANTILES] = {-2.326348, -1.644854, -0.674490, 0.0,
                                         0.674490, 1.644854, 2.326348};
    CUDA_CHECK(cudaMemcpyToSymbol(c_quantiles, h_q, sizeof(h_q)));

    float *d_data, *d_out;
    unsigned int *d_bins, *d_cdf;
    CUDA_CHECK(cudaMalloc(&d_data, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, NUM_QUANTILES * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_bins, NUM_BINS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_cdf, NUM_BINS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemset(d_bins, 0, NUM_BINS * sizeof(unsigned int)));

    generate_normals<<<256, 256>>>(d_data, n, 31337u, mu, sigma);
    CUDA_CHECK(cudaGetLastError());
    histogram_shared<<<96, 256, NUM_BINS * sizeof(unsigned int)>>>(d_data, n, lo, hi, d_bins);
    CUDA_CHECK(cudaGetLastError());
    inclusive_scan<<<1, NUM_BINS>>>(d_bins, d_cdf);
    CUDA_CHECK(cudaGetLastError());
    quantile_lookup<<<1, 32>>>(d_cdf, d_bins, lo, hi, d_out);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<unsigned int> h_bins(NUM_BINS), h_cdf(NUM_BINS);
    float h_out[NUM_QUANTILES];
    CUDA_CHECK(cudaMemcpy(h_bins.data(), d_bins, NUM_BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_cdf.data(), d_cdf, NUM_BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_out, d_out, sizeof(h_out), cudaMemcpyDeviceToHost));

    unsigned int peak_bin = 0;
    for (int b = 1; b < NUM_BINS; ++b) if (h_bins[b] > h_bins[peak_bin]) peak_bin = b;
    printf("total=%u (expected %d) peak_bin=%u count=%u\n", h_cdf[NUM_BINS - 1], n, peak_bin,
           h_bins[peak_bin]);
    for (int q = 0; q < NUM_QUANTILES; ++q)
        printf("q%.2f: est=%.4f ref=%.4f\n", h_q[q], h_out[q], mu + sigma * z_ref[q]);

    CUDA_CHECK(cudaFree(d_data)); CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_bins)); CUDA_CHECK(cudaFree(d_cdf));
    return h_cdf[NUM_BINS - 1] == (unsigned int)n ? 0 : 1;
}
