// Triangle counting on an undirected graph of 2^15 vertices with mostly local edges (about
// 4.2e5 edges). Edges are oriented from lower to higher vertex id and stored as CSR with sorted
// rows; one warp per vertex u intersects N+(u) with N+(v) for each out-neighbour v by binary
// search. Outputs: per-edge triangle support, per-vertex triangle participation (integer atomics),
// and the total (warp-shuffle reduction, then one 64-bit atomic per warp).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, cudaGetErrorString(err_));                              \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static constexpr int NV = 1 << 15;
static constexpr int LOCAL_EDGES = 12, RANDOM_EDGES = 2, WINDOW = 48;

static uint64_t g_rng = 0x4F1BBCDCBFA53E0Bull;
static uint64_t xorshift64() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static uint64_t fnv_mix(uint64_t h, uint64_t v) {
    for (int b = 0; b < 8; ++b) {
        h ^= (v >> (8 * b)) & 0xFF;
        h *= 0x100000001B3ull;
    }
    return h;
}

__global__ void count_triangles(const int* __restrict__ row_ptr, const int* __restrict__ col,
                                int n, unsigned* __restrict__ edge_support,
                                unsigned* __restrict__ vertex_tri,
                                unsigned long long* __restrict__ total) {
    int u = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;  // one warp per vertex
    int lane = threadIdx.x & 31;
    if (u >= n) return;                                     // whole warp leaves together
    int ub = row_ptr[u], ue = row_ptr[u + 1];
    unsigned mine = 0;
    for (int e = ub + lane; e < ue; e += 32) {
        int v = col[e];
        unsigned cnt = 0;
        for (int k = row_ptr[v]; k < row_ptr[v + 1]; ++k) {
            int w = col[k];
            int lo = ub, hi = ue;  // lower_bound of w in N+(u)
            while (lo < hi) {
                int mid = (lo + hi) >> 1;
                if (col[mid] < w) lo = mid + 1; else hi = mid;
            }
            if (lo < ue && col[lo] == w) {  // triangle u < v < w
                ++cnt;
                atomicAdd(&vertex_tri[w], 1u);
            }
        }
        edge_support[e] = cnt;
        if (cnt) atomicAdd(&vertex_tri[v], cnt);
        mine += cnt;
    }
    for (int off = 16; off > 0; off >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, off);
    if (lane == 0 && mine) {
        atomicAdd(&vertex_tri[u], mine);
        atomicAdd(total, (unsigned long long)mine);
    }
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        g_rng = strtoull(argv[1], nullptr, 0);
        if (g_rng == 0) g_rng = 0x4F1BBCDCBFA53E0Bull;
    }
    // Undirected edge set: local edges within a window plus a few random long-range ones.
    std::vector<std::pair<int, int>> edges;
    for (int u = 0; u < NV; ++u) {
        for (int k = 0; k < LOCAL_EDGES + RANDOM_EDGES; ++k) {
            int v = k < LOCAL_EDGES ? (u + 1 + (int)(xorshift64() % WINDOW)) % NV
                                    : (int)(xorshift64() % NV);
            if (v != u) edges.push_back(std::make_pair(std::min(u, v), std::max(u, v)));
        }
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    const int ne = (int)edges.size();
    std::vector<int> h_row(NV + 1, 0), h_col(ne), deg(NV, 0);
    for (int e = 0; e < ne; ++e) {
        h_row[edges[e].first + 1]++;
        h_col[e] = edges[e].second;  // sorted by (u, v): rows are contiguous and sorted
        deg[edges[e].first]++;
        deg[edges[e].second]++;
    }
    for (int u = 0; u < NV; ++u) h_row[u + 1] += h_row[u];

    int *d_row, *d_col;
    unsigned *d_support, *d_vtri;
    unsigned long long* d_total;
    CHECK(cudaMalloc(&d_row, (NV + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_col, ne * sizeof(int)));
    CHECK(cudaMalloc(&d_support, ne * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_vtri, NV * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_total, sizeof(unsigned long long)));
    CHECK(cudaMemcpy(d_row, h_row.data(), (NV + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_col, h_col.data(), ne * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_support, 0xFF, ne * sizeof(unsigned)));  // sentinel
    CHECK(cudaMemset(d_vtri, 0, NV * sizeof(unsigned)));         // atomic accumulators
    CHECK(cudaMemset(d_total, 0, sizeof(unsigned long long)));

    const int threads = 256;
    const int blocks = (int)(((long long)NV * 32 + threads - 1) / threads);
    count_triangles<<<blocks, threads>>>(d_row, d_col, NV, d_support, d_vtri, d_total);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<unsigned> support(ne), vtri(NV);
    unsigned long long total = 0;
    CHECK(cudaMemcpy(support.data(), d_support, ne * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(vtri.data(), d_vtri, NV * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&total, d_total, sizeof(unsigned long long), cudaMemcpyDeviceToHost));

    uint64_t h_sup = 0xCBF29CE484222325ull, h_vt = h_sup, sum_sup = 0, sum_vt = 0, wedges = 0;
    int best = 0;
    for (int e = 0; e < ne; ++e) { h_sup = fnv_mix(h_sup, support[e]); sum_sup += support[e]; }
    for (int v = 0; v < NV; ++v) {
        h_vt = fnv_mix(h_vt, vtri[v]);
        sum_vt += vtri[v];
        wedges += (uint64_t)deg[v] * (uint64_t)(deg[v] - 1) / 2;
        if (vtri[v] > vtri[best]) best = v;
    }
    printf("vertices %d edges %d\n", NV, ne);
    printf("triangles %llu (support sum %llu, participation sum/3 %llu)\n", total,
           (unsigned long long)sum_sup, (unsigned long long)(sum_vt / 3));
    printf("checksum_support 0x%016llx\n", (unsigned long long)h_sup);
    printf("checksum_vertex  0x%016llx\n", (unsigned long long)h_vt);
    printf("global clustering %.10e\n", 3.0 * (double)total / (double)wedges);
    printf("most triangles: vertex %d in %u\n", best, vtri[best]);
    printf("vertex[100] %u vertex[%d] %u\n", vtri[100], NV - 1, vtri[NV - 1]);
    printf("edge[0] support %u edge[%d] support %u\n", support[0], ne / 2, support[ne / 2]);

    CHECK(cudaFree(d_row)); CHECK(cudaFree(d_col)); CHECK(cudaFree(d_support));
    CHECK(cudaFree(d_vtri)); CHECK(cudaFree(d_total));
    return 0;
}
