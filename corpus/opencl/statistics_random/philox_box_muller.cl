// Counter-based Philox-4x32-10 generator producing uniform floats in (0,1], plus a Box-Muller
// transform that turns pairs of uniforms into standard normal variates with given mean/sigma.
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline uint4 philox_round(uint4 c, uint2 k)
{
    const uint hi0 = mul_hi(PHILOX_M0, c.x), lo0 = PHILOX_M0 * c.x;
    const uint hi1 = mul_hi(PHILOX_M1, c.z), lo1 = PHILOX_M1 * c.z;
    return (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
}

static inline uint4 philox4x32_10(uint4 ctr, uint2 key)
{
    for (int r = 0; r < 10; ++r) {
        ctr = philox_round(ctr, key);
        key += (uint2)(PHILOX_W0, PHILOX_W1);
    }
    return ctr;
}

static inline float u32_to_unit_open0(uint x)
{
    return ((float)(x >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

__kernel void philox_uniform_fill(__global float4* out, const uint count4,
                                  const uint seedLo, const uint seedHi, const uint stream)
{
    const uint i = get_global_id(0);
    if (i >= count4) return;
    const uint4 r = philox4x32_10((uint4)(i, stream, 0u, 0u), (uint2)(seedLo, seedHi));
    out[i] = (float4)(u32_to_unit_open0(r.x), u32_to_unit_open0(r.y),
                      u32_to_unit_open0(r.z), u32_to_unit_open0(r.w));
}

__kernel void box_muller_gaussian_pairs(__global const float2* uniforms,
                                        __global float2* normals,
                                        const uint numPairs,
                                        const float mean, const float sigma)
{
    const uint i = get_global_id(0);
    if (i >= numPairs) return;
    const float2 u = uniforms[i];
    const float radius = sqrt(-2.0f * log(u.x)) * sigma;
    float c;
    const float s = sincos(2.0f * M_PI_F * u.y, &c);
    normals[i] = (float2)(mad(radius, c, mean), mad(radius, s, mean));
}
