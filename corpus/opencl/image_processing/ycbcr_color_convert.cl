// BT.601 colour conversion between packed RGBA8 pixels and planar full-range YCbCr.
// One work-item per pixel; alpha is kept in a separate plane for the round trip.

__kernel void rgba_to_ycbcr_planar(__global const uchar4* rgba,
                                   __global uchar* planeY,
                                   __global uchar* planeCb,
                                   __global uchar* planeCr,
                                   __global uchar* planeA,
                                   const int numPixels)
{
    const int i = get_global_id(0);
    if (i >= numPixels) return;
    const float4 p = convert_float4(rgba[i]);
    const float y  =  0.299f * p.x + 0.587f * p.y + 0.114f * p.z;
    const float cb = -0.168736f * p.x - 0.331264f * p.y + 0.5f * p.z + 128.0f;
    const float cr =  0.5f * p.x - 0.418688f * p.y - 0.081312f * p.z + 128.0f;
    planeY[i]  = convert_uchar_sat_rte(y);
    planeCb[i] = convert_uchar_sat_rte(cb);
    planeCr[i] = convert_uchar_sat_rte(cr);
    planeA[i]  = rgba[i].w;
}

__kernel void ycbcr_planar_to_rgba(__global const uchar* planeY,
                                   __global const uchar* planeCb,
                                   __global const uchar* planeCr,
                                   __global const uchar* planeA,
                                   __global uchar4* rgba,
                                   const int numPixels)
{
    const int i = get_global_id(0);
    if (i >= numPixels) return;
    const float y  = (float)planeY[i];
    const float cb = (float)planeCb[i] - 128.0f;
    const float cr = (float)planeCr[i] - 128.0f;
    float4 out;
    out.x = y + 1.402f * cr;
    out.y = y - 0.344136f * cb - 0.714136f * cr;
    out.z = y + 1.772f * cb;
    out.w = (float)planeA[i];
    rgba[i] = convert_uchar4_sat_rte(out);
}
