// gpu_hash_table.cu
// Open-addressing hash table (linear probing) living entirely in device
// memory. Keys are claimed with atomicCAS, so inserts from many threads can
// proceed concurrently without locks. Supports insert (with value update for
// duplicate keys), lookup and delete (tombstones).

#include "data_structures_common.cuh"
#include <vector>

#define TABLE_CAPACITY (1u << 18)  // power of two, load factor ~0.5

__device__ __forceinline__ unsigned int slot_for(unsigned int key) {
    return murmur_mix32(key) & (TABLE_CAPACITY - 1);
}

__global__ void table_init(KeyValue* table) {
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < TABLE_CAPACITY;
         i += gridDim.x * blockDim.x) {
        table[i].key = EMPTY_KEY;
        table[i].value = 0;
    }
}

__global__ void table_insert(KeyValue* table, const KeyValue* kvs, unsigned int n,
                             unsigned int* new_keys) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= n) return;
    const unsigned int key = kvs[tid].key;
    const unsigned int value = kvs[tid].value;
    unsigned int slot = slot_for(key);
    for (unsigned int probes = 1; probes <= TABLE_CAPACITY; ++probes) {
        unsigned int prev = atomicCAS(&table[slot].key, EMPTY_KEY, key);
        if (prev == EMPTY_KEY || prev == key) {
            // Duplicate keys: keep the largest value so the result is order-independent.
            atomicMax(&table[slot].value, value);
            if (prev == EMPTY_KEY) atomicAdd(new_keys, 1u);
            return;
        }
        slot = (slot + 1) & (TABLE_CAPACITY - 1);
    }
}

// Counts live entries and tombstones: per-block shared counters, then one
// global atomicAdd per block.
__global__ void table_stats(const KeyValue* table, unsigned int* live, unsigned int* tombstones) {
    __shared__ unsigned int s_live, s_tomb;
    if (threadIdx.x == 0) { s_live = 0; s_tomb = 0; }
    __syncthreads();
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < TABLE_CAPACITY;
         i += gridDim.x * blockDim.x) {
        unsigned int k = table[i].key;
        if (k == TOMBSTONE_KEY) atomicAdd(&s_tomb, 1u);
        else if (k != EMPTY_KEY) atomicAdd(&s_live, 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(live, s_live);
        atomicAdd(tombstones, s_tomb);
    }
}

__global__ void table_lookup(const KeyValue* table, const unsigned int* keys, unsigned int n,
                             unsigned int* values_out) {
    for (unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x; tid < n;
         tid += gridDim.x * blockDim.x) {
        const unsigned int key = keys[tid];
        unsigned int slot = slot_for(key);
        unsigned int result = NOT_FOUND;
        for (unsigned int probes = 0; probes < TABLE_CAPACITY; ++probes) {
            unsigned int k = table[slot].key;
            if (k == key) { result = table[slot].value; break; }
            if (k == EMPTY_KEY) break;  // tombstones keep probing
            slot = (slot + 1) & (TABLE_CAPACITY - 1);
        }
        values_out[tid] = result;
    }
}

__global__ void table_delete(KeyValue* table, const unsigned int* keys, unsigned int n,
                             unsigned int* deleted) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= n) return;
    const unsigned int key = keys[tid];
    unsigned int slot = slot_for(key);
    for (unsigned int probes = 0; probes < TABLE_CAPACITY; ++probes) {
        unsigned int k = table[slot].key;
        if (k == EMPTY_KEY) return;
        if (k == key) {
            if (atomicCAS(&table[slot].key, key, TOMBSTONE_KEY) == key) atomicAdd(deleted, 1u);
            return;
        }
        slot = (slot + 1) & (TABLE_CAPACITY - 1);
    }
}

int main() {
    const unsigned int num_insert = 120000, num_lookup = 60000, num_delete = 20000;
    SplitMix64 rng(0xDA7A5EEDULL);

    // Keys come from a range of 100000 so there are plenty of duplicates.
    std::vector<KeyValue> h_kvs(num_insert);
    for (auto& kv : h_kvs) {
        kv.key = (unsigned int)(rng.next() % 100000u) * 7u + 3u;
        kv.value = (unsigned int)(rng.next() % 1000000u);
    }
    std::vector<unsigned int> h_lookup(num_lookup), h_delete(num_delete);
    for (auto& k : h_lookup) k = (unsigned int)(rng.next() % 120000u) * 7u + 3u;  // ~17% misses
    for (auto& k : h_delete) k = h_kvs[rng.next() % num_insert].key;

    KeyValue *d_table, *d_kvs;
    unsigned int *d_lookup, *d_delete, *d_values, *d_counters;
    CUDA_CHECK(cudaMalloc(&d_table, TABLE_CAPACITY * sizeof(KeyValue)));
    CUDA_CHECK(cudaMalloc(&d_kvs, num_insert * sizeof(KeyValue)));
    CUDA_CHECK(cudaMalloc(&d_lookup, num_lookup * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_delete, num_delete * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_values, num_lookup * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_counters, 4 * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(d_kvs, h_kvs.data(), num_insert * sizeof(KeyValue), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_lookup, h_lookup.data(), num_lookup * sizeof(unsigned int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_delete, h_delete.data(), num_delete * sizeof(unsigned int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_counters, 0, 4 * sizeof(unsigned int)));

    const unsigned int threads = 256;
    table_init<<<128, threads>>>(d_table);
    CUDA_CHECK(cudaGetLastError());
    table_insert<<<blocks_for(num_insert, threads), threads>>>(d_table, d_kvs, num_insert,
                                                               d_counters + 0);
    CUDA_CHECK(cudaGetLastError());
    table_delete<<<blocks_for(num_delete, threads), threads>>>(d_table, d_delete, num_delete,
                                                               d_counters + 1);
    CUDA_CHECK(cudaGetLastError());
    table_stats<<<64, threads>>>(d_table, d_counters + 2, d_counters + 3);
    CUDA_CHECK(cudaGetLastError());
    table_lookup<<<64, threads>>>(d_table, d_lookup, num_lookup, d_values);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<unsigned int> h_values(num_lookup);
    unsigned int counters[4];
    CUDA_CHECK(cudaMemcpy(h_values.data(), d_values, num_lookup * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(counters, d_counters, sizeof(counters), cudaMemcpyDeviceToHost));

    unsigned int found = 0;
    unsigned long long value_sum = 0;
    for (unsigned int v : h_values) {
        if (v != NOT_FOUND) { ++found; value_sum += v; }
    }
    printf("capacity=%u unique_keys=%u live=%u tombstones=%u load=%.4f\n", TABLE_CAPACITY,
           counters[0], counters[2], counters[3], (double)counters[2] / TABLE_CAPACITY);
    printf("deleted=%u lookups=%u found=%u value_sum=%llu\n", counters[1], num_lookup, found, value_sum);
    printf("lookup[0]: key=%u value=%d\n", h_lookup[0],
           h_values[0] == NOT_FOUND ? -1 : (int)h_values[0]);

    CUDA_CHECK(cudaFree(d_table)); CUDA_CHECK(cudaFree(d_kvs)); CUDA_CHECK(cudaFree(d_lookup));
    CUDA_CHECK(cudaFree(d_delete)); CUDA_CHECK(cudaFree(d_values)); CUDA_CHECK(cudaFree(d_counters));
    return 0;
}
