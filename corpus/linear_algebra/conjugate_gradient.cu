// conjugate_gradient.cu
// Unpreconditioned conjugate gradient solver for a dense symmetric positive
// definite system A x = b in double precision. Every BLAS-1/BLAS-2 step is a
// separate kernel; dot products use a deterministic two-pass block reduction.

#include <cmath>
#include <vector>
#include "linear_algebra_common.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_PARTIALS = 64;

// y = A * x, one thread block per row, static shared memory reduction.
__global__ void dense_matvec(int n, const double* __restrict__ A,
                             const double* __restrict__ x, double* __restrict__ y) {
    __shared__ double partial[BLOCK];
    for (int row = blockIdx.x; row < n; row += gridDim.x) {
        double sum = 0.0;
        for (int c = threadIdx.x; c < n; c += blockDim.x)
            sum += A[rm_index(row, c, n)] * x[c];
        partial[threadIdx.x] = sum;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) y[row] = partial[0];
        __syncthreads();
    }
}

// First pass of a dot product: each block writes one partial sum.
__global__ void dot_partial(int n, const double* __restrict__ a,
                            const double* __restrict__ b, double* __restrict__ partials) {
    __shared__ double cache[BLOCK];
    double sum = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += a[i] * b[i];
    cache[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = cache[0];
}

// Second pass: a single thread sums the partials in a fixed order.
__global__ void dot_finalize(int count, const double* __restrict__ partials,
                             double* __restrict__ result) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        double s = 0.0;
        for (int i = 0; i < count; ++i) s += partials[i];
        *result = s;
    }
}

// x += alpha * p ; r -= alpha * Ap   (fused update, grid-stride)
__global__ void update_x_r(int n, double alpha, const double* __restrict__ p,
                           const double* __restrict__ Ap, double* __restrict__ x,
                           double* __restrict__ r) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        x[i] = fma(alpha, p[i], x[i]);
        r[i] = fma(-alpha, Ap[i], r[i]);
    }
}

// p = r + beta * p
__global__ void update_p(int n, double beta, const double* __restrict__ r,
                         double* __restrict__ p) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = fma(beta, p[i], r[i]);
}

static double device_dot(int n, const double* a, const double* b, double* dPartials,
                         double* dResult) {
    int blocks = ceil_div(n, BLOCK);
    if (blocks > MAX_PARTIALS) blocks = MAX_PARTIALS;
    dot_partial<<<blocks, BLOCK>>>(n, a, b, dPartials);
    dot_finalize<<<1, 1>>>(blocks, dPartials, dResult);
    LA_CHECK(cudaGetLastError());
    double h = 0.0;
    LA_CHECK(cudaMemcpy(&h, dResult, sizeof(double), cudaMemcpyDeviceToHost));
    return h;
}

int main() {
    const int n = 384;
    const int maxIter = 500;
    const double tol = 1e-10;

    // Build an SPD matrix: A = M + M^T + 2n*I (diagonally dominant, symmetric).
    HostLcg rng(2024);
    std::vector<double> hA((size_t)n * n), hb(n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j <= i; ++j) {
            double v = rng.uniform(-1.0, 1.0);
            hA[i * n + j] = v;
            hA[j * n + i] = v;
        }
    for (int i = 0; i < n; ++i) hA[i * n + i] += 2.0 * n;
    for (int i = 0; i < n; ++i) hb[i] = rng.uniform(0.0, 10.0);

    double *dA, *dx, *dr, *dp, *dAp, *dPartials, *dResult;
    LA_CHECK(cudaMalloc(&dA, hA.size() * sizeof(double)));
    LA_CHECK(cudaMalloc(&dx, n * sizeof(double)));
    LA_CHECK(cudaMalloc(&dr, n * sizeof(double)));
    LA_CHECK(cudaMalloc(&dp, n * sizeof(double)));
    LA_CHECK(cudaMalloc(&dAp, n * sizeof(double)));
    LA_CHECK(cudaMalloc(&dPartials, MAX_PARTIALS * sizeof(double)));
    LA_CHECK(cudaMalloc(&dResult, sizeof(double)));
    LA_CHECK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(double), cudaMemcpyHostToDevice));

    // x0 = 0, r0 = b, p0 = r0
    LA_CHECK(cudaMemset(dx, 0, n * sizeof(double)));
    LA_CHECK(cudaMemcpy(dr, hb.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    LA_CHECK(cudaMemcpy(dp, hb.data(), n * sizeof(double), cudaMemcpyHostToDevice));

    int vecBlocks = ceil_div(n, BLOCK);
    double rsOld = device_dot(n, dr, dr, dPartials, dResult);
    const double rs0 = rsOld;
    int iter = 0;
    for (; iter < maxIter && sqrt(rsOld / rs0) > tol; ++iter) {
        dense_matvec<<<128, BLOCK>>>(n, dA, dp, dAp);
        double pAp = device_dot(n, dp, dAp, dPartials, dResult);
        double alpha = rsOld / pAp;
        update_x_r<<<vecBlocks, BLOCK>>>(n, alpha, dp, dAp, dx, dr);
        double rsNew = device_dot(n, dr, dr, dPartials, dResult);
        update_p<<<vecBlocks, BLOCK>>>(n, rsNew / rsOld, dr, dp);
        LA_CHECK(cudaGetLastError());
        rsOld = rsNew;
    }
    LA_CHECK(cudaDeviceSynchronize());

    std::vector<double> hx(n);
    LA_CHECK(cudaMemcpy(hx.data(), dx, n * sizeof(double), cudaMemcpyDeviceToHost));

    // Verify the true residual on the host.
    double resNorm = 0.0, bNorm = 0.0, xSum = 0.0;
    for (int i = 0; i < n; ++i) {
        double s = 0.0;
        for (int j = 0; j < n; ++j) s += hA[i * n + j] * hx[j];
        resNorm += (s - hb[i]) * (s - hb[i]);
        bNorm += hb[i] * hb[i];
        xSum += hx[i];
    }
    double rel = sqrt(resNorm / bNorm);
    bool ok = rel < 1e-8;
    printf("CG n=%d converged=%s\n", n, iter < maxIter ? "yes" : "no");
    printf("sum(x)=%.6f x[0]=%.6f x[%d]=%.6f\n", xSum, hx[0], n - 1, hx[n - 1]);
    printf("relative residual below 1e-8: %s\n", ok ? "yes" : "no");

    double* bufs[] = {dA, dx, dr, dp, dAp, dPartials, dResult};
    for (double* b : bufs) LA_CHECK(cudaFree(b));
    return ok ? 0 : 1;
}
