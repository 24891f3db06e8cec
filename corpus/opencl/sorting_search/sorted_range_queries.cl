// Batched searches in a sorted float array: lower/upper bound per query and a count of the
// elements that fall inside each closed query interval [lo, hi].

static inline int lower_bound_f(__global const float* a, int n, float key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (a[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static inline int upper_bound_f(__global const float* a, int n, float key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (a[mid] <= key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

__kernel void sorted_lower_upper_bounds(__global const float* sorted, const int n,
                                        __global const float* queries, const int numQueries,
                                        __global int2* bounds)
{
    const int q = get_global_id(0);
    if (q >= numQueries) return;
    const float key = queries[q];
    bounds[q] = (int2)(lower_bound_f(sorted, n, key), upper_bound_f(sorted, n, key));
}

__kernel void sorted_count_in_interval(__global const float* sorted, const int n,
                                       __global const float2* intervals,
                                       const int numIntervals,
                                       __global int* counts)
{
    const int q = get_global_id(0);
    if (q >= numIntervals) return;
    const float lo = fmin(intervals[q].x, intervals[q].y);
    const float hi = fmax(intervals[q].x, intervals[q].y);
    counts[q] = upper_bound_f(sorted, n, hi) - lower_bound_f(sorted, n, lo);
}
