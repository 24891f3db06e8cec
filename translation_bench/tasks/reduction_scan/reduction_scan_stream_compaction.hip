#include "hip/hip_runtime.h"
// Stable stream compaction of 2^22 integers through a three-kernel scan pipeline:
//  1) tile_count: each 1024-element tile counts the values that pass a predicate
//     (block scan built from __shfl_up_sync warp scans plus a warp-totals pass);
//  2) scan_tile_counts: one block turns the per-tile counts into exclusive tile
//     offsets with a double-buffered Kogge-Stone scan in shared memory;
//  3) tile_scatter: each tile rescans its flags and writes the kept values and
//     their original indices to their final, order-preserving positions.
// The host reads the total between launches and checks the result sequentially.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        hipError_t err_ = (call);                                            \
        if (err_ != hipSuccess) {                                            \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,  \
                    __LINE__, hipGetErrorString(err_));                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define THREADS 256
#define ITEMS 4
#define TILE (THREADS * ITEMS)
#define SCAN_THREADS 1024

__host__ __device__ inline bool keep(int v) { return ((v % 10) + 10) % 10 < 3; }

// Exclusive scan of one int per thread across the block; also returns the total.
__device__ int block_exclusive_scan(int v, int& total) {
    __shared__ int warp_tot[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int nwarps = blockDim.x >> 5;
    int x = v;
    for (int o = 1; o < 32; o <<= 1) {
        int y = __shfl_up(x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_tot[warp] = x;
    __syncthreads();
    if (warp == 0) {
        int w = (lane < nwarps) ? warp_tot[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            int y = __shfl_up(w, o);
            if (lane >= o) w += y;
        }
        warp_tot[lane] = w;  // inclusive warp totals
    }
    __syncthreads();
    total = warp_tot[nwarps - 1];
    int warp_prefix = warp ? warp_tot[warp - 1] : 0;
    return warp_prefix + x - v;
}

__global__ void tile_count(const int* __restrict__ in, int n, int* __restrict__ tile_counts) {
    int base = blockIdx.x * TILE + threadIdx.x * ITEMS;
    int c = 0;
    for (int k = 0; k < ITEMS; ++k)
        if (base + k < n && keep(in[base + k])) ++c;
    int total;
    block_exclusive_scan(c, total);
    if (threadIdx.x == 0) tile_counts[blockIdx.x] = total;
}

__global__ void scan_tile_counts(const int* __restrict__ counts, int num_tiles,
                                 int* __restrict__ offsets) {
    __shared__ int buf[2][SCAN_THREADS];
    int t = threadIdx.x;
    int per = (num_tiles + SCAN_THREADS - 1) / SCAN_THREADS;
    int local = 0;
    for (int k = 0; k < per; ++k) {
        int idx = t * per + k;
        if (idx < num_tiles) local += counts[idx];
    }
    buf[0][t] = local;
    __syncthreads();
    int src = 0;
    for (int o = 1; o < SCAN_THREADS; o <<= 1) {
        int v = buf[src][t];
        if (t >= o) v += buf[src][t - o];
        buf[src ^ 1][t] = v;
        src ^= 1;
        __syncthreads();
    }
    int run = buf[src][t] - local;
    for (int k = 0; k < per; ++k) {
        int idx = t * per + k;
        if (idx < num_tiles) {
            offsets[idx] = run;
            run += counts[idx];
        }
    }
    if (t == SCAN_THREADS - 1) offsets[num_tiles] = buf[src][t];
}

__global__ void tile_scatter(const int* __restrict__ in, int n, const int* __restrict__ offsets,
                             int* __restrict__ out_vals, int* __restrict__ out_idx) {
    int base = blockIdx.x * TILE + threadIdx.x * ITEMS;
    int vals[ITEMS];
    int c = 0;
    for (int k = 0; k < ITEMS; ++k) {
        vals[k] = (base + k < n) ? in[base + k] : 0;
        if (base + k < n && keep(vals[k])) ++c;
    }
    int total;
    int pos = offsets[blockIdx.x] + block_exclusive_scan(c, total);
    for (int k = 0; k < ITEMS; ++k) {
        if (base + k < n && keep(vals[k])) {
            out_vals[pos] = vals[k];
            out_idx[pos] = base + k;
            ++pos;
        }
    }
}

int main(int argc, char** argv) {
    const int n = 1 << 22;
    const int num_tiles = (n + TILE - 1) / TILE;
    std::vector<int> h_in(n);
    uint64_t s = 0x5DEECE66DULL;
    if (argc > 1) s = strtoull(argv[1], nullptr, 0);
    for (int i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        h_in[i] = (int)(uint32_t)(s >> 32);
    }

    int *d_in, *d_counts, *d_offsets, *d_vals, *d_idx;
    CK(hipMalloc(&d_in, n * sizeof(int)));
    CK(hipMalloc(&d_counts, num_tiles * sizeof(int)));
    CK(hipMalloc(&d_offsets, (num_tiles + 1) * sizeof(int)));
    CK(hipMalloc(&d_vals, n * sizeof(int)));
    CK(hipMalloc(&d_idx, n * sizeof(int)));
    CK(hipMemcpy(d_in, h_in.data(), n * sizeof(int), hipMemcpyHostToDevice));
    CK(hipMemset(d_counts, 0xFF, num_tiles * sizeof(int)));
    CK(hipMemset(d_offsets, 0xFF, (num_tiles + 1) * sizeof(int)));
    CK(hipMemset(d_vals, 0xFF, n * sizeof(int)));
    CK(hipMemset(d_idx, 0xFF, n * sizeof(int)));

    tile_count<<<num_tiles, THREADS>>>(d_in, n, d_counts);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());
    scan_tile_counts<<<1, SCAN_THREADS>>>(d_counts, num_tiles, d_offsets);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());

    int total = -1;
    CK(hipMemcpy(&total, d_offsets + num_tiles, sizeof(int), hipMemcpyDeviceToHost));
    if (total < 0 || total > n) {
        fprintf(stderr, "bad compacted size %d\n", total);
        return 1;
    }
    tile_scatter<<<num_tiles, THREADS>>>(d_in, n, d_offsets, d_vals, d_idx);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());

    std::vector<int> offsets(num_tiles + 1), vals(total), idx(total);
    CK(hipMemcpy(offsets.data(), d_offsets, (num_tiles + 1) * sizeof(int), hipMemcpyDeviceToHost));
    CK(hipMemcpy(vals.data(), d_vals, total * sizeof(int), hipMemcpyDeviceToHost));
    CK(hipMemcpy(idx.data(), d_idx, total * sizeof(int), hipMemcpyDeviceToHost));

    int mismatches = 0, j = 0;
    for (int i = 0; i < n; ++i) {
        if (!keep(h_in[i])) continue;
        if (j >= total || vals[j] != h_in[i] || idx[j] != i) ++mismatches;
        ++j;
    }
    if (j != total) ++mismatches;

    uint64_t h = 0xCBF29CE484222325ULL;
    for (int t = 0; t <= num_tiles; ++t) { h ^= (uint32_t)offsets[t]; h *= 0x100000001B3ULL; }
    for (int k = 0; k < total; ++k) {
        h ^= (uint32_t)vals[k];
        h *= 0x100000001B3ULL;
        h ^= (uint32_t)idx[k];
        h *= 0x100000001B3ULL;
    }

    printf("kept %d of %d\n", total, n);
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("host mismatches = %d\n", mismatches);
    printf("tile_offset[%d] = %d\n", num_tiles / 2, offsets[num_tiles / 2]);
    const int samp[3] = {0, total / 2, total - 1};
    for (int k = 0; k < 3; ++k)
        printf("out[%d] = %d (from index %d)\n", samp[k], vals[samp[k]], idx[samp[k]]);

    CK(hipFree(d_in));
    CK(hipFree(d_counts));
    CK(hipFree(d_offsets));
    CK(hipFree(d_vals));
    CK(hipFree(d_idx));
    return 0;
}
