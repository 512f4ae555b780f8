/* kprof.c: where the device's time goes over a whole run: each kernel's
 * launches and device time, the copies', and the device's busy time (the
 * union of every kernel's and copy's interval, all streams together),
 * through CUPTI's activity records.  For docs/speed.md's figures; not part
 * of the library.
 *
 * Built as a CUDA injection library (the driver loads it at cuInit): the
 * build's kprof.so where CMake finds CUPTI (GMATCH_CUDA on), or
 *   gcc -O2 -shared -fPIC -I/usr/local/cuda/include tools/bench/kprof.c \
 *       -o kprof.so -L/usr/local/cuda/lib64 -lcupti -lpthread
 * (carry libcupti.so.13 to a machine that lacks it).
 * Run:
 *   CUDA_INJECTION64_PATH=$PWD/kprof.so [KPROF_OUT=file] gmatch ...
 * At exit (stderr, or KPROF_OUT): the wall time from the first record to
 * the last, the busy time, and a line a kernel name (launches, summed
 * milliseconds, mean microseconds, share of the summed kernel time),
 * largest first.  KPROF_API=1 adds the host's side: a line a CUDA runtime
 * call (calls, summed milliseconds of the calling threads' time inside it,
 * mean microseconds), largest first, so that the driver's share of the
 * workers' time can be named call by call.  KPROF_SITES=1 adds where the
 * copies, memsets, launches, event calls and waits come from: a line a call
 * and call site (calls, the call's name, the return addresses of the first
 * KPROF_DEPTH (default 6) frames inside the program, as offsets from its
 * start), to be named with addr2line -f -i -e on the unstripped build
 * (tools/bench/kprof_sites.sh).  A process that ends with _exit prints
 * nothing. */
#define _GNU_SOURCE /* strdup, dladdr */

#include <cupti.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (8u << 20)
#define MAX_NAMES 512

typedef struct {
    char *name;
    uint64_t n, ns;
} stat;

typedef struct {
    uint64_t a, b;
} span;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static stat g_stat[MAX_NAMES];
static int g_n;
static span *g_span;
static size_t g_nspan, g_capspan;
static uint64_t g_dropped;
static stat g_api[MAX_NAMES];
static int g_napi;

/* KPROF_SITES: a call and its first frames in the program */
#define SITE_DEPTH 8
#define MAX_SITES 4096
typedef struct {
    uint32_t cbid;
    uintptr_t off[SITE_DEPTH];
    uint64_t n;
} site;
static site g_site[MAX_SITES];
static int g_nsite, g_depth = 6;
static uintptr_t g_base;

/* name's entry of the table tab (*n of them), added when new */
static stat *stat_in(stat *tab, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(tab[i].name, name))
            return &tab[i];
    if (*n == MAX_NAMES)
        return &tab[MAX_NAMES - 1]; /* the last slot takes the rest */
    tab[*n].name = strdup(name);
    return &tab[(*n)++];
}

static stat *stat_of(const char *name) { return stat_in(g_stat, &g_n, name); }

/* A runtime call's time on its thread: apart from the device's spans. */
static void add_api(uint32_t cbid, uint64_t a, uint64_t b)
{
    const char *name = NULL;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS || !name)
        name = "?";
    stat *s = stat_in(g_api, &g_napi, name);
    s->n++;
    s->ns += b > a ? b - a : 0;
}

static void add(const char *name, uint64_t a, uint64_t b)
{
    stat *s = stat_of(name);
    s->n++;
    s->ns += b > a ? b - a : 0;
    if (g_nspan == g_capspan) {
        size_t cap = g_capspan ? 2 * g_capspan : 1 << 16;
        span *p = realloc(g_span, cap * sizeof *p);
        if (!p)
            return;
        g_span = p, g_capspan = cap;
    }
    g_span[g_nspan++] = (span){a, b};
}

/* The program's own frames of this call (g_base: the executable's start). */
static void CUPTIAPI on_call(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                             const void *data)
{
    (void)ud;
    const CUpti_CallbackData *cd = data;
    if (dom != CUPTI_CB_DOMAIN_RUNTIME_API || cd->callbackSite != CUPTI_API_ENTER)
        return;
    void *fr[48];
    const int nf = backtrace(fr, 48);
    site k = {cbid, {0}, 0};
    int d = 0;
    for (int i = 0; i < nf && d < g_depth; i++) {
        Dl_info di;
        if (dladdr(fr[i], &di) && (uintptr_t)di.dli_fbase == g_base)
            k.off[d++] = (uintptr_t)fr[i] - g_base;
    }
    pthread_mutex_lock(&g_mu);
    int i = 0;
    while (i < g_nsite && (g_site[i].cbid != k.cbid || memcmp(g_site[i].off, k.off, sizeof k.off)))
        i++;
    if (i == g_nsite && g_nsite < MAX_SITES)
        g_site[g_nsite++] = k;
    if (i < g_nsite)
        g_site[i].n++;
    pthread_mutex_unlock(&g_mu);
}

/* dl_iterate_phdr's first module is the executable */
static int first_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    g_base = (uintptr_t)info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            g_base += info->dlpi_phdr[i].p_vaddr - info->dlpi_phdr[i].p_offset;
            break;
        }
    return 1;
}

static int by_count(const void *x, const void *y)
{
    const site *a = x, *b = y;
    return (a->n < b->n) - (a->n > b->n);
}

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, BUF_BYTES);
    *size = *buf ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                               size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *r = NULL;
    pthread_mutex_lock(&g_mu);
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
            add(k->name ? k->name : "?", k->start, k->end);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
            add(m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD   ? "[copy to device]"
                : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? "[copy to host]"
                                                                  : "[copy, other]",
                m->start, m->end);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
            const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
            add_api(a->cbid, a->start, a->end);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
            add("[memset]", m->start, m->end);
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
        g_dropped += dropped;
    pthread_mutex_unlock(&g_mu);
    free(buf);
}

static int by_start(const void *x, const void *y)
{
    const span *a = x, *b = y;
    return (a->a > b->a) - (a->a < b->a);
}

static int by_time(const void *x, const void *y)
{
    const stat *a = x, *b = y;
    return (a->ns < b->ns) - (a->ns > b->ns);
}

static void report(void)
{
    cuptiActivityFlushAll(1);
    pthread_mutex_lock(&g_mu);
    const char *path = getenv("KPROF_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        f = stderr;
    qsort(g_span, g_nspan, sizeof *g_span, by_start);
    uint64_t busy = 0, lo = 0, hi = 0, first = g_nspan ? g_span[0].a : 0, last = 0;
    for (size_t i = 0; i < g_nspan; i++) {
        if (i == 0 || g_span[i].a > hi) {
            busy += hi - lo;
            lo = g_span[i].a, hi = g_span[i].b;
        } else if (g_span[i].b > hi) {
            hi = g_span[i].b;
        }
        if (g_span[i].b > last)
            last = g_span[i].b;
    }
    busy += hi - lo;
    uint64_t kern = 0;
    for (int i = 0; i < g_n; i++)
        kern += g_stat[i].name[0] == '[' ? 0 : g_stat[i].ns;
    qsort(g_stat, (size_t)g_n, sizeof *g_stat, by_time);
    fprintf(f, "kprof: %.1f ms from the first record to the last, device busy %.1f ms (%.0f%%), "
               "kernels summed %.1f ms, %zu records, %llu dropped\n",
            (last - first) * 1e-6, busy * 1e-6, last > first ? 100.0 * busy / (last - first) : 0,
            kern * 1e-6, g_nspan, (unsigned long long)g_dropped);
    for (int i = 0; i < g_n; i++)
        fprintf(f, "kprof: %10.2f ms %9llu x %9.1f us %5.1f%%  %.150s\n", g_stat[i].ns * 1e-6,
                (unsigned long long)g_stat[i].n, g_stat[i].n ? g_stat[i].ns * 1e-3 / g_stat[i].n : 0,
                kern && g_stat[i].name[0] != '[' ? 100.0 * g_stat[i].ns / kern : 0, g_stat[i].name);
    if (g_napi) {
        uint64_t all = 0, calls = 0;
        for (int i = 0; i < g_napi; i++)
            all += g_api[i].ns, calls += g_api[i].n;
        qsort(g_api, (size_t)g_napi, sizeof *g_api, by_time);
        fprintf(f, "kprof: runtime calls: %llu, %.1f ms of the calling threads' time\n",
                (unsigned long long)calls, all * 1e-6);
        for (int i = 0; i < g_napi; i++)
            fprintf(f, "kprof: api %10.2f ms %9llu x %9.2f us  %.100s\n", g_api[i].ns * 1e-6,
                    (unsigned long long)g_api[i].n,
                    g_api[i].n ? g_api[i].ns * 1e-3 / g_api[i].n : 0, g_api[i].name);
    }
    qsort(g_site, (size_t)g_nsite, sizeof *g_site, by_count);
    for (int i = 0; i < g_nsite; i++) {
        const char *name = NULL;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, g_site[i].cbid, &name) !=
                CUPTI_SUCCESS || !name)
            name = "?";
        fprintf(f, "kprof: site %9llu %s", (unsigned long long)g_site[i].n, name);
        for (int d = 0; d < g_depth && g_site[i].off[d]; d++)
            fprintf(f, " 0x%lx", (unsigned long)g_site[i].off[d]);
        fputc('\n', f);
    }
    if (f != stderr)
        fclose(f);
    pthread_mutex_unlock(&g_mu);
}

/* The driver's entry point for an injection library. */
int InitializeInjection(void);
int InitializeInjection(void)
{
    if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        fprintf(stderr, "kprof: CUPTI's activity records are not available here\n");
        return 1;
    }
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    const char *api = getenv("KPROF_API");
    if (api && api[0] == '1')
        (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
    const char *sites = getenv("KPROF_SITES");
    if (sites && sites[0] == '1') {
        const char *dep = getenv("KPROF_DEPTH");
        if (dep && atoi(dep) > 0)
            g_depth = atoi(dep) < SITE_DEPTH ? atoi(dep) : SITE_DEPTH;
        dl_iterate_phdr(first_module, NULL); /* the executable's start */
        CUpti_SubscriberHandle sub;
        static const CUpti_CallbackId ids[] = {
            CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
            CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
            CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080,
            CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000,
            CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
        };
        if (!g_base || cuptiSubscribe(&sub, on_call, NULL) != CUPTI_SUCCESS)
            fprintf(stderr, "kprof: no call sites (main not found or CUPTI refused)\n");
        else
            for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
                (void)cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, ids[i]);
    }
    (void)cuptiActivityFlushPeriod(200); /* records kept should the teardown come first */
    atexit(report);
    return 1;
}
