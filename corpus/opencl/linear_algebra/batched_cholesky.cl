// Batched in-register Cholesky factorization and solve for many small SPD systems (n <= 8).
// Each work-item owns one n x n matrix (row-major, contiguous) and one right-hand side.
#define CHOL_MAX_N 8

__kernel void cholesky_factor_small_batched(__global float* mats, const int n,
                                            const int batch, __global int* status)
{
    const int b = get_global_id(0);
    if (b >= batch) return;
    __global float* L = mats + b * n * n;
    int ok = 1;
    for (int j = 0; j < n; ++j) {
        float d = L[j * n + j];
        for (int k = 0; k < j; ++k)
            d -= L[j * n + k] * L[j * n + k];
        if (d <= 0.0f) { ok = 0; d = 1e-12f; }
        const float ljj = sqrt(d);
        L[j * n + j] = ljj;
        const float inv = 1.0f / ljj;
        for (int i = j + 1; i < n; ++i) {
            float s = L[i * n + j];
            for (int k = 0; k < j; ++k)
                s -= L[i * n + k] * L[j * n + k];
            L[i * n + j] = s * inv;
        }
        for (int i = 0; i < j; ++i)
            L[i * n + j] = 0.0f;   /* clear the strict upper triangle */
    }
    status[b] = ok;
}

__kernel void cholesky_solve_small_batched(__global const float* factors,
                                           __global float* rhs, const int n,
                                           const int batch)
{
    const int b = get_global_id(0);
    if (b >= batch || n > CHOL_MAX_N) return;
    __global const float* L = factors + b * n * n;
    float y[CHOL_MAX_N];

    for (int i = 0; i < n; ++i) {           /* forward: L y = b */
        float s = rhs[b * n + i];
        for (int k = 0; k < i; ++k)
            s -= L[i * n + k] * y[k];
        y[i] = s / L[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {      /* backward: L^T x = y */
        float s = y[i];
        for (int k = i + 1; k < n; ++k)
            s -= L[k * n + i] * y[k];
        y[i] = s / L[i * n + i];
    }
    for (int i = 0; i < n; ++i)
        rhs[b * n + i] = y[i];
}
