// burgers1d_batched_streams.cu - a batch of independent 1D viscous Burgers
// problems  u_t + (u^2/2)_x = nu * u_xx  on periodic domains, solved with a
// conservative Rusanov (local Lax-Friedrichs) flux plus central diffusion.
// Each problem lives in its own stream: upload, time-step and download are
// all asynchronous so the problems overlap on the device.
#include "stencil_common.cuh"
#include <vector>

#define NUM_PROBLEMS 4
#define NX 1024
#define BLOCK 256
static_assert(NX % BLOCK == 0, "burgers_step assumes NX is a multiple of BLOCK");

// Per-problem physical parameters, indexed by problem id.
struct BurgersParams { float nu; float amplitude; };
__constant__ BurgersParams c_params[NUM_PROBLEMS];
__constant__ float c_dx;
__constant__ float c_dt;

__device__ inline int periodic(int i) { return (i + NX) % NX; }

__device__ inline float rusanov_flux(float ul, float ur) {
    float fl = 0.5f * ul * ul, fr = 0.5f * ur * ur;
    float a = fmaxf(fabsf(ul), fabsf(ur));
    return 0.5f * (fl + fr) - 0.5f * a * (ur - ul);
}

__global__ void set_initial(float* u, int problem) {
    float A = c_params[problem].amplitude;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < NX; i += blockDim.x * gridDim.x) {
        float x = i * c_dx;
        u[i] = A * sinf(x) + 0.5f * A * sinf(3.0f * x + 0.3f * problem);
    }
}

// Each block loads its segment plus one ghost cell each side into shared memory.
__global__ void burgers_step(const float* __restrict__ u, float* __restrict__ u_next, int problem) {
    __shared__ float s[BLOCK + 2];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    int t = threadIdx.x + 1;
    s[t] = u[i];
    if (threadIdx.x == 0) s[0] = u[periodic(i - 1)];
    if (threadIdx.x == BLOCK - 1) s[BLOCK + 1] = u[periodic(i + 1)];
    __syncthreads();

    float ul = s[t - 1], uc = s[t], ur = s[t + 1];
    float dx = c_dx, dt = c_dt;
    float flux_right = rusanov_flux(uc, ur);
    float flux_left = rusanov_flux(ul, uc);
    float diffusion = c_params[problem].nu * (ur - 2.0f * uc + ul) / (dx * dx);
    u_next[i] = uc - dt / dx * (flux_right - flux_left) + dt * diffusion;
}

// Block-level partial sums of mass (sum u) and energy (sum u^2 / 2).
__global__ void invariants(const float* u, float2* partial) {
    __shared__ float2 red[BLOCK];
    float2 acc = make_float2(0.f, 0.f);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < NX; i += blockDim.x * gridDim.x) {
        acc.x += u[i];
        acc.y += 0.5f * u[i] * u[i];
    }
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) { red[threadIdx.x].x += red[threadIdx.x + s].x; red[threadIdx.x].y += red[threadIdx.x + s].y; }
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
}

int main() {
    const float two_pi = 6.28318530718f;
    const float dx = two_pi / NX;
    const int red_blocks = 8;
    BurgersParams hp[NUM_PROBLEMS] = {{0.01f, 1.0f}, {0.005f, 1.0f}, {0.02f, 0.5f}, {0.002f, 0.75f}};
    float max_amp = 1.5f;
    float dt = 0.4f * dx / max_amp;  // CFL on the advective part
    for (int p = 0; p < NUM_PROBLEMS; ++p) dt = fminf(dt, 0.4f * dx * dx / hp[p].nu);
    const int steps = 1200;

    CHECK_CUDA(cudaMemcpyToSymbol(c_params, hp, sizeof(hp)));
    CHECK_CUDA(cudaMemcpyToSymbol(c_dx, &dx, sizeof(float)));
    CHECK_CUDA(cudaMemcpyToSymbol(c_dt, &dt, sizeof(float)));

    cudaStream_t stream[NUM_PROBLEMS];
    float *d_a[NUM_PROBLEMS], *d_b[NUM_PROBLEMS], *h_u[NUM_PROBLEMS];
    float2 *d_part[NUM_PROBLEMS], *h_part[NUM_PROBLEMS];
    for (int p = 0; p < NUM_PROBLEMS; ++p) {
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream[p], cudaStreamNonBlocking));
        CHECK_CUDA(cudaMalloc(&d_a[p], NX * sizeof(float)));
        CHECK_CUDA(cudaMalloc(&d_b[p], NX * sizeof(float)));
        CHECK_CUDA(cudaMalloc(&d_part[p], 2 * red_blocks * sizeof(float2)));
        CHECK_CUDA(cudaMallocHost(&h_u[p], NX * sizeof(float)));
        CHECK_CUDA(cudaMallocHost(&h_part[p], 2 * red_blocks * sizeof(float2)));
    }

    const int grid = NX / BLOCK;
    for (int p = 0; p < NUM_PROBLEMS; ++p) {
        set_initial<<<grid, BLOCK, 0, stream[p]>>>(d_a[p], p);
        invariants<<<red_blocks, BLOCK, 0, stream[p]>>>(d_a[p], d_part[p]);
        for (int s = 0; s < steps; ++s) {
            burgers_step<<<grid, BLOCK, 0, stream[p]>>>(d_a[p], d_b[p], p);
            float* t = d_a[p]; d_a[p] = d_b[p]; d_b[p] = t;
        }
        invariants<<<red_blocks, BLOCK, 0, stream[p]>>>(d_a[p], d_part[p] + red_blocks);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpyAsync(h_u[p], d_a[p], NX * sizeof(float), cudaMemcpyDeviceToHost, stream[p]));
        CHECK_CUDA(cudaMemcpyAsync(h_part[p], d_part[p], 2 * red_blocks * sizeof(float2),
                                   cudaMemcpyDeviceToHost, stream[p]));
    }

    printf("nx=%d steps=%d dt=%.6e\n", NX, steps, dt);
    for (int p = 0; p < NUM_PROBLEMS; ++p) {
        CHECK_CUDA(cudaStreamSynchronize(stream[p]));
        double m0 = 0, e0 = 0, m1 = 0, e1 = 0, max_grad = 0;
        for (int b = 0; b < red_blocks; ++b) {
            m0 += h_part[p][b].x; e0 += h_part[p][b].y;
            m1 += h_part[p][red_blocks + b].x; e1 += h_part[p][red_blocks + b].y;
        }
        for (int i = 0; i < NX; ++i)
            max_grad = fmax(max_grad, fabs((double)h_u[p][(i + 1) % NX] - h_u[p][i]) / dx);
        printf("problem %d nu=%.3f: mass %.5f -> %.5f  energy %.4f -> %.4f  max|u_x|=%.3f u[100]=%.5f\n",
               p, hp[p].nu, m0 * dx, m1 * dx, e0 * dx, e1 * dx, max_grad, h_u[p][100]);
    }

    for (int p = 0; p < NUM_PROBLEMS; ++p) {
        cudaFree(d_a[p]); cudaFree(d_b[p]); cudaFree(d_part[p]);
        cudaFreeHost(h_u[p]); cudaFreeHost(h_part[p]);
        cudaStreamDestroy(stream[p]);
    }
    return 0;
}
