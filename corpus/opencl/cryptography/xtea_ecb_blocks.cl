// XTEA block cipher (64-bit blocks, 128-bit key, 32 cycles) in ECB mode over an array of
// uint2 blocks; one work-item enciphers or deciphers one block.
#define XTEA_DELTA 0x9E3779B9u
#define XTEA_CYCLES 32

__kernel void xtea_encipher_ecb(__global uint2* blocks, __constant uint* key,
                                const uint numBlocks)
{
    const uint i = get_global_id(0);
    if (i >= numBlocks) return;
    uint v0 = blocks[i].x, v1 = blocks[i].y;
    uint sum = 0u;
    for (int r = 0; r < XTEA_CYCLES; ++r) {
        v0 += (((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + key[sum & 3u]);
        sum += XTEA_DELTA;
        v1 += (((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + key[(sum >> 11) & 3u]);
    }
    blocks[i] = (uint2)(v0, v1);
}

__kernel void xtea_decipher_ecb(__global uint2* blocks, __constant uint* key,
                                const uint numBlocks)
{
    const uint i = get_global_id(0);
    if (i >= numBlocks) return;
    uint v0 = blocks[i].x, v1 = blocks[i].y;
    uint sum = XTEA_DELTA * (uint)XTEA_CYCLES;
    for (int r = 0; r < XTEA_CYCLES; ++r) {
        v1 -= (((v0 << 4) ^ (v0 >> 5)) + v0) ^ (sum + key[(sum >> 11) & 3u]);
        sum -= XTEA_DELTA;
        v0 -= (((v1 << 4) ^ (v1 >> 5)) + v1) ^ (sum + key[sum & 3u]);
    }
    blocks[i] = (uint2)(v0, v1);
}
