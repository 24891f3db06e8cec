// Bitonic sort of uint keys: each work-group fully sorts its slice in __local memory, then
// global merge steps (one launch per (stage, pass)) finish the sort for power-of-two n.

static inline void compare_swap_dir(__local uint* a, uint i, uint j, int ascending)
{
    const uint x = a[i], y = a[j];
    if ((x > y) == ascending) { a[i] = y; a[j] = x; }
}

__kernel void bitonic_sort_local_slices(__global uint* keys, __local uint* buf)
{
    const uint lid = get_local_id(0);
    const uint lsz = get_local_size(0);          /* slice holds 2*lsz keys */
    const uint base = get_group_id(0) * 2u * lsz;
    buf[lid] = keys[base + lid];
    buf[lid + lsz] = keys[base + lid + lsz];

    for (uint size = 2u; size <= 2u * lsz; size <<= 1) {
        for (uint stride = size >> 1; stride > 0u; stride >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            const uint pos = 2u * lid - (lid & (stride - 1u));
            /* direction alternates by global position so slices form bitonic runs */
            const int asc = (((base + pos) & size) == 0u);
            compare_swap_dir(buf, pos, pos + stride, asc);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    keys[base + lid] = buf[lid];
    keys[base + lid + lsz] = buf[lid + lsz];
}

__kernel void bitonic_merge_global_pass(__global uint* keys, const uint stage,
                                        const uint stride)
{
    const uint t = get_global_id(0);
    const uint pos = 2u * t - (t & (stride - 1u));
    const uint partner = pos + stride;
    const int asc = ((pos & stage) == 0u);
    const uint x = keys[pos], y = keys[partner];
    if ((x > y) == asc) {
        keys[pos] = y;
        keys[partner] = x;
    }
}
