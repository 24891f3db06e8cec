// fork: TILE=32
// Classic shared-memory tiled GEMM (C = alpha * A * B + beta * C), written as
// a template so the same kernel is instantiated for float and double.
// Results are verified against a straightforward host implementation.

#include <cmath>
#include <vector>
#include "linear_algebra_common.cuh"

constexpr int TILE = 32;

// Load one TILE x TILE block of a row-major matrix into shared memory,
// padding out-of-range entries with zero so the inner loop needs no branches.
template <typename T>
__device__ __forceinline__ void load_tile(T (*dst)[TILE + 1], const T* src,
                                          int rows, int cols, int row0,
                                          int col0) {
    int r = row0 + threadIdx.y;
    int c = col0 + threadIdx.x;
    dst[threadIdx.y][threadIdx.x] =
        (r < rows && c < cols) ? src[rm_index(r, c, cols)] : T(0);
}

template <typename T>
__global__ void gemm_tiled(int M, int N, int K, T alpha, const T* __restrict__ A,
                           const T* __restrict__ B, T beta, T* __restrict__ C) {
    // +1 padding on the inner dimension avoids shared-memory bank conflicts
    __shared__ T As[TILE][TILE + 1];
    __shared__ T Bs[TILE][TILE + 1];

    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    T acc = T(0);

    int numTiles = (K + TILE - 1) / TILE;
    for (int t = 0; t < numTiles; ++t) {
        load_tile(As, A, M, K, blockIdx.y * TILE, t * TILE);
        load_tile(Bs, B, K, N, t * TILE, blockIdx.x * TILE);
        __syncthreads();

#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fma_t(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
        __syncthreads();
    }

    if (row < M && col < N) {
        int idx = rm_index(row, col, N);
        C[idx] = alpha * acc + beta * C[idx];
    }
}

template <typename T>
static void host_gemm(int M, int N, int K, T alpha, const std::vector<T>& A,
                      const std::vector<T>& B, T beta, std::vector<T>& C) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int k = 0; k < K; ++k)
                acc += (double)A[i * K + k] * (double)B[k * N + j];
            C[i * N + j] = (T)(alpha * acc + beta * C[i * N + j]);
        }
}

template <typename T>
static bool run_gemm(const char* label, int M, int N, int K, uint64_t seed,
                     double tol) {
    HostLcg rng(seed);
    std::vector<T> hA((size_t)M * K), hB((size_t)K * N), hC((size_t)M * N);
    for (auto& v : hA) v = (T)rng.uniform(-1.0, 1.0);
    for (auto& v : hB) v = (T)rng.uniform(-1.0, 1.0);
    for (auto& v : hC) v = (T)rng.uniform(-0.5, 0.5);
    std::vector<T> ref = hC;

    const T alpha = (T)2.0, beta = (T)0.25;

    T *dA, *dB, *dC;
    LA_CHECK(cudaMalloc(&dA, hA.size() * sizeof(T)));
    LA_CHECK(cudaMalloc(&dB, hB.size() * sizeof(T)));
    LA_CHECK(cudaMalloc(&dC, hC.size() * sizeof(T)));
    LA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(T), cudaMemcpyHostToDevice));
    LA_CHECK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(T), cudaMemcpyHostToDevice));
    LA_CHECK(cudaMemcpy(dC, hC.data(), hC.size() * sizeof(T), cudaMemcpyHostToDevice));

    dim3 block(TILE, TILE);
    dim3 grid(ceil_div(N, TILE), ceil_div(M, TILE));
    gemm_tiled<T><<<grid, block>>>(M, N, K, alpha, dA, dB, beta, dC);
    LA_CHECK(cudaGetLastError());
    LA_CHECK(cudaDeviceSynchronize());
    LA_CHECK(cudaMemcpy(hC.data(), dC, hC.size() * sizeof(T), cudaMemcpyDeviceToHost));

    host_gemm(M, N, K, alpha, hA, hB, beta, ref);

    double maxErr = 0.0, checksum = 0.0;
    for (size_t i = 0; i < hC.size(); ++i) {
        maxErr = fmax(maxErr, fabs((double)hC[i] - (double)ref[i]));
        checksum += (double)ref[i];
    }
    bool ok = maxErr < tol;
    printf("[%s] M=%d N=%d K=%d checksum=%.4f C[0]=%.4f C[last]=%.4f %s\n",
           label, M, N, K, checksum, (double)ref[0], (double)ref[hC.size() - 1],
           ok ? "PASS" : "FAIL");

    LA_CHECK(cudaFree(dA));
    LA_CHECK(cudaFree(dB));
    LA_CHECK(cudaFree(dC));
    return ok;
}

int main() {
    bool ok = true;
    // Deliberately non-multiple-of-tile sizes to exercise boundary handling.
    ok &= run_gemm<float>("float ", 131, 97, 75, 42ULL, 1e-3);
    ok &= run_gemm<double>("double", 131, 97, 75, 42ULL, 1e-10);
    printf("tiled_matmul: %s\n", ok ? "all checks passed" : "MISMATCH");
    return ok ? 0 : 1;
}
