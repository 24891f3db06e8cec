// stft_warp_peaks.cu - short-time spectral analysis of a chirp with warp-level
// primitives. One warp computes one DFT bin of one Hann-windowed frame and
// reduces the partial sums with __shfl_down_sync. A second kernel assigns one
// warp per frame: an arg-max butterfly with __shfl_xor_sync finds the peak bin
// and __ballot_sync counts bins above a relative threshold.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(stmt)                                                               \
    do {                                                                               \
        cudaError_t e = (stmt);                                                        \
        if (e != cudaSuccess) {                                                        \
            fprintf(stderr, "%s failed at %s:%d (%s)\n", #stmt, __FILE__, __LINE__,     \
                    cudaGetErrorString(e));                                            \
            exit(EXIT_FAILURE);                                                        \
        }                                                                              \
    } while (0)

#define FRAME_LEN 256
#define HOP 128
#define NUM_BINS (FRAME_LEN / 2)
#define WARP 32
#define FULL_MASK 0xffffffffu

__constant__ float c_window[FRAME_LEN];  // Hann window

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = WARP / 2; off > 0; off >>= 1) v += __shfl_down_sync(FULL_MASK, v, off);
    return v;  // valid in lane 0
}

// Butterfly arg-max: afterwards every lane holds the same (value, index).
__device__ __forceinline__ void warp_argmax(float& val, int& idx) {
    for (int mask = WARP / 2; mask > 0; mask >>= 1) {
        float ov = __shfl_xor_sync(FULL_MASK, val, mask);
        int oi = __shfl_xor_sync(FULL_MASK, idx, mask);
        if (ov > val || (ov == val && oi < idx)) { val = ov; idx = oi; }
    }
}

__global__ void frame_power_spectrum(const float* __restrict__ x, int num_frames, float* __restrict__ power) {
    const float two_pi_over_n = 6.283185307179586f / FRAME_LEN;
    int lane = threadIdx.x & (WARP - 1);
    int warp_global = (blockIdx.x * blockDim.x + threadIdx.x) / WARP;
    int warps_total = (gridDim.x * blockDim.x) / WARP;
    for (int task = warp_global; task < num_frames * NUM_BINS; task += warps_total) {
        int frame = task / NUM_BINS, bin = task % NUM_BINS;
        const float* seg = x + frame * HOP;
        float re = 0.f, im = 0.f;
        for (int k = lane; k < FRAME_LEN; k += WARP) {
            float s = seg[k] * c_window[k];
            float sn, cs;
            sincosf(two_pi_over_n * ((bin * k) % FRAME_LEN), &sn, &cs);  // exact phase reduction
            re += s * cs;
            im -= s * sn;
        }
        re = warp_sum(re);
        im = warp_sum(im);
        if (lane == 0) power[task] = re * re + im * im;
    }
}

__global__ void frame_peaks(const float* __restrict__ power, int num_frames, float rel_threshold,
                            int* peak_bin, float* peak_pow, int* active_bins) {
    int lane = threadIdx.x & (WARP - 1);
    int frame = (blockIdx.x * blockDim.x + threadIdx.x) / WARP;
    if (frame >= num_frames) return;  // whole warp exits together
    const float* p = power + frame * NUM_BINS;

    float best = -1.f;
    int best_idx = 0;
    for (int b = lane; b < NUM_BINS; b += WARP)
        if (p[b] > best) { best = p[b]; best_idx = b; }
    warp_argmax(best, best_idx);

    int count = 0;
    for (int b0 = 0; b0 < NUM_BINS; b0 += WARP) {
        unsigned hits = __ballot_sync(FULL_MASK, p[b0 + lane] > rel_threshold * best);
        count += __popc(hits);
    }
    if (lane == 0) {
        peak_bin[frame] = best_idx;
        peak_pow[frame] = best;
        active_bins[frame] = count;
    }
}

int main() {
    const int num_frames = 120;
    const int n = (num_frames - 1) * HOP + FRAME_LEN;
    const double fs = 32000.0, f0 = 500.0, f1 = 8000.0, pi = 3.14159265358979323846;
    const double duration = n / fs;

    std::vector<float> h_x(n), h_win(FRAME_LEN);
    uint32_t state = 0xC0FFEEu;
    for (int i = 0; i < n; ++i) {
        double t = i / fs;
        double phase = 2 * pi * (f0 * t + 0.5 * (f1 - f0) / duration * t * t);  // linear chirp
        state = state * 1664525u + 1013904223u;
        float noise = (float)((state >> 8) & 0xFFFF) / 65536.0f - 0.5f;
        h_x[i] = (float)sin(phase) + 0.1f * noise;
    }
    for (int k = 0; k < FRAME_LEN; ++k) h_win[k] = (float)(0.5 - 0.5 * cos(2 * pi * k / FRAME_LEN));
    CUDA_CHECK(cudaMemcpyToSymbol(c_window, h_win.data(), FRAME_LEN * sizeof(float)));

    float *d_x, *d_power, *d_peak_pow;
    int *d_peak_bin, *d_active;
    CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_power, num_frames * NUM_BINS * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_peak_pow, num_frames * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_peak_bin, num_frames * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_active, num_frames * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_x, h_x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    frame_power_spectrum<<<240, 256>>>(d_x, num_frames, d_power);
    CUDA_CHECK(cudaGetLastError());
    const int warps_per_block = 4;
    frame_peaks<<<(num_frames + warps_per_block - 1) / warps_per_block, warps_per_block * WARP>>>(
        d_power, num_frames, 0.01f, d_peak_bin, d_peak_pow, d_active);
    CUDA_CHECK(cudaGetLastError());

    std::vector<int> peak_bin(num_frames), active(num_frames);
    std::vector<float> peak_pow(num_frames);
    CUDA_CHECK(cudaMemcpy(peak_bin.data(), d_peak_bin, num_frames * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(active.data(), d_active, num_frames * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(peak_pow.data(), d_peak_pow, num_frames * sizeof(float), cudaMemcpyDeviceToHost));

    long long bin_sum = 0, active_sum = 0;
    int monotone_violations = 0;
    double pow_sum = 0.0;
    for (int f = 0; f < num_frames; ++f) {
        bin_sum += peak_bin[f];
        active_sum += active[f];
        pow_sum += peak_pow[f];
        if (f > 0 && peak_bin[f] + 1 < peak_bin[f - 1]) ++monotone_violations;
    }
    double hz_per_bin = fs / FRAME_LEN;
    printf("frames=%d frame_len=%d hop=%d bins=%d\n", num_frames, FRAME_LEN, HOP, NUM_BINS);
    printf("peak freq: first=%.1f Hz mid=%.1f Hz last=%.1f Hz\n", peak_bin[0] * hz_per_bin,
           peak_bin[num_frames / 2] * hz_per_bin, peak_bin[num_frames - 1] * hz_per_bin);
    printf("sum(peak_bin)=%lld sum(active_bins)=%lld monotone_violations=%d\n", bin_sum, active_sum,
           monotone_violations);
    printf("mean_peak_power=%.4f\n", pow_sum / num_frames);
    return 0;
}
