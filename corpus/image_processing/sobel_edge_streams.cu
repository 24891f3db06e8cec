// sobel_edge_streams.cu
// Sobel edge detection on a large 8-bit image, processed in horizontal strips
// that are pipelined over several CUDA streams (pinned host buffers,
// cudaMemcpyAsync H2D -> kernel -> D2H per strip). Each strip is uploaded with
// a one-row halo above and below so strips can be filtered independently.
// Global statistics (maximum gradient, number of edge pixels) use atomics.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#define CHECK_CUDA(x)                                                         \
    do {                                                                      \
        cudaError_t e_ = (x);                                                 \
        if (e_ != cudaSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, \
                    cudaGetErrorString(e_));                                  \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const int kNumStreams = 4;
static const unsigned int kEdgeThreshold = 96;

__device__ __forceinline__ int pix(const unsigned char* strip, int pitch, int w,
                                   int x, int y)
{
    x = x < 0 ? 0 : (x >= w ? w - 1 : x);
    return (int)strip[y * pitch + x];
}

// strip: (rows + 2) rows of width w; row 0 and row rows+1 are the halo.
__global__ void sobel_strip(const unsigned char* __restrict__ strip,
                            unsigned char* __restrict__ out, int w, int rows,
                            unsigned int* __restrict__ maxGrad,
                            unsigned int* __restrict__ edgeCount)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;   // output row in strip
    if (x >= w || y >= rows) return;

    const int sy = y + 1;   // row in the halo'd input strip
    int p00 = pix(strip, w, w, x - 1, sy - 1), p01 = pix(strip, w, w, x, sy - 1), p02 = pix(strip, w, w, x + 1, sy - 1);
    int p10 = pix(strip, w, w, x - 1, sy),                                         p12 = pix(strip, w, w, x + 1, sy);
    int p20 = pix(strip, w, w, x - 1, sy + 1), p21 = pix(strip, w, w, x, sy + 1), p22 = pix(strip, w, w, x + 1, sy + 1);

    int gx = (p02 + 2 * p12 + p22) - (p00 + 2 * p10 + p20);
    int gy = (p20 + 2 * p21 + p22) - (p00 + 2 * p01 + p02);
    unsigned int mag = (unsigned int)(abs(gx) + abs(gy));   // L1 magnitude

    out[y * w + x] = (unsigned char)(mag > 255u ? 255u : mag);
    atomicMax(maxGrad, mag);
    if (mag >= kEdgeThreshold) atomicAdd(edgeCount, 1u);
}

static uint32_t lcg_state = 2463534242u;
static inline uint32_t lcg_next() { lcg_state = lcg_state * 1103515245u + 12345u; return lcg_state >> 8; }

int main()
{
    const int W = 1920, H = 1080;
    const int stripRows = H / kNumStreams;            // 270 rows per strip
    const size_t imgBytes = (size_t)W * H;

    // Pinned host memory so cudaMemcpyAsync can overlap with compute.
    unsigned char *h_in = nullptr, *h_out = nullptr;
    CHECK_CUDA(cudaMallocHost(&h_in, imgBytes));
    CHECK_CUDA(cudaMallocHost(&h_out, imgBytes));

    // Concentric rings plus noise -> plenty of edges in all directions
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            int dx = x - W / 2, dy = y - H / 2;
            int r2 = dx * dx + dy * dy;
            int ring = (r2 / 9000) & 1;
            int v = (ring ? 180 : 60) + (int)(lcg_next() % 21) - 10;
            h_in[(size_t)y * W + x] = (unsigned char)v;
        }

    cudaStream_t streams[kNumStreams];
    unsigned char* d_strip[kNumStreams];
    unsigned char* d_out[kNumStreams];
    for (int s = 0; s < kNumStreams; ++s) {
        CHECK_CUDA(cudaStreamCreate(&streams[s]));
        CHECK_CUDA(cudaMalloc(&d_strip[s], (size_t)W * (stripRows + 2)));
        CHECK_CUDA(cudaMalloc(&d_out[s], (size_t)W * stripRows));
    }
    unsigned int* d_stats;   // [0] = max gradient, [1] = edge count
    CHECK_CUDA(cudaMalloc(&d_stats, 2 * sizeof(unsigned int)));
    CHECK_CUDA(cudaMemset(d_stats, 0, 2 * sizeof(unsigned int)));

    dim3 block(32, 8);
    dim3 grid((W + block.x - 1) / block.x, (stripRows + block.y - 1) / block.y);

    for (int s = 0; s < kNumStreams; ++s) {
        const int r0 = s * stripRows;
        // halo rows: clamp to the image at the top and bottom borders
        const int top = r0 > 0 ? r0 - 1 : 0;
        const int bot = (r0 + stripRows < H) ? r0 + stripRows : H - 1;
        CHECK_CUDA(cudaMemcpyAsync(d_strip[s], h_in + (size_t)top * W, W,
                                   cudaMemcpyHostToDevice, streams[s]));
        CHECK_CUDA(cudaMemcpyAsync(d_strip[s] + W, h_in + (size_t)r0 * W,
                                   (size_t)W * stripRows, cudaMemcpyHostToDevice, streams[s]));
        CHECK_CUDA(cudaMemcpyAsync(d_strip[s] + (size_t)W * (stripRows + 1),
                                   h_in + (size_t)bot * W, W, cudaMemcpyHostToDevice, streams[s]));
        sobel_strip<<<grid, block, 0, streams[s]>>>(d_strip[s], d_out[s], W, stripRows,
                                                    d_stats, d_stats + 1);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpyAsync(h_out + (size_t)r0 * W, d_out[s], (size_t)W * stripRows,
                                   cudaMemcpyDeviceToHost, streams[s]));
    }
    for (int s = 0; s < kNumStreams; ++s) CHECK_CUDA(cudaStreamSynchronize(streams[s]));

    unsigned int stats[2];
    CHECK_CUDA(cudaMemcpy(stats, d_stats, sizeof(stats), cudaMemcpyDeviceToHost));

    // Host-side summary of the edge map
    unsigned long long sum = 0, weighted = 0;
    for (size_t i = 0; i < imgBytes; ++i) {
        sum += h_out[i];
        weighted += (unsigned long long)h_out[i] * (i % 977);
    }
    printf("image %dx%d in %d strips of %d rows\n", W, H, kNumStreams, stripRows);
    printf("max gradient = %u\n", stats[0]);
    printf("edge pixels (>= %u) = %u (%.4f%%)\n", kEdgeThreshold, stats[1],
           100.0 * stats[1] / (double)imgBytes);
    printf("edge map mean = %.4f, weighted checksum = %llu\n", (double)sum / imgBytes, weighted);
    printf("row 540 samples: %u %u %u\n", h_out[540 * W + 100], h_out[540 * W + 960], h_out[540 * W + 1500]);

    for (int s = 0; s < kNumStreams; ++s) {
        CHECK_CUDA(cudaFree(d_strip[s]));
        CHECK_CUDA(cudaFree(d_out[s]));
        CHECK_CUDA(cudaStreamDestroy(streams[s]));
    }
    CHECK_CUDA(cudaFree(d_stats));
    CHECK_CUDA(cudaFreeHost(h_in));
    CHECK_CUDA(cudaFreeHost(h_out));
    return 0;
}
