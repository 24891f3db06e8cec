// Integer number theory in bulk: Stein's binary GCD (and LCM) for pairs of uints, and
// right-to-left square-and-multiply modular exponentiation for moduli below 2^16.

static inline uint trailing_zeros(uint x)   /* no 1.2 builtin for this; x != 0 here */
{
    return popcount((x & (0u - x)) - 1u);
}

static inline uint stein_gcd(uint a, uint b)
{
    if (a == 0u) return b;
    if (b == 0u) return a;
    const uint shift = trailing_zeros(a | b);
    a >>= trailing_zeros(a);
    do {
        b >>= trailing_zeros(b);
        if (a > b) { const uint t = a; a = b; b = t; }
        b -= a;
    } while (b != 0u);
    return a << shift;
}

__kernel void binary_gcd_lcm_pairs(__global const uint2* pairs, __global uint2* gcdLcm,
                                   const int count)
{
    const int i = get_global_id(0);
    if (i >= count) return;
    const uint a = pairs[i].x, b = pairs[i].y;
    const uint g = stein_gcd(a, b);
    /* lcm saturates to 0xFFFFFFFF when it would overflow 32 bits */
    uint l = 0u;
    if (g != 0u) {
        const uint q = a / g;
        l = (mul_hi(q, b) != 0u) ? 0xFFFFFFFFu : q * b;
    }
    gcdLcm[i] = (uint2)(g, l);
}

__kernel void modpow_small_moduli(__global const uint* bases, __global const uint* exponents,
                                  __global const uint* moduli, __global uint* out,
                                  const int count)
{
    const int i = get_global_id(0);
    if (i >= count) return;
    const uint m = moduli[i];            /* 1 <= m < 65536 so products fit in 32 bits */
    uint base = bases[i] % m;
    uint e = exponents[i];
    uint r = 1u % m;
    while (e != 0u) {
        if (e & 1u) r = (r * base) % m;
        base = (base * base) % m;
        e >>= 1;
    }
    out[i] = r;
}
