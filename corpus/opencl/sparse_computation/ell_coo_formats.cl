// Sparse formats other than CSR: ELLPACK SpMV with column-major padded slots (coalesced
// loads, col = -1 marks padding) and COO helpers that build CSR row counts with atomics.

__kernel void spmv_ellpack_colmajor(__global const int* ellCols,
                                    __global const float* ellVals,
                                    __global const float* x,
                                    __global float* y,
                                    const int numRows, const int slotsPerRow)
{
    const int row = get_global_id(0);
    if (row >= numRows) return;
    float acc = 0.0f;
    for (int s = 0; s < slotsPerRow; ++s) {
        const int k = s * numRows + row;    /* slot s of every row is contiguous */
        const int c = ellCols[k];
        if (c < 0) break;                   /* padding is packed at the end of a row */
        acc = mad(ellVals[k], x[c], acc);
    }
    y[row] = acc;
}

__kernel void coo_count_row_entries(__global const int* cooRows, const int nnz,
                                    __global int* rowCounts)
{
    const int e = get_global_id(0);
    if (e < nnz)
        atomic_inc(&rowCounts[cooRows[e]]);
}

__kernel void coo_scatter_to_csr_slots(__global const int* cooRows,
                                       __global const int* cooCols,
                                       __global const float* cooVals,
                                       const int nnz,
                                       __global const int* rowPtr,
                                       __global int* rowFill,
                                       __global int* csrCols,
                                       __global float* csrVals)
{
    const int e = get_global_id(0);
    if (e >= nnz) return;
    const int r = cooRows[e];
    const int slot = rowPtr[r] + atomic_add(&rowFill[r], 1);
    csrCols[slot] = cooCols[e];
    csrVals[slot] = cooVals[e];
}
