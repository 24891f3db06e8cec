// Black-Scholes-Merton prices and Greeks (double precision) for 2^20 European options on
// dividend-paying stocks: call price, put price, call delta and vega, one thread per option.
// The host prints a position-weighted sum of each result array, checks put-call parity on
// every option and compares a sample with a CPU evaluation of the same formulas.
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

static const int N = 1 << 20;

struct Option { double spot, strike, years, rate, div, vol; };

__host__ __device__ inline double norm_cdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752440); }
__host__ __device__ inline double norm_pdf(double x) { return 0.39894228040143267794 * exp(-0.5 * x * x); }

__host__ __device__ inline void bsm(const Option& o, double& call, double& put, double& delta, double& vega) {
    double sq = o.vol * sqrt(o.years);
    double d1 = (log(o.spot / o.strike) + (o.rate - o.div + 0.5 * o.vol * o.vol) * o.years) / sq;
    double d2 = d1 - sq;
    double df_r = exp(-o.rate * o.years), df_q = exp(-o.div * o.years);
    call = o.spot * df_q * norm_cdf(d1) - o.strike * df_r * norm_cdf(d2);
    put = o.strike * df_r * norm_cdf(-d2) - o.spot * df_q * norm_cdf(-d1);
    delta = df_q * norm_cdf(d1);
    vega = o.spot * df_q * norm_pdf(d1) * sqrt(o.years);
}

__global__ void bsm_kernel(const Option* opts, double* call, double* put, double* delta, double* vega, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Option o = opts[i];
    double c, p, d, v;
    bsm(o, c, p, d, v);
    call[i] = c;
    put[i] = p;
    delta[i] = d;
    vega[i] = v;
}

static uint64_t rng_state = 0x3F84D5B5B5470917ull;
static double next_unit() {      // xorshift64*, uniform in [0, 1)
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
}

static double weighted_sum(const std::vector<double>& v) {
    double s = 0.0;
    for (size_t i = 0; i < v.size(); ++i) s += v[i] * (1.0 + (double)(i % 1024) / 1024.0);
    return s;
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        rng_state = strtoull(argv[1], nullptr, 0);
        if (rng_state == 0) rng_state = 0x3F84D5B5B5470917ull;
    }
    std::vector<Option> opts(N);
    for (int i = 0; i < N; ++i) {
        Option& o = opts[i];
        o.spot = 20.0 + 180.0 * next_unit();
        o.strike = o.spot * (0.6 + 0.8 * next_unit());
        o.years = 0.05 + 2.95 * next_unit();
        o.rate = 0.001 + 0.06 * next_unit();
        o.div = 0.04 * next_unit();
        o.vol = 0.08 + 0.62 * next_unit();
    }
    Option* d_opts;
    double *d_call, *d_put, *d_delta, *d_vega;
    size_t bytes = N * sizeof(double);
    CK(cudaMalloc(&d_opts, N * sizeof(Option)));
    CK(cudaMalloc(&d_call, bytes));
    CK(cudaMalloc(&d_put, bytes));
    CK(cudaMalloc(&d_delta, bytes));
    CK(cudaMalloc(&d_vega, bytes));
    CK(cudaMemcpy(d_opts, opts.data(), N * sizeof(Option), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_call, 0xFF, bytes));     // NaN sentinel
    CK(cudaMemset(d_put, 0xFF, bytes));
    CK(cudaMemset(d_delta, 0xFF, bytes));
    CK(cudaMemset(d_vega, 0xFF, bytes));

    const int threads = 256;
    bsm_kernel<<<(N + threads - 1) / threads, threads>>>(d_opts, d_call, d_put, d_delta, d_vega, N);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<double> call(N), put(N), delta(N), vega(N);
    CK(cudaMemcpy(call.data(), d_call, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(put.data(), d_put, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(delta.data(), d_delta, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(vega.data(), d_vega, bytes, cudaMemcpyDeviceToHost));

    int parity_bad = 0, host_bad = 0;
    for (int i = 0; i < N; ++i) {
        const Option& o = opts[i];
        double parity = call[i] - put[i] - (o.spot * exp(-o.div * o.years) - o.strike * exp(-o.rate * o.years));
        if (!(fabs(parity) < 1e-8 * o.spot)) ++parity_bad;
    }
    for (int i = 0; i < N; i += 1009) {
        double c, p, d, v;
        bsm(opts[i], c, p, d, v);
        if (!(fabs(c - call[i]) < 1e-9 * (1.0 + c) && fabs(p - put[i]) < 1e-9 * (1.0 + p) &&
              fabs(d - delta[i]) < 1e-9 && fabs(v - vega[i]) < 1e-9 * (1.0 + v))) ++host_bad;
    }
    printf("weighted_sum_call  %.10e\n", weighted_sum(call));
    printf("weighted_sum_put   %.10e\n", weighted_sum(put));
    printf("weighted_sum_delta %.10e\n", weighted_sum(delta));
    printf("weighted_sum_vega  %.10e\n", weighted_sum(vega));
    printf("parity_violations %d\n", parity_bad);
    printf("host_check_errors %d\n", host_bad);
    printf("call[4242] = %.10e put[4242] = %.10e\n", call[4242], put[4242]);
    printf("delta[%d] = %.10e vega[%d] = %.10e\n", N - 1, delta[N - 1], N - 1, vega[N - 1]);
    CK(cudaFree(d_opts));
    CK(cudaFree(d_call));
    CK(cudaFree(d_put));
    CK(cudaFree(d_delta));
    CK(cudaFree(d_vega));
    return 0;
}
