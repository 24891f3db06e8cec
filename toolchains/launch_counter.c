/* Counts the kernels a CUDA program ran on the GPU, for the program sandbox (toolchains/launches.py).
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH: the driver calls InitializeInjection at cuInit, which
 * turns on CUPTI's kernel activity records. At exit the records are flushed and their number is written to the
 * file named by CASS_KERNEL_LAUNCHES. A program that never initialises CUDA never loads this library and leaves no
 * file, which the launcher reads as 0 kernels; one that initialises CUDA and launches nothing writes 0. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define BUFFER_BYTES (1u << 20)

static unsigned long long kernels;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    CUpti_Activity *record = NULL;
    (void)context;
    (void)stream;
    (void)size;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            __atomic_add_fetch(&kernels, 1, __ATOMIC_RELAXED);
        }
    }
    free(buffer);
}

static void report(void) {
    const char *path = getenv("CASS_KERNEL_LAUNCHES");
    FILE *out;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (path && (out = fopen(path, "w"))) {
        fprintf(out, "%llu\n", __atomic_load_n(&kernels, __ATOMIC_RELAXED));
        fclose(out);
    }
}

static int failed(const char *call, CUptiResult result) {
    const char *text = NULL;
    cuptiGetResultString(result, &text);
    fprintf(stderr, "launch counter: %s failed: %s\n", call, text ? text : "unknown CUPTI error");
    return 0;
}

int InitializeInjection(void) {
    CUptiResult result = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (result != CUPTI_SUCCESS) {
        return failed("cuptiActivityRegisterCallbacks", result);
    }
    result = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (result != CUPTI_SUCCESS) {
        return failed("cuptiActivityEnable", result);
    }
    atexit(report);
    return 1;
}
