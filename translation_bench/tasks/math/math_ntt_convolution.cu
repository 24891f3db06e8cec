// Exact polynomial multiplication with the number-theoretic transform (NTT)
// modulo the prime p = 998244353 = 119 * 2^23 + 1 (primitive root 3).
// Two polynomials of 2^19 coefficients are zero-padded to n = 2^20 and
// transformed concurrently on two CUDA streams: a bit-reversal permutation, one
// shared-memory kernel for the first 10 butterfly stages (1024-element tiles),
// then one launch per remaining stage. Pointwise products are transformed back
// with the inverse twiddles and scaled by n^-1. The program prints a hash of the
// product, host checks (sampled coefficients, evaluation at x = 1 and x = 2).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <initializer_list>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__,       \
                    __LINE__, cudaGetErrorString(err_), #call);               \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const uint32_t P = 998244353u;
static const int LOGN = 20;
static const int N = 1 << LOGN;
static const int M = N / 2;          // coefficients per input polynomial
static const int TILE = 1024;        // elements per block in the shared-memory stages
static const int TILE_THREADS = TILE / 2;

__host__ __device__ inline uint32_t mulmod(uint32_t a, uint32_t b) {
    return (uint32_t)((uint64_t)a * b % P);
}
__device__ inline uint32_t addmod(uint32_t a, uint32_t b) {
    uint32_t s = a + b;  // a, b < p < 2^30: no overflow
    return s >= P ? s - P : s;
}
__device__ inline uint32_t submod(uint32_t a, uint32_t b) { return a >= b ? a - b : a + P - b; }

static uint32_t powmod(uint32_t b, uint64_t e) {
    uint32_t r = 1;
    for (; e; e >>= 1, b = mulmod(b, b))
        if (e & 1) r = mulmod(r, b);
    return r;
}

static uint64_t g_state = 0x1B873593CC9E2D51ULL;
static uint32_t lcg_mod_p() {
    g_state = g_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)((g_state >> 32) % P);
}

__global__ void bit_reverse(const uint32_t* __restrict__ src, uint32_t* __restrict__ dst, int logn) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (1u << logn)) dst[__brev(i) >> (32 - logn)] = src[i];
}

// Stages len = 2 .. TILE, each block on its own TILE-element tile in shared memory.
__global__ void ntt_tile_stages(uint32_t* a, const uint32_t* __restrict__ tw, int n) {
    __shared__ uint32_t s[TILE];
    const int t = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * TILE;
    s[t] = a[base + t];
    s[t + TILE_THREADS] = a[base + t + TILE_THREADS];
    __syncthreads();
    for (int len = 2; len <= TILE; len <<= 1) {
        const int half = len >> 1;
        const int j = t & (half - 1);
        const int i = (t / half) * len + j;
        const uint32_t w = tw[(size_t)j * (n / len)];
        const uint32_t u = s[i], v = mulmod(s[i + half], w);
        s[i] = addmod(u, v);
        s[i + half] = submod(u, v);
        __syncthreads();
    }
    a[base + t] = s[t];
    a[base + t + TILE_THREADS] = s[t + TILE_THREADS];
}

// One butterfly stage of length len over the whole array (n/2 butterflies).
__global__ void ntt_stage(uint32_t* a, const uint32_t* __restrict__ tw, int n, int len) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n / 2) return;
    const int half = len >> 1;
    const int j = t & (half - 1);
    const size_t i = (size_t)(t / half) * len + j;
    const uint32_t w = tw[(size_t)j * (n / len)];
    const uint32_t u = a[i], v = mulmod(a[i + half], w);
    a[i] = addmod(u, v);
    a[i + half] = submod(u, v);
}

__global__ void pointwise_scale(const uint32_t* __restrict__ x, const uint32_t* __restrict__ y,
                                uint32_t scale, uint32_t* __restrict__ out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = mulmod(mulmod(x[i], y[i]), scale);
}

// Full transform src -> dst (dst in natural order), all on one stream.
static void ntt(const uint32_t* src, uint32_t* dst, const uint32_t* tw, cudaStream_t st) {
    bit_reverse<<<N / 256, 256, 0, st>>>(src, dst, LOGN);
    CK(cudaGetLastError());
    ntt_tile_stages<<<N / TILE, TILE_THREADS, 0, st>>>(dst, tw, N);
    CK(cudaGetLastError());
    for (int len = 2 * TILE; len <= N; len <<= 1) {
        ntt_stage<<<(N / 2) / 256, 256, 0, st>>>(dst, tw, N, len);
        CK(cudaGetLastError());
    }
}

int main(int argc, char** argv) {
    if (argc > 1) g_state = strtoull(argv[1], nullptr, 0);
    std::vector<uint32_t> ha(N, 0), hb(N, 0), hc(N), tw(N / 2), itw(N / 2);
    for (int i = 0; i < M; ++i) ha[i] = lcg_mod_p();
    for (int i = 0; i < M; ++i) hb[i] = lcg_mod_p();
    const uint32_t w = powmod(3, (P - 1) / N), wi = powmod(w, P - 2);
    tw[0] = itw[0] = 1;
    for (int k = 1; k < N / 2; ++k) { tw[k] = mulmod(tw[k - 1], w); itw[k] = mulmod(itw[k - 1], wi); }
    const uint32_t ninv = powmod(N, P - 2);

    const size_t bytes = N * sizeof(uint32_t);
    uint32_t *da, *db, *fa, *fb, *fc, *dres, *dtw, *ditw;
    CK(cudaMalloc(&da, bytes)); CK(cudaMalloc(&db, bytes));
    CK(cudaMalloc(&fa, bytes)); CK(cudaMalloc(&fb, bytes));
    CK(cudaMalloc(&fc, bytes)); CK(cudaMalloc(&dres, bytes));
    CK(cudaMalloc(&dtw, bytes / 2)); CK(cudaMalloc(&ditw, bytes / 2));
    CK(cudaMemcpy(da, ha.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtw, tw.data(), bytes / 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ditw, itw.data(), bytes / 2, cudaMemcpyHostToDevice));
    for (uint32_t* p : {fa, fb, fc, dres}) CK(cudaMemset(p, 0xFF, bytes));  // sentinels (>= p)

    cudaStream_t s1, s2;
    CK(cudaStreamCreate(&s1));
    CK(cudaStreamCreate(&s2));
    ntt(da, fa, dtw, s1);  // the two forward transforms overlap
    ntt(db, fb, dtw, s2);
    CK(cudaStreamSynchronize(s2));
    // The inverse transform is linear, so scaling the spectrum by n^-1 first
    // leaves the product's coefficients in natural order in dres.
    pointwise_scale<<<N / 256, 256, 0, s1>>>(fa, fb, ninv, fc, N);
    CK(cudaGetLastError());
    ntt(fc, dres, ditw, s1);
    CK(cudaStreamSynchronize(s1));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hc.data(), dres, bytes, cudaMemcpyDeviceToHost));

    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < N; ++i) h = (h ^ hc[i]) * 1099511628211ULL;
    // Checks: sampled coefficients by direct convolution, and C(x) = A(x) B(x) at x = 1, 2.
    bool ok = hc[N - 1] == 0;
    const int samples[4] = {0, 12345, M - 1, N - 2};
    for (int s = 0; s < 4; ++s) {
        int k = samples[s];
        uint64_t acc = 0;
        for (int i = (k >= M ? k - M + 1 : 0); i <= k && i < M; ++i) acc = (acc + mulmod(ha[i], hb[k - i])) % P;
        ok = ok && (uint32_t)acc == hc[k];
    }
    for (uint32_t x = 1; x <= 2; ++x) {
        uint32_t ea = 0, eb = 0, ec = 0;
        for (int i = N - 1; i >= 0; --i) {
            ea = (uint32_t)(((uint64_t)mulmod(ea, x) + ha[i]) % P);
            eb = (uint32_t)(((uint64_t)mulmod(eb, x) + hb[i]) % P);
            ec = (uint32_t)(((uint64_t)mulmod(ec, x) + hc[i]) % P);
        }
        ok = ok && mulmod(ea, eb) == ec;
    }
    printf("ntt_convolution n = %d modulus = %u\n", N, P);
    printf("checksum 0x%016llx\n", (unsigned long long)h);
    printf("host_check %s\n", ok ? "ok" : "FAILED");
    for (int s = 0; s < 4; ++s) printf("c[%d] = %u\n", samples[s], hc[samples[s]]);

    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2));
    for (uint32_t* p : {da, db, fa, fb, fc, dres, dtw, ditw}) CK(cudaFree(p));
    return 0;
}
