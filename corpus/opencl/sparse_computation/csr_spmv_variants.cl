// Sparse matrix-vector product y = A*x for CSR matrices in two flavours: one work-item per
// row (short rows) and one work-group per row with a __local tree reduction (long rows).

__kernel void spmv_csr_row_per_item(__global const int* rowPtr,
                                    __global const int* colIdx,
                                    __global const float* vals,
                                    __global const float* x,
                                    __global float* y,
                                    const int numRows)
{
    const int row = get_global_id(0);
    if (row >= numRows) return;
    float acc = 0.0f;
    const int end = rowPtr[row + 1];
    for (int j = rowPtr[row]; j < end; ++j)
        acc = mad(vals[j], x[colIdx[j]], acc);
    y[row] = acc;
}

__kernel void spmv_csr_row_per_group(__global const int* rowPtr,
                                     __global const int* colIdx,
                                     __global const float* vals,
                                     __global const float* x,
                                     __global float* y,
                                     const int numRows,
                                     const float alpha, const float beta,
                                     __local float* partial)
{
    const int row = get_group_id(0);
    const int lid = get_local_id(0);
    const int lsz = get_local_size(0);
    if (row >= numRows) return;           /* uniform for the whole group */

    float acc = 0.0f;
    for (int j = rowPtr[row] + lid; j < rowPtr[row + 1]; j += lsz)
        acc = mad(vals[j], x[colIdx[j]], acc);
    partial[lid] = acc;
    for (int s = lsz >> 1; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) partial[lid] += partial[lid + s];
    }
    if (lid == 0)
        y[row] = alpha * partial[0] + beta * y[row];
}
