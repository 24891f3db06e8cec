// Weighted Jacobi relaxation for the 3-D Poisson equation -lap(u) = f with the 7-point
// stencil, plus a kernel that writes the per-cell residual and per-group squared norms.

static inline int idx3(int x, int y, int z, int nx, int ny)
{
    return (z * ny + y) * nx + x;
}

__kernel void poisson3d_weighted_jacobi(__global const float* u, __global const float* f,
                                        __global float* uNew, const int nx, const int ny,
                                        const int nz, const float h2, const float omega)
{
    const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    if (x >= nx || y >= ny || z >= nz) return;
    const int c = idx3(x, y, z, nx, ny);
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
        uNew[c] = u[c];
        return;
    }
    const float nb = u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx]
                   + u[c - nx * ny] + u[c + nx * ny];
    const float jac = (nb + h2 * f[c]) * (1.0f / 6.0f);
    uNew[c] = mad(omega, jac - u[c], u[c]);
}

__kernel void poisson3d_residual_norm(__global const float* u, __global const float* f,
                                      __global float* partialSq, const int nx, const int ny,
                                      const int nz, const float invH2, __local float* red)
{
    const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const int lid = (get_local_id(2) * get_local_size(1) + get_local_id(1))
                    * get_local_size(0) + get_local_id(0);
    const int lsz = get_local_size(0) * get_local_size(1) * get_local_size(2);
    float r = 0.0f;
    if (x > 0 && y > 0 && z > 0 && x < nx - 1 && y < ny - 1 && z < nz - 1) {
        const int c = idx3(x, y, z, nx, ny);
        const float lap = (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - nx * ny]
                           + u[c + nx * ny] - 6.0f * u[c]) * invH2;
        r = f[c] + lap;
    }
    red[lid] = r * r;
    for (int s = lsz >> 1; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) red[lid] += red[lid + s];
    }
    if (lid == 0) {
        const int g = (get_group_id(2) * get_num_groups(1) + get_group_id(1))
                      * get_num_groups(0) + get_group_id(0);
        partialSq[g] = red[0];
    }
}
