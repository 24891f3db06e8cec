// radix_sort_lsd.cu
// Least-significant-digit radix sort of 32-bit unsigned keys, 4 bits per pass.
// Each pass runs three kernels:
//   1. digit_histogram  - per-tile digit counts (shared-memory atomics),
//                         stored digit-major: counts[digit * tiles + tile]
//   2. scan_counts      - single-block exclusive scan of all counts, which
//                         yields the global output offset of every
//                         (digit, tile) bucket
//   3. scatter_stable   - each element computes its rank among equal digits
//                         that precede it inside the tile and is scattered
// Because ranks preserve the input order, every pass is stable and the
// final result is fully sorted.

#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define CUDA_CHECK(ans) cuda_assert((ans), __FILE__, __LINE__)
static inline void cuda_assert(cudaError_t code, const char* file, int line) {
    if (code != cudaSuccess) {
        fprintf(stderr, "cuda_assert: %s %s %d\n", cudaGetErrorString(code), file, line);
        exit(code);
    }
}

#define RADIX_BITS 4
#define RADIX (1 << RADIX_BITS)
#define TILE 256
#define SCAN_THREADS 1024

__device__ __forceinline__ unsigned int extract_digit(unsigned int key, int shift) {
    return (key >> shift) & (RADIX - 1);
}

__global__ void digit_histogram(const unsigned int* __restrict__ keys, int n, int shift,
                                unsigned int* __restrict__ counts) {
    __shared__ unsigned int s_hist[RADIX];
    if (threadIdx.x < RADIX) s_hist[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) atomicAdd(&s_hist[extract_digit(keys[i], shift)], 1u);
    __syncthreads();
    if (threadIdx.x < RADIX) counts[threadIdx.x * gridDim.x + blockIdx.x] = s_hist[threadIdx.x];
}

// Exclusive scan of `len` values with one block: each thread serially scans a
// contiguous chunk, the chunk totals are scanned in shared memory, and the
// chunk prefix is added back.
__global__ void scan_counts(unsigned int* data, int len) {
    __shared__ unsigned int s_tot[SCAN_THREADS];
    const int per_thread = (len + SCAN_THREADS - 1) / SCAN_THREADS;
    const int begin = threadIdx.x * per_thread;
    const int end = min(begin + per_thread, len);

    unsigned int running = 0;
    for (int i = begin; i < end; ++i) {
        unsigned int v = data[i];
        data[i] = running;
        running += v;
    }
    s_tot[threadIdx.x] = running;
    __syncthreads();

    // Hillis-Steele inclusive scan over the thread totals.
    for (int off = 1; off < SCAN_THREADS; off <<= 1) {
        unsigned int add = (threadIdx.x >= off) ? s_tot[threadIdx.x - off] : 0u;
        __syncthreads();
        s_tot[threadIdx.x] += add;
        __syncthreads();
    }
    const unsigned int prefix = (threadIdx.x > 0) ? s_tot[threadIdx.x - 1] : 0u;
    for (int i = begin; i < end; ++i) data[i] += prefix;
}

__global__ void scatter_stable(const unsigned int* __restrict__ keys_in,
                               unsigned int* __restrict__ keys_out, int n, int shift,
                               const unsigned int* __restrict__ offsets) {
    __shared__ unsigned char s_digit[TILE];
    const int i = blockIdx.x * TILE + threadIdx.x;
    unsigned int key = 0, d = RADIX;  // RADIX marks "no element"
    if (i < n) {
        key = keys_in[i];
        d = extract_digit(key, shift);
    }
    s_digit[threadIdx.x] = (unsigned char)d;
    __syncthreads();
    if (i >= n) return;

    unsigned int rank = 0;
    for (int j = 0; j < (int)threadIdx.x; ++j) rank += (s_digit[j] == d) ? 1u : 0u;
    keys_out[offsets[d * gridDim.x + blockIdx.x] + rank] = key;
}

int main() {
    const int n = 100000;  // not a multiple of TILE on purpose
    const int tiles = (n + TILE - 1) / TILE;
    const int count_len = RADIX * tiles;

    std::vector<unsigned int> h_keys(n);
    uint32_t state = 2463534242u;
    for (int i = 0; i < n; ++i) {  // xorshift32 on the host
        state ^= state << 13; state ^= state >> 17; state ^= state << 5;
        h_keys[i] = state;
    }

    unsigned int *d_a, *d_b, *d_counts;
    CUDA_CHECK(cudaMalloc(&d_a, n * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_b, n * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_counts, count_len * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(d_a, h_keys.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));

    for (int shift = 0; shift < 32; shift += RADIX_BITS) {
        digit_histogram<<<tiles, TILE>>>(d_a, n, shift, d_counts);
        CUDA_CHECK(cudaGetLastError());
        scan_counts<<<1, SCAN_THREADS>>>(d_counts, count_len);
        CUDA_CHECK(cudaGetLastError());
        scatter_stable<<<tiles, TILE>>>(d_a, d_b, n, shift, d_counts);
        CUDA_CHECK(cudaGetLastError());
        std::swap(d_a, d_b);  // 8 passes -> result ends up back in d_a
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<unsigned int> h_out(n);
    CUDA_CHECK(cudaMemcpy(h_out.data(), d_a, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));

    std::vector<unsigned int> ref = h_keys;
    std::sort(ref.begin(), ref.end());
    int mismatches = 0;
    unsigned long long checksum = 0;
    for (int i = 0; i < n; ++i) {
        if (h_out[i] != ref[i]) ++mismatches;
        checksum = checksum * 1099511628211ULL ^ h_out[i];
    }
    printf("radix sort n=%d tiles=%d passes=%d\n", n, tiles, 32 / RADIX_BITS);
    printf("first=%u middle=%u last=%u\n", h_out[0], h_out[n / 2], h_out[n - 1]);
    printf("mismatches=%d checksum=%016llx\n", mismatches, checksum);

    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_counts));
    return mismatches == 0 ? 0 : 1;
}
