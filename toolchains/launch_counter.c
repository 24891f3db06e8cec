/* Counts the kernels a CUDA program ran on the GPU and digests what it read back from the GPU, for the program
 * sandbox (toolchains/launches.py).
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH: the driver calls InitializeInjection at cuInit, which
 * turns on CUPTI's kernel activity records and its callbacks on the calls that copy device memory to the host. At
 * exit the records are flushed and their number is written to the file named by CASS_KERNEL_LAUNCHES. A program that
 * never initialises CUDA never loads this library and leaves no file, which the launcher reads as 0 kernels; one that
 * initialises CUDA and launches nothing writes 0.
 *
 * Device reads: every copy from device to host memory (cudaMemcpy, cudaMemcpy2D, cudaMemcpyFromSymbol, their Async
 * and per-thread-stream forms, cuMemcpyDtoH and cuMemcpy with a host destination, which HIP's NVIDIA back end calls) is
 * digested once its bytes are on the host: a synchronous copy when its call returns, an asynchronous one at the next
 * call that synchronises (a stream, an event, the device, a synchronous copy, freeing pinned memory); one still
 * pending at exit is counted, not read. Each copy's line in the file named by CASS_DEVICE_READS gives its bytes, a
 * 64-bit digest, its non-zero bytes, and the sums of its finite values read as float32 and as float64 with the
 * count of the others; copies past MAX_RECORDS are folded into the last line. Calls made by the CUDA runtime into
 * the driver are not counted again. */
#include <cupti.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define MAX_RECORDS 4096
#define HASH_PRIME 0x9E3779B97F4A7C15ull

/* One copy's digest, built over its bytes as one stream (a 2D copy's rows in order). */
typedef struct {
    unsigned long long bytes, nonzero, hash, f32_other, f64_other;
    double f32_sum, f64_sum;
    unsigned char tail[8];
    unsigned tail_len;
} Read;

/* A region of host memory a copy wrote: ``rows`` rows of ``width`` bytes, ``pitch`` apart. */
typedef struct {
    const unsigned char *start;
    size_t width, rows, pitch;
} Region;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Read reads[MAX_RECORDS];
static unsigned long long read_count, pending_at_exit;
static Region *pending;
static size_t pending_count, pending_size;
static __thread int in_runtime;
typedef CUresult (*PointerAttribute)(void *, CUpointer_attribute, CUdeviceptr);
static PointerAttribute pointer_attribute;

static void mix_word(Read *read, unsigned long long word) {
    float halves[2];
    double whole;
    read->hash = (read->hash ^ word) * HASH_PRIME;
    read->hash ^= read->hash >> 31;
    memcpy(halves, &word, sizeof halves);
    memcpy(&whole, &word, sizeof whole);
    for (int i = 0; i < 2; i++) {
        if (isfinite(halves[i])) {
            read->f32_sum += halves[i];
        } else {
            read->f32_other++;
        }
    }
    if (isfinite(whole)) {
        read->f64_sum += whole;
    } else {
        read->f64_other++;
    }
}

static void digest_bytes(Read *read, const unsigned char *data, size_t size) {
    unsigned long long word;
    for (size_t i = 0; i < size; i++) {
        read->nonzero += data[i] != 0;
    }
    read->bytes += size;
    while (size) {
        if (read->tail_len || size < 8) {
            read->tail[read->tail_len++] = *data++;
            size--;
            if (read->tail_len == 8) {
                memcpy(&word, read->tail, 8);
                mix_word(read, word);
                read->tail_len = 0;
            }
            continue;
        }
        memcpy(&word, data, 8);
        mix_word(read, word);
        data += 8;
        size -= 8;
    }
}

/* Digest a region into the next record (the last one, once MAX_RECORDS are taken). Called with the lock held. */
static void record(Region region) {
    Read *read = &reads[read_count < MAX_RECORDS ? read_count : MAX_RECORDS - 1];
    if (read_count < MAX_RECORDS) {
        memset(read, 0, sizeof *read);
    }
    read_count++;
    for (size_t row = 0; row < region.rows; row++) {
        digest_bytes(read, region.start + row * region.pitch, region.width);
    }
}

static void settle_pending(void) {
    for (size_t i = 0; i < pending_count; i++) {
        record(pending[i]);
    }
    pending_count = 0;
}

static void add_pending(Region region) {
    if (pending_count == pending_size) {
        size_t size = pending_size ? 2 * pending_size : 64;
        Region *grown = realloc(pending, size * sizeof *grown);
        if (!grown) {
            pending_at_exit++;   /* no room to remember it: counted as never read */
            return;
        }
        pending = grown;
        pending_size = size;
    }
    pending[pending_count++] = region;
}

/* Whether ``pointer`` is device memory (not host memory, pinned or pageable), as the driver says. */
static int on_device(const void *pointer) {
    unsigned int type = 0;
    int result;
    if (!pointer_attribute) {
        return 0;
    }
    in_runtime++;   /* the driver call below is ours: not a copy of the program's */
    result = pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pointer) == CUDA_SUCCESS &&
             (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY);
    in_runtime--;
    return result;
}

static int to_host(enum cudaMemcpyKind kind, const void *dst, const void *src) {
    return kind == cudaMemcpyDeviceToHost || (kind == cudaMemcpyDefault && !on_device(dst) && on_device(src));
}

/* The host region a copy call writes, where it copies device memory to the host; 0 where it does not. */
static int runtime_read(CUpti_CallbackId id, const void *params, Region *region, int *asynchronous) {
    *asynchronous = 0;
    switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
        *asynchronous = 1;
        /* fall through */
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
        const cudaMemcpy_v3020_params *p = params;   /* the Async forms' parameters begin with the same fields */
        *region = (Region){p->dst, p->count, 1, p->count};
        return to_host(p->kind, p->dst, p->src);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000:
        *asynchronous = 1;
        /* fall through */
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000: {
        const cudaMemcpy2D_v3020_params *p = params;
        *region = (Region){p->dst, p->width, p->height, p->dpitch};
        return to_host(p->kind, p->dst, p->src);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000:
        *asynchronous = 1;
        /* fall through */
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000: {
        const cudaMemcpyFromSymbol_v3020_params *p = params;
        *region = (Region){p->dst, p->count, 1, p->count};
        return p->kind == cudaMemcpyDeviceToHost || (p->kind == cudaMemcpyDefault && !on_device(p->dst));
    }
    default:
        return 0;
    }
}

static int driver_read(CUpti_CallbackId id, const void *params, Region *region, int *asynchronous) {
    *asynchronous = 0;
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
        *asynchronous = 1;
        /* fall through */
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: {
        const cuMemcpyDtoH_v2_params *p = params;
        *region = (Region){p->dstHost, p->ByteCount, 1, p->ByteCount};
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
        *asynchronous = 1;
        /* fall through */
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy: {
        const cuMemcpy_params *p = params;
        *region = (Region){(const unsigned char *)p->dst, p->ByteCount, 1, p->ByteCount};
        return !on_device((const void *)p->dst) && on_device((const void *)p->src);
    }
    default:
        return 0;
    }
}

static int synchronises(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        return id == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 ||
               id == CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020 ||
               id == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 ||
               id == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000 ||
               id == CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020 ||
               id == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 || id == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000;
    }
    return id == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize || id == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize ||
           id == CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize || id == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2;
}

static int frees_pinned(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? id == CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020
                                                 : id == CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost;
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const CUpti_CallbackData *call) {
    Region region;
    int asynchronous, copies;
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && in_runtime) {
        return;   /* the runtime's own driver call, or ours */
    }
    if (call->callbackSite == CUPTI_API_ENTER) {
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
            in_runtime++;
        }
        if (frees_pinned(domain, id)) {
            pthread_mutex_lock(&lock);
            settle_pending();   /* a copy into the freed memory has landed or is lost with it */
            pthread_mutex_unlock(&lock);
        }
        return;
    }
    copies = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_read(id, call->functionParams, &region, &asynchronous)
                                                   : driver_read(id, call->functionParams, &region, &asynchronous);
    pthread_mutex_lock(&lock);
    if (synchronises(domain, id)) {
        settle_pending();
    }
    if (copies && region.width && region.rows) {
        if (asynchronous) {
            add_pending(region);
        } else {
            record(region);
        }
    }
    pthread_mutex_unlock(&lock);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        in_runtime--;
    }
}

static void report_reads(const char *path) {
    FILE *out = fopen(path, "w");
    unsigned long long kept;
    if (!out) {
        return;
    }
    pthread_mutex_lock(&lock);
    kept = read_count < MAX_RECORDS ? read_count : MAX_RECORDS;
    fprintf(out, "device-reads 1 copies %llu pending %llu\n", read_count, pending_at_exit + pending_count);
    for (unsigned long long i = 0; i < kept; i++) {
        Read *read = &reads[i];
        if (read->tail_len) {   /* the last bytes of a copy whose size is not a multiple of 8 */
            unsigned long long word = 0;
            float last;
            if (read->tail_len >= 4) {   /* a last float32 */
                memcpy(&last, read->tail, sizeof last);
                if (isfinite(last)) {
                    read->f32_sum += last;
                } else {
                    read->f32_other++;
                }
            }
            memcpy(&word, read->tail, read->tail_len);
            read->hash = (read->hash ^ word ^ read->tail_len) * HASH_PRIME;
            read->tail_len = 0;
        }
        fprintf(out, "%llu %016llx %llu %.17g %llu %.17g %llu\n", read->bytes, read->hash, read->nonzero,
                read->f32_sum, read->f32_other, read->f64_sum, read->f64_other);
    }
    pthread_mutex_unlock(&lock);
    fclose(out);
}

static void report(void) {
    const char *path = getenv("CASS_KERNEL_LAUNCHES");
    const char *reads_path = getenv("CASS_DEVICE_READS");
    FILE *out;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (path && (out = fopen(path, "w"))) {
        fprintf(out, "%llu\n", __atomic_load_n(&kernels, __ATOMIC_RELAXED));
        fclose(out);
    }
    if (reads_path) {
        report_reads(reads_path);
    }
}

static const CUpti_CallbackId RUNTIME_CALLS[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
};
static const CUpti_CallbackId DRIVER_CALLS[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
};

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
    if (getenv("CASS_DEVICE_READS")) {
        CUpti_SubscriberHandle subscriber;
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        pointer_attribute = (PointerAttribute)dlsym(driver ? driver : RTLD_DEFAULT, "cuPointerGetAttribute");
        result = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_call, NULL);
        if (result != CUPTI_SUCCESS) {
            return failed("cuptiSubscribe", result);
        }
        for (size_t i = 0; i < sizeof RUNTIME_CALLS / sizeof *RUNTIME_CALLS && result == CUPTI_SUCCESS; i++) {
            result = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, RUNTIME_CALLS[i]);
        }
        for (size_t i = 0; i < sizeof DRIVER_CALLS / sizeof *DRIVER_CALLS && result == CUPTI_SUCCESS; i++) {
            result = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, DRIVER_CALLS[i]);
        }
        if (result != CUPTI_SUCCESS) {
            return failed("cuptiEnableCallback", result);
        }
    }
    atexit(report);
    return 1;
}
