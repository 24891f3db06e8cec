// bfs_frontier.cu - level-synchronous breadth-first search over a CSR graph
// using an explicit frontier queue. Each level, one thread expands one
// frontier vertex; neighbours are claimed with atomicCAS so that every vertex
// is enqueued exactly once. A final pass builds a depth histogram.
#include "graph_common.cuh"

#define BLOCK_SIZE 256
#define MAX_LEVELS 64

__global__ void init_distances(int* dist, int n, int source) {
    // grid-stride loop so any launch size covers the whole array
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += blockDim.x * gridDim.x)
        dist[v] = (v == source) ? 0 : UNVISITED;
}

__global__ void expand_frontier(CsrGraph g, const int* frontier, int frontier_size,
                                int* next_frontier, int* next_size, int* dist, int level) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= frontier_size) return;
    int v = frontier[i];
    for (int e = csr_begin(g, v); e < csr_end(g, v); ++e) {
        int u = g.col_indices[e];
        // Claim the vertex: only the first thread to swap UNVISITED wins.
        if (atomicCAS(&dist[u], UNVISITED, level + 1) == UNVISITED) {
            int slot = atomicAdd(next_size, 1);
            next_frontier[slot] = u;
        }
    }
}

// Per-block histogram in static shared memory, merged into global bins.
__global__ void depth_histogram(const int* dist, int n, int* hist, int* max_depth,
                                int* unreached) {
    __shared__ int local_hist[MAX_LEVELS];
    __shared__ int local_max;
    for (int b = threadIdx.x; b < MAX_LEVELS; b += blockDim.x) local_hist[b] = 0;
    if (threadIdx.x == 0) local_max = 0;
    __syncthreads();

    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += blockDim.x * gridDim.x) {
        int d = dist[v];
        if (d == UNVISITED) {
            atomicAdd(unreached, 1);
            continue;
        }
        atomicAdd(&local_hist[min(d, MAX_LEVELS - 1)], 1);
        atomicMax(&local_max, d);
    }
    __syncthreads();

    for (int b = threadIdx.x; b < MAX_LEVELS; b += blockDim.x)
        if (local_hist[b]) atomicAdd(&hist[b], local_hist[b]);
    if (threadIdx.x == 0) atomicMax(max_depth, local_max);
}

int main() {
    const int n = 1 << 15;
    std::vector<int> h_offsets, h_cols;
    build_random_csr(n, 2, 2, 12345u, h_offsets, h_cols);
    const int m = (int)h_cols.size();

    int *d_offsets, *d_cols, *d_dist, *d_front_a, *d_front_b, *d_next_size;
    int *d_hist, *d_max_depth, *d_unreached;
    CUDA_CHECK(cudaMalloc(&d_offsets, (n + 1) * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_cols, m * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_dist, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_front_a, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_front_b, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_next_size, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_hist, MAX_LEVELS * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_max_depth, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_unreached, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_offsets, h_offsets.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_cols, h_cols.data(), m * sizeof(int), cudaMemcpyHostToDevice));

    CsrGraph g{n, m, d_offsets, d_cols};
    const int source = 7;
    init_distances<<<64, BLOCK_SIZE>>>(d_dist, n, source);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(d_front_a, &source, sizeof(int), cudaMemcpyHostToDevice));

    int frontier_size = 1, level = 0, total_visited = 1;
    while (frontier_size > 0 && level < MAX_LEVELS) {
        CUDA_CHECK(cudaMemset(d_next_size, 0, sizeof(int)));
        int blocks = (frontier_size + BLOCK_SIZE - 1) / BLOCK_SIZE;
        expand_frontier<<<blocks, BLOCK_SIZE>>>(g, d_front_a, frontier_size, d_front_b,
                                                 d_next_size, d_dist, level);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpy(&frontier_size, d_next_size, sizeof(int), cudaMemcpyDeviceToHost));
        total_visited += frontier_size;
        int* tmp = d_front_a; d_front_a = d_front_b; d_front_b = tmp;
        ++level;
    }

    CUDA_CHECK(cudaMemset(d_hist, 0, MAX_LEVELS * sizeof(int)));
    CUDA_CHECK(cudaMemset(d_max_depth, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(d_unreached, 0, sizeof(int)));
    depth_histogram<<<32, BLOCK_SIZE>>>(d_dist, n, d_hist, d_max_depth, d_unreached);
    CUDA_CHECK(cudaGetLastError());

    std::vector<int> h_dist(n), h_hist(MAX_LEVELS);
    int max_depth = 0, unreached = 0;
    CUDA_CHECK(cudaMemcpy(h_dist.data(), d_dist, n * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_hist.data(), d_hist, MAX_LEVELS * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&max_depth, d_max_depth, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&unreached, d_unreached, sizeof(int), cudaMemcpyDeviceToHost));

    long long dist_sum = 0;
    for (int v = 0; v < n; ++v) if (h_dist[v] >= 0) dist_sum += (long long)h_dist[v] * ((v % 13) + 1);

    printf("vertices=%d edges=%d levels=%d visited=%d unreached=%d\n", n, m, level, total_visited, unreached);
    printf("max_depth=%d weighted_dist_checksum=%lld\n", max_depth, dist_sum);
    printf("hist[0..5] = %d %d %d %d %d %d\n", h_hist[0], h_hist[1], h_hist[2], h_hist[3], h_hist[4], h_hist[5]);
    printf("dist[100]=%d dist[20000]=%d\n", h_dist[100], h_dist[20000]);

    cudaFree(d_offsets); cudaFree(d_cols); cudaFree(d_dist); cudaFree(d_front_a);
    cudaFree(d_front_b); cudaFree(d_next_size); cudaFree(d_hist); cudaFree(d_max_depth);
    cudaFree(d_unreached);
    return 0;
}
