#include "hip/hip_runtime.h"
// Parallel list ranking by pointer jumping (Wyllie): 2^20 nodes scattered in memory form 64
// singly linked lists of random lengths. For every node the program computes the number of
// nodes from it to the end of its list, the suffix sum of the node values along the list and
// the id of the list's tail. Each round doubles every pointer's reach (ping-pong buffers); the
// host launches rounds until a device flag (integer atomic) says that all pointers are null.
#include <hip/hip_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        hipError_t err_ = (call);                                                    \
        if (err_ != hipSuccess) {                                                    \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, hipGetErrorString(err_));                              \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static constexpr int N = 1 << 20;
static constexpr int NLISTS = 64;

static uint64_t g_rng = 0x3C6EF372FE94F82Bull;
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

// State of node i: nxt = first node after the segment it covers (-1 at the end), cnt = nodes in
// the segment, sum = sum of values in the segment, last = last node of the segment.
struct Node {
    int nxt;
    unsigned cnt;
    unsigned long long sum;
    int last;
};

__global__ void init_nodes(const int* __restrict__ next, const unsigned* __restrict__ value,
                           int n, Node* __restrict__ out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Node s;
    s.nxt = next[i];
    s.cnt = 1;
    s.sum = value[i];
    s.last = i;
    out[i] = s;
}

__global__ void jump(const Node* __restrict__ in, Node* __restrict__ out, int n,
                     int* __restrict__ still_linked) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Node s = in[i];
    if (s.nxt >= 0) {
        Node t = in[s.nxt];  // append the segment that starts where ours ends
        s.cnt += t.cnt;
        s.sum += t.sum;
        s.last = t.last;
        s.nxt = t.nxt;
        if (s.nxt >= 0) atomicOr(still_linked, 1);
    }
    out[i] = s;
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        g_rng = strtoull(argv[1], nullptr, 0);
        if (g_rng == 0) g_rng = 0x3C6EF372FE94F82Bull;
    }
    // A random permutation of the nodes, cut at 63 random points into 64 lists.
    std::vector<int> perm(N), h_next(N);
    std::vector<unsigned> h_val(N);
    for (int i = 0; i < N; ++i) perm[i] = i;
    for (int i = N - 1; i > 0; --i) std::swap(perm[i], perm[(int)(xorshift64() % (i + 1))]);
    std::vector<int> cuts;
    while ((int)cuts.size() < NLISTS - 1) {
        int c = 1 + (int)(xorshift64() % (N - 1));
        if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
    }
    cuts.push_back(N);
    std::sort(cuts.begin(), cuts.end());
    std::vector<int> heads;
    int start = 0;
    for (int c : cuts) {
        heads.push_back(perm[start]);
        for (int k = start; k < c; ++k) h_next[perm[k]] = (k + 1 < c) ? perm[k + 1] : -1;
        start = c;
    }
    for (int i = 0; i < N; ++i) h_val[i] = (unsigned)(xorshift64() % 1000000);

    int *d_next, *d_flag;
    unsigned* d_val;
    Node* d_nodes[2];
    CHECK(hipMalloc(&d_next, N * sizeof(int)));
    CHECK(hipMalloc(&d_val, N * sizeof(unsigned)));
    CHECK(hipMalloc(&d_nodes[0], N * sizeof(Node)));
    CHECK(hipMalloc(&d_nodes[1], N * sizeof(Node)));
    CHECK(hipMalloc(&d_flag, sizeof(int)));
    CHECK(hipMemcpy(d_next, h_next.data(), N * sizeof(int), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_val, h_val.data(), N * sizeof(unsigned), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_nodes[0], 0xFF, N * sizeof(Node)));  // sentinels
    CHECK(hipMemset(d_nodes[1], 0xFF, N * sizeof(Node)));

    const int threads = 256, blocks = (N + threads - 1) / threads;
    init_nodes<<<blocks, threads>>>(d_next, d_val, N, d_nodes[0]);
    CHECK(hipGetLastError());
    int cur = 0, rounds = 0;
    for (;;) {
        CHECK(hipMemset(d_flag, 0, sizeof(int)));
        jump<<<blocks, threads>>>(d_nodes[cur], d_nodes[1 - cur], N, d_flag);
        CHECK(hipGetLastError());
        cur = 1 - cur;
        ++rounds;
        int flag = 0;
        CHECK(hipMemcpy(&flag, d_flag, sizeof(int), hipMemcpyDeviceToHost));
        if (!flag || rounds > 40) break;
    }
    CHECK(hipDeviceSynchronize());

    std::vector<Node> res(N);
    CHECK(hipMemcpy(res.data(), d_nodes[cur], N * sizeof(Node), hipMemcpyDeviceToHost));

    // Host reference: walk each list backwards from its tail.
    std::vector<unsigned> ref_cnt(N);
    std::vector<unsigned long long> ref_sum(N);
    std::vector<int> ref_last(N), chain;
    for (int h : heads) {
        chain.clear();
        for (int v = h; v >= 0; v = h_next[v]) chain.push_back(v);
        unsigned long long acc = 0;
        for (int k = (int)chain.size() - 1; k >= 0; --k) {
            acc += h_val[chain[k]];
            ref_cnt[chain[k]] = (unsigned)(chain.size() - k);
            ref_sum[chain[k]] = acc;
            ref_last[chain[k]] = chain.back();
        }
    }
    int mismatches = 0;
    uint64_t h_rank = 0xCBF29CE484222325ull, h_sum = h_rank, h_tail = h_rank;
    for (int i = 0; i < N; ++i) {
        const Node& s = res[i];
        if (s.nxt != -1 || s.cnt != ref_cnt[i] || s.sum != ref_sum[i] || s.last != ref_last[i])
            ++mismatches;
        h_rank = fnv_mix(h_rank, s.cnt);
        h_sum = fnv_mix(h_sum, s.sum);
        h_tail = fnv_mix(h_tail, ((uint64_t)(uint32_t)s.nxt << 32) | (uint32_t)s.last);
    }
    printf("rounds %d\n", rounds);
    printf("checksum_rank 0x%016llx\n", (unsigned long long)h_rank);
    printf("checksum_sum  0x%016llx\n", (unsigned long long)h_sum);
    printf("checksum_tail 0x%016llx\n", (unsigned long long)h_tail);
    printf("mismatches vs host walk %d\n", mismatches);
    printf("head of list 0: node %d length %u sum %llu\n", heads[0], res[heads[0]].cnt,
           res[heads[0]].sum);
    const int samples[2] = {5, N - 2};
    for (int k = 0; k < 2; ++k) {
        const Node& s = res[samples[k]];
        printf("node[%d] rank %u sum %llu tail %d\n", samples[k], s.cnt, s.sum, s.last);
    }

    CHECK(hipFree(d_next)); CHECK(hipFree(d_val)); CHECK(hipFree(d_nodes[0]));
    CHECK(hipFree(d_nodes[1])); CHECK(hipFree(d_flag));
    return 0;
}
