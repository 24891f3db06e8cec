// csr_spmv.cu
// Two classic CSR sparse matrix-vector kernels:
//   * spmv_csr_scalar : one thread per row (good for very short rows)
//   * spmv_csr_vector : a 32-thread group per row with a shared-memory
//                       tree reduction (good for longer rows)
// Both are checked against a double-precision host reference.

#include <cmath>
#include "sparse_common.cuh"

constexpr int GROUP = 32;             // threads cooperating on one row
constexpr int VEC_BLOCK = 128;        // => 4 rows per block

__global__ void spmv_csr_scalar(int rows, const int* __restrict__ rowPtr,
                                const int* __restrict__ colIdx,
                                const float* __restrict__ vals,
                                const float* __restrict__ x, float* __restrict__ y) {
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x)
        y[r] = csr_row_dot(colIdx, vals, x, rowPtr[r], rowPtr[r + 1], 1);
}

__global__ void spmv_csr_vector(int rows, const int* __restrict__ rowPtr,
                                const int* __restrict__ colIdx,
                                const float* __restrict__ vals,
                                const float* __restrict__ x, float* __restrict__ y) {
    __shared__ float partial[VEC_BLOCK];
    const int lane = threadIdx.x % GROUP;
    const int groupInBlock = threadIdx.x / GROUP;
    const int groupsPerGrid = gridDim.x * (VEC_BLOCK / GROUP);

    // Loop bound is uniform across the block so __syncthreads is safe.
    for (int base = blockIdx.x * (VEC_BLOCK / GROUP); base < rows; base += groupsPerGrid) {
        int r = base + groupInBlock;
        float sum = 0.0f;
        if (r < rows)
            sum = csr_row_dot(colIdx, vals, x, rowPtr[r] + lane, rowPtr[r + 1], GROUP);
        partial[threadIdx.x] = sum;
        __syncthreads();
        for (int s = GROUP / 2; s > 0; s >>= 1) {
            if (lane < s) partial[threadIdx.x] += partial[threadIdx.x + s];
            __syncthreads();
        }
        if (lane == 0 && r < rows) y[r] = partial[threadIdx.x];
        __syncthreads();
    }
}

static double max_abs_err(const std::vector<float>& got, const std::vector<double>& ref) {
    double e = 0.0;
    for (size_t i = 0; i < got.size(); ++i) e = fmax(e, fabs(got[i] - ref[i]));
    return e;
}

int main() {
    const int rows = 6000, cols = 5000;
    HostCsr A = make_random_csr(rows, cols, 4, 60, 12345u);
    Lcg32 rng(99u);
    std::vector<float> hx(cols);
    for (auto& v : hx) v = rng.unit() * 4.0f - 2.0f;

    int *dRowPtr, *dColIdx;
    float *dVals, *dx, *dyScalar, *dyVector;
    SP_CHECK(cudaMalloc(&dRowPtr, (rows + 1) * sizeof(int)));
    SP_CHECK(cudaMalloc(&dColIdx, A.nnz() * sizeof(int)));
    SP_CHECK(cudaMalloc(&dVals, A.nnz() * sizeof(float)));
    SP_CHECK(cudaMalloc(&dx, cols * sizeof(float)));
    SP_CHECK(cudaMalloc(&dyScalar, rows * sizeof(float)));
    SP_CHECK(cudaMalloc(&dyVector, rows * sizeof(float)));
    SP_CHECK(cudaMemcpy(dRowPtr, A.rowPtr.data(), (rows + 1) * sizeof(int), cudaMemcpyHostToDevice));
    SP_CHECK(cudaMemcpy(dColIdx, A.colIdx.data(), A.nnz() * sizeof(int), cudaMemcpyHostToDevice));
    SP_CHECK(cudaMemcpy(dVals, A.vals.data(), A.nnz() * sizeof(float), cudaMemcpyHostToDevice));
    SP_CHECK(cudaMemcpy(dx, hx.data(), cols * sizeof(float), cudaMemcpyHostToDevice));

    spmv_csr_scalar<<<div_up(rows, 256), 256>>>(rows, dRowPtr, dColIdx, dVals, dx, dyScalar);
    SP_CHECK(cudaGetLastError());
    // Deliberately fewer blocks than needed to exercise the grid-stride loop.
    spmv_csr_vector<<<512, VEC_BLOCK>>>(rows, dRowPtr, dColIdx, dVals, dx, dyVector);
    SP_CHECK(cudaGetLastError());
    SP_CHECK(cudaDeviceSynchronize());

    std::vector<float> ys(rows), yv(rows);
    SP_CHECK(cudaMemcpy(ys.data(), dyScalar, rows * sizeof(float), cudaMemcpyDeviceToHost));
    SP_CHECK(cudaMemcpy(yv.data(), dyVector, rows * sizeof(float), cudaMemcpyDeviceToHost));

    std::vector<double> ref;
    host_spmv(A, hx, ref);
    double checksum = 0.0;
    for (double v : ref) checksum += v;

    double eS = max_abs_err(ys, ref), eV = max_abs_err(yv, ref);
    bool ok = eS < 1e-3 && eV < 1e-3;
    printf("CSR %d x %d, nnz=%d (avg %.2f per row)\n", rows, cols, A.nnz(),
           (double)A.nnz() / rows);
    printf("reference checksum=%.4f y[0]=%.4f y[%d]=%.4f\n", checksum, ref[0],
           rows - 1, ref[rows - 1]);
    printf("scalar kernel %s, vector kernel %s\n", eS < 1e-3 ? "OK" : "BAD",
           eV < 1e-3 ? "OK" : "BAD");

    void* bufs[] = {dRowPtr, dColIdx, dVals, dx, dyScalar, dyVector};
    for (void* b : bufs) SP_CHECK(cudaFree(b));
    return ok ? 0 : 1;
}
