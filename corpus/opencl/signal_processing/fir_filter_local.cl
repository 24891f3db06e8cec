// Direct-form FIR filter y[n] = sum_k h[k] * x[n-k] with the input window and taps staged
// in __local memory; taps must not exceed FIR_MAX_TAPS, samples before x[0] are zero.
#define FIR_MAX_TAPS 128

__kernel void fir_filter_local_window(__global const float* x,
                                      __global const float* taps,
                                      __global float* y,
                                      const int numSamples, const int numTaps,
                                      __local float* window)
{
    __local float h[FIR_MAX_TAPS];
    const int lid = get_local_id(0);
    const int lsz = get_local_size(0);
    const int blockStart = get_group_id(0) * lsz;
    const int halo = numTaps - 1;

    for (int k = lid; k < numTaps; k += lsz)
        h[k] = taps[k];
    /* window[j] holds x[blockStart - halo + j] for j in [0, lsz + halo) */
    for (int j = lid; j < lsz + halo; j += lsz) {
        const int src = blockStart - halo + j;
        window[j] = (src >= 0 && src < numSamples) ? x[src] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int n = blockStart + lid;
    if (n >= numSamples) return;
    float acc = 0.0f;
    const int w0 = lid + halo;
    for (int k = 0; k < numTaps; ++k)
        acc = mad(h[k], window[w0 - k], acc);
    y[n] = acc;
}

__kernel void fir_design_windowed_sinc_lowpass(__global float* taps, const int numTaps,
                                               const float cutoff)
{
    const int k = get_global_id(0);
    if (k >= numTaps) return;
    const float m = (float)(k) - 0.5f * (float)(numTaps - 1);
    const float sinc = (fabs(m) < 1e-6f) ? 2.0f * cutoff
                                         : sinpi(2.0f * cutoff * m) / (M_PI_F * m);
    const float hamming = 0.54f - 0.46f * cospi(2.0f * (float)k / (float)(numTaps - 1));
    taps[k] = sinc * hamming;
}
