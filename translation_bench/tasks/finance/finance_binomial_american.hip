#include "hip/hip_runtime.h"
// American and European put prices on a 512-step Cox-Ross-Rubinstein binomial tree for
// 4096 options (double precision). One block per option: the 513 terminal payoffs are
// placed in shared memory and the block walks the tree backwards, one step per iteration,
// ping-ponging between two shared buffers (American: max of continuation and exercise).
// The host checks American >= European, compares a few options with a CPU tree and the
// European values with the Black-Scholes formula, and prints position-weighted sums.
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        hipError_t err_ = (call);                                            \
        if (err_ != hipSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s at %s:%d\n",                      \
                    hipGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const int NOPT = 4096;
static const int STEPS = 512;
static const int THREADS = 256;

struct Option { double spot, strike, years, rate, vol; };

__global__ void binomial_kernel(const Option* opts, double* amer_out, double* euro_out) {
    __shared__ double va[2][STEPS + 1], ve[2][STEPS + 1];
    Option o = opts[blockIdx.x];
    double dt = o.years / STEPS;
    double vsdt = o.vol * sqrt(dt);
    double u = exp(vsdt), d = 1.0 / u;
    double p = (exp(o.rate * dt) - d) / (u - d);
    double disc = exp(-o.rate * dt);
    double pu = disc * p, pd = disc * (1.0 - p);
    for (int i = threadIdx.x; i <= STEPS; i += blockDim.x) {
        double payoff = fmax(o.strike - o.spot * exp((2 * i - STEPS) * vsdt), 0.0);
        va[0][i] = payoff;
        ve[0][i] = payoff;
    }
    __syncthreads();
    int cur = 0;
    for (int n = STEPS - 1; n >= 0; --n) {
        for (int i = threadIdx.x; i <= n; i += blockDim.x) {
            double exercise = o.strike - o.spot * exp((2 * i - n) * vsdt);
            double cont = pu * va[cur][i + 1] + pd * va[cur][i];
            va[cur ^ 1][i] = fmax(cont, exercise);
            ve[cur ^ 1][i] = pu * ve[cur][i + 1] + pd * ve[cur][i];
        }
        __syncthreads();
        cur ^= 1;
    }
    if (threadIdx.x == 0) {
        amer_out[blockIdx.x] = va[cur][0];
        euro_out[blockIdx.x] = ve[cur][0];
    }
}

static void binomial_host(const Option& o, double& amer, double& euro) {
    double dt = o.years / STEPS, vsdt = o.vol * sqrt(dt);
    double u = exp(vsdt), d = 1.0 / u, p = (exp(o.rate * dt) - d) / (u - d), disc = exp(-o.rate * dt);
    double pu = disc * p, pd = disc * (1.0 - p);
    std::vector<double> va(STEPS + 1), ve(STEPS + 1);
    for (int i = 0; i <= STEPS; ++i) va[i] = ve[i] = fmax(o.strike - o.spot * exp((2 * i - STEPS) * vsdt), 0.0);
    for (int n = STEPS - 1; n >= 0; --n)
        for (int i = 0; i <= n; ++i) {   // in place: index i+1 is read before it is overwritten
            va[i] = fmax(pu * va[i + 1] + pd * va[i], o.strike - o.spot * exp((2 * i - n) * vsdt));
            ve[i] = pu * ve[i + 1] + pd * ve[i];
        }
    amer = va[0];
    euro = ve[0];
}

static double bs_put(const Option& o) {
    double sq = o.vol * sqrt(o.years);
    double d1 = (log(o.spot / o.strike) + (o.rate + 0.5 * o.vol * o.vol) * o.years) / sq, d2 = d1 - sq;
    return o.strike * exp(-o.rate * o.years) * 0.5 * erfc(d2 / sqrt(2.0)) - o.spot * 0.5 * erfc(d1 / sqrt(2.0));
}

static uint64_t rng_state = 0x9216D5D98979FB1Bull;
static double next_unit() {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        rng_state = strtoull(argv[1], nullptr, 0);
        if (rng_state == 0) rng_state = 0x9216D5D98979FB1Bull;
    }
    std::vector<Option> opts(NOPT);
    for (int i = 0; i < NOPT; ++i) {
        Option& o = opts[i];
        o.spot = 50.0 + 100.0 * next_unit();
        o.strike = o.spot * (0.7 + 0.6 * next_unit());
        o.years = 0.1 + 1.9 * next_unit();
        o.rate = 0.005 + 0.08 * next_unit();
        o.vol = 0.1 + 0.5 * next_unit();
    }
    Option* d_opts;
    double *d_amer, *d_euro;
    CK(hipMalloc(&d_opts, NOPT * sizeof(Option)));
    CK(hipMalloc(&d_amer, NOPT * sizeof(double)));
    CK(hipMalloc(&d_euro, NOPT * sizeof(double)));
    CK(hipMemcpy(d_opts, opts.data(), NOPT * sizeof(Option), hipMemcpyHostToDevice));
    CK(hipMemset(d_amer, 0xFF, NOPT * sizeof(double)));
    CK(hipMemset(d_euro, 0xFF, NOPT * sizeof(double)));

    binomial_kernel<<<NOPT, THREADS>>>(d_opts, d_amer, d_euro);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());
    std::vector<double> amer(NOPT), euro(NOPT);
    CK(hipMemcpy(amer.data(), d_amer, NOPT * sizeof(double), hipMemcpyDeviceToHost));
    CK(hipMemcpy(euro.data(), d_euro, NOPT * sizeof(double), hipMemcpyDeviceToHost));

    int order_bad = 0, host_bad = 0, bs_bad = 0;
    double wa = 0.0, we = 0.0, premium = 0.0;
    for (int i = 0; i < NOPT; ++i) {
        if (!(amer[i] >= euro[i] - 1e-12)) ++order_bad;
        if (!(fabs(euro[i] - bs_put(opts[i])) < 0.02 + 1e-3 * opts[i].strike)) ++bs_bad;
        double w = 1.0 + (double)(i % 512) / 512.0;
        wa += w * amer[i];
        we += w * euro[i];
        premium += amer[i] - euro[i];
    }
    for (int i = 0; i < NOPT; i += 257) {
        double a, e;
        binomial_host(opts[i], a, e);
        if (!(fabs(a - amer[i]) < 1e-9 * (1.0 + a) && fabs(e - euro[i]) < 1e-9 * (1.0 + e))) ++host_bad;
    }
    printf("weighted_sum_american %.10e\n", wa);
    printf("weighted_sum_european %.10e\n", we);
    printf("mean_early_exercise_premium %.10e\n", premium / NOPT);
    printf("american_below_european %d\n", order_bad);
    printf("european_far_from_black_scholes %d\n", bs_bad);
    printf("host_check_errors %d\n", host_bad);
    printf("american[0] = %.10e european[0] = %.10e\n", amer[0], euro[0]);
    printf("american[%d] = %.10e european[%d] = %.10e\n", NOPT - 1, amer[NOPT - 1], NOPT - 1, euro[NOPT - 1]);
    CK(hipFree(d_opts));
    CK(hipFree(d_amer));
    CK(hipFree(d_euro));
    return 0;
}
