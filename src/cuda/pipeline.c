/* pipeline.c: the GPU stages of one matcher context (see pipeline.h).
 *
 * Host code in C: it queues the stage kernels of the cuda/ stage files on the context's
 * stream and moves what the host's share of the flow needs (edge points,
 * corners, dense basis keys, the per-row vote winners, verification scores)
 * through pinned staging buffers.  The host's share is small and sequential:
 * the basis selection (a few hundred corners), the frames of the bases
 * (atan2f must be glibc's for keys to match the CPU's), the pick of the top
 * candidates, the distinctiveness test. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.cuh"
#include <omp.h>

#include "stages/affine.h"
#include "cuda/corners_cuda.h"
#include "cuda/items_cuda.h"
#include "cuda/reduce_cuda.h"
#include "cuda/verify_cuda.h"
#include "cuda/pipeline.h"
#include "cuda/vote_cuda.h"


/* A device array that grows to the largest size asked for. */
typedef struct hbuf hbuf;
typedef struct {
    void *d;
    size_t bytes;
    const hbuf *from; /* the staging whose first `filled` bytes it holds (upload) */
    size_t filled;
} dbuf;

/* The same in pinned host memory; `pending` marks a copy out of it queued
 * (upload), so that the host rewrites it only once that copy is done
 * (stage_free). */
struct hbuf {
    void *h;
    size_t bytes;
    int pending;
    unsigned long epoch; /* the lane's `synced` when the copy out of it was queued */
    const dbuf *to;   /* the device buffer its last `sent` bytes went to (upload) */
    size_t sent;
};

/* One query at a time: a stream and the buffers of every stage, reused
 * query after query (they grow to the largest frame seen, never shrink). */
struct gm_gpu_lane {
    int dev;                 /* the CUDA device: current on the thread that holds the lane */
    cudaStream_t stream;
    const gm_edge_map_dev *map; /* the context's */
    int busy;
    int alone;               /* no other lane of its device was busy when it was taken */
    gm_cuda_scope scope;     /* the holding thread's context before, given back at release */
    /* the side stages */
    size_t cap;              /* pixels of the edge buffers */
    gm_edges_dev edges;
    gm_compact_flags_dev flags;
    gm_corners_dev corners;
    uint32_t corner_cap;     /* corners the corner buffers hold */
    dbuf img, idx, all, cloud, keys, bases, best, scratch, cs;
    hbuf h_img, h_all, h_keys, h_best, h_cs;
    /* verification: the query's points and the candidates */
    gm_verify_dev verify;
    /* an answer's rivals (gm_gpu_chain_queue): a stream and buffers of
     * their own, the query's points copied there from verify's after the
     * event forked, so that the device refines them beside what the main
     * stream does meanwhile (the answer's checks); made on first use */
    cudaStream_t side_stream;
    cudaEvent_t forked, joined; /* joined: the side stream's last chain queued */
    gm_verify_dev side;
    /* the vote's end, the reduction's and a pairing's decisions', timed on
     * the stream (gm_gpu_vote, gm_gpu_pair) */
    cudaEvent_t voted, reduced, decided;
    unsigned long synced; /* the stream's whole waits that this file saw (stage_free) */
};

/* The reference's device data (edge map; the tables are gm_gpu_level's)
 * and the lanes: a query takes a free lane for its whole match, so up to
 * GM_GPU_MAX_LANES queries run at once, each on its own stream. */
struct gm_gpu {
    int dev;                 /* the CUDA device's index */
    char name[256];
    gm_edge_map_dev map;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    int ready;               /* lock and freed initialized */
    int n_lanes;
    int n_busy;              /* lanes held (under lock) */
    gm_gpu_lane *lanes[GM_GPU_MAX_LANES];
};

struct gm_gpu_level {
    int dev;                 /* the CUDA device it lives on */
    gm_cuckoo_dev table;     /* (u, v, dir) -> dense basis indices (a triangle level's:
                              * affine key -> triangle indices) */
    float *d_share;          /* [n_ref] */
    float4 *d_rends;         /* [n_ref] each basis's ends (a.x, a.y, b.x, b.y): a pairing's
                              * similarities on the device (gm_gpu_pair) */
    uint32_t n_ref, n_items;
    gm_edge_map_dev map;     /* a fine level's own edge map (gm_gpu_level_map) */
    int has_map;
};

/* A buffer at *p of *have bytes grown to at least `bytes` (with room to
 * grow), its content dropped, on the lane's stream (gm_dev_bufs_alloc_on: a
 * lane's growth never waits for the other lanes' work): pinned host memory
 * from the library's cache when host, else device memory from its pool. */
static gm_status buf_grow(void **p, size_t *have, size_t bytes, int host, cudaStream_t stream)
{
    if (bytes <= *have)
        return GM_OK;
    gm_dev_buf b = {p, bytes + bytes / 4, host};
    gm_status st = gm_dev_bufs_resize_on(NULL, &b, 1, stream); /* the old one handed back */
    *have = st == GM_OK ? b.bytes : 0;
    return st;
}

/* (a growth drops the content, and with it what upload knew of it) */
static gm_status dbuf_need(const gm_gpu_lane *g, dbuf *b, size_t bytes)
{
    if (bytes > b->bytes)
        b->from = NULL;
    return buf_grow(&b->d, &b->bytes, bytes, 0, g->stream);
}
static gm_status hbuf_need(const gm_gpu_lane *g, hbuf *b, size_t bytes)
{
    if (bytes > b->bytes)
        b->to = NULL;
    return buf_grow(&b->h, &b->bytes, bytes, 1, g->stream);
}

static void dbuf_free(const gm_gpu_lane *g, dbuf *b)
{
    gm_dev_bufs_free_on(&(gm_dev_buf){&b->d, 0, 0}, 1, g->stream);
    b->bytes = 0;
    b->from = NULL;
}

static void hbuf_free(const gm_gpu_lane *g, hbuf *b)
{
    gm_dev_bufs_free_on(&(gm_dev_buf){&b->h, 0, 1}, 1, g->stream);
    b->bytes = 0;
    b->pending = 0;
    b->to = NULL;
}

/* Device g->dev's memory and name, the device current. */
static gm_status device_check(gm_gpu *g, char *why, size_t whylen)
{
    size_t free_b = 0, total_b = 0;
    GM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b < ((size_t)GM_GPU_MIN_FREE_MIB << 20)) {
        snprintf(why, whylen, "only %zu MiB of device memory free (%d MiB needed)", free_b >> 20,
                 GM_GPU_MIN_FREE_MIB);
        return GM_ERR_DEVICE;
    }
    gm_cuda_device_describe(g->dev, g->name, sizeof g->name);
    return GM_OK;
}

/* The calling thread's device is given back after (gm_cuda_device_enter). */
static gm_status open_device(gm_gpu *g, char *why, size_t whylen)
{
    int n = gm_cuda_begin(why, whylen);
    if (n == 0)
        return GM_ERR_DEVICE;
    if (g->dev >= n) {
        snprintf(why, whylen, "no CUDA device %d (%d visible)", g->dev, n);
        return GM_ERR_DEVICE;
    }
    gm_cuda_scope sc;
    cudaError_t e = gm_cuda_device_enter(g->dev, &sc);
    gm_status st = GM_ERR_DEVICE;
    if (e != cudaSuccess)
        gm_cuda_record_error(e, "cudaSetDevice", __func__, __FILE__, __LINE__);
    else
        st = device_check(g, why, whylen);
    gm_cuda_device_leave(&sc);
    return st;
}

gm_status gm_gpu_open(gm_gpu **out, int dev, char *why, size_t whylen)
{
    *out = NULL;
    if (why && whylen)
        why[0] = '\0';
    char tmp[256] = "";
    if (!why) {
        why = tmp;
        whylen = sizeof tmp;
    }
    gm_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return GM_ERR_NOMEM;
    g->dev = dev;
    gm_status st = open_device(g, why, whylen);
    if (st != GM_OK) {
        if (!why[0])
            snprintf(why, whylen, "%s", gm_cuda_last_error());
        gm_gpu_close(g);
        return st == GM_ERR_NOMEM ? GM_ERR_NOMEM : GM_ERR_DEVICE;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->freed, NULL);
    g->ready = 1;
    *out = g;
    return GM_OK;
}

static void lane_free(gm_gpu_lane *g)
{
    if (!g)
        return;
    if (g->stream) {
        (void)gm_cuda_stream_wait(g->stream);
        gm_verify_dev_free(&g->verify);
        gm_edges_dev_free(&g->edges);
        gm_compact_flags_dev_free(&g->flags);
        gm_corners_dev_free(&g->corners);
        dbuf *d[] = {&g->img, &g->idx, &g->all, &g->cloud, &g->keys, &g->bases, &g->best,
                     &g->scratch, &g->cs};
        for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
            dbuf_free(g, d[i]);
        hbuf *h[] = {&g->h_img, &g->h_all, &g->h_keys, &g->h_best, &g->h_cs};
        for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
            hbuf_free(g, h[i]);
        if (g->voted)
            (void)cudaEventDestroy(g->voted);
        if (g->reduced)
            (void)cudaEventDestroy(g->reduced);
        if (g->decided)
            (void)cudaEventDestroy(g->decided);
        (void)cudaStreamDestroy(g->stream);
    }
    if (g->side_stream) {
        (void)gm_cuda_stream_wait(g->side_stream);
        gm_verify_dev_free(&g->side);
        (void)cudaStreamDestroy(g->side_stream);
    }
    if (g->forked)
        (void)cudaEventDestroy(g->forked);
    if (g->joined)
        (void)cudaEventDestroy(g->joined);
    (void)cudaGetLastError();
    free(g);
}

static gm_gpu_lane *lane_new(gm_gpu *g)
{
    gm_gpu_lane *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->dev = g->dev;
    l->map = &g->map;
    if (cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking) != cudaSuccess) {
        gm_cuda_record_error(cudaGetLastError(), "cudaStreamCreateWithFlags", __func__, __FILE__,
                             __LINE__);
        free(l);
        return NULL;
    }
    if (cudaEventCreate(&l->voted) != cudaSuccess || cudaEventCreate(&l->reduced) != cudaSuccess ||
        cudaEventCreate(&l->decided) != cudaSuccess) {
        gm_cuda_record_error(cudaGetLastError(), "cudaEventCreate", __func__, __FILE__, __LINE__);
        lane_free(l);
        return NULL;
    }
    return l;
}

/* Lanes outlive the reference that made them: gm_gpu_close leaves a
 * device's idle lanes here (GM_GPU_MAX_LANES a device at most) and the next
 * reference on that device takes them before it makes new ones, with the
 * buffers they grew.  A batch prepares a reference a group of queries, and
 * each group's first stills made their lanes anew (a stream, events, and
 * every buffer grown step by step, each step a cudaFree that waits for the
 * whole device): the public stills as a batch on an H200, 16 workers, the
 * first 48 stills of each group took 19.5 ms a still against 5 ms for the
 * rest (docs/speed.md).  Like the library's memory pool, what is kept here
 * stays for the process. */
#define GM_SPARE_DEVICES 64
static pthread_mutex_t g_spare_lock = PTHREAD_MUTEX_INITIALIZER;
static gm_gpu_lane *g_spare[GM_SPARE_DEVICES][GM_GPU_MAX_LANES];
static int g_n_spare[GM_SPARE_DEVICES];

/* A kept lane of device dev, or NULL. */
static gm_gpu_lane *spare_take(int dev)
{
    gm_gpu_lane *l = NULL;
    if (dev < 0 || dev >= GM_SPARE_DEVICES)
        return NULL;
    pthread_mutex_lock(&g_spare_lock);
    if (g_n_spare[dev] > 0)
        l = g_spare[dev][--g_n_spare[dev]];
    pthread_mutex_unlock(&g_spare_lock);
    return l;
}

/* l kept for the next reference on its device (its device current, its
 * stream idle and without error): 1, else 0 (the caller frees it). */
static int spare_put(gm_gpu_lane *l)
{
    if (l->dev < 0 || l->dev >= GM_SPARE_DEVICES || gm_cuda_stream_wait(l->stream) != cudaSuccess ||
        (l->side_stream && gm_cuda_stream_wait(l->side_stream) != cudaSuccess)) {
        (void)cudaGetLastError();
        return 0;
    }
    int kept = 0;
    pthread_mutex_lock(&g_spare_lock);
    if (g_n_spare[l->dev] < GM_GPU_MAX_LANES) {
        l->map = NULL;
        l->busy = 0;
        g_spare[l->dev][g_n_spare[l->dev]++] = l;
        kept = 1;
    }
    pthread_mutex_unlock(&g_spare_lock);
    return kept;
}

gm_gpu_lane *gm_gpu_acquire(gm_gpu *g)
{
    /* the lane's device current on this thread for as long as it holds it
     * (a thread may hold lanes of several GPUs in turn: cuda:all), the
     * thread's own given back by gm_gpu_release */
    gm_cuda_scope sc;
    cudaError_t e = gm_cuda_device_enter(g->dev, &sc);
    if (e != cudaSuccess) {
        gm_cuda_record_error(e, "cudaSetDevice", __func__, __FILE__, __LINE__);
        (void)cudaGetLastError();
        gm_cuda_device_leave(&sc);
        return NULL;
    }
    pthread_mutex_lock(&g->lock);
    gm_gpu_lane *got = NULL;
    for (;;) {
        for (int i = 0; i < g->n_lanes && !got; i++)
            if (!g->lanes[i]->busy)
                got = g->lanes[i];
        if (!got && g->n_lanes < GM_GPU_MAX_LANES &&
            ((got = spare_take(g->dev)) != NULL || (got = lane_new(g)) != NULL)) {
            got->map = &g->map; /* this reference's */
            g->lanes[g->n_lanes++] = got;
        }
        if (got || g->n_lanes == 0)
            break;
        pthread_cond_wait(&g->freed, &g->lock); /* every lane busy: wait for one */
    }
    if (got) {
        got->busy = 1, got->scope = sc;
        got->alone = ++g->n_busy == 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (!got)
        gm_cuda_device_leave(&sc);
    return got;
}

void gm_gpu_release(gm_gpu *g, gm_gpu_lane *l)
{
    if (!l)
        return;
    gm_cuda_scope sc = l->scope; /* read before another thread may take the lane */
    pthread_mutex_lock(&g->lock);
    l->busy = 0;
    g->n_busy--;
    pthread_cond_signal(&g->freed);
    pthread_mutex_unlock(&g->lock);
    gm_cuda_device_leave(&sc);
}

void gm_gpu_close(gm_gpu *g)
{
    if (!g)
        return;
    gm_cuda_scope sc = {0};
    if (g->ready) /* opened: its device exists (else an API error under compute-sanitizer) */
        (void)gm_cuda_device_enter(g->dev, &sc);
    for (int i = 0; i < g->n_lanes; i++)
        if (!g->ready || !spare_put(g->lanes[i]))
            lane_free(g->lanes[i]);
    gm_edge_map_dev_free(&g->map);
    if (g->ready) {
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->freed);
    }
    (void)cudaGetLastError();
    gm_cuda_device_leave(&sc);
    free(g);
}

const char *gm_gpu_name(const gm_gpu *g) { return g ? g->name : ""; }
int gm_gpu_number(const gm_gpu *g) { return g ? g->dev : -1; }

/* Edge and corner buffers for at least w x h pixels and `corners` corners. */
static gm_status need_edges(gm_gpu_lane *g, int w, int h, uint32_t corners)
{
    size_t n = (size_t)w * h;
    if (n <= g->cap && corners <= g->corner_cap)
        return GM_OK;
    /* a square of the larger side (never smaller than before): any later
     * shape of that area fits */
    int side = w > h ? w : h;
    size_t prev = (size_t)sqrt((double)g->cap);
    if ((size_t)side < prev)
        side = (int)prev;
    uint32_t ccap = corners > g->corner_cap ? corners : g->corner_cap;
    if (ccap < 1024)
        ccap = 1024;
    g->cap = 0;
    g->corner_cap = 0;
    /* grown in place on the lane's stream: what does not grow is kept */
    gm_status st = gm_edges_dev_alloc_on(&g->edges, side, side, g->stream);
    if (st == GM_OK)
        st = gm_compact_flags_dev_alloc_on(&g->flags, (uint32_t)((size_t)side * side), g->stream);
    if (st == GM_OK)
        st = gm_corners_dev_alloc_on(&g->corners, side, side, ccap, g->stream);
    if (st == GM_OK) {
        g->cap = (size_t)side * side;
        g->corner_cap = ccap;
    }
    return st;
}

/* The lane's stream was waited for as a whole (here, or by a stage's own
 * function: the corners', a pairing's collect): every copy queued before
 * is done. */
static void lane_synced(gm_gpu_lane *g) { g->synced++; }

/* The lane's stream waited for as a whole, and counted (lane_synced). */
static cudaError_t lane_wait(gm_gpu_lane *g)
{
    cudaError_t e = gm_cuda_stream_wait(g->stream);
    if (e == cudaSuccess)
        lane_synced(g);
    return e;
}

/* Host copy of the first n entries of a device array, through staging. */
static gm_status download(gm_gpu_lane *g, void *h_dst, const void *d_src, size_t bytes)
{
    if (bytes == 0)
        return GM_OK;
    gm_status st = hbuf_need(g, &g->h_all, bytes);
    if (st != GM_OK)
        return st;
    GM_CUDA_CHECK(cudaMemcpyAsync(g->h_all.h, d_src, bytes, cudaMemcpyDeviceToHost, g->stream));
    GM_CUDA_CHECK(lane_wait(g));
    memcpy(h_dst, g->h_all.h, bytes);
    return GM_OK;
}

/* A staging buffer is rewritten only once the stream's last copy out of
 * it is done; stage_sent marks a copy out of it just queued.  The stream
 * is waited for as a whole after nearly every upload (a side's corners, a
 * pairing's decisions, a download; lane_synced counts those waits), which
 * sees the copy done: then nothing is waited for here.  Otherwise the
 * stream is waited for here (once a stage's event was recorded after each
 * copy and waited for before each rewrite: two calls an upload, and a
 * pairing's draw uploads twice; docs/speed.md). */
static gm_status stage_free(gm_gpu_lane *g, hbuf *stage)
{
    if (stage->pending && stage->epoch == g->synced)
        GM_CUDA_CHECK(lane_wait(g));
    stage->pending = 0;
    return GM_OK;
}

static gm_status stage_sent(gm_gpu_lane *g, hbuf *stage)
{
    stage->pending = 1;
    stage->epoch = g->synced;
    return GM_OK;
}

/* Device copy of host memory into a growing buffer, through staging.
 * What is uploaded is only read on the device (the keys, the bases' frames,
 * a cloud and its cosines), so when dst's last upload came through the same
 * staging with the same bytes (a query's cloud, once a pairing's draw), it
 * holds them still and nothing is copied (docs/speed.md, "Fewer runtime
 * calls a query"). */
static gm_status upload(gm_gpu_lane *g, dbuf *dst, hbuf *stage, const void *h_src, size_t bytes)
{
    gm_status st = dbuf_need(g, dst, bytes ? bytes : 1);
    if (st == GM_OK)
        st = hbuf_need(g, stage, bytes ? bytes : 1);
    if (st != GM_OK || bytes == 0)
        return st;
    if (dst->from == stage && stage->to == dst && dst->filled == bytes && stage->sent == bytes &&
        memcmp(stage->h, h_src, bytes) == 0)
        return GM_OK;
    if ((st = stage_free(g, stage)) != GM_OK)
        return st;
    memcpy(stage->h, h_src, bytes);
    GM_CUDA_CHECK(cudaMemcpyAsync(dst->d, stage->h, bytes, cudaMemcpyHostToDevice, g->stream));
    dst->from = stage, dst->filled = bytes;
    stage->to = dst, stage->sent = bytes;
    return stage_sent(g, stage);
}

gm_status gm_gpu_side(gm_gpu_lane *g, gm_view img, int max_edges, uint32_t corner_target,
                      gm_points *all, gm_points *corners)
{
    memset(all, 0, sizeof *all);
    memset(corners, 0, sizeof *corners);
    const int w = img.width, h = img.height;
    const size_t n = (size_t)w * h;
    gm_status st = need_edges(g, w, h, corner_target);
    if (st == GM_OK)
        st = dbuf_need(g, &g->idx, (size_t)(max_edges > 0 ? max_edges : 1) * sizeof(uint32_t));
    if (st == GM_OK)
        st = dbuf_need(g, &g->all, (size_t)(max_edges > 0 ? max_edges : 1) * sizeof(gm_point));
    if (st == GM_OK)
        st = dbuf_need(g, &g->img, n);
    if (st == GM_OK)
        st = hbuf_need(g, &g->h_img, n);
    if (st != GM_OK)
        return st;
    /* the image, packed, through pinned memory */
    if ((st = stage_free(g, &g->h_img)) != GM_OK)
        return st;
    for (int y = 0; y < h; y++)
        memcpy((uint8_t *)g->h_img.h + (size_t)y * w, img.data + (size_t)y * img.stride, (size_t)w);
    GM_CUDA_CHECK(cudaMemcpyAsync(g->img.d, g->h_img.h, n, cudaMemcpyHostToDevice, g->stream));
    if ((st = stage_sent(g, &g->h_img)) != GM_OK)
        return st;
    uint32_t cap = (uint32_t)(max_edges > 0 ? max_edges : 0);
    if ((st = gm_edges_cuda(g->img.d, (size_t)w, w, h, max_edges, &g->edges, g->stream)) != GM_OK ||
        (st = gm_compact_flags_cuda(&g->flags, g->edges.d_edge, (uint32_t)n, g->idx.d, cap,
                                    g->stream)) != GM_OK ||
        (st = gm_edge_points_cuda(&g->edges, g->idx.d, g->flags.d_count, cap, g->all.d,
                                  g->stream)) != GM_OK)
        return st;
    /* the points and the corners to the host with the stream's one
     * synchronization: the points' count is on the device until then, so
     * all cap of them are copied (the edge threshold is set for about cap
     * edges: a 640x360 frame fills 28,000 of its 28,800; a second wait a
     * side for the exact count cost more, docs/speed.md) */
    if ((st = hbuf_need(g, &g->h_all, (size_t)(cap ? cap : 1) * sizeof(gm_point))) != GM_OK)
        return st;
    if (cap)
        GM_CUDA_CHECK(cudaMemcpyAsync(g->h_all.h, g->all.d, (size_t)cap * sizeof(gm_point),
                                      cudaMemcpyDeviceToHost, g->stream));
    if (!(corners->p = malloc((corner_target ? corner_target : 1) * sizeof *corners->p)))
        return GM_ERR_NOMEM;
    if ((st = gm_corners_cuda(&g->edges, corner_target, &g->corners, corners->p, &corners->n,
                              g->stream)) != GM_OK)
        goto fail;
    lane_synced(g); /* gm_corners_cuda waited for the stream */
    uint32_t n_all = *g->flags.h_count < cap ? *g->flags.h_count : cap;
    all->p = malloc((n_all ? n_all : 1) * sizeof *all->p);
    if (!all->p) {
        st = GM_ERR_NOMEM;
        goto fail;
    }
    memcpy(all->p, g->h_all.h, (size_t)n_all * sizeof(gm_point));
    all->n = n_all;
    return GM_OK;
fail:
    free(all->p);
    free(corners->p);
    memset(all, 0, sizeof *all);
    memset(corners, 0, sizeof *corners);
    return st;
}

/* The frames of bases given by their (i << 16 | j) keys over pts. */
static gm_status frames_of(const gm_points *pts, const uint32_t *keys, uint32_t n,
                           gm_vote_basis **out)
{
    gm_vote_basis *b = malloc((n ? n : 1) * sizeof *b);
    if (!b)
        return GM_ERR_NOMEM;
    for (uint32_t d = 0; d < n; d++) {
        uint32_t i = keys[d] >> 16, j = keys[d] & 0xFFFF;
        if (i >= pts->n || j >= pts->n) {
            free(b);
            return GM_ERR_INVALID;
        }
        b[d].a = pts->p[i];
        b[d].b = pts->p[j];
        b[d].f = gm_frame_of(b[d].a, b[d].b);
    }
    *out = b;
    return GM_OK;
}

/* Keys into a compacting table on the device; its dense-index -> key array
 * back on the host. */
static gm_status index_keys(gm_gpu_lane *g, const uint32_t *keys, uint32_t n, uint64_t seed,
                            uint32_t **unique, uint32_t *nu)
{
    *unique = NULL;
    *nu = 0;
    gm_cuckoo_dev t;
    memset(&t, 0, sizeof t);
    gm_status st = upload(g, &g->keys, &g->h_keys, keys, (size_t)n * sizeof *keys);
    if (st == GM_OK)
        st = gm_compact_build_cuda(&t, g->keys.d, n, 0, seed, NULL, g->stream);
    if (st == GM_OK && !(*unique = malloc((t.u ? t.u : 1) * sizeof **unique)))
        st = GM_ERR_NOMEM;
    if (st == GM_OK)
        st = download(g, *unique, t.d_unique, (size_t)t.u * sizeof **unique);
    if (st == GM_OK)
        *nu = t.u;
    else {
        free(*unique);
        *unique = NULL;
    }
    gm_cuckoo_dev_free_async(&t, g->stream);
    return st;
}

/* A level's multi-value table from its n_items items (d_keys, d_vals, made
 * on the stream, freed here whatever st says), each of its n_ref bases'
 * share of them, then the stream's end waited for; st: the status so far
 * (nothing is built after a failure). */
static gm_status level_table(gm_gpu_lane *g, gm_gpu_level *l, gm_status st, uint32_t *d_keys,
                             uint32_t *d_vals, uint32_t unique_bound, uint64_t seed)
{
    uint32_t *d_count = NULL;
    if (st == GM_OK && l->n_items > 0)
        st = gm_multi_build_cuda(&l->table, d_keys, d_vals, l->n_items, unique_bound, seed, NULL,
                                 g->stream);
    if (st == GM_OK && l->n_ref > 0) {
        cudaError_t e =
            gm_cuda_malloc_async((void **)&l->d_share, (size_t)l->n_ref * sizeof(float), g->stream);
        if (e == cudaSuccess)
            e = gm_cuda_malloc_async((void **)&d_count, (size_t)l->n_ref * sizeof *d_count, g->stream);
        if (e != cudaSuccess) {
            gm_cuda_record_error(e, "cudaMalloc(share)", __func__, __FILE__, __LINE__);
            st = e == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE;
        } else {
            st = gm_basis_share_cuda(d_vals, l->n_items, l->n_ref, d_count, l->d_share, g->stream);
        }
    }
    if (d_count)
        (void)cudaFreeAsync(d_count, g->stream);
    if (d_keys)
        (void)cudaFreeAsync(d_keys, g->stream);
    if (d_vals)
        (void)cudaFreeAsync(d_vals, g->stream);
    /* waited for on a failure too: the level's memory is freed without
     * waiting for the device (gm_gpu_level_free) */
    if (lane_wait(g) != cudaSuccess && st == GM_OK) {
        gm_cuda_record_error(cudaGetLastError(), "cudaStreamSynchronize", __func__, __FILE__,
                             __LINE__);
        st = GM_ERR_DEVICE;
    }
    return st;
}

gm_status gm_gpu_level_build(gm_gpu_lane *g, const gm_points *corners, const gm_bases *b,
                             const gm_points *cloud, uint32_t unique_bound, uint64_t seed_index,
                             uint64_t seed_table, gm_gpu_level **out, uint32_t **unique,
                             uint32_t *nu)
{
    *out = NULL;
    gm_gpu_level *l = calloc(1, sizeof *l);
    gm_vote_basis *frames = NULL;
    uint32_t *d_keys = NULL, *d_vals = NULL;
    if (!l)
        return GM_ERR_NOMEM;
    l->dev = g->dev;
    gm_status st = index_keys(g, b->key, b->n, seed_index, unique, nu);
    if (st == GM_OK)
        st = frames_of(corners, *unique, *nu, &frames);
    if (st == GM_OK)
        st = upload(g, &g->bases, &g->h_keys, frames, (size_t)*nu * sizeof *frames);
    if (st == GM_OK)
        st = upload(g, &g->cloud, &g->h_best, cloud->p, (size_t)cloud->n * sizeof *cloud->p);
    if (st == GM_OK && *nu) {
        cudaError_t e = gm_cuda_malloc_async((void **)&l->d_rends,
                                             (size_t)*nu * sizeof *l->d_rends, g->stream);
        if (e != cudaSuccess) {
            gm_cuda_record_error(e, "cudaMalloc(ends)", __func__, __FILE__, __LINE__);
            l->d_rends = NULL;
            st = e == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE;
        } else {
            st = gm_pair_ends_cuda(g->bases.d, *nu, l->d_rends, g->stream);
        }
    }
    if (st == GM_OK)
        st = gm_basis_items_cuda(g->bases.d, *nu, g->cloud.d, cloud->n, &d_keys, &d_vals,
                                 &l->n_items, g->stream);
    l->n_ref = *nu;
    st = level_table(g, l, st, d_keys, d_vals, unique_bound, seed_table);
    free(frames);
    if (st != GM_OK) {
        gm_gpu_level_free(l);
        free(*unique);
        *unique = NULL;
        *nu = 0;
        return st;
    }
    *out = l;
    return GM_OK;
}

void gm_gpu_level_free(gm_gpu_level *l)
{
    if (!l)
        return;
    gm_cuda_scope sc;
    (void)gm_cuda_device_enter(l->dev, &sc);
    gm_cuckoo_dev_free(&l->table);
    if (gm_cuda_free_async(l->d_share) != cudaSuccess ||
        gm_cuda_free_async(l->d_rends) != cudaSuccess)
        (void)cudaGetLastError();
    gm_edge_map_dev_free(&l->map);
    gm_cuda_device_leave(&sc);
    free(l);
}

gm_status gm_gpu_index(gm_gpu_lane *g, const uint32_t *sel, uint32_t nsel, uint64_t seed,
                       uint32_t **unique, uint32_t *n_q)
{
    return index_keys(g, sel, nsel, seed, unique, n_q);
}

/* The vote's outputs cleared; 1 when there is nothing to count: no rows,
 * or an empty table (every row is empty, and gm_reduce_topk_cpu keeps the
 * first query bases). */
static int vote_trivial(const gm_gpu_level *l, uint32_t nq, uint32_t k, gm_candidate *cands,
                        uint32_t *nc, double *vote_ms, double *reduce_ms)
{
    *nc = 0;
    *vote_ms = *reduce_ms = 0;
    if (nq == 0 || k == 0)
        return 1;
    if (l->n_items > 0 && l->n_ref > 0)
        return 0;
    const uint32_t m = nq < k ? nq : k;
    for (uint32_t q = 0; q < m; q++)
        cands[q] = (gm_candidate){0, q, 0, -INFINITY};
    *nc = m;
    return 1;
}

static gm_status record(cudaEvent_t e, cudaStream_t s)
{
    if (cudaEventRecord(e, s) != cudaSuccess) {
        gm_cuda_record_error(cudaGetLastError(), "cudaEventRecord", __func__, __FILE__, __LINE__);
        return GM_ERR_DEVICE;
    }
    return GM_OK;
}

/* Milliseconds between two of the stream's events (0 when unknown). */
static double between(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        (void)cudaGetLastError();
        ms = 0;
    }
    return ms;
}

/* The vote's rows g->best[nq] queued: the reduction to the k best of them
 * queued after (into g->best + nq), between the events g->voted and
 * g->reduced. */
static gm_status top_queue(gm_gpu_lane *g, uint32_t nq, uint32_t k, size_t tmp)
{
    gm_candidate *d_top = (gm_candidate *)g->best.d + nq;
    gm_status st = record(g->voted, g->stream);
    if (st == GM_OK)
        st = gm_topk_cuda(g->best.d, nq, k, tmp ? d_top + k : NULL, d_top, g->stream);
    if (st == GM_OK)
        st = record(g->reduced, g->stream);
    return st;
}

/* The k best rows (top_queue's) to cands[*nc], and the stage times since t0
 * without a wait of their own: the reduction's share from the stream's
 * events, the vote the rest. */
static gm_status top_collect(gm_gpu_lane *g, uint32_t nq, uint32_t k, double t0,
                             gm_candidate *cands, uint32_t *nc, double *vote_ms,
                             double *reduce_ms)
{
    const uint32_t m = nq < k ? nq : k;
    gm_status st = download(g, cands, (gm_candidate *)g->best.d + nq, (size_t)m * sizeof *cands);
    if (st != GM_OK)
        return st;
    *nc = m;
    double red = between(g->voted, g->reduced), all = (omp_get_wtime() - t0) * 1e3;
    *reduce_ms = red < all ? red : all;
    *vote_ms = all - *reduce_ms;
    return GM_OK;
}

/* The buffers of a vote of nq rows against n_ref bases and its top k: the
 * rows, the top k and the reduction's scratch in g->best (*tmp of it), the
 * vote's scratch (*scratch bytes) in g->scratch. */
static gm_status rows_need(gm_gpu_lane *g, uint32_t n_ref, uint32_t nq, uint32_t k,
                           size_t *scratch, size_t *tmp)
{
    *scratch = gm_vote_scratch_bytes(n_ref, nq);
    *tmp = gm_topk_tmp_count(nq, k);
    gm_status st = dbuf_need(g, &g->best, ((size_t)nq + k + *tmp) * sizeof(gm_candidate));
    return st == GM_OK ? dbuf_need(g, &g->scratch, *scratch + 1) : st;
}

/* The vote of query bases unique[nq] (their frames into g->bases, which a
 * pairing's decisions read) and the reduction to the k best rows, queued
 * (top_queue). */
static gm_status vote_queue(gm_gpu_lane *g, const gm_gpu_level *l, const gm_points *qcorners,
                            const uint32_t *unique, uint32_t nq, const gm_points *qcloud,
                            uint32_t k)
{
    gm_vote_basis *frames = NULL;
    gm_status st;
    size_t scratch = 0, tmp = 0; /* rows_need's */
    if ((st = frames_of(qcorners, unique, nq, &frames)) != GM_OK ||
        (st = upload(g, &g->bases, &g->h_keys, frames, (size_t)nq * sizeof *frames)) != GM_OK ||
        (st = upload(g, &g->cloud, &g->h_best, qcloud->p, (size_t)qcloud->n * sizeof *qcloud->p)) !=
            GM_OK ||
        (st = rows_need(g, l->n_ref, nq, k, &scratch, &tmp)) != GM_OK)
        goto done;
    if ((st = gm_vote_reduce_cuda(&l->table, l->n_ref, l->d_share, g->bases.d, nq, g->cloud.d,
                                  qcloud->n, scratch ? g->scratch.d : NULL, NULL, g->best.d,
                                  g->stream)) != GM_OK)
        goto done;
    st = top_queue(g, nq, k, tmp);
done:
    free(frames);
    return st;
}

gm_status gm_gpu_vote(gm_gpu_lane *g, const gm_gpu_level *l, const gm_points *qcorners,
                      const uint32_t *unique, uint32_t nq, const gm_points *qcloud, uint32_t k,
                      gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms)
{
    if (vote_trivial(l, nq, k, cands, nc, vote_ms, reduce_ms))
        return GM_OK;
    double t0 = omp_get_wtime();
    gm_status st = vote_queue(g, l, qcorners, unique, nq, qcloud, k);
    if (st != GM_OK)
        return st;
    return top_collect(g, nq, k, t0, cands, nc, vote_ms, reduce_ms);
}

static const gm_edge_map_dev *verify_map(const gm_gpu_lane *g, const gm_gpu_level *lv);

gm_status gm_gpu_pair(gm_gpu_lane *g, const gm_gpu_level *l, const gm_gpu_level *vl,
                      const gm_points *qcorners, const uint32_t *unique, uint32_t nq,
                      const gm_points *qcloud, uint32_t k, const gm_pair_in *in,
                      gm_pair_out *out, double *vote_ms, double *reduce_ms, double *decide_ms)
{
    *decide_ms = 0;
    out->doubtful = 1; /* until decided here */
    out->npick = 0;
    if (k > GM_MAX_TOP_K || !l->d_rends || !g->verify.d_pair)
        return gm_gpu_vote(g, l, qcorners, unique, nq, qcloud, k, out->cands, &out->nc, vote_ms,
                           reduce_ms);
    if (vote_trivial(l, nq, k, out->cands, &out->nc, vote_ms, reduce_ms))
        return GM_OK;
    double t0 = omp_get_wtime();
    const uint32_t m = nq < k ? nq : k;
    gm_status st = vote_queue(g, l, qcorners, unique, nq, qcloud, k);
    if (st == GM_OK)
        st = gm_pair_queue_cuda(verify_map(g, vl), &g->verify, (gm_candidate *)g->best.d + nq, m,
                                g->bases.d, l->d_rends, in, g->stream);
    if (st == GM_OK)
        st = record(g->decided, g->stream);
    if (st == GM_OK)
        st = gm_pair_collect_cuda(&g->verify, m, out, g->stream);
    if (st != GM_OK)
        return st;
    if (m)
        lane_synced(g); /* gm_pair_collect_cuda waited for the stream */
    /* the times from the stream's events: the reduction's, the decisions'
     * from its end, the vote the rest */
    double red = between(g->voted, g->reduced), dec = between(g->reduced, g->decided);
    double all = (omp_get_wtime() - t0) * 1e3;
    *reduce_ms = red < all ? red : all;
    *decide_ms = dec < all - *reduce_ms ? dec : all - *reduce_ms;
    *vote_ms = all - *reduce_ms - *decide_ms;
    return GM_OK;
}

/* The frames of triangles t over pts (gm_tri_frame_of) into *out
 * (malloc'd); GM_ERR_INVALID when a vertex is not in pts. */
static gm_status tri_frames(const gm_points *pts, const gm_tri *t, uint32_t n, gm_tri_frame **out)
{
    gm_tri_frame *f = malloc((n ? n : 1) * sizeof *f);
    if (!f)
        return GM_ERR_NOMEM;
    for (uint32_t d = 0; d < n; d++) {
        if (t[d].a >= pts->n || t[d].b >= pts->n || t[d].c >= pts->n) {
            free(f);
            return GM_ERR_INVALID;
        }
        f[d] = gm_tri_frame_of(pts->p[t[d].a], pts->p[t[d].b], pts->p[t[d].c]);
    }
    *out = f;
    return GM_OK;
}

/* A cloud and its cosines and sines (gm_points_cs) on the lane's device. */
static gm_status upload_cloud_cs(gm_gpu_lane *g, const gm_points *cloud)
{
    float *cs = malloc((cloud->n ? cloud->n : 1) * 2 * sizeof *cs);
    if (!cs)
        return GM_ERR_NOMEM;
    gm_points_cs(cloud, cs);
    gm_status st = upload(g, &g->cloud, &g->h_best, cloud->p, (size_t)cloud->n * sizeof *cloud->p);
    if (st == GM_OK)
        st = upload(g, &g->cs, &g->h_cs, cs, (size_t)cloud->n * 2 * sizeof *cs);
    free(cs);
    return st;
}

gm_status gm_gpu_tri_level(gm_gpu_lane *g, const gm_points *corners, const gm_tris *t,
                           const gm_points *cloud, uint64_t seed, gm_gpu_level **out)
{
    *out = NULL;
    gm_gpu_level *l = calloc(1, sizeof *l);
    if (!l)
        return GM_ERR_NOMEM;
    l->dev = g->dev;
    l->n_ref = t->n;
    uint32_t *d_keys = NULL, *d_vals = NULL;
    gm_tri_frame *frames = NULL;
    gm_status st = tri_frames(corners, t->t, t->n, &frames);
    if (st == GM_OK)
        st = upload(g, &g->bases, &g->h_keys, frames, (size_t)t->n * sizeof *frames);
    if (st == GM_OK)
        st = upload_cloud_cs(g, cloud);
    if (st == GM_OK)
        st = gm_tri_items_cuda(g->bases.d, t->n, g->cloud.d, g->cs.d, cloud->n, &d_keys, &d_vals,
                               &l->n_items, g->stream);
    st = level_table(g, l, st, d_keys, d_vals, GM_AFF_KEYS, seed);
    free(frames);
    if (st != GM_OK) {
        gm_gpu_level_free(l);
        return st;
    }
    *out = l;
    return GM_OK;
}

gm_status gm_gpu_tri_vote(gm_gpu_lane *g, const gm_gpu_level *l, const gm_points *qcorners,
                          const gm_tri *qtris, uint32_t nq, const gm_points *qcloud, uint32_t k,
                          gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms)
{
    if (vote_trivial(l, nq, k, cands, nc, vote_ms, reduce_ms))
        return GM_OK;
    double t0 = omp_get_wtime();
    gm_tri_frame *frames = NULL;
    gm_status st;
    size_t scratch = 0, tmp = 0; /* rows_need's */
    if ((st = tri_frames(qcorners, qtris, nq, &frames)) != GM_OK ||
        (st = upload(g, &g->bases, &g->h_keys, frames, (size_t)nq * sizeof *frames)) != GM_OK ||
        (st = upload_cloud_cs(g, qcloud)) != GM_OK ||
        (st = rows_need(g, l->n_ref, nq, k, &scratch, &tmp)) != GM_OK)
        goto done;
    if ((st = gm_tri_vote_reduce_cuda(&l->table, l->n_ref, l->d_share, g->bases.d, nq, g->cloud.d,
                                      g->cs.d, qcloud->n, scratch ? g->scratch.d : NULL, NULL,
                                      g->best.d, g->stream)) != GM_OK)
        goto done;
    if ((st = top_queue(g, nq, k, tmp)) == GM_OK)
        st = top_collect(g, nq, k, t0, cands, nc, vote_ms, reduce_ms);
done:
    free(frames);
    return st;
}

gm_status gm_gpu_map(gm_gpu *g, gm_gpu_lane *l, const gm_edge_map *map)
{
    gm_edge_map_dev_free(&g->map);
    return gm_edge_map_upload(map, &g->map, l->stream);
}

gm_status gm_gpu_level_map(gm_gpu_lane *g, gm_gpu_level *lv, const gm_edge_map *map)
{
    gm_edge_map_dev_free(&lv->map);
    lv->has_map = 0;
    gm_status st = gm_edge_map_upload(map, &lv->map, g->stream);
    lv->has_map = st == GM_OK;
    return st;
}

/* The map candidates of level lv are verified on: its own, or the
 * reference's level-0 map (lv NULL); NULL when lv has none. */
static const gm_edge_map_dev *verify_map(const gm_gpu_lane *g, const gm_gpu_level *lv)
{
    if (!lv)
        return g->map;
    return lv->has_map ? &lv->map : NULL;
}

/* Candidates per verification call: a pairing's top k (at most 256). */
#define GM_GPU_MAX_CANDS 256

gm_status gm_gpu_verify_points(gm_gpu_lane *g, const gm_points *q)
{
    /* a chain still on the side stream (one not collected: an error's
     * path) may be copying the last points: the new ones, and the points'
     * buffers grown on this stream, after it */
    if (g->joined)
        GM_CUDA_CHECK(cudaStreamWaitEvent(g->stream, g->joined, 0));
    if (g->verify.max_cands == 0 || q->n > g->verify.cap) {
        /* half as much again at least: a lane meets the batch's sizes in
         * any order, and each growth remakes the points' pinned staging */
        uint32_t want = q->n > 2048 ? q->n : 2048, cap = g->verify.cap;
        if (cap > 0 && cap < UINT32_MAX / 2 && want < cap + cap / 2)
            want = cap + cap / 2;
        gm_status st = gm_verify_dev_alloc_on(&g->verify, want, GM_GPU_MAX_CANDS, g->stream);
        if (st != GM_OK)
            return st;
    }
    /* a query alone on the device refines for latency, one of several for
     * throughput (verify_cuda.h; the same numbers): on an H200, a lone
     * public still's similarity refinements 12-24% faster with the wide
     * blocks, 16 video lanes 5% slower at 640x360 (docs/speed.md) */
    g->verify.wide = g->alone;
    return gm_verify_points_upload(&g->verify, q, g->stream);
}

/* The stages below check their map (NULL: GM_ERR_INVALID) and return at
 * once for no candidates. */
gm_status gm_gpu_verify(gm_gpu_lane *g, const gm_gpu_level *lv, const double *m, uint32_t nc,
                        gm_verify_score *scores)
{
    return gm_verify_batch_cuda(verify_map(g, lv), &g->verify, m, nc, scores, g->stream);
}

gm_status gm_gpu_spread(gm_gpu_lane *g, const gm_gpu_level *lv, gm_model model,
                        const double h[9], int w, int hgt, double *spread, gm_model rmodel,
                        int riters, double *rh, gm_verify_score *rscore)
{
    return gm_spread_refine_cuda(verify_map(g, lv), &g->verify, model, h, w, hgt, spread, rmodel,
                                 riters, rh, rscore, g->stream);
}

gm_status gm_gpu_grow(gm_gpu_lane *g, const gm_gpu_level *lv, gm_model model, double *h,
                      const double *seeds, uint32_t nc, gm_verify_score *scores)
{
    return gm_grow_verify_cuda(verify_map(g, lv), &g->verify, model, h, seeds, nc, scores,
                               g->stream);
}

/* The side stream, its event and buffers for the points of verify (made
 * on first use, grown with verify's). */
static gm_status side_need(gm_gpu_lane *g)
{
    if (!g->side_stream &&
        cudaStreamCreateWithFlags(&g->side_stream, cudaStreamNonBlocking) != cudaSuccess) {
        g->side_stream = NULL;
        gm_cuda_record_error(cudaGetLastError(), "cudaStreamCreateWithFlags", __func__, __FILE__,
                             __LINE__);
        return GM_ERR_DEVICE;
    }
    if ((!g->forked && cudaEventCreateWithFlags(&g->forked, cudaEventDisableTiming) != cudaSuccess) ||
        (!g->joined && cudaEventCreateWithFlags(&g->joined, cudaEventDisableTiming) != cudaSuccess)) {
        gm_cuda_record_error(cudaGetLastError(), "cudaEventCreate", __func__, __FILE__, __LINE__);
        return GM_ERR_DEVICE;
    }
    if (g->side.max_cands == 0 || g->side.cap < g->verify.cap)
        return gm_verify_dev_alloc_on(&g->side, g->verify.cap, GM_GPU_MAX_CANDS, g->side_stream);
    return GM_OK;
}

/* A chain (an answer's rivals) on the side stream: it waits for what the
 * main stream has queued so far (the points' upload among it), copies the
 * points to its own buffers and refines there, so the main stream may go
 * on (verify's candidate buffers are not touched) until
 * gm_gpu_chain_collect; a lane's next query's points wait for that, as
 * the host does. */
gm_status gm_gpu_chain_queue(gm_gpu_lane *g, const gm_gpu_level *const *lv,
                             gm_chain_dev_step *steps, int ns, const double *h,
                             const gm_verify_score *v, uint32_t n)
{
    for (int k = 0; k < ns; k++)
        steps[k].map = verify_map(g, lv[k]); /* NULL: GM_ERR_INVALID */
    gm_status st = side_need(g);
    if (st != GM_OK)
        return st;
    gm_verify_dev *s = &g->side;
    s->n = g->verify.n;
    s->wide = g->verify.wide;
    s->cluster = g->verify.cluster;
    GM_CUDA_CHECK(cudaEventRecord(g->forked, g->stream));
    GM_CUDA_CHECK(cudaStreamWaitEvent(g->side_stream, g->forked, 0));
    if (s->n) {
        GM_CUDA_CHECK(cudaMemcpyAsync(s->d_pts, g->verify.d_pts, s->n * sizeof *s->d_pts,
                                      cudaMemcpyDeviceToDevice, g->side_stream));
        GM_CUDA_CHECK(cudaMemcpyAsync(s->d_cs, g->verify.d_cs, 2 * (size_t)s->n * sizeof *s->d_cs,
                                      cudaMemcpyDeviceToDevice, g->side_stream));
    }
    st = gm_chain_queue_cuda(s, steps, ns, h, v, n, g->side_stream);
    GM_CUDA_CHECK(cudaEventRecord(g->joined, g->side_stream));
    return st;
}

gm_status gm_gpu_chain_collect(gm_gpu_lane *g, double *h, gm_verify_score *v, uint32_t n)
{
    if (!g->side_stream)
        return GM_ERR_INVALID;
    return gm_chain_collect_cuda(&g->side, h, v, n, g->side_stream);
}

gm_status gm_gpu_refine(gm_gpu_lane *g, const gm_gpu_level *lv, gm_model model, double *h,
                        int iters, uint32_t nc, gm_verify_score *scores)
{
    return gm_refine_verify_cuda(verify_map(g, lv), &g->verify, model, h, iters, nc, scores,
                                 g->stream);
}

/* The context's scheduling flag belongs to the process: set only when the
 * application asks (gmatch.h).  Asked before the library has started CUDA,
 * it waits in g_sync_pending and is applied by gm_cuda_begin, on whichever
 * thread starts CUDA (GM_DEVICE_AUTO's warm start, gm_device_start), so
 * the asking thread never waits for the driver. */
static pthread_mutex_t g_sync_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_sync_pending = -1;
static int g_cuda_begun;

static gm_status sync_apply(gm_cuda_sync mode, int n)
{
    static const unsigned flags[] = {cudaDeviceScheduleAuto, cudaDeviceScheduleSpin,
                                     cudaDeviceScheduleYield, cudaDeviceScheduleBlockingSync};
    gm_cuda_scope sc;
    gm_status st = GM_OK;
    for (int d = 0; d < n && st == GM_OK; d++) { /* every GPU (cuda:all) */
        cudaError_t e = d == 0 ? gm_cuda_device_enter(d, &sc) : cudaSetDevice(d);
        if (e == cudaSuccess)
            e = cudaSetDeviceFlags(flags[mode]);
        if (e != cudaSuccess) { /* cudaErrorSetOnActiveProcess: the context exists already */
            (void)cudaGetLastError();
            st = GM_ERR_DEVICE;
        }
    }
    gm_cuda_device_leave(&sc); /* the thread's device as it was */
    return st;
}

int gm_cuda_begin(char *why, size_t whylen)
{
    pthread_mutex_lock(&g_sync_mu);
    int n = gm_cuda_device_count(why, whylen);
    if (!g_cuda_begun && n > 0) {
        g_cuda_begun = 1;
        /* refused only where the application's own CUDA work made the
         * context first: CUDA's flag stays, as gmatch.h says */
        if (g_sync_pending >= 0)
            (void)sync_apply((gm_cuda_sync)g_sync_pending, n);
        g_sync_pending = -1;
    }
    pthread_mutex_unlock(&g_sync_mu);
    return n;
}

gm_status gm_cuda_set_sync(gm_cuda_sync mode)
{
    if ((unsigned)mode > GM_CUDA_SYNC_BLOCK)
        return GM_ERR_INVALID;
    pthread_mutex_lock(&g_sync_mu);
    int begun = g_cuda_begun;
    if (!begun)
        g_sync_pending = (int)mode;
    pthread_mutex_unlock(&g_sync_mu);
    if (!begun)
        return GM_OK; /* applied when CUDA starts */
    char why[256];
    int n = gm_cuda_device_count(why, sizeof why);
    return n == 0 ? GM_ERR_DEVICE : sync_apply(mode, n);
}
