// atomic_minmax_histogram.cu
// Global reductions finished with atomics:
//   * block_minmax<T>   : shared-memory tree reduction per block, then one
//                         atomic per block. Instantiated for int and float;
//                         float max/min are built from atomicCAS because
//                         there is no native float atomicMax.
//   * range_histogram   : privatised shared-memory histogram over [min, max]
//                         using the range found by the first pass.
//   * int_sum           : 64-bit atomicAdd of per-block integer sums.

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_TRY(x)                                                               \
    do {                                                                          \
        cudaError_t st = (x);                                                     \
        if (st != cudaSuccess) {                                                  \
            fprintf(stderr, "%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(st), \
                    __FILE__, __LINE__);                                          \
            exit(2);                                                              \
        }                                                                         \
    } while (0)

constexpr int BLOCK = 256;
constexpr int BINS = 64;

// ---- type traits and atomic helpers -------------------------------------------
template <typename T> struct Limits;
template <> struct Limits<int>   { __host__ __device__ static int lowest() { return -2147483647 - 1; }
                                   __host__ __device__ static int highest() { return 2147483647; } };
template <> struct Limits<float> { __host__ __device__ static float lowest() { return -3.402823466e38f; }
                                   __host__ __device__ static float highest() { return 3.402823466e38f; } };

__device__ void atomic_max_t(int* addr, int v) { atomicMax(addr, v); }
__device__ void atomic_min_t(int* addr, int v) { atomicMin(addr, v); }

// Compare-and-swap loop on the float's bit pattern.
__device__ void atomic_max_t(float* addr, float v) {
    int* ia = reinterpret_cast<int*>(addr);
    int old = *ia, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v) return;
        old = atomicCAS(ia, assumed, __float_as_int(v));
    } while (old != assumed);
}

__device__ void atomic_min_t(float* addr, float v) {
    int* ia = reinterpret_cast<int*>(addr);
    int old = *ia, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) <= v) return;
        old = atomicCAS(ia, assumed, __float_as_int(v));
    } while (old != assumed);
}

// ---- kernels --------------------------------------------------------------------
template <typename T>
__global__ void block_minmax(const T* __restrict__ x, int n, T* gMin, T* gMax) {
    __shared__ T sMin[BLOCK];
    __shared__ T sMax[BLOCK];
    T lo = Limits<T>::highest(), hi = Limits<T>::lowest();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        T v = x[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    sMin[threadIdx.x] = lo;
    sMax[threadIdx.x] = hi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            sMin[threadIdx.x] = min(sMin[threadIdx.x], sMin[threadIdx.x + s]);
            sMax[threadIdx.x] = max(sMax[threadIdx.x], sMax[threadIdx.x + s]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomic_min_t(gMin, sMin[0]);
        atomic_max_t(gMax, sMax[0]);
    }
}

__device__ __forceinline__ int bin_of(float v, float lo, float hi) {
    int b = (int)((v - lo) / (hi - lo) * BINS);
    return b < 0 ? 0 : (b >= BINS ? BINS - 1 : b);
}

__global__ void range_histogram(const float* __restrict__ x, int n, const float* gMin,
                                const float* gMax, unsigned int* __restrict__ hist) {
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    const float lo = *gMin, hi = *gMax;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[bin_of(x[i], lo, hi)], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

__global__ void int_sum(const int* __restrict__ x, int n, unsigned long long* total) {
    __shared__ long long partial[BLOCK];
    long long s = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, (unsigned long long)partial[0]);   // two's complement wrap
}

int main() {
    const int n = 1 << 20, blocks = 128;
    std::vector<float> hf(n);
    std::vector<int> hi(n);
    uint64_t s = 0x853C49E6748FEA9BULL;
    for (int i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t)(s >> 32);
        // sum of two uniforms -> triangular distribution on [-1, 1)
        hf[i] = ((r & 0xFFFF) + (r >> 16)) / 65536.0f - 1.0f;
        hi[i] = (int)(r % 2000001u) - 1000000;
    }

    float *dF, *dFMin, *dFMax;
    int *dI, *dIMin, *dIMax;
    unsigned int* dHist;
    unsigned long long* dSum;
    CUDA_TRY(cudaMalloc(&dF, n * sizeof(float)));
    CUDA_TRY(cudaMalloc(&dI, n * sizeof(int)));
    CUDA_TRY(cudaMalloc(&dFMin, sizeof(float)));  CUDA_TRY(cudaMalloc(&dFMax, sizeof(float)));
    CUDA_TRY(cudaMalloc(&dIMin, sizeof(int)));    CUDA_TRY(cudaMalloc(&dIMax, sizeof(int)));
    CUDA_TRY(cudaMalloc(&dHist, BINS * sizeof(unsigned int)));
    CUDA_TRY(cudaMalloc(&dSum, sizeof(unsigned long long)));
    CUDA_TRY(cudaMemcpy(dF, hf.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(dI, hi.data(), n * sizeof(int), cudaMemcpyHostToDevice));

    float fInit[2] = {Limits<float>::highest(), Limits<float>::lowest()};
    int iInit[2] = {Limits<int>::highest(), Limits<int>::lowest()};
    CUDA_TRY(cudaMemcpy(dFMin, &fInit[0], sizeof(float), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(dFMax, &fInit[1], sizeof(float), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(dIMin, &iInit[0], sizeof(int), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(dIMax, &iInit[1], sizeof(int), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemset(dHist, 0, BINS * sizeof(unsigned int)));
    CUDA_TRY(cudaMemset(dSum, 0, sizeof(unsigned long long)));

    block_minmax<float><<<blocks, BLOCK>>>(dF, n, dFMin, dFMax);
    block_minmax<int><<<blocks, BLOCK>>>(dI, n, dIMin, dIMax);
    range_histogram<<<blocks, BLOCK>>>(dF, n, dFMin, dFMax, dHist);
    int_sum<<<blocks, BLOCK>>>(dI, n, dSum);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaDeviceSynchronize());

    float fMin, fMax; int iMin, iMax; unsigned long long sumBits;
    std::vector<unsigned int> hist(BINS);
    CUDA_TRY(cudaMemcpy(&fMin, dFMin, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(&fMax, dFMax, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(&iMin, dIMin, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(&iMax, dIMax, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(&sumBits, dSum, sizeof(sumBits), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(hist.data(), dHist, BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));

    // Host reference
    float rfMin = hf[0], rfMax = hf[0];
    int riMin = hi[0], riMax = hi[0];
    long long rSum = 0;
    for (int i = 0; i < n; ++i) {
        rfMin = hf[i] < rfMin ? hf[i] : rfMin; rfMax = hf[i] > rfMax ? hf[i] : rfMax;
        riMin = hi[i] < riMin ? hi[i] : riMin; riMax = hi[i] > riMax ? hi[i] : riMax;
        rSum += hi[i];
    }
    unsigned int histTotal = 0, peak = 0;
    int peakBin = 0;
    for (int b = 0; b < BINS; ++b) {
        histTotal += hist[b];
        if (hist[b] > peak) { peak = hist[b]; peakBin = b; }
    }
    long long gSum = (long long)sumBits;

    bool ok = fMin == rfMin && fMax == rfMax && iMin == riMin && iMax == riMax &&
              gSum == rSum && histTotal == (unsigned int)n;
    printf("float: min=%.6f max=%.6f | int: min=%d max=%d sum=%lld\n", fMin, fMax, iMin, iMax, gSum);
    printf("histogram: total=%u peak bin=%d count=%u first=%u last=%u\n", histTotal, peakBin,
           peak, hist[0], hist[BINS - 1]);
    printf("atomic reductions: %s\n", ok ? "PASS" : "FAIL");

    void* bufs[] = {dF, dI, dFMin, dFMax, dIMin, dIMax, dHist, dSum};
    for (void* b : bufs) CUDA_TRY(cudaFree(b));
    return ok ? 0 : 1;
}
