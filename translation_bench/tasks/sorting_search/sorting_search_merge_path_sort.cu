// Stable key/value merge sort of 2^20 pairs in two phases:
//  1) tile_sort: each block sorts a 256-element tile in shared memory by computing
//     every element's stable rank inside the tile;
//  2) merge_pass: repeated bottom-up merges of sorted runs (width 256, 512, ...).
//     Each thread finds its start on the merge path with a co-rank binary search
//     and then merges a fixed chunk of outputs sequentially.
// The host drives the merge passes (ping-pong buffers) and verifies stability.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <utility>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,  \
                    __LINE__, cudaGetErrorString(err_));                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define TILE 256
#define CHUNK 16

static uint64_t g_xs = 0x9E3779B97F4A7C15ULL;
static uint64_t xorshift64() {
    g_xs ^= g_xs << 13;
    g_xs ^= g_xs >> 7;
    g_xs ^= g_xs << 17;
    return g_xs;
}

__global__ void tile_sort(const uint32_t* __restrict__ kin, const uint32_t* __restrict__ vin,
                          uint32_t* __restrict__ kout, uint32_t* __restrict__ vout, int n) {
    __shared__ uint32_t sk[TILE];
    __shared__ uint32_t sv[TILE];
    int base = blockIdx.x * TILE;
    int t = threadIdx.x;
    int len = min(TILE, n - base);
    if (t < len) {
        sk[t] = kin[base + t];
        sv[t] = vin[base + t];
    }
    __syncthreads();
    if (t < len) {
        uint32_t k = sk[t];
        int rank = 0;
        for (int j = 0; j < len; ++j) {
            uint32_t o = sk[j];
            rank += (o < k) || (o == k && j < t);
        }
        kout[base + rank] = k;
        vout[base + rank] = sv[t];
    }
}

// Number of elements taken from a among the first d outputs of merge(a, b),
// preferring a on ties (stability).
__device__ int co_rank(int d, const uint32_t* a, int la, const uint32_t* b, int lb) {
    int lo = max(0, d - lb);
    int hi = min(d, la);
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (a[mid] <= b[d - 1 - mid]) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

__global__ void merge_pass(const uint32_t* __restrict__ kin, const uint32_t* __restrict__ vin,
                           uint32_t* __restrict__ kout, uint32_t* __restrict__ vout,
                           int n, int width) {
    long long start = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * CHUNK;
    if (start >= n) return;
    int pair = (int)(start / (2LL * width));
    int a0 = pair * 2 * width;
    int la = min(width, n - a0);
    int b0 = a0 + la;
    int lb = min(width, n - b0);
    if (lb < 0) lb = 0;
    const uint32_t* a = kin + a0;
    const uint32_t* b = kin + b0;
    int d = (int)start - a0;
    int i = co_rank(d, a, la, b, lb);
    int j = d - i;
    int end = min(d + CHUNK, la + lb);
    for (int o = d; o < end; ++o) {
        bool take_a = (j >= lb) || (i < la && a[i] <= b[j]);
        if (take_a) {
            kout[a0 + o] = a[i];
            vout[a0 + o] = vin[a0 + i];
            ++i;
        } else {
            kout[a0 + o] = b[j];
            vout[a0 + o] = vin[b0 + j];
            ++j;
        }
    }
}

int main(int argc, char** argv) {
    if (argc > 1) g_xs = strtoull(argv[1], nullptr, 0);
    if (g_xs == 0) g_xs = 0x9E3779B97F4A7C15ULL;  // xorshift state must be nonzero
    const int n = 1 << 20;
    std::vector<uint32_t> hk(n), hv(n);
    for (int i = 0; i < n; ++i) {
        hk[i] = (uint32_t)(xorshift64() % 100003ULL);
        hv[i] = (uint32_t)i;
    }
    size_t bytes = n * sizeof(uint32_t);
    uint32_t *k0, *v0, *k1, *v1;
    CK(cudaMalloc(&k0, bytes));
    CK(cudaMalloc(&v0, bytes));
    CK(cudaMalloc(&k1, bytes));
    CK(cudaMalloc(&v1, bytes));
    CK(cudaMemcpy(k0, hk.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(v0, hv.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(k1, 0xFF, bytes));
    CK(cudaMemset(v1, 0xFF, bytes));

    tile_sort<<<(n + TILE - 1) / TILE, TILE>>>(k0, v0, k1, v1, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    uint32_t *kin = k1, *vin = v1, *kout = k0, *vout = v0;
    int passes = 0;
    const int block = 128;
    for (int width = TILE; width < n; width *= 2) {
        CK(cudaMemset(kout, 0xFF, bytes));
        CK(cudaMemset(vout, 0xFF, bytes));
        int threads = (n + CHUNK - 1) / CHUNK;
        merge_pass<<<(threads + block - 1) / block, block>>>(kin, vin, kout, vout, n, width);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::swap(kin, kout);
        std::swap(vin, vout);
        ++passes;
    }

    std::vector<uint32_t> rk(n), rv(n);
    CK(cudaMemcpy(rk.data(), kin, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(rv.data(), vin, bytes, cudaMemcpyDeviceToHost));

    int bad = 0;
    uint64_t h = 0xCBF29CE484222325ULL;
    for (int i = 0; i < n; ++i) {
        if (rv[i] >= (uint32_t)n || hk[rv[i]] != rk[i]) ++bad;
        if (i > 0 && (rk[i - 1] > rk[i] || (rk[i - 1] == rk[i] && rv[i - 1] >= rv[i]))) ++bad;
        h ^= rk[i];
        h *= 0x100000001B3ULL;
        h ^= rv[i];
        h *= 0x100000001B3ULL;
    }

    printf("n = %d merge passes = %d\n", n, passes);
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("violations = %d\n", bad);
    const int idx[4] = {0, 4097, n / 2, n - 1};
    for (int s = 0; s < 4; ++s)
        printf("key[%d] = %u val[%d] = %u\n", idx[s], rk[idx[s]], idx[s], rv[idx[s]]);

    CK(cudaFree(k0));
    CK(cudaFree(v0));
    CK(cudaFree(k1));
    CK(cudaFree(v1));
    return 0;
}
