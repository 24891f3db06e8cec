// Matrix-free conjugate gradient for the 2D Poisson problem -lap(u) = f on a
// 512x512 interior grid with zero Dirichlet boundaries (5-point stencil, double
// precision), 200 fixed iterations. Dot products are reduced per block with
// __shfl_down_sync and shared memory into a fixed-size partials array that the
// host sums in index order, so every run gives identical bits. The host
// computes alpha/beta between launches. Prints the residual history, a
// position-weighted checksum of the solution and a few solution values.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error '%s' at %s:%d\n",                     \
                    cudaGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define N 512
#define ITERS 200
#define THREADS 256
#define RBLOCKS 264

__device__ double block_sum(double v) {
    __shared__ double warp_part[THREADS / 32];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    v = 0.0;
    if (warp == 0) {
        v = lane < THREADS / 32 ? warp_part[lane] : 0.0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;  // valid in thread 0
}

__global__ void apply_laplacian(const double* __restrict__ p, double* __restrict__ ap) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= N || y >= N) return;
    int i = y * N + x;
    double s = 4.0 * p[i];
    if (x > 0) s -= p[i - 1];
    if (x < N - 1) s -= p[i + 1];
    if (y > 0) s -= p[i - N];
    if (y < N - 1) s -= p[i + N];
    ap[i] = s;
}

__global__ void dot_kernel(const double* __restrict__ a, const double* __restrict__ b, double* partial, int n) {
    double v = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += a[i] * b[i];
    v = block_sum(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

// x += alpha p; r -= alpha Ap; partial sums of r.r
__global__ void update_xr_kernel(double* x, double* r, const double* __restrict__ p, const double* __restrict__ ap,
                                 double alpha, double* partial, int n) {
    double v = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        x[i] += alpha * p[i];
        double ri = r[i] - alpha * ap[i];
        r[i] = ri;
        v += ri * ri;
    }
    v = block_sum(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

__global__ void update_p_kernel(double* p, const double* __restrict__ r, double beta, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = r[i] + beta * p[i];
}

static double host_sum(const double* d_partial, std::vector<double>& h_partial) {
    CK(cudaMemcpy(h_partial.data(), d_partial, RBLOCKS * sizeof(double), cudaMemcpyDeviceToHost));
    double s = 0.0;
    for (int b = 0; b < RBLOCKS; ++b) s += h_partial[b];
    return s;
}

int main(int argc, char** argv) {
    const int n = N * N;
    std::vector<double> h_f(n, 0.0);
    uint64_t s = 0x7A3B9C1D2E4F6051ULL;
    if (argc > 1) s = strtoull(argv[1], nullptr, 0);
    for (int k = 0; k < 12; ++k) {  // random Gaussian sources and sinks
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double cx = 40 + (double)((s >> 20) % (N - 80)), cy = 40 + (double)((s >> 40) % (N - 80));
        double amp = (k % 3 == 0) ? -1.0 : 1.0, w = 20.0 + (double)((s >> 10) % 200);
        for (int y = 0; y < N; ++y)
            for (int x = 0; x < N; ++x)
                h_f[y * N + x] += amp * exp(-((x - cx) * (x - cx) + (y - cy) * (y - cy)) / w);
    }
    double *d_x, *d_r, *d_p, *d_ap, *d_partial;
    CK(cudaMalloc(&d_x, n * sizeof(double)));
    CK(cudaMalloc(&d_r, n * sizeof(double)));
    CK(cudaMalloc(&d_p, n * sizeof(double)));
    CK(cudaMalloc(&d_ap, n * sizeof(double)));
    CK(cudaMalloc(&d_partial, RBLOCKS * sizeof(double)));
    CK(cudaMemset(d_x, 0, n * sizeof(double)));  // x0 = 0, so r0 = p0 = f
    CK(cudaMemcpy(d_r, h_f.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_p, h_f.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_ap, 0xFF, n * sizeof(double)));  // NaN sentinel
    CK(cudaMemset(d_partial, 0xFF, RBLOCKS * sizeof(double)));

    std::vector<double> h_partial(RBLOCKS);
    dim3 block2(32, 8), grid2(N / 32, N / 8);
    dot_kernel<<<RBLOCKS, THREADS>>>(d_r, d_r, d_partial, n);
    CK(cudaGetLastError());
    double rr = host_sum(d_partial, h_partial);
    const double rr0 = rr;
    for (int it = 1; it <= ITERS; ++it) {
        apply_laplacian<<<grid2, block2>>>(d_p, d_ap);
        CK(cudaGetLastError());
        dot_kernel<<<RBLOCKS, THREADS>>>(d_p, d_ap, d_partial, n);
        CK(cudaGetLastError());
        double pap = host_sum(d_partial, h_partial);
        double alpha = rr / pap;
        update_xr_kernel<<<RBLOCKS, THREADS>>>(d_x, d_r, d_p, d_ap, alpha, d_partial, n);
        CK(cudaGetLastError());
        double rr_new = host_sum(d_partial, h_partial);
        update_p_kernel<<<RBLOCKS, THREADS>>>(d_p, d_r, rr_new / rr, n);
        CK(cudaGetLastError());
        rr = rr_new;
        if (it % 50 == 0) printf("iter %d rel_residual %.10e\n", it, sqrt(rr / rr0));
    }
    CK(cudaDeviceSynchronize());
    std::vector<double> h_x(n);
    CK(cudaMemcpy(h_x.data(), d_x, n * sizeof(double), cudaMemcpyDeviceToHost));
    double checksum = 0.0, xmin = 1e300, xmax = -1e300;
    for (int i = 0; i < n; ++i) {
        checksum += h_x[i] * (double)(1 + i % 97);
        xmin = fmin(xmin, h_x[i]);
        xmax = fmax(xmax, h_x[i]);
    }
    printf("initial_residual_norm %.10e\n", sqrt(rr0));
    printf("solution_checksum %.10e\n", checksum);
    printf("solution_range %.10e %.10e\n", xmin, xmax);
    printf("x[%d] = %.10e  x[%d] = %.10e\n", N * 256 + 256, h_x[N * 256 + 256], N * 100 + 400, h_x[N * 100 + 400]);
    CK(cudaFree(d_x)); CK(cudaFree(d_r)); CK(cudaFree(d_p)); CK(cudaFree(d_ap)); CK(cudaFree(d_partial));
    return 0;
}
