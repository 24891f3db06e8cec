// A bank of 4096 independent 4th-order Butterworth low-pass filters, each a cascade of two
// biquad sections in transposed direct form II with its own cut-off frequency, applied to 4096
// channels of 1024 samples (stored sample-major so that neighbouring threads read neighbouring
// channels). One thread filters one channel through time and also writes the channel's output
// RMS. The host designs the coefficients (RBJ cookbook) and prints checksums and samples.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, __LINE__, \
                    cudaGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

constexpr int CH = 4096, T = 1024, NCOEF = 10;  // per channel: {b0, b1, b2, a1, a2} x 2 sections
constexpr double kPi = 3.14159265358979323846;

__global__ void biquad_cascade(const float* __restrict__ x, const float* __restrict__ coef,
                               float* __restrict__ y, float* __restrict__ rms) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= CH) return;
    float k[NCOEF];
    for (int i = 0; i < NCOEF; ++i) k[i] = coef[c * NCOEF + i];
    float z1a = 0.0f, z2a = 0.0f, z1b = 0.0f, z2b = 0.0f, energy = 0.0f;
    for (int t = 0; t < T; ++t) {
        const float in = x[(size_t)t * CH + c];
        const float ya = k[0] * in + z1a;  // section 1
        z1a = k[1] * in - k[3] * ya + z2a;
        z2a = k[2] * in - k[4] * ya;
        const float yb = k[5] * ya + z1b;  // section 2
        z1b = k[6] * ya - k[8] * yb + z2b;
        z2b = k[7] * ya - k[9] * yb;
        y[(size_t)t * CH + c] = yb;
        energy += yb * yb;
    }
    rms[c] = sqrtf(energy / (float)T);
}

static uint64_t g_rng = 0xA0761D6478BD642Full;
static double next_uniform() {  // [0, 1), 64-bit LCG
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

// RBJ low-pass biquad, normalised by a0, written as {b0, b1, b2, a1, a2}
static void lowpass(double fc, double q, float* out) {
    const double w0 = 2.0 * kPi * fc, cw = std::cos(w0), alpha = std::sin(w0) / (2.0 * q);
    const double a0 = 1.0 + alpha;
    out[0] = (float)((1.0 - cw) / 2.0 / a0);
    out[1] = (float)((1.0 - cw) / a0);
    out[2] = out[0];
    out[3] = (float)(-2.0 * cw / a0);
    out[4] = (float)((1.0 - alpha) / a0);
}

int main(int argc, char** argv) {
    if (argc > 1) g_rng = strtoull(argv[1], nullptr, 0);
    const size_t n = (size_t)CH * T;
    std::vector<float> x(n), coef((size_t)CH * NCOEF);
    for (int c = 0; c < CH; ++c) {
        const double fc = 0.02 + 0.18 * (double)c / CH;  // cut-off in cycles per sample
        lowpass(fc, 0.54119610, &coef[(size_t)c * NCOEF]);
        lowpass(fc, 1.30656296, &coef[(size_t)c * NCOEF + 5]);
    }
    std::vector<double> phase(CH);
    for (int c = 0; c < CH; ++c) phase[c] = 2.0 * kPi * next_uniform();
    for (int t = 0; t < T; ++t) {
        const double hiss = 0.5 * std::sin(2.0 * kPi * 0.31 * t);  // shared high-frequency tone
        for (int c = 0; c < CH; ++c) {
            double v = std::sin(2.0 * kPi * 0.03 * t + phase[c]) + hiss;
            x[(size_t)t * CH + c] = (float)(v + 0.3 * (next_uniform() - 0.5));
        }
    }

    float *d_x, *d_coef, *d_y, *d_rms;
    CHECK(cudaMalloc(&d_x, n * sizeof(float)));
    CHECK(cudaMalloc(&d_coef, coef.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_y, n * sizeof(float)));
    CHECK(cudaMalloc(&d_rms, CH * sizeof(float)));
    CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_coef, coef.data(), coef.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_y, 0xFF, n * sizeof(float)));  // NaN sentinels
    CHECK(cudaMemset(d_rms, 0xFF, CH * sizeof(float)));

    biquad_cascade<<<CH / 128, 128>>>(d_x, d_coef, d_y, d_rms);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<float> y(n), rms(CH);
    CHECK(cudaMemcpy(y.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(rms.data(), d_rms, CH * sizeof(float), cudaMemcpyDeviceToHost));

    double cs_y = 0.0, cs_rms = 0.0;
    for (size_t i = 0; i < n; ++i) cs_y += (double)y[i] * (double)((i % 101) + 1);
    for (int c = 0; c < CH; ++c) cs_rms += (double)rms[c] * (double)((c % 101) + 1);
    printf("checksum y %.10e\n", cs_y);
    printf("checksum rms %.10e\n", cs_rms);
    printf("rms[0] = %.10e rms[%d] = %.10e rms[%d] = %.10e\n", rms[0], CH / 2, rms[CH / 2], CH - 1, rms[CH - 1]);
    const size_t s[3] = {(size_t)5 * CH + 9, (size_t)511 * CH + 2048, n - 1};
    for (size_t k : s) printf("y[t=%zu][c=%zu] = %.10e\n", k / CH, k % CH, y[k]);

    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_coef));
    CHECK(cudaFree(d_y));
    CHECK(cudaFree(d_rms));
    return 0;
}
