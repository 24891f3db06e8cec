// Point-cloud splatting with a 64-bit atomic depth buffer. 2^20 points on a
// bumpy sphere are rotated, perspective-projected into a 512x512 frame and
// splatted as 2x2 footprints; each pixel keeps the nearest point through
// atomicMin on a key (quantised depth << 32 | point index), so ties are
// resolved by index and the result does not depend on the schedule. A resolve
// kernel turns keys into depth-shaded colours (background where no point
// landed) and counts covered pixels with an integer atomic.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>

#define CK(call)                                                              \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error '%s' at %s:%d\n",                     \
                    cudaGetErrorString(err_), __FILE__, __LINE__);            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define NPTS (1 << 20)
#define W 512
#define H 512
#define ZNEAR 1.5f
#define ZFAR 5.5f

struct Rot { float m[9]; };

__global__ void clear_kernel(unsigned long long* zbuf, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) zbuf[i] = ~0ull;
}

__global__ void splat_kernel(const float4* __restrict__ pts, unsigned long long* zbuf, Rot r, int npts) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < npts; i += gridDim.x * blockDim.x) {
        float4 p = pts[i];
        float x = r.m[0] * p.x + r.m[1] * p.y + r.m[2] * p.z;
        float y = r.m[3] * p.x + r.m[4] * p.y + r.m[5] * p.z;
        float z = r.m[6] * p.x + r.m[7] * p.y + r.m[8] * p.z + 3.5f;  // camera at distance 3.5
        if (z <= ZNEAR || z >= ZFAR) continue;
        float f = 1.4f / z;
        int px = (int)floorf((x * f * 0.5f + 0.5f) * W);
        int py = (int)floorf((0.5f - y * f * 0.5f) * H);
        unsigned int dq = (unsigned int)((z - ZNEAR) / (ZFAR - ZNEAR) * 16777215.0f);
        unsigned long long key = ((unsigned long long)dq << 32) | (unsigned int)i;
        for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) {
                int sx = px + dx, sy = py + dy;
                if (sx >= 0 && sx < W && sy >= 0 && sy < H) atomicMin(&zbuf[sy * W + sx], key);
            }
    }
}

__global__ void resolve_kernel(const unsigned long long* __restrict__ zbuf, const uchar4* __restrict__ pcol,
                               float4* __restrict__ img, unsigned int* covered) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    unsigned long long key = zbuf[y * W + x];
    float4 c;
    if (key == ~0ull) {
        float t = (float)y / (float)(H - 1);
        c = make_float4(0.05f + 0.1f * t, 0.05f + 0.1f * t, 0.2f + 0.2f * t, 0.0f);
    } else {
        unsigned int idx = (unsigned int)(key & 0xffffffffull);
        float depth = (float)(key >> 32) * (1.0f / 16777215.0f);
        float shade = 1.0f - 0.7f * depth;
        uchar4 pc = pcol[idx];
        c = make_float4(pc.x / 255.0f * shade, pc.y / 255.0f * shade, pc.z / 255.0f * shade, depth);
        atomicAdd(covered, 1u);
    }
    img[y * W + x] = c;
}

int main(int argc, char** argv) {
    std::vector<float4> h_pts(NPTS);
    std::vector<uchar4> h_col(NPTS);
    uint64_t s = 0x5DEECE66DULL;
    if (argc > 1) s = strtoull(argv[1], nullptr, 0);  // optional argument: LCG seed
    auto uni = [&s]() { s = s * 6364136223846793005ULL + 1442695040888963407ULL; return (double)(s >> 11) * (1.0 / 9007199254740992.0); };
    for (int i = 0; i < NPTS; ++i) {
        double zc = 2.0 * uni() - 1.0, phi = 6.283185307179586 * uni();
        double rxy = sqrt(1.0 - zc * zc), theta = acos(zc);
        double rad = 1.0 + 0.12 * sin(5.0 * theta) * sin(4.0 * phi);
        h_pts[i] = make_float4((float)(rad * rxy * cos(phi)), (float)(rad * rxy * sin(phi)), (float)(rad * zc), 1.0f);
        int band = (int)(theta * 6.0) % 3;
        h_col[i] = make_uchar4(band == 0 ? 230 : 60, band == 1 ? 210 : 70, band == 2 ? 240 : 80, 255);
    }
    double ay = 0.7, ax = -0.4;  // rotation about y then x
    Rot r;
    double cy = cos(ay), sy = sin(ay), cx = cos(ax), sx = sin(ax);
    double m[9] = {cy, 0, sy, sx * sy, cx, -sx * cy, -cx * sy, sx, cx * cy};
    for (int k = 0; k < 9; ++k) r.m[k] = (float)m[k];

    const int npix = W * H;
    float4* d_pts; uchar4* d_col; unsigned long long* d_z; float4* d_img; unsigned int* d_cov;
    CK(cudaMalloc(&d_pts, NPTS * sizeof(float4)));
    CK(cudaMalloc(&d_col, NPTS * sizeof(uchar4)));
    CK(cudaMalloc(&d_z, npix * sizeof(unsigned long long)));
    CK(cudaMalloc(&d_img, npix * sizeof(float4)));
    CK(cudaMalloc(&d_cov, sizeof(unsigned int)));
    CK(cudaMemcpy(d_pts, h_pts.data(), NPTS * sizeof(float4), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_col, h_col.data(), NPTS * sizeof(uchar4), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_z, 0, npix * sizeof(unsigned long long)));
    CK(cudaMemset(d_img, 0xFF, npix * sizeof(float4)));  // NaN sentinel
    CK(cudaMemset(d_cov, 0, sizeof(unsigned int)));

    clear_kernel<<<(npix + 255) / 256, 256>>>(d_z, npix);
    CK(cudaGetLastError());
    splat_kernel<<<1024, 256>>>(d_pts, d_z, r, NPTS);
    CK(cudaGetLastError());
    dim3 block(32, 8), grid(W / 32, H / 8);
    resolve_kernel<<<grid, block>>>(d_z, d_col, d_img, d_cov);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    std::vector<unsigned long long> h_z(npix);
    std::vector<float4> h_img(npix);
    unsigned int covered = 0;
    CK(cudaMemcpy(h_z.data(), d_z, npix * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h_img.data(), d_img, npix * sizeof(float4), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&covered, d_cov, sizeof(unsigned int), cudaMemcpyDeviceToHost));
    uint64_t zh = 1469598103934665603ULL;
    double csum = 0.0;
    for (int i = 0; i < npix; ++i) {
        zh ^= h_z[i]; zh *= 1099511628211ULL;
        double wgt = 1.0 + (i % 89);
        csum += wgt * (h_img[i].x + 2.0 * h_img[i].y + 3.0 * h_img[i].z + 4.0 * h_img[i].w);
    }
    printf("zbuffer_hash 0x%016llx\n", (unsigned long long)zh);
    printf("covered_pixels %u of %d\n", covered, npix);
    printf("color_checksum %.10e\n", csum);
    const int samples[3] = {W * 256 + 256, W * 200 + 300, W * 10 + 10};
    for (int k = 0; k < 3; ++k) {
        float4 c = h_img[samples[k]];
        printf("pixel[%d] key 0x%016llx = %.10e %.10e %.10e %.10e\n", samples[k], h_z[samples[k]], c.x, c.y, c.z, c.w);
    }
    CK(cudaFree(d_pts)); CK(cudaFree(d_col)); CK(cudaFree(d_z)); CK(cudaFree(d_img)); CK(cudaFree(d_cov));
    return 0;
}
