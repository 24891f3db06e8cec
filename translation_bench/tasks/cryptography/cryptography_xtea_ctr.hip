#include "hip/hip_runtime.h"
// XTEA block cipher (64 rounds, 128-bit key) in counter mode over 2^20 64-bit words.
// One GPU pass encrypts the plaintext, a second pass decrypts the ciphertext again
// (CTR mode is its own inverse). The host checks the round trip, recomputes a slice of
// the keystream itself, and prints a hash of every ciphertext word plus a few samples.
#include <hip/hip_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        hipError_t err_ = (call);                                            \
        if (err_ != hipSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s at %s:%d\n",                      \
                    hipGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static const int N = 1 << 20;      // number of 64-bit words
static const uint64_t NONCE = 0x0123456789ABCDEFull;

__constant__ uint32_t c_key[4];

// Encrypt one 64-bit block with XTEA (32 cycles = 64 Feistel rounds).
__host__ __device__ inline uint64_t xtea_encrypt(uint64_t block, const uint32_t* k) {
    uint32_t v0 = (uint32_t)(block >> 32), v1 = (uint32_t)block, sum = 0;
    const uint32_t delta = 0x9E3779B9u;
    for (int i = 0; i < 32; ++i) {
        v0 += (((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + k[sum & 3]);
        sum += delta;
        v1 += (((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + k[(sum >> 11) & 3]);
    }
    return ((uint64_t)v0 << 32) | v1;
}

// out[i] = in[i] XOR E_k(nonce + i), grid-stride over all words.
__global__ void xtea_ctr_kernel(const uint64_t* in, uint64_t* out, uint64_t nonce, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint64_t ks = xtea_encrypt(nonce + (uint64_t)i, c_key);
        out[i] = in[i] ^ ks;
    }
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t next_u64() {          // xorshift64*
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static uint64_t hash_words(const std::vector<uint64_t>& v) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < v.size(); ++i) {
        h ^= v[i] + (uint64_t)i;
        h *= 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h;
}

int main(int argc, char** argv) {
    if (argc > 1) {  // optional argument: seed of the input generator (xorshift: not 0)
        rng_state = strtoull(argv[1], nullptr, 0);
        if (rng_state == 0) rng_state = 0x243F6A8885A308D3ull;
    }
    uint32_t key[4];
    for (int i = 0; i < 4; ++i) key[i] = (uint32_t)(next_u64() >> 32);
    std::vector<uint64_t> plain(N), cipher(N), back(N);
    for (int i = 0; i < N; ++i) plain[i] = next_u64();

    uint64_t *d_plain, *d_cipher, *d_back;
    size_t bytes = (size_t)N * sizeof(uint64_t);
    CK(hipMalloc(&d_plain, bytes));
    CK(hipMalloc(&d_cipher, bytes));
    CK(hipMalloc(&d_back, bytes));
    CK(hipMemcpy(d_plain, plain.data(), bytes, hipMemcpyHostToDevice));
    CK(hipMemcpyToSymbol(HIP_SYMBOL(c_key), key, sizeof(key)));
    CK(hipMemset(d_cipher, 0xFF, bytes));
    CK(hipMemset(d_back, 0xFF, bytes));

    const int threads = 256, blocks = 1024;   // grid-stride: 4 words per thread
    xtea_ctr_kernel<<<blocks, threads>>>(d_plain, d_cipher, NONCE, N);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());
    xtea_ctr_kernel<<<blocks, threads>>>(d_cipher, d_back, NONCE, N);
    CK(hipGetLastError());
    CK(hipDeviceSynchronize());

    CK(hipMemcpy(cipher.data(), d_cipher, bytes, hipMemcpyDeviceToHost));
    CK(hipMemcpy(back.data(), d_back, bytes, hipMemcpyDeviceToHost));

    int roundtrip_errors = 0, host_errors = 0;
    for (int i = 0; i < N; ++i) roundtrip_errors += (back[i] != plain[i]);
    for (int i = 0; i < N; i += 97)
        host_errors += (cipher[i] != (plain[i] ^ xtea_encrypt(NONCE + (uint64_t)i, key)));

    printf("checksum_cipher 0x%016llx\n", (unsigned long long)hash_words(cipher));
    printf("checksum_roundtrip 0x%016llx\n", (unsigned long long)hash_words(back));
    printf("roundtrip_errors %d\n", roundtrip_errors);
    printf("host_check_errors %d\n", host_errors);
    const int samples[3] = {0, 12345, N - 1};
    for (int s = 0; s < 3; ++s)
        printf("cipher[%d] = 0x%016llx\n", samples[s], (unsigned long long)cipher[samples[s]]);

    CK(hipFree(d_plain));
    CK(hipFree(d_cipher));
    CK(hipFree(d_back));
    return 0;
}
