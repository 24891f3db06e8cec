#include "hip/hip_runtime.h"
// Builds a compressed-sparse-row matrix from 2^21 unordered (row, col, value) triplets of a
// 65536 x 65536 matrix with skewed row lengths, then multiplies it by a vector. Pipeline:
// row histogram (integer atomics) -> exclusive scan of the counts (Blelloch scan of 1024-element
// tiles in shared memory, a scan of the tile totals, then a uniform add) -> scatter of triplet
// ids into their rows (atomic cursors, so the order inside a row is arbitrary) -> per-row
// insertion sort by (col, triplet id), which makes the layout deterministic -> y = A x per row.
#include <hip/hip_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        hipError_t err_ = (call);                                                    \
        if (err_ != hipSuccess) {                                                    \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, hipGetErrorString(err_));                              \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static constexpr int NROWS = 1 << 16, NCOLS = 1 << 16, NNZ = 1 << 21;
static constexpr int SCAN_THREADS = 512, TILE = 2 * SCAN_THREADS;

static uint64_t g_rng = 0xA54FF53A5F1D36F1ull;
static uint64_t xorshift64() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static uint64_t fnv_mix(uint64_t h, uint64_t v) {
    for (int b = 0; b < 8; ++b) {
        h ^= (v >> (8 * b)) & 0xFF;
        h *= 0x100000001B3ull;
    }
    return h;
}

__global__ void count_rows(const int* __restrict__ row, int nnz, unsigned* __restrict__ counts) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nnz) atomicAdd(&counts[row[k]], 1u);
}

// Exclusive Blelloch scan of one TILE per block; writes the tile total to tile_sums.
__global__ void scan_tiles(const unsigned* __restrict__ in, unsigned* __restrict__ out,
                           unsigned* __restrict__ tile_sums, int n) {
    __shared__ unsigned s[TILE];
    int t = threadIdx.x, base = blockIdx.x * TILE;
    s[t] = base + t < n ? in[base + t] : 0u;
    s[t + SCAN_THREADS] = base + t + SCAN_THREADS < n ? in[base + t + SCAN_THREADS] : 0u;
    int offset = 1;
    for (int d = TILE >> 1; d > 0; d >>= 1) {  // up-sweep
        __syncthreads();
        if (t < d) s[offset * (2 * t + 2) - 1] += s[offset * (2 * t + 1) - 1];
        offset <<= 1;
    }
    if (t == 0) {
        tile_sums[blockIdx.x] = s[TILE - 1];
        s[TILE - 1] = 0u;
    }
    for (int d = 1; d < TILE; d <<= 1) {  // down-sweep
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            unsigned tmp = s[ai];
            s[ai] = s[bi];
            s[bi] += tmp;
        }
    }
    __syncthreads();
    if (base + t < n) out[base + t] = s[t];
    if (base + t + SCAN_THREADS < n) out[base + t + SCAN_THREADS] = s[t + SCAN_THREADS];
}

__global__ void add_tile_offsets(unsigned* __restrict__ row_ptr,
                                 const unsigned* __restrict__ tile_offsets, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) row_ptr[i] += tile_offsets[i / TILE];
}

__global__ void scatter(const int* __restrict__ row, int nnz,
                        const unsigned* __restrict__ row_ptr, unsigned* __restrict__ cursor,
                        unsigned* __restrict__ slot_owner) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nnz) return;
    int r = row[k];
    slot_owner[row_ptr[r] + atomicAdd(&cursor[r], 1u)] = (unsigned)k;
}

// One thread per row: sort the row's triplet ids by (col, id), emit col/val, compute y[r].
__global__ void finish_rows(const unsigned* __restrict__ row_ptr,
                            unsigned* __restrict__ slot_owner,
                            const int* __restrict__ col, const float* __restrict__ val,
                            const float* __restrict__ x, int* __restrict__ col_idx,
                            float* __restrict__ values, float* __restrict__ y) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= NROWS) return;
    unsigned b = row_ptr[r], e = row_ptr[r + 1];
    for (unsigned i = b + 1; i < e; ++i) {
        unsigned k = slot_owner[i];
        uint64_t key = ((uint64_t)col[k] << 32) | k;
        unsigned j = i;
        while (j > b) {
            unsigned p = slot_owner[j - 1];
            if ((((uint64_t)col[p] << 32) | p) <= key) break;
            slot_owner[j] = p;
            --j;
        }
        slot_owner[j] = k;
    }
    float acc = 0.0f;
    for (unsigned i = b; i < e; ++i) {
        unsigned k = slot_owner[i];
        col_idx[i] = col[k];
        values[i] = val[k];
        acc += val[k] * x[col[k]];
    }
    y[r] = acc;
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        g_rng = strtoull(argv[1], nullptr, 0);
        if (g_rng == 0) g_rng = 0xA54FF53A5F1D36F1ull;
    }
    std::vector<int> h_row(NNZ), h_col(NNZ);
    std::vector<float> h_val(NNZ), h_x(NCOLS);
    for (int k = 0; k < NNZ; ++k) {
        int a = (int)(xorshift64() % NROWS), b = (int)(xorshift64() % NROWS);
        h_row[k] = std::min(a, b);  // row lengths fall off linearly with the row id
        h_col[k] = (int)(xorshift64() % NCOLS);
        h_val[k] = (float)((int)(xorshift64() % 2001) - 1000) / 1000.0f;
    }
    for (int c = 0; c < NCOLS; ++c) h_x[c] = (float)(xorshift64() % 1000) / 500.0f - 1.0f;

    const int ntiles = (NROWS + TILE - 1) / TILE;  // 64 tiles: their totals fit in one tile
    int *d_row, *d_col, *d_col_idx;
    float *d_val, *d_x, *d_values, *d_y;
    unsigned *d_counts, *d_row_ptr, *d_tile_sums, *d_tile_offsets, *d_total, *d_cursor, *d_owner;
    CHECK(hipMalloc(&d_row, NNZ * sizeof(int)));
    CHECK(hipMalloc(&d_col, NNZ * sizeof(int)));
    CHECK(hipMalloc(&d_val, NNZ * sizeof(float)));
    CHECK(hipMalloc(&d_x, NCOLS * sizeof(float)));
    CHECK(hipMalloc(&d_counts, NROWS * sizeof(unsigned)));
    CHECK(hipMalloc(&d_cursor, NROWS * sizeof(unsigned)));
    CHECK(hipMalloc(&d_row_ptr, (NROWS + 1) * sizeof(unsigned)));
    CHECK(hipMalloc(&d_tile_sums, ntiles * sizeof(unsigned)));
    CHECK(hipMalloc(&d_tile_offsets, ntiles * sizeof(unsigned)));
    CHECK(hipMalloc(&d_total, sizeof(unsigned)));
    CHECK(hipMalloc(&d_owner, NNZ * sizeof(unsigned)));
    CHECK(hipMalloc(&d_col_idx, NNZ * sizeof(int)));
    CHECK(hipMalloc(&d_values, NNZ * sizeof(float)));
    CHECK(hipMalloc(&d_y, NROWS * sizeof(float)));
    CHECK(hipMemcpy(d_row, h_row.data(), NNZ * sizeof(int), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_col, h_col.data(), NNZ * sizeof(int), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_val, h_val.data(), NNZ * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_x, h_x.data(), NCOLS * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_counts, 0, NROWS * sizeof(unsigned)));   // atomic accumulators
    CHECK(hipMemset(d_cursor, 0, NROWS * sizeof(unsigned)));
    CHECK(hipMemset(d_row_ptr, 0xFF, (NROWS + 1) * sizeof(unsigned)));  // sentinels
    CHECK(hipMemset(d_owner, 0xFF, NNZ * sizeof(unsigned)));
    CHECK(hipMemset(d_col_idx, 0xFF, NNZ * sizeof(int)));
    CHECK(hipMemset(d_values, 0xFF, NNZ * sizeof(float)));
    CHECK(hipMemset(d_y, 0xFF, NROWS * sizeof(float)));

    const int threads = 256;
    count_rows<<<(NNZ + threads - 1) / threads, threads>>>(d_row, NNZ, d_counts);
    CHECK(hipGetLastError());
    // Scan the row counts tile by tile, scan the 64 tile totals in one block (its own total,
    // NNZ, becomes row_ptr[NROWS]), then add each tile's offset.
    scan_tiles<<<ntiles, SCAN_THREADS>>>(d_counts, d_row_ptr, d_tile_sums, NROWS);
    CHECK(hipGetLastError());
    scan_tiles<<<1, SCAN_THREADS>>>(d_tile_sums, d_tile_offsets, d_total, ntiles);
    CHECK(hipGetLastError());
    add_tile_offsets<<<(NROWS + threads - 1) / threads, threads>>>(d_row_ptr, d_tile_offsets,
                                                                   NROWS);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(d_row_ptr + NROWS, d_total, sizeof(unsigned), hipMemcpyDeviceToDevice));
    scatter<<<(NNZ + threads - 1) / threads, threads>>>(d_row, NNZ, d_row_ptr, d_cursor, d_owner);
    CHECK(hipGetLastError());
    finish_rows<<<(NROWS + 127) / 128, 128>>>(d_row_ptr, d_owner, d_col, d_val, d_x, d_col_idx,
                                              d_values, d_y);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<unsigned> row_ptr(NROWS + 1), owner(NNZ);
    std::vector<int> col_idx(NNZ);
    std::vector<float> values(NNZ), y(NROWS);
    CHECK(hipMemcpy(row_ptr.data(), d_row_ptr, (NROWS + 1) * sizeof(unsigned),
                     hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(owner.data(), d_owner, NNZ * sizeof(unsigned), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(col_idx.data(), d_col_idx, NNZ * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(values.data(), d_values, NNZ * sizeof(float), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(y.data(), d_y, NROWS * sizeof(float), hipMemcpyDeviceToHost));

    // Host reference for the layout: a stable counting sort by row, then by column.
    std::vector<unsigned> ref_ptr(NROWS + 1, 0), ref_owner(NNZ);
    for (int k = 0; k < NNZ; ++k) ref_ptr[h_row[k] + 1]++;
    for (int r = 0; r < NROWS; ++r) ref_ptr[r + 1] += ref_ptr[r];
    std::vector<unsigned> fill(ref_ptr.begin(), ref_ptr.end() - 1);
    for (int k = 0; k < NNZ; ++k) ref_owner[fill[h_row[k]]++] = (unsigned)k;
    for (int r = 0; r < NROWS; ++r)
        std::stable_sort(ref_owner.begin() + ref_ptr[r], ref_owner.begin() + ref_ptr[r + 1],
                         [&](unsigned a, unsigned b) { return h_col[a] < h_col[b]; });
    int mismatches = 0;
    for (int r = 0; r <= NROWS; ++r) mismatches += row_ptr[r] != ref_ptr[r];
    for (int k = 0; k < NNZ; ++k) mismatches += owner[k] != ref_owner[k];

    uint64_t h_layout = 0xCBF29CE484222325ull;
    for (int r = 0; r <= NROWS; ++r) h_layout = fnv_mix(h_layout, row_ptr[r]);
    for (int k = 0; k < NNZ; ++k)
        h_layout = fnv_mix(h_layout, ((uint64_t)owner[k] << 32) | (uint32_t)col_idx[k]);
    double vsum = 0.0, ysum = 0.0;
    for (int k = 0; k < NNZ; ++k) vsum += (double)values[k] * (double)(k % 1000 + 1);
    for (int r = 0; r < NROWS; ++r) ysum += (double)y[r] * (double)(r % 1000 + 1);
    printf("nnz %u (row_ptr[%d])\n", row_ptr[NROWS], NROWS);
    printf("checksum_layout 0x%016llx\n", (unsigned long long)h_layout);
    printf("checksum_values %.10e\n", vsum);
    printf("checksum_y %.10e\n", ysum);
    printf("mismatches vs host CSR %d\n", mismatches);
    printf("row 0: %u entries, first col %d\n", row_ptr[1] - row_ptr[0], col_idx[row_ptr[0]]);
    const int samples[3] = {0, 4097, NROWS - 2};
    for (int s = 0; s < 3; ++s) printf("y[%d] = %.10e\n", samples[s], (double)y[samples[s]]);

    CHECK(hipFree(d_row)); CHECK(hipFree(d_col)); CHECK(hipFree(d_val)); CHECK(hipFree(d_x));
    CHECK(hipFree(d_counts)); CHECK(hipFree(d_cursor)); CHECK(hipFree(d_row_ptr));
    CHECK(hipFree(d_tile_sums)); CHECK(hipFree(d_tile_offsets)); CHECK(hipFree(d_total));
    CHECK(hipFree(d_owner)); CHECK(hipFree(d_col_idx)); CHECK(hipFree(d_values));
    CHECK(hipFree(d_y));
    return 0;
}
