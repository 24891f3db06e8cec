// Edge-preserving bilateral filter on an 8-bit grayscale image with a square window.
// Spatial weights use sigma_s, range weights use sigma_r (intensity units 0..255).

static inline int clamp_coord(int v, int hi)
{
    return clamp(v, 0, hi - 1);
}

__kernel void bilateral_filter_gray_u8(__global const uchar* src,
                                       __global uchar* dst,
                                       const int width, const int height,
                                       const int radius,
                                       const float sigma_s, const float sigma_r)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= width || y >= height) return;

    const float center = (float)src[y * width + x];
    const float inv2s = -0.5f / (sigma_s * sigma_s);
    const float inv2r = -0.5f / (sigma_r * sigma_r);

    float wsum = 0.0f;
    float vsum = 0.0f;
    for (int dy = -radius; dy <= radius; ++dy) {
        const int yy = clamp_coord(y + dy, height);
        for (int dx = -radius; dx <= radius; ++dx) {
            const int xx = clamp_coord(x + dx, width);
            const float v = (float)src[yy * width + xx];
            const float diff = v - center;
            const float w = exp((float)(dx * dx + dy * dy) * inv2s
                                + diff * diff * inv2r);
            wsum += w;
            vsum = mad(w, v, vsum);
        }
    }
    const float out = vsum / fmax(wsum, 1e-6f);
    dst[y * width + x] = convert_uchar_sat_rte(out);
}
