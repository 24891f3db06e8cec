// batched_binary_search.cu
// Answers many lower_bound / upper_bound queries against a sorted array.
// The kernel is a template (instantiated for int and float). To reduce
// global memory traffic, every block first caches a sparse sample of the
// sorted array ("splitters") in shared memory, binary-searches the sample to
// narrow the range, and only then searches the global array.
// Per-query results: lower bound index and number of equal elements.

#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define CHECK(call)                                                              \
    do {                                                                         \
        const cudaError_t error_code = call;                                     \
        if (error_code != cudaSuccess) {                                         \
            printf("CUDA Error: %s:%d, code:%d, reason: %s\n", __FILE__, __LINE__, \
                   error_code, cudaGetErrorString(error_code));                  \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define SAMPLE_SIZE 256  // splitters cached per block

// First index in [lo, hi) with a[idx] >= key (or > key when UPPER).
template <typename T, bool UPPER>
__device__ __forceinline__ int bound_search(const T* a, int lo, int hi, T key) {
    while (lo < hi) {
        int mid = lo + ((hi - lo) >> 1);
        bool go_right = UPPER ? !(key < a[mid]) : (a[mid] < key);
        if (go_right) lo = mid + 1; else hi = mid;
    }
    return lo;
}

template <typename T>
__global__ void search_kernel(const T* __restrict__ sorted, int n, const T* __restrict__ queries,
                              int num_queries, int* __restrict__ lower_out,
                              int* __restrict__ count_out, unsigned long long* __restrict__ hits) {
    __shared__ T s_sample[SAMPLE_SIZE];
    const int step = (n + SAMPLE_SIZE - 1) / SAMPLE_SIZE;
    for (int s = threadIdx.x; s < SAMPLE_SIZE; s += blockDim.x) {
        int src = min(s * step, n - 1);
        s_sample[s] = sorted[src];
    }
    __syncthreads();

    unsigned int local_hits = 0;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < num_queries;
         q += gridDim.x * blockDim.x) {
        const T key = queries[q];
        // Locate the bracket in the cached sample: sample[b-1] < key <= sample[b]
        int b = bound_search<T, false>(s_sample, 0, SAMPLE_SIZE, key);
        int lo = (b == 0) ? 0 : min((b - 1) * step, n);
        int hi = min(b * step + 1, n);
        int lower = bound_search<T, false>(sorted, lo, hi, key);
        // Equal keys can extend beyond the bracket, so search to the end.
        int upper = bound_search<T, true>(sorted, lower, n, key);
        lower_out[q] = lower;
        count_out[q] = upper - lower;
        if (upper > lower) ++local_hits;
    }
    if (local_hits) atomicAdd(hits, (unsigned long long)local_hits);
}

struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed) {}
    uint32_t operator()() { s = s * 3935559000370003845ULL + 2691343689449507681ULL; return (uint32_t)(s >> 33); }
};

template <typename T>
static int run_search(const char* name, const std::vector<T>& data, const std::vector<T>& queries) {
    const int n = (int)data.size(), nq = (int)queries.size();
    T *d_data, *d_q;
    int *d_lower, *d_count;
    unsigned long long* d_hits;
    CHECK(cudaMalloc(&d_data, n * sizeof(T)));
    CHECK(cudaMalloc(&d_q, nq * sizeof(T)));
    CHECK(cudaMalloc(&d_lower, nq * sizeof(int)));
    CHECK(cudaMalloc(&d_count, nq * sizeof(int)));
    CHECK(cudaMalloc(&d_hits, sizeof(unsigned long long)));
    CHECK(cudaMemcpy(d_data, data.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_q, queries.data(), nq * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_hits, 0, sizeof(unsigned long long)));

    search_kernel<T><<<80, 256>>>(d_data, n, d_q, nq, d_lower, d_count, d_hits);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<int> lower(nq), count(nq);
    unsigned long long hits = 0;
    CHECK(cudaMemcpy(lower.data(), d_lower, nq * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(count.data(), d_count, nq * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hits, d_hits, sizeof(hits), cudaMemcpyDeviceToHost));

    int errors = 0;
    long long sum_lower = 0, sum_count = 0;
    for (int q = 0; q < nq; ++q) {
        auto range = std::equal_range(data.begin(), data.end(), queries[q]);
        int ref_lo = (int)(range.first - data.begin());
        int ref_cnt = (int)(range.second - range.first);
        if (lower[q] != ref_lo || count[q] != ref_cnt) ++errors;
        sum_lower += lower[q];
        sum_count += count[q];
    }
    printf("[%s] n=%d queries=%d hits=%llu sum_lower=%lld sum_count=%lld errors=%d\n", name, n, nq,
           hits, sum_lower, sum_count, errors);
    printf("[%s] q0=%.3f -> lower=%d count=%d\n", name, (double)queries[0], lower[0], count[0]);

    CHECK(cudaFree(d_data)); CHECK(cudaFree(d_q)); CHECK(cudaFree(d_lower));
    CHECK(cudaFree(d_count)); CHECK(cudaFree(d_hits));
    return errors;
}

int main() {
    const int n = 1 << 18, nq = 1 << 16;
    Lcg rng(77);

    std::vector<int> idata(n), iq(nq);
    for (auto& v : idata) v = (int)(rng() % 500000u) - 250000;  // duplicates likely
    std::sort(idata.begin(), idata.end());
    for (auto& v : iq) v = (int)(rng() % 520000u) - 260000;     // some out of range

    std::vector<float> fdata(n), fq(nq);
    for (auto& v : fdata) v = (float)(rng() % 100000u) * 0.125f;
    std::sort(fdata.begin(), fdata.end());
    for (int i = 0; i < nq; ++i)
        fq[i] = (i % 3 == 0) ? fdata[rng() % n] : (float)(rng() % 100000u) * 0.125f + 0.0625f;

    int errors = run_search<int>("int", idata, iq);
    errors += run_search<float>("float", fdata, fq);
    return errors == 0 ? 0 : 1;
}
