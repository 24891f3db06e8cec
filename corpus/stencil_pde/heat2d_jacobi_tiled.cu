// heat2d_jacobi_tiled.cu - explicit 2D heat equation u_t = alpha * lap(u) on
// a square plate with fixed (Dirichlet) edges. Each block loads a tile plus a
// one-cell halo into static shared memory before applying the 5-point stencil.
// The maximum per-step change is tracked with an integer atomicMax on float
// bit patterns to decide when the plate has reached steady state.
#include "stencil_common.cuh"
#include <vector>

#define BX 32
#define BY 8

__global__ void heat_step(const float* __restrict__ u, float* __restrict__ u_new,
                          int nx, int ny, float r, float* max_delta) {
    __shared__ float tile[BY + 2][BX + 2];
    int i = blockIdx.x * BX + threadIdx.x;
    int j = blockIdx.y * BY + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    bool inside = (i < nx && j < ny);

    if (inside) {
        tile[ty][tx] = u[idx2(i, j, nx)];
        // halo cells, loaded by the threads on the tile border
        if (threadIdx.x == 0 && i > 0) tile[ty][0] = u[idx2(i - 1, j, nx)];
        if (threadIdx.x == BX - 1 && i < nx - 1) tile[ty][BX + 1] = u[idx2(i + 1, j, nx)];
        if (threadIdx.y == 0 && j > 0) tile[0][tx] = u[idx2(i, j - 1, nx)];
        if (threadIdx.y == BY - 1 && j < ny - 1) tile[BY + 1][tx] = u[idx2(i, j + 1, nx)];
    }
    __syncthreads();

    if (!inside) return;
    float c = tile[ty][tx];
    float out = c;
    if (i > 0 && j > 0 && i < nx - 1 && j < ny - 1) {
        // interior points always have all four neighbours in the tile or halo,
        // even in the ragged last row/column of blocks
        float w = tile[ty][tx - 1];
        float e = tile[ty][tx + 1];
        float s = tile[ty - 1][tx];
        float n = tile[ty + 1][tx];
        out = c + r * lap5(c, w, e, s, n);
    }
    u_new[idx2(i, j, nx)] = out;
    atomic_max_nonneg(max_delta, fabsf(out - c));
}

// Fixed boundary temperatures: hot top edge, warm left edge, cold elsewhere.
__global__ void apply_boundary(float* u, int nx, int ny) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < nx) { u[idx2(t, ny - 1, nx)] = 100.0f; u[idx2(t, 0, nx)] = 0.0f; }
    if (t < ny) { u[idx2(0, t, nx)] = 50.0f; u[idx2(nx - 1, t, nx)] = 0.0f; }
}

// Heat content per block, reduced with a static shared array.
__global__ void total_heat(const float* u, int n, float* block_sums) {
    __shared__ float acc[256];
    float s = 0.0f;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) s += u[k];
    acc[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x >> 1; w > 0; w >>= 1) {
        if (threadIdx.x < w) acc[threadIdx.x] += acc[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = acc[0];
}

int main() {
    const int nx = 250, ny = 200;          // deliberately not tile multiples
    const int max_steps = 2000, check_every = 100;
    const float alpha = 1.0f, dx = 1.0f, dt = 0.2f;
    const float r = alpha * dt / (dx * dx);  // must be <= 0.25 for stability
    const int n = nx * ny;

    std::vector<float> h_u(n, 0.0f);
    HostRng rng(31415u);
    for (int k = 0; k < n; ++k) h_u[k] = (float)(5.0 * rng.unit());  // small noisy initial field

    float *d_u, *d_v, *d_delta, *d_sums;
    const int sum_blocks = 32;
    CHECK_CUDA(cudaMalloc(&d_u, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_v, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_delta, sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_sums, sum_blocks * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_u, h_u.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    apply_boundary<<<DIV_UP(nx > ny ? nx : ny, 128), 128>>>(d_u, nx, ny);
    CHECK_CUDA(cudaGetLastError());

    dim3 block(BX, BY), grid(DIV_UP(nx, BX), DIV_UP(ny, BY));
    int step = 0;
    float delta = 0.0f;
    for (step = 1; step <= max_steps; ++step) {
        if (step % check_every == 0) CHECK_CUDA(cudaMemset(d_delta, 0, sizeof(float)));
        heat_step<<<grid, block>>>(d_u, d_v, nx, ny, r, d_delta);
        CHECK_CUDA(cudaGetLastError());
        float* t = d_u; d_u = d_v; d_v = t;
        if (step % check_every == 0) {
            CHECK_CUDA(cudaMemcpy(&delta, d_delta, sizeof(float), cudaMemcpyDeviceToHost));
            if (delta < 1e-3f) break;
        }
    }
    if (step > max_steps) step = max_steps;

    total_heat<<<sum_blocks, 256>>>(d_u, n, d_sums);
    CHECK_CUDA(cudaGetLastError());
    std::vector<float> h_sums(sum_blocks);
    CHECK_CUDA(cudaMemcpy(h_sums.data(), d_sums, sum_blocks * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_u.data(), d_u, n * sizeof(float), cudaMemcpyDeviceToHost));
    double heat = 0.0;
    for (int b = 0; b < sum_blocks; ++b) heat += h_sums[b];

    printf("grid=%dx%d r=%.3f steps=%d last_max_delta=%.6f\n", nx, ny, r, step, delta);
    printf("total_heat=%.4f mean_T=%.4f\n", heat, heat / n);
    printf("T(center)=%.4f T(near_top)=%.4f T(near_left)=%.4f\n",
           h_u[idx2(nx / 2, ny / 2, nx)], h_u[idx2(nx / 2, ny - 2, nx)], h_u[idx2(1, ny / 2, nx)]);

    cudaFree(d_u); cudaFree(d_v); cudaFree(d_delta); cudaFree(d_sums);
    return 0;
}
