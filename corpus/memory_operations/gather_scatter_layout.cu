// gather_scatter_layout.cu
// A grab-bag of data-movement kernels driven by parameters in __constant__
// memory:
//   * permute_gather / permute_scatter : affine permutation i -> (a*i + b) mod n
//   * aos_to_soa                       : de-interleave particle records, with the
//                                        channel order taken from constant memory
//   * copy_vec4                        : float4 vectorised copy with scalar tail
//   * fill_pattern                     : 32-bit pattern fill (a "memset" for words)

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(call)                                                                \
    do {                                                                        \
        cudaError_t e = (call);                                                 \
        if (e != cudaSuccess) {                                                 \
            printf("CUDA error: %s -> %s (line %d)\n", #call,                   \
                   cudaGetErrorString(e), __LINE__);                            \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

struct AffinePerm {
    unsigned int a, b, n;          // a must be coprime with n
};

constexpr int kChannels = 4;

__constant__ AffinePerm c_perm;
__constant__ int c_channelOrder[kChannels];   // output array k <- input channel order[k]

__device__ __forceinline__ unsigned int apply_perm(unsigned int i) {
    return (unsigned int)(((unsigned long long)c_perm.a * i + c_perm.b) % c_perm.n);
}

__global__ void permute_gather(const float* __restrict__ in, float* __restrict__ out) {
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < c_perm.n;
         i += gridDim.x * blockDim.x)
        out[i] = in[apply_perm(i)];
}

// Inverse of permute_gather: scatters the value back to where it came from.
__global__ void permute_scatter(const float* __restrict__ in, float* __restrict__ out) {
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < c_perm.n;
         i += gridDim.x * blockDim.x)
        out[apply_perm(i)] = in[i];
}

__global__ void aos_to_soa(const float* __restrict__ aos, float* __restrict__ soa, int count) {
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < count; p += gridDim.x * blockDim.x) {
#pragma unroll
        for (int k = 0; k < kChannels; ++k)
            soa[(size_t)k * count + p] = aos[(size_t)p * kChannels + c_channelOrder[k]];
    }
}

__global__ void copy_vec4(const float* __restrict__ src, float* __restrict__ dst, int n) {
    const int nVec = n / 4;
    const float4* s4 = reinterpret_cast<const float4*>(src);
    float4* d4 = reinterpret_cast<float4*>(dst);
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = tid; i < nVec; i += stride) d4[i] = s4[i];
    for (int i = nVec * 4 + tid; i < n; i += stride) dst[i] = src[i];   // tail
}

__global__ void fill_pattern(uint32_t* __restrict__ dst, uint32_t pattern, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        dst[i] = pattern ^ (uint32_t)i;
}

int main() {
    const int n = 1 << 20;             // elements for permutation / copy
    const int particles = 100003;      // deliberately odd
    const int threads = 256, blocks = 240;

    uint32_t seed = 0xC0FFEEu;
    auto next = [&seed]() { seed = seed * 1664525u + 1013904223u; return seed; };

    std::vector<float> hData(n), hAos((size_t)particles * kChannels);
    for (auto& v : hData) v = (float)(next() >> 8) / 65536.0f;
    for (auto& v : hAos) v = (float)(int)(next() % 20001) * 0.01f - 100.0f;

    AffinePerm perm{40503u, 977u, (unsigned int)n};   // odd a => coprime with 2^20
    int order[kChannels] = {3, 0, 2, 1};
    CK(cudaMemcpyToSymbol(c_perm, &perm, sizeof(perm)));
    CK(cudaMemcpyToSymbol(c_channelOrder, order, sizeof(order)));

    float *dData, *dPerm, *dBack, *dAos, *dSoa, *dCopy;
    uint32_t* dFill;
    CK(cudaMalloc(&dData, n * sizeof(float)));
    CK(cudaMalloc(&dPerm, n * sizeof(float)));
    CK(cudaMalloc(&dBack, n * sizeof(float)));
    CK(cudaMalloc(&dCopy, (n - 3) * sizeof(float)));
    CK(cudaMalloc(&dAos, hAos.size() * sizeof(float)));
    CK(cudaMalloc(&dSoa, hAos.size() * sizeof(float)));
    CK(cudaMalloc(&dFill, n * sizeof(uint32_t)));
    CK(cudaMemcpy(dData, hData.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dAos, hAos.data(), hAos.size() * sizeof(float), cudaMemcpyHostToDevice));

    permute_gather<<<blocks, threads>>>(dData, dPerm);
    permute_scatter<<<blocks, threads>>>(dPerm, dBack);
    aos_to_soa<<<blocks, threads>>>(dAos, dSoa, particles);
    copy_vec4<<<blocks, threads>>>(dData, dCopy, n - 3);   // length not a multiple of 4
    fill_pattern<<<blocks, threads>>>(dFill, 0xA5A5A5A5u, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    std::vector<float> hPerm(n), hBack(n), hCopy(n - 3), hSoa(hAos.size());
    std::vector<uint32_t> hFill(n);
    CK(cudaMemcpy(hPerm.data(), dPerm, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hBack.data(), dBack, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hCopy.data(), dCopy, (n - 3) * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hSoa.data(), dSoa, hSoa.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hFill.data(), dFill, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));

    int errs = 0;
    for (int i = 0; i < n; ++i) {
        unsigned int j = (unsigned int)(((unsigned long long)perm.a * i + perm.b) % perm.n);
        if (hPerm[i] != hData[j]) ++errs;
        if (hFill[i] != (0xA5A5A5A5u ^ (uint32_t)i)) ++errs;
    }
    bool roundTrip = memcmp(hBack.data(), hData.data(), n * sizeof(float)) == 0;
    bool copyOk = memcmp(hCopy.data(), hData.data(), (n - 3) * sizeof(float)) == 0;
    double soaSum[kChannels] = {0, 0, 0, 0};
    for (int k = 0; k < kChannels; ++k)
        for (int p = 0; p < particles; ++p) {
            float v = hSoa[(size_t)k * particles + p];
            if (v != hAos[(size_t)p * kChannels + order[k]]) ++errs;
            soaSum[k] += v;
        }

    printf("perm[0]=%.4f perm[n-1]=%.4f roundtrip=%s vec4copy=%s\n", hPerm[0], hPerm[n - 1],
           roundTrip ? "ok" : "bad", copyOk ? "ok" : "bad");
    printf("soa channel sums: %.2f %.2f %.2f %.2f\n", soaSum[0], soaSum[1], soaSum[2], soaSum[3]);
    printf("fill[12345]=0x%08X element errors=%d\n", hFill[12345], errs);

    void* bufs[] = {dData, dPerm, dBack, dCopy, dAos, dSoa, dFill};
    for (void* b : bufs) CK(cudaFree(b));
    return (errs == 0 && roundTrip && copyOk) ? 0 : 1;
}
