// blelloch_scan.cu
// Work-efficient (Blelloch) exclusive prefix sum over an arbitrary-length
// integer array. Three kernels form the classic hierarchical scan:
//   1. scan_blocks      : up-sweep / down-sweep in dynamic shared memory,
//                         one tile of 2*blockDim elements per block, tile
//                         totals written to an auxiliary array
//   2. scan_blocks is re-applied to the tile totals (recursively)
//   3. add_block_offsets: adds each tile's scanned offset back to its elements
// Shared indices are padded to reduce bank conflicts.

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                             \
    do {                                                                        \
        cudaError_t e_ = (call);                                                \
        if (e_ != cudaSuccess) {                                                \
            fprintf(stderr, "error %s at %s:%d\n", cudaGetErrorString(e_),      \
                    __FILE__, __LINE__);                                        \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

constexpr int SCAN_THREADS = 256;
constexpr int TILE = 2 * SCAN_THREADS;
constexpr int LOG_BANKS = 5;

// Insert one padding slot every 32 entries.
__host__ __device__ __forceinline__ int pad(int i) { return i + (i >> LOG_BANKS); }

__global__ void scan_blocks(const int* __restrict__ in, int* __restrict__ out,
                            int* __restrict__ tileSums, int n) {
    extern __shared__ int temp[];
    const int t = threadIdx.x;
    const int base = blockIdx.x * TILE;
    const int ai = t, bi = t + SCAN_THREADS;

    temp[pad(ai)] = (base + ai < n) ? in[base + ai] : 0;
    temp[pad(bi)] = (base + bi < n) ? in[base + bi] : 0;

    // Up-sweep: build partial sums in place.
    int offset = 1;
    for (int d = TILE >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int a = offset * (2 * t + 1) - 1;
            int b = offset * (2 * t + 2) - 1;
            temp[pad(b)] += temp[pad(a)];
        }
        offset <<= 1;
    }

    if (t == 0) {
        if (tileSums) tileSums[blockIdx.x] = temp[pad(TILE - 1)];
        temp[pad(TILE - 1)] = 0;
    }

    // Down-sweep: distribute the prefixes.
    for (int d = 1; d < TILE; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int a = offset * (2 * t + 1) - 1;
            int b = offset * (2 * t + 2) - 1;
            int tmp = temp[pad(a)];
            temp[pad(a)] = temp[pad(b)];
            temp[pad(b)] += tmp;
        }
    }
    __syncthreads();

    if (base + ai < n) out[base + ai] = temp[pad(ai)];
    if (base + bi < n) out[base + bi] = temp[pad(bi)];
}

__global__ void add_block_offsets(int* __restrict__ data, const int* __restrict__ offsets, int n) {
    const int base = blockIdx.x * TILE;
    const int add = offsets[blockIdx.x];
    for (int i = threadIdx.x; i < TILE && base + i < n; i += blockDim.x) data[base + i] += add;
}

// Host driver: scans d_in into d_out (may alias), recursing on the tile sums.
static void exclusive_scan(const int* d_in, int* d_out, int n) {
    const int tiles = (n + TILE - 1) / TILE;
    const size_t smem = (size_t)pad(TILE) * sizeof(int);
    if (tiles == 1) {
        scan_blocks<<<1, SCAN_THREADS, smem>>>(d_in, d_out, nullptr, n);
        CHECK(cudaGetLastError());
        return;
    }
    int* d_sums;
    CHECK(cudaMalloc(&d_sums, tiles * sizeof(int)));
    scan_blocks<<<tiles, SCAN_THREADS, smem>>>(d_in, d_out, d_sums, n);
    CHECK(cudaGetLastError());
    exclusive_scan(d_sums, d_sums, tiles);
    add_block_offsets<<<tiles, SCAN_THREADS>>>(d_out, d_sums, n);
    CHECK(cudaGetLastError());
    CHECK(cudaFree(d_sums));
}

int main() {
    const int sizes[] = {1, 500, 512, 100000, 1000003};
    uint32_t state = 20240601u;
    bool allOk = true;

    for (int n : sizes) {
        std::vector<int> h(n), out(n);
        for (int i = 0; i < n; ++i) {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5;   // xorshift32
            h[i] = (int)(state % 10);
        }

        int *dIn, *dOut;
        CHECK(cudaMalloc(&dIn, n * sizeof(int)));
        CHECK(cudaMalloc(&dOut, n * sizeof(int)));
        CHECK(cudaMemcpy(dIn, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        exclusive_scan(dIn, dOut, n);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(out.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));

        int running = 0, mismatches = 0;
        for (int i = 0; i < n; ++i) {
            if (out[i] != running) ++mismatches;
            running += h[i];
        }
        allOk &= mismatches == 0;
        printf("n=%-8d total=%-9d out[n/2]=%-8d out[n-1]=%-8d mismatches=%d\n", n, running,
               out[n / 2], out[n - 1], mismatches);

        CHECK(cudaFree(dIn));
        CHECK(cudaFree(dOut));
    }
    printf("blelloch scan: %s\n", allOk ? "PASS" : "FAIL");
    return allOk ? 0 : 1;
}
