// Expected to fail on AMD (kept on purpose): a half-precision GEMM on tensor cores through the
// nvcuda::wmma API. hipify-perl has no mapping for <mma.h> / nvcuda::wmma (rocWMMA is a separate
// library with a different API), so the HIP translation cannot compile.
#include <cstdio>
#include <cstdlib>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t err__ = (call);                                          \
        if (err__ != cudaSuccess) {                                          \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__,                \
                    cudaGetErrorString(err__));                              \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

constexpr int WM = 16, WN = 16, WK = 16;

// One warp computes one 16x16 tile of C = A * B (A row-major MxK, B col-major KxN).
__global__ void wmma_gemm(const half *a, const half *b, float *c, int m, int n, int k) {
    int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int warp_n = blockIdx.y * blockDim.y + threadIdx.y;
    if (warp_m * WM >= m || warp_n * WN >= n) return;

    wmma::fragment<wmma::matrix_a, WM, WN, WK, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WM, WN, WK, half, wmma::col_major> b_frag;
    wmma::fragment<wmma::accumulator, WM, WN, WK, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int kk = 0; kk < k; kk += WK) {
        wmma::load_matrix_sync(a_frag, a + warp_m * WM * k + kk, k);
        wmma::load_matrix_sync(b_frag, b + warp_n * WN * k + kk, k);
        wmma::mma_sync(acc, a_frag, b_frag, acc);
    }
    wmma::store_matrix_sync(c + warp_m * WM * n + warp_n * WN, acc, n, wmma::mem_row_major);
}

__global__ void fill_half(half *p, int count, float scale) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        p[i] = __float2half(scale * (float)((i * 37) % 11 - 5));
}

int main() {
    const int m = 64, n = 64, k = 64;
    half *a, *b;
    float *c;
    CHECK(cudaMalloc(&a, m * k * sizeof(half)));
    CHECK(cudaMalloc(&b, k * n * sizeof(half)));
    CHECK(cudaMalloc(&c, m * n * sizeof(float)));
    fill_half<<<16, 256>>>(a, m * k, 0.25f);
    fill_half<<<16, 256>>>(b, k * n, 0.5f);
    dim3 block(128, 4);
    dim3 grid((m + (WM * block.x / 32) - 1) / (WM * block.x / 32), (n + WN * block.y - 1) / (WN * block.y));
    wmma_gemm<<<grid, block>>>(a, b, c, m, n, k);
    CHECK(cudaGetLastError());
    float host[m * n];
    CHECK(cudaMemcpy(host, c, sizeof(host), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (int i = 0; i < m * n; ++i) sum += host[i];
    printf("checksum %.3f c[0]=%.3f c[last]=%.3f\n", sum, host[0], host[m * n - 1]);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
    return 0;
}
