// nbody_tiled.cu - all-pairs gravitational N-body with shared-memory tiling.
// Each block stages a tile of bodies (position + mass packed in float4) into
// dynamically sized shared memory, every thread accumulates the acceleration
// on its own body, and a kick-drift-kick leapfrog advances the system.
#include "physics_common.cuh"
#include <vector>

struct SimParams {
    float dt;
    float softening2;
    float G;
};
__constant__ SimParams c_params;

__device__ inline float3 body_body_accel(float4 bi, float4 bj, float3 acc) {
    float3 r = make_float3(bj.x - bi.x, bj.y - bi.y, bj.z - bi.z);
    float dist2 = length2(r) + c_params.softening2;
    float inv = rsqrtf(dist2);
    float s = bj.w * inv * inv * inv;  // m_j / |r|^3
    return acc + s * r;
}

// Dynamic shared memory: blockDim.x float4 entries.
__global__ void compute_accel(const float4* __restrict__ pos, float3* __restrict__ acc, int n) {
    extern __shared__ float4 tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = (i < n) ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    float3 a = make_float3(0.f, 0.f, 0.f);

    for (int base = 0; base < n; base += blockDim.x) {
        int j = base + threadIdx.x;
        tile[threadIdx.x] = (j < n) ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);  // w=0: no force
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < blockDim.x; ++k) a = body_body_accel(me, tile[k], a);
        __syncthreads();
    }
    if (i < n) acc[i] = c_params.G * a;
}

// Half kick + drift (first half of leapfrog).
__global__ void kick_drift(float4* pos, float3* vel, const float3* acc, int n) {
    float dt = c_params.dt;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float3 v = vel[i] + (0.5f * dt) * acc[i];
        float4 p = pos[i];
        p.x += dt * v.x; p.y += dt * v.y; p.z += dt * v.z;
        pos[i] = p;
        vel[i] = v;
    }
}

__global__ void kick(float3* vel, const float3* acc, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        vel[i] = vel[i] + (0.5f * c_params.dt) * acc[i];
}

// Kinetic energy and momentum per block (static shared reduction).
__global__ void kinetic_energy(const float4* pos, const float3* vel, int n, float4* block_out) {
    __shared__ float4 red[256];
    float4 loc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float m = pos[i].w;
        float3 v = vel[i];
        loc.x += 0.5f * m * length2(v);
        loc.y += m * v.x; loc.z += m * v.y; loc.w += m * v.z;
    }
    red[threadIdx.x] = loc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            red[threadIdx.x].x += red[threadIdx.x + s].x;
            red[threadIdx.x].y += red[threadIdx.x + s].y;
            red[threadIdx.x].z += red[threadIdx.x + s].z;
            red[threadIdx.x].w += red[threadIdx.x + s].w;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) block_out[blockIdx.x] = red[0];
}

int main() {
    const int n = 4096, block = 256, steps = 10, red_blocks = 16;
    SimParams hp = {0.002f, 0.01f * 0.01f, 1.0f};
    CUDA_CHECK(cudaMemcpyToSymbol(c_params, &hp, sizeof(SimParams)));

    // Plummer-ish cloud: random points in a unit ball with small rotation.
    Lcg rng(42);
    std::vector<float4> h_pos(n);
    std::vector<float3> h_vel(n);
    for (int i = 0; i < n; ++i) {
        float x, y, z;
        do { x = rng.range(-1, 1); y = rng.range(-1, 1); z = rng.range(-1, 1); } while (x * x + y * y + z * z > 1.f);
        h_pos[i] = make_float4(x, y, z, 1.0f / n);
        h_vel[i] = make_float3(-0.3f * y, 0.3f * x, 0.f);
    }

    float4 *d_pos, *d_red;
    float3 *d_vel, *d_acc;
    CUDA_CHECK(cudaMalloc(&d_pos, n * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&d_vel, n * sizeof(float3)));
    CUDA_CHECK(cudaMalloc(&d_acc, n * sizeof(float3)));
    CUDA_CHECK(cudaMalloc(&d_red, red_blocks * sizeof(float4)));
    CUDA_CHECK(cudaMemcpy(d_pos, h_pos.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_vel, h_vel.data(), n * sizeof(float3), cudaMemcpyHostToDevice));

    const int grid = (n + block - 1) / block;
    const size_t smem = block * sizeof(float4);
    compute_accel<<<grid, block, smem>>>(d_pos, d_acc, n);
    CUDA_CHECK(cudaGetLastError());
    for (int s = 0; s < steps; ++s) {
        kick_drift<<<grid, block>>>(d_pos, d_vel, d_acc, n);
        compute_accel<<<grid, block, smem>>>(d_pos, d_acc, n);
        kick<<<grid, block>>>(d_vel, d_acc, n);
        CUDA_CHECK(cudaGetLastError());
    }
    kinetic_energy<<<red_blocks, 256>>>(d_pos, d_vel, n, d_red);
    CUDA_CHECK(cudaGetLastError());

    std::vector<float4> h_red(red_blocks);
    CUDA_CHECK(cudaMemcpy(h_red.data(), d_red, red_blocks * sizeof(float4), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_pos.data(), d_pos, n * sizeof(float4), cudaMemcpyDeviceToHost));
    double ke = 0, px = 0, py = 0, pz = 0, cx = 0;
    for (int b = 0; b < red_blocks; ++b) { ke += h_red[b].x; px += h_red[b].y; py += h_red[b].z; pz += h_red[b].w; }
    for (int i = 0; i < n; ++i) cx += h_pos[i].x;

    printf("bodies=%d steps=%d dt=%.4f\n", n, steps, hp.dt);
    printf("kinetic_energy=%.6f\n", ke);
    printf("momentum=(%.6f, %.6f, %.6f)\n", px, py, pz);
    printf("pos[0]=(%.4f, %.4f, %.4f) mean_x=%.6f\n", h_pos[0].x, h_pos[0].y, h_pos[0].z, cx / n);

    cudaFree(d_pos); cudaFree(d_vel); cudaFree(d_acc); cudaFree(d_red);
    return 0;
}
