// Rank (counting) sort: every thread computes the final position of one key by
// counting how many keys are smaller (ties broken by original index, so the sort
// is stable), then scatters the key and its original index to that position.
// Prints an FNV-1a checksum over the sorted keys and the permutation, a sortedness
// check done on the host, and a few sampled entries.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,  \
                    __LINE__, cudaGetErrorString(err_));                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static uint64_t g_lcg = 0x2545F4914F6CDD1DULL;
static uint32_t lcg_next() {
    g_lcg = g_lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_lcg >> 32);
}

static uint64_t fnv1a_words(uint64_t h, const uint32_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001B3ULL;
    }
    return h;
}

// One thread per key: rank = #{j : a[j] < a[i] or (a[j] == a[i] and j < i)}.
__global__ void rank_scatter(const uint32_t* __restrict__ keys, int n,
                             uint32_t* __restrict__ sorted_keys,
                             uint32_t* __restrict__ perm) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t k = keys[i];
    int rank = 0;
    for (int j = 0; j < n; ++j) {
        uint32_t o = keys[j];
        rank += (o < k) || (o == k && j < i);
    }
    sorted_keys[rank] = k;
    perm[rank] = (uint32_t)i;
}

int main(int argc, char** argv) {
    if (argc > 1) g_lcg = strtoull(argv[1], nullptr, 0);
    const int n = 1 << 14;
    std::vector<uint32_t> h_keys(n);
    for (int i = 0; i < n; ++i) h_keys[i] = lcg_next() % 40000u;  // many duplicates

    uint32_t *d_keys = nullptr, *d_sorted = nullptr, *d_perm = nullptr;
    CK(cudaMalloc(&d_keys, n * sizeof(uint32_t)));
    CK(cudaMalloc(&d_sorted, n * sizeof(uint32_t)));
    CK(cudaMalloc(&d_perm, n * sizeof(uint32_t)));
    CK(cudaMemcpy(d_keys, h_keys.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_sorted, 0xFF, n * sizeof(uint32_t)));
    CK(cudaMemset(d_perm, 0xFF, n * sizeof(uint32_t)));

    const int block = 256;
    rank_scatter<<<(n + block - 1) / block, block>>>(d_keys, n, d_sorted, d_perm);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    std::vector<uint32_t> h_sorted(n), h_perm(n);
    CK(cudaMemcpy(h_sorted.data(), d_sorted, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h_perm.data(), d_perm, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));

    // Host check: non-decreasing keys, stable permutation consistent with input.
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        uint32_t p = h_perm[i];
        if (p >= (uint32_t)n || h_keys[p] != h_sorted[i]) ++bad;
        if (i > 0) {
            if (h_sorted[i - 1] > h_sorted[i]) ++bad;
            else if (h_sorted[i - 1] == h_sorted[i] && h_perm[i - 1] >= h_perm[i]) ++bad;
        }
    }

    uint64_t h = 0xCBF29CE484222325ULL;
    h = fnv1a_words(h, h_sorted.data(), n);
    h = fnv1a_words(h, h_perm.data(), n);

    printf("n = %d\n", n);
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("violations = %d\n", bad);
    printf("sorted[0] = %u perm[0] = %u\n", h_sorted[0], h_perm[0]);
    printf("sorted[%d] = %u perm[%d] = %u\n", n / 2, h_sorted[n / 2], n / 2, h_perm[n / 2]);
    printf("sorted[%d] = %u perm[%d] = %u\n", n - 1, h_sorted[n - 1], n - 1, h_perm[n - 1]);

    CK(cudaFree(d_keys));
    CK(cudaFree(d_sorted));
    CK(cudaFree(d_perm));
    return 0;
}
