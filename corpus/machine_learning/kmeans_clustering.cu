// kmeans_clustering.cu
// Lloyd's k-means on synthetic 4-D data.
//  * centroids are re-uploaded to __constant__ memory every iteration
//  * assign_and_accumulate: grid-stride over points, nearest centroid search,
//    per-block partial sums in dynamic shared memory, merged with 64-bit
//    atomicAdd. Sums use fixed point so the result is bit-reproducible no
//    matter in which order the atomics land.
//  * update_centroids: divide sums by counts (keeps old centroid if empty)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>

#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        cudaError_t e_ = (call);                                              \
        if (e_ != cudaSuccess) {                                              \
            fprintf(stderr, "CUDA error %s @ %s:%d\n", cudaGetErrorString(e_),\
                    __FILE__, __LINE__);                                      \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define DIM 4
#define K_CLUSTERS 8
#define FIX_SCALE 1048576.0f      // 2^20 fixed-point scale for accumulation

__constant__ float c_centroids[K_CLUSTERS * DIM];

__device__ __forceinline__ unsigned long long to_fixed(float v)
{
    return (unsigned long long)__float2ll_rn(v * FIX_SCALE);   // two's complement wraps correctly
}

__device__ int nearest_centroid(const float* p, float* bestDist)
{
    int best = 0;
    float bd = 3.4e38f;
#pragma unroll
    for (int k = 0; k < K_CLUSTERS; ++k) {
        float d = 0.0f;
#pragma unroll
        for (int j = 0; j < DIM; ++j) {
            float diff = p[j] - c_centroids[k * DIM + j];
            d += diff * diff;
        }
        if (d < bd) { bd = d; best = k; }
    }
    *bestDist = bd;
    return best;
}

// globalAcc layout: [K*DIM coordinate sums][K counts][1 inertia]
__global__ void assign_and_accumulate(const float* __restrict__ pts, int n,
                                      int* __restrict__ labels,
                                      unsigned long long* __restrict__ globalAcc,
                                      unsigned int* __restrict__ changed)
{
    extern __shared__ unsigned long long s_acc[];     // K*DIM + K + 1 entries
    const int accLen = K_CLUSTERS * DIM + K_CLUSTERS + 1;
    for (int i = threadIdx.x; i < accLen; i += blockDim.x) s_acc[i] = 0ull;
    __syncthreads();

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float p[DIM];
#pragma unroll
        for (int j = 0; j < DIM; ++j) p[j] = pts[(size_t)i * DIM + j];
        float dist;
        int k = nearest_centroid(p, &dist);
        if (labels[i] != k) { labels[i] = k; atomicAdd(changed, 1u); }
#pragma unroll
        for (int j = 0; j < DIM; ++j) atomicAdd(&s_acc[k * DIM + j], to_fixed(p[j]));
        atomicAdd(&s_acc[K_CLUSTERS * DIM + k], 1ull);
        atomicAdd(&s_acc[K_CLUSTERS * DIM + K_CLUSTERS], to_fixed(dist));
    }
    __syncthreads();

    for (int i = threadIdx.x; i < accLen; i += blockDim.x)
        if (s_acc[i]) atomicAdd(&globalAcc[i], s_acc[i]);
}

__global__ void update_centroids(const unsigned long long* __restrict__ acc,
                                 float* __restrict__ centroids)
{
    int t = threadIdx.x;
    if (t >= K_CLUSTERS * DIM) return;
    int k = t / DIM;
    unsigned long long cnt = acc[K_CLUSTERS * DIM + k];
    if (cnt == 0ull) return;                               // empty cluster: keep position
    long long sum = (long long)acc[t];
    centroids[t] = (float)((double)sum / (double)FIX_SCALE / (double)cnt);
}

int main()
{
    const int n = 1 << 16;
    const int maxIters = 30;

    // Synthetic blobs around K_CLUSTERS hidden centres
    uint32_t s = 777u;
    auto rnd = [&s]() { s = s * 1664525u + 1013904223u; return (float)(s >> 8) / 16777216.0f; };
    float centres[K_CLUSTERS][DIM];
    for (int k = 0; k < K_CLUSTERS; ++k)
        for (int j = 0; j < DIM; ++j) centres[k][j] = 16.0f * rnd() - 8.0f;
    std::vector<float> h_pts((size_t)n * DIM);
    for (int i = 0; i < n; ++i) {
        int k = i % K_CLUSTERS;
        for (int j = 0; j < DIM; ++j) {
            float g = rnd();                                   // sum of 3 uniforms ~ normal
            g += rnd();
            g += rnd();
            g -= 1.5f;
            h_pts[(size_t)i * DIM + j] = centres[k][j] + 1.2f * g;
        }
    }
    // Initial centroids: first K points (a common, deterministic choice)
    std::vector<float> h_cent(h_pts.begin(), h_pts.begin() + K_CLUSTERS * DIM);

    const int accLen = K_CLUSTERS * DIM + K_CLUSTERS + 1;
    float *d_pts, *d_cent;
    int* d_labels;
    unsigned long long* d_acc;
    unsigned int* d_changed;
    CUDA_CHECK(cudaMalloc(&d_pts, h_pts.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_cent, K_CLUSTERS * DIM * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_labels, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_acc, accLen * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&d_changed, sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(d_pts, h_pts.data(), h_pts.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_cent, h_cent.data(), K_CLUSTERS * DIM * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_labels, 0xFF, n * sizeof(int)));             // -1 = unassigned

    const int threads = 256, blocks = 64;
    const size_t shmem = accLen * sizeof(unsigned long long);
    std::vector<unsigned long long> h_acc(accLen);
    unsigned int changed = 0;
    int iter = 0;
    for (; iter < maxIters; ++iter) {
        CUDA_CHECK(cudaMemcpyToSymbol(c_centroids, d_cent, K_CLUSTERS * DIM * sizeof(float), 0,
                                      cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaMemset(d_acc, 0, accLen * sizeof(unsigned long long)));
        CUDA_CHECK(cudaMemset(d_changed, 0, sizeof(unsigned int)));
        assign_and_accumulate<<<blocks, threads, shmem>>>(d_pts, n, d_labels, d_acc, d_changed);
        CUDA_CHECK(cudaGetLastError());
        update_centroids<<<1, 32>>>(d_acc, d_cent);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpy(&changed, d_changed, sizeof(unsigned int), cudaMemcpyDeviceToHost));
        if (changed == 0) break;
    }
    CUDA_CHECK(cudaMemcpy(h_acc.data(), d_acc, accLen * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_cent.data(), d_cent, K_CLUSTERS * DIM * sizeof(float), cudaMemcpyDeviceToHost));

    double inertia = (double)(long long)h_acc[K_CLUSTERS * DIM + K_CLUSTERS] / FIX_SCALE;
    printf("k-means: n = %d, dim = %d, k = %d\n", n, DIM, K_CLUSTERS);
    const int iterations = iter < maxIters ? iter + 1 : maxIters;
    printf("%s after %d iterations (last changed = %u)\n",
           changed == 0 ? "converged" : "stopped", iterations, changed);
    printf("inertia = %.4f (mean sq. dist %.5f)\n", inertia, inertia / n);
    for (int k = 0; k < K_CLUSTERS; ++k)
        printf("cluster %d: count %6llu  centroid (%.4f, %.4f, %.4f, %.4f)\n", k,
               h_acc[K_CLUSTERS * DIM + k], h_cent[k * DIM + 0], h_cent[k * DIM + 1],
               h_cent[k * DIM + 2], h_cent[k * DIM + 3]);

    CUDA_CHECK(cudaFree(d_pts)); CUDA_CHECK(cudaFree(d_cent)); CUDA_CHECK(cudaFree(d_labels));
    CUDA_CHECK(cudaFree(d_acc)); CUDA_CHECK(cudaFree(d_changed));
    return 0;
}
