// connected_components.cu - hook-and-compress connected components on an
// edge list (COO). Labels only ever decrease (atomicMin), so parent[v] <= v
// holds throughout and the forest cannot form cycles. The final label of a
// vertex is the smallest vertex id in its component.
#include "graph_common.cuh"

#define CC_BLOCK 256

__device__ int find_root(const int* parent, int v) {
    int p = parent[v];
    while (p != v) { v = p; p = parent[v]; }
    return v;
}

__global__ void init_parent(int* parent, int n) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += blockDim.x * gridDim.x)
        parent[v] = v;
}

// Hooking: for every edge attach the larger root under the smaller one.
__global__ void hook_edges(const int2* edges, int num_edges, int* parent, int* changed) {
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < num_edges; e += blockDim.x * gridDim.x) {
        int2 ed = edges[e];
        int ru = find_root(parent, ed.x);
        int rv = find_root(parent, ed.y);
        if (ru == rv) continue;
        int hi = max(ru, rv), lo = min(ru, rv);
        int old = atomicMin(&parent[hi], lo);
        if (old != lo) *changed = 1;
    }
}

// Pointer jumping: flatten every tree so each vertex points at its root.
__global__ void compress(int* parent, int n) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += blockDim.x * gridDim.x)
        parent[v] = find_root(parent, v);
}

// Component statistics: number of roots, size per root, largest component.
__global__ void component_stats(const int* parent, int n, int* sizes, int* num_components) {
    __shared__ int block_roots;
    if (threadIdx.x == 0) block_roots = 0;
    __syncthreads();
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += blockDim.x * gridDim.x) {
        int r = parent[v];
        atomicAdd(&sizes[r], 1);
        if (r == v) atomicAdd(&block_roots, 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(num_components, block_roots);
}

__global__ void largest_component(const int* sizes, int n, int* max_size, int* singletons) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += blockDim.x * gridDim.x) {
        int s = sizes[v];
        if (s > 0) atomicMax(max_size, s);
        if (s == 1) atomicAdd(singletons, 1);
    }
}

int main() {
    const int n = 50000;
    const int num_edges = 26000;  // average degree ~1.04: just above percolation
    HostLcg rng(777u);
    std::vector<int2> h_edges(num_edges);
    for (int e = 0; e < num_edges; ++e) {
        int a = rng.next_int(n), b = rng.next_int(n);
        h_edges[e] = make_int2(a, b);
    }

    int2* d_edges;
    int *d_parent, *d_changed, *d_sizes, *d_num_comp, *d_max_size, *d_singletons;
    CUDA_CHECK(cudaMalloc(&d_edges, num_edges * sizeof(int2)));
    CUDA_CHECK(cudaMalloc(&d_parent, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_changed, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_sizes, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_num_comp, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_max_size, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_singletons, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_edges, h_edges.data(), num_edges * sizeof(int2), cudaMemcpyHostToDevice));

    const int grid = 64;
    init_parent<<<grid, CC_BLOCK>>>(d_parent, n);
    CUDA_CHECK(cudaGetLastError());

    int changed = 1, rounds = 0;
    while (changed && rounds < 100) {
        CUDA_CHECK(cudaMemset(d_changed, 0, sizeof(int)));
        hook_edges<<<grid, CC_BLOCK>>>(d_edges, num_edges, d_parent, d_changed);
        CUDA_CHECK(cudaGetLastError());
        compress<<<grid, CC_BLOCK>>>(d_parent, n);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpy(&changed, d_changed, sizeof(int), cudaMemcpyDeviceToHost));
        ++rounds;
    }

    CUDA_CHECK(cudaMemset(d_sizes, 0, n * sizeof(int)));
    CUDA_CHECK(cudaMemset(d_num_comp, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(d_max_size, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(d_singletons, 0, sizeof(int)));
    component_stats<<<grid, CC_BLOCK>>>(d_parent, n, d_sizes, d_num_comp);
    largest_component<<<grid, CC_BLOCK>>>(d_sizes, n, d_max_size, d_singletons);
    CUDA_CHECK(cudaGetLastError());

    std::vector<int> h_parent(n);
    int num_comp = 0, max_size = 0, singletons = 0;
    CUDA_CHECK(cudaMemcpy(h_parent.data(), d_parent, n * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&num_comp, d_num_comp, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&max_size, d_max_size, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&singletons, d_singletons, sizeof(int), cudaMemcpyDeviceToHost));

    // Host-side validation: every edge must join vertices with equal labels.
    int bad = 0;
    unsigned long long label_hash = 1469598103934665603ull;
    for (int e = 0; e < num_edges; ++e)
        if (h_parent[h_edges[e].x] != h_parent[h_edges[e].y]) ++bad;
    for (int v = 0; v < n; ++v) label_hash = (label_hash ^ (unsigned)h_parent[v]) * 1099511628211ull;

    printf("vertices=%d edges=%d rounds=%d\n", n, num_edges, rounds);
    printf("components=%d largest=%d singletons=%d\n", num_comp, max_size, singletons);
    printf("label_hash=%016llx inconsistent_edges=%d\n", label_hash, bad);
    printf("label[49999]=%d label[31337]=%d\n", h_parent[49999], h_parent[31337]);

    cudaFree(d_edges); cudaFree(d_parent); cudaFree(d_changed); cudaFree(d_sizes);
    cudaFree(d_num_comp); cudaFree(d_max_size); cudaFree(d_singletons);
    return bad == 0 ? 0 : 1;
}
