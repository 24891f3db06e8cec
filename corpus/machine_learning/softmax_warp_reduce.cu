// softmax_warp_reduce.cu
// Row-wise softmax + cross-entropy for a classification head, one warp per
// row. Reductions are done entirely in registers with warp shuffles:
//   - row maximum with a butterfly  __shfl_xor_sync  all-reduce
//   - row sum of exp() with a tree   __shfl_down_sync  + broadcast via __shfl_sync
//   - number of "confident" classes per row with __ballot_sync + __popc
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>

#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "%s (%d) at %s:%d\n", cudaGetErrorString(err_),   \
                    (int)err_, __FILE__, __LINE__);                           \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu
#define NUM_CLASSES 256
#define ELEMS_PER_LANE (NUM_CLASSES / WARP_SIZE)
#define WARPS_PER_BLOCK 4

__device__ __forceinline__ float warp_allreduce_max(float v)
{
#pragma unroll
    for (int mask = WARP_SIZE / 2; mask > 0; mask >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, mask));
    return v;
}

__device__ __forceinline__ float warp_reduce_sum(float v)
{
#pragma unroll
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;   // valid in lane 0 only
}

// logits: [rows x NUM_CLASSES], probs: same shape, labels: [rows]
// loss[row] = -log(p[label]), confident[row] = #classes with p > threshold
__global__ void softmax_xent_kernel(const float* __restrict__ logits,
                                    const int* __restrict__ labels,
                                    float* __restrict__ probs,
                                    float* __restrict__ loss,
                                    int* __restrict__ confident,
                                    int rows, float threshold)
{
    const int lane = threadIdx.x % WARP_SIZE;
    const int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP_SIZE;
    if (row >= rows) return;     // whole warp exits together

    const float* in = logits + (size_t)row * NUM_CLASSES;
    float v[ELEMS_PER_LANE];
    float localMax = -INFINITY;
#pragma unroll
    for (int i = 0; i < ELEMS_PER_LANE; ++i) {
        v[i] = in[i * WARP_SIZE + lane];          // coalesced: lane-contiguous
        localMax = fmaxf(localMax, v[i]);
    }
    const float rowMax = warp_allreduce_max(localMax);

    float localSum = 0.0f;
#pragma unroll
    for (int i = 0; i < ELEMS_PER_LANE; ++i) {
        v[i] = __expf(v[i] - rowMax);
        localSum += v[i];
    }
    float rowSum = warp_reduce_sum(localSum);
    rowSum = __shfl_sync(FULL_MASK, rowSum, 0);   // broadcast lane 0's total
    const float inv = 1.0f / rowSum;

    float* out = probs + (size_t)row * NUM_CLASSES;
    const int label = labels[row];
    int count = 0;
#pragma unroll
    for (int i = 0; i < ELEMS_PER_LANE; ++i) {
        const float p = v[i] * inv;
        out[i * WARP_SIZE + lane] = p;
        const unsigned int votes = __ballot_sync(FULL_MASK, p > threshold);
        count += __popc(votes);
        if (i * WARP_SIZE + lane == label)
            loss[row] = -logf(fmaxf(p, 1e-30f));
    }
    if (lane == 0) confident[row] = count;
}

static uint32_t g_seed = 0x9E3779B9u;
static inline float lcg_uniform()
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 16777216.0f;
}

int main()
{
    const int rows = 4096;
    const float threshold = 0.02f;
    const size_t n = (size_t)rows * NUM_CLASSES;

    // Logits: noise plus a boosted "true" class so the loss is meaningful
    std::vector<float> h_logits(n);
    std::vector<int> h_labels(rows);
    for (int r = 0; r < rows; ++r) {
        h_labels[r] = (int)(lcg_uniform() * NUM_CLASSES) % NUM_CLASSES;
        for (int c = 0; c < NUM_CLASSES; ++c)
            h_logits[(size_t)r * NUM_CLASSES + c] = 4.0f * (lcg_uniform() - 0.5f);
        h_logits[(size_t)r * NUM_CLASSES + h_labels[r]] += 3.0f * lcg_uniform();
    }

    float *d_logits, *d_probs, *d_loss;
    int *d_labels, *d_conf;
    CUDA_CHECK(cudaMalloc(&d_logits, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_probs, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_loss, rows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_labels, rows * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_conf, rows * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_logits, h_logits.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_labels, h_labels.data(), rows * sizeof(int), cudaMemcpyHostToDevice));

    const int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    softmax_xent_kernel<<<blocks, WARPS_PER_BLOCK * WARP_SIZE>>>(d_logits, d_labels, d_probs,
                                                                 d_loss, d_conf, rows, threshold);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<float> h_probs(n), h_loss(rows);
    std::vector<int> h_conf(rows);
    CUDA_CHECK(cudaMemcpy(h_probs.data(), d_probs, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_loss.data(), d_loss, rows * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_conf.data(), d_conf, rows * sizeof(int), cudaMemcpyDeviceToHost));

    // Check that each row sums to one and compute accuracy (argmax == label)
    double meanLoss = 0.0, worstRowErr = 0.0;
    long long confTotal = 0;
    int correct = 0;
    for (int r = 0; r < rows; ++r) {
        const float* p = &h_probs[(size_t)r * NUM_CLASSES];
        double s = 0.0;
        int arg = 0;
        for (int c = 0; c < NUM_CLASSES; ++c) { s += p[c]; if (p[c] > p[arg]) arg = c; }
        worstRowErr = fmax(worstRowErr, fabs(s - 1.0));
        correct += (arg == h_labels[r]);
        meanLoss += h_loss[r];
        confTotal += h_conf[r];
    }
    meanLoss /= rows;

    printf("rows = %d, classes = %d\n", rows, NUM_CLASSES);
    printf("mean cross-entropy = %.4f\n", meanLoss);
    printf("top-1 accuracy = %.2f%%\n", 100.0 * correct / rows);
    printf("avg classes with p > %.2f = %.4f\n", threshold, (double)confTotal / rows);
    printf("p[0][label] = %.6f, loss[rows-1] = %.4f\n",
           h_probs[h_labels[0]], h_loss[rows - 1]);
    printf("max |rowsum - 1| = %.2e -> %s\n", worstRowErr, worstRowErr < 1e-4 ? "PASS" : "FAIL");

    CUDA_CHECK(cudaFree(d_logits)); CUDA_CHECK(cudaFree(d_probs)); CUDA_CHECK(cudaFree(d_loss));
    CUDA_CHECK(cudaFree(d_labels)); CUDA_CHECK(cudaFree(d_conf));
    return worstRowErr < 1e-4 ? 0 : 1;
}
