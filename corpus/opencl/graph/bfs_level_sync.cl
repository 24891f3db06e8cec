// Level-synchronous breadth-first search on a CSR graph: every vertex on the current level
// relaxes its neighbours; a global flag tells the host whether another level is needed.

__kernel void bfs_init_levels(__global int* level, __global int* parent,
                              const int numVertices, const int source)
{
    const int v = get_global_id(0);
    if (v >= numVertices) return;
    level[v] = (v == source) ? 0 : -1;
    parent[v] = (v == source) ? source : -1;
}

__kernel void bfs_expand_level_csr(__global const int* rowPtr,
                                   __global const int* colIdx,
                                   __global int* level,
                                   __global int* parent,
                                   __global int* frontierGrew,
                                   const int numVertices,
                                   const int currentLevel)
{
    const int v = get_global_id(0);
    if (v >= numVertices || level[v] != currentLevel) return;
    const int begin = rowPtr[v];
    const int end = rowPtr[v + 1];
    int discovered = 0;
    for (int e = begin; e < end; ++e) {
        const int w = colIdx[e];
        /* claim w once: only the first vertex to swap -1 becomes its parent */
        if (level[w] == -1 && atomic_cmpxchg(&parent[w], -1, v) == -1) {
            level[w] = currentLevel + 1;
            discovered = 1;
        }
    }
    if (discovered)
        *frontierGrew = 1;
}
