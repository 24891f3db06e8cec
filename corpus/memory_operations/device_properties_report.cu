// Expected to be filtered out (kept on purpose): host-only utility with no __global__ kernel.
// Prints the properties of every visible device, as many repositories' "deviceQuery" helpers do.
#include <cstdio>
#include <cuda_runtime.h>

static void print_device(int dev) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        printf("device %d: properties unavailable\n", dev);
        return;
    }
    printf("device %d: %s\n", dev, prop.name);
    printf("  compute capability  %d.%d\n", prop.major, prop.minor);
    printf("  multiprocessors     %d\n", prop.multiProcessorCount);
    printf("  global memory       %.1f GiB\n", prop.totalGlobalMem / 1073741824.0);
    printf("  shared mem / block  %zu KiB\n", prop.sharedMemPerBlock / 1024);
    printf("  warp size           %d\n", prop.warpSize);
    printf("  max threads / block %d\n", prop.maxThreadsPerBlock);
}

int main() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("no CUDA device\n");
        return 0;
    }
    for (int dev = 0; dev < count; ++dev) print_device(dev);
    return 0;
}
