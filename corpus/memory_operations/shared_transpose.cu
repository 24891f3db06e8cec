// shared_transpose.cu
// Out-of-place matrix transpose, three variants:
//   copy_tiles       : straight tiled copy (bandwidth baseline, same access shape)
//   transpose_naive  : coalesced reads, strided writes
//   transpose_shared : both reads and writes coalesced via a padded shared tile
// The kernels are templates, exercised here for float and int matrices.

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_OK(expr)                                                          \
    do {                                                                       \
        cudaError_t rc_ = (expr);                                              \
        if (rc_ != cudaSuccess) {                                              \
            fprintf(stderr, "CUDA failure '%s' at line %d: %s\n", #expr,       \
                    __LINE__, cudaGetErrorString(rc_));                        \
            return 1;                                                          \
        }                                                                      \
    } while (0)

constexpr int TILE_DIM = 32;
constexpr int BLOCK_ROWS = 8;       // each thread handles TILE_DIM / BLOCK_ROWS elements

__device__ __forceinline__ bool in_bounds(int x, int y, int w, int h) {
    return x < w && y < h;
}

template <typename T>
__global__ void copy_tiles(const T* __restrict__ in, T* __restrict__ out, int w, int h) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (in_bounds(x, y + j, w, h)) out[(size_t)(y + j) * w + x] = in[(size_t)(y + j) * w + x];
}

template <typename T>
__global__ void transpose_naive(const T* __restrict__ in, T* __restrict__ out, int w, int h) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (in_bounds(x, y + j, w, h)) out[(size_t)x * h + (y + j)] = in[(size_t)(y + j) * w + x];
}

template <typename T>
__global__ void transpose_shared(const T* __restrict__ in, T* __restrict__ out, int w, int h) {
    // One extra column shifts each row by a bank, so column reads are conflict-free.
    __shared__ T tile[TILE_DIM][TILE_DIM + 1];

    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (in_bounds(x, y + j, w, h)) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * w + x];

    __syncthreads();

    // Swap block coordinates: this block writes the transposed tile.
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (in_bounds(x, y + j, h, w)) out[(size_t)(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

template <typename T>
static int run_case(const char* name, int w, int h, uint32_t seed) {
    std::vector<T> hIn((size_t)w * h), hOut((size_t)w * h);
    uint32_t s = seed;
    for (auto& v : hIn) {
        s = s * 214013u + 2531011u;
        v = (T)((s >> 16) % 1000) / (T)8;
    }

    T *dIn, *dOut;
    size_t bytes = hIn.size() * sizeof(T);
    CUDA_OK(cudaMalloc(&dIn, bytes));
    CUDA_OK(cudaMalloc(&dOut, bytes));
    CUDA_OK(cudaMemcpy(dIn, hIn.data(), bytes, cudaMemcpyHostToDevice));

    dim3 block(TILE_DIM, BLOCK_ROWS);
    dim3 grid((w + TILE_DIM - 1) / TILE_DIM, (h + TILE_DIM - 1) / TILE_DIM);

    // 1) tiled copy must reproduce the input
    copy_tiles<T><<<grid, block>>>(dIn, dOut, w, h);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpy(hOut.data(), dOut, bytes, cudaMemcpyDeviceToHost));
    bool copyOk = hOut == hIn;

    // 2) naive and 3) shared transposes must both match the host transpose
    int bad = 0;
    for (int variant = 0; variant < 2; ++variant) {
        CUDA_OK(cudaMemset(dOut, 0, bytes));
        if (variant == 0) transpose_naive<T><<<grid, block>>>(dIn, dOut, w, h);
        else              transpose_shared<T><<<grid, block>>>(dIn, dOut, w, h);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaMemcpy(hOut.data(), dOut, bytes, cudaMemcpyDeviceToHost));
        for (int r = 0; r < h; ++r)
            for (int c = 0; c < w; ++c)
                if (hOut[(size_t)c * h + r] != hIn[(size_t)r * w + c]) ++bad;
    }

    double trace = 0.0;   // sum of out[i][i] over the square part
    for (int i = 0; i < (w < h ? w : h); ++i) trace += (double)hOut[(size_t)i * h + i];
    printf("%-5s %4d x %-4d copy=%s transpose mismatches=%d diag-sum=%.3f out[1][0]=%.3f\n",
           name, w, h, copyOk ? "ok" : "bad", bad, trace, (double)hOut[h]);

    CUDA_OK(cudaFree(dIn));
    CUDA_OK(cudaFree(dOut));
    return (copyOk && bad == 0) ? 0 : 1;
}

int main() {
    int fails = 0;
    fails += run_case<float>("float", 1000, 777, 17u);
    fails += run_case<int>("int", 513, 1030, 99u);
    printf("transpose tests: %s\n", fails == 0 ? "PASS" : "FAIL");
    return fails == 0 ? 0 : 1;
}
