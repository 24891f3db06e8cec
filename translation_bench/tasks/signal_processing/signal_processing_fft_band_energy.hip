#include "hip/hip_runtime.h"
// Batched spectral analysis of 1024 frames of 1024 complex samples: one block per frame loads its
// frame in bit-reversed order (__brev) with a Hann window into shared memory and runs an in-place
// iterative radix-2 decimation-in-time FFT (10 butterfly stages, twiddles staged in shared memory
// from a host-computed table); a second kernel gives one warp to each of 16 bands of 32 bins of the
// non-negative-frequency half and sums their power with a __shfl_down_sync tree, writing the band
// energy in dB. The host prints checksums of the spectra and band energies and sampled values.
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        hipError_t err_ = (call);                                                    \
        if (err_ != hipSuccess) {                                                    \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, __LINE__, \
                    hipGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

constexpr int LOG2N = 10, NFFT = 1 << LOG2N, FRAMES = 1024, BANDS = 16, BAND_BINS = 32;
constexpr double kPi = 3.14159265358979323846;

__global__ void fft1024_hann(const float2* __restrict__ in, const float2* __restrict__ twiddle,
                             const float* __restrict__ window, float2* __restrict__ out) {
    __shared__ float2 buf[NFFT];
    __shared__ float2 tw[NFFT / 2];
    const int tid = threadIdx.x;  // NFFT / 2 threads: one butterfly each per stage
    const size_t base = (size_t)blockIdx.x * NFFT;
    tw[tid] = twiddle[tid];
    for (int e = tid; e < NFFT; e += NFFT / 2) {
        const float2 v = in[base + e];
        const float wv = window[e];
        const int j = (int)(__brev((unsigned)e) >> (32 - LOG2N));
        buf[j] = make_float2(v.x * wv, v.y * wv);
    }
    __syncthreads();
    for (int len = 2; len <= NFFT; len <<= 1) {
        const int half = len >> 1;
        const int pos = tid & (half - 1);
        const int i0 = (tid - pos) * 2 + pos;  // (tid / half) * len + pos
        const int i1 = i0 + half;
        const float2 w = tw[pos * (NFFT / len)];
        const float2 a = buf[i0], b = buf[i1];
        const float2 t = make_float2(b.x * w.x - b.y * w.y, b.x * w.y + b.y * w.x);
        buf[i0] = make_float2(a.x + t.x, a.y + t.y);
        buf[i1] = make_float2(a.x - t.x, a.y - t.y);
        __syncthreads();
    }
    for (int e = tid; e < NFFT; e += NFFT / 2) out[base + e] = buf[e];
}

__global__ void band_energy_db(const float2* __restrict__ spec, float* __restrict__ band_db) {
    const int warp_id = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp_id >= FRAMES * BANDS) return;  // whole warps leave together
    const int frame = warp_id / BANDS, band = warp_id % BANDS;
    const float2 v = spec[(size_t)frame * NFFT + band * BAND_BINS + lane];
    float p = v.x * v.x + v.y * v.y;
    for (int off = 16; off > 0; off >>= 1) p += __shfl_down(p, off);
    if (lane == 0) band_db[warp_id] = 10.0f * log10f(p + 1e-12f);
}

static uint64_t g_rng = 0xBB67AE8584CAA73Bull;
static double next_uniform() {  // [0, 1), 64-bit LCG
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

int main(int argc, char** argv) {
    if (argc > 1) g_rng = strtoull(argv[1], nullptr, 0);
    const size_t n = (size_t)FRAMES * NFFT;
    std::vector<float2> x(n), twiddle(NFFT / 2);
    std::vector<float> window(NFFT);
    for (int k = 0; k < NFFT / 2; ++k)
        twiddle[k] = make_float2((float)std::cos(2.0 * kPi * k / NFFT), (float)-std::sin(2.0 * kPi * k / NFFT));
    for (int k = 0; k < NFFT; ++k) window[k] = (float)(0.5 - 0.5 * std::cos(2.0 * kPi * k / NFFT));
    for (int f = 0; f < FRAMES; ++f) {
        const double bin = 10.3 + 0.45 * f;  // a tone sweeping up through the frames
        for (int k = 0; k < NFFT; ++k) {
            const double ph1 = 2.0 * kPi * bin * k / NFFT, ph2 = 2.0 * kPi * 300.5 * k / NFFT;
            const double re = std::cos(ph1) + 0.3 * std::cos(ph2) + 0.1 * (next_uniform() - 0.5);
            const double im = std::sin(ph1) + 0.3 * std::sin(ph2) + 0.1 * (next_uniform() - 0.5);
            x[(size_t)f * NFFT + k] = make_float2((float)re, (float)im);
        }
    }

    float2 *d_x, *d_tw, *d_spec;
    float *d_win, *d_band;
    CHECK(hipMalloc(&d_x, n * sizeof(float2)));
    CHECK(hipMalloc(&d_tw, (NFFT / 2) * sizeof(float2)));
    CHECK(hipMalloc(&d_win, NFFT * sizeof(float)));
    CHECK(hipMalloc(&d_spec, n * sizeof(float2)));
    CHECK(hipMalloc(&d_band, FRAMES * BANDS * sizeof(float)));
    CHECK(hipMemcpy(d_x, x.data(), n * sizeof(float2), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_tw, twiddle.data(), (NFFT / 2) * sizeof(float2), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_win, window.data(), NFFT * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemset(d_spec, 0xFF, n * sizeof(float2)));  // NaN sentinels
    CHECK(hipMemset(d_band, 0xFF, FRAMES * BANDS * sizeof(float)));

    fft1024_hann<<<FRAMES, NFFT / 2>>>(d_x, d_tw, d_win, d_spec);
    CHECK(hipGetLastError());
    band_energy_db<<<FRAMES * BANDS * 32 / 256, 256>>>(d_spec, d_band);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());

    std::vector<float2> spec(n);
    std::vector<float> band(FRAMES * BANDS);
    CHECK(hipMemcpy(spec.data(), d_spec, n * sizeof(float2), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(band.data(), d_band, band.size() * sizeof(float), hipMemcpyDeviceToHost));

    double cs_spec = 0.0, cs_band = 0.0;
    for (size_t i = 0; i < n; ++i)
        cs_spec += ((double)spec[i].x + 0.5 * (double)spec[i].y) * (double)((i % 101) + 1);
    for (size_t i = 0; i < band.size(); ++i) cs_band += (double)band[i] * (double)((i % 101) + 1);
    int peak_band = 0;  // loudest band of frame 600 (its tone sits near bin 280)
    for (int b = 1; b < BANDS; ++b)
        if (band[600 * BANDS + b] > band[600 * BANDS + peak_band]) peak_band = b;
    printf("checksum spectrum %.10e\n", cs_spec);
    printf("checksum band_db %.10e\n", cs_band);
    printf("frame 600 loudest band %d (%.10e dB)\n", peak_band, band[600 * BANDS + peak_band]);
    const size_t s[3] = {10, (size_t)100 * NFFT + 55, n - 1};
    for (size_t k : s) printf("X[%zu][%zu] = (%.10e, %.10e)\n", k / NFFT, k % NFFT, spec[k].x, spec[k].y);
    printf("band_db[0] = %.10e band_db[%d] = %.10e\n", band[0], FRAMES * BANDS - 1, band[FRAMES * BANDS - 1]);

    CHECK(hipFree(d_x));
    CHECK(hipFree(d_tw));
    CHECK(hipFree(d_win));
    CHECK(hipFree(d_spec));
    CHECK(hipFree(d_band));
    return 0;
}
