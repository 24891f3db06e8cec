// ising_checkerboard_streams.cu - 2D Ising model, Metropolis checkerboard
// updates. Two independent replicas at different temperatures run
// concurrently, each in its own CUDA stream with async copies from pinned
// host memory. Acceptance probabilities live in __constant__ memory.
#include "physics_common.cuh"

#define L 256
#define NUM_REPLICAS 2
#define TILE 16

// c_accept[r][k] = min(1, exp(-beta_r * dE)) for dE = 2*s*sum, k = (s*sum + 4) / 2
__constant__ float c_accept[NUM_REPLICAS][5];

__device__ inline int wrap(int i) { return (i + L) & (L - 1); }

__device__ inline int neighbour_sum(const signed char* spin, int x, int y) {
    return spin[y * L + wrap(x - 1)] + spin[y * L + wrap(x + 1)] +
           spin[wrap(y - 1) * L + x] + spin[wrap(y + 1) * L + x];
}

__global__ void metropolis_sweep(signed char* spin, int replica, int parity, uint32_t step, uint32_t seed) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= L || y >= L || ((x + y) & 1) != parity) return;
    int idx = y * L + x;
    int s = spin[idx];
    int k = (s * neighbour_sum(spin, x, y) + 4) >> 1;
    float u = hash_uniform(seed + (uint32_t)idx, step);
    if (u < c_accept[replica][k]) spin[idx] = (signed char)(-s);
}

// Magnetisation and bond energy: block tree-reduction in static shared
// memory, one integer atomicAdd per block (exact, order independent).
__global__ void observables(const signed char* spin, int* mag_out, int* energy_out) {
    __shared__ int s_mag[TILE * TILE];
    __shared__ int s_eng[TILE * TILE];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int s = spin[y * L + x];
    s_mag[t] = s;
    // count right and down bonds only so each bond is counted once
    s_eng[t] = -s * (spin[y * L + wrap(x + 1)] + spin[wrap(y + 1) * L + x]);
    __syncthreads();
    for (int stride = (TILE * TILE) / 2; stride > 0; stride >>= 1) {
        if (t < stride) { s_mag[t] += s_mag[t + stride]; s_eng[t] += s_eng[t + stride]; }
        __syncthreads();
    }
    if (t == 0) { atomicAdd(mag_out, s_mag[0]); atomicAdd(energy_out, s_eng[0]); }
}

int main() {
    const float temps[NUM_REPLICAS] = {1.8f, 3.2f};
    const int sweeps = 200;

    float h_accept[NUM_REPLICAS][5];
    for (int r = 0; r < NUM_REPLICAS; ++r)
        for (int k = 0; k < 5; ++k) {
            float dE = 2.0f * (2 * k - 4);
            h_accept[r][k] = dE <= 0.f ? 1.0f : expf(-dE / temps[r]);
        }
    CUDA_CHECK(cudaMemcpyToSymbol(c_accept, h_accept, sizeof(h_accept)));

    const size_t lattice_bytes = L * L * sizeof(signed char);
    signed char* h_spin[NUM_REPLICAS];
    int* h_obs[NUM_REPLICAS];
    signed char* d_spin[NUM_REPLICAS];
    int* d_obs[NUM_REPLICAS];
    cudaStream_t streams[NUM_REPLICAS];

    Lcg rng(99);
    for (int r = 0; r < NUM_REPLICAS; ++r) {
        CUDA_CHECK(cudaStreamCreate(&streams[r]));
        CUDA_CHECK(cudaMallocHost(&h_spin[r], lattice_bytes));
        CUDA_CHECK(cudaMallocHost(&h_obs[r], 2 * sizeof(int)));
        CUDA_CHECK(cudaMalloc(&d_spin[r], lattice_bytes));
        CUDA_CHECK(cudaMalloc(&d_obs[r], 2 * sizeof(int)));
        for (int i = 0; i < L * L; ++i) h_spin[r][i] = (rng.u32() & 1) ? 1 : -1;  // hot start
    }

    dim3 block(TILE, TILE), grid(L / TILE, L / TILE);
    for (int r = 0; r < NUM_REPLICAS; ++r) {
        CUDA_CHECK(cudaMemcpyAsync(d_spin[r], h_spin[r], lattice_bytes, cudaMemcpyHostToDevice, streams[r]));
        CUDA_CHECK(cudaMemsetAsync(d_obs[r], 0, 2 * sizeof(int), streams[r]));
        for (int s = 0; s < sweeps; ++s) {
            metropolis_sweep<<<grid, block, 0, streams[r]>>>(d_spin[r], r, 0, 2 * s, 1234u + 77u * r);
            metropolis_sweep<<<grid, block, 0, streams[r]>>>(d_spin[r], r, 1, 2 * s + 1, 1234u + 77u * r);
        }
        observables<<<grid, block, 0, streams[r]>>>(d_spin[r], d_obs[r], d_obs[r] + 1);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpyAsync(h_obs[r], d_obs[r], 2 * sizeof(int), cudaMemcpyDeviceToHost, streams[r]));
        CUDA_CHECK(cudaMemcpyAsync(h_spin[r], d_spin[r], lattice_bytes, cudaMemcpyDeviceToHost, streams[r]));
    }

    for (int r = 0; r < NUM_REPLICAS; ++r) {
        CUDA_CHECK(cudaStreamSynchronize(streams[r]));
        int up = 0;
        for (int i = 0; i < L * L; ++i) up += (h_spin[r][i] > 0);
        double m = (double)h_obs[r][0] / (L * L);
        double e = (double)h_obs[r][1] / (L * L);
        printf("replica %d: T=%.2f sweeps=%d |m|=%.4f e=%.4f up_spins=%d\n",
               r, temps[r], sweeps, fabs(m), e, up);
    }

    for (int r = 0; r < NUM_REPLICAS; ++r) {
        cudaFree(d_spin[r]); cudaFree(d_obs[r]);
        cudaFreeHost(h_spin[r]); cudaFreeHost(h_obs[r]);
        cudaStreamDestroy(streams[r]);
    }
    return 0;
}
