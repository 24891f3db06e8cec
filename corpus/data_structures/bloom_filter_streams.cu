// bloom_filter_streams.cu
// A GPU Bloom filter (bit array + K seeded hash functions). The hash seeds
// are kept in __constant__ memory. Keys are uploaded in chunks with
// cudaMemcpyAsync on two streams; inserts set bits with atomicOr, and query
// chunks wait on events recorded after all inserts. Results: the false
// negative count (must be zero), the false positive rate and the fill ratio.

#include "data_structures_common.cuh"
#include <cmath>

#define NUM_HASHES 6
#define FILTER_BITS (1u << 21)
#define FILTER_WORDS (FILTER_BITS / 32u)
#define NUM_STREAMS 2
#define THREADS 256

__constant__ unsigned int c_seeds[NUM_HASHES];

__device__ __forceinline__ unsigned int bit_index(unsigned int key, int h) {
    return seeded_hash(key, c_seeds[h]) & (FILTER_BITS - 1u);
}

__global__ void bloom_insert(unsigned int* filter, const unsigned int* keys, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const unsigned int key = keys[i];
#pragma unroll
        for (int h = 0; h < NUM_HASHES; ++h) {
            unsigned int bit = bit_index(key, h);
            atomicOr(&filter[bit >> 5], 1u << (bit & 31u));
        }
    }
}

__device__ __forceinline__ bool bloom_contains(const unsigned int* filter, unsigned int key) {
    for (int h = 0; h < NUM_HASHES; ++h) {
        unsigned int bit = bit_index(key, h);
        if ((filter[bit >> 5] & (1u << (bit & 31u))) == 0u) return false;
    }
    return true;
}

// Counts how many keys of the chunk test positive.
__global__ void bloom_query(const unsigned int* __restrict__ filter, const unsigned int* keys,
                            int n, unsigned int* positives) {
    __shared__ unsigned int s_hits;
    if (threadIdx.x == 0) s_hits = 0;
    __syncthreads();
    unsigned int local = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        local += bloom_contains(filter, keys[i]) ? 1u : 0u;
    if (local) atomicAdd(&s_hits, local);
    __syncthreads();
    if (threadIdx.x == 0 && s_hits) atomicAdd(positives, s_hits);
}

__global__ void count_set_bits(const unsigned int* filter, unsigned int* total) {
    __shared__ unsigned int s_part[THREADS];
    unsigned int c = 0;
    for (unsigned int w = blockIdx.x * blockDim.x + threadIdx.x; w < FILTER_WORDS; w += gridDim.x * blockDim.x)
        c += __popc(filter[w]);
    s_part[threadIdx.x] = c;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) s_part[threadIdx.x] += s_part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, s_part[0]);
}

int main() {
    const int n_insert = 200000, n_query = 200000;
    const int chunk_ins = n_insert / NUM_STREAMS, chunk_q = n_query / NUM_STREAMS;

    unsigned int h_seeds[NUM_HASHES];
    SplitMix64 rng(0xB100Full);
    for (int h = 0; h < NUM_HASHES; ++h) h_seeds[h] = (unsigned int)rng.next() | 1u;
    CUDA_CHECK(cudaMemcpyToSymbol(c_seeds, h_seeds, sizeof(h_seeds)));

    // Members are even numbers, query set: first half members, second half odd (non-members).
    unsigned int *h_ins, *h_q;
    CUDA_CHECK(cudaMallocHost(&h_ins, n_insert * sizeof(unsigned int)));
    CUDA_CHECK(cudaMallocHost(&h_q, n_query * sizeof(unsigned int)));
    for (int i = 0; i < n_insert; ++i) h_ins[i] = (unsigned int)(rng.next() & 0x7ffffffeu);
    for (int i = 0; i < n_query; ++i)
        h_q[i] = (i < n_query / 2) ? h_ins[(i * 7) % n_insert] : ((unsigned int)rng.next() | 1u);

    unsigned int *d_filter, *d_ins, *d_q, *d_counts;
    CUDA_CHECK(cudaMalloc(&d_filter, FILTER_WORDS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_ins, n_insert * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_q, n_query * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_counts, (NUM_STREAMS + 1) * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemset(d_filter, 0, FILTER_WORDS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemset(d_counts, 0, (NUM_STREAMS + 1) * sizeof(unsigned int)));

    cudaStream_t streams[NUM_STREAMS];
    cudaEvent_t inserted[NUM_STREAMS];
    for (int s = 0; s < NUM_STREAMS; ++s) {
        CUDA_CHECK(cudaStreamCreate(&streams[s]));  // blocking: ordered after the memsets
        CUDA_CHECK(cudaEventCreateWithFlags(&inserted[s], cudaEventDisableTiming));
    }

    // Phase 1: upload + insert, one chunk per stream.
    for (int s = 0; s < NUM_STREAMS; ++s) {
        const int off = s * chunk_ins;
        CUDA_CHECK(cudaMemcpyAsync(d_ins + off, h_ins + off, chunk_ins * sizeof(unsigned int),
                                   cudaMemcpyHostToDevice, streams[s]));
        bloom_insert<<<blocks_for(chunk_ins, THREADS) / 4, THREADS, 0, streams[s]>>>(d_filter, d_ins + off, chunk_ins);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(inserted[s], streams[s]));
    }
    // Phase 2: every query stream waits for all inserts before reading the filter.
    for (int s = 0; s < NUM_STREAMS; ++s) {
        const int off = s * chunk_q;
        CUDA_CHECK(cudaMemcpyAsync(d_q + off, h_q + off, chunk_q * sizeof(unsigned int),
                                   cudaMemcpyHostToDevice, streams[s]));
        for (int o = 0; o < NUM_STREAMS; ++o) CUDA_CHECK(cudaStreamWaitEvent(streams[s], inserted[o], 0));
        bloom_query<<<blocks_for(chunk_q, THREADS) / 4, THREADS, 0, streams[s]>>>(d_filter, d_q + off, chunk_q, d_counts + s);
        CUDA_CHECK(cudaGetLastError());
    }
    for (int s = 0; s < NUM_STREAMS; ++s) CUDA_CHECK(cudaStreamSynchronize(streams[s]));

    count_set_bits<<<32, THREADS>>>(d_filter, d_counts + NUM_STREAMS);
    CUDA_CHECK(cudaGetLastError());
    unsigned int h_counts[NUM_STREAMS + 1];
    CUDA_CHECK(cudaMemcpy(h_counts, d_counts, sizeof(h_counts), cudaMemcpyDeviceToHost));

    // Chunk 0 holds only members, chunk 1 only non-members (NUM_STREAMS == 2).
    const unsigned int false_neg = chunk_q - h_counts[0];
    const double fp_rate = (double)h_counts[1] / chunk_q;
    const double fill = (double)h_counts[NUM_STREAMS] / FILTER_BITS;
    const double fp_theory = std::pow(1.0 - std::exp(-(double)NUM_HASHES * n_insert / FILTER_BITS), NUM_HASHES);
    printf("bits=%u hashes=%d inserted=%d\n", FILTER_BITS, NUM_HASHES, n_insert);
    printf("member_hits=%u false_negatives=%u\n", h_counts[0], false_neg);
    printf("false_positives=%u fp_rate=%.5f theory=%.5f fill=%.4f\n", h_counts[1], fp_rate, fp_theory, fill);

    for (int s = 0; s < NUM_STREAMS; ++s) {
        CUDA_CHECK(cudaStreamDestroy(streams[s]));
        CUDA_CHECK(cudaEventDestroy(inserted[s]));
    }
    CUDA_CHECK(cudaFree(d_filter)); CUDA_CHECK(cudaFree(d_ins)); CUDA_CHECK(cudaFree(d_q));
    CUDA_CHECK(cudaFree(d_counts));
    CUDA_CHECK(cudaFreeHost(h_ins)); CUDA_CHECK(cudaFreeHost(h_q));
    return false_neg == 0 ? 0 : 1;
}
