// warp_shuffle_reduce.cu
// Register-only reductions built on warp shuffle / vote intrinsics:
//   * warp_sum      : __shfl_down_sync tree (lane 0 ends up with the sum)
//   * warp_max      : __shfl_xor_sync butterfly (every lane gets the max)
//   * __ballot_sync : counts lanes whose value passes a threshold
// A block reduces its warps' results through a tiny shared array; block
// partials are written out and combined on the host in a fixed order.

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                        \
    do {                                                                        \
        cudaError_t err = (call);                                               \
        if (err != cudaSuccess) {                                               \
            fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__,    \
                    cudaGetErrorString(err));                                   \
            exit(EXIT_FAILURE);                                                 \
        }                                                                       \
    } while (0)

constexpr unsigned FULL_MASK = 0xffffffffu;
constexpr int WARP = 32;
constexpr int THREADS = 256;

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = WARP / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int mask = WARP / 2; mask > 0; mask >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, mask));
    return v;
}

// Per-block sum, max and count of elements above `threshold`.
__global__ void reduce_stats(const float* __restrict__ x, int n, float threshold,
                             float* __restrict__ blockSum, float* __restrict__ blockMax,
                             unsigned int* __restrict__ aboveCount) {
    __shared__ float sSum[THREADS / WARP];
    __shared__ float sMax[THREADS / WARP];

    const int lane = threadIdx.x % WARP;
    const int warpId = threadIdx.x / WARP;
    float sum = 0.0f, mx = -INFINITY;
    unsigned int above = 0;

    // Grid-stride loop; the trip count is warp-uniform so the full mask is valid.
    const int stride = gridDim.x * blockDim.x;
    const int base0 = blockIdx.x * blockDim.x;
    for (int base = base0; base < n; base += stride) {
        int i = base + threadIdx.x;
        float v = (i < n) ? x[i] : 0.0f;
        bool valid = i < n;
        sum += v;
        if (valid) mx = fmaxf(mx, v);
        unsigned int vote = __ballot_sync(FULL_MASK, valid && v > threshold);
        if (lane == 0) above += __popc(vote);
    }

    sum = warp_sum(sum);
    mx = warp_max(mx);
    if (lane == 0) {
        sSum[warpId] = sum;
        sMax[warpId] = mx;
        atomicAdd(aboveCount, above);
    }
    __syncthreads();

    if (warpId == 0) {
        sum = (lane < THREADS / WARP) ? sSum[lane] : 0.0f;
        mx = (lane < THREADS / WARP) ? sMax[lane] : -INFINITY;
        sum = warp_sum(sum);
        mx = warp_max(mx);
        if (lane == 0) {
            blockSum[blockIdx.x] = sum;
            blockMax[blockIdx.x] = mx;
        }
    }
}

int main() {
    const int n = 3000017;
    const int blocks = 160;
    const float threshold = 0.9f;

    std::vector<float> h(n);
    uint64_t s = 88172645463325252ULL;
    for (int i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        h[i] = (float)((s >> 40) & 0xFFFFFF) / 16777216.0f;    // [0,1)
    }
    h[n / 3] = 7.5f;    // a known maximum

    float *dX, *dSum, *dMax;
    unsigned int* dCount;
    CUDA_CHECK(cudaMalloc(&dX, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dSum, blocks * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dMax, blocks * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dCount, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(dX, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dCount, 0, sizeof(unsigned int)));

    reduce_stats<<<blocks, THREADS>>>(dX, n, threshold, dSum, dMax, dCount);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<float> pSum(blocks), pMax(blocks);
    unsigned int count = 0;
    CUDA_CHECK(cudaMemcpy(pSum.data(), dSum, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(pMax.data(), dMax, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&count, dCount, sizeof(unsigned int), cudaMemcpyDeviceToHost));

    double gpuSum = 0.0;
    float gpuMax = -INFINITY;
    for (int b = 0; b < blocks; ++b) { gpuSum += pSum[b]; gpuMax = fmaxf(gpuMax, pMax[b]); }

    double refSum = 0.0;
    float refMax = -INFINITY;
    unsigned int refCount = 0;
    for (int i = 0; i < n; ++i) {
        refSum += h[i];
        refMax = fmaxf(refMax, h[i]);
        refCount += h[i] > threshold;
    }

    bool ok = fabs(gpuSum - refSum) / refSum < 1e-5 && gpuMax == refMax && count == refCount;
    printf("n=%d  sum=%.2f mean=%.6f\n", n, refSum, refSum / n);
    printf("max=%.4f count(>%.2f)=%u\n", gpuMax, threshold, count);
    printf("warp shuffle reduction: %s\n", ok ? "PASS" : "FAIL");

    CUDA_CHECK(cudaFree(dX));
    CUDA_CHECK(cudaFree(dSum));
    CUDA_CHECK(cudaFree(dMax));
    CUDA_CHECK(cudaFree(dCount));
    return ok ? 0 : 1;
}
