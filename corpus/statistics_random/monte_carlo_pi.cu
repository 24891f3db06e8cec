// monte_carlo_pi.cu
// Monte Carlo estimators on the GPU:
//   1) pi from the fraction of random points inside the unit quarter circle,
//   2) the integral of exp(-x^2) over [0, 2] (Gaussian tail integral),
//   3) E[max(Z - K, 0)] for a standard normal Z (a toy option payoff).
// Each thread owns an xorshift128 generator; per-block counts are reduced in
// shared memory and merged with 64-bit atomicAdd. Floating point sums are
// written per block and combined on the host in a fixed order so the output
// is reproducible from run to run.

#include "statistics_random_common.cuh"
#include <cmath>
#include <vector>

#define BLOCK 256
#define SAMPLES_PER_THREAD 512

__device__ __forceinline__ unsigned int block_sum_u32(unsigned int v, unsigned int* smem) {
    smem[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
        __syncthreads();
    }
    unsigned int total = smem[0];
    __syncthreads();  // smem may be reused by the caller
    return total;
}

__device__ __forceinline__ float block_sum_f32(float v, float* smem) {
    smem[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
        __syncthreads();
    }
    float total = smem[0];
    __syncthreads();
    return total;
}

__global__ void pi_kernel(uint32_t seed, unsigned long long* hits) {
    __shared__ unsigned int s_counts[BLOCK];
    DevRng rng;
    rng_init(rng, seed, blockIdx.x * blockDim.x + threadIdx.x);

    unsigned int inside = 0;
    for (int i = 0; i < SAMPLES_PER_THREAD; ++i) {
        float x = rng_uniform(rng);
        float y = rng_uniform(rng);
        inside += (x * x + y * y <= 1.0f) ? 1u : 0u;
    }
    unsigned int block_total = block_sum_u32(inside, s_counts);
    if (threadIdx.x == 0) atomicAdd(hits, (unsigned long long)block_total);
}

__global__ void integral_kernel(uint32_t seed, float strike, float* block_gauss,
                                float* block_payoff) {
    __shared__ float s_buf[BLOCK];
    DevRng rng;
    rng_init(rng, seed, blockIdx.x * blockDim.x + threadIdx.x);

    float acc_gauss = 0.0f, acc_payoff = 0.0f;
    for (int i = 0; i < SAMPLES_PER_THREAD; i += 2) {
        // Integral of exp(-x^2) on [0,2]: 2 * E[exp(-U^2)], U ~ U(0,2)
        float u0 = 2.0f * rng_uniform(rng);
        float u1 = 2.0f * rng_uniform(rng);
        acc_gauss += __expf(-u0 * u0) + __expf(-u1 * u1);

        float2 z = rng_normal2(rng);
        acc_payoff += fmaxf(z.x - strike, 0.0f) + fmaxf(z.y - strike, 0.0f);
    }
    float g = block_sum_f32(acc_gauss, s_buf);
    float p = block_sum_f32(acc_payoff, s_buf);
    if (threadIdx.x == 0) {
        block_gauss[blockIdx.x] = g;
        block_payoff[blockIdx.x] = p;
    }
}

int main() {
    const int blocks = 120;
    const uint32_t seed = 20240611u;
    const float strike = 0.5f;
    const double total_samples = (double)blocks * BLOCK * SAMPLES_PER_THREAD;

    unsigned long long* d_hits;
    float *d_gauss, *d_payoff;
    CUDA_CHECK(cudaMalloc(&d_hits, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&d_gauss, blocks * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_payoff, blocks * sizeof(float)));
    CUDA_CHECK(cudaMemset(d_hits, 0, sizeof(unsigned long long)));

    pi_kernel<<<blocks, BLOCK>>>(seed, d_hits);
    CUDA_CHECK(cudaGetLastError());
    integral_kernel<<<blocks, BLOCK>>>(seed + 1u, strike, d_gauss, d_payoff);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    unsigned long long hits = 0;
    std::vector<float> h_gauss(blocks), h_payoff(blocks);
    CUDA_CHECK(cudaMemcpy(&hits, d_hits, sizeof(hits), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_gauss.data(), d_gauss, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_payoff.data(), d_payoff, blocks * sizeof(float), cudaMemcpyDeviceToHost));

    double gauss_sum = 0.0, payoff_sum = 0.0;
    for (int b = 0; b < blocks; ++b) {
        gauss_sum += h_gauss[b];
        payoff_sum += h_payoff[b];
    }
    const double pi_est = 4.0 * (double)hits / total_samples;
    const double gauss_est = 2.0 * gauss_sum / total_samples;
    const double payoff_est = payoff_sum / total_samples;

    // Closed forms for comparison.
    const double gauss_ref = 0.5 * std::sqrt(3.14159265358979) * std::erf(2.0);
    const double phi = std::exp(-0.5 * strike * strike) / std::sqrt(2.0 * 3.14159265358979);
    const double payoff_ref = phi - strike * 0.5 * std::erfc(strike / std::sqrt(2.0));

    printf("samples=%.0f hits=%llu\n", total_samples, hits);
    printf("pi ~ %.5f (err %.5f)\n", pi_est, std::fabs(pi_est - 3.14159265358979));
    printf("int_0^2 exp(-x^2) ~ %.5f (ref %.5f)\n", gauss_est, gauss_ref);
    printf("E[max(Z-%.2f,0)] ~ %.5f (ref %.5f)\n", strike, payoff_est, payoff_ref);

    CUDA_CHECK(cudaFree(d_hits));
    CUDA_CHECK(cudaFree(d_gauss));
    CUDA_CHECK(cudaFree(d_payoff));
    return std::fabs(pi_est - 3.14159265358979) < 0.01 ? 0 : 1;
}
