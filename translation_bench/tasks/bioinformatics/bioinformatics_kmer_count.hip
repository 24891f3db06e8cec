#include "hip/hip_runtime.h"
// Canonical 6-mer counting over a 4 Mbp DNA read set. A k-mer and its reverse complement
// count as one (the smaller 2-bit code is kept); k-mers that contain 'N' or cross a read
// boundary (reads are 150 bp) are skipped. Each block counts into a 4096-bin shared-memory
// histogram with integer atomics over a grid-stride loop, then merges it into the global
// histogram with global atomicAdd. The host checks the histogram against a CPU count.
#include <hip/hip_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        hipError_t err_ = (call);                                            \
        if (err_ != hipSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s at %s:%d\n",                      \
                    hipGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const int N = 1 << 22;        // bases
static const int K = 6;
static const int BINS = 1 << (2 * K);
static const int READ_LEN = 150;

__host__ __device__ inline int base_code(char b) {
    switch (b) {
        case 'A': return 0;
        case 'C': return 1;
        case 'G': return 2;
        case 'T': return 3;
        default: return -1;
    }
}

// Canonical code of the k-mer starting at s, or -1 when it is not countable.
__host__ __device__ inline int canonical_kmer(const char* seq, int s) {
    if (s / READ_LEN != (s + K - 1) / READ_LEN) return -1;   // crosses a read boundary
    int fwd = 0, rev = 0;
    for (int k = 0; k < K; ++k) {
        int c = base_code(seq[s + k]);
        if (c < 0) return -1;
        fwd = (fwd << 2) | c;
        rev |= (3 - c) << (2 * k);        // complement, written in reverse order
    }
    return fwd < rev ? fwd : rev;
}

__global__ void kmer_count_kernel(const char* seq, int n, unsigned int* counts) {
    __shared__ unsigned int hist[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    int stride = gridDim.x * blockDim.x;
    for (int s = blockIdx.x * blockDim.x + threadIdx.x; s <= n - K; s += stride) {
        int code = canonical_kmer(seq, s);
        if (code >= 0) atomicAdd(&hist[code], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (hist[b] != 0) atomicAdd(&counts[b], hist[b]);
}

// Every bin must be written: non-canonical bins get 0 (they were pre-filled with a sentinel).
__global__ void init_counts_kernel(unsigned int* counts) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < BINS) counts[b] = 0;
}

static uint64_t rng_state = 0xBE5466CF34E90C6Cull;
static uint64_t next_u64() {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        rng_state = strtoull(argv[1], nullptr, 0);
        if (rng_state == 0) rng_state = 0xBE5466CF34E90C6Cull;
    }
    const char alphabet[4] = {'A', 'C', 'G', 'T'};
    const char* motif = "GATTACAGGC";                 // planted repeat, raises a few counts
    std::vector<char> seq(N);
    for (int i = 0; i < N; ++i) {
        uint64_t r = next_u64();
        seq[i] = ((r >> 16) % 500 == 0) ? 'N' : alphabet[(r >> 40) & 3];
    }
    for (int i = 0; i + 10 < N; i += 997)
        for (int k = 0; k < 10; ++k) seq[i + k] = motif[k];

    unsigned int* d_counts;
    char* d_seq;
    CK(hipMalloc(&d_seq, N));
    CK(hipMalloc(&d_counts, BINS * sizeof(unsigned int)));
    CK(hipMemcpy(d_seq, seq.data(), N, hipMemcpyHostToDevice));
    CK(hipMemset(d_counts, 0xFF, BINS * sizeof(unsigned int)));

    init_counts_kernel<<<(BINS + 255) / 256, 256>>>(d_counts);
    CK(hipGetLastError());
    kmer_count_kernel<<<264, 512>>>(d_seq, N, d_counts);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());
    std::vector<unsigned int> counts(BINS);
    CK(hipMemcpy(counts.data(), d_counts, BINS * sizeof(unsigned int), hipMemcpyDeviceToHost));

    std::vector<unsigned int> ref(BINS, 0);
    for (int s = 0; s <= N - K; ++s) {
        int c = canonical_kmer(seq.data(), s);
        if (c >= 0) ref[c]++;
    }
    int mismatched_bins = 0, distinct = 0, top = 0;
    uint64_t total = 0, h = 0xCBF29CE484222325ull;
    for (int b = 0; b < BINS; ++b) {
        mismatched_bins += counts[b] != ref[b];
        distinct += counts[b] != 0;
        total += counts[b];
        if (counts[b] > counts[top]) top = b;
        h = (h ^ ((uint64_t)counts[b] << 12 | (uint64_t)b)) * 0x100000001B3ull;
        h ^= h >> 29;
    }
    char topstr[K + 1];
    for (int k = 0; k < K; ++k) topstr[k] = alphabet[(top >> (2 * (K - 1 - k))) & 3];
    topstr[K] = '\0';
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("host_mismatched_bins %d\n", mismatched_bins);
    printf("total_kmers %llu distinct_canonical %d\n", (unsigned long long)total, distinct);
    printf("top_kmer %s count %u\n", topstr, counts[top]);
    printf("count[ACGTAC] = %u\n", counts[(0 << 10) | (1 << 8) | (2 << 6) | (3 << 4) | (0 << 2) | 1]);
    printf("count[AAAAAA] = %u\n", counts[0]);
    CK(hipFree(d_seq));
    CK(hipFree(d_counts));
    return 0;
}
