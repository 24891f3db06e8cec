// cryptography_common.cuh
// Bit-manipulation helpers, the ChaCha20 block function (usable on host and
// device so the host can compute reference output) and small host utilities.
#pragma once

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#define CRYPTO_CHECK(call)                                                    \
    do {                                                                      \
        cudaError_t ce_ = (call);                                             \
        if (ce_ != cudaSuccess) {                                             \
            fprintf(stderr, "CUDA call %s failed: %s (%s:%d)\n", #call,       \
                    cudaGetErrorString(ce_), __FILE__, __LINE__);             \
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

#define CRYPTO_HD __host__ __device__ __forceinline__

CRYPTO_HD uint32_t rotl32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
CRYPTO_HD uint32_t rotr32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

CRYPTO_HD uint32_t load_be32(const uint8_t* p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
CRYPTO_HD uint32_t load_le32(const uint8_t* p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
CRYPTO_HD void store_le32(uint8_t* p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

// ---------------------------------------------------------------- ChaCha20
struct ChaChaKey {
    uint32_t key[8];     // 256-bit key, little-endian words
    uint32_t nonce[3];   // 96-bit nonce (RFC 8439 layout)
};

#define CHACHA_QR(a, b, c, d)                  \
    a += b; d ^= a; d = rotl32(d, 16);         \
    c += d; b ^= c; b = rotl32(b, 12);         \
    a += b; d ^= a; d = rotl32(d, 8);          \
    c += d; b ^= c; b = rotl32(b, 7);

// Produces the 64-byte keystream block for the given block counter.
CRYPTO_HD void chacha20_block(const ChaChaKey& k, uint32_t counter, uint8_t out[64])
{
    uint32_t s[16], x[16];
    s[0] = 0x61707865u; s[1] = 0x3320646eu; s[2] = 0x79622d32u; s[3] = 0x6b206574u;
    for (int i = 0; i < 8; ++i) s[4 + i] = k.key[i];
    s[12] = counter;
    s[13] = k.nonce[0]; s[14] = k.nonce[1]; s[15] = k.nonce[2];
    for (int i = 0; i < 16; ++i) x[i] = s[i];

    for (int round = 0; round < 10; ++round) {       // 20 rounds = 10 double rounds
        CHACHA_QR(x[0], x[4], x[8],  x[12]);
        CHACHA_QR(x[1], x[5], x[9],  x[13]);
        CHACHA_QR(x[2], x[6], x[10], x[14]);
        CHACHA_QR(x[3], x[7], x[11], x[15]);
        CHACHA_QR(x[0], x[5], x[10], x[15]);
        CHACHA_QR(x[1], x[6], x[11], x[12]);
        CHACHA_QR(x[2], x[7], x[8],  x[13]);
        CHACHA_QR(x[3], x[4], x[9],  x[14]);
    }
    for (int i = 0; i < 16; ++i) store_le32(out + 4 * i, x[i] + s[i]);
}

// ---------------------------------------------------------------- host utils
static inline void fill_bytes_lcg(uint8_t* buf, size_t n, uint32_t seed)
{
    uint32_t st = seed;
    for (size_t i = 0; i < n; ++i) {
        st = st * 1664525u + 1013904223u;
        buf[i] = (uint8_t)(st >> 24);
    }
}

static inline void print_hex(const char* label, const uint8_t* p, size_t n)
{
    printf("%s", label);
    for (size_t i = 0; i < n; ++i) printf("%02x", p[i]);
    printf("\n");
}
