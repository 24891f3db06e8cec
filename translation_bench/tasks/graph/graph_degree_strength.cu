// Degree and strength statistics of a weighted directed multigraph given as an edge list:
// 2^22 edges over 2^18 vertices, destinations skewed towards low vertex ids. One grid-stride
// kernel counts every vertex's in-degree and out-degree and sums its incoming edge weights
// (in-strength) with integer atomics; the host hashes the three arrays.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
static constexpr int NE = 1 << 22;

static uint64_t g_rng = 0xD1B54A32D192ED03ull;
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

__global__ void degree_strength(const int* __restrict__ src, const int* __restrict__ dst,
                                const unsigned* __restrict__ weight, int ne,
                                unsigned* __restrict__ in_deg, unsigned* __restrict__ out_deg,
                                unsigned long long* __restrict__ in_strength) {
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < ne; e += gridDim.x * blockDim.x) {
        int s = src[e], d = dst[e];
        atomicAdd(&out_deg[s], 1u);
        atomicAdd(&in_deg[d], 1u);
        atomicAdd(&in_strength[d], (unsigned long long)weight[e]);
    }
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        g_rng = strtoull(argv[1], nullptr, 0);
        if (g_rng == 0) g_rng = 0xD1B54A32D192ED03ull;
    }
    std::vector<int> h_src(NE), h_dst(NE);
    std::vector<unsigned> h_w(NE);
    for (int e = 0; e < NE; ++e) {
        h_src[e] = (int)(xorshift64() % NV);
        // Product of two uniforms: density grows towards vertex 0 (heavy-tailed in-degrees).
        uint64_t a = xorshift64() % NV, b = xorshift64() % NV;
        h_dst[e] = (int)((a * b) / NV);
        h_w[e] = 1 + (unsigned)(xorshift64() % 100000);
    }

    int *d_src, *d_dst;
    unsigned *d_w, *d_in, *d_out;
    unsigned long long* d_strength;
    CHECK(cudaMalloc(&d_src, NE * sizeof(int)));
    CHECK(cudaMalloc(&d_dst, NE * sizeof(int)));
    CHECK(cudaMalloc(&d_w, NE * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_in, NV * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_out, NV * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_strength, NV * sizeof(unsigned long long)));
    CHECK(cudaMemcpy(d_src, h_src.data(), NE * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_dst, h_dst.data(), NE * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_w, h_w.data(), NE * sizeof(unsigned), cudaMemcpyHostToDevice));
    // The outputs are atomic accumulators, so they start at zero (a kernel that does nothing
    // leaves them all zero, which the checksums below distinguish).
    CHECK(cudaMemset(d_in, 0, NV * sizeof(unsigned)));
    CHECK(cudaMemset(d_out, 0, NV * sizeof(unsigned)));
    CHECK(cudaMemset(d_strength, 0, NV * sizeof(unsigned long long)));

    degree_strength<<<1024, 256>>>(d_src, d_dst, d_w, NE, d_in, d_out, d_strength);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<unsigned> in(NV), out(NV);
    std::vector<unsigned long long> strength(NV);
    CHECK(cudaMemcpy(in.data(), d_in, NV * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out.data(), d_out, NV * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(strength.data(), d_strength, NV * sizeof(unsigned long long),
                     cudaMemcpyDeviceToHost));

    uint64_t h_in = 0xCBF29CE484222325ull, h_out = h_in, h_str = h_in;
    uint64_t sum_in = 0, sum_out = 0;
    int argmax = 0, sources = 0;
    for (int v = 0; v < NV; ++v) {
        h_in = fnv_mix(h_in, in[v]);
        h_out = fnv_mix(h_out, out[v]);
        h_str = fnv_mix(h_str, strength[v]);
        sum_in += in[v];
        sum_out += out[v];
        if (in[v] > in[argmax]) argmax = v;
        if (in[v] == 0) ++sources;
    }
    printf("checksum_in_degree  0x%016llx\n", (unsigned long long)h_in);
    printf("checksum_out_degree 0x%016llx\n", (unsigned long long)h_out);
    printf("checksum_strength   0x%016llx\n", (unsigned long long)h_str);
    printf("edges counted in %llu out %llu\n", (unsigned long long)sum_in,
           (unsigned long long)sum_out);
    printf("max in-degree vertex %d: degree %u strength %llu\n", argmax, in[argmax],
           strength[argmax]);
    printf("vertices with in-degree 0: %d\n", sources);
    const int samples[3] = {1, 777, NV - 1};
    for (int s = 0; s < 3; ++s) {
        int v = samples[s];
        printf("vertex[%d] in %u out %u strength %llu\n", v, in[v], out[v], strength[v]);
    }

    CHECK(cudaFree(d_src)); CHECK(cudaFree(d_dst)); CHECK(cudaFree(d_w));
    CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out)); CHECK(cudaFree(d_strength));
    return 0;
}
