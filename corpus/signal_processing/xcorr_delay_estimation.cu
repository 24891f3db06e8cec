// xcorr_delay_estimation.cu - time-delay estimation between a reference
// pseudo-noise sequence and a delayed, attenuated, noisy copy of it.
//  * xcorr_lags:     one block per lag, shared-memory tree reduction
//  * argmax_lag:     64-bit packed (value, lag) key reduced with atomicMax
//  * amp_histogram:  per-block privatised histogram in shared memory
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err = call;                                                       \
        if (err != cudaSuccess) {                                                     \
            fprintf(stderr, "error %d (%s) at %s:%d\n", (int)err,                     \
                    cudaGetErrorString(err), __FILE__, __LINE__);                     \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CORR_THREADS 256
#define HIST_BINS 64

// Maps a float to an unsigned int whose unsigned ordering matches float ordering.
__device__ __forceinline__ unsigned int float_to_ordered(float f) {
    unsigned int u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__host__ __device__ inline float ordered_to_float(unsigned int u) {
    unsigned int bits = (u & 0x80000000u) ? (u & 0x7FFFFFFFu) : ~u;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

// corr[lag] = sum_n ref[n] * rx[n + lag] / count
__global__ void xcorr_lags(const float* __restrict__ ref, const float* __restrict__ rx,
                           int n, int max_lag, float* corr) {
    __shared__ float red[CORR_THREADS];
    for (int lag = blockIdx.x; lag < max_lag; lag += gridDim.x) {
        int count = n - lag;
        float acc = 0.0f;
        for (int i = threadIdx.x; i < count; i += blockDim.x) acc = fmaf(ref[i], rx[i + lag], acc);
        red[threadIdx.x] = acc;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) corr[lag] = red[0] / (float)count;
        __syncthreads();  // red[] is reused by the next lag
    }
}

// High word: ordered value; low word: inverted lag so ties resolve to the smaller lag.
__global__ void argmax_lag(const float* corr, int max_lag, unsigned long long* best) {
    for (int lag = blockIdx.x * blockDim.x + threadIdx.x; lag < max_lag; lag += blockDim.x * gridDim.x) {
        unsigned long long key = ((unsigned long long)float_to_ordered(corr[lag]) << 32) |
                                 (unsigned long long)(0xFFFFFFFFu - (unsigned int)lag);
        atomicMax(best, key);
    }
}

__global__ void amp_histogram(const float* x, int n, float lo, float hi, unsigned int* hist) {
    __shared__ unsigned int local[HIST_BINS];
    for (int b = threadIdx.x; b < HIST_BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    float scale = HIST_BINS / (hi - lo);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        int b = (int)((x[i] - lo) * scale);
        b = b < 0 ? 0 : (b >= HIST_BINS ? HIST_BINS - 1 : b);
        atomicAdd(&local[b], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < HIST_BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

int main() {
    const int n = 1 << 15, max_lag = 4096, true_delay = 1337;
    const float gain = 0.6f, noise_amp = 1.0f;

    // Reference: +-1 chips, each held for 4 samples (band-limited PN sequence).
    std::vector<float> h_ref(n), h_rx(n);
    uint32_t s = 0xACE1u;
    float chip = 1.0f;
    for (int i = 0; i < n; ++i) {
        s = s * 22695477u + 1u;
        if (i % 4 == 0) chip = ((s >> 16) & 1) ? 1.0f : -1.0f;
        h_ref[i] = chip;
    }
    for (int i = 0; i < n; ++i) {
        s = s * 22695477u + 1u;
        float noise = noise_amp * (((s >> 8) & 0xFFFF) / 32768.0f - 1.0f);
        float delayed = (i >= true_delay) ? h_ref[i - true_delay] : 0.0f;
        h_rx[i] = gain * delayed + noise;
    }

    float *d_ref, *d_rx, *d_corr;
    unsigned long long* d_best;
    unsigned int* d_hist;
    CHECK(cudaMalloc(&d_ref, n * sizeof(float)));
    CHECK(cudaMalloc(&d_rx, n * sizeof(float)));
    CHECK(cudaMalloc(&d_corr, max_lag * sizeof(float)));
    CHECK(cudaMalloc(&d_best, sizeof(unsigned long long)));
    CHECK(cudaMalloc(&d_hist, HIST_BINS * sizeof(unsigned int)));
    CHECK(cudaMemcpy(d_ref, h_ref.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_rx, h_rx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_best, 0, sizeof(unsigned long long)));
    CHECK(cudaMemset(d_hist, 0, HIST_BINS * sizeof(unsigned int)));

    xcorr_lags<<<1024, CORR_THREADS>>>(d_ref, d_rx, n, max_lag, d_corr);
    argmax_lag<<<16, 256>>>(d_corr, max_lag, d_best);
    amp_histogram<<<32, 256>>>(d_rx, n, -2.0f, 2.0f, d_hist);
    CHECK(cudaGetLastError());

    unsigned long long best = 0;
    std::vector<float> h_corr(max_lag);
    std::vector<unsigned int> hist(HIST_BINS);
    CHECK(cudaMemcpy(&best, d_best, sizeof(best), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_corr.data(), d_corr, max_lag * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hist.data(), d_hist, HIST_BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));

    int est_delay = (int)(0xFFFFFFFFu - (unsigned int)(best & 0xFFFFFFFFull));
    float peak = ordered_to_float((unsigned int)(best >> 32));
    double off_peak = 0.0;
    int cnt = 0;
    for (int l = 0; l < max_lag; ++l)
        if (abs(l - est_delay) > 8) { off_peak += fabs(h_corr[l]); ++cnt; }
    unsigned int hist_total = 0, mode_bin = 0;
    for (int b = 0; b < HIST_BINS; ++b) {
        hist_total += hist[b];
        if (hist[b] > hist[mode_bin]) mode_bin = b;
    }

    printf("samples=%d lags=%d true_delay=%d estimated_delay=%d\n", n, max_lag, true_delay, est_delay);
    printf("peak_corr=%.4f mean_offpeak=%.4f ratio=%.2f\n", peak, off_peak / cnt, peak / (off_peak / cnt));
    printf("corr[%d]=%.4f corr[%d]=%.4f\n", est_delay - 2, h_corr[est_delay - 2], est_delay + 4, h_corr[est_delay + 4]);
    printf("hist_total=%u mode_bin=%u hist[16]=%u hist[32]=%u hist[48]=%u\n", hist_total, mode_bin,
           hist[16], hist[32], hist[48]);

    cudaFree(d_ref); cudaFree(d_rx); cudaFree(d_corr); cudaFree(d_best); cudaFree(d_hist);
    return est_delay == true_delay ? 0 : 1;
}
