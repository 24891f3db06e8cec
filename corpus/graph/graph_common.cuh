// graph_common.cuh - shared helpers for the CSR graph kernels in this folder.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,    \
                    __LINE__, cudaGetErrorString(err_));                        \
            exit(EXIT_FAILURE);                                                 \
        }                                                                       \
    } while (0)

#define UNVISITED (-1)

// Compressed sparse row adjacency, device-side view.
struct CsrGraph {
    int num_vertices;
    int num_edges;
    const int* row_offsets;  // size num_vertices + 1
    const int* col_indices;  // size num_edges
};

__device__ __forceinline__ int csr_degree(const CsrGraph& g, int v) {
    return g.row_offsets[v + 1] - g.row_offsets[v];
}

__device__ __forceinline__ int csr_begin(const CsrGraph& g, int v) { return g.row_offsets[v]; }
__device__ __forceinline__ int csr_end(const CsrGraph& g, int v) { return g.row_offsets[v + 1]; }

// Small deterministic host-side generator (Numerical Recipes LCG constants).
struct HostLcg {
    uint32_t state;
    explicit HostLcg(uint32_t seed) : state(seed) {}
    uint32_t next() { state = state * 1664525u + 1013904223u; return state; }
    int next_int(int bound) { return (int)((next() >> 8) % (uint32_t)bound); }
};

// Builds an undirected random graph in CSR form: a ring (keeps it mostly
// connected) plus `extra` random chords per vertex, optionally split into
// `islands` disjoint components.
static inline void build_random_csr(int n, int extra, int islands, uint32_t seed,
                             std::vector<int>& offsets, std::vector<int>& cols) {
    HostLcg rng(seed);
    std::vector<std::vector<int>> adj(n);
    int island_size = n / islands;
    for (int v = 0; v < n; ++v) {
        int base = (v / island_size) * island_size;
        int span = (v / island_size == islands - 1) ? n - base : island_size;
        int ring_next = base + ((v - base) + 1) % span;
        adj[v].push_back(ring_next);
        adj[ring_next].push_back(v);
        for (int e = 0; e < extra; ++e) {
            int u = base + rng.next_int(span);
            if (u == v) continue;
            adj[v].push_back(u);
            adj[u].push_back(v);
        }
    }
    offsets.assign(n + 1, 0);
    for (int v = 0; v < n; ++v) offsets[v + 1] = offsets[v] + (int)adj[v].size();
    cols.resize(offsets[n]);
    for (int v = 0; v < n; ++v)
        for (size_t k = 0; k < adj[v].size(); ++k) cols[offsets[v] + k] = adj[v][k];
}
