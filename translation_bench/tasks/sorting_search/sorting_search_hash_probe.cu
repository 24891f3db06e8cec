// Open-addressing hash table on the GPU: 2^18 unique keys are inserted with
// linear probing (slots claimed with atomicCAS), then 2^20 queries (half present,
// half random) look their keys up. Each query writes the stored value or a
// NOT_FOUND marker; hits are counted with an integer atomic. The table layout may
// depend on scheduling, but the query results do not, and only they are printed.
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

#define EMPTY_KEY 0xFFFFFFFFu
#define NOT_FOUND 0xFFFFFFFEu
#define CAPACITY (1u << 19)

// murmur3 finaliser: a bijection on 32-bit words
__host__ __device__ inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

__device__ inline uint32_t slot_of(uint32_t key) { return (key * 2654435761u) & (CAPACITY - 1); }

__global__ void insert_keys(const uint32_t* __restrict__ keys, const uint32_t* __restrict__ vals,
                            int n, uint32_t* table_keys, uint32_t* table_vals) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t key = keys[i];
    uint32_t s = slot_of(key);
    while (true) {
        uint32_t prev = atomicCAS(&table_keys[s], EMPTY_KEY, key);
        if (prev == EMPTY_KEY || prev == key) {
            table_vals[s] = vals[i];
            return;
        }
        s = (s + 1) & (CAPACITY - 1);
    }
}

__global__ void probe_keys(const uint32_t* __restrict__ queries, int q,
                           const uint32_t* __restrict__ table_keys,
                           const uint32_t* __restrict__ table_vals, uint32_t* __restrict__ result,
                           unsigned int* hits) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= q) return;
    uint32_t key = queries[i];
    uint32_t s = slot_of(key);
    uint32_t out = NOT_FOUND;
    for (uint32_t step = 0; step < CAPACITY; ++step) {
        uint32_t k = table_keys[s];
        if (k == key) {
            out = table_vals[s];
            break;
        }
        if (k == EMPTY_KEY) break;
        s = (s + 1) & (CAPACITY - 1);
    }
    result[i] = out;
    if (out != NOT_FOUND) atomicAdd(hits, 1u);
}

static uint64_t g_lcg = 0xDA3E39CB94B95BDBULL;
static uint32_t lcg_next() {
    g_lcg = g_lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_lcg >> 32);
}

int main(int argc, char** argv) {
    if (argc > 1) g_lcg = strtoull(argv[1], nullptr, 0);
    const int n = 1 << 18, q = 1 << 20;
    std::vector<uint32_t> hk(n), hv(n), hq(q);
    for (int i = 0; i < n; ++i) {
        // unique keys (fmix32 is a bijection); none of them equals the two markers
        hk[i] = fmix32((uint32_t)i * 2u + 1u);
        hv[i] = (uint32_t)i * 7u + 3u;
    }
    for (int i = 0; i < q; ++i) {
        uint32_t r = lcg_next();
        hq[i] = (i & 1) ? hk[r % n] : (r & 0xFFFFFFF0u);
    }

    uint32_t *d_k, *d_v, *d_q, *d_tk, *d_tv, *d_res;
    unsigned int* d_hits;
    CK(cudaMalloc(&d_k, n * sizeof(uint32_t)));
    CK(cudaMalloc(&d_v, n * sizeof(uint32_t)));
    CK(cudaMalloc(&d_q, q * sizeof(uint32_t)));
    CK(cudaMalloc(&d_tk, CAPACITY * sizeof(uint32_t)));
    CK(cudaMalloc(&d_tv, CAPACITY * sizeof(uint32_t)));
    CK(cudaMalloc(&d_res, q * sizeof(uint32_t)));
    CK(cudaMalloc(&d_hits, sizeof(unsigned int)));
    CK(cudaMemcpy(d_k, hk.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_v, hv.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_q, hq.data(), q * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_tk, 0xFF, CAPACITY * sizeof(uint32_t)));  // all slots EMPTY_KEY
    CK(cudaMemset(d_tv, 0, CAPACITY * sizeof(uint32_t)));
    CK(cudaMemset(d_res, 0xFF, q * sizeof(uint32_t)));        // sentinel, never a result
    CK(cudaMemset(d_hits, 0, sizeof(unsigned int)));

    const int block = 256;
    insert_keys<<<(n + block - 1) / block, block>>>(d_k, d_v, n, d_tk, d_tv);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    probe_keys<<<(q + block - 1) / block, block>>>(d_q, q, d_tk, d_tv, d_res, d_hits);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    std::vector<uint32_t> res(q);
    unsigned int hits = 0;
    CK(cudaMemcpy(res.data(), d_res, q * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hits, d_hits, sizeof(unsigned int), cudaMemcpyDeviceToHost));

    uint64_t h = 0xCBF29CE484222325ULL;
    unsigned long long value_sum = 0;
    for (int i = 0; i < q; ++i) {
        h ^= res[i];
        h *= 0x100000001B3ULL;
        if (res[i] != NOT_FOUND) value_sum += res[i];
    }
    printf("queries = %d hits = %u\n", q, hits);
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("sum of found values = %llu\n", value_sum);
    const int idx[4] = {0, 1, 4099, q - 1};
    for (int s = 0; s < 4; ++s)
        printf("result[%d] (key 0x%08x) = 0x%08x\n", idx[s], hq[idx[s]], res[idx[s]]);

    CK(cudaFree(d_k));
    CK(cudaFree(d_v));
    CK(cudaFree(d_q));
    CK(cudaFree(d_tk));
    CK(cudaFree(d_tv));
    CK(cudaFree(d_res));
    CK(cudaFree(d_hits));
    return 0;
}
