// Transformer building blocks: row-wise layer normalisation with learned scale/shift (one
// work-group per row, mean and variance reduced in __local memory) and tanh-approx GELU.

static inline float block_sum_local(__local float* red, float v)
{
    const int lid = get_local_id(0);
    red[lid] = v;
    for (int s = get_local_size(0) >> 1; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) red[lid] += red[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const float total = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);        /* red may be reused by the caller */
    return total;
}

__kernel void layernorm_rows_affine(__global const float* x, __global float* y,
                                    __global const float* gamma,
                                    __global const float* beta,
                                    const int cols, const float eps,
                                    __local float* red)
{
    const int row = get_group_id(0);
    const int lid = get_local_id(0);
    const int lsz = get_local_size(0);
    __global const float* xr = x + row * cols;
    __global float* yr = y + row * cols;

    float s = 0.0f;
    for (int c = lid; c < cols; c += lsz) s += xr[c];
    const float mean = block_sum_local(red, s) / (float)cols;

    float sq = 0.0f;
    for (int c = lid; c < cols; c += lsz) { const float d = xr[c] - mean; sq = mad(d, d, sq); }
    const float invStd = rsqrt(block_sum_local(red, sq) / (float)cols + eps);

    for (int c = lid; c < cols; c += lsz)
        yr[c] = mad((xr[c] - mean) * invStd, gamma[c], beta[c]);
}

__kernel void gelu_tanh_approx_inplace(__global float* x, const int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[i];
    const float inner = 0.7978845608f * mad(0.044715f * v * v, v, v);
    x[i] = 0.5f * v * (1.0f + tanh(inner));
}
