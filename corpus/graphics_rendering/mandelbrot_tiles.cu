// mandelbrot_tiles.cu
// Escape-time Mandelbrot renderer templated on the floating point type.
// The same kernel is instantiated for float and double; the host compares
// the two iteration maps (precision loss shows up near the boundary) and
// colours the double-precision result with a smooth palette.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>

#define CK(expr)                                                              \
    do {                                                                      \
        cudaError_t rc_ = (expr);                                             \
        if (rc_ != cudaSuccess) {                                             \
            fprintf(stderr, "CUDA failure %d (%s) in %s line %d\n", (int)rc_, \
                    cudaGetErrorString(rc_), __FILE__, __LINE__);             \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

struct View {
    double cx, cy;      // centre of the view in the complex plane
    double scale;       // width of one pixel in complex units
    int width, height;
    int maxIter;
};

// Returns escape iteration count and writes the smooth (fractional) value.
template <typename T>
__device__ int escape_time(T cr, T ci, int maxIter, float* smooth)
{
    T zr = T(0), zi = T(0);
    T zr2 = T(0), zi2 = T(0);
    int it = 0;
    while (it < maxIter && zr2 + zi2 <= T(256)) {
        zi = T(2) * zr * zi + ci;
        zr = zr2 - zi2 + cr;
        zr2 = zr * zr;
        zi2 = zi * zi;
        ++it;
    }
    if (it < maxIter) {
        float mag = (float)(zr2 + zi2);
        *smooth = (float)it + 1.0f - log2f(0.5f * log2f(mag));
    } else {
        *smooth = (float)maxIter;
    }
    return it;
}

// Grid-stride over all pixels so any launch configuration covers the image.
template <typename T>
__global__ void mandelbrot_kernel(View v, int* __restrict__ iters, float* __restrict__ smooth)
{
    const int total = v.width * v.height;
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < total; p += blockDim.x * gridDim.x) {
        int px = p % v.width, py = p / v.width;
        T cr = T(v.cx) + (T(px) - T(0.5) * T(v.width)) * T(v.scale);
        T ci = T(v.cy) + (T(py) - T(0.5) * T(v.height)) * T(v.scale);
        float s;
        iters[p] = escape_time<T>(cr, ci, v.maxIter, &s);
        smooth[p] = s;
    }
}

__device__ __forceinline__ uint32_t palette(float s, int maxIter)
{
    if (s >= (float)maxIter) return 0u;
    float t = s * 0.05f;
    float r = 0.5f + 0.5f * cosf(6.2831853f * (t + 0.00f));
    float g = 0.5f + 0.5f * cosf(6.2831853f * (t + 0.33f));
    float b = 0.5f + 0.5f * cosf(6.2831853f * (t + 0.67f));
    return ((uint32_t)(r * 255.0f) << 16) | ((uint32_t)(g * 255.0f) << 8) | (uint32_t)(b * 255.0f);
}

__global__ void colorize(const float* __restrict__ smooth, uint32_t* __restrict__ rgb, int n, int maxIter)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        rgb[i] = palette(smooth[i], maxIter);
}

template <typename T>
static void run_precision(const View& v, int* d_iters, float* d_smooth, std::vector<int>& out)
{
    const int n = v.width * v.height;
    mandelbrot_kernel<T><<<132, 256>>>(v, d_iters, d_smooth);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    out.resize(n);
    CK(cudaMemcpy(out.data(), d_iters, n * sizeof(int), cudaMemcpyDeviceToHost));
}

int main()
{
    // A zoom into the seahorse valley where float precision starts to hurt
    View v;
    v.cx = -0.743643887;
    v.cy = 0.131825904;
    v.width = 384;
    v.height = 256;
    v.scale = 2.4e-7;
    v.maxIter = 1024;
    const int n = v.width * v.height;

    int* d_iters; float* d_smooth; uint32_t* d_rgb;
    CK(cudaMalloc(&d_iters, n * sizeof(int)));
    CK(cudaMalloc(&d_smooth, n * sizeof(float)));
    CK(cudaMalloc(&d_rgb, n * sizeof(uint32_t)));

    std::vector<int> itF, itD;
    run_precision<float>(v, d_iters, d_smooth, itF);
    run_precision<double>(v, d_iters, d_smooth, itD);   // leaves double smooth values on device

    colorize<<<64, 256>>>(d_smooth, d_rgb, n, v.maxIter);
    CK(cudaGetLastError());
    std::vector<uint32_t> rgb(n);
    CK(cudaMemcpy(rgb.data(), d_rgb, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));

    long long sumF = 0, sumD = 0;
    int inside = 0, differ = 0;
    for (int i = 0; i < n; ++i) {
        sumF += itF[i];
        sumD += itD[i];
        if (itD[i] >= v.maxIter) ++inside;
        if (itF[i] != itD[i]) ++differ;
    }
    unsigned long long h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; ++i) { h ^= rgb[i]; h *= 0x100000001b3ull; }

    printf("view %dx%d @ (%.9f, %.9f), scale %.2e, maxIter %d\n",
           v.width, v.height, v.cx, v.cy, v.scale, v.maxIter);
    printf("double: total iterations = %lld, inside = %d\n", sumD, inside);
    printf("float : total iterations = %lld\n", sumF);
    printf("pixels where float != double: %d (%.3f%%)\n", differ, 100.0 * differ / n);
    printf("double iters at centre = %d, corner = %d\n", itD[(v.height / 2) * v.width + v.width / 2], itD[0]);
    printf("colour hash = %016llx\n", h);

    CK(cudaFree(d_iters));
    CK(cudaFree(d_smooth));
    CK(cudaFree(d_rgb));
    return 0;
}
