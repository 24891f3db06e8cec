// Collatz (3n + 1) trajectories for 2^20 pseudo-random starting values below 2^31.
// One thread follows one trajectory with 64-bit arithmetic until it reaches 1,
// recording the number of steps and the largest value visited (the peak fits in
// 64 bits for every start below 2^32). The program prints FNV-1a hashes of both
// result arrays, the longest trajectory found and a few samples.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__,       \
                    __LINE__, cudaGetErrorString(err_), #call);               \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const int COUNT = 1 << 20;

static uint64_t g_state = 0xA0761D6478BD642FULL;
static uint32_t lcg_next() {
    g_state = g_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(g_state >> 32);
}

__global__ void collatz(const uint32_t* __restrict__ starts, uint32_t* __restrict__ steps,
                        unsigned long long* __restrict__ peaks, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    unsigned long long v = starts[i];
    unsigned long long peak = v;
    uint32_t s = 0;
    while (v != 1ULL) {
        v = (v & 1ULL) ? 3ULL * v + 1ULL : v >> 1;
        if (v > peak) peak = v;
        ++s;
    }
    steps[i] = s;
    peaks[i] = peak;
}

int main(int argc, char** argv) {
    if (argc > 1) g_state = strtoull(argv[1], nullptr, 0);
    std::vector<uint32_t> hstart(COUNT), hsteps(COUNT);
    std::vector<unsigned long long> hpeak(COUNT);
    for (int i = 0; i < COUNT; ++i) hstart[i] = 1u + (lcg_next() & 0x7FFFFFFEu);

    uint32_t *dstart, *dsteps;
    unsigned long long* dpeak;
    CK(cudaMalloc(&dstart, COUNT * sizeof(uint32_t)));
    CK(cudaMalloc(&dsteps, COUNT * sizeof(uint32_t)));
    CK(cudaMalloc(&dpeak, COUNT * sizeof(unsigned long long)));
    CK(cudaMemcpy(dstart, hstart.data(), COUNT * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CK(cudaMemset(dsteps, 0xFF, COUNT * sizeof(uint32_t)));  // sentinels
    CK(cudaMemset(dpeak, 0xFF, COUNT * sizeof(unsigned long long)));

    const int threads = 256;
    collatz<<<(COUNT + threads - 1) / threads, threads>>>(dstart, dsteps, dpeak, COUNT);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hsteps.data(), dsteps, COUNT * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hpeak.data(), dpeak, COUNT * sizeof(unsigned long long), cudaMemcpyDeviceToHost));

    uint64_t hs = 1469598103934665603ULL, hp = 1469598103934665603ULL;
    unsigned long long total_steps = 0;
    int longest = 0;
    for (int i = 0; i < COUNT; ++i) {
        hs = (hs ^ hsteps[i]) * 1099511628211ULL;
        hp = (hp ^ (hpeak[i] & 0xFFFFFFFFULL)) * 1099511628211ULL;
        hp = (hp ^ (hpeak[i] >> 32)) * 1099511628211ULL;
        total_steps += hsteps[i];
        if (hsteps[i] > hsteps[longest]) longest = i;
    }
    printf("collatz trajectories = %d\n", COUNT);
    printf("checksum_steps 0x%016llx\n", (unsigned long long)hs);
    printf("checksum_peaks 0x%016llx\n", (unsigned long long)hp);
    printf("total_steps = %llu\n", total_steps);
    printf("longest: start %u steps %u peak %llu\n", hstart[longest], hsteps[longest], hpeak[longest]);
    const int samples[3] = {0, COUNT / 2, COUNT - 1};
    for (int s = 0; s < 3; ++s)
        printf("start %u -> steps %u peak %llu\n", hstart[samples[s]], hsteps[samples[s]], hpeak[samples[s]]);

    CK(cudaFree(dstart)); CK(cudaFree(dsteps)); CK(cudaFree(dpeak));
    return 0;
}
