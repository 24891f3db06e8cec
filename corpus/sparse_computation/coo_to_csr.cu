// coo_to_csr.cu
// Converts an unordered COO (row, col, val) triplet list into CSR on the GPU:
//   1. count_rows       : histogram of row indices (atomicAdd)
//   2. scan_row_counts  : single-block exclusive scan -> row pointers
//   3. scatter_entries  : place each triplet using a per-row atomic cursor
//   4. sort_row_segments: insertion-sort each row by column (makes it canonical)
// The result is compared exactly against the CSR matrix the COO list came from.

#include <algorithm>
#include <cstring>
#include "sparse_common.cuh"

constexpr int SCAN_THREADS = 1024;

__global__ void count_rows(int nnz, const int* __restrict__ cooRow, int* __restrict__ counts) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nnz; i += gridDim.x * blockDim.x)
        atomicAdd(&counts[cooRow[i]], 1);
}

// Exclusive scan of `n` counts into rowPtr[0..n] using one block. Each thread
// scans a contiguous chunk serially, then the chunk totals are combined with a
// Hillis-Steele scan in shared memory.
__global__ void scan_row_counts(int n, const int* __restrict__ counts, int* __restrict__ rowPtr) {
    __shared__ int totals[SCAN_THREADS];
    const int t = threadIdx.x;
    const int per = div_up(n, blockDim.x);
    const int begin = min(n, t * per), end = min(n, begin + per);

    int local = 0;
    for (int i = begin; i < end; ++i) local += counts[i];
    totals[t] = local;
    __syncthreads();

    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        int add = (t >= offset) ? totals[t - offset] : 0;
        __syncthreads();
        totals[t] += add;
        __syncthreads();
    }

    int running = totals[t] - local;         // exclusive prefix of this chunk
    for (int i = begin; i < end; ++i) {
        rowPtr[i] = running;
        running += counts[i];
    }
    if (t == blockDim.x - 1) rowPtr[n] = totals[t];
}

__global__ void scatter_entries(int nnz, const int* __restrict__ cooRow,
                                const int* __restrict__ cooCol,
                                const float* __restrict__ cooVal,
                                const int* __restrict__ rowPtr, int* __restrict__ cursor,
                                int* __restrict__ colIdx, float* __restrict__ vals) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nnz; i += gridDim.x * blockDim.x) {
        int r = cooRow[i];
        int dst = rowPtr[r] + atomicAdd(&cursor[r], 1);
        colIdx[dst] = cooCol[i];
        vals[dst] = cooVal[i];
    }
}

__device__ void insertion_sort_pairs(int* keys, float* vals, int len) {
    for (int i = 1; i < len; ++i) {
        int k = keys[i];
        float v = vals[i];
        int j = i - 1;
        while (j >= 0 && keys[j] > k) {
            keys[j + 1] = keys[j];
            vals[j + 1] = vals[j];
            --j;
        }
        keys[j + 1] = k;
        vals[j + 1] = v;
    }
}

__global__ void sort_row_segments(int rows, const int* __restrict__ rowPtr,
                                  int* __restrict__ colIdx, float* __restrict__ vals) {
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        int b = rowPtr[r];
        insertion_sort_pairs(colIdx + b, vals + b, rowPtr[r + 1] - b);
    }
}

int main() {
    const int rows = 4096, cols = 4096;
    HostCsr ref = make_random_csr(rows, cols, 1, 24, 777u);
    const int nnz = ref.nnz();

    // Expand to COO and shuffle with Fisher-Yates so the input is unordered.
    std::vector<int> hRow(nnz), hCol(nnz);
    std::vector<float> hVal(nnz);
    for (int r = 0; r < rows; ++r)
        for (int k = ref.rowPtr[r]; k < ref.rowPtr[r + 1]; ++k) {
            hRow[k] = r; hCol[k] = ref.colIdx[k]; hVal[k] = ref.vals[k];
        }
    Lcg32 rng(31337u);
    for (int i = nnz - 1; i > 0; --i) {
        int j = (int)rng.below(i + 1);
        std::swap(hRow[i], hRow[j]); std::swap(hCol[i], hCol[j]); std::swap(hVal[i], hVal[j]);
    }

    int *dRow, *dCol, *dCounts, *dCursor, *dRowPtr, *dColIdx;
    float *dVal, *dVals;
    SP_CHECK(cudaMalloc(&dRow, nnz * sizeof(int)));
    SP_CHECK(cudaMalloc(&dCol, nnz * sizeof(int)));
    SP_CHECK(cudaMalloc(&dVal, nnz * sizeof(float)));
    SP_CHECK(cudaMalloc(&dCounts, rows * sizeof(int)));
    SP_CHECK(cudaMalloc(&dCursor, rows * sizeof(int)));
    SP_CHECK(cudaMalloc(&dRowPtr, (rows + 1) * sizeof(int)));
    SP_CHECK(cudaMalloc(&dColIdx, nnz * sizeof(int)));
    SP_CHECK(cudaMalloc(&dVals, nnz * sizeof(float)));
    SP_CHECK(cudaMemcpy(dRow, hRow.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
    SP_CHECK(cudaMemcpy(dCol, hCol.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
    SP_CHECK(cudaMemcpy(dVal, hVal.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
    SP_CHECK(cudaMemset(dCounts, 0, rows * sizeof(int)));
    SP_CHECK(cudaMemset(dCursor, 0, rows * sizeof(int)));

    const int threads = 256;
    const int blocks = div_up(nnz, threads) < 120 ? div_up(nnz, threads) : 120;
    count_rows<<<blocks, threads>>>(nnz, dRow, dCounts);
    scan_row_counts<<<1, SCAN_THREADS>>>(rows, dCounts, dRowPtr);
    scatter_entries<<<blocks, threads>>>(nnz, dRow, dCol, dVal, dRowPtr, dCursor, dColIdx, dVals);
    sort_row_segments<<<div_up(rows, threads), threads>>>(rows, dRowPtr, dColIdx, dVals);
    SP_CHECK(cudaGetLastError());
    SP_CHECK(cudaDeviceSynchronize());

    std::vector<int> gRowPtr(rows + 1), gColIdx(nnz);
    std::vector<float> gVals(nnz);
    SP_CHECK(cudaMemcpy(gRowPtr.data(), dRowPtr, (rows + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    SP_CHECK(cudaMemcpy(gColIdx.data(), dColIdx, nnz * sizeof(int), cudaMemcpyDeviceToHost));
    SP_CHECK(cudaMemcpy(gVals.data(), dVals, nnz * sizeof(float), cudaMemcpyDeviceToHost));

    bool rowsOk = gRowPtr == ref.rowPtr;
    bool colsOk = gColIdx == ref.colIdx;
    bool valsOk = memcmp(gVals.data(), ref.vals.data(), nnz * sizeof(float)) == 0;

    long long colHash = 0;
    int longest = 0;
    for (int i = 0; i < nnz; ++i) colHash = (colHash * 31 + gColIdx[i]) % 1000000007LL;
    for (int r = 0; r < rows; ++r) longest = std::max(longest, gRowPtr[r + 1] - gRowPtr[r]);

    printf("COO->CSR: rows=%d nnz=%d longest row=%d\n", rows, nnz, longest);
    printf("rowPtr[1]=%d rowPtr[%d]=%d colHash=%lld\n", gRowPtr[1], rows / 2,
           gRowPtr[rows / 2], colHash);
    printf("match: rowPtr=%s colIdx=%s vals=%s\n", rowsOk ? "yes" : "no",
           colsOk ? "yes" : "no", valsOk ? "yes" : "no");

    void* bufs[] = {dRow, dCol, dVal, dCounts, dCursor, dRowPtr, dColIdx, dVals};
    for (void* b : bufs) SP_CHECK(cudaFree(b));
    return (rowsOk && colsOk && valsOk) ? 0 : 1;
}
