// sparse_common.cuh
// Common pieces for the sparse-matrix samples: error checking, a host LCG,
// a host-side CSR container with a deterministic random generator, and a
// couple of device helpers shared by the kernels.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define SP_CHECK(call)                                                        \
    do {                                                                      \
        cudaError_t e_ = (call);                                              \
        if (e_ != cudaSuccess) {                                              \
            fprintf(stderr, "[sparse] %s failed at %s:%d -> %s\n", #call,     \
                    __FILE__, __LINE__, cudaGetErrorString(e_));              \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

struct Lcg32 {
    uint32_t s;
    explicit Lcg32(uint32_t seed) : s(seed ? seed : 0x9E3779B9u) {}
    uint32_t next() { s = s * 1664525u + 1013904223u; return s; }
    // uniform in [0, n)
    uint32_t below(uint32_t n) { return (uint32_t)(((uint64_t)next() * n) >> 32); }
    float unit() { return (next() >> 8) * (1.0f / 16777216.0f); }   // [0,1)
};

struct HostCsr {
    int rows = 0, cols = 0;
    std::vector<int> rowPtr, colIdx;
    std::vector<float> vals;
    int nnz() const { return (int)colIdx.size(); }
};

// Random CSR matrix: each row gets between minPerRow and maxPerRow distinct,
// sorted column indices. A diagonal entry is always included when i < cols.
static HostCsr make_random_csr(int rows, int cols, int minPerRow, int maxPerRow,
                               uint32_t seed) {
    Lcg32 rng(seed);
    HostCsr m;
    m.rows = rows;
    m.cols = cols;
    m.rowPtr.assign(rows + 1, 0);
    std::vector<char> used(cols, 0);
    std::vector<int> picked;
    for (int r = 0; r < rows; ++r) {
        int want = minPerRow + (int)rng.below(maxPerRow - minPerRow + 1);
        picked.clear();
        if (r < cols) { picked.push_back(r); used[r] = 1; }
        while ((int)picked.size() < want) {
            int c = (int)rng.below(cols);
            if (!used[c]) { used[c] = 1; picked.push_back(c); }
        }
        for (int c = 0; c < cols; ++c)              // emit in sorted order
            if (used[c]) {
                m.colIdx.push_back(c);
                m.vals.push_back(rng.unit() * 2.0f - 1.0f);
                used[c] = 0;
            }
        m.rowPtr[r + 1] = m.nnz();
    }
    return m;
}

// Host reference SpMV in double precision.
static inline void host_spmv(const HostCsr& m, const std::vector<float>& x,
                      std::vector<double>& y) {
    y.assign(m.rows, 0.0);
    for (int r = 0; r < m.rows; ++r)
        for (int k = m.rowPtr[r]; k < m.rowPtr[r + 1]; ++k)
            y[r] += (double)m.vals[k] * x[m.colIdx[k]];
}

// Dot product of one CSR row segment with a dense vector.
__device__ __forceinline__ float csr_row_dot(const int* __restrict__ colIdx,
                                             const float* __restrict__ vals,
                                             const float* __restrict__ x,
                                             int begin, int end, int stride) {
    float sum = 0.0f;
    for (int k = begin; k < end; k += stride) sum = fmaf(vals[k], x[colIdx[k]], sum);
    return sum;
}

__host__ __device__ __forceinline__ int div_up(int a, int b) { return (a + b - 1) / b; }
