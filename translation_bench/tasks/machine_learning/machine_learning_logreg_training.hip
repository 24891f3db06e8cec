#include "hip/hip_runtime.h"
// Full-batch gradient-descent training of an L2-regularised logistic regression on 65536 samples
// with 32 features. Each iteration: a kernel stages 256 samples per block in shared memory,
// computes predictions, the log loss and per-block gradient partials (warp-shuffle sums in a fixed
// order) and counts correct predictions with integer atomics; a second kernel sums the partials in
// block order; the host updates the weights in double precision and uploads them for the next
// launch. Finally a prediction kernel writes every sample's probability. Output: loss history,
// accuracies, checksums of the weights and the probabilities, and sampled values.
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

constexpr int N = 1 << 16, D = 32, BLOCK = 256, NB = N / BLOCK;
constexpr int NOUT = D + 2;  // D feature gradients, bias gradient, loss
constexpr int ITERS = 30;

__device__ __forceinline__ float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

__global__ void grad_partials(const float* __restrict__ X, const float* __restrict__ y,
                              const float* __restrict__ w, float* __restrict__ partial,
                              int* __restrict__ correct) {
    __shared__ float xs[BLOCK][D + 1];  // +1 pad: column reads by consecutive rows avoid bank conflicts
    __shared__ float err_s[BLOCK];
    __shared__ float loss_s[BLOCK];
    __shared__ int block_correct;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const size_t base = (size_t)blockIdx.x * BLOCK;
    if (tid == 0) block_correct = 0;
    for (int k = tid; k < BLOCK * D; k += BLOCK) xs[k / D][k % D] = X[base * D + k];
    __syncthreads();

    float z = w[D];
    for (int j = 0; j < D; ++j) z += w[j] * xs[tid][j];
    const float p = sigmoid(z);
    const float yi = y[base + tid];
    const float pc = fminf(fmaxf(p, 1e-7f), 1.0f - 1e-7f);
    err_s[tid] = p - yi;
    loss_s[tid] = -(yi * logf(pc) + (1.0f - yi) * logf(1.0f - pc));
    if ((p >= 0.5f) == (yi >= 0.5f)) atomicAdd(&block_correct, 1);
    __syncthreads();

    // warp `warp` produces outputs j = warp, warp + 8, ...: strided lane sums, then a shuffle tree
    for (int j = warp; j < NOUT; j += BLOCK / 32) {
        float acc = 0.0f;
        for (int s = lane; s < BLOCK; s += 32) {
            float e = err_s[s];
            acc += (j < D) ? e * xs[s][j] : (j == D ? e : loss_s[s]);
        }
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down(acc, off);
        if (lane == 0) partial[blockIdx.x * NOUT + j] = acc;
    }
    if (tid == 0) atomicAdd(correct, block_correct);
}

__global__ void sum_partials(const float* __restrict__ partial, float* __restrict__ sums) {
    const int j = threadIdx.x;
    if (j >= NOUT) return;
    float acc = 0.0f;
    for (int b = 0; b < NB; ++b) acc += partial[b * NOUT + j];  // block order: deterministic
    sums[j] = acc;
}

__global__ void predict(const float* __restrict__ X, const float* __restrict__ w, float* __restrict__ prob) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float z = w[D];
    for (int j = 0; j < D; ++j) z += w[j] * X[(size_t)i * D + j];
    prob[i] = sigmoid(z);
}

static uint64_t g_rng = 0xDA3E39CB94B95BDBull;
static double next_uniform() {  // [0, 1), 64-bit LCG
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

int main(int argc, char** argv) {
    if (argc > 1) g_rng = strtoull(argv[1], nullptr, 0);
    // synthetic data: labels from a hidden linear model plus noise
    std::vector<float> X((size_t)N * D), y(N);
    double true_w[D], true_b = 0.3;
    for (int j = 0; j < D; ++j) true_w[j] = 4.0 * next_uniform() - 2.0;
    for (int i = 0; i < N; ++i) {
        double z = true_b;
        for (int j = 0; j < D; ++j) {
            float v = (float)(2.0 * next_uniform() - 1.0);
            X[(size_t)i * D + j] = v;
            z += true_w[j] * v;
        }
        z += 3.0 * (next_uniform() - 0.5);
        y[i] = z > 0.0 ? 1.0f : 0.0f;
    }

    float *d_X, *d_y, *d_w, *d_partial, *d_sums, *d_prob;
    int* d_correct;
    CHECK(hipMalloc(&d_X, X.size() * sizeof(float)));
    CHECK(hipMalloc(&d_y, N * sizeof(float)));
    CHECK(hipMalloc(&d_w, (D + 1) * sizeof(float)));
    CHECK(hipMalloc(&d_partial, NB * NOUT * sizeof(float)));
    CHECK(hipMalloc(&d_sums, NOUT * sizeof(float)));
    CHECK(hipMalloc(&d_prob, N * sizeof(float)));
    CHECK(hipMalloc(&d_correct, sizeof(int)));
    CHECK(hipMemcpy(d_X, X.data(), X.size() * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_y, y.data(), N * sizeof(float), hipMemcpyHostToDevice));

    const double lr = 2.0, l2 = 1e-3;
    std::vector<double> w(D + 1, 0.0);
    std::vector<float> wf(D + 1), sums(NOUT);
    double loss_hist[ITERS];
    int correct_hist[ITERS];
    for (int it = 0; it < ITERS; ++it) {
        for (int j = 0; j <= D; ++j) wf[j] = (float)w[j];
        CHECK(hipMemcpy(d_w, wf.data(), (D + 1) * sizeof(float), hipMemcpyHostToDevice));
        CHECK(hipMemset(d_correct, 0, sizeof(int)));
        CHECK(hipMemset(d_sums, 0xFF, NOUT * sizeof(float)));
        grad_partials<<<NB, BLOCK>>>(d_X, d_y, d_w, d_partial, d_correct);
        CHECK(hipGetLastError());
        sum_partials<<<1, 64>>>(d_partial, d_sums);
        CHECK(hipGetLastError());
        CHECK(hipDeviceSynchronize());
        CHECK(hipMemcpy(sums.data(), d_sums, NOUT * sizeof(float), hipMemcpyDeviceToHost));
        CHECK(hipMemcpy(&correct_hist[it], d_correct, sizeof(int), hipMemcpyDeviceToHost));

        double reg = 0.0;
        for (int j = 0; j < D; ++j) reg += w[j] * w[j];
        loss_hist[it] = (double)sums[D + 1] / N + 0.5 * l2 * reg;
        for (int j = 0; j < D; ++j) w[j] -= lr * ((double)sums[j] / N + l2 * w[j]);
        w[D] -= lr * (double)sums[D] / N;
    }

    for (int j = 0; j <= D; ++j) wf[j] = (float)w[j];
    CHECK(hipMemcpy(d_w, wf.data(), (D + 1) * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_prob, 0xFF, N * sizeof(float)));  // NaN sentinel
    predict<<<N / BLOCK, BLOCK>>>(d_X, d_w, d_prob);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    std::vector<float> prob(N);
    CHECK(hipMemcpy(prob.data(), d_prob, N * sizeof(float), hipMemcpyDeviceToHost));

    double wsum = 0.0, psum = 0.0;
    for (int j = 0; j <= D; ++j) wsum += w[j] * (double)(j + 1);
    for (int i = 0; i < N; ++i) psum += (double)prob[i] * (double)((i % 101) + 1);
    printf("loss iter 0 = %.10e, iter %d = %.10e, final = %.10e\n", loss_hist[0], ITERS / 2,
           loss_hist[ITERS / 2], loss_hist[ITERS - 1]);
    printf("correct iter 0 = %d, final = %d of %d\n", correct_hist[0], correct_hist[ITERS - 1], N);
    printf("checksum weights %.10e\n", wsum);
    printf("checksum prob %.10e\n", psum);
    printf("w[0] = %.10e bias = %.10e\n", w[0], w[D]);
    printf("prob[3] = %.10e prob[%d] = %.10e\n", prob[3], N - 1, prob[N - 1]);

    CHECK(hipFree(d_X));
    CHECK(hipFree(d_y));
    CHECK(hipFree(d_w));
    CHECK(hipFree(d_partial));
    CHECK(hipFree(d_sums));
    CHECK(hipFree(d_prob));
    CHECK(hipFree(d_correct));
    return 0;
}
