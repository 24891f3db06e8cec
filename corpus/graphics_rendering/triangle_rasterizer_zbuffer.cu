// triangle_rasterizer_zbuffer.cu
// Tiny software rasterizer:
//   transform_vertices : model-view-projection (matrix in __constant__) + viewport
//   clear_buffers      : grid-stride fill of the packed depth/id buffer
//   rasterize          : one thread per triangle, edge functions over the
//                        bounding box, depth test via a 64-bit atomicCAS loop
//   resolve            : flat shading from the winning triangle id
#include <vector>
#include "graphics_rendering_common.cuh"

#define GRID_N 24                         // height-field grid is GRID_N x GRID_N quads
#define NUM_VERTS ((GRID_N + 1) * (GRID_N + 1))
#define NUM_TRIS (GRID_N * GRID_N * 2)
#define EMPTY_PIXEL 0xFFFFFFFFFFFFFFFFull

__constant__ float c_mvp[16];             // row-major 4x4

struct ScreenVert { float x, y, z; };

__device__ ScreenVert project(Vec3 p, int w, int h)
{
    float cx = c_mvp[0] * p.x + c_mvp[1] * p.y + c_mvp[2] * p.z + c_mvp[3];
    float cy = c_mvp[4] * p.x + c_mvp[5] * p.y + c_mvp[6] * p.z + c_mvp[7];
    float cz = c_mvp[8] * p.x + c_mvp[9] * p.y + c_mvp[10] * p.z + c_mvp[11];
    float cw = c_mvp[12] * p.x + c_mvp[13] * p.y + c_mvp[14] * p.z + c_mvp[15];
    float iw = 1.0f / cw;
    ScreenVert s;
    s.x = (cx * iw * 0.5f + 0.5f) * w;
    s.y = (1.0f - (cy * iw * 0.5f + 0.5f)) * h;
    s.z = cz * iw * 0.5f + 0.5f;          // depth in [0,1]
    return s;
}

__global__ void transform_vertices(const Vec3* __restrict__ in, ScreenVert* __restrict__ out,
                                   int n, int w, int h)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = project(in[i], w, h);
}

__global__ void clear_buffers(unsigned long long* __restrict__ zbuf, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        zbuf[i] = EMPTY_PIXEL;
}

__device__ __forceinline__ float edge_fn(float ax, float ay, float bx, float by, float px, float py)
{
    return (bx - ax) * (py - ay) - (by - ay) * (px - ax);
}

// Keep the smaller packed value (depth in the high 32 bits, triangle id low).
__device__ void depth_test_write(unsigned long long* addr, unsigned long long val)
{
    unsigned long long old = *addr, assumed;
    while (val < old) {
        assumed = old;
        old = atomicCAS(addr, assumed, val);
        if (old == assumed) break;
    }
}

__global__ void rasterize(const ScreenVert* __restrict__ v, const int* __restrict__ idx,
                          unsigned long long* __restrict__ zbuf, int ntri, int w, int h)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ntri) return;
    ScreenVert a = v[idx[3 * t]], b = v[idx[3 * t + 1]], c = v[idx[3 * t + 2]];

    float area = edge_fn(a.x, a.y, b.x, b.y, c.x, c.y);
    if (fabsf(area) < 1e-8f) return;                     // degenerate
    float invArea = 1.0f / area;

    int x0 = max(0, (int)floorf(fminf(a.x, fminf(b.x, c.x))));
    int x1 = min(w - 1, (int)ceilf(fmaxf(a.x, fmaxf(b.x, c.x))));
    int y0 = max(0, (int)floorf(fminf(a.y, fminf(b.y, c.y))));
    int y1 = min(h - 1, (int)ceilf(fmaxf(a.y, fmaxf(b.y, c.y))));

    for (int py = y0; py <= y1; ++py) {
        for (int px = x0; px <= x1; ++px) {
            float sx = px + 0.5f, sy = py + 0.5f;
            float w0 = edge_fn(b.x, b.y, c.x, c.y, sx, sy) * invArea;
            float w1 = edge_fn(c.x, c.y, a.x, a.y, sx, sy) * invArea;
            float w2 = 1.0f - w0 - w1;
            if (w0 < 0.0f || w1 < 0.0f || w2 < 0.0f) continue;
            float z = w0 * a.z + w1 * b.z + w2 * c.z;
            if (z < 0.0f || z > 1.0f) continue;
            unsigned int zq = (unsigned int)(z * 4294967040.0f);
            depth_test_write(&zbuf[py * w + px], ((unsigned long long)zq << 32) | (unsigned int)t);
        }
    }
}

__global__ void resolve(const unsigned long long* __restrict__ zbuf, const Vec3* __restrict__ normals,
                        uint32_t* __restrict__ fb, unsigned int* __restrict__ covered, int n)
{
    const Vec3 lightDir = normalize(make_vec3(0.4f, 0.8f, 0.45f));
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        unsigned long long packed = zbuf[i];
        if (packed == EMPTY_PIXEL) { fb[i] = 0x202030u; continue; }
        unsigned int tri = (unsigned int)(packed & 0xFFFFFFFFull);
        float ndl = fmaxf(dot(normals[tri], lightDir), 0.0f);
        Vec3 base = (tri & 1) ? make_vec3(0.85f, 0.7f, 0.4f) : make_vec3(0.75f, 0.6f, 0.35f);
        fb[i] = pack_rgb(base * (0.15f + 0.85f * ndl));
        atomicAdd(covered, 1u);
    }
}

static void mat_mul(const float* a, const float* b, float* out)
{
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
            float s = 0.0f;
            for (int k = 0; k < 4; ++k) s += a[r * 4 + k] * b[k * 4 + c];
            out[r * 4 + c] = s;
        }
}

int main()
{
    const int W = 400, H = 300, NPIX = W * H;

    // Height field y = f(x,z) over [-1,1]^2 with a deterministic bump pattern
    std::vector<Vec3> verts(NUM_VERTS);
    for (int j = 0; j <= GRID_N; ++j)
        for (int i = 0; i <= GRID_N; ++i) {
            float x = -1.0f + 2.0f * i / GRID_N, z = -1.0f + 2.0f * j / GRID_N;
            float y = 0.25f * sinf(3.0f * x) * cosf(2.5f * z);
            verts[j * (GRID_N + 1) + i] = make_vec3(x, y, z);
        }
    std::vector<int> idx(3 * NUM_TRIS);
    std::vector<Vec3> normals(NUM_TRIS);
    int t = 0;
    for (int j = 0; j < GRID_N; ++j)
        for (int i = 0; i < GRID_N; ++i) {
            int v00 = j * (GRID_N + 1) + i, v10 = v00 + 1, v01 = v00 + GRID_N + 1, v11 = v01 + 1;
            int quad[2][3] = {{v00, v01, v10}, {v10, v01, v11}};
            for (int q = 0; q < 2; ++q, ++t) {
                for (int k = 0; k < 3; ++k) idx[3 * t + k] = quad[q][k];
                Vec3 e1 = verts[quad[q][1]] - verts[quad[q][0]];
                Vec3 e2 = verts[quad[q][2]] - verts[quad[q][0]];
                normals[t] = normalize(cross(e1, e2));
            }
        }

    // Perspective(fov 60, near 0.1, far 10) * view (translate + tilt)
    const float f = 1.0f / tanf(30.0f * 3.14159265f / 180.0f), aspect = (float)W / H;
    const float n = 0.1f, fa = 10.0f;
    float proj[16] = {f / aspect, 0, 0, 0,  0, f, 0, 0,
                      0, 0, (fa + n) / (n - fa), 2 * fa * n / (n - fa),  0, 0, -1, 0};
    const float ct = cosf(0.6f), st = sinf(0.6f);
    float view[16] = {1, 0, 0, 0,  0, ct, -st, 0,  0, st, ct, -2.6f,  0, 0, 0, 1};
    float mvp[16];
    mat_mul(proj, view, mvp);
    GFX_CHECK(cudaMemcpyToSymbol(c_mvp, mvp, sizeof(mvp)));

    Vec3 *d_verts, *d_normals; ScreenVert* d_sv; int* d_idx;
    unsigned long long* d_zbuf; uint32_t* d_fb; unsigned int* d_cov;
    GFX_CHECK(cudaMalloc(&d_verts, NUM_VERTS * sizeof(Vec3)));
    GFX_CHECK(cudaMalloc(&d_normals, NUM_TRIS * sizeof(Vec3)));
    GFX_CHECK(cudaMalloc(&d_sv, NUM_VERTS * sizeof(ScreenVert)));
    GFX_CHECK(cudaMalloc(&d_idx, 3 * NUM_TRIS * sizeof(int)));
    GFX_CHECK(cudaMalloc(&d_zbuf, NPIX * sizeof(unsigned long long)));
    GFX_CHECK(cudaMalloc(&d_fb, NPIX * sizeof(uint32_t)));
    GFX_CHECK(cudaMalloc(&d_cov, sizeof(unsigned int)));
    GFX_CHECK(cudaMemcpy(d_verts, verts.data(), NUM_VERTS * sizeof(Vec3), cudaMemcpyHostToDevice));
    GFX_CHECK(cudaMemcpy(d_normals, normals.data(), NUM_TRIS * sizeof(Vec3), cudaMemcpyHostToDevice));
    GFX_CHECK(cudaMemcpy(d_idx, idx.data(), 3 * NUM_TRIS * sizeof(int), cudaMemcpyHostToDevice));
    GFX_CHECK(cudaMemset(d_cov, 0, sizeof(unsigned int)));

    transform_vertices<<<8, 128>>>(d_verts, d_sv, NUM_VERTS, W, H);
    clear_buffers<<<64, 256>>>(d_zbuf, NPIX);
    rasterize<<<(NUM_TRIS + 127) / 128, 128>>>(d_sv, d_idx, d_zbuf, NUM_TRIS, W, H);
    resolve<<<64, 256>>>(d_zbuf, d_normals, d_fb, d_cov, NPIX);
    GFX_CHECK(cudaGetLastError());
    GFX_CHECK(cudaDeviceSynchronize());

    std::vector<uint32_t> fb(NPIX);
    std::vector<unsigned long long> zbuf(NPIX);
    unsigned int covered = 0;
    GFX_CHECK(cudaMemcpy(fb.data(), d_fb, NPIX * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    GFX_CHECK(cudaMemcpy(zbuf.data(), d_zbuf, NPIX * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    GFX_CHECK(cudaMemcpy(&covered, d_cov, sizeof(unsigned int), cudaMemcpyDeviceToHost));

    double depthSum = 0.0;
    for (int i = 0; i < NPIX; ++i)
        if (zbuf[i] != EMPTY_PIXEL) depthSum += (double)(zbuf[i] >> 32) / 4294967040.0;
    printf("triangles = %d, pixels covered = %u (%.2f%%)\n", NUM_TRIS, covered, 100.0 * covered / NPIX);
    printf("mean depth of covered pixels = %.6f\n", covered ? depthSum / covered : 0.0);
    printf("center triangle id = %u, center color = #%06X\n",
           (unsigned int)(zbuf[(H / 2) * W + W / 2] & 0xFFFFFFFFull), fb[(H / 2) * W + W / 2]);
    printf("framebuffer digest = %llu\n", image_digest(fb.data(), fb.size()));

    GFX_CHECK(cudaFree(d_verts)); GFX_CHECK(cudaFree(d_normals)); GFX_CHECK(cudaFree(d_sv));
    GFX_CHECK(cudaFree(d_idx)); GFX_CHECK(cudaFree(d_zbuf)); GFX_CHECK(cudaFree(d_fb));
    GFX_CHECK(cudaFree(d_cov));
    return 0;
}
