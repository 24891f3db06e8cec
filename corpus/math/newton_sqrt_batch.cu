// newton_sqrt_batch.cu
// Batched reciprocal square root / square root via Newton-Raphson refinement.
// The kernel is templated on the floating point type and is instantiated for
// float and double. A bit-level initial guess ("magic constant") is refined
// for a fixed number of iterations and compared against the library sqrt.

#include "math_common.cuh"
#include <cmath>
#include <vector>

constexpr int kBlockSize = 256;

// ---- type-specific initial guesses -------------------------------------------
__device__ __forceinline__ float rsqrt_initial_guess(float x) {
    int i = __float_as_int(x);
    i = 0x5f3759df - (i >> 1);
    return __int_as_float(i);
}

__device__ __forceinline__ double rsqrt_initial_guess(double x) {
    long long i = __double_as_longlong(x);
    i = 0x5fe6eb50c7b537a9LL - (i >> 1);
    return __longlong_as_double(i);
}

// One Newton step for y = 1/sqrt(x):  y <- y * (1.5 - 0.5 * x * y * y)
template <typename T>
__device__ __forceinline__ T newton_rsqrt_step(T x, T y) {
    const T half = static_cast<T>(0.5);
    const T three_halves = static_cast<T>(1.5);
    return y * (three_halves - half * x * y * y);
}

template <typename T>
__device__ __forceinline__ T reference_sqrt(T x);
template <>
__device__ __forceinline__ float reference_sqrt<float>(float x) { return sqrtf(x); }
template <>
__device__ __forceinline__ double reference_sqrt<double>(double x) { return sqrt(x); }

// Computes sqrt(x) for every element with a grid-stride loop, writes the
// result and accumulates (a) a per-block partial sum and (b) the maximum
// relative error against the reference implementation.
template <typename T, int ITERS>
__global__ void newton_sqrt_kernel(const T* __restrict__ in, T* __restrict__ out,
                                   T* __restrict__ block_sums,
                                   unsigned int* __restrict__ max_rel_err_bits, int n) {
    __shared__ T s_sum[kBlockSize];
    T local_sum = static_cast<T>(0);
    float local_err = 0.0f;

    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < n;
         idx += blockDim.x * gridDim.x) {
        T x = in[idx];
        T y = rsqrt_initial_guess(x);
#pragma unroll
        for (int it = 0; it < ITERS; ++it) y = newton_rsqrt_step(x, y);
        T s = x * y;
        out[idx] = s;
        local_sum += s;

        T ref = reference_sqrt(x);
        float rel = static_cast<float>(fabs((double)(s - ref)) / (double)ref);
        local_err = fmaxf(local_err, rel);
    }

    // Block-level tree reduction of the partial sums (deterministic order).
    s_sum[threadIdx.x] = local_sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s_sum[threadIdx.x] += s_sum[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = s_sum[0];

    atomicMax(max_rel_err_bits, ordered_bits(local_err));
}

template <typename T, int ITERS>
static void run_case(const char* label, const std::vector<float>& src) {
    const int n = static_cast<int>(src.size());
    const int grid = 64;
    std::vector<T> h_in(n), h_out(n), h_sums(grid);
    for (int i = 0; i < n; ++i) h_in[i] = static_cast<T>(src[i]);

    T *d_in, *d_out, *d_sums;
    unsigned int* d_err;
    CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&d_sums, grid * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&d_err, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(d_in, h_in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_err, 0, sizeof(unsigned int)));

    newton_sqrt_kernel<T, ITERS><<<grid, kBlockSize>>>(d_in, d_out, d_sums, d_err, n);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());

    unsigned int err_bits = 0;
    CUDA_CHECK(cudaMemcpy(h_out.data(), d_out, n * sizeof(T), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_sums.data(), d_sums, grid * sizeof(T), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&err_bits, d_err, sizeof(unsigned int), cudaMemcpyDeviceToHost));

    double total = 0.0;
    for (int b = 0; b < grid; ++b) total += static_cast<double>(h_sums[b]);
    double host_total = 0.0;
    for (int i = 0; i < n; ++i) host_total += std::sqrt(static_cast<double>(h_in[i]));

    printf("[%s] iters=%d sum=%.4f host_sum=%.4f max_rel_err=%.3e\n", label, ITERS,
           total, host_total, (double)ordered_to_float(err_bits));
    printf("[%s] sqrt(%.4f)=%.6f sqrt(%.4f)=%.6f\n", label, (double)h_in[0],
           (double)h_out[0], (double)h_in[n - 1], (double)h_out[n - 1]);

    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_sums));
    CUDA_CHECK(cudaFree(d_err));
}

int main() {
    const int n = 1 << 18;
    HostLcg rng(2024);
    std::vector<float> src(n);
    for (int i = 0; i < n; ++i) src[i] = rng.uniform(0.01f, 1000.0f);

    run_case<float, 3>("float", src);
    run_case<double, 5>("double", src);
    return 0;
}
