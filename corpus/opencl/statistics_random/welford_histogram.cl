// Per-group streaming moments (Welford mean/M2, merged with Chan's formula in __local memory)
// and a fixed-bin histogram accumulated with local integer atomics before a global flush.
#define HIST_BINS 64

__kernel void welford_group_moments(__global const float* x, const int n,
                                    __global float4* groupStats,   /* count, mean, M2, 0 */
                                    __local float4* scratch)
{
    const int lid = get_local_id(0);
    float cnt = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        cnt += 1.0f;
        const float d = x[i] - mean;
        mean += d / cnt;
        m2 = mad(d, x[i] - mean, m2);
    }
    scratch[lid] = (float4)(cnt, mean, m2, 0.0f);
    for (int s = get_local_size(0) >> 1; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) {
            const float4 a = scratch[lid], b = scratch[lid + s];
            const float nab = a.x + b.x;
            if (nab > 0.0f) {
                const float delta = b.y - a.y;
                const float meanAB = a.y + delta * (b.x / nab);
                const float m2AB = a.z + b.z + delta * delta * (a.x * b.x / nab);
                scratch[lid] = (float4)(nab, meanAB, m2AB, 0.0f);
            }
        }
    }
    if (lid == 0) groupStats[get_group_id(0)] = scratch[0];
}

__kernel void histogram_fixed_bins_local(__global const float* x, const int n,
                                         const float lo, const float hi,
                                         __global uint* bins)
{
    __local uint localBins[HIST_BINS];
    const int lid = get_local_id(0);
    for (int b = lid; b < HIST_BINS; b += get_local_size(0))
        localBins[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);

    const float scale = (float)HIST_BINS / (hi - lo);
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        const float v = x[i];
        if (v < lo || v > hi) continue;
        const int b = min((int)((v - lo) * scale), HIST_BINS - 1);
        atomic_inc(&localBins[b]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = lid; b < HIST_BINS; b += get_local_size(0))
        if (localBins[b] != 0u) atomic_add(&bins[b], localBins[b]);
}
