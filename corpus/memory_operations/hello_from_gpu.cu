// Expected to be filtered out (kept on purpose): hello-world boilerplate.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void hello() {
    printf("Hello World from block %d thread %d\n", blockIdx.x, threadIdx.x);
}

int main() {
    hello<<<2, 4>>>();
    cudaDeviceSynchronize();
    return 0;
}
