// pagerank_pull.cu - pull-style PageRank on an undirected CSR graph.
// The iteration kernel and the residual reduction are templates, instantiated
// for float and double so the two precisions can be compared side by side.
#include "graph_common.cuh"
#include <cmath>

#define PR_BLOCK 256

// Pre-computes 1/out_degree once so the inner loop is a multiply.
__global__ void inverse_degree(CsrGraph g, float* inv_deg) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < g.num_vertices;
         v += blockDim.x * gridDim.x) {
        int d = csr_degree(g, v);
        inv_deg[v] = d > 0 ? 1.0f / (float)d : 0.0f;
    }
}

template <typename T>
__global__ void init_rank(T* rank, int n) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += blockDim.x * gridDim.x)
        rank[v] = T(1) / T(n);
}

// One Jacobi sweep: each vertex pulls contributions from its neighbours.
// Also emits per-block partial sums of |new - old| for a deterministic residual.
template <typename T>
__global__ void pagerank_iterate(CsrGraph g, const float* inv_deg, const T* rank_in,
                                 T* rank_out, T damping, T* block_residual) {
    __shared__ T partial[PR_BLOCK];
    const T teleport = (T(1) - damping) / T(g.num_vertices);
    T local = T(0);
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < g.num_vertices;
         v += blockDim.x * gridDim.x) {
        T acc = T(0);
        for (int e = csr_begin(g, v); e < csr_end(g, v); ++e) {
            int u = g.col_indices[e];
            acc += rank_in[u] * (T)inv_deg[u];
        }
        T updated = teleport + damping * acc;
        local += fabs(updated - rank_in[v]);
        rank_out[v] = updated;
    }
    partial[threadIdx.x] = local;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) block_residual[blockIdx.x] = partial[0];
}

template <typename T>
static void run_pagerank(const CsrGraph& g, const float* d_inv_deg, int iters,
                         std::vector<T>& h_rank, T& last_residual) {
    const int n = g.num_vertices;
    const int grid = 48;
    T *d_a, *d_b, *d_res;
    CUDA_CHECK(cudaMalloc(&d_a, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&d_b, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&d_res, grid * sizeof(T)));
    init_rank<T><<<grid, PR_BLOCK>>>(d_a, n);
    CUDA_CHECK(cudaGetLastError());

    std::vector<T> h_res(grid);
    for (int it = 0; it < iters; ++it) {
        pagerank_iterate<T><<<grid, PR_BLOCK>>>(g, d_inv_deg, d_a, d_b, T(0.85), d_res);
        CUDA_CHECK(cudaGetLastError());
        T* t = d_a; d_a = d_b; d_b = t;
    }
    CUDA_CHECK(cudaMemcpy(h_res.data(), d_res, grid * sizeof(T), cudaMemcpyDeviceToHost));
    last_residual = T(0);
    for (int b = 0; b < grid; ++b) last_residual += h_res[b];

    h_rank.resize(n);
    CUDA_CHECK(cudaMemcpy(h_rank.data(), d_a, n * sizeof(T), cudaMemcpyDeviceToHost));
    cudaFree(d_a); cudaFree(d_b); cudaFree(d_res);
}

int main() {
    const int n = 20000;
    std::vector<int> h_offsets, h_cols;
    build_random_csr(n, 3, 1, 2024u, h_offsets, h_cols);
    const int m = (int)h_cols.size();

    int *d_offsets, *d_cols;
    float* d_inv_deg;
    CUDA_CHECK(cudaMalloc(&d_offsets, (n + 1) * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_cols, m * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_inv_deg, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_offsets, h_offsets.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_cols, h_cols.data(), m * sizeof(int), cudaMemcpyHostToDevice));
    CsrGraph g{n, m, d_offsets, d_cols};

    inverse_degree<<<40, PR_BLOCK>>>(g, d_inv_deg);
    CUDA_CHECK(cudaGetLastError());

    std::vector<float> rank_f;
    std::vector<double> rank_d;
    float res_f = 0.f;
    double res_d = 0.0;
    run_pagerank<float>(g, d_inv_deg, 30, rank_f, res_f);
    run_pagerank<double>(g, d_inv_deg, 30, rank_d, res_d);

    int best = 0;
    double sum_d = 0.0, max_abs_diff = 0.0;
    for (int v = 0; v < n; ++v) {
        sum_d += rank_d[v];
        if (rank_d[v] > rank_d[best]) best = v;
        max_abs_diff = fmax(max_abs_diff, fabs((double)rank_f[v] - rank_d[v]));
    }

    printf("vertices=%d edges=%d\n", n, m);
    printf("double: rank_sum=%.6f residual=%.3e top_vertex=%d top_rank(x1e4)=%.4f\n",
           sum_d, res_d, best, rank_d[best] * 1e4);
    printf("float : residual=%.3e top_rank(x1e4)=%.4f\n", (double)res_f, rank_f[best] * 1e4);
    printf("max |float-double| (x1e6) = %.3f\n", max_abs_diff * 1e6);
    printf("rank[0]=%.6e rank[12345]=%.6e\n", rank_d[0], rank_d[12345]);

    cudaFree(d_offsets); cudaFree(d_cols); cudaFree(d_inv_deg);
    return 0;
}
