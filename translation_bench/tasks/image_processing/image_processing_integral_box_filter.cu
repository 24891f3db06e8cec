// Integral image (summed-area table) of a 2048x1024 8-bit image and a 15x15
// box-mean filter evaluated from it. Kernel 1 scans every row (one block per
// row: per-thread serial sums, a warp inclusive scan with __shfl_up_sync, and a
// shared-memory scan of warp totals); kernel 2 scans the columns; kernel 3 reads
// four corners of the table per pixel to get the window mean (window clipped at
// the borders). Prints hashes of the table and filtered image plus samples.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error '%s' at %s:%d\n",                     \
                    cudaGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define W 2048
#define H 1024
#define ROW_THREADS 256
#define PER_THREAD (W / ROW_THREADS)
#define BOX_R 7

__global__ void row_scan_kernel(const unsigned char* __restrict__ img, unsigned int* __restrict__ sat) {
    __shared__ unsigned int warp_tot[ROW_THREADS / 32];
    int row = blockIdx.x;
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const unsigned char* src = img + (size_t)row * W + t * PER_THREAD;
    unsigned int vals[PER_THREAD];
    unsigned int run = 0;
    for (int k = 0; k < PER_THREAD; ++k) { run += src[k]; vals[k] = run; }
    // inclusive warp scan of per-thread totals
    unsigned int scan = run;
    for (int off = 1; off < 32; off <<= 1) {
        unsigned int up = __shfl_up_sync(0xffffffffu, scan, off);
        if (lane >= off) scan += up;
    }
    if (lane == 31) warp_tot[warp] = scan;
    __syncthreads();
    if (warp == 0) {
        unsigned int wt = lane < ROW_THREADS / 32 ? warp_tot[lane] : 0u;
        for (int off = 1; off < 32; off <<= 1) {
            unsigned int up = __shfl_up_sync(0xffffffffu, wt, off);
            if (lane >= off) wt += up;
        }
        if (lane < ROW_THREADS / 32) warp_tot[lane] = wt;  // inclusive warp prefix
    }
    __syncthreads();
    unsigned int offset = (scan - run) + (warp > 0 ? warp_tot[warp - 1] : 0u);
    unsigned int* dst = sat + (size_t)row * W + t * PER_THREAD;
    for (int k = 0; k < PER_THREAD; ++k) dst[k] = vals[k] + offset;
}

__global__ void col_scan_kernel(unsigned int* __restrict__ sat) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= W) return;
    unsigned int run = 0;
    for (int y = 0; y < H; ++y) {
        run += sat[(size_t)y * W + x];
        sat[(size_t)y * W + x] = run;
    }
}

__device__ __forceinline__ unsigned int sat_at(const unsigned int* sat, int x, int y) {
    return (x < 0 || y < 0) ? 0u : sat[(size_t)y * W + x];
}

__global__ void box_mean_kernel(const unsigned int* __restrict__ sat, unsigned char* __restrict__ out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    int x0 = max(x - BOX_R, 0) - 1, x1 = min(x + BOX_R, W - 1);
    int y0 = max(y - BOX_R, 0) - 1, y1 = min(y + BOX_R, H - 1);
    unsigned int s = sat_at(sat, x1, y1) - sat_at(sat, x0, y1) - sat_at(sat, x1, y0) + sat_at(sat, x0, y0);
    unsigned int cnt = (unsigned int)((x1 - x0) * (y1 - y0));
    out[(size_t)y * W + x] = (unsigned char)((s + cnt / 2) / cnt);
}

static uint64_t fnv1a(const void* data, size_t n) {
    const unsigned char* p = (const unsigned char*)data;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

int main(int argc, char** argv) {
    const size_t n = (size_t)W * H;
    std::vector<unsigned char> h_img(n), h_box(n);
    std::vector<unsigned int> h_sat(n);
    uint64_t s = 0x0123456789ABCDEFULL;
    if (argc > 1) s = strtoull(argv[1], nullptr, 0);
    for (size_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int x = (int)(i % W), y = (int)(i / W);
        int pattern = ((x >> 6) ^ (y >> 5)) & 1 ? 180 : 60;
        h_img[i] = (unsigned char)(pattern + (int)((s >> 33) % 64) - 32);
    }
    unsigned char *d_img, *d_box;
    unsigned int* d_sat;
    CK(cudaMalloc(&d_img, n));
    CK(cudaMalloc(&d_box, n));
    CK(cudaMalloc(&d_sat, n * sizeof(unsigned int)));
    CK(cudaMemcpy(d_img, h_img.data(), n, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_sat, 0xFF, n * sizeof(unsigned int)));
    CK(cudaMemset(d_box, 0xFF, n));

    row_scan_kernel<<<H, ROW_THREADS>>>(d_img, d_sat);
    CK(cudaGetLastError());
    col_scan_kernel<<<(W + 127) / 128, 128>>>(d_sat);
    CK(cudaGetLastError());
    dim3 block(32, 8), grid(W / 32, H / 8);
    box_mean_kernel<<<grid, block>>>(d_sat, d_box);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h_sat.data(), d_sat, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h_box.data(), d_box, n, cudaMemcpyDeviceToHost));

    uint64_t total = 0, box_sum = 0;
    for (size_t i = 0; i < n; ++i) { total += h_img[i]; box_sum += (uint64_t)h_box[i] * (1 + i % 13); }
    printf("sat_hash 0x%016llx\n", (unsigned long long)fnv1a(h_sat.data(), n * sizeof(unsigned int)));
    printf("box_hash 0x%016llx\n", (unsigned long long)fnv1a(h_box.data(), n));
    printf("sat_total %u host_total %llu\n", h_sat[n - 1], (unsigned long long)total);
    printf("box_weighted_sum %llu\n", (unsigned long long)box_sum);
    const size_t samples[3] = {W + 1, (size_t)W * 511 + 1023, n - 2};
    for (int k = 0; k < 3; ++k)
        printf("sample[%zu] = sat %u box %d\n", samples[k], h_sat[samples[k]], h_box[samples[k]]);

    CK(cudaFree(d_img)); CK(cudaFree(d_box)); CK(cudaFree(d_sat));
    return 0;
}
