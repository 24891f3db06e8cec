// Softened all-pairs gravitational N-body: accelerations computed with body positions
// tiled through __local memory, then a kick-drift leapfrog update of velocity and position.

__kernel void nbody_accel_local_tiles(__global const float4* posMass,
                                      __global float4* accel,
                                      const int numBodies, const float softening2,
                                      __local float4* tile)
{
    const int gid = get_global_id(0);
    const int lid = get_local_id(0);
    const int lsz = get_local_size(0);
    const float4 me = (gid < numBodies) ? posMass[gid] : (float4)(0.0f);
    float3 a = (float3)(0.0f);

    for (int base = 0; base < numBodies; base += lsz) {
        const int j = base + lid;
        tile[lid] = (j < numBodies) ? posMass[j] : (float4)(0.0f);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int t = 0; t < lsz; ++t) {
            const float4 other = tile[t];
            const float3 d = other.xyz - me.xyz;
            const float r2 = dot(d, d) + softening2;
            const float inv = rsqrt(r2);
            const float s = other.w * inv * inv * inv;   /* mass zero for padding */
            a = mad((float3)(s), d, a);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (gid < numBodies)
        accel[gid] = (float4)(a, 0.0f);
}

__kernel void nbody_leapfrog_kick_drift(__global float4* posMass,
                                        __global float4* velocity,
                                        __global const float4* accel,
                                        const int numBodies, const float dt,
                                        const float damping)
{
    const int i = get_global_id(0);
    if (i >= numBodies) return;
    float4 v = velocity[i];
    v.xyz = (v.xyz + accel[i].xyz * dt) * damping;
    float4 p = posMass[i];
    p.xyz += v.xyz * dt;
    velocity[i] = v;
    posMass[i] = p;
}
