// Numerical integration of the damped oscillator f(x) = exp(-a x^2) cos(b x) for many (a, b)
// parameter sets: composite Simpson's rule and 5-point Gauss-Legendre on equal panels.

static inline float damped_cosine(float x, float a, float b)
{
    return exp(-a * x * x) * cos(b * x);
}

__kernel void integrate_composite_simpson(__global const float2* params,
                                          __global float* result,
                                          const int numParams, const float lo,
                                          const float hi, const int intervals /* even */)
{
    const int i = get_global_id(0);
    if (i >= numParams) return;
    const float a = params[i].x, b = params[i].y;
    const float h = (hi - lo) / (float)intervals;
    float sumOdd = 0.0f, sumEven = 0.0f;
    for (int k = 1; k < intervals; ++k) {
        const float v = damped_cosine(mad((float)k, h, lo), a, b);
        if (k & 1) sumOdd += v; else sumEven += v;
    }
    const float ends = damped_cosine(lo, a, b) + damped_cosine(hi, a, b);
    result[i] = (h / 3.0f) * (ends + 4.0f * sumOdd + 2.0f * sumEven);
}

__kernel void integrate_gauss_legendre5_panels(__global const float2* params,
                                               __global float* result,
                                               const int numParams, const float lo,
                                               const float hi, const int panels)
{
    const int i = get_global_id(0);
    if (i >= numParams) return;
    const float nodes[5]   = { -0.9061798459f, -0.5384693101f, 0.0f,
                                0.5384693101f,  0.9061798459f };
    const float weights[5] = { 0.2369268851f, 0.4786286705f, 0.5688888889f,
                               0.4786286705f, 0.2369268851f };
    const float a = params[i].x, b = params[i].y;
    const float width = (hi - lo) / (float)panels;
    float total = 0.0f;
    for (int p = 0; p < panels; ++p) {
        const float mid = lo + ((float)p + 0.5f) * width;
        float panel = 0.0f;
        for (int j = 0; j < 5; ++j)
            panel = mad(weights[j], damped_cosine(mad(0.5f * width, nodes[j], mid), a, b), panel);
        total = mad(0.5f * width, panel, total);
    }
    result[i] = total;
}
