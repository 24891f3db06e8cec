// Single-source shortest paths with a frontier-driven Bellman-Ford on a weighted directed graph
// of 2^18 vertices and about 2^21 edges (integer weights 1..100). Each round relaxes the out-edges
// of the active vertices with atomicMin; the host swaps the frontier flags and stops when a round
// changes nothing. The fixpoint distances are unique, so they are deterministic even though the
// number of rounds is not. A second kernel picks each vertex's predecessor as the smallest vertex
// id on a tight edge (atomicMin), and the host checks the distances against Dijkstra.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <queue>
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

static constexpr int NV = 1 << 18;
static constexpr int SOURCE = 12345;
static constexpr unsigned INF = 0xFFFFFFFFu;

static uint64_t g_rng = 0x6A09E667F3BCC909ull;
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

__global__ void relax(const int* __restrict__ row_ptr, const int* __restrict__ col,
                      const unsigned* __restrict__ w, unsigned* dist,
                      const int* __restrict__ active_in, int* __restrict__ active_out,
                      int* __restrict__ changed) {
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= NV || !active_in[u]) return;
    unsigned du = dist[u];  // finite for every active vertex
    for (int e = row_ptr[u]; e < row_ptr[u + 1]; ++e) {
        int v = col[e];
        unsigned nd = du + w[e];
        if (nd < atomicMin(&dist[v], nd)) {
            active_out[v] = 1;
            atomicExch(changed, 1);
        }
    }
}

__global__ void predecessors(const int* __restrict__ row_ptr, const int* __restrict__ col,
                             const unsigned* __restrict__ w, const unsigned* __restrict__ dist,
                             unsigned* __restrict__ pred) {
    int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= NV || dist[u] == INF) return;
    for (int e = row_ptr[u]; e < row_ptr[u + 1]; ++e) {
        int v = col[e];
        if (v != SOURCE && dist[u] + w[e] == dist[v]) atomicMin(&pred[v], (unsigned)u);
    }
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        g_rng = strtoull(argv[1], nullptr, 0);
        if (g_rng == 0) g_rng = 0x6A09E667F3BCC909ull;
    }
    // Every vertex links to its successor (so all are reachable) plus 3..11 random targets.
    std::vector<int> h_row(NV + 1, 0), h_col;
    std::vector<unsigned> h_w;
    for (int u = 0; u < NV; ++u) {
        int deg = 4 + (int)(xorshift64() % 9);
        for (int k = 0; k < deg; ++k) {
            h_col.push_back(k == 0 ? (u + 1) % NV : (int)(xorshift64() % NV));
            h_w.push_back(1 + (unsigned)(xorshift64() % 100));
        }
        h_row[u + 1] = (int)h_col.size();
    }
    const int ne = (int)h_col.size();

    int *d_row, *d_col, *d_active[2], *d_changed;
    unsigned *d_w, *d_dist, *d_pred;
    CHECK(cudaMalloc(&d_row, (NV + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_col, ne * sizeof(int)));
    CHECK(cudaMalloc(&d_w, ne * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_dist, NV * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_pred, NV * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_active[0], NV * sizeof(int)));
    CHECK(cudaMalloc(&d_active[1], NV * sizeof(int)));
    CHECK(cudaMalloc(&d_changed, sizeof(int)));
    CHECK(cudaMemcpy(d_row, h_row.data(), (NV + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_col, h_col.data(), ne * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_w, h_w.data(), ne * sizeof(unsigned), cudaMemcpyHostToDevice));
    // 0xFF bytes are both the "infinite distance / no predecessor" value and the sentinel.
    CHECK(cudaMemset(d_dist, 0xFF, NV * sizeof(unsigned)));
    CHECK(cudaMemset(d_pred, 0xFF, NV * sizeof(unsigned)));
    CHECK(cudaMemset(d_active[0], 0, NV * sizeof(int)));
    CHECK(cudaMemset(d_active[1], 0, NV * sizeof(int)));
    const unsigned zero = 0;
    const int one = 1;
    CHECK(cudaMemcpy(d_dist + SOURCE, &zero, sizeof(unsigned), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_active[0] + SOURCE, &one, sizeof(int), cudaMemcpyHostToDevice));

    const int threads = 256, blocks = (NV + threads - 1) / threads;
    int cur = 0;
    for (int round = 0; round < NV; ++round) {
        CHECK(cudaMemset(d_changed, 0, sizeof(int)));
        relax<<<blocks, threads>>>(d_row, d_col, d_w, d_dist, d_active[cur], d_active[1 - cur],
                                   d_changed);
        CHECK(cudaGetLastError());
        int changed = 0;
        CHECK(cudaMemcpy(&changed, d_changed, sizeof(int), cudaMemcpyDeviceToHost));
        if (!changed) break;
        CHECK(cudaMemset(d_active[cur], 0, NV * sizeof(int)));  // becomes the next output
        cur = 1 - cur;
    }
    predecessors<<<blocks, threads>>>(d_row, d_col, d_w, d_dist, d_pred);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<unsigned> dist(NV), pred(NV);
    CHECK(cudaMemcpy(dist.data(), d_dist, NV * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(pred.data(), d_pred, NV * sizeof(unsigned), cudaMemcpyDeviceToHost));

    // Host reference: Dijkstra with a binary heap.
    std::vector<unsigned> ref(NV, INF);
    std::priority_queue<std::pair<unsigned, int>, std::vector<std::pair<unsigned, int>>,
                        std::greater<std::pair<unsigned, int>>> heap;
    ref[SOURCE] = 0;
    heap.push(std::make_pair(0u, SOURCE));
    while (!heap.empty()) {
        std::pair<unsigned, int> top = heap.top();
        heap.pop();
        if (top.first != ref[top.second]) continue;
        for (int e = h_row[top.second]; e < h_row[top.second + 1]; ++e) {
            unsigned nd = top.first + h_w[e];
            if (nd < ref[h_col[e]]) { ref[h_col[e]] = nd; heap.push(std::make_pair(nd, h_col[e])); }
        }
    }

    // Hop depth in the predecessor tree, processing vertices in increasing distance order.
    std::vector<int> order(NV), depth(NV, 0);
    for (int v = 0; v < NV; ++v) order[v] = v;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return dist[a] != dist[b] ? dist[a] < dist[b] : a < b;
    });
    int max_depth = 0, mismatches = 0;
    for (int i = 0; i < NV; ++i) {
        int v = order[i];
        if (pred[v] < (unsigned)NV) depth[v] = depth[pred[v]] + 1;
        max_depth = std::max(max_depth, depth[v]);
    }
    uint64_t h_dist = 0xCBF29CE484222325ull, h_pred = h_dist, dist_sum = 0;
    unsigned max_dist = 0;
    for (int v = 0; v < NV; ++v) {
        h_dist = fnv_mix(h_dist, dist[v]);
        h_pred = fnv_mix(h_pred, pred[v]);
        dist_sum += dist[v];
        if (dist[v] != INF) max_dist = std::max(max_dist, dist[v]);
        if (dist[v] != ref[v]) ++mismatches;
    }
    printf("vertices %d edges %d source %d\n", NV, ne, SOURCE);
    printf("checksum_dist 0x%016llx\n", (unsigned long long)h_dist);
    printf("checksum_pred 0x%016llx\n", (unsigned long long)h_pred);
    printf("distance sum %llu max %u\n", (unsigned long long)dist_sum, max_dist);
    printf("max hop depth %d\n", max_depth);
    printf("mismatches vs dijkstra %d\n", mismatches);
    const int samples[3] = {0, 99999, NV - 1};
    for (int s = 0; s < 3; ++s)
        printf("vertex[%d] dist %u pred %d\n", samples[s], dist[samples[s]],
               (int)pred[samples[s]]);

    CHECK(cudaFree(d_row)); CHECK(cudaFree(d_col)); CHECK(cudaFree(d_w));
    CHECK(cudaFree(d_dist)); CHECK(cudaFree(d_pred)); CHECK(cudaFree(d_active[0]));
    CHECK(cudaFree(d_active[1])); CHECK(cudaFree(d_changed));
    return 0;
}
