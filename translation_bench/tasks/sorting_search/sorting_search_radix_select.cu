// Radix selection: finds the k-th smallest of 2^22 unsigned keys for several ranks k
// without sorting. Each of four passes (most significant byte first) builds a
// 256-bin histogram of the keys that still match the already-decided prefix
// (shared-memory bins with integer atomics, merged into global bins); the host
// scans the bins, fixes one more byte of the answer and launches the next pass.
// A final kernel classifies every key into the bucket between the sorted pivots
// (binary search over the pivots) and counts bucket sizes with atomics.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,  \
                    __LINE__, cudaGetErrorString(err_));                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define NUM_K 5

static uint64_t g_lcg = 0x853C49E6748FEA9BULL;
static uint32_t lcg_next() {
    g_lcg = g_lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_lcg >> 32);
}

__global__ void digit_histogram(const uint32_t* __restrict__ keys, int n, uint32_t prefix,
                                uint32_t prefix_mask, int shift, unsigned int* __restrict__ hist) {
    __shared__ unsigned int bins[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) bins[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint32_t v = keys[i];
        if ((v & prefix_mask) == prefix) atomicAdd(&bins[(v >> shift) & 0xFFu], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (bins[b]) atomicAdd(&hist[b], bins[b]);
}

__constant__ uint32_t c_pivots[NUM_K];

// bucket = number of pivots strictly smaller than the key (lower_bound position)
__global__ void classify(const uint32_t* __restrict__ keys, int n, uint8_t* __restrict__ bucket,
                         unsigned int* __restrict__ counts) {
    __shared__ unsigned int local[NUM_K + 1];
    if (threadIdx.x <= NUM_K) local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint32_t v = keys[i];
        int lo = 0, hi = NUM_K;
        while (lo < hi) {
            int mid = (lo + hi) >> 1;
            if (c_pivots[mid] < v) lo = mid + 1;
            else hi = mid;
        }
        bucket[i] = (uint8_t)lo;
        atomicAdd(&local[lo], 1u);
    }
    __syncthreads();
    if (threadIdx.x <= NUM_K) atomicAdd(&counts[threadIdx.x], local[threadIdx.x]);
}

int main(int argc, char** argv) {
    if (argc > 1) g_lcg = strtoull(argv[1], nullptr, 0);
    const int n = 1 << 22;
    std::vector<uint32_t> h_keys(n);
    for (int i = 0; i < n; ++i) {
        uint32_t r = lcg_next();
        // skewed distribution: many keys share their high bytes
        h_keys[i] = (r & 3u) ? (r >> 8) : r;
    }
    uint32_t* d_keys;
    unsigned int* d_hist;
    CK(cudaMalloc(&d_keys, n * sizeof(uint32_t)));
    CK(cudaMalloc(&d_hist, 256 * sizeof(unsigned int)));
    CK(cudaMemcpy(d_keys, h_keys.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));

    const int ranks[NUM_K] = {0, 777, n / 4, n / 2, n - 1};
    uint32_t found[NUM_K];
    const int block = 256, grid = 512;
    for (int q = 0; q < NUM_K; ++q) {
        uint32_t prefix = 0, mask = 0;
        unsigned int k = (unsigned int)ranks[q];
        for (int shift = 24; shift >= 0; shift -= 8) {
            CK(cudaMemset(d_hist, 0, 256 * sizeof(unsigned int)));
            digit_histogram<<<grid, block>>>(d_keys, n, prefix, mask, shift, d_hist);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            unsigned int hist[256];
            CK(cudaMemcpy(hist, d_hist, sizeof(hist), cudaMemcpyDeviceToHost));
            int digit = 0;
            while (digit < 255 && k >= hist[digit]) k -= hist[digit++];
            prefix |= (uint32_t)digit << shift;
            mask |= 0xFFu << shift;
        }
        found[q] = prefix;
    }

    CK(cudaMemcpyToSymbol(c_pivots, found, sizeof(found)));
    uint8_t* d_bucket;
    unsigned int* d_counts;
    CK(cudaMalloc(&d_bucket, n));
    CK(cudaMalloc(&d_counts, (NUM_K + 1) * sizeof(unsigned int)));
    CK(cudaMemset(d_bucket, 0xFF, n));
    CK(cudaMemset(d_counts, 0, (NUM_K + 1) * sizeof(unsigned int)));
    classify<<<grid, block>>>(d_keys, n, d_bucket, d_counts);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    std::vector<uint8_t> h_bucket(n);
    unsigned int counts[NUM_K + 1];
    CK(cudaMemcpy(h_bucket.data(), d_bucket, n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(counts, d_counts, sizeof(counts), cudaMemcpyDeviceToHost));

    // Host reference for the selected values.
    std::vector<uint32_t> ref(h_keys);
    std::sort(ref.begin(), ref.end());
    int mismatches = 0;
    for (int q = 0; q < NUM_K; ++q) mismatches += (ref[ranks[q]] != found[q]);

    uint64_t h = 0xCBF29CE484222325ULL;
    for (int i = 0; i < n; ++i) {
        h ^= h_bucket[i];
        h *= 0x100000001B3ULL;
    }
    for (int q = 0; q < NUM_K; ++q) {
        h ^= found[q];
        h *= 0x100000001B3ULL;
    }

    printf("checksum 0x%016llx\n", (unsigned long long)h);
    for (int q = 0; q < NUM_K; ++q) printf("rank %d -> 0x%08x\n", ranks[q], found[q]);
    printf("bucket counts: %u %u %u %u %u %u\n", counts[0], counts[1], counts[2], counts[3],
           counts[4], counts[5]);
    printf("host mismatches = %d\n", mismatches);

    CK(cudaFree(d_keys));
    CK(cudaFree(d_hist));
    CK(cudaFree(d_bucket));
    CK(cudaFree(d_counts));
    return 0;
}
