// Two-pass reduction that finds the minimum and maximum of a float array together with
// their indices; pass one writes one (min,max) pair per work-group, pass two folds them.

typedef struct { float vmin; float vmax; int imin; int imax; } MinMaxPair;

static inline MinMaxPair combine_pairs(MinMaxPair a, MinMaxPair b)
{
    MinMaxPair r = a;
    if (b.vmin < a.vmin || (b.vmin == a.vmin && b.imin < a.imin)) { r.vmin = b.vmin; r.imin = b.imin; }
    if (b.vmax > a.vmax || (b.vmax == a.vmax && b.imax < a.imax)) { r.vmax = b.vmax; r.imax = b.imax; }
    return r;
}

static inline void tree_reduce_local(__local MinMaxPair* scratch, uint lid, uint lsz)
{
    for (uint s = lsz >> 1; s > 0u; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s)
            scratch[lid] = combine_pairs(scratch[lid], scratch[lid + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel void argminmax_partial_groups(__global const float* x, const int n,
                                       __global MinMaxPair* partials,
                                       __local MinMaxPair* scratch)
{
    const uint lid = get_local_id(0);
    MinMaxPair acc = { INFINITY, -INFINITY, -1, -1 };
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        const float v = x[i];
        MinMaxPair cand = { v, v, i, i };
        acc = combine_pairs(acc, cand);
    }
    scratch[lid] = acc;
    tree_reduce_local(scratch, lid, get_local_size(0));
    if (lid == 0u)
        partials[get_group_id(0)] = scratch[0];
}

__kernel void argminmax_finalize(__global const MinMaxPair* partials, const int count,
                                 __global MinMaxPair* result,
                                 __local MinMaxPair* scratch)
{
    const uint lid = get_local_id(0);
    MinMaxPair acc = { INFINITY, -INFINITY, -1, -1 };
    for (int i = lid; i < count; i += get_local_size(0))
        acc = combine_pairs(acc, partials[i]);
    scratch[lid] = acc;
    tree_reduce_local(scratch, lid, get_local_size(0));
    if (lid == 0u)
        result[0] = scratch[0];
}
