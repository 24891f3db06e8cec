// Rank-1 update of a dense matrix (BLAS GER): B = A + alpha * x * y^T.
// A is 2048 x 2048 single precision, x and y are vectors, all generated from a
// 64-bit LCG (seed: optional argv[1]). One thread computes one element of B with an explicit
// fused multiply-add. The program prints an FNV-1a hash of the bits of B, a
// position-weighted double sum of B and a few sampled elements.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__,       \
                    __LINE__, cudaGetErrorString(err_), #call);               \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const int ROWS = 2048;
static const int COLS = 2048;

static uint64_t g_state = 0x2545F4914F6CDD1DULL;
static float lcg_uniform(float lo, float hi) {
    g_state = g_state * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t r = (uint32_t)(g_state >> 40);  // 24 random bits
    return lo + (hi - lo) * ((float)r / 16777216.0f);
}

__global__ void rank1_update(const float* __restrict__ A, const float* __restrict__ x,
                             const float* __restrict__ y, float alpha,
                             float* __restrict__ B, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        size_t idx = (size_t)row * cols + col;
        B[idx] = fmaf(alpha * x[row], y[col], A[idx]);
    }
}

int main(int argc, char** argv) {
    if (argc > 1) g_state = strtoull(argv[1], nullptr, 0);
    const size_t n = (size_t)ROWS * COLS;
    const float alpha = -0.75f;
    std::vector<float> hA(n), hx(ROWS), hy(COLS), hB(n);
    for (size_t i = 0; i < n; ++i) hA[i] = lcg_uniform(-1.0f, 1.0f);
    for (int i = 0; i < ROWS; ++i) hx[i] = lcg_uniform(-2.0f, 2.0f);
    for (int j = 0; j < COLS; ++j) hy[j] = lcg_uniform(-2.0f, 2.0f);

    float *dA, *dx, *dy, *dB;
    CK(cudaMalloc(&dA, n * sizeof(float)));
    CK(cudaMalloc(&dx, ROWS * sizeof(float)));
    CK(cudaMalloc(&dy, COLS * sizeof(float)));
    CK(cudaMalloc(&dB, n * sizeof(float)));
    CK(cudaMemcpy(dA, hA.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, hx.data(), ROWS * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, hy.data(), COLS * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(dB, 0xFF, n * sizeof(float)));  // NaN sentinel

    dim3 block(32, 8);
    dim3 grid((COLS + block.x - 1) / block.x, (ROWS + block.y - 1) / block.y);
    rank1_update<<<grid, block>>>(dA, dx, dy, alpha, dB, ROWS, COLS);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hB.data(), dB, n * sizeof(float), cudaMemcpyDeviceToHost));

    uint64_t h = 1469598103934665603ULL;
    double wsum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        uint32_t bits;
        memcpy(&bits, &hB[i], sizeof(bits));
        h = (h ^ bits) * 1099511628211ULL;
        wsum += (double)hB[i] * (double)(i % 1021 + 1);
    }
    printf("rank1_update %d x %d alpha = %.3f\n", ROWS, COLS, alpha);
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("weighted_sum = %.10e\n", wsum);
    const size_t samples[4] = {0, 12345, n / 2 + 777, n - 1};
    for (int s = 0; s < 4; ++s)
        printf("B[%zu] = %.10e\n", samples[s], hB[samples[s]]);

    CK(cudaFree(dA));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dB));
    return 0;
}
