// fir_lowpass_decimate.cu - windowed-sinc low-pass FIR filter followed by
// decimation. Filter taps are designed on the host and placed in __constant__
// memory (every thread reads the same tap at the same time -> broadcast).
// Input samples for a block plus the (NUM_TAPS-1) history are staged in
// dynamically sized shared memory.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                               \
    do {                                                                            \
        cudaError_t rc = (x);                                                       \
        if (rc != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA failure '%s' (%s:%d): %s\n", #x, __FILE__,         \
                    __LINE__, cudaGetErrorString(rc));                              \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define NUM_TAPS 63
#define DECIM 4
#define THREADS 256

__constant__ float c_taps[NUM_TAPS];

// y[n] = sum_k h[k] * x[n-k], with x[m] = 0 for m < 0
__global__ void fir_filter(const float* __restrict__ x, float* __restrict__ y, int n) {
    extern __shared__ float sx[];  // THREADS + NUM_TAPS - 1 floats
    int block_start = blockIdx.x * blockDim.x;
    int halo = NUM_TAPS - 1;
    // cooperative load of [block_start - halo, block_start + blockDim.x)
    for (int k = threadIdx.x; k < blockDim.x + halo; k += blockDim.x) {
        int g = block_start - halo + k;
        sx[k] = (g >= 0 && g < n) ? x[g] : 0.0f;
    }
    __syncthreads();

    int i = block_start + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < NUM_TAPS; ++k) acc = fmaf(c_taps[k], sx[threadIdx.x + halo - k], acc);
    y[i] = acc;
}

__global__ void decimate(const float* __restrict__ y, float* __restrict__ out, int n_out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_out; i += blockDim.x * gridDim.x)
        out[i] = y[i * DECIM];
}

// Per-block sum of squares (signal power) with a static shared buffer.
__global__ void block_power(const float* v, int n, float* partial) {
    __shared__ float buf[THREADS];
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += v[i] * v[i];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = buf[0];
}

static void design_lowpass(float cutoff, std::vector<float>& h) {
    // cutoff is a fraction of the sample rate (0 .. 0.5); Hamming window
    const double pi = 3.14159265358979323846;
    int m = NUM_TAPS - 1;
    double sum = 0.0;
    h.resize(NUM_TAPS);
    for (int k = 0; k < NUM_TAPS; ++k) {
        double t = k - m / 2.0;
        double sinc = (t == 0.0) ? 2.0 * cutoff : sin(2.0 * pi * cutoff * t) / (pi * t);
        double w = 0.54 - 0.46 * cos(2.0 * pi * k / m);
        h[k] = (float)(sinc * w);
        sum += h[k];
    }
    for (int k = 0; k < NUM_TAPS; ++k) h[k] = (float)(h[k] / sum);  // unity DC gain
}

static double host_power(const std::vector<float>& partial) {
    double s = 0.0;
    for (float p : partial) s += p;
    return s;
}

int main() {
    const int n = 1 << 18, n_out = n / DECIM, pblocks = 64;
    const double fs = 48000.0, pi = 3.14159265358979323846;

    // 1 kHz tone (kept) + 15 kHz tone (rejected) + uniform noise from an LCG
    std::vector<float> h_x(n);
    uint32_t lcg = 20240607u;
    for (int i = 0; i < n; ++i) {
        lcg = lcg * 1103515245u + 12345u;
        float noise = ((lcg >> 9) & 0x3FFF) / 16384.0f - 0.5f;
        h_x[i] = (float)(sin(2 * pi * 1000.0 * i / fs) + 0.5 * sin(2 * pi * 15000.0 * i / fs)) + 0.2f * noise;
    }
    std::vector<float> taps;
    design_lowpass(4000.0f / 48000.0f, taps);
    CUDA_CHECK(cudaMemcpyToSymbol(c_taps, taps.data(), NUM_TAPS * sizeof(float)));

    float *d_x, *d_y, *d_out, *d_part;
    CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, n_out * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_part, pblocks * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_x, h_x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    size_t smem = (THREADS + NUM_TAPS - 1) * sizeof(float);
    fir_filter<<<(n + THREADS - 1) / THREADS, THREADS, smem>>>(d_x, d_y, n);
    decimate<<<128, THREADS>>>(d_y, d_out, n_out);
    CUDA_CHECK(cudaGetLastError());

    std::vector<float> part(pblocks);
    block_power<<<pblocks, THREADS>>>(d_x, n, d_part);
    CUDA_CHECK(cudaMemcpy(part.data(), d_part, pblocks * sizeof(float), cudaMemcpyDeviceToHost));
    double p_in = host_power(part) / n;
    block_power<<<pblocks, THREADS>>>(d_out, n_out, d_part);
    CUDA_CHECK(cudaMemcpy(part.data(), d_part, pblocks * sizeof(float), cudaMemcpyDeviceToHost));
    double p_out = host_power(part) / n_out;

    std::vector<float> h_out(n_out);
    CUDA_CHECK(cudaMemcpy(h_out.data(), d_out, n_out * sizeof(float), cudaMemcpyDeviceToHost));
    double checksum = 0.0;
    for (int i = 0; i < n_out; ++i) checksum += h_out[i] * ((i % 7) - 3);

    printf("samples=%d taps=%d decimation=%d out_samples=%d\n", n, NUM_TAPS, DECIM, n_out);
    printf("power_in=%.5f power_out=%.5f (pure 1kHz tone = 0.5)\n", p_in, p_out);
    printf("attenuation=%.3f dB checksum=%.4f\n", 10.0 * log10(p_out / p_in), checksum);
    printf("out[1000]=%.5f out[50000]=%.5f\n", h_out[1000], h_out[50000]);

    cudaFree(d_x); cudaFree(d_y); cudaFree(d_out); cudaFree(d_part);
    return 0;
}
