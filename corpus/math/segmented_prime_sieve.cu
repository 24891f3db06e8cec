// segmented_prime_sieve.cu
// Segmented Sieve of Eratosthenes. Every block sieves one segment of
// SEGMENT numbers inside a statically allocated shared-memory bitmap
// (bit set = composite), then
//   * counts the primes of the segment and adds their sum (64-bit atomics),
//   * finds the first/last prime and the largest prime gap in the segment
//     (atomicMax merges the gaps of all segments),
//   * writes the bitmap back to global memory.
// A second kernel counts twin primes (p, p + 2) on the global bitmap with a
// grid-stride loop. Gaps that straddle two segments are handled on the host.

#include "math_common.cuh"
#include <algorithm>
#include <vector>

#define SEGMENT 32768                  // numbers per block
#define SEG_WORDS (SEGMENT / 32)
#define SIEVE_THREADS 256
#define WORDS_PER_THREAD (SEG_WORDS / SIEVE_THREADS)

__device__ __forceinline__ void mark_composite(unsigned int* bits, unsigned int local) {
    atomicOr(&bits[local >> 5], 1u << (local & 31u));
}

__global__ void sieve_segments(const unsigned int* __restrict__ base_primes, int num_base,
                               unsigned int* __restrict__ composite_out,
                               unsigned long long* prime_count, unsigned long long* prime_sum,
                               unsigned int* max_gap, int* seg_first, int* seg_last) {
    __shared__ unsigned int s_bits[SEG_WORDS];
    __shared__ int s_first[SIEVE_THREADS], s_last[SIEVE_THREADS], s_gap[SIEVE_THREADS];
    const unsigned int lo = blockIdx.x * SEGMENT;

    for (int w = threadIdx.x; w < SEG_WORDS; w += blockDim.x) s_bits[w] = 0u;
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicOr(&s_bits[0], 0x3u);  // 0, 1 not prime

    // Each thread strikes out the multiples of a subset of the base primes.
    for (int i = threadIdx.x; i < num_base; i += blockDim.x) {
        const unsigned int p = base_primes[i];
        unsigned int start = max(p * p, ((lo + p - 1) / p) * p);
        for (unsigned int m = start; m < lo + SEGMENT; m += p) mark_composite(s_bits, m - lo);
    }
    __syncthreads();

    // Scan a contiguous run of words per thread: count, sum, first/last, gap.
    int first = -1, last = -1, gap = 0;
    unsigned int count = 0;
    unsigned long long sum = 0;
    for (int k = 0; k < WORDS_PER_THREAD; ++k) {
        const int w = threadIdx.x * WORDS_PER_THREAD + k;
        const unsigned int word = s_bits[w];
        composite_out[blockIdx.x * SEG_WORDS + w] = word;
        unsigned int primes = ~word;
        count += __popc(primes);
        while (primes) {
            const int n = (int)lo + w * 32 + (__ffs(primes) - 1);
            if (first < 0) first = n;
            if (last >= 0) gap = max(gap, n - last);
            last = n;
            sum += (unsigned long long)n;
            primes &= primes - 1u;
        }
    }
    s_first[threadIdx.x] = first;
    s_last[threadIdx.x] = last;
    s_gap[threadIdx.x] = gap;
    atomicAdd(prime_count, (unsigned long long)count);
    atomicAdd(prime_sum, sum);
    __syncthreads();

    if (threadIdx.x == 0) {  // merge the per-thread runs in order
        int f = -1, l = -1, g = 0;
        for (int t = 0; t < SIEVE_THREADS; ++t) {
            if (s_first[t] < 0) continue;
            if (f < 0) f = s_first[t];
            if (l >= 0) g = max(g, s_first[t] - l);
            g = max(g, s_gap[t]);
            l = s_last[t];
        }
        seg_first[blockIdx.x] = f;
        seg_last[blockIdx.x] = l;
        atomicMax(max_gap, (unsigned int)g);
    }
}

__global__ void count_twin_primes(const unsigned int* __restrict__ composite, int num_words,
                                  unsigned int* twins) {
    unsigned int local = 0;
    for (int w = blockIdx.x * blockDim.x + threadIdx.x; w < num_words; w += gridDim.x * blockDim.x) {
        unsigned long long lo_word = ~composite[w] & 0xffffffffull;
        unsigned long long hi_word = (w + 1 < num_words) ? (~composite[w + 1] & 0xffffffffull) : 0ull;
        unsigned long long window = lo_word | (hi_word << 32);
        local += __popcll(window & (window >> 2) & 0xffffffffull);  // p and p+2 both prime
    }
    atomicAdd(twins, local);
}

int main() {
    const int segments = 512;
    const unsigned int limit = (unsigned int)segments * SEGMENT;  // 2^24
    const int num_words = (int)(limit / 32);

    // Base primes up to sqrt(limit) with a tiny host sieve.
    const unsigned int root = 4096;
    std::vector<char> small(root + 1, 1);
    std::vector<unsigned int> base;
    for (unsigned int i = 2; i <= root; ++i) {
        if (!small[i]) continue;
        base.push_back(i);
        for (unsigned int j = i * i; j <= root; j += i) small[j] = 0;
    }

    unsigned int *d_base, *d_bits, *d_gap, *d_twins;
    unsigned long long* d_stats;
    int *d_first, *d_last;
    CUDA_CHECK(cudaMalloc(&d_base, base.size() * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_bits, num_words * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_stats, 2 * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&d_gap, sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_twins, sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_first, segments * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_last, segments * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_base, base.data(), base.size() * sizeof(unsigned int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_stats, 0, 2 * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemset(d_gap, 0, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemset(d_twins, 0, sizeof(unsigned int)));

    sieve_segments<<<segments, SIEVE_THREADS>>>(d_base, (int)base.size(), d_bits, d_stats,
                                                d_stats + 1, d_gap, d_first, d_last);
    CUDA_CHECK_LAUNCH();
    count_twin_primes<<<128, 256>>>(d_bits, num_words, d_twins);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());

    unsigned long long stats[2];
    unsigned int gap = 0, twins = 0;
    std::vector<int> first(segments), last(segments);
    CUDA_CHECK(cudaMemcpy(stats, d_stats, sizeof(stats), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&gap, d_gap, sizeof(gap), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&twins, d_twins, sizeof(twins), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(first.data(), d_first, segments * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(last.data(), d_last, segments * sizeof(int), cudaMemcpyDeviceToHost));

    // Gaps across segment boundaries.
    int prev_last = -1, largest_prime = -1;
    for (int s = 0; s < segments; ++s) {
        if (first[s] < 0) continue;
        if (prev_last >= 0) gap = std::max(gap, (unsigned int)(first[s] - prev_last));
        prev_last = last[s];
        largest_prime = last[s];
    }

    printf("limit=%u base_primes=%zu\n", limit, base.size());
    printf("pi(limit)=%llu sum=%llu largest=%d\n", stats[0], stats[1], largest_prime);
    printf("max_gap=%u twin_pairs=%u\n", gap, twins);
    return stats[0] == 1077871ull ? 0 : 1;  // known value of pi(2^24)
}
