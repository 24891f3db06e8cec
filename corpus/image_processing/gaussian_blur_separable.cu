// gaussian_blur_separable.cu
// Separable Gaussian blur on a grayscale float image.
//  - filter taps live in __constant__ memory (broadcast to all threads)
//  - row and column passes each stage a tile plus apron in static shared memory
//  - a handful of pixels are checked against a straightforward CPU reference
#include <cmath>
#include <vector>
#include "image_processing_common.cuh"

#define KERNEL_RADIUS 4
#define KERNEL_TAPS (2 * KERNEL_RADIUS + 1)
#define TILE_W 32
#define TILE_H 8

__constant__ float c_gauss[KERNEL_TAPS];

// Horizontal pass: each block loads TILE_H rows of TILE_W pixels plus a
// KERNEL_RADIUS apron on the left and right.
__global__ void blur_rows(const float* __restrict__ src, float* __restrict__ dst,
                          ImageSize sz)
{
    __shared__ float tile[TILE_H][TILE_W + 2 * KERNEL_RADIUS];

    const int gx = blockIdx.x * TILE_W + threadIdx.x;
    const int gy = blockIdx.y * TILE_H + threadIdx.y;
    const int row = clamp_index(gy, sz.height);

    // main body
    tile[threadIdx.y][threadIdx.x + KERNEL_RADIUS] = fetch_clamped(src, sz, gx, row);
    // left / right apron, loaded by the first KERNEL_RADIUS threads of each row
    if (threadIdx.x < KERNEL_RADIUS) {
        tile[threadIdx.y][threadIdx.x] =
            fetch_clamped(src, sz, gx - KERNEL_RADIUS, row);
        tile[threadIdx.y][threadIdx.x + TILE_W + KERNEL_RADIUS] =
            fetch_clamped(src, sz, gx + TILE_W, row);
    }
    __syncthreads();

    if (gx >= sz.width || gy >= sz.height) return;

    float acc = 0.0f;
#pragma unroll
    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; ++k)
        acc += c_gauss[k + KERNEL_RADIUS] * tile[threadIdx.y][threadIdx.x + KERNEL_RADIUS + k];
    dst[gy * sz.width + gx] = acc;
}

// Vertical pass: tile is TILE_W wide and TILE_H + 2*radius tall.
__global__ void blur_cols(const float* __restrict__ src, float* __restrict__ dst,
                          ImageSize sz)
{
    __shared__ float tile[TILE_H + 2 * KERNEL_RADIUS][TILE_W];

    const int gx = blockIdx.x * TILE_W + threadIdx.x;
    const int gy = blockIdx.y * TILE_H + threadIdx.y;
    const int col = clamp_index(gx, sz.width);

    tile[threadIdx.y + KERNEL_RADIUS][threadIdx.x] = fetch_clamped(src, sz, col, gy);
    if (threadIdx.y < KERNEL_RADIUS) {
        tile[threadIdx.y][threadIdx.x] = fetch_clamped(src, sz, col, gy - KERNEL_RADIUS);
        tile[threadIdx.y + TILE_H + KERNEL_RADIUS][threadIdx.x] =
            fetch_clamped(src, sz, col, gy + TILE_H);
    }
    __syncthreads();

    if (gx >= sz.width || gy >= sz.height) return;

    float acc = 0.0f;
#pragma unroll
    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; ++k)
        acc += c_gauss[k + KERNEL_RADIUS] * tile[threadIdx.y + KERNEL_RADIUS + k][threadIdx.x];
    dst[gy * sz.width + gx] = acc;
}

// CPU reference for one output pixel (two 1D passes with clamped borders).
static float reference_pixel(const std::vector<float>& img, ImageSize sz,
                             const float* taps, int x, int y)
{
    float acc = 0.0f;
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; ++j) {
        int yy = clamp_index(y + j, sz.height);
        float rowAcc = 0.0f;
        for (int i = -KERNEL_RADIUS; i <= KERNEL_RADIUS; ++i) {
            int xx = clamp_index(x + i, sz.width);
            rowAcc += taps[i + KERNEL_RADIUS] * img[yy * sz.width + xx];
        }
        acc += taps[j + KERNEL_RADIUS] * rowAcc;
    }
    return acc;
}

int main()
{
    const ImageSize sz = {640, 480};
    const size_t npix = (size_t)sz.width * sz.height;
    const size_t bytes = npix * sizeof(float);

    // Normalised Gaussian taps, sigma = 1.6
    float taps[KERNEL_TAPS];
    const float sigma = 1.6f;
    float sum = 0.0f;
    for (int i = 0; i < KERNEL_TAPS; ++i) {
        float d = (float)(i - KERNEL_RADIUS);
        taps[i] = expf(-(d * d) / (2.0f * sigma * sigma));
        sum += taps[i];
    }
    for (int i = 0; i < KERNEL_TAPS; ++i) taps[i] /= sum;
    CUDA_CHECK(cudaMemcpyToSymbol(c_gauss, taps, sizeof(taps)));

    std::vector<float> h_in(npix), h_out(npix);
    make_test_image(h_in.data(), sz.width, sz.height, 0xC0FFEEu);

    float *d_in = nullptr, *d_tmp = nullptr, *d_out = nullptr;
    CUDA_CHECK(cudaMalloc(&d_in, bytes));
    CUDA_CHECK(cudaMalloc(&d_tmp, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_in, h_in.data(), bytes, cudaMemcpyHostToDevice));

    dim3 block(TILE_W, TILE_H);
    dim3 grid(DIV_UP(sz.width, TILE_W), DIV_UP(sz.height, TILE_H));
    blur_rows<<<grid, block>>>(d_in, d_tmp, sz);
    CUDA_CHECK(cudaGetLastError());
    blur_cols<<<grid, block>>>(d_tmp, d_out, sz);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost));

    // Checksums of input and output (blur preserves the mean approximately)
    double sumIn = 0.0, sumOut = 0.0;
    for (size_t i = 0; i < npix; ++i) { sumIn += h_in[i]; sumOut += h_out[i]; }

    // Spot-check against the CPU reference
    const int probes[6][2] = {{0, 0}, {17, 3}, {320, 240}, {639, 479}, {101, 96}, {500, 300}};
    float maxErr = 0.0f;
    for (int p = 0; p < 6; ++p) {
        float ref = reference_pixel(h_in, sz, taps, probes[p][0], probes[p][1]);
        float got = h_out[probes[p][1] * sz.width + probes[p][0]];
        maxErr = fmaxf(maxErr, fabsf(ref - got));
    }

    printf("image %dx%d, radius %d, sigma %.2f\n", sz.width, sz.height, KERNEL_RADIUS, sigma);
    printf("mean in  = %.4f\n", sumIn / (double)npix);
    printf("mean out = %.4f\n", sumOut / (double)npix);
    printf("out(320,240) = %.4f  out(101,96) = %.4f\n",
           h_out[240 * sz.width + 320], h_out[96 * sz.width + 101]);
    printf("8-bit center pixel = %u\n", (unsigned)saturate_u8(h_out[240 * sz.width + 320]));
    printf("max |gpu - cpu| on probes = %.6f -> %s\n", maxErr, maxErr < 1e-3f ? "PASS" : "FAIL");

    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_tmp));
    CUDA_CHECK(cudaFree(d_out));
    return maxErr < 1e-3f ? 0 : 1;
}
