// Out-of-place matrix transpose through a 32x32 __local tile padded by one column to avoid
// bank conflicts; each work-group of 32x8 items moves one tile in four row sweeps.
#define TR_TILE 32
#define TR_ROWS 8

__kernel void transpose_local_tile_padded(__global const float* src, __global float* dst,
                                          const int width, const int height)
{
    __local float tile[TR_TILE][TR_TILE + 1];
    const int lx = get_local_id(0), ly = get_local_id(1);
    int x = get_group_id(0) * TR_TILE + lx;
    int y = get_group_id(1) * TR_TILE + ly;

    for (int j = 0; j < TR_TILE; j += TR_ROWS)
        if (x < width && y + j < height)
            tile[ly + j][lx] = src[(y + j) * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);

    x = get_group_id(1) * TR_TILE + lx;     /* swap block coordinates */
    y = get_group_id(0) * TR_TILE + ly;
    for (int j = 0; j < TR_TILE; j += TR_ROWS)
        if (x < height && y + j < width)
            dst[(y + j) * height + x] = tile[lx][ly + j];
}

__kernel void copy_submatrix_pitched(__global const float* src, const int srcPitch,
                                     __global float* dst, const int dstPitch,
                                     const int rowOffset, const int colOffset,
                                     const int rows, const int cols)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= cols || r >= rows) return;
    dst[r * dstPitch + c] = src[(r + rowOffset) * srcPitch + (c + colOffset)];
}
