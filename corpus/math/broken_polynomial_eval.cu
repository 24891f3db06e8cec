// Expected to fail on both stacks (kept on purpose): a compile error, as scraped code often has.
// The Horner loop uses an undeclared variable and a statement lacks its semicolon.
#include <cstdio>
#include <cuda_runtime.h>

__constant__ float c_coeffs[8];

__device__ float horner(float x, int degree) {
    float acc = c_coeffs[degree];
    for (int i = degree - 1; i >= 0; --i)
        acc = acc * x + c_coeffs[i]
    return acc;
}

__global__ void eval_poly(const float *xs, float *ys, int n, int degree) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ys[i] = horner(xs[i], degre);
}

int main() {
    const int n = 1024;
    float coeffs[8] = {1.0f, -0.5f, 0.25f, -0.125f, 0.0625f, 0.f, 0.f, 0.f};
    cudaMemcpyToSymbol(c_coeffs, coeffs, sizeof(coeffs));
    float *xs, *ys;
    cudaMalloc(&xs, n * sizeof(float));
    cudaMalloc(&ys, n * sizeof(float));
    eval_poly<<<(n + 255) / 256, 256>>>(xs, ys, n, 4);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
