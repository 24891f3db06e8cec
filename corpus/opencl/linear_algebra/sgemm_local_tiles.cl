// Single-precision GEMM C = alpha*A*B + beta*C using 16x16 tiles staged in __local memory.
// A is MxK, B is KxN, C is MxN, all row-major; work-group size must be 16x16.
#define GEMM_TILE 16

__kernel void sgemm_local_tiled_16x16(const int M, const int N, const int K,
                                      const float alpha, const float beta,
                                      __global const float* A,
                                      __global const float* B,
                                      __global float* C)
{
    __local float tileA[GEMM_TILE][GEMM_TILE];
    __local float tileB[GEMM_TILE][GEMM_TILE + 1];

    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int col = get_group_id(0) * GEMM_TILE + lx;
    const int row = get_group_id(1) * GEMM_TILE + ly;

    float acc = 0.0f;
    const int numTiles = (K + GEMM_TILE - 1) / GEMM_TILE;

    for (int t = 0; t < numTiles; ++t) {
        const int aCol = t * GEMM_TILE + lx;
        const int bRow = t * GEMM_TILE + ly;
        tileA[ly][lx] = (row < M && aCol < K) ? A[row * K + aCol] : 0.0f;
        tileB[ly][lx] = (bRow < K && col < N) ? B[bRow * N + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);

        #pragma unroll
        for (int k = 0; k < GEMM_TILE; ++k)
            acc = mad(tileA[ly][k], tileB[k][lx], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (row < M && col < N) {
        const int idx = row * N + col;
        C[idx] = alpha * acc + beta * C[idx];
    }
}
