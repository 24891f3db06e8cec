// One radix-2 Stockham autosort FFT stage on interleaved complex float2 data (length N, power
// of two); launch log2(N) times with stride p = 1,2,4,... ping-ponging src/dst buffers.

static inline float2 cmul(float2 a, float2 b)
{
    return (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__kernel void fft_stockham_radix2_stage(__global const float2* src,
                                        __global float2* dst,
                                        const int N, const int p,
                                        const float direction)
{
    const int i = get_global_id(0);       /* butterfly index, 0 .. N/2-1 */
    const int halfN = N >> 1;
    if (i >= halfN) return;

    const int k = i & (p - 1);            /* position within the current sub-transform */
    const float2 a = src[i];
    const float2 b = src[i + halfN];
    const float angle = direction * M_PI_F * (float)k / (float)p;
    float c;
    const float s = sincos(angle, &c);
    const float2 bt = cmul(b, (float2)(c, s));

    const int out = ((i - k) << 1) + k;
    dst[out]     = a + bt;
    dst[out + p] = a - bt;
}

__kernel void fft_power_spectrum_db(__global const float2* spectrum,
                                    __global float* powerDb,
                                    const int N, const float floorDb)
{
    const int i = get_global_id(0);
    if (i >= N) return;
    const float2 v = spectrum[i];
    const float scale = 1.0f / (float)N;
    const float pw = (v.x * v.x + v.y * v.y) * scale * scale;
    powerDb[i] = fmax(10.0f * log10(pw + 1e-30f), floorDb);
}
