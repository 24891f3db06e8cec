// ell_spmm_streams.cu
// Sparse x dense multiply (Y = A * X) with A in ELLPACK format. The dense
// right-hand sides are split into batches that are pipelined over several
// CUDA streams: async H2D copy -> ELL kernel -> async D2H copy per batch,
// so transfers of one batch overlap the compute of another.

#include <algorithm>
#include <cmath>
#include "sparse_common.cuh"

constexpr int NUM_STREAMS = 3;
constexpr int ELL_PAD = -1;          // column index used for padding slots

// ELL storage is column-major (slot k of row r lives at k*rows + r) so that
// consecutive threads (rows) read consecutive addresses.
__device__ __forceinline__ float ell_row_dot(int r, int rows, int width,
                                             const int* __restrict__ ellCol,
                                             const float* __restrict__ ellVal,
                                             const float* __restrict__ x) {
    float sum = 0.0f;
    for (int k = 0; k < width; ++k) {
        int c = ellCol[k * rows + r];
        if (c == ELL_PAD) break;                 // padding is always at the tail
        sum = fmaf(ellVal[k * rows + r], x[c], sum);
    }
    return sum;
}

// blockIdx.y selects the right-hand side within the batch.
__global__ void ell_spmm(int rows, int cols, int width, const int* __restrict__ ellCol,
                         const float* __restrict__ ellVal, const float* __restrict__ X,
                         float* __restrict__ Y) {
    const float* x = X + (size_t)blockIdx.y * cols;
    float* y = Y + (size_t)blockIdx.y * rows;
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x)
        y[r] = ell_row_dot(r, rows, width, ellCol, ellVal, x);
}

static void csr_to_ell(const HostCsr& m, int& width, std::vector<int>& col,
                       std::vector<float>& val) {
    width = 0;
    for (int r = 0; r < m.rows; ++r) width = std::max(width, m.rowPtr[r + 1] - m.rowPtr[r]);
    col.assign((size_t)width * m.rows, ELL_PAD);
    val.assign((size_t)width * m.rows, 0.0f);
    for (int r = 0; r < m.rows; ++r)
        for (int k = m.rowPtr[r]; k < m.rowPtr[r + 1]; ++k) {
            size_t slot = (size_t)(k - m.rowPtr[r]) * m.rows + r;
            col[slot] = m.colIdx[k];
            val[slot] = m.vals[k];
        }
}

int main() {
    const int rows = 3000, cols = 3000;
    const int nrhs = 12, batch = 2;
    const int numBatches = nrhs / batch;

    HostCsr A = make_random_csr(rows, cols, 3, 12, 4242u);
    int width;
    std::vector<int> hEllCol;
    std::vector<float> hEllVal;
    csr_to_ell(A, width, hEllCol, hEllVal);

    // Pinned host buffers are required for truly asynchronous copies.
    float *hX, *hY;
    SP_CHECK(cudaMallocHost(&hX, (size_t)nrhs * cols * sizeof(float)));
    SP_CHECK(cudaMallocHost(&hY, (size_t)nrhs * rows * sizeof(float)));
    Lcg32 rng(2718u);
    for (size_t i = 0; i < (size_t)nrhs * cols; ++i) hX[i] = rng.unit() - 0.5f;

    int* dEllCol;
    float *dEllVal, *dX, *dY;
    SP_CHECK(cudaMalloc(&dEllCol, hEllCol.size() * sizeof(int)));
    SP_CHECK(cudaMalloc(&dEllVal, hEllVal.size() * sizeof(float)));
    SP_CHECK(cudaMalloc(&dX, (size_t)nrhs * cols * sizeof(float)));
    SP_CHECK(cudaMalloc(&dY, (size_t)nrhs * rows * sizeof(float)));
    SP_CHECK(cudaMemcpy(dEllCol, hEllCol.data(), hEllCol.size() * sizeof(int), cudaMemcpyHostToDevice));
    SP_CHECK(cudaMemcpy(dEllVal, hEllVal.data(), hEllVal.size() * sizeof(float), cudaMemcpyHostToDevice));

    cudaStream_t streams[NUM_STREAMS];
    for (int s = 0; s < NUM_STREAMS; ++s) SP_CHECK(cudaStreamCreate(&streams[s]));

    const int threads = 256;
    dim3 grid(div_up(rows, threads), batch);
    for (int b = 0; b < numBatches; ++b) {
        cudaStream_t st = streams[b % NUM_STREAMS];
        size_t xOff = (size_t)b * batch * cols, yOff = (size_t)b * batch * rows;
        SP_CHECK(cudaMemcpyAsync(dX + xOff, hX + xOff, (size_t)batch * cols * sizeof(float),
                                 cudaMemcpyHostToDevice, st));
        ell_spmm<<<grid, threads, 0, st>>>(rows, cols, width, dEllCol, dEllVal, dX + xOff, dY + yOff);
        SP_CHECK(cudaGetLastError());
        SP_CHECK(cudaMemcpyAsync(hY + yOff, dY + yOff, (size_t)batch * rows * sizeof(float),
                                 cudaMemcpyDeviceToHost, st));
    }
    for (int s = 0; s < NUM_STREAMS; ++s) SP_CHECK(cudaStreamSynchronize(streams[s]));

    // Verify every right-hand side against the CSR host reference.
    double maxErr = 0.0, checksum = 0.0;
    std::vector<float> x(cols);
    std::vector<double> ref;
    for (int v = 0; v < nrhs; ++v) {
        std::copy(hX + (size_t)v * cols, hX + (size_t)(v + 1) * cols, x.begin());
        host_spmv(A, x, ref);
        for (int r = 0; r < rows; ++r) {
            maxErr = std::max(maxErr, fabs(ref[r] - hY[(size_t)v * rows + r]));
            checksum += ref[r] * (v + 1);
        }
    }
    bool ok = maxErr < 1e-4;
    printf("ELL: rows=%d nnz=%d width=%d fill=%.3f\n", rows, A.nnz(), width,
           (double)A.nnz() / ((double)width * rows));
    printf("SpMM %d rhs in %d batches over %d streams, weighted checksum=%.4f\n", nrhs,
           numBatches, NUM_STREAMS, checksum);
    printf("result %s\n", ok ? "PASS" : "FAIL");

    for (int s = 0; s < NUM_STREAMS; ++s) SP_CHECK(cudaStreamDestroy(streams[s]));
    SP_CHECK(cudaFreeHost(hX));
    SP_CHECK(cudaFreeHost(hY));
    void* bufs[] = {dEllCol, dEllVal, dX, dY};
    for (void* p : bufs) SP_CHECK(cudaFree(p));
    return ok ? 0 : 1;
}
