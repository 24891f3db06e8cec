// Explicit FTCS step of the 2-D heat equation u_t = alpha * laplacian(u) on a tile of
// (TILE+2)^2 cells cached in __local memory; boundary cells keep fixed Dirichlet values.
#define HEAT_TILE 16

__kernel void heat2d_ftcs_local_tile(__global const float* uIn, __global float* uOut,
                                     const int nx, const int ny, const float r)
{
    __local float s[HEAT_TILE + 2][HEAT_TILE + 2];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int gx = get_group_id(0) * HEAT_TILE + lx;
    const int gy = get_group_id(1) * HEAT_TILE + ly;
    const int ox = get_group_id(0) * HEAT_TILE - 1;
    const int oy = get_group_id(1) * HEAT_TILE - 1;

    /* cooperative load of the tile plus one-cell halo */
    for (int j = ly; j < HEAT_TILE + 2; j += HEAT_TILE) {
        for (int i = lx; i < HEAT_TILE + 2; i += HEAT_TILE) {
            const int cx = clamp(ox + i, 0, nx - 1);
            const int cy = clamp(oy + j, 0, ny - 1);
            s[j][i] = uIn[cy * nx + cx];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    if (gx >= nx || gy >= ny) return;
    const float c = s[ly + 1][lx + 1];
    if (gx == 0 || gy == 0 || gx == nx - 1 || gy == ny - 1) {
        uOut[gy * nx + gx] = c;
        return;
    }
    const float lap = s[ly + 1][lx] + s[ly + 1][lx + 2] + s[ly][lx + 1] + s[ly + 2][lx + 1]
                      - 4.0f * c;
    uOut[gy * nx + gx] = mad(r, lap, c);    /* r = alpha*dt/h^2, stable for r <= 0.25 */
}
