// Metropolis Monte Carlo of the 2D Ising model on two 1024x1024 periodic lattices (T = 2.1 and
// T = 2.6), each simulated on its own CUDA stream. A sweep is two checkerboard launches (red then
// black sites, so updates never race); acceptance uses a counter-based hash of (sweep, site)
// compared with integer thresholds for exp(-beta*dE), so the chain is exactly reproducible. Every
// 10 sweeps a kernel reduces magnetisation and energy in shared memory and adds them to a
// per-measurement slot with integer atomics. The host prints lattice hashes and the observables.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, __LINE__, \
                    cudaGetErrorString(err_));                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

constexpr int L = 1024, NSITES = L * L, SWEEPS = 200, MEASURE_EVERY = 10;
constexpr int NMEAS = SWEEPS / MEASURE_EVERY, BLOCK = 256;

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Updates every site of one colour ((row + col) & 1 == color); thresholds are P(accept) * 2^24.
__global__ void checkerboard_update(signed char* __restrict__ spin, int color, uint32_t sweep,
                                    uint64_t seed, uint32_t thr4, uint32_t thr8) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= NSITES / 2) return;
    const int row = k / (L / 2);
    const int col = 2 * (k % (L / 2)) + ((row + color) & 1);
    const int site = row * L + col;
    const int up = ((row - 1) & (L - 1)) * L + col, down = ((row + 1) & (L - 1)) * L + col;
    const int left = row * L + ((col - 1) & (L - 1)), right = row * L + ((col + 1) & (L - 1));
    const int s = spin[site];
    const int dE = 2 * s * (spin[up] + spin[down] + spin[left] + spin[right]);  // in {-8,-4,0,4,8}
    bool flip = dE <= 0;
    if (!flip) {
        uint64_t h = splitmix64(seed ^ ((uint64_t)sweep << 32) ^ (uint64_t)site);
        uint32_t r = (uint32_t)(h >> 40);  // 24 random bits
        flip = r < (dE == 4 ? thr4 : thr8);
    }
    if (flip) spin[site] = (signed char)(-s);
}

// Adds the total magnetisation and the energy (-sum over right and down bonds) into acc[0..1].
__global__ void measure(const signed char* __restrict__ spin, int* __restrict__ acc) {
    __shared__ int s_mag[BLOCK];
    __shared__ int s_en[BLOCK];
    const int tid = threadIdx.x;
    int mag = 0, en = 0;
    for (int i = blockIdx.x * BLOCK + tid; i < NSITES; i += gridDim.x * BLOCK) {
        const int r = i / L, c = i % L;
        const int s = spin[i];
        mag += s;
        en -= s * (spin[r * L + ((c + 1) & (L - 1))] + spin[((r + 1) & (L - 1)) * L + c]);
    }
    s_mag[tid] = mag;
    s_en[tid] = en;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half) {
            s_mag[tid] += s_mag[tid + half];
            s_en[tid] += s_en[tid + half];
        }
        __syncthreads();
    }
    if (tid == 0) {
        atomicAdd(&acc[0], s_mag[0]);
        atomicAdd(&acc[1], s_en[0]);
    }
}

int main(int argc, char** argv) {
    const double temps[2] = {2.1, 2.6};
    const uint64_t seeds[2] = {0x1517A5EEDull, 0x2718281828ull};
    cudaStream_t streams[2];
    signed char *h_spin[2], *d_spin[2];
    int *h_acc[2], *d_acc[2];
    uint32_t thr4[2], thr8[2];

    uint64_t lcg = 0x0123456789ABCDEFull;
    if (argc > 1) lcg = strtoull(argv[1], nullptr, 0);
    for (int l = 0; l < 2; ++l) {
        CHECK(cudaStreamCreate(&streams[l]));
        CHECK(cudaMallocHost(&h_spin[l], NSITES));
        CHECK(cudaMallocHost(&h_acc[l], 2 * NMEAS * sizeof(int)));
        CHECK(cudaMalloc(&d_spin[l], NSITES));
        CHECK(cudaMalloc(&d_acc[l], 2 * NMEAS * sizeof(int)));
        for (int i = 0; i < NSITES; ++i) {  // hot start: random spins from a 64-bit LCG
            lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
            h_spin[l][i] = (lcg >> 63) ? 1 : -1;
        }
        const double beta = 1.0 / temps[l];
        thr4[l] = (uint32_t)(std::exp(-4.0 * beta) * 16777216.0);
        thr8[l] = (uint32_t)(std::exp(-8.0 * beta) * 16777216.0);
        CHECK(cudaMemcpyAsync(d_spin[l], h_spin[l], NSITES, cudaMemcpyHostToDevice, streams[l]));
        CHECK(cudaMemsetAsync(d_acc[l], 0, 2 * NMEAS * sizeof(int), streams[l]));
    }

    const int update_blocks = (NSITES / 2 + BLOCK - 1) / BLOCK;
    for (int sweep = 0; sweep < SWEEPS; ++sweep) {
        for (int l = 0; l < 2; ++l) {  // interleave the two independent chains' launches
            for (int color = 0; color < 2; ++color) {
                checkerboard_update<<<update_blocks, BLOCK, 0, streams[l]>>>(
                    d_spin[l], color, (uint32_t)(2 * sweep + color), seeds[l], thr4[l], thr8[l]);
                CHECK(cudaGetLastError());
            }
            if ((sweep + 1) % MEASURE_EVERY == 0) {
                int m = (sweep + 1) / MEASURE_EVERY - 1;
                measure<<<256, BLOCK, 0, streams[l]>>>(d_spin[l], d_acc[l] + 2 * m);
                CHECK(cudaGetLastError());
            }
        }
    }
    for (int l = 0; l < 2; ++l) {
        CHECK(cudaMemcpyAsync(h_spin[l], d_spin[l], NSITES, cudaMemcpyDeviceToHost, streams[l]));
        CHECK(cudaMemcpyAsync(h_acc[l], d_acc[l], 2 * NMEAS * sizeof(int), cudaMemcpyDeviceToHost,
                              streams[l]));
    }
    for (int l = 0; l < 2; ++l) CHECK(cudaStreamSynchronize(streams[l]));
    CHECK(cudaDeviceSynchronize());

    for (int l = 0; l < 2; ++l) {
        uint64_t lat_hash = 0xCBF29CE484222325ull, acc_hash = 0xCBF29CE484222325ull;  // FNV-1a
        for (int i = 0; i < NSITES; ++i) lat_hash = (lat_hash ^ (uint8_t)h_spin[l][i]) * 0x100000001B3ull;
        for (int i = 0; i < 2 * NMEAS; ++i) acc_hash = (acc_hash ^ (uint32_t)h_acc[l][i]) * 0x100000001B3ull;
        double abs_m = 0.0, e = 0.0;
        for (int m = NMEAS / 2; m < NMEAS; ++m) {  // second half of the run
            abs_m += std::fabs((double)h_acc[l][2 * m]) / NSITES;
            e += (double)h_acc[l][2 * m + 1] / NSITES;
        }
        abs_m /= NMEAS - NMEAS / 2;
        e /= NMEAS - NMEAS / 2;
        printf("T=%.2f lattice hash 0x%016llx measurement hash 0x%016llx\n", temps[l],
               (unsigned long long)lat_hash, (unsigned long long)acc_hash);
        printf("T=%.2f final M = %d E = %d\n", temps[l], h_acc[l][2 * NMEAS - 2], h_acc[l][2 * NMEAS - 1]);
        printf("T=%.2f <|m|> = %.10e <e> = %.10e\n", temps[l], abs_m, e);
    }

    for (int l = 0; l < 2; ++l) {
        CHECK(cudaFree(d_spin[l]));
        CHECK(cudaFree(d_acc[l]));
        CHECK(cudaFreeHost(h_spin[l]));
        CHECK(cudaFreeHost(h_acc[l]));
        CHECK(cudaStreamDestroy(streams[l]));
    }
    return 0;
}
