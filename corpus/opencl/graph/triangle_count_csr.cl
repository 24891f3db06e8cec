// Triangle counting on an undirected graph stored as CSR with sorted adjacency lists: each
// work-item takes one directed edge (u,v) with u < v and merges the two neighbour lists.

static inline uint count_common_above(__global const int* colIdx, int aBeg, int aEnd,
                                      int bBeg, int bEnd, int floorVertex)
{
    uint c = 0u;
    while (aBeg < aEnd && bBeg < bEnd) {
        const int a = colIdx[aBeg];
        const int b = colIdx[bBeg];
        if (a <= floorVertex) { ++aBeg; continue; }
        if (b <= floorVertex) { ++bBeg; continue; }
        if (a == b) { ++c; ++aBeg; ++bBeg; }
        else if (a < b) ++aBeg;
        else ++bBeg;
    }
    return c;
}

__kernel void triangle_count_edge_merge(__global const int* rowPtr,
                                        __global const int* colIdx,
                                        __global const int* edgeSrc,
                                        const int numEdges,
                                        __global uint* perVertexTriangles,
                                        __global uint* totalTriangles)
{
    const int e = get_global_id(0);
    if (e >= numEdges) return;
    const int u = edgeSrc[e];
    const int v = colIdx[e];
    if (u >= v) return;                   /* each undirected edge handled once */
    /* count w > v adjacent to both, so every triangle u < v < w is counted exactly once */
    const uint t = count_common_above(colIdx, rowPtr[u], rowPtr[u + 1],
                                      rowPtr[v], rowPtr[v + 1], v);
    if (t != 0u) {
        atomic_add(&perVertexTriangles[u], t);
        atomic_add(totalTriangles, t);
    }
}

__kernel void local_clustering_coefficient(__global const int* rowPtr,
                                           __global const uint* triangles,
                                           __global float* coeff,
                                           const int numVertices)
{
    const int v = get_global_id(0);
    if (v >= numVertices) return;
    const float d = (float)(rowPtr[v + 1] - rowPtr[v]);
    coeff[v] = (d > 1.0f) ? 2.0f * (float)triangles[v] / (d * (d - 1.0f)) : 0.0f;
}
