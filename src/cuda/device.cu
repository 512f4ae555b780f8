/* device.cu: device discovery and the error record of GM_CUDA_CHECK. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h> /* the driver's types; its functions through the runtime (gm_cuda_device_enter) */

#include "cuda/cuda_check.cuh"
#include "cuda/gm_cuda.h"

static __thread char g_last_error[512];

extern "C" void gm_cuda_record_error(cudaError_t e, const char *call, const char *func, const char *file,
                          int line)
{
    snprintf(g_last_error, sizeof g_last_error, "CUDA error %d (%s) in %s at %s:%d: %s", (int)e,
             cudaGetErrorString(e), func, file, line, call);
    (void)cudaGetLastError(); /* clear the error state where it is not sticky */
}

extern "C" const char *gm_cuda_last_error(void) { return g_last_error; }

/* ---- fault injection (gm_cuda_fault_inject, gm_cuda_fault_set) -------------
 * The N-th device allocation or kernel launch after the spec is set fails
 * as a real one would (cudaErrorMemoryAllocation, cudaErrorLaunchFailure);
 * with a trailing '-' every one from the N-th on (a device that has died).
 * Counted over the process, all threads. */
static int g_fault_kind;   /* 0 none, else GM_CUDA_FAULT_ALLOC or _LAUNCH */
static long g_fault_n;
static int g_fault_on;     /* every one from the n-th */
static long g_fault_count[3];
static long g_fault_hits;  /* failures injected since the spec was set */

extern "C" int gm_cuda_fault_set(const char *spec)
{
    int kind = 0, on = 0;
    long n = 0;
    if (spec && *spec) {
        const char *num = NULL;
        if (strncmp(spec, "alloc:", 6) == 0)
            kind = GM_CUDA_FAULT_ALLOC, num = spec + 6;
        else if (strncmp(spec, "launch:", 7) == 0)
            kind = GM_CUDA_FAULT_LAUNCH, num = spec + 7;
        char *end = NULL;
        if (num)
            n = strtol(num, &end, 10);
        if (!num || end == num || n < 1 || (*end && strcmp(end, "-") != 0))
            return -1;
        on = *end == '-';
    }
    __atomic_store_n(&g_fault_count[GM_CUDA_FAULT_ALLOC], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_fault_count[GM_CUDA_FAULT_LAUNCH], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_fault_hits, 0, __ATOMIC_RELAXED);
    g_fault_n = n, g_fault_on = on;
    __atomic_store_n(&g_fault_kind, kind, __ATOMIC_RELEASE);
    return 0;
}

/* the public face of gm_cuda_fault_set (gmatch.h): the library reads no
 * environment variable of its own; the command line reads
 * GMATCH_CUDA_FAULT and calls this */
extern "C" gm_status gm_cuda_fault_inject(const char *spec)
{
    return gm_cuda_fault_set(spec) == 0 ? GM_OK : GM_ERR_INVALID;
}

extern "C" cudaError_t gm_cuda_fault(int kind)
{
    if (__atomic_load_n(&g_fault_kind, __ATOMIC_ACQUIRE) != kind)
        return cudaSuccess;
    long c = __atomic_add_fetch(&g_fault_count[kind], 1, __ATOMIC_RELAXED);
    if (c == g_fault_n || (g_fault_on && c > g_fault_n)) {
        __atomic_add_fetch(&g_fault_hits, 1, __ATOMIC_RELAXED);
        return kind == GM_CUDA_FAULT_ALLOC ? cudaErrorMemoryAllocation : cudaErrorLaunchFailure;
    }
    return cudaSuccess;
}

extern "C" long gm_cuda_fault_hits(void) { return __atomic_load_n(&g_fault_hits, __ATOMIC_RELAXED); }

extern "C" cudaError_t gm_cuda_launched(void)
{
    cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : gm_cuda_fault(GM_CUDA_FAULT_LAUNCH);
}

/* ---- the calling thread's context (gm_cuda_device_enter) ------------------ */
typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*ctx_set_fn)(CUcontext);
static ctx_get_fn g_ctx_get;
static ctx_set_fn g_ctx_set;
static pthread_once_t g_ctx_once = PTHREAD_ONCE_INIT;

static void ctx_fns_find(void)
{
    void *get = NULL, *set = NULL;
    cudaDriverEntryPointQueryResult qg = cudaDriverEntryPointSymbolNotFound, qs = qg;
    /* both since CUDA 4.0; 12000 asks for their ABI as of CUDA 12 */
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &get, 12000, cudaEnableDefault,
                                         &qg) != cudaSuccess ||
        cudaGetDriverEntryPointByVersion("cuCtxSetCurrent", &set, 12000, cudaEnableDefault,
                                         &qs) != cudaSuccess ||
        qg != cudaDriverEntryPointSuccess || qs != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return;
    }
    g_ctx_get = (ctx_get_fn)get;
    g_ctx_set = (ctx_set_fn)set;
}

/* Each device's primary context once cudaSetDevice has made it current on
 * some thread: the next entries make it current with cuCtxSetCurrent, or
 * find it current already (cudaSetDevice itself cost 40-50 us a call with
 * 16 workers, twice a pair of a batch; docs/speed.md).  The runtime takes
 * a primary context made current through the driver as its device's.  The
 * library never resets a device, so a primary context stays valid. */
#define GM_CTX_CACHE 64
static CUcontext g_primary[GM_CTX_CACHE];

extern "C" cudaError_t gm_cuda_device_enter(int dev, gm_cuda_scope *s)
{
    s->ctx = NULL;
    s->saved = 0;
    pthread_once(&g_ctx_once, ctx_fns_find);
    CUcontext c = NULL;
    if (g_ctx_get && g_ctx_set && g_ctx_get(&c) == CUDA_SUCCESS) {
        s->ctx = c;
        s->saved = 1;
    }
    const int cached = s->saved && dev >= 0 && dev < GM_CTX_CACHE;
    CUcontext p = cached ? __atomic_load_n(&g_primary[dev], __ATOMIC_ACQUIRE) : NULL;
    if (p && (c == p || g_ctx_set(p) == CUDA_SUCCESS))
        return cudaSuccess;
    cudaError_t e = cudaSetDevice(dev);
    CUcontext now = NULL;
    if (e == cudaSuccess && cached && g_ctx_get(&now) == CUDA_SUCCESS && now)
        __atomic_store_n(&g_primary[dev], now, __ATOMIC_RELEASE);
    return e;
}

extern "C" void gm_cuda_device_leave(gm_cuda_scope *s)
{
    if (s->saved)
        (void)g_ctx_set((CUcontext)s->ctx);
    s->saved = 0;
}

/* The host's waits for streams, over the process (gm_cuda_waits) and the
 * calling thread's (gm_cuda_thread_waits: a query's, gm_timing.wait). */
static unsigned long long g_waits, g_wait_ns;
static __thread unsigned long long t_waits, t_wait_ns;

static void count_wait(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long ns = (long long)(b.tv_sec - a->tv_sec) * 1000000000LL + (b.tv_nsec - a->tv_nsec);
    __atomic_add_fetch(&g_waits, 1ULL, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_wait_ns, (unsigned long long)(ns > 0 ? ns : 0), __ATOMIC_RELAXED);
    t_waits++;
    t_wait_ns += (unsigned long long)(ns > 0 ? ns : 0);
}

extern "C" cudaError_t gm_cuda_stream_wait(cudaStream_t stream)
{
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    cudaError_t e = cudaStreamSynchronize(stream);
    count_wait(&a);
    return e;
}

extern "C" cudaError_t gm_cuda_event_wait(cudaEvent_t event)
{
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    cudaError_t e = cudaEventSynchronize(event);
    count_wait(&a);
    return e;
}

extern "C" void gm_cuda_thread_waits(uint64_t *count, double *ms)
{
    *count = t_waits;
    *ms = (double)t_wait_ns * 1e-6;
}

extern "C" gm_status gm_cuda_waits(uint64_t *count, double *ms)
{
    if (count)
        *count = __atomic_load_n(&g_waits, __ATOMIC_RELAXED);
    if (ms)
        *ms = (double)__atomic_load_n(&g_wait_ns, __ATOMIC_RELAXED) * 1e-6;
    return GM_OK;
}

/* The library's own stream-ordered pool of each device, made on its first
 * use and kept for the process: freed blocks stay in it (release threshold
 * at the maximum), so repeated table builds reuse them.  The application's
 * default pool is never touched. */
#define GM_POOL_DEVICES 64
static cudaMemPool_t g_pool[GM_POOL_DEVICES];
static cudaError_t g_pool_err[GM_POOL_DEVICES];
static int g_pool_made[GM_POOL_DEVICES];
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The pool of the calling thread's current device (its lane's). */
static cudaError_t pool_of_current(cudaMemPool_t *pool)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    if (dev < 0 || dev >= GM_POOL_DEVICES)
        return cudaErrorInvalidDevice;
    /* every allocation of a query comes here: the lock only to make it */
    if (__atomic_load_n(&g_pool_made[dev], __ATOMIC_ACQUIRE)) {
        *pool = g_pool[dev];
        return g_pool_err[dev];
    }
    pthread_mutex_lock(&g_pool_lock);
    if (!g_pool_made[dev]) {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = dev;
        e = cudaMemPoolCreate(&g_pool[dev], &props);
        if (e == cudaSuccess) {
            uint64_t keep = UINT64_MAX;
            e = cudaMemPoolSetAttribute(g_pool[dev], cudaMemPoolAttrReleaseThreshold, &keep);
        }
        g_pool_err[dev] = e;
        __atomic_store_n(&g_pool_made[dev], 1, __ATOMIC_RELEASE);
    }
    e = g_pool_err[dev];
    *pool = g_pool[dev];
    pthread_mutex_unlock(&g_pool_lock);
    return e;
}

extern "C" int gm_cuda_device_memory(int dev, size_t *avail, size_t *total)
{
    gm_cuda_scope sc;
    cudaError_t e = gm_cuda_device_enter(dev, &sc);
    size_t free_b = 0, total_b = 0;
    if (e == cudaSuccess)
        e = cudaMemGetInfo(&free_b, &total_b);
    /* blocks freed into the pool stay there (release threshold at the
     * maximum): the next allocations get them, the device does not count
     * them free */
    if (e == cudaSuccess && dev >= 0 && dev < GM_POOL_DEVICES &&
        __atomic_load_n(&g_pool_made[dev], __ATOMIC_ACQUIRE) && g_pool_err[dev] == cudaSuccess) {
        uint64_t reserved = 0, used = 0;
        e = cudaMemPoolGetAttribute(g_pool[dev], cudaMemPoolAttrReservedMemCurrent, &reserved);
        if (e == cudaSuccess)
            e = cudaMemPoolGetAttribute(g_pool[dev], cudaMemPoolAttrUsedMemCurrent, &used);
        if (e == cudaSuccess && reserved > used)
            free_b += (size_t)(reserved - used);
    }
    gm_cuda_device_leave(&sc);
    if (e != cudaSuccess) {
        gm_cuda_record_error(e, "cudaMemGetInfo", __func__, __FILE__, __LINE__);
        return -1;
    }
    *avail = free_b < total_b ? free_b : total_b;
    *total = total_b;
    return 0;
}

/* Pinned host memory of the lanes' growing buffers (gm_dev_bufs_alloc_on
 * with a stream), kept for the process as the device pool is: each block a
 * power of two of at least GM_PIN_MIN bytes with its class in a header,
 * the small ones cut from slabs of GM_PIN_SLAB bytes, a freed block on its
 * class's list for the next lane that grows.  cudaMallocHost took 0.9 ms a
 * call and cudaFreeHost 2.4 ms (it waits for the whole device) with 16
 * lanes making and growing some 26 pinned buffers each (a batch of stills,
 * docs/speed.md). */
#define GM_PIN_MIN 256
#define GM_PIN_CLASSES 40
#define GM_PIN_SLAB (1u << 20)
#define GM_PIN_HEAD 64 /* the header: the class; keeps 64-byte alignment */
static pthread_mutex_t g_pin_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_pin_free[GM_PIN_CLASSES]; /* each block's first word: the next */
static char *g_pin_slab;
static size_t g_pin_left;

static cudaError_t pin_make(void **p, size_t bytes)
{
    int c = 0;
    while (c < GM_PIN_CLASSES - 1 && ((size_t)GM_PIN_MIN << c) < bytes + GM_PIN_HEAD)
        c++;
    const size_t size = (size_t)GM_PIN_MIN << c;
    if (size < bytes + GM_PIN_HEAD)
        return cudaErrorMemoryAllocation;
    cudaError_t e = gm_cuda_fault(GM_CUDA_FAULT_ALLOC);
    if (e != cudaSuccess)
        return e;
    char *b = NULL;
    pthread_mutex_lock(&g_pin_lock);
    if (g_pin_free[c]) {
        b = (char *)g_pin_free[c];
        g_pin_free[c] = *(void **)b;
    } else if (size <= GM_PIN_SLAB / 8) {
        if (g_pin_left < size) {
            void *slab = NULL;
            e = cudaMallocHost(&slab, GM_PIN_SLAB); /* the rest of the last slab is dropped */
            if (e == cudaSuccess)
                g_pin_slab = (char *)slab, g_pin_left = GM_PIN_SLAB;
        }
        if (e == cudaSuccess) {
            b = g_pin_slab;
            g_pin_slab += size, g_pin_left -= size;
        }
    } else {
        void *big = NULL;
        e = cudaMallocHost(&big, size);
        b = (char *)big;
    }
    pthread_mutex_unlock(&g_pin_lock);
    if (e != cudaSuccess)
        return e;
    *(int *)(b + sizeof(void *)) = c;
    *p = b + GM_PIN_HEAD;
    return cudaSuccess;
}

/* Back on its class's list: the caller has waited for the stream that used it. */
static void pin_drop(void *p)
{
    char *b = (char *)p - GM_PIN_HEAD;
    const int c = *(int *)(b + sizeof(void *));
    pthread_mutex_lock(&g_pin_lock);
    *(void **)b = g_pin_free[c];
    g_pin_free[c] = b;
    pthread_mutex_unlock(&g_pin_lock);
}

/* One buffer made: pooled, device memory from the library's pool on
 * stream and pinned host memory from the cache above; else cudaMalloc and
 * cudaMallocHost. */
static cudaError_t buf_make(const gm_dev_buf *b, int pooled, cudaStream_t stream)
{
    cudaError_t e;
    if (pooled) {
        e = b->host ? pin_make(b->p, b->bytes) : gm_cuda_malloc_async(b->p, b->bytes, stream);
    } else {
        e = gm_cuda_fault(GM_CUDA_FAULT_ALLOC);
        if (e == cudaSuccess)
            e = b->host ? cudaMallocHost(b->p, b->bytes) : cudaMalloc(b->p, b->bytes);
    }
    if (e != cudaSuccess) {
        gm_cuda_record_error(e, b->host ? "cudaMallocHost" : pooled ? "cudaMallocFromPoolAsync" : "cudaMalloc",
                             __func__, __FILE__, __LINE__);
        *b->p = NULL;
    }
    return e;
}

/* One buffer handed back (NULL: nothing), as buf_make made it; a pooled
 * pinned one once stream is done with it (*synced: waited for already). */
static void buf_drop(const gm_dev_buf *b, int pooled, cudaStream_t stream, int *synced)
{
    if (!*b->p)
        return;
    if (!pooled) {
        (void)(b->host ? cudaFreeHost(*b->p) : cudaFree(*b->p));
    } else if (!b->host) {
        (void)cudaFreeAsync(*b->p, stream);
    } else {
        if (!*synced)
            *synced = cudaStreamSynchronize(stream) == cudaSuccess ? 1 : -1;
        if (*synced > 0)
            pin_drop(*b->p);
        /* else the stream failed: the block is left, not handed to another */
    }
    *b->p = NULL;
}

static void bufs_free(const gm_dev_buf *b, int n, int pooled, cudaStream_t stream)
{
    int synced = 0;
    for (int i = 0; i < n; i++)
        buf_drop(&b[i], pooled, stream, &synced);
    (void)cudaGetLastError();
}

static gm_status bufs_resize(const gm_dev_buf *old, const gm_dev_buf *b, int n, int pooled,
                             cudaStream_t stream)
{
    int synced = 0;
    for (int i = 0; i < n; i++) {
        if (*b[i].p && old && old[i].bytes == b[i].bytes)
            continue; /* kept, content and all */
        buf_drop(&b[i], pooled, stream, &synced);
        cudaError_t e = buf_make(&b[i], pooled, stream);
        if (e != cudaSuccess) {
            bufs_free(b, n, pooled, stream);
            return gm_cuda_status(e);
        }
    }
    return GM_OK;
}

extern "C" void gm_dev_bufs_free_on(const gm_dev_buf *b, int n, cudaStream_t stream)
{
    bufs_free(b, n, stream != NULL, stream);
}

extern "C" gm_status gm_dev_bufs_resize_on(const gm_dev_buf *old, const gm_dev_buf *b, int n,
                                           cudaStream_t stream)
{
    return bufs_resize(old, b, n, stream != NULL, stream);
}

extern "C" gm_status gm_dev_bufs_alloc_on(const gm_dev_buf *b, int n, cudaStream_t stream)
{
    for (int i = 0; i < n; i++)
        *b[i].p = NULL;
    return bufs_resize(NULL, b, n, stream != NULL, stream);
}

extern "C" void gm_dev_bufs_free(const gm_dev_buf *b, int n) { bufs_free(b, n, 0, NULL); }

extern "C" gm_status gm_dev_bufs_alloc(const gm_dev_buf *b, int n)
{
    return gm_dev_bufs_alloc_on(b, n, NULL);
}

/* The pool's whatever the stream (the legacy stream 0 too), device
 * buffers only. */
extern "C" void gm_dev_bufs_pool_free(const gm_dev_buf *b, int n, cudaStream_t stream)
{
    bufs_free(b, n, 1, stream);
}

extern "C" gm_status gm_dev_bufs_pool_alloc(const gm_dev_buf *b, int n, cudaStream_t stream)
{
    for (int i = 0; i < n; i++)
        *b[i].p = NULL;
    for (int i = 0; i < n; i++)
        if (b[i].host) {
            gm_cuda_record_error(cudaErrorInvalidValue, "cudaMallocFromPoolAsync", __func__,
                                 __FILE__, __LINE__);
            return gm_cuda_status(cudaErrorInvalidValue);
        }
    return bufs_resize(NULL, b, n, 1, stream);
}

extern "C" cudaError_t gm_cuda_malloc_async(void **p, size_t bytes, cudaStream_t stream)
{
    cudaMemPool_t pool;
    cudaError_t e = pool_of_current(&pool);
    if (e != cudaSuccess)
        return e;
    e = gm_cuda_fault(GM_CUDA_FAULT_ALLOC);
    if (e != cudaSuccess) {
        *p = NULL;
        return e;
    }
    return cudaMallocFromPoolAsync(p, bytes, pool, stream);
}

/* The stream that frees what no stream of a caller's frees: one a device,
 * made on first use and kept for the process, like the pool.  The frees
 * went on the freeing thread's per-thread stream before; a batch whose
 * workers ended a group at a time (their threads, and those streams, gone
 * with them) hung in 1 run of some 18 of the scene tier on an H200: three
 * workers in cuMemFreeAsync on a lock of the driver, a thread of the
 * driver's spinning, the device idle (2026-11-30, docs/speed.md).  A stream
 * that outlives every thread takes the threads' lifetimes out of it. */
static cudaStream_t g_free_stream[GM_POOL_DEVICES];
static int g_free_made[GM_POOL_DEVICES];

extern "C" cudaStream_t gm_cuda_free_stream(void)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= GM_POOL_DEVICES) {
        (void)cudaGetLastError();
        return cudaStreamPerThread;
    }
    if (!__atomic_load_n(&g_free_made[dev], __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&g_pool_lock);
        if (!g_free_made[dev]) {
            cudaStream_t st = NULL;
            if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) {
                (void)cudaGetLastError();
                st = cudaStreamPerThread; /* the way before, rather than none */
            }
            g_free_stream[dev] = st;
            __atomic_store_n(&g_free_made[dev], 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&g_pool_lock);
    }
    return g_free_stream[dev];
}

extern "C" cudaError_t gm_cuda_free_async(void *p)
{
    return p ? cudaFreeAsync(p, gm_cuda_free_stream()) : cudaSuccess;
}

extern "C" int gm_cuda_device_count(char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        if (why)
            snprintf(why, whylen, "%s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return 0;
    }
    if (n == 0 && why)
        snprintf(why, whylen, "no CUDA device");
    return n;
}

extern "C" void gm_cuda_device_describe(int dev, char *buf, size_t len)
{
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) {
        snprintf(buf, len, "device %d: %s", dev, cudaGetErrorString(e));
        (void)cudaGetLastError();
        return;
    }
    snprintf(buf, len, "%s, compute capability %d.%d, %d SMs, %zu MiB", p.name, p.major, p.minor,
             p.multiProcessorCount, (size_t)(p.totalGlobalMem >> 20));
}
