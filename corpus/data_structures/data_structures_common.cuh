// data_structures_common.cuh - shared definitions for the GPU data structure
// samples (hash table, bloom filter, graph traversal).
#pragma once

#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(stmt)                                                        \
    do {                                                                        \
        cudaError_t result_ = (stmt);                                           \
        if (result_ != cudaSuccess) {                                           \
            fprintf(stderr, "CUDA error at %s:%d in '%s': %s\n", __FILE__,      \
                    __LINE__, #stmt, cudaGetErrorString(result_));              \
            exit(EXIT_FAILURE);                                                 \
        }                                                                       \
    } while (0)

#define EMPTY_KEY 0xffffffffu
#define TOMBSTONE_KEY 0xfffffffeu
#define NOT_FOUND 0xffffffffu

struct KeyValue {
    unsigned int key;
    unsigned int value;
};

// Murmur3 32-bit finalizer: cheap, good avalanche for integer keys.
__host__ __device__ __forceinline__ unsigned int murmur_mix32(unsigned int h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

// Seeded variant, used to derive independent hash functions.
__host__ __device__ __forceinline__ unsigned int seeded_hash(unsigned int key, unsigned int seed) {
    return murmur_mix32(key ^ (seed * 0x9e3779b9u));
}

// Deterministic host-side generator (SplitMix64).
struct SplitMix64 {
    uint64_t state;
    explicit SplitMix64(uint64_t seed) : state(seed) {}
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
};

static inline unsigned int blocks_for(unsigned int n, unsigned int threads) {
    return (n + threads - 1) / threads;
}
