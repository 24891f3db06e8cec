// chebyshev_eval_streams.cu
// Evaluates a Chebyshev approximation of exp(x) on [-1, 1] (Clenshaw
// recurrence) and a Taylor polynomial of sin(x) (Horner scheme) for a large
// batch of points. Coefficients live in __constant__ memory. The batch is
// split into chunks that are processed in a pipeline over several CUDA
// streams using pinned host buffers and cudaMemcpyAsync.

#include "math_common.cuh"
#include <cmath>

#define CHEB_DEGREE 14
#define TAYLOR_TERMS 10
#define NUM_STREAMS 4

__constant__ float c_cheb[CHEB_DEGREE];
__constant__ float c_taylor[TAYLOR_TERMS];  // coefficients of sin in powers of x

// Clenshaw recurrence for sum_k c_k T_k(x) with the usual c_0/2 convention.
__device__ float clenshaw_eval(float x) {
    float b_kp1 = 0.0f, b_kp2 = 0.0f;
    const float two_x = 2.0f * x;
    for (int k = CHEB_DEGREE - 1; k >= 1; --k) {
        float b_k = fmaf(two_x, b_kp1, c_cheb[k] - b_kp2);
        b_kp2 = b_kp1;
        b_kp1 = b_k;
    }
    return fmaf(x, b_kp1, 0.5f * c_cheb[0] - b_kp2);
}

// Horner evaluation of sum_i c_i x^i.
__device__ float horner_eval(float x) {
    float acc = c_taylor[TAYLOR_TERMS - 1];
    for (int i = TAYLOR_TERMS - 2; i >= 0; --i) acc = fmaf(acc, x, c_taylor[i]);
    return acc;
}

__global__ void eval_polys_kernel(const float* __restrict__ xs, float2* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float x = xs[i];
        out[i] = make_float2(clenshaw_eval(x), horner_eval(x));
    }
}

// Chebyshev coefficients of f on [-1,1] using Chebyshev-Gauss nodes.
static void chebyshev_fit(double (*f)(double), int degree, float* coeffs) {
    const double pi = 3.14159265358979323846;
    for (int k = 0; k < degree; ++k) {
        double sum = 0.0;
        for (int j = 0; j < degree; ++j) {
            double theta = pi * (j + 0.5) / degree;
            sum += f(std::cos(theta)) * std::cos(k * theta);
        }
        coeffs[k] = static_cast<float>(2.0 * sum / degree);
    }
}

static double exp_fn(double x) { return std::exp(x); }

int main() {
    const int n = 1 << 20;
    const int chunk = n / NUM_STREAMS / 4;  // 16 chunks in total
    const int num_chunks = n / chunk;

    // Coefficients -> constant memory
    float h_cheb[CHEB_DEGREE], h_taylor[TAYLOR_TERMS];
    chebyshev_fit(exp_fn, CHEB_DEGREE, h_cheb);
    double fact = 1.0;
    for (int i = 0; i < TAYLOR_TERMS; ++i) {
        if (i > 0) fact *= i;
        h_taylor[i] = (i % 2 == 0) ? 0.0f : static_cast<float>(((i / 2) % 2 ? -1.0 : 1.0) / fact);
    }
    CUDA_CHECK(cudaMemcpyToSymbol(c_cheb, h_cheb, sizeof(h_cheb)));
    CUDA_CHECK(cudaMemcpyToSymbol(c_taylor, h_taylor, sizeof(h_taylor)));

    // Pinned host buffers so the async copies can overlap with compute.
    float* h_x;
    float2* h_out;
    CUDA_CHECK(cudaMallocHost(&h_x, n * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&h_out, n * sizeof(float2)));
    HostLcg rng(7);
    for (int i = 0; i < n; ++i) h_x[i] = rng.uniform(-1.0f, 1.0f);

    float* d_x;
    float2* d_out;
    CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(float2)));

    cudaStream_t streams[NUM_STREAMS];
    for (int s = 0; s < NUM_STREAMS; ++s) CUDA_CHECK(cudaStreamCreate(&streams[s]));

    for (int c = 0; c < num_chunks; ++c) {
        cudaStream_t st = streams[c % NUM_STREAMS];
        const int off = c * chunk;
        CUDA_CHECK(cudaMemcpyAsync(d_x + off, h_x + off, chunk * sizeof(float),
                                   cudaMemcpyHostToDevice, st));
        eval_polys_kernel<<<div_up(chunk, 256) / 4, 256, 0, st>>>(d_x + off, d_out + off, chunk);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpyAsync(h_out + off, d_out + off, chunk * sizeof(float2),
                                   cudaMemcpyDeviceToHost, st));
    }
    for (int s = 0; s < NUM_STREAMS; ++s) CUDA_CHECK(cudaStreamSynchronize(streams[s]));

    // Verify on the host.
    double max_err_exp = 0.0, max_err_sin = 0.0, sum_exp = 0.0, sum_sin = 0.0;
    for (int i = 0; i < n; ++i) {
        max_err_exp = std::fmax(max_err_exp, std::fabs(h_out[i].x - std::exp((double)h_x[i])));
        max_err_sin = std::fmax(max_err_sin, std::fabs(h_out[i].y - std::sin((double)h_x[i])));
        sum_exp += h_out[i].x;
        sum_sin += h_out[i].y;
    }
    printf("chunks=%d streams=%d n=%d\n", num_chunks, NUM_STREAMS, n);
    printf("sum_exp=%.4f sum_sin=%.4f\n", sum_exp, sum_sin);
    printf("max_err_exp=%.2e max_err_sin=%.2e\n", max_err_exp, max_err_sin);
    printf("x=%.4f exp~%.6f sin~%.6f\n", h_x[42], h_out[42].x, h_out[42].y);

    for (int s = 0; s < NUM_STREAMS; ++s) CUDA_CHECK(cudaStreamDestroy(streams[s]));
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFreeHost(h_x));
    CUDA_CHECK(cudaFreeHost(h_out));
    return (max_err_exp < 1e-5 && max_err_sin < 1e-5) ? 0 : 1;
}
