// stream_pipeline_overlap.cu
// Splits a large array into chunks and pipelines them over several streams:
// each chunk is copied host->device asynchronously from pinned memory,
// transformed by a kernel and copied back, all on the same stream. A plain
// synchronous pass over the same data is used as the reference.

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK_CUDA(x)                                                           \
    do {                                                                        \
        cudaError_t status_ = (x);                                              \
        if (status_ != cudaSuccess) {                                           \
            fprintf(stderr, "%s:%d: %s (%s)\n", __FILE__, __LINE__,             \
                    cudaGetErrorString(status_), #x);                           \
            exit(EXIT_FAILURE);                                                 \
        }                                                                       \
    } while (0)

constexpr int kStreams = 4;
constexpr int kChunks = 16;

static uint32_t g_lcg = 123456789u;
static inline float lcg_float() {
    g_lcg = g_lcg * 1103515245u + 12345u;
    return (float)((g_lcg >> 9) & 0x3FFFFF) / (float)0x400000;   // [0,1)
}

// Smooth, moderately expensive point-wise transform so the kernel has real work.
__device__ __forceinline__ float transform(float v, int iters) {
    float acc = v;
    for (int i = 0; i < iters; ++i) acc = fmaf(acc, 0.999f, 0.5f * sinf(acc));
    return acc;
}

__global__ void transform_kernel(const float* __restrict__ in, float* __restrict__ out,
                                 int n, int iters) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = transform(in[i], iters);
}

int main() {
    const int n = 1 << 21;                    // 2M floats = 8 MB per buffer
    const int chunk = n / kChunks;
    const int iters = 8;
    const size_t bytes = (size_t)n * sizeof(float);

    float *hIn, *hOut, *hRef;
    CHECK_CUDA(cudaMallocHost(&hIn, bytes));
    CHECK_CUDA(cudaMallocHost(&hOut, bytes));
    hRef = (float*)malloc(bytes);
    for (int i = 0; i < n; ++i) hIn[i] = lcg_float() * 4.0f - 2.0f;

    float *dIn, *dOut;
    CHECK_CUDA(cudaMalloc(&dIn, bytes));
    CHECK_CUDA(cudaMalloc(&dOut, bytes));

    // --- Reference: one synchronous copy / kernel / copy pass ------------------
    CHECK_CUDA(cudaMemcpy(dIn, hIn, bytes, cudaMemcpyHostToDevice));
    transform_kernel<<<256, 256>>>(dIn, dOut, n, iters);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(hRef, dOut, bytes, cudaMemcpyDeviceToHost));

    // --- Pipelined version -----------------------------------------------------
    CHECK_CUDA(cudaMemset(dOut, 0, bytes));
    // Non-blocking streams do not synchronise with the legacy default stream,
    // so make sure the memset has finished before the pipeline starts.
    CHECK_CUDA(cudaDeviceSynchronize());
    cudaStream_t streams[kStreams];
    cudaEvent_t done[kStreams];
    for (int s = 0; s < kStreams; ++s) {
        CHECK_CUDA(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        CHECK_CUDA(cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming));
    }

    for (int c = 0; c < kChunks; ++c) {
        cudaStream_t st = streams[c % kStreams];
        size_t off = (size_t)c * chunk;
        CHECK_CUDA(cudaMemcpyAsync(dIn + off, hIn + off, chunk * sizeof(float),
                                   cudaMemcpyHostToDevice, st));
        transform_kernel<<<(chunk + 255) / 256, 256, 0, st>>>(dIn + off, dOut + off, chunk, iters);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpyAsync(hOut + off, dOut + off, chunk * sizeof(float),
                                   cudaMemcpyDeviceToHost, st));
    }
    for (int s = 0; s < kStreams; ++s) CHECK_CUDA(cudaEventRecord(done[s], streams[s]));
    for (int s = 0; s < kStreams; ++s) CHECK_CUDA(cudaEventSynchronize(done[s]));

    // Same kernel, same inputs: results must be bit-identical.
    bool identical = memcmp(hOut, hRef, bytes) == 0;
    double sum = 0.0;
    float mn = hOut[0], mx = hOut[0];
    for (int i = 0; i < n; ++i) {
        sum += hOut[i];
        mn = hOut[i] < mn ? hOut[i] : mn;
        mx = hOut[i] > mx ? hOut[i] : mx;
    }
    printf("pipeline: n=%d chunks=%d streams=%d\n", n, kChunks, kStreams);
    printf("mean=%.4f min=%.4f max=%.4f\n", sum / n, mn, mx);
    printf("pipelined result identical to synchronous: %s\n", identical ? "yes" : "no");

    for (int s = 0; s < kStreams; ++s) {
        CHECK_CUDA(cudaEventDestroy(done[s]));
        CHECK_CUDA(cudaStreamDestroy(streams[s]));
    }
    CHECK_CUDA(cudaFree(dIn));
    CHECK_CUDA(cudaFree(dOut));
    CHECK_CUDA(cudaFreeHost(hIn));
    CHECK_CUDA(cudaFreeHost(hOut));
    free(hRef);
    return identical ? 0 : 1;
}
