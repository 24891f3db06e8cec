// poisson3d_redblack_sor.cu - red-black successive over-relaxation for the 3D
// Poisson problem  -lap(u) = f  on the unit cube with u = 0 on the boundary.
// The sweep and the residual kernels are templates, run in float and double
// to show how precision affects the attainable residual.
#include "stencil_common.cuh"
#include <vector>

#define RES_BLOCK 256

template <typename T>
__device__ inline T seven_point(const T* u, int i, int j, int k, int n) {
    return u[idx3(i - 1, j, k, n, n)] + u[idx3(i + 1, j, k, n, n)] +
           u[idx3(i, j - 1, k, n, n)] + u[idx3(i, j + 1, k, n, n)] +
           u[idx3(i, j, k - 1, n, n)] + u[idx3(i, j, k + 1, n, n)];
}

__device__ inline bool is_interior(int i, int j, int k, int n) {
    return i > 0 && j > 0 && k > 0 && i < n - 1 && j < n - 1 && k < n - 1;
}

// Update all interior points whose (i+j+k) parity equals `color`.
template <typename T>
__global__ void rb_sor_sweep(T* u, const T* f, int n, int color, T omega, T h2) {
    int total = n * n * n;
    for (int id = blockIdx.x * blockDim.x + threadIdx.x; id < total; id += blockDim.x * gridDim.x) {
        int i = id % n, j = (id / n) % n, k = id / (n * n);
        if (!is_interior(i, j, k, n) || ((i + j + k) & 1) != color) continue;
        T gs = (seven_point(u, i, j, k, n) + h2 * f[id]) / T(6);
        u[id] = u[id] + omega * (gs - u[id]);
    }
}

// Sum of squared residuals per block. Dynamic shared memory is declared as raw
// bytes and reinterpreted, the usual trick for extern shared in templates.
template <typename T>
__global__ void residual_sq(const T* u, const T* f, int n, T inv_h2, T* block_out) {
    extern __shared__ unsigned char smem_raw[];
    T* sdata = reinterpret_cast<T*>(smem_raw);
    int total = n * n * n;
    T acc = T(0);
    for (int id = blockIdx.x * blockDim.x + threadIdx.x; id < total; id += blockDim.x * gridDim.x) {
        int i = id % n, j = (id / n) % n, k = id / (n * n);
        if (!is_interior(i, j, k, n)) continue;
        T r = f[id] + (seven_point(u, i, j, k, n) - T(6) * u[id]) * inv_h2;
        acc += r * r;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) block_out[blockIdx.x] = sdata[0];
}

template <typename T>
struct SolveResult { double res0, res_final, center, checksum; };

template <typename T>
static SolveResult<T> solve(int n, const std::vector<double>& f_host, int iters, double omega) {
    const int total = n * n * n, grid = 120;
    const T h = T(1) / T(n - 1);
    std::vector<T> f(total), u(total, T(0));
    for (int q = 0; q < total; ++q) f[q] = (T)f_host[q];

    T *d_u, *d_f, *d_part;
    CHECK_CUDA(cudaMalloc(&d_u, total * sizeof(T)));
    CHECK_CUDA(cudaMalloc(&d_f, total * sizeof(T)));
    CHECK_CUDA(cudaMalloc(&d_part, grid * sizeof(T)));
    CHECK_CUDA(cudaMemcpy(d_u, u.data(), total * sizeof(T), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_f, f.data(), total * sizeof(T), cudaMemcpyHostToDevice));

    std::vector<T> part(grid);
    auto residual = [&]() {
        residual_sq<T><<<grid, RES_BLOCK, RES_BLOCK * sizeof(T)>>>(d_u, d_f, n, T(1) / (h * h), d_part);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpy(part.data(), d_part, grid * sizeof(T), cudaMemcpyDeviceToHost));
        double s = 0.0;
        for (int b = 0; b < grid; ++b) s += (double)part[b];
        return sqrt(s / total);
    };

    SolveResult<T> res;
    res.res0 = residual();
    for (int it = 0; it < iters; ++it) {
        rb_sor_sweep<T><<<grid, RES_BLOCK>>>(d_u, d_f, n, 0, (T)omega, h * h);
        rb_sor_sweep<T><<<grid, RES_BLOCK>>>(d_u, d_f, n, 1, (T)omega, h * h);
    }
    CHECK_CUDA(cudaGetLastError());
    res.res_final = residual();

    CHECK_CUDA(cudaMemcpy(u.data(), d_u, total * sizeof(T), cudaMemcpyDeviceToHost));
    res.center = (double)u[idx3(n / 2, n / 2, n / 2, n, n)];
    res.checksum = 0.0;
    for (int q = 0; q < total; ++q) res.checksum += (double)u[q];
    cudaFree(d_u); cudaFree(d_f); cudaFree(d_part);
    return res;
}

int main() {
    const int n = 40, iters = 150;
    const double pi = 3.14159265358979323846;
    const double omega = 2.0 / (1.0 + sin(pi / (n - 1)));  // optimal SOR factor for the model problem

    // f = 3*pi^2 sin(pi x) sin(pi y) sin(pi z) + small deterministic noise
    std::vector<double> f(n * n * n);
    HostRng rng(8675309u);
    for (int k = 0; k < n; ++k)
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) {
                double x = (double)i / (n - 1), y = (double)j / (n - 1), z = (double)k / (n - 1);
                f[idx3(i, j, k, n, n)] = 3.0 * pi * pi * sin(pi * x) * sin(pi * y) * sin(pi * z) +
                                         0.01 * (rng.unit() - 0.5);
            }

    SolveResult<float> rf = solve<float>(n, f, iters, omega);
    SolveResult<double> rd = solve<double>(n, f, iters, omega);

    printf("n=%d iters=%d omega=%.4f\n", n, iters, omega);
    printf("float : res0=%.4e res=%.4e u(center)=%.5f sum=%.3f\n", rf.res0, rf.res_final, rf.center, rf.checksum);
    printf("double: res0=%.4e res=%.4e u(center)=%.5f sum=%.3f\n", rd.res0, rd.res_final, rd.center, rd.checksum);
    printf("|center_f - center_d| = %.3e (exact center ~ 1.0)\n", fabs(rf.center - rd.center));
    return 0;
}
