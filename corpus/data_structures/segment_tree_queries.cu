// segment_tree_queries.cu
// Iterative (bottom-up) segment tree storing range sums and range minima.
//   build_level     - builds one tree level from its children (grid-stride)
//   range_query     - answers [l, r) queries; the top CACHE_NODES nodes of
//                     the tree are staged in shared memory per block
//   point_decrease  - concurrent point updates a[i] -= delta that walk up to
//                     the root with atomicAdd (sums) and atomicMin (minima);
//                     correct because values only ever decrease
// Results are checked against a serial host implementation.

#include "data_structures_common.cuh"
#include <algorithm>
#include <climits>
#include <vector>

#define LEAVES (1 << 18)   // power of two
#define CACHE_NODES 1024
#define THREADS 256

struct RangeResult {
    long long sum;
    int min;
};

__global__ void build_level(int* sum, int* mn, int begin, int end) {
    for (int i = begin + blockIdx.x * blockDim.x + threadIdx.x; i < end; i += gridDim.x * blockDim.x) {
        sum[i] = sum[2 * i] + sum[2 * i + 1];
        mn[i] = min(mn[2 * i], mn[2 * i + 1]);
    }
}

__device__ __forceinline__ void visit(int node, const int* s_sum, const int* s_min,
                                      const int* sum, const int* mn, long long& acc, int& m) {
    if (node < CACHE_NODES) {
        acc += s_sum[node];
        m = min(m, s_min[node]);
    } else {
        acc += sum[node];
        m = min(m, mn[node]);
    }
}

__global__ void range_query(const int* __restrict__ sum, const int* __restrict__ mn,
                            const int2* __restrict__ ranges, int num_queries, RangeResult* out) {
    __shared__ int s_sum[CACHE_NODES];
    __shared__ int s_min[CACHE_NODES];
    for (int i = threadIdx.x; i < CACHE_NODES; i += blockDim.x) {
        s_sum[i] = sum[i];
        s_min[i] = mn[i];
    }
    __syncthreads();

    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < num_queries; q += gridDim.x * blockDim.x) {
        int l = ranges[q].x + LEAVES, r = ranges[q].y + LEAVES;
        long long acc = 0;
        int m = INT_MAX;
        while (l < r) {
            if (l & 1) visit(l++, s_sum, s_min, sum, mn, acc, m);
            if (r & 1) visit(--r, s_sum, s_min, sum, mn, acc, m);
            l >>= 1;
            r >>= 1;
        }
        out[q].sum = acc;
        out[q].min = m;
    }
}

__global__ void point_decrease(int* sum, int* mn, const int2* updates, int num_updates) {
    for (int u = blockIdx.x * blockDim.x + threadIdx.x; u < num_updates; u += gridDim.x * blockDim.x) {
        const int leaf = updates[u].x + LEAVES;
        const int delta = updates[u].y;  // >= 0
        const int new_value = atomicSub(&sum[leaf], delta) - delta;
        atomicMin(&mn[leaf], new_value);
        for (int p = leaf >> 1; p >= 1; p >>= 1) {
            atomicAdd(&sum[p], -delta);
            atomicMin(&mn[p], new_value);
        }
    }
}

// Serial reference on the host (same tree layout).
static RangeResult host_query(const std::vector<int>& sum, const std::vector<int>& mn, int l, int r) {
    RangeResult res = {0, INT_MAX};
    for (l += LEAVES, r += LEAVES; l < r; l >>= 1, r >>= 1) {
        if (l & 1) { res.sum += sum[l]; res.min = std::min(res.min, mn[l]); ++l; }
        if (r & 1) { --r; res.sum += sum[r]; res.min = std::min(res.min, mn[r]); }
    }
    return res;
}

static void host_build(std::vector<int>& sum, std::vector<int>& mn) {
    for (int i = LEAVES - 1; i >= 1; --i) {
        sum[i] = sum[2 * i] + sum[2 * i + 1];
        mn[i] = std::min(mn[2 * i], mn[2 * i + 1]);
    }
}

static void device_build(int* d_sum, int* d_mn) {
    for (int begin = LEAVES / 2; begin >= 1; begin /= 2) {
        const int count = begin;  // nodes [begin, 2*begin)
        const int grid = std::min((int)blocks_for(count, THREADS), 128);
        build_level<<<grid, THREADS>>>(d_sum, d_mn, begin, 2 * begin);
        CUDA_CHECK(cudaGetLastError());
    }
}

static int run_queries(const char* tag, const int* d_sum, const int* d_mn, const int2* d_ranges,
                       RangeResult* d_out, const std::vector<int2>& ranges,
                       const std::vector<int>& hs, const std::vector<int>& hm) {
    const int nq = (int)ranges.size();
    range_query<<<64, THREADS>>>(d_sum, d_mn, d_ranges, nq, d_out);
    CUDA_CHECK(cudaGetLastError());
    std::vector<RangeResult> res(nq);
    CUDA_CHECK(cudaMemcpy(res.data(), d_out, nq * sizeof(RangeResult), cudaMemcpyDeviceToHost));
    long long sum_check = 0, min_check = 0;
    int errors = 0;
    for (int q = 0; q < nq; ++q) {
        RangeResult ref = host_query(hs, hm, ranges[q].x, ranges[q].y);
        if (ref.sum != res[q].sum || ref.min != res[q].min) ++errors;
        sum_check += res[q].sum;
        min_check += res[q].min;
    }
    printf("[%s] queries=%d sum_checksum=%lld min_checksum=%lld errors=%d\n", tag, nq, sum_check,
           min_check, errors);
    printf("[%s] q0=[%d,%d) sum=%lld min=%d\n", tag, ranges[0].x, ranges[0].y, res[0].sum, res[0].min);
    return errors;
}

int main() {
    const int num_queries = 50000, num_updates = 30000;
    SplitMix64 rng(31415);
    std::vector<int> h_sum(2 * LEAVES, 0), h_mn(2 * LEAVES, INT_MAX);
    for (int i = 0; i < LEAVES; ++i) h_sum[LEAVES + i] = h_mn[LEAVES + i] = 100 + (int)(rng.next() % 900);

    std::vector<int2> ranges(num_queries), updates(num_updates);
    for (auto& q : ranges) {
        int a = (int)(rng.next() % LEAVES), b = (int)(rng.next() % LEAVES);
        q = make_int2(std::min(a, b), std::max(a, b) + 1);
    }
    for (auto& u : updates) u = make_int2((int)(rng.next() % 4096) * 64, (int)(rng.next() % 50));

    int *d_sum, *d_mn;
    int2 *d_ranges, *d_updates;
    RangeResult* d_out;
    CUDA_CHECK(cudaMalloc(&d_sum, 2 * LEAVES * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_mn, 2 * LEAVES * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_ranges, num_queries * sizeof(int2)));
    CUDA_CHECK(cudaMalloc(&d_updates, num_updates * sizeof(int2)));
    CUDA_CHECK(cudaMalloc(&d_out, num_queries * sizeof(RangeResult)));
    CUDA_CHECK(cudaMemcpy(d_sum, h_sum.data(), 2 * LEAVES * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_mn, h_mn.data(), 2 * LEAVES * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_ranges, ranges.data(), num_queries * sizeof(int2), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_updates, updates.data(), num_updates * sizeof(int2), cudaMemcpyHostToDevice));

    device_build(d_sum, d_mn);
    host_build(h_sum, h_mn);
    int errors = run_queries("initial", d_sum, d_mn, d_ranges, d_out, ranges, h_sum, h_mn);

    // Many updates hit the same leaves (indices are multiples of 64).
    point_decrease<<<32, THREADS>>>(d_sum, d_mn, d_updates, num_updates);
    CUDA_CHECK(cudaGetLastError());
    for (const int2& u : updates) { h_sum[LEAVES + u.x] -= u.y; h_mn[LEAVES + u.x] = h_sum[LEAVES + u.x]; }
    host_build(h_sum, h_mn);
    errors += run_queries("updated", d_sum, d_mn, d_ranges, d_out, ranges, h_sum, h_mn);

    int root_sum = 0;
    CUDA_CHECK(cudaMemcpy(&root_sum, d_sum + 1, sizeof(int), cudaMemcpyDeviceToHost));
    printf("root_sum=%d host_root_sum=%d\n", root_sum, h_sum[1]);

    CUDA_CHECK(cudaFree(d_sum)); CUDA_CHECK(cudaFree(d_mn)); CUDA_CHECK(cudaFree(d_ranges));
    CUDA_CHECK(cudaFree(d_updates)); CUDA_CHECK(cudaFree(d_out));
    return errors == 0 ? 0 : 1;
}
