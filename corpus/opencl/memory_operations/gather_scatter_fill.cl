// Irregular memory movement: indexed float4 gather with out-of-range guard, scatter through
// a permutation (and its inverse), and a vectorised fill with an affine uint pattern.

__kernel void gather_float4_guarded(__global const float4* src, const int srcCount,
                                    __global const int* indices,
                                    __global float4* dst, const int count,
                                    const float4 fallback)
{
    const int i = get_global_id(0);
    if (i >= count) return;
    const int j = indices[i];
    dst[i] = (j >= 0 && j < srcCount) ? src[j] : fallback;
}

__kernel void scatter_by_permutation(__global const uint* src, __global const int* perm,
                                     __global uint* dst, __global int* inversePerm,
                                     const int count)
{
    const int i = get_global_id(0);
    if (i >= count) return;
    const int target = perm[i];
    dst[target] = src[i];
    inversePerm[target] = i;
}

__kernel void fill_affine_pattern_uint4(__global uint4* dst, const int count4,
                                        const uint start, const uint step)
{
    const int i = get_global_id(0);
    const int stride = get_global_size(0);
    const uint4 lane = (uint4)(0u, 1u, 2u, 3u);
    for (int k = i; k < count4; k += stride) {
        const uint base = start + (uint)(4 * k) * step;
        dst[k] = (uint4)(base) + lane * step;
    }
}
