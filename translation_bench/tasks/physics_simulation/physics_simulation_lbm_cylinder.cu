// Lattice-Boltzmann (D2Q9, BGK collision) flow past a cylinder in a 512x256 channel: periodic in
// x, solid walls at the top and bottom rows, halfway bounce-back on every solid cell, driven by
// a constant body force. 600 fused pull-stream + collide steps ping-pong between two population
// arrays; a final kernel computes density and velocity per cell and per-block partial sums of
// mass and kinetic energy with a fixed shared-memory tree (summed on the host in block order).
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, cudaGetErrorString(err_));                              \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static constexpr int NX = 512, NY = 256, NCELL = NX * NY;
static constexpr int STEPS = 600;
static constexpr float OMEGA = 1.0f / 0.56f;   // 1 / relaxation time
static constexpr float FORCE_X = 2.0e-6f;
static constexpr float U0 = 0.04f;
static constexpr int RED_THREADS = 256;

__constant__ int c_cx[9] = {0, 1, 0, -1, 0, 1, -1, -1, 1};
__constant__ int c_cy[9] = {0, 0, 1, 0, -1, 1, 1, -1, -1};
__constant__ int c_opp[9] = {0, 3, 4, 1, 2, 7, 8, 5, 6};
__constant__ float c_w[9] = {4.0f / 9, 1.0f / 9, 1.0f / 9, 1.0f / 9, 1.0f / 9,
                             1.0f / 36, 1.0f / 36, 1.0f / 36, 1.0f / 36};

__device__ __forceinline__ float feq(int q, float rho, float ux, float uy) {
    float cu = 3.0f * (c_cx[q] * ux + c_cy[q] * uy);
    return c_w[q] * rho * (1.0f + cu + 0.5f * cu * cu - 1.5f * (ux * ux + uy * uy));
}

// Populations are stored structure-of-arrays: f[q * NCELL + cell].
__global__ void init_populations(float* __restrict__ f, const unsigned char* __restrict__ solid) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= NX || y >= NY) return;
    int cell = y * NX + x;
    float ux = solid[cell] ? 0.0f : U0;
    for (int q = 0; q < 9; ++q) f[q * NCELL + cell] = feq(q, 1.0f, ux, 0.0f);
}

__global__ void stream_collide(const float* __restrict__ fin, float* __restrict__ fout,
                               const unsigned char* __restrict__ solid) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= NX || y >= NY) return;
    int cell = y * NX + x;
    if (solid[cell]) {  // inert solid cells keep the rest equilibrium
        for (int q = 0; q < 9; ++q) fout[q * NCELL + cell] = c_w[q];
        return;
    }
    float f[9];
    float rho = 0.0f, mx = 0.0f, my = 0.0f;
    for (int q = 0; q < 9; ++q) {
        int xs = (x - c_cx[q] + NX) % NX, ys = (y - c_cy[q] + NY) % NY;
        int src = ys * NX + xs;
        // Pull streaming; a population that would come out of a solid cell is the one this
        // cell sent towards it, reflected (halfway bounce-back).
        f[q] = solid[src] ? fin[c_opp[q] * NCELL + cell] : fin[q * NCELL + src];
        rho += f[q];
        mx += c_cx[q] * f[q];
        my += c_cy[q] * f[q];
    }
    float ux = mx / rho, uy = my / rho;
    for (int q = 0; q < 9; ++q) {
        float post = f[q] - OMEGA * (f[q] - feq(q, rho, ux, uy));
        fout[q * NCELL + cell] = post + 3.0f * c_w[q] * c_cx[q] * FORCE_X;
    }
}

// Macroscopic fields and per-block partial sums (mass, kinetic energy) over fluid cells.
__global__ void macroscopic(const float* __restrict__ f, const unsigned char* __restrict__ solid,
                            float* __restrict__ rho_out, float2* __restrict__ u_out,
                            float2* __restrict__ partials) {
    __shared__ float s_mass[RED_THREADS];
    __shared__ float s_ke[RED_THREADS];
    int cell = blockIdx.x * RED_THREADS + threadIdx.x;
    float rho = 0.0f, ux = 0.0f, uy = 0.0f;
    if (cell < NCELL && !solid[cell]) {
        float mx = 0.0f, my = 0.0f;
        for (int q = 0; q < 9; ++q) {
            float v = f[q * NCELL + cell];
            rho += v;
            mx += c_cx[q] * v;
            my += c_cy[q] * v;
        }
        ux = mx / rho;
        uy = my / rho;
    }
    if (cell < NCELL) {
        rho_out[cell] = rho;
        u_out[cell] = make_float2(ux, uy);
    }
    s_mass[threadIdx.x] = rho;
    s_ke[threadIdx.x] = 0.5f * rho * (ux * ux + uy * uy);
    __syncthreads();
    for (int stride = RED_THREADS / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            s_mass[threadIdx.x] += s_mass[threadIdx.x + stride];
            s_ke[threadIdx.x] += s_ke[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = make_float2(s_mass[0], s_ke[0]);
}

static double weighted_sum(const float* v, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += (double)v[i] * (double)(i % 1000 + 1);
    return s;
}

int main(int argc, char** argv) {
    // Geometry: channel walls plus a cylinder of radius NY/10 at (NX/4, NY/2 + 3).
    std::vector<unsigned char> h_solid(NCELL);
    // optional argv[1] sets the cylinder radius (taken modulo NY / 4)
    const int cx = NX / 4, cy = NY / 2 + 3,
              r = argc > 1 ? (int)(strtoull(argv[1], nullptr, 0) % (NY / 4)) : NY / 10;
    int nsolid = 0;
    for (int y = 0; y < NY; ++y)
        for (int x = 0; x < NX; ++x) {
            bool s = (y == 0 || y == NY - 1 || (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r);
            h_solid[y * NX + x] = s ? 1 : 0;
            nsolid += s;
        }

    const int nblocks = (NCELL + RED_THREADS - 1) / RED_THREADS;
    unsigned char* d_solid;
    float *d_f[2], *d_rho;
    float2 *d_u, *d_partials;
    CHECK(cudaMalloc(&d_solid, NCELL));
    CHECK(cudaMalloc(&d_f[0], 9 * NCELL * sizeof(float)));
    CHECK(cudaMalloc(&d_f[1], 9 * NCELL * sizeof(float)));
    CHECK(cudaMalloc(&d_rho, NCELL * sizeof(float)));
    CHECK(cudaMalloc(&d_u, NCELL * sizeof(float2)));
    CHECK(cudaMalloc(&d_partials, nblocks * sizeof(float2)));
    CHECK(cudaMemcpy(d_solid, h_solid.data(), NCELL, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_f[0], 0xFF, 9 * NCELL * sizeof(float)));  // NaN sentinels
    CHECK(cudaMemset(d_f[1], 0xFF, 9 * NCELL * sizeof(float)));
    CHECK(cudaMemset(d_rho, 0xFF, NCELL * sizeof(float)));
    CHECK(cudaMemset(d_u, 0xFF, NCELL * sizeof(float2)));
    CHECK(cudaMemset(d_partials, 0xFF, nblocks * sizeof(float2)));

    dim3 blk(64, 4), grd(NX / 64, NY / 4);
    init_populations<<<grd, blk>>>(d_f[0], d_solid);
    CHECK(cudaGetLastError());
    int cur = 0;
    for (int s = 0; s < STEPS; ++s) {
        stream_collide<<<grd, blk>>>(d_f[cur], d_f[1 - cur], d_solid);
        CHECK(cudaGetLastError());
        cur = 1 - cur;
    }
    macroscopic<<<nblocks, RED_THREADS>>>(d_f[cur], d_solid, d_rho, d_u, d_partials);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    std::vector<float> rho(NCELL), u(2 * NCELL), part(2 * nblocks), f(9 * NCELL);
    CHECK(cudaMemcpy(rho.data(), d_rho, NCELL * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(u.data(), d_u, NCELL * sizeof(float2), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(part.data(), d_partials, nblocks * sizeof(float2), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(f.data(), d_f[cur], 9 * NCELL * sizeof(float), cudaMemcpyDeviceToHost));

    double mass = 0.0, ke = 0.0;
    for (int b = 0; b < nblocks; ++b) { mass += part[2 * b]; ke += part[2 * b + 1]; }
    printf("solid cells %d, fluid cells %d\n", nsolid, NCELL - nsolid);
    printf("total mass %.10e\n", mass);
    printf("kinetic energy %.10e\n", ke);
    printf("checksum_rho %.10e\n", weighted_sum(rho.data(), rho.size()));
    printf("checksum_u %.10e\n", weighted_sum(u.data(), u.size()));
    printf("checksum_f %.10e\n", weighted_sum(f.data(), f.size()));
    const int probes[3] = {(NY / 2) * NX + NX / 2, (NY / 2 + 3) * NX + NX / 4 + r + 2, 5 * NX + 7};
    for (int p = 0; p < 3; ++p) {
        int c = probes[p];
        printf("cell[%d] rho = %.10e u = (%.10e, %.10e)\n", c, (double)rho[c], (double)u[2 * c],
               (double)u[2 * c + 1]);
    }

    CHECK(cudaFree(d_solid)); CHECK(cudaFree(d_f[0])); CHECK(cudaFree(d_f[1]));
    CHECK(cudaFree(d_rho)); CHECK(cudaFree(d_u)); CHECK(cudaFree(d_partials));
    return 0;
}
