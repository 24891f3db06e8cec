// ray_sphere_tracer.cu
// Whitted-style ray tracer: spheres + a point light stored in __constant__
// memory, one thread per pixel, hard shadows and a few reflection bounces.
// A second kernel reduces the frame to a per-block average luminance.
#include <vector>
#include "graphics_rendering_common.cuh"

#define MAX_SPHERES 8
#define MAX_BOUNCES 3

struct Sphere {
    Vec3 center;
    float radius;
    Vec3 albedo;
    float reflectivity;
};

struct SceneParams {
    int numSpheres;
    Vec3 lightPos;
    Vec3 lightColor;
    Vec3 camPos;
    Vec3 camForward, camRight, camUp;
    float tanHalfFov;
};

__constant__ Sphere c_spheres[MAX_SPHERES];
__constant__ SceneParams c_scene;

// Returns distance along the ray to the nearest intersection or -1.
__device__ float hit_sphere(const Sphere& s, const Ray& r)
{
    Vec3 oc = r.origin - s.center;
    float b = dot(oc, r.dir);
    float c = dot(oc, oc) - s.radius * s.radius;
    float disc = b * b - c;
    if (disc < 0.0f) return -1.0f;
    float sq = sqrtf(disc);
    float t = -b - sq;
    if (t > 1e-3f) return t;
    t = -b + sq;
    return t > 1e-3f ? t : -1.0f;
}

__device__ int closest_hit(const Ray& r, float* tOut)
{
    int best = -1;
    float bestT = 1e30f;
    for (int i = 0; i < c_scene.numSpheres; ++i) {
        float t = hit_sphere(c_spheres[i], r);
        if (t > 0.0f && t < bestT) { bestT = t; best = i; }
    }
    *tOut = bestT;
    return best;
}

__device__ Vec3 sky(const Vec3& dir)
{
    float t = 0.5f * (dir.y + 1.0f);
    return make_vec3(1.0f, 1.0f, 1.0f) * (1.0f - t) + make_vec3(0.45f, 0.65f, 1.0f) * t;
}

__device__ Vec3 trace(Ray ray)
{
    Vec3 color = make_vec3(0.0f, 0.0f, 0.0f);
    Vec3 throughput = make_vec3(1.0f, 1.0f, 1.0f);
    for (int bounce = 0; bounce <= MAX_BOUNCES; ++bounce) {
        float t;
        int id = closest_hit(ray, &t);
        if (id < 0) { color = color + mul(throughput, sky(ray.dir)); break; }

        const Sphere& s = c_spheres[id];
        Vec3 p = ray_at(ray, t);
        Vec3 n = normalize(p - s.center);
        Vec3 toLight = c_scene.lightPos - p;
        float distL = length(toLight);
        Vec3 l = toLight * (1.0f / distL);

        // shadow ray towards the point light
        Ray shadow; shadow.origin = p + n * 1e-3f; shadow.dir = l;
        float ts;
        int blocker = closest_hit(shadow, &ts);
        float vis = (blocker >= 0 && ts < distL) ? 0.15f : 1.0f;

        float diff = fmaxf(dot(n, l), 0.0f);
        Vec3 h = normalize(l - ray.dir);
        float spec = powf(fmaxf(dot(n, h), 0.0f), 48.0f);
        Vec3 local = mul(s.albedo, c_scene.lightColor) * (0.08f + 0.92f * diff * vis)
                   + c_scene.lightColor * (0.4f * spec * vis);
        color = color + mul(throughput, local) * (1.0f - s.reflectivity);

        if (s.reflectivity <= 0.0f) break;
        throughput = mul(throughput, s.albedo) * s.reflectivity;
        ray.origin = p + n * 1e-3f;
        ray.dir = normalize(reflect(ray.dir, n));
    }
    return color;
}

__global__ void render(uint32_t* __restrict__ fb, float* __restrict__ lum, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;

    float aspect = (float)w / (float)h;
    float u = (2.0f * ((x + 0.5f) / w) - 1.0f) * aspect * c_scene.tanHalfFov;
    float v = (1.0f - 2.0f * ((y + 0.5f) / h)) * c_scene.tanHalfFov;
    Ray r;
    r.origin = c_scene.camPos;
    r.dir = normalize(c_scene.camForward + c_scene.camRight * u + c_scene.camUp * v);

    Vec3 c = trace(r);
    fb[y * w + x] = pack_rgb(c);
    lum[y * w + x] = 0.2126f * c.x + 0.7152f * c.y + 0.0722f * c.z;
}

// Block-level tree reduction of luminance (fixed order => deterministic).
__global__ void block_luminance(const float* __restrict__ lum, float* __restrict__ partial, int n)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n) ? lum[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

int main()
{
    const int W = 320, H = 240, N = W * H;

    Sphere spheres[MAX_SPHERES];
    int ns = 0;
    auto add = [&](Vec3 c, float r, Vec3 a, float refl) {
        spheres[ns].center = c; spheres[ns].radius = r;
        spheres[ns].albedo = a; spheres[ns].reflectivity = refl; ++ns;
    };
    add(make_vec3(0.0f, -1000.5f, -3.0f), 1000.0f, make_vec3(0.6f, 0.6f, 0.55f), 0.1f);   // ground
    add(make_vec3(0.0f, 0.0f, -3.0f), 0.5f, make_vec3(0.9f, 0.2f, 0.2f), 0.0f);
    add(make_vec3(-1.1f, 0.0f, -3.4f), 0.5f, make_vec3(0.9f, 0.9f, 0.9f), 0.8f);
    add(make_vec3(1.1f, -0.1f, -2.7f), 0.4f, make_vec3(0.2f, 0.5f, 0.9f), 0.3f);
    add(make_vec3(0.4f, 0.9f, -4.0f), 0.35f, make_vec3(0.3f, 0.9f, 0.3f), 0.0f);

    SceneParams sp;
    sp.numSpheres = ns;
    sp.lightPos = make_vec3(-2.0f, 4.0f, 0.5f);
    sp.lightColor = make_vec3(1.0f, 0.95f, 0.9f);
    sp.camPos = make_vec3(0.0f, 0.4f, 1.0f);
    sp.camForward = normalize(make_vec3(0.0f, -0.1f, -1.0f));
    sp.camRight = normalize(cross(sp.camForward, make_vec3(0.0f, 1.0f, 0.0f)));
    sp.camUp = cross(sp.camRight, sp.camForward);
    sp.tanHalfFov = tanf(0.5f * 50.0f * 3.14159265f / 180.0f);

    GFX_CHECK(cudaMemcpyToSymbol(c_spheres, spheres, sizeof(Sphere) * ns));
    GFX_CHECK(cudaMemcpyToSymbol(c_scene, &sp, sizeof(sp)));

    uint32_t* d_fb; float* d_lum; float* d_partial;
    const int redBlocks = (N + 255) / 256;
    GFX_CHECK(cudaMalloc(&d_fb, N * sizeof(uint32_t)));
    GFX_CHECK(cudaMalloc(&d_lum, N * sizeof(float)));
    GFX_CHECK(cudaMalloc(&d_partial, redBlocks * sizeof(float)));

    dim3 block(16, 16), grid((W + 15) / 16, (H + 15) / 16);
    render<<<grid, block>>>(d_fb, d_lum, W, H);
    GFX_CHECK(cudaGetLastError());
    block_luminance<<<redBlocks, 256>>>(d_lum, d_partial, N);
    GFX_CHECK(cudaGetLastError());
    GFX_CHECK(cudaDeviceSynchronize());

    std::vector<uint32_t> fb(N);
    std::vector<float> partial(redBlocks);
    GFX_CHECK(cudaMemcpy(fb.data(), d_fb, N * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    GFX_CHECK(cudaMemcpy(partial.data(), d_partial, redBlocks * sizeof(float), cudaMemcpyDeviceToHost));

    double total = 0.0;
    for (int b = 0; b < redBlocks; ++b) total += partial[b];
    printf("rendered %dx%d, %d spheres, %d bounces\n", W, H, ns, MAX_BOUNCES);
    printf("mean luminance = %.4f\n", total / N);
    printf("center pixel = #%06X, top-left = #%06X, bottom-right = #%06X\n",
           fb[(H / 2) * W + W / 2], fb[0], fb[N - 1]);
    printf("image digest = %llu\n", image_digest(fb.data(), fb.size()));

    GFX_CHECK(cudaFree(d_fb));
    GFX_CHECK(cudaFree(d_lum));
    GFX_CHECK(cudaFree(d_partial));
    return 0;
}
