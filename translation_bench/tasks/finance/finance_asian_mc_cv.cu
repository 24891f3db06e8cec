// Monte Carlo pricing of arithmetic-average Asian calls (64 monitoring dates, 4 strikes) on
// 2^18 geometric-Brownian paths, with the geometric-average Asian call (closed form known)
// as control variate. Normals come from a counter-based splitmix64 hash + Box-Muller, so
// every path is reproducible. Kernel 1 simulates one path per thread and reduces 20 sums
// per block (warp __shfl_down_sync, then warps in fixed order through shared memory);
// kernel 2 reduces the per-block partials of each sum with a fixed shared-memory tree.
// The host forms the control-variate estimates and their standard errors.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s at %s:%d\n",                      \
                    cudaGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static constexpr int PATHS = 1 << 18, STEPS = 64, NK = 4, NSTAT = 5 * NK;
static constexpr int TPB = 256, NBLK = PATHS / TPB;
static constexpr double S0 = 100.0, RATE = 0.03, VOL = 0.25, YEARS = 1.0;
static constexpr uint64_t SEED = 0x5DEECE66Dull;

struct Strikes { double k[NK]; };

__device__ inline uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Stats per strike k: [0] sum A, [1] sum G, [2] sum A^2, [3] sum G^2, [4] sum A*G (payoffs).
__global__ void simulate_paths(Strikes ks, double* partials, uint64_t seed) {
    __shared__ double s_warp[TPB / 32][NSTAT];
    int path = blockIdx.x * blockDim.x + threadIdx.x;
    const double dt = YEARS / STEPS, drift = (RATE - 0.5 * VOL * VOL) * dt, vs = VOL * sqrt(dt);
    double logs = log(S0), sum_s = 0.0, sum_log = 0.0;
    for (int t = 0; t < STEPS; t += 2) {
        uint64_t r1 = splitmix64(seed ^ ((uint64_t)path * STEPS + t));
        uint64_t r2 = splitmix64(r1 ^ 0xD1B54A32D192ED03ull);
        double u1 = ((double)(r1 >> 11) + 1.0) * (1.0 / 9007199254740992.0);   // (0, 1]
        double u2 = (double)(r2 >> 11) * (1.0 / 9007199254740992.0);
        double rad = sqrt(-2.0 * log(u1)), ang = 6.283185307179586477 * u2;
        double z[2] = {rad * cos(ang), rad * sin(ang)};
        for (int h = 0; h < 2; ++h) {
            logs += drift + vs * z[h];
            sum_s += exp(logs);
            sum_log += logs;
        }
    }
    double a = sum_s / STEPS, g = exp(sum_log / STEPS);
    double st[NSTAT];
    for (int k = 0; k < NK; ++k) {
        double pa = fmax(a - ks.k[k], 0.0), pg = fmax(g - ks.k[k], 0.0);
        st[5 * k] = pa; st[5 * k + 1] = pg;
        st[5 * k + 2] = pa * pa; st[5 * k + 3] = pg * pg; st[5 * k + 4] = pa * pg;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int s = 0; s < NSTAT; ++s) {
        double v = st[s];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, off);
        if (lane == 0) s_warp[warp][s] = v;
    }
    __syncthreads();
    if (threadIdx.x < NSTAT) {
        double v = 0.0;
        for (int w = 0; w < TPB / 32; ++w) v += s_warp[w][threadIdx.x];
        partials[(size_t)threadIdx.x * NBLK + blockIdx.x] = v;
    }
}

// One block per statistic: strided serial sums, then a fixed-shape tree.
__global__ void reduce_partials(const double* partials, double* totals, int nblk) {
    __shared__ double sh[TPB];
    const double* row = partials + (size_t)blockIdx.x * nblk;
    double v = 0.0;
    for (int b = threadIdx.x; b < nblk; b += blockDim.x) v += row[b];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) totals[blockIdx.x] = sh[0];
}

// Closed-form price of the discretely monitored geometric-average Asian call.
static double geometric_asian_call(double k) {
    const double n = STEPS, dt = YEARS / STEPS;
    double mu = log(S0) + (RATE - 0.5 * VOL * VOL) * dt * (n + 1.0) / 2.0;
    double sg = VOL * sqrt(dt * (n + 1.0) * (2.0 * n + 1.0) / (6.0 * n));
    double d2 = (mu - log(k)) / sg, d1 = d2 + sg;
    double ncdf1 = 0.5 * erfc(-d1 / sqrt(2.0)), ncdf2 = 0.5 * erfc(-d2 / sqrt(2.0));
    return exp(-RATE * YEARS) * (exp(mu + 0.5 * sg * sg) * ncdf1 - k * ncdf2);
}

int main(int argc, char** argv) {
    uint64_t seed = SEED;
    if (argc > 1) seed = strtoull(argv[1], nullptr, 0);  // optional argument: RNG seed
    Strikes ks = {{85.0, 95.0, 100.0, 115.0}};
    double *d_partials, *d_totals;
    CK(cudaMalloc(&d_partials, (size_t)NSTAT * NBLK * sizeof(double)));
    CK(cudaMalloc(&d_totals, NSTAT * sizeof(double)));
    CK(cudaMemset(d_partials, 0xFF, (size_t)NSTAT * NBLK * sizeof(double)));   // NaN sentinel
    CK(cudaMemset(d_totals, 0xFF, NSTAT * sizeof(double)));

    simulate_paths<<<NBLK, TPB>>>(ks, d_partials, seed);
    CK(cudaGetLastError());
    reduce_partials<<<NSTAT, TPB>>>(d_partials, d_totals, NBLK);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<double> partials((size_t)NSTAT * NBLK), totals(NSTAT);
    CK(cudaMemcpy(partials.data(), d_partials, partials.size() * sizeof(double), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(totals.data(), d_totals, NSTAT * sizeof(double), cudaMemcpyDeviceToHost));

    double wp = 0.0, wt = 0.0;
    for (size_t i = 0; i < partials.size(); ++i) wp += partials[i] * (1.0 + (double)(i % 997) / 997.0);
    for (int i = 0; i < NSTAT; ++i) wt += totals[i] * (double)(i + 1);
    printf("weighted_sum_partials %.10e\n", wp);
    printf("weighted_sum_totals %.10e\n", wt);
    const double disc = exp(-RATE * YEARS), n = PATHS;
    for (int k = 0; k < NK; ++k) {
        const double* t = &totals[5 * k];
        double ma = t[0] / n, mg = t[1] / n;
        double va = t[2] / n - ma * ma, vg = t[3] / n - mg * mg, cov = t[4] / n - ma * mg;
        double beta = cov / vg;
        double geo_exact = geometric_asian_call(ks.k[k]);
        double cv = disc * ma - beta * (disc * mg - geo_exact);
        double se_plain = disc * sqrt(va / n);
        double se_cv = disc * sqrt((va - cov * cov / vg) / n);
        printf("K=%.1f asian_cv %.10e plain %.10e se_plain %.3e se_cv %.3e geo_mc_minus_exact %.3e\n",
               ks.k[k], cv, disc * ma, se_plain, se_cv, disc * mg - geo_exact);
    }
    CK(cudaFree(d_partials));
    CK(cudaFree(d_totals));
    return 0;
}
