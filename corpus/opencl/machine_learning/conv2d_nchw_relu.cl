// Direct 2-D convolution for NCHW tensors with bias and fused ReLU (stride and zero padding
// configurable), followed by a 2x2 max-pooling kernel on the activated feature maps.

__kernel void conv2d_nchw_bias_relu(__global const float* input,   /* N x C x H x W */
                                    __global const float* weights, /* K x C x R x S */
                                    __global const float* bias,    /* K */
                                    __global float* output,        /* N x K x P x Q */
                                    const int C, const int H, const int W,
                                    const int K, const int R, const int S,
                                    const int P, const int Q,
                                    const int stride, const int pad)
{
    const int q = get_global_id(0);
    const int p = get_global_id(1);
    const int nk = get_global_id(2);
    if (q >= Q || p >= P) return;
    const int n = nk / K;
    const int k = nk - n * K;

    float acc = bias[k];
    for (int c = 0; c < C; ++c) {
        __global const float* img = input + (n * C + c) * H * W;
        __global const float* flt = weights + (k * C + c) * R * S;
        for (int r = 0; r < R; ++r) {
            const int y = p * stride - pad + r;
            if (y < 0 || y >= H) continue;
            for (int s = 0; s < S; ++s) {
                const int x = q * stride - pad + s;
                if (x >= 0 && x < W)
                    acc = mad(img[y * W + x], flt[r * S + s], acc);
            }
        }
    }
    output[((n * K + k) * P + p) * Q + q] = fmax(acc, 0.0f);
}

__kernel void maxpool2x2_nchw(__global const float* input, __global float* output,
                              const int H, const int W, const int planes)
{
    const int ox = get_global_id(0), oy = get_global_id(1), plane = get_global_id(2);
    const int OH = H >> 1, OW = W >> 1;
    if (ox >= OW || oy >= OH || plane >= planes) return;
    __global const float* src = input + plane * H * W + (2 * oy) * W + 2 * ox;
    const float m = fmax(fmax(src[0], src[1]), fmax(src[W], src[W + 1]));
    output[(plane * OH + oy) * OW + ox] = m;
}
