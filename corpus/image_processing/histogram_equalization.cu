// histogram_equalization.cu
// Global histogram equalization of an 8-bit grayscale image in three kernels:
//   1. privatized 256-bin histogram (shared-memory atomics, grid-stride loop)
//   2. inclusive scan of the histogram -> CDF -> lookup table
//      (dynamically sized shared memory, extern __shared__)
//   3. apply the lookup table to every pixel
#include <vector>
#include "image_processing_common.cuh"

#define NUM_BINS 256

// Kernel 1: each block builds a private histogram in shared memory, then
// merges it into the global histogram with one atomicAdd per bin.
__global__ void histogram_256(const unsigned char* __restrict__ img, size_t n,
                              unsigned int* __restrict__ hist)
{
    __shared__ unsigned int s_hist[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) s_hist[b] = 0u;
    __syncthreads();

    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&s_hist[img[i]], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) {
        unsigned int c = s_hist[b];
        if (c) atomicAdd(&hist[b], c);
    }
}

// Kernel 2: single block of NUM_BINS threads. Hillis-Steele inclusive scan in
// double-buffered dynamic shared memory, then the classic equalization map
//   lut[v] = round((cdf[v] - cdf_min) / (N - cdf_min) * 255)
__global__ void build_equalization_lut(const unsigned int* __restrict__ hist,
                                       unsigned int* __restrict__ cdf_out,
                                       unsigned char* __restrict__ lut,
                                       unsigned int total)
{
    extern __shared__ unsigned int s_scan[];        // 2 * NUM_BINS entries
    unsigned int* bufA = s_scan;
    unsigned int* bufB = s_scan + NUM_BINS;

    const int t = threadIdx.x;
    bufA[t] = hist[t];
    __syncthreads();

    for (int offset = 1; offset < NUM_BINS; offset <<= 1) {
        unsigned int v = bufA[t];
        if (t >= offset) v += bufA[t - offset];
        bufB[t] = v;
        __syncthreads();
        unsigned int* tmp = bufA; bufA = bufB; bufB = tmp;
    }
    const unsigned int cdf = bufA[t];
    cdf_out[t] = cdf;

    // cdf_min = first non-zero CDF value; find it with a shared min-reduction
    __shared__ unsigned int s_cdfMin;
    if (t == 0) s_cdfMin = 0xFFFFFFFFu;
    __syncthreads();
    if (cdf > 0u) atomicMin(&s_cdfMin, cdf);
    __syncthreads();

    const unsigned int cmin = s_cdfMin;
    float scaled = 0.0f;
    if (total > cmin && cdf >= cmin)
        scaled = (float)(cdf - cmin) * 255.0f / (float)(total - cmin);
    lut[t] = saturate_u8(scaled);
}

// Kernel 3: remap every pixel through the LUT (kept in shared memory).
__global__ void apply_lut(const unsigned char* __restrict__ src,
                          unsigned char* __restrict__ dst, size_t n,
                          const unsigned char* __restrict__ lut)
{
    __shared__ unsigned char s_lut[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) s_lut[b] = lut[b];
    __syncthreads();

    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = s_lut[src[i]];
}

int main()
{
    const int W = 1024, H = 768;
    const size_t n = (size_t)W * H;

    // Low-contrast source: squeeze the synthetic image into [70, 150].
    std::vector<float> f(n);
    make_test_image(f.data(), W, H, 12345u);
    std::vector<unsigned char> h_src(n), h_dst(n);
    for (size_t i = 0; i < n; ++i)
        h_src[i] = saturate_u8(70.0f + f[i] * (80.0f / 255.0f));

    unsigned char *d_src, *d_dst, *d_lut;
    unsigned int *d_hist, *d_cdf;
    CUDA_CHECK(cudaMalloc(&d_src, n));
    CUDA_CHECK(cudaMalloc(&d_dst, n));
    CUDA_CHECK(cudaMalloc(&d_lut, NUM_BINS));
    CUDA_CHECK(cudaMalloc(&d_hist, NUM_BINS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMalloc(&d_cdf, NUM_BINS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(d_src, h_src.data(), n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_hist, 0, NUM_BINS * sizeof(unsigned int)));

    const int threads = 256, blocks = 120;
    histogram_256<<<blocks, threads>>>(d_src, n, d_hist);
    CUDA_CHECK(cudaGetLastError());
    build_equalization_lut<<<1, NUM_BINS, 2 * NUM_BINS * sizeof(unsigned int)>>>(
        d_hist, d_cdf, d_lut, (unsigned int)n);
    CUDA_CHECK(cudaGetLastError());
    apply_lut<<<blocks, threads>>>(d_src, d_dst, n, d_lut);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<unsigned int> h_hist(NUM_BINS), h_cdf(NUM_BINS);
    std::vector<unsigned char> h_lut(NUM_BINS);
    CUDA_CHECK(cudaMemcpy(h_hist.data(), d_hist, NUM_BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_cdf.data(), d_cdf, NUM_BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_lut.data(), d_lut, NUM_BINS, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_dst.data(), d_dst, n, cudaMemcpyDeviceToHost));

    // Verify the histogram on the host and summarize the result
    std::vector<unsigned int> ref(NUM_BINS, 0u);
    for (size_t i = 0; i < n; ++i) ref[h_src[i]]++;
    bool ok = (h_cdf[NUM_BINS - 1] == (unsigned int)n);
    for (int b = 0; b < NUM_BINS; ++b) ok = ok && (ref[b] == h_hist[b]);

    int lo = 255, hi = 0;
    unsigned long long sumSrc = 0, sumDst = 0, hash = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) {
        sumSrc += h_src[i];
        sumDst += h_dst[i];
        if (h_dst[i] < lo) lo = h_dst[i];
        if (h_dst[i] > hi) hi = h_dst[i];
        hash = (hash ^ h_dst[i]) * 1099511628211ull;   // FNV-1a
    }

    printf("pixels = %zu, histogram check: %s\n", n, ok ? "PASS" : "FAIL");
    printf("mean src = %.4f, mean dst = %.4f\n", (double)sumSrc / n, (double)sumDst / n);
    printf("dst range = [%d, %d]\n", lo, hi);
    printf("lut[80] = %u, lut[110] = %u, lut[140] = %u\n", h_lut[80], h_lut[110], h_lut[140]);
    printf("output FNV-1a = %016llx\n", hash);

    CUDA_CHECK(cudaFree(d_src));
    CUDA_CHECK(cudaFree(d_dst));
    CUDA_CHECK(cudaFree(d_lut));
    CUDA_CHECK(cudaFree(d_hist));
    CUDA_CHECK(cudaFree(d_cdf));
    return ok ? 0 : 1;
}
