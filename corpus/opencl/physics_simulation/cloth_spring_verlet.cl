// Mass-spring cloth on a W x H particle grid: structural and shear springs produce forces,
// then position Verlet integration with gravity; the top row of particles is pinned.

static inline float3 spring_force(float3 p, float3 q, float rest, float k)
{
    const float3 d = q - p;
    const float len = length(d);
    if (len < 1e-6f) return (float3)(0.0f);
    return d * (k * (len - rest) / len);
}

__kernel void cloth_spring_verlet_step(__global const float4* posCurr,
                                       __global const float4* posPrev,
                                       __global float4* posNext,
                                       const int W, const int H,
                                       const float restLen, const float stiffness,
                                       const float mass, const float dt,
                                       const float drag)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= W || y >= H) return;
    const int idx = y * W + x;
    const float3 p = posCurr[idx].xyz;

    if (y == 0) { posNext[idx] = (float4)(p, 1.0f); return; }

    float3 f = (float3)(0.0f, -9.81f * mass, 0.0f);
    const float diag = restLen * M_SQRT2_F;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            if (dx == 0 && dy == 0) continue;
            const int nx = x + dx, ny = y + dy;
            if (nx < 0 || nx >= W || ny < 0 || ny >= H) continue;
            const float rest = (dx != 0 && dy != 0) ? diag : restLen;
            f += spring_force(p, posCurr[ny * W + nx].xyz, rest, stiffness);
        }
    }
    const float3 prev = posPrev[idx].xyz;
    const float3 acc = f / mass;
    const float3 next = p + (p - prev) * (1.0f - drag) + acc * (dt * dt);
    posNext[idx] = (float4)(next, 1.0f);
}
