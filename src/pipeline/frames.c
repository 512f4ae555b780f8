/* frames.c: the frame pipeline of gm_video_match (gmatch_video.h): a
 * decoding thread reads frames through the video input (src/io/video.c),
 * workers match them against the reference (gm_match), and the calling
 * thread hands the results to the sink in frame order.  The pipeline layer
 * above both: the video input knows nothing of matching.
 *
 * The ring holds the results in frame order; the frames' buffers come from
 * a pool of the workers' frames and a queue decoded ahead, so memory stays
 * flat whatever the video's length.  A buffer goes back to the pool when
 * its frame is written, or, where the sink needs no pixels, as soon as it
 * is matched: the results then wait in order behind a slow frame without
 * holding frames (GM_VIDEO_RESULTS_AHEAD).  Each worker runs its frames with
 * the video's frame threads (gm_thread_budget), frames in parallel beating
 * threads in a frame (gmatch_video.h).
 *
 * Why hand-written threads and not a library: the pipeline is one mutex, three
 * condition variables, a ring of slots whose results leave in frame order
 * and a pool of frame buffers that are reused (so memory stays flat).
 * GLib's GThreadPool/GAsyncQueue (the well-kept Debian candidate) would give
 * the queue but neither the buffer reuse nor the ordering, and would add a
 * large dependency for about 100 lines of pthreads. */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "io/video.h"

/* Frames decoded ahead of the workers (gm_video_opts.queue's default):
 * at least GM_VIDEO_QUEUE, and as many more as GM_VIDEO_RING_BYTES of
 * frames hold (a slot's gray image and, until a worker converts it, the
 * decoded frame: 2.5 bytes a pixel for 4:2:0), at most
 * GM_VIDEO_QUEUE_PER_WORKER a worker.  The results leave in frame order,
 * so a slow frame (a negative under auto searches to its end) holds its
 * slot while the others finish theirs: with workers + 2 slots the ring
 * filled behind it and every worker waited.  One H200, 16 workers,
 * 640x360 under auto: a queue of 2, 16, 64, 256 frames gave 857, 837,
 * 855, 939 fps (docs/speed.md). */
#ifndef GM_VIDEO_QUEUE
#define GM_VIDEO_QUEUE 2
#endif
#define GM_VIDEO_RING_BYTES ((int64_t)128 << 20)
#define GM_VIDEO_QUEUE_PER_WORKER 16

static int default_queue(const gm_video *v, int workers)
{
    int w = 0, h = 0;
    double fps = 0;
    gm_video_info(v, &w, &h, &fps);
    int64_t slot = (int64_t)w * h * 5 / 2;
    int64_t q = slot > 0 ? GM_VIDEO_RING_BYTES / slot - workers : 0;
    if (q > (int64_t)GM_VIDEO_QUEUE_PER_WORKER * workers)
        q = (int64_t)GM_VIDEO_QUEUE_PER_WORKER * workers;
    return q > GM_VIDEO_QUEUE ? (int)q : GM_VIDEO_QUEUE;
}

/* Matcher threads for a video on GPUs when gm_video_opts.workers does not
 * say: each drives one lane (stream) of the reference, as many as a GPU has
 * lanes (GM_GPU_MAX_LANES), at most the cores; on the CPU, the cores.
 * Under auto, the default, a frame the reference is not in is a negative
 * whose host stages (the triangles, the reverse search) take hundreds of
 * milliseconds, so the cores bound the run: on an H200 with 16 cores
 * (2026-11-28, docs/speed.md) 8 workers gave 266 fps at 640x360 and 24 at
 * 1080p, 16 workers 402-419 and 36-37; under similarity 16 did no worse
 * (1,085-1,094 against 1,032-1,099 fps at 640x360, 260-265 against 227-237
 * at 1080p).  8 had been measured on an H100 under similarity only, where
 * 8 lanes kept the GPU as busy as 16.  Chosen here, once the reference is
 * where it runs (gm_ref_expect), so that a video opened before then (the
 * command line's read-ahead while CUDA starts) and one opened by Python
 * get the command line's layout. */
#define GM_VIDEO_GPU_WORKERS 16

static int default_workers(const gm_ref *ref)
{
    int cores = omp_get_num_procs();
    int gpus = gm_ref_gpus(ref);
    if (gpus > 0 && (int64_t)GM_VIDEO_GPU_WORKERS * gpus < cores)
        return GM_VIDEO_GPU_WORKERS * gpus;
    return cores;
}

/* Results that may wait in order behind a slow frame once their frames'
 * buffers are back for the decoder (gm_video_opts.sink_pixels 0): a
 * result is some 1 KB, a 1080p frame 2 MB gray and 3 MB decoded.  With the
 * frames held until written, a 1080p frame under auto (36 ms on its
 * worker) kept the decoder waiting for room 2.2 ms a frame (one H200, 16
 * workers, a ring of 25 frames: docs/speed.md). */
#define GM_VIDEO_RESULTS_AHEAD 1024

/* A slot of the ring: FREE (the decoder may fill it), READY (decoded, waits
 * for a worker), BUSY (a worker matches it), DONE (waits for the writer). */
enum { SLOT_FREE = 0, SLOT_READY, SLOT_BUSY, SLOT_DONE };

typedef struct {
    int state;
    int64_t seq;            /* the item's place in the run */
    gm_video_frame item;    /* its image buffer from the pool while has_buf */
    int has_buf;
    struct AVFrame *raw;    /* its decoded frame, converted to gray by the worker */
    gm_result res;
    gm_status match;
    double decode_ms, match_ms;
} slot;

/* A frame's gray buffer, free for the decoder's next item. */
typedef struct {
    uint8_t *data;
    size_t cap;
} frame_buf;

typedef struct {
    gm_video *v;
    const gm_ref *ref;
    slot *ring;             /* the results, in frame order */
    int64_t cap;
    /* the frames' buffers not in a slot: the decoder takes one an item,
     * a worker gives it back once matched (the sink sees no pixels), or
     * else the writer once written; frames in flight stay at most
     * `frames` whatever the ring's length */
    frame_buf *pool;
    int pool_n, frames;
    int keep;               /* sink_pixels: a slot keeps its buffer until written */
    pthread_mutex_t mu;
    /* a condition for each kind of waiter, each signalled only for what it
     * waits for: one condition for every change woke all the workers, the
     * writer and the decoder several times a frame, and at 1,500 frames a
     * second the decoder queued for the mutex behind them */
    pthread_cond_t room;    /* the decoder: its next slot FREE and a buffer */
    pthread_cond_t ready;   /* the workers: a READY frame, or the end */
    pthread_cond_t done;    /* the writer: its next slot DONE, or the end */
    int64_t decoded;        /* items put in the ring so far */
    int64_t taken;          /* items handed to workers (or skipped: errors) */
    int decode_done, stop;
    gm_status fatal;
    gm_video_stats st;      /* under mu */
} pipeline;

/* Under mu: s's image buffer back to the pool (its size stays in the item). */
static void give_back(pipeline *p, slot *s)
{
    if (p->pool_n < p->frames) {
        p->pool[p->pool_n].data = s->item.img.data;
        p->pool[p->pool_n++].cap = s->item.cap;
    } else { /* never: `frames` buffers, each in the pool or in one slot */
        free(s->item.img.data);
    }
    s->item.img.data = NULL, s->item.cap = 0;
    s->has_buf = 0;
}

/* Under mu: the run stops, every waiter told. */
static void stop_all(pipeline *p)
{
    p->stop = 1;
    pthread_cond_broadcast(&p->room);
    pthread_cond_broadcast(&p->ready);
    pthread_cond_broadcast(&p->done);
}

static void *decode_main(void *arg)
{
    pipeline *p = arg;
    for (int64_t seq = 0;; seq++) {
        slot *s = &p->ring[seq % p->cap];
        pthread_mutex_lock(&p->mu);
        if ((s->state != SLOT_FREE || p->pool_n == 0) && !p->stop) {
            double w0 = gm_now_ms();
            while ((s->state != SLOT_FREE || p->pool_n == 0) && !p->stop)
                pthread_cond_wait(&p->room, &p->mu);
            p->st.decoder_wait_ms += gm_now_ms() - w0;
        }
        int stop = p->stop || p->fatal != GM_OK;
        if (!stop) { /* a buffer for the item (the slot gave its own back) */
            frame_buf b = p->pool[--p->pool_n];
            s->item.img.data = b.data, s->item.cap = b.cap;
            s->has_buf = 1;
        }
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        /* the slot is ours alone while FREE */
        int got = 0;
        double t0 = gm_now_ms();
        gm_status st = gm_video_read_raw(p->v, &s->item, &got, &s->raw);
        s->decode_ms = gm_now_ms() - t0;
        pthread_mutex_lock(&p->mu);
        p->st.decode_ms += s->decode_ms;
        if (st != GM_OK || !got) {
            if (st != GM_OK)
                p->fatal = st;
            pthread_mutex_unlock(&p->mu);
            break;
        }
        s->state = s->item.status == GM_OK ? SLOT_READY : SLOT_DONE;
        if (s->state == SLOT_DONE) /* an error item: no pixels */
            give_back(p, s);
        s->seq = seq;
        p->decoded = seq + 1;
        /* a frame for one worker; an item that did not decode for the writer */
        pthread_cond_signal(s->state == SLOT_READY ? &p->ready : &p->done);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->decode_done = 1;
    pthread_cond_broadcast(&p->ready);
    pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void *match_main(void *arg)
{
    pipeline *p = arg;
    /* this worker's share of the cores: gm_match keeps a budget set here */
    int ft = gm_video_options(p->v)->frame_threads;
    gm_model model = gm_video_options(p->v)->model;
    gm_thread_budget = ft > 0 ? ft : 1;
    struct SwsContext *sws = NULL; /* this worker's conversion cache */
    pthread_mutex_lock(&p->mu);
    for (;;) {
        /* error items go straight to the writer, which may already have
         * freed their slot for a later item */
        while (p->taken < p->decoded && (p->ring[p->taken % p->cap].seq != p->taken ||
                                         p->ring[p->taken % p->cap].state != SLOT_READY))
            p->taken++;
        if (p->stop || (p->decode_done && p->taken >= p->decoded))
            break;
        if (p->taken >= p->decoded) {
            double w0 = gm_now_ms();
            pthread_cond_wait(&p->ready, &p->mu);
            p->st.worker_wait_ms += gm_now_ms() - w0;
            continue;
        }
        slot *s = &p->ring[p->taken++ % p->cap];
        s->state = SLOT_BUSY;
        pthread_mutex_unlock(&p->mu);
        double t0 = gm_now_ms();
        gm_status conv = gm_video_finish(&s->raw, &sws, &s->item);
        double t1 = gm_now_ms();
        s->decode_ms += t1 - t0;
        memset(&s->res, 0, sizeof s->res);
        if (conv == GM_OK)
            s->match = model == GM_MODEL_REFERENCE
                           ? gm_match(p->ref, gm_image_view(&s->item.img), &s->res)
                           : gm_match_model(p->ref, gm_image_view(&s->item.img), model, &s->res);
        s->match_ms = conv == GM_OK ? gm_now_ms() - t1 : 0;
        pthread_mutex_lock(&p->mu);
        p->st.convert_ms += t1 - t0;
        p->st.match_ms += s->match_ms;
        if (conv == GM_ERR_NOMEM && p->fatal == GM_OK) /* as a failed read: no more frames */
            p->fatal = conv;
        if (!p->keep || conv != GM_OK) { /* matched: the decoder may reuse its buffer */
            give_back(p, s);
            pthread_cond_signal(&p->room);
        }
        s->state = SLOT_DONE;
        pthread_cond_signal(&p->done); /* the writer alone waits on it */
    }
    pthread_mutex_unlock(&p->mu);
    gm_video_sws_free(&sws);
    return NULL;
}

gm_status gm_video_match(gm_video *v, const gm_ref *ref, gm_video_sink sink, void *user)
{
    const gm_video_opts *o = v ? gm_video_options(v) : NULL;
    if (!o || !ref || !sink)
        return GM_ERR_INVALID;
    /* a video repays the accelerator's start under auto: its frames wait for it */
    gm_ref_expect(ref, -1, 1);
    int workers = o->workers > 0 ? o->workers : default_workers(ref);
    int queue = o->queue > 0 ? o->queue : default_queue(v, workers);
    int keep = o->sink_pixels != 0;
    pipeline p = {.v = v, .ref = ref, .frames = workers + queue, .keep = keep, .fatal = GM_OK};
    p.cap = p.frames + (keep ? 0 : GM_VIDEO_RESULTS_AHEAD);
    p.pool_n = p.frames; /* empty buffers: the reader sizes them */
    double t_start = gm_now_ms();
    p.ring = calloc((size_t)p.cap, sizeof *p.ring);
    p.pool = calloc((size_t)p.frames, sizeof *p.pool);
    pthread_t *th = calloc((size_t)workers + 1, sizeof *th);
    if (!p.ring || !p.pool || !th) {
        free(p.ring), free(p.pool), free(th);
        return GM_ERR_NOMEM;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.room, NULL);
    pthread_cond_init(&p.ready, NULL);
    pthread_cond_init(&p.done, NULL);
    int started = 0;
    gm_status st = GM_OK;
    if (pthread_create(&th[0], NULL, decode_main, &p) == 0)
        started = 1;
    for (int i = 0; started == i + 1 && i < workers; i++)
        if (pthread_create(&th[i + 1], NULL, match_main, &p) == 0)
            started++;
    if (started < workers + 1) {
        pthread_mutex_lock(&p.mu);
        stop_all(&p);
        pthread_mutex_unlock(&p.mu);
        st = GM_ERR_NOMEM;
    }
    /* the writer: results in frame order */
    for (int64_t seq = 0; st == GM_OK; seq++) {
        slot *s = &p.ring[seq % p.cap];
        pthread_mutex_lock(&p.mu);
        while (!(seq < p.decoded && s->state == SLOT_DONE) && !(p.decode_done && seq >= p.decoded))
            pthread_cond_wait(&p.done, &p.mu);
        int end = seq >= p.decoded;
        pthread_mutex_unlock(&p.mu);
        if (end)
            break;
        gm_video_result r = {.item = &s->item, .match = s->item.status == GM_OK ? s->match : GM_OK,
                             .res = s->item.status == GM_OK && s->match == GM_OK ? &s->res : NULL,
                             .time_ms = s->decode_ms + (s->item.status == GM_OK ? s->match_ms : 0)};
        int halt = sink(user, &r);
        pthread_mutex_lock(&p.mu);
        p.st.items++;
        if (s->has_buf)
            give_back(&p, s);
        s->state = SLOT_FREE;
        if (halt)
            stop_all(&p);
        pthread_cond_signal(&p.room); /* the decoder alone waits on it */
        pthread_mutex_unlock(&p.mu);
        if (halt)
            break;
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (st == GM_OK)
        st = p.fatal;
    gm_video_stats *vs = gm_video_stats_of(v);
    if (vs) { /* added to v's runs so far */
        vs->items += p.st.items;
        vs->workers = workers, vs->ring = p.frames;
        vs->wall_ms += gm_now_ms() - t_start;
        vs->decode_ms += p.st.decode_ms, vs->decoder_wait_ms += p.st.decoder_wait_ms;
        vs->match_ms += p.st.match_ms, vs->worker_wait_ms += p.st.worker_wait_ms;
        vs->convert_ms += p.st.convert_ms;
    }
    for (int64_t i = 0; i < p.cap; i++) {
        gm_video_frame_free(&p.ring[i].item);
        gm_video_raw_free(&p.ring[i].raw); /* a frame no worker took (a stop) */
    }
    for (int i = 0; i < p.pool_n; i++)
        free(p.pool[i].data);
    free(p.pool);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.room);
    pthread_cond_destroy(&p.ready);
    pthread_cond_destroy(&p.done);
    free(p.ring);
    free(th);
    return st;
}
