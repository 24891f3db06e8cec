// Work-efficient (Blelloch) exclusive prefix sum over uint, one block of 2*local_size elements
// per work-group, followed by a pass that adds the scanned per-block totals back in.

__kernel void blelloch_exclusive_scan_block(__global const uint* input,
                                            __global uint* output,
                                            __global uint* blockSums,
                                            __local uint* temp,
                                            const uint n)
{
    const uint lid = get_local_id(0);
    const uint lsz = get_local_size(0);
    const uint span = 2u * lsz;
    const uint base = get_group_id(0) * span;

    temp[2u * lid]      = (base + 2u * lid < n)      ? input[base + 2u * lid]      : 0u;
    temp[2u * lid + 1u] = (base + 2u * lid + 1u < n) ? input[base + 2u * lid + 1u] : 0u;

    uint offset = 1u;
    for (uint d = lsz; d > 0u; d >>= 1) {          /* up-sweep */
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < d) {
            const uint ai = offset * (2u * lid + 1u) - 1u;
            const uint bi = offset * (2u * lid + 2u) - 1u;
            temp[bi] += temp[ai];
        }
        offset <<= 1;
    }
    if (lid == 0u) {
        blockSums[get_group_id(0)] = temp[span - 1u];
        temp[span - 1u] = 0u;
    }
    for (uint d = 1u; d < span; d <<= 1) {         /* down-sweep */
        offset >>= 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < d) {
            const uint ai = offset * (2u * lid + 1u) - 1u;
            const uint bi = offset * (2u * lid + 2u) - 1u;
            const uint t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (base + 2u * lid < n)      output[base + 2u * lid]      = temp[2u * lid];
    if (base + 2u * lid + 1u < n) output[base + 2u * lid + 1u] = temp[2u * lid + 1u];
}

__kernel void scan_add_block_offsets(__global uint* data,
                                     __global const uint* scannedBlockSums,
                                     const uint n)
{
    const uint gid = get_global_id(0);
    const uint block = gid / (2u * get_local_size(0));
    if (gid < n && block > 0u)
        data[gid] += scannedBlockSums[block];
}
