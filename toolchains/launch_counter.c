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
 * and per-thread-stream forms, cuMemcpyDtoH and cuMemcpy with a host destination; on HIP's NVIDIA back end hipMemcpy
 * is cudaMemcpy and hipMemcpyDtoH is cuMemcpyDtoH; not followed: 3D copies, copies from arrays, cuMemcpy2D) is
 * digested once its bytes are on the host: a synchronous copy, or an asynchronous one into pageable memory, when its
 * call returns (and only where the call succeeded); an asynchronous one into pinned memory at the next call that
 * waits for its stream (a synchronisation of that stream; of the device, the context or an event, and a synchronous
 * copy, taken as waiting for every stream; freeing or unregistering pinned memory); one still pending at exit is
 * counted, not read. Each copy's line in the file named by CASS_DEVICE_READS gives its bytes, a
 * 64-bit digest, its non-zero bytes, and the sums of its finite values read as float32 and as float64 with the
 * count of the others; copies past MAX_RECORDS are folded into the last line. Calls made by the CUDA runtime into
 * the driver are not counted again. */
#include <cupti.h>
#include <dlfcn.h>
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
#define LANES 4
#define LOW_BITS 0x7F7F7F7F7F7F7F7Full

/* One copy's digest, built over its bytes as one stream (a 2D copy's rows in order), 32 bytes at a time: four 64-bit
 * words, each mixed into its own lane of the digest and summed into its own float32 and float64 accumulators (lanes
 * that do not wait on each other), the lanes combined in a fixed order at the end. */
typedef struct {
    unsigned long long bytes, nonzero, lanes[LANES], f32_other, f64_other;
    double f32_sums[2 * LANES], f64_sums[LANES];
    unsigned char tail[8 * LANES];
    unsigned tail_len;
} Read;

/* A region of host memory a copy wrote: ``rows`` rows of ``width`` bytes, ``pitch`` apart, by a copy on ``stream``. */
typedef struct {
    const unsigned char *start;
    size_t width, rows, pitch;
    const void *stream;
} Region;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Read reads[MAX_RECORDS];
static unsigned long long read_count, pending_at_exit;
static Region *pending;
static size_t pending_count, pending_size;
static __thread int in_runtime;
typedef CUresult (*PointerAttribute)(void *, CUpointer_attribute, CUdeviceptr);
static PointerAttribute pointer_attribute;

static unsigned long long mix(unsigned long long hash, unsigned long long word) {
    hash = (hash ^ word) * HASH_PRIME;
    return hash ^ (hash >> 31);
}

/* The zero bytes of a word: a byte's high bit is set in ``t`` exactly where the byte is 0. */
static unsigned zero_bytes(unsigned long long word) {
    unsigned long long t = (word & LOW_BITS) + LOW_BITS;
    return (unsigned)__builtin_popcountll(~(t | word | LOW_BITS));
}

/* Sum a float32 bit pattern into ``*sum`` where it is finite, else count it. */
static void add_float(unsigned bits, double *sum, unsigned long long *other) {
    float value;
    if ((bits & 0x7F800000u) == 0x7F800000u) {
        (*other)++;
        return;
    }
    memcpy(&value, &bits, sizeof value);
    *sum += value;
}

static void add_word(Read *read, unsigned lane, unsigned long long word) {
    double value;
    read->lanes[lane] = mix(read->lanes[lane], word);
    read->nonzero += 8 - zero_bytes(word);
    add_float((unsigned)word, &read->f32_sums[2 * lane], &read->f32_other);
    add_float((unsigned)(word >> 32), &read->f32_sums[2 * lane + 1], &read->f32_other);
    if ((word & 0x7FF0000000000000ull) == 0x7FF0000000000000ull) {
        read->f64_other++;
    } else {
        memcpy(&value, &word, sizeof value);
        read->f64_sums[lane] += value;
    }
}

static void add_block(Read *read, const unsigned char *block) {
    unsigned long long words[LANES];
    memcpy(words, block, sizeof words);
    for (unsigned lane = 0; lane < LANES; lane++) {
        add_word(read, lane, words[lane]);
    }
}

static void digest_bytes(Read *read, const unsigned char *data, size_t size) {
    size_t take;
    read->bytes += size;
    if (read->tail_len) {   /* complete the block an earlier row left */
        take = size < sizeof read->tail - read->tail_len ? size : sizeof read->tail - read->tail_len;
        memcpy(read->tail + read->tail_len, data, take);
        read->tail_len += take;
        data += take;
        size -= take;
        if (read->tail_len < sizeof read->tail) {
            return;
        }
        add_block(read, read->tail);
        read->tail_len = 0;
    }
    for (; size >= sizeof read->tail; data += sizeof read->tail, size -= sizeof read->tail) {
        add_block(read, data);
    }
    memcpy(read->tail, data, size);
    read->tail_len = size;
}

/* A copy's line of the reads file. */
typedef struct {
    unsigned long long bytes, hash, nonzero, f32_other, f64_other;
    double f32_sum, f64_sum;
} Digest;

/* The copy's digest and sums, its last partial block taken in: its whole words in their lanes, then its last bytes
 * (a last float32 where there are 4 of them or more) into the digest with their number. */
static Digest finish(const Read *read) {
    Read last = *read;
    unsigned words = last.tail_len / 8, rest = last.tail_len % 8;
    unsigned long long word;
    Digest digest = {last.bytes, LANES, 0, 0, 0, 0, 0};
    for (unsigned lane = 0; lane < words; lane++) {
        memcpy(&word, last.tail + 8 * lane, 8);
        add_word(&last, lane, word);
    }
    for (unsigned lane = 0; lane < LANES; lane++) {
        digest.hash = mix(digest.hash, last.lanes[lane] + lane);
    }
    if (rest) {
        word = 0;
        memcpy(&word, last.tail + 8 * words, rest);
        digest.hash = mix(digest.hash, word ^ rest);
        last.nonzero += 8 - zero_bytes(word);   /* the zero padding counts among the zero bytes */
        if (rest >= 4) {
            add_float((unsigned)word, &last.f32_sums[0], &last.f32_other);
        }
    }
    digest.hash = mix(digest.hash, last.bytes);
    for (unsigned i = 0; i < 2 * LANES; i++) {
        digest.f32_sum += last.f32_sums[i];
    }
    for (unsigned lane = 0; lane < LANES; lane++) {
        digest.f64_sum += last.f64_sums[lane];
    }
    digest.nonzero = last.nonzero;
    digest.f32_other = last.f32_other;
    digest.f64_other = last.f64_other;
    return digest;
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

/* Digest the pending copies of ``stream`` (all of them where it is ALL_STREAMS), in the order they were made. Called
 * with the lock held. */
#define ALL_STREAMS ((const void *)-1)
static void settle_pending(const void *stream) {
    size_t kept = 0;
    for (size_t i = 0; i < pending_count; i++) {
        if (stream == ALL_STREAMS || pending[i].stream == stream) {
            record(pending[i]);
        } else {
            pending[kept++] = pending[i];
        }
    }
    pending_count = kept;
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

/* The driver's memory type of ``pointer``: CU_MEMORYTYPE_DEVICE, _ARRAY, _HOST (pinned), or 0 for memory the driver
 * does not know (pageable host memory). cuPointerGetAttribute is not among the calls this library follows. */
static unsigned int memory_type(const void *pointer) {
    unsigned int type = 0;
    if (!pointer_attribute ||
        pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pointer) != CUDA_SUCCESS) {
        return 0;
    }
    return type;
}

static int on_device(const void *pointer) {
    unsigned int type = memory_type(pointer);
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY;
}

static int to_host(enum cudaMemcpyKind kind, const void *dst, const void *src) {
    return kind == cudaMemcpyDeviceToHost || (kind == cudaMemcpyDefault && !on_device(dst) && on_device(src));
}

/* The host region a copy call writes, where it copies device memory to the host (an asynchronous copy's region names
 * its stream); 0 where it does not. */
static int runtime_read(CUpti_CallbackId id, const void *params, Region *region, int *asynchronous) {
    *asynchronous = 0;
    switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
        const cudaMemcpyAsync_v3020_params *p = params;   /* the _ptsz form's parameters are the same */
        *region = (Region){p->dst, p->count, 1, p->count, p->stream};
        *asynchronous = 1;
        return to_host(p->kind, p->dst, p->src);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
        const cudaMemcpy_v3020_params *p = params;
        *region = (Region){p->dst, p->count, 1, p->count, NULL};
        return to_host(p->kind, p->dst, p->src);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000: {
        const cudaMemcpy2DAsync_v3020_params *p = params;
        *region = (Region){p->dst, p->width, p->height, p->dpitch, p->stream};
        *asynchronous = 1;
        return to_host(p->kind, p->dst, p->src);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000: {
        const cudaMemcpy2D_v3020_params *p = params;
        *region = (Region){p->dst, p->width, p->height, p->dpitch, NULL};
        return to_host(p->kind, p->dst, p->src);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000: {
        const cudaMemcpyFromSymbolAsync_v3020_params *p = params;
        *region = (Region){p->dst, p->count, 1, p->count, p->stream};
        *asynchronous = 1;
        return p->kind == cudaMemcpyDeviceToHost || (p->kind == cudaMemcpyDefault && !on_device(p->dst));
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000: {
        const cudaMemcpyFromSymbol_v3020_params *p = params;
        *region = (Region){p->dst, p->count, 1, p->count, NULL};
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
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
        const cuMemcpyDtoHAsync_v2_params *p = params;
        *region = (Region){p->dstHost, p->ByteCount, 1, p->ByteCount, p->hStream};
        *asynchronous = 1;
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: {
        const cuMemcpyDtoH_v2_params *p = params;
        *region = (Region){p->dstHost, p->ByteCount, 1, p->ByteCount, NULL};
        return 1;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync: {
        const cuMemcpyAsync_params *p = params;
        *region = (Region){(const unsigned char *)p->dst, p->ByteCount, 1, p->ByteCount, p->hStream};
        *asynchronous = 1;
        return !on_device((const void *)p->dst) && on_device((const void *)p->src);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy: {
        const cuMemcpy_params *p = params;
        *region = (Region){(const unsigned char *)p->dst, p->ByteCount, 1, p->ByteCount, NULL};
        return !on_device((const void *)p->dst) && on_device((const void *)p->src);
    }
    default:
        return 0;
    }
}

/* The pending copies a call waits for: one stream's (a stream synchronisation), every stream's (the device, the
 * context, an event: taken as waiting for all, and the synchronous copies, which wait for the legacy default stream
 * and so for the blocking streams), or none (NULL). */
static const void *settles(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *params) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000: {
            const void *stream = ((const cudaStreamSynchronize_v3020_params *)params)->stream;
            return stream ? stream : ALL_STREAMS;
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000:
            return ALL_STREAMS;
        default:
            return NULL;
        }
    }
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz: {
        const void *stream = ((const cuStreamSynchronize_params *)params)->hStream;
        return stream ? stream : ALL_STREAMS;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
        return ALL_STREAMS;
    default:
        return NULL;
    }
}

/* Calls after which host memory a copy may still land in is gone: freeing or unregistering pinned memory. */
static int releases_pinned(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    return domain == CUPTI_CB_DOMAIN_RUNTIME_API
               ? id == CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020 || id == CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000
               : id == CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost || id == CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister;
}

static int succeeded(CUpti_CallbackDomain domain, const CUpti_CallbackData *call) {
    if (!call->functionReturnValue) {
        return 0;
    }
    return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? *(const cudaError_t *)call->functionReturnValue == cudaSuccess
                                                 : *(const CUresult *)call->functionReturnValue == CUDA_SUCCESS;
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const CUpti_CallbackData *call) {
    Region region;
    int asynchronous, copies;
    const void *stream;
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && in_runtime) {
        return;   /* the runtime's own driver call */
    }
    if (call->callbackSite == CUPTI_API_ENTER) {
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
            in_runtime++;
        }
        if (releases_pinned(domain, id)) {
            pthread_mutex_lock(&lock);
            settle_pending(ALL_STREAMS);   /* a copy into the released memory has landed or is lost with it */
            pthread_mutex_unlock(&lock);
        }
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && in_runtime > 0) {
        in_runtime--;   /* never below 0: the call that initialised CUDA (and loaded this library) had no ENTER */
    }
    if (!succeeded(domain, call)) {
        return;   /* a failed call copied nothing, and waited for nothing */
    }
    copies = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_read(id, call->functionParams, &region, &asynchronous)
                                                   : driver_read(id, call->functionParams, &region, &asynchronous);
    /* a copy into pageable memory is done when its call returns, even an Async one: read it now, while the program
     * cannot yet have reused or freed the buffer */
    asynchronous = copies && asynchronous && memory_type(region.start) == CU_MEMORYTYPE_HOST;
    pthread_mutex_lock(&lock);
    if ((stream = settles(domain, id, call->functionParams))) {
        settle_pending(stream);
    }
    if (copies && region.width && region.rows) {
        if (asynchronous) {
            add_pending(region);
        } else {
            record(region);
        }
    }
    pthread_mutex_unlock(&lock);
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
        Digest digest = finish(&reads[i]);
        fprintf(out, "%llu %016llx %llu %.17g %llu %.17g %llu\n", digest.bytes, digest.hash, digest.nonzero,
                digest.f32_sum, digest.f32_other, digest.f64_sum, digest.f64_other);
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
    CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000,
};
static const CUpti_CallbackId DRIVER_CALLS[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
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
