/* run.c: the command line's runs (run.h). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmatch.h"
#include "gmatch_video.h"
#include "cli/prefetch.h"
#include "cli/run.h"
#include "cli/spool.h"
#include "cli/stills.h"
#include "cli/stream.h"
#include "cli/videorun.h"
#include "cli/warmstart.h"

/* The device's line -v printed last (note_device), so that a move under
 * --device auto is printed once, when the library makes it. */
static char g_device_line[512];

static void note_device(const cli_opts *o, const gm_ref *ref, const char *q)
{
    const char *now = gm_ref_device(ref);
    if (o->verbosity < VERBOSITY_VERBOSE || (q && !strcmp(now, g_device_line)))
        return;
    if (q) /* a move: the GPU took over, or could not start */
        fprintf(stderr, PROG ": device: %s (after %s, %.1f ms after main began)\n", now, q,
                since_main());
    else
        fprintf(stderr, PROG ": device: %s\n", now);
    snprintf(g_device_line, sizeof g_device_line, "%s", now);
}

/* A reference loaded and prepared, and what its messages say: the work
 * (load_reference), which a thread of its own may do, apart from the
 * messages and the picture's image (opened_reference), which the main
 * thread gives when the reference's queries begin. */
typedef struct {
    gm_ref *ref;          /* NULL: failed, err says why */
    gm_image img;
    int w, h;
    char err[512];
    double decode_ms, prepare_ms, ready_ms;
} ref_loaded;

static void load_reference(const cli_opts *o, const char *name, ref_loaded *l)
{
    memset(l, 0, sizeof *l);
    double t0 = now_ms();
    const char *path = source_of(name, l->err, sizeof l->err);
    if (!path)
        return;
    gm_status st = gm_image_load_frame(path, o->ref_frame, o->params.max_pixels, &l->img, l->err,
                                       sizeof l->err);
    double t1 = now_ms();
    gpu_wait(); /* under cuda: what it did not hide counts in "prepare" */
    if (st != GM_OK)
        return;
    st = gm_ref_prepare(&o->params, gm_image_view(&l->img), &l->ref);
    l->decode_ms = t1 - t0, l->prepare_ms = now_ms() - t1, l->ready_ms = since_main();
    if (st != GM_OK) {
        snprintf(l->err, sizeof l->err, "%s",
                 l->ref && *gm_ref_error(l->ref) ? gm_ref_error(l->ref) : gm_status_str(st));
        gm_ref_free(l->ref);
        l->ref = NULL;
        gm_image_free(&l->img);
        return;
    }
    l->w = l->img.width, l->h = l->img.height;
}

/* One query against the reference *ref (NULL: it failed, ref_msg says
 * why): one line for a still or an error, a line a frame for a video.
 * tmpl holds the pair's fields (batch) and model; o the frames asked for;
 * left: queries of the run from this one on (auto's choice of the GPU,
 * gm_ref_expect); t0: when this
 * query's time began; resumed: --resume found lines of this pair. */
static void run_query(run_ctx *rc, const cli_opts *o, gm_ref **ref, const char *ref_msg,
                      const gm_output_rec *tmpl, const char *q, const char *path, int first,
                      int64_t left, double t0, int resumed)
{
    if (!*ref) { /* the reference failed: its message on the query's line */
        if (resumed) /* written already */
            return;
        gm_output_rec rec = *tmpl;
        rec.error = ref_msg;
        rec.time_ms = now_ms() - t0;
        rc->failed = 1;
        if (emit(rc->out, rc->out_name, o->format, &rec) != 0)
            rc->write_failed = 1;
        return;
    }
    double t_decode = now_ms();
    char err[512] = "";
    gm_image img;
    memset(&img, 0, sizeof img);
    const char *src = source_of(path, err, sizeof err);
    gm_status st = src ? gm_image_load(src, o->params.max_pixels, &img, err, sizeof err)
                       : GM_ERR_IO;
    double decode_ms = now_ms() - t_decode;
    gm_video *v = NULL;
    if (st == GM_ERR_FORMAT) { /* a video waits for the GPU (auto) */
        gm_ref_expect(*ref, -1, 1);
        note_device(o, *ref, q);
    }
    if (first) /* the read-ahead's video, when this is one on the GPU */
        v = prefetch_take(st == GM_ERR_FORMAT && gm_ref_backend(*ref) == GM_DEVICE_CUDA);
    if (st == GM_ERR_FORMAT) {
        gm_video_opts vo = video_opts(o);
        vo.model = tmpl->model == o->params.model ? GM_MODEL_REFERENCE : tmpl->model;
        if (v || (st = gm_video_open(src, &vo, &v, err, sizeof err)) == GM_OK) {
            video_ctx c = {.out = rc->out, .out_name = rc->out_name, .o = o, .q = q,
                           .extra_ms = now_ms() - t0, .ref_w = tmpl->ref_w,
                           .ref_h = tmpl->ref_h, .open_ms = since_main(), .tmpl = tmpl,
                           .resumed = resumed};
            if (run_video(&c, *ref, v) != 0)
                rc->failed = 1;
            rc->write_failed |= c.write_failed;
            gm_video_close(v);
            return;
        }
    }
    if (resumed) { /* the pair's line is written already: not an error line again */
        gm_image_free(&img);
        return;
    }
    still_job j = {.o = o, .tmpl = tmpl, .path = path, .st = st, .decode_ms = decode_ms};
    if (st == GM_OK) {
        /* gm_match takes a const reference (thread-safe), so the status is
         * all it can tell us. */
        gm_ref_expect(*ref, left, 0);
        still_match(*ref, &j, &img);
        note_device(o, *ref, q);
    } else {
        snprintf(j.err, sizeof j.err, "%s", err[0] ? err : gm_status_str(st));
    }
    gm_image_free(&img);
    j.ms = now_ms() - t0;
    still_emit(rc, o, *ref, &j, q, 0.0);
}

/* A JPEG or PNG by its first bytes (a still: its one line says it is done). */
static int starts_still(const char *path)
{
    return strcmp(path, "-") != 0 && looks_still(path) && access(path, R_OK) == 0;
}

/* A query to match against the current reference: its options (frames,
 * the model through the reference's), its line's fields, names. */
typedef struct {
    cli_opts o;
    gm_output_rec tmpl;
    const char *q;      /* the name the lines and messages give */
    const char *path;   /* the file (a batch's resolved path, stdin's copy) */
    int resumed;        /* --resume: the pair has lines already */
} run_item;

/* What a stream of run_items' stills (gm_stream_run) shares: job i's
 * still_job in slots[i % ring] from its match to its line. */
typedef struct {
    run_ctx *rc;
    const cli_opts *o;
    gm_ref **ref;
    const char *ref_msg;
    run_item *items; /* the stream's first item */
    still_job *slots;
    int base;        /* its index among the run's items */
    int plain;
    int *done;       /* lines written so far in the run */
    double t_start, t_stream;
} item_stream;

/* A worker: item i matched into its slot. */
static void item_work(void *ctx, int i, int slot)
{
    item_stream *s = ctx;
    run_item *it = &s->items[i];
    still_job *j = &s->slots[slot];
    *j = (still_job){.o = &it->o, .tmpl = &it->tmpl, .path = it->path, .resumed = it->resumed};
    still_run(*s->ref, j);
}

/* Item i's line (or its video's lines), then whether to stop streaming:
 * the output failed, or the reference moved to a device of one worker. */
static int item_put(void *ctx, int i, int slot)
{
    item_stream *s = ctx;
    if (s->rc->write_failed) /* the jobs taken before the output failed: no line */
        return 1;
    run_item *it = &s->items[i];
    const still_job *j = &s->slots[slot];
    double extra = (*s->done)++ == 0 ? s->t_stream - s->t_start : 0.0;
    if (j->video) /* a video (or a pair with lines: a video's next frames) */
        run_query(s->rc, &it->o, s->ref, s->ref_msg, &it->tmpl, it->q, it->path,
                  s->plain && s->base + i == 0, g_run.total - g_run.done, now_ms() - extra,
                  it->resumed);
    else
        still_emit(s->rc, s->o, *s->ref, j, it->q, extra);
    gm_progress_step(&g_run);
    return s->rc->write_failed || still_workers(*s->ref) == 1;
}

/* Every item's lines, in order.  On a GPU (still_workers > 1) the stills
 * are streamed through the workers (gm_stream_run: each takes the next
 * still when free, at most a ring of results ahead), and this thread
 * writes every line in order and matches a video in its turn; else one at
 * a time, as the command line always did (plain: the first may be the
 * read-ahead's video, and auto's choice of the GPU sees how many are
 * left). */
static void run_items(run_ctx *rc, const cli_opts *o, gm_ref **ref, const char *ref_msg,
                      run_item *items, int n, double t_start, int plain)
{
    int done = 0;
    for (int k = 0; k < n && !rc->write_failed;) {
        /* the workers of the device that answers now: under auto one on the
         * CPU, the GPU's once the library moved the reference there */
        int workers = *ref ? still_workers(*ref) : 1;
        int ring = STILL_WINDOW > 4 * workers ? STILL_WINDOW : 4 * workers;
        ring = ring < n - k ? ring : n - k;
        still_job *slots = workers > 1 ? calloc((size_t)ring, sizeof *slots) : NULL;
        if (!slots) { /* one worker (or no memory for the ring) */
            run_item *it = &items[k];
            run_query(rc, &it->o, ref, ref_msg, &it->tmpl, it->q, it->path, plain && k == 0,
                      g_run.total - g_run.done, done++ == 0 ? t_start : now_ms(),
                      it->resumed);
            gm_progress_step(&g_run);
            k++;
            continue;
        }
        item_stream s = {.rc = rc, .o = o, .ref = ref, .ref_msg = ref_msg, .items = &items[k],
                         .slots = slots, .base = k, .plain = plain, .done = &done,
                         .t_start = t_start, .t_stream = now_ms()};
        k += gm_stream_run(n - k, workers, ring, item_work, item_put, &s);
        free(slots);
    }
}

/* A loaded reference for a run, with its messages (its image kept for the
 * pictures or freed): NULL when it failed, with the message each of its
 * queries' lines carries in ref_msg ("reference NAME: why"). */
static gm_ref *opened_reference(run_ctx *rc, const cli_opts *o, const char *path,
                                const char *name, ref_loaded *l, int *w, int *h, char *ref_msg,
                                size_t len)
{
    *w = *h = 0;
    if (!l->ref) {
        diag_file(path, "%s", l->err);
        snprintf(ref_msg, len, "reference %s: %s", name, l->err);
        rc->failed = 1;
        return NULL;
    }
    warn_fallback(l->ref, path);
    note_device(o, l->ref, NULL);
    if (o->verbosity >= VERBOSITY_VERBOSE && g_gpu.ready_ms > 0)
        fprintf(stderr, PROG ": timeline: CUDA started %.1f to %.1f ms after main began\n",
                g_gpu.begin_ms, g_gpu.ready_ms);
    if (o->verbosity >= VERBOSITY_VERBOSE) {
        gm_prep_timing t;
        gm_ref_prep_timing(l->ref, &t);
        diag_file(path, "reference %dx%d: decode %.2f ms, prepare %.2f ms (library %.2f ms: "
                  "sides %.2f, maps %.2f + pixels %.2f, bases %.2f, tables %.2f, triangles %.2f + %.2f, "
                  "self-similarity %.2f), ready %.1f ms after main began",
                  l->w, l->h, l->decode_ms, l->prepare_ms, gm_ref_time_ms(l->ref), t.sides, t.maps,
                  t.map_pixels, t.bases, t.tables, t.tri_draw, t.tri_tables, t.selfmaps, l->ready_ms);
    }
    *w = l->w, *h = l->h;
    if (o->draw)
        g_pictures.ref = l->img; /* kept for the pictures */
    else
        gm_image_free(&l->img);
    return l->ref;
}

/* The reference loaded and prepared for a run: NULL when it failed, with
 * the message each of its queries' lines carries in ref_msg ("reference
 * NAME: why"). */
static gm_ref *open_reference(run_ctx *rc, const cli_opts *o, const char *path,
                              const char *name, int *w, int *h, char *ref_msg, size_t len)
{
    ref_loaded l;
    load_reference(o, path, &l);
    return opened_reference(rc, o, path, name, &l, w, h, ref_msg, len);
}

/* The reference freed, unless the library is still preparing its GPU copy
 * (auto: a start the run no longer needs), which the process does not wait
 * for: main ends it without freeing (g_abandon). */
static void release_reference(gm_ref *ref)
{
    if (gm_ref_starting(ref))
        g_abandon = 1;
    else
        gm_ref_free(ref);
}

void run_plain(run_ctx *rc, const cli_opts *o, const char *ref_path, char **queries,
               int nq)
{
    /* The first query's time includes loading and preparing the reference,
     * as the peer (bench/opencv_match.py) measures it. */
    double t_start = now_ms();
    char ref_msg[1024] = "";
    int ref_w, ref_h;
    gm_ref *ref = open_reference(rc, o, ref_path, ref_path, &ref_w, &ref_h, ref_msg,
                                 sizeof ref_msg);
    run_item *items = calloc((size_t)(nq > 0 ? nq : 1), sizeof *items);
    if (!items) {
        diag_file(ref_path, "out of memory");
        rc->failed = 1;
    }
    for (int i = 0; items && i < nq; i++) {
        char err[256];
        const char *src = source_of(queries[i], err, sizeof err);
        items[i] = (run_item){.o = *o, .q = queries[i], .path = src ? src : queries[i]};
        items[i].tmpl = (gm_output_rec){.query = queries[i], .model = o->params.model,
                                        .ref_w = ref_w, .ref_h = ref_h};
    }
    if (items)
        run_items(rc, o, &ref, ref_msg, items, nq, t_start, 1);
    free(items);
    release_reference(ref);
}

/* A batch group's work: what is left of its pairs as items, the options
 * its reference is prepared with, and (ahead) its reference being loaded
 * on a thread of its own. */
typedef struct {
    int g;
    gm_batch_group *gr;
    run_item *items;
    int ni;
    cli_opts go;
    int ahead;            /* th runs group_load_main */
    pthread_t th;
    ref_loaded loaded;
} batch_group_run;

static void *group_load_main(void *arg)
{
    batch_group_run *r = arg;
    load_reference(&r->go, r->gr->ref_path, &r->loaded);
    return NULL;
}

/* Pair p's work left as an item (*it): 1, or 0 when it has none (a
 * still with its line written, a video written to its last frame): its
 * options (frames, the frame to go on from) and its lines' fields. */
static int pair_item(const gm_batch_pair *p, const cli_opts *o, gm_model run_model, int wide,
                     run_item *it)
{
    if (p->written > 0 && starts_still(p->query_path))
        return 0;
    it->o = *o;
    if (p->has_frames)
        it->o.first = p->first, it->o.last = p->last;
    if (p->written > 0) { /* on from the frame after the last one written */
        int64_t next = p->last_frame + it->o.step;
        it->o.first = next > it->o.first ? next : it->o.first;
        if (it->o.last >= 0 && it->o.first >= it->o.last)
            return 0;
    }
    it->tmpl = (gm_output_rec){.line = p->line, .id = p->id, .ref = p->ref, .query = p->query,
                               .model = p->model >= 0 ? (gm_model)p->model : run_model,
                               .wide = wide};
    it->q = p->query, it->path = p->query_path, it->resumed = p->written > 0;
    return 1;
}

/* Group g's items left for this shard (without making them). */
static int group_count(const gm_batch *b, int g, const cli_opts *o)
{
    const gm_batch_group *gr = &b->groups[g];
    if (gr->shard != o->shard)
        return 0;
    int n = 0;
    run_item it;
    for (int k = 0; k < gr->n; k++)
        n += pair_item(&b->pairs[gr->pairs[k]], o, GM_MODEL_SIMILARITY, 0, &it);
    return n;
}

/* Group g's work into *r: 1, or 0 when none is left for this shard (or
 * no memory: its message given). */
static int group_items(run_ctx *rc, gm_batch *b, int g, const cli_opts *o, gm_model run_model,
                       int wide, batch_group_run *r)
{
    memset(r, 0, sizeof *r);
    gm_batch_group *gr = &b->groups[g];
    if (gr->shard != o->shard)
        return 0;
    run_item *items = calloc((size_t)gr->n, sizeof *items);
    if (!items) {
        diag_file(gr->ref_path, "out of memory");
        rc->failed = 1;
        return 0;
    }
    int ni = 0, mixed = 0;
    for (int k = 0; k < gr->n; k++)
        if (pair_item(&b->pairs[gr->pairs[k]], o, run_model, wide, &items[ni]))
            mixed |= items[ni++].tmpl.model != run_model;
    if (ni == 0) {
        free(items);
        return 0;
    }
    /* a reference asked for several models is prepared for auto, which
     * answers each (the same results as one prepared for it); the items'
     * options carry the reference's model, so that gm_match_model answers
     * the others */
    r->g = g, r->gr = gr, r->items = items, r->ni = ni;
    r->go = *o;
    if (mixed && run_model == GM_MODEL_SIMILARITY)
        r->go.params.model = GM_MODEL_AUTO;
    for (int k = 0; k < ni; k++)
        items[k].o.params.model = r->go.params.model;
    return 1;
}

/* ---- a batch's groups through one pool of workers ---------------------- */

/* On a GPU the groups' stills go through one stream of workers
 * (gm_stream_run), not a stream a group: a group's last stills no longer
 * hold the other workers idle until they end, and the next groups'
 * references are prepared meanwhile by loader threads, several at once.
 * The public stills as 520 groups of 6 pairs on an H200 (16 workers): a
 * stream a group 568-572 pairs/s under similarity and 266-269 under auto,
 * a third of what 13 groups of 240 give; one stream 1,237-1,245 and
 * 687-697 (docs/speed.md, "A batch's groups through one stream").  The
 * lines, their order and the messages are the same: a group's reference is
 * "opened" (its messages, its line fields) by the main thread when it
 * hands on the group's first line, and released after its last.  Only the
 * run's first line counts the wait for its reference in its time_ms; a
 * later group's reference is prepared while earlier groups run. */
#define GROUP_LOADERS 4     /* references prepared at once a GPU (GMATCH_REF_LOADERS: 1-16 in all) */
#define GROUP_LOADERS_MAX 16
#define GROUP_AHEAD 2       /* groups loaded and not yet handed on: loaders x this, at most */

static int group_loaders(int gpus)
{
    const char *e = getenv("GMATCH_REF_LOADERS");
    int n = e && *e ? atoi(e) : GROUP_LOADERS * (gpus > 1 ? gpus : 1);
    return n < 1 ? 1 : n > GROUP_LOADERS_MAX ? GROUP_LOADERS_MAX : n;
}

typedef struct {
    batch_group_run r;
    gm_ref *ref;          /* after opened: NULL when it failed (ref_msg says why) */
    int opened;
    int gpu;              /* its one GPU's slot in group_stream.gpu, or -1: on every GPU */
    char gpus[16];        /* that GPU's number, its reference's gm_params.gpus */
    char ref_msg[1024];
} stream_group;

typedef struct {
    run_ctx *rc;
    const cli_opts *o;
    gm_batch *b;
    gm_model run_model;
    int wide;
    int m;                /* groups */
    int *gnum, *start;    /* each group's number in b, its first job; start[m] = jobs */
    stream_group **gs;    /* [m] while loaded and not yet handed on */
    int *ready;           /* [m] loaded */
    int next_load;        /* the next group a loader takes */
    int handing;          /* the group whose lines are being handed on */
    int stop;             /* the loaders take no more */
    int ahead;            /* groups loaded and not yet handed on, at most */
    int workers, ring;    /* the stream's: its workers take jobs at most ring ahead */
    int ngpu;             /* the first reference's GPUs: a small group goes on one of them */
    int gpu[GM_MAX_GPUS]; /* their numbers */
    gm_device kind;       /* theirs (gm_device_memory) */
    double keep;          /* the share of each one's memory loading ahead leaves available */
    int64_t pending[GM_MAX_GPUS]; /* the pairs of the groups on each, loaded and not done */
    pthread_mutex_t lock;
    pthread_cond_t loaded; /* a group loaded: for the workers */
    pthread_cond_t room;   /* a group handed on, or stop: for the loaders */
    still_job *slots;
    double t_start, t_stream;
    int first_put;
} group_stream;

/* The group of job i. */
static int group_of(const group_stream *gs, int i)
{
    int lo = 0, hi = gs->m - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (gs->start[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Where group g's reference goes when the run has several GPUs.  Each
 * copy of a reference costs a preparation on its GPU, which a group of a
 * few pairs does not repay: the public stills as 520 groups of 6 pairs
 * on two H200s went at 903-1,003 pairs/s on both GPUs against
 * 1,015-1,108 on one, and at 1,270-1,338 with a group on one GPU
 * (similarity; auto 752-757 -> 849-865; docs/speed.md, "Two GPUs and a
 * batch's groups").
 * A group with fewer pairs than the workers, whose pairs then share the
 * workers with the groups beside it, is prepared on one GPU, the one
 * whose groups loaded and not yet done have the fewest pairs; a larger
 * group on every GPU, as the first is, and so is a group with a video (its
 * frames spread over the GPUs).  The results are the same on any GPU. */
static void group_place(group_stream *s, stream_group *g)
{
    if (s->ngpu < 2 || g->r.ni >= s->workers)
        return;
    for (int k = 0; k < g->r.ni; k++) /* a video's frames spread over every GPU */
        if (strcmp(g->r.items[k].path, "-") == 0 || !looks_still(g->r.items[k].path))
            return;
    pthread_mutex_lock(&s->lock);
    int best = 0;
    for (int k = 1; k < s->ngpu; k++)
        if (s->pending[k] < s->pending[best])
            best = k;
    s->pending[best] += g->r.ni;
    pthread_mutex_unlock(&s->lock);
    g->gpu = best;
    snprintf(g->gpus, sizeof g->gpus, "%d", s->gpu[best]);
    g->r.go.params.gpus = g->gpus;
}

/* Whether the next group may be loaded now (under the lock): at most
 * `ahead` groups ahead, and beyond the group after the one being handed on
 * only while the groups loaded before it hold fewer jobs than the workers
 * can take ahead of the lines (the ring): the jobs the workers can reach
 * are then loaded, and a batch of large groups does not prepare many
 * references at once beside its workers (the public stills as 13 groups
 * of 240 on two H200s: eight loaders 1,366-1,382 pairs/s under auto
 * against four's 1,422-1,429, every group loaded at once). */
static int group_room(const group_stream *s, int low)
{
    const int k = s->next_load;
    if (k >= s->handing + s->ahead)
        return 0;
    return k <= s->handing + 1 || (!low && s->start[k] - s->start[s->handing + 1] < s->ring);
}

/* Whether a GPU of the run has less memory available than keep of its
 * total (gm_device_memory: free, and the library's pool unused): then no
 * group beyond the next is loaded (group_room) until one is handed on.
 * Each reference loaded ahead holds its tables and maps on the device (a
 * photograph's some 0.5 GB), beside the lanes of the groups being matched;
 * a GPU that runs out while preparing a reference, or in a query, goes on
 * on the CPU for that reference (gm_ref_fallback), many times slower.  A
 * driver call: made without the lock. */
#define GROUP_KEEP_MEMORY 0.25 /* GMATCH_REF_AHEAD_MEM: 0 (no check) to 1 */
static int memory_low(const group_stream *s)
{
    for (int k = 0; s->keep > 0 && k < s->ngpu; k++) {
        size_t avail = 0, total = 0;
        if (gm_device_memory(s->kind, s->gpu[k], &avail, &total) == GM_OK &&
            (double)avail < s->keep * (double)total)
            return 1;
    }
    return 0;
}

static double group_keep(void)
{
    const char *e = getenv("GMATCH_REF_AHEAD_MEM");
    char *end = NULL;
    double v = e && *e ? strtod(e, &end) : GROUP_KEEP_MEMORY;
    if (e && *e && (*end || !(v >= 0 && v <= 1)))
        v = GROUP_KEEP_MEMORY;
    return v;
}

static void *group_loader_main(void *arg)
{
    group_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        int low = 0;
        if (!s->stop && s->next_load < s->m && s->next_load > s->handing + 1) {
            pthread_mutex_unlock(&s->lock);
            low = memory_low(s);
            pthread_mutex_lock(&s->lock);
        }
        /* until there is room; a group handed on meanwhile: the memory again */
        const int seen = s->handing;
        while (!s->stop && s->next_load < s->m && !group_room(s, low) && s->handing == seen)
            pthread_cond_wait(&s->room, &s->lock);
        if (s->stop || s->next_load >= s->m)
            break;
        if (s->handing != seen)
            continue;
        int k = s->next_load++;
        pthread_mutex_unlock(&s->lock);
        stream_group *g = s->gs[k]; /* group 0 comes loaded */
        if (!g && (g = calloc(1, sizeof *g)) != NULL) {
            g->gpu = -1;
            if (group_items(s->rc, s->b, s->gnum[k], s->o, s->run_model, s->wide, &g->r) &&
                g->r.ni == s->start[k + 1] - s->start[k]) {
                group_place(s, g);
                load_reference(&g->r.go, g->r.gr->ref_path, &g->r.loaded);
            } else { /* no memory (the count was made before): its lines say so */
                free(g->r.items);
                memset(&g->r, 0, sizeof g->r);
            }
        }
        pthread_mutex_lock(&s->lock);
        s->gs[k] = g;
        s->ready[k] = 1;
        pthread_cond_broadcast(&s->loaded);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Job i's group, once loaded (NULL: no memory for it). */
static stream_group *group_wait(group_stream *s, int k)
{
    pthread_mutex_lock(&s->lock);
    while (!s->ready[k])
        pthread_cond_wait(&s->loaded, &s->lock);
    stream_group *g = s->gs[k];
    pthread_mutex_unlock(&s->lock);
    return g;
}

static void group_work(void *ctx, int i, int slot)
{
    group_stream *s = ctx;
    int k = group_of(s, i);
    stream_group *g = group_wait(s, k);
    still_job *j = &s->slots[slot];
    if (!g || !g->r.items || !g->r.loaded.ref) { /* its line: the reference's error, on put */
        *j = (still_job){.video = 1};
        return;
    }
    run_item *it = &g->r.items[i - s->start[k]];
    *j = (still_job){.o = &it->o, .tmpl = &it->tmpl, .path = it->path, .resumed = it->resumed};
    still_run(g->r.loaded.ref, j);
}

/* A group's state gone: its reference (released when opened, else freed
 * unseen), its image, its items.  NULL: nothing. */
static void group_free(stream_group *g)
{
    if (!g)
        return;
    if (g->opened && g->ref)
        release_reference(g->ref);
    else if (!g->opened && g->r.loaded.ref)
        gm_ref_free(g->r.loaded.ref);
    gm_image_free(&g->r.loaded.img);
    free(g->r.items);
    free(g);
}

/* The line of the idx-th pair left in group k when the group's items
 * could not be made (no memory): an error line all the same. */
static void group_error_line(group_stream *s, int k, int idx)
{
    const gm_batch_group *gr = &s->b->groups[s->gnum[k]];
    run_item it;
    for (int q = 0, seen = 0; q < gr->n; q++)
        if (pair_item(&s->b->pairs[gr->pairs[q]], s->o, s->run_model, s->wide, &it) &&
            seen++ == idx) {
            gm_output_rec rec = it.tmpl;
            rec.error = "out of memory";
            diag_file(it.q, "out of memory");
            s->rc->failed = 1;
            if (emit(s->rc->out, s->rc->out_name, s->o->format, &rec) != 0)
                s->rc->write_failed = 1;
            return;
        }
}

static int group_put(void *ctx, int i, int slot)
{
    group_stream *s = ctx;
    run_ctx *rc = s->rc;
    int k = group_of(s, i);
    stream_group *g = group_wait(s, k); /* loaded: its first job is done */
    if (!rc->write_failed) {
        if (g && !g->opened && g->r.items) {
            int w, h;
            g->opened = 1;
            g->ref = opened_reference(rc, &g->r.go, g->r.gr->ref_path, g->r.gr->ref,
                                      &g->r.loaded, &w, &h, g->ref_msg, sizeof g->ref_msg);
            for (int q = 0; q < g->r.ni; q++)
                g->r.items[q].tmpl.ref_w = w, g->r.items[q].tmpl.ref_h = h;
        }
        const still_job *j = &s->slots[slot];
        double extra = s->first_put++ == 0 ? s->t_stream - s->t_start : 0.0;
        if (!g || !g->r.items) {
            group_error_line(s, k, i - s->start[k]);
        } else {
            run_item *it = &g->r.items[i - s->start[k]];
            if (j->video) /* a video, a pair with lines, or a reference that failed */
                run_query(rc, &it->o, &g->ref, g->ref_msg, &it->tmpl, it->q, it->path, 0,
                          g_run.total - g_run.done, now_ms() - extra, it->resumed);
            else
                still_emit(rc, &it->o, g->ref, j, it->q, extra);
        }
        gm_progress_step(&g_run);
    }
    if (i + 1 == s->start[k + 1]) { /* the group's last job: its reference goes */
        int gpu = g ? g->gpu : -1, ni = g ? g->r.ni : 0;
        group_free(g);
        pthread_mutex_lock(&s->lock);
        if (gpu >= 0)
            s->pending[gpu] -= ni;
        s->gs[k] = NULL;
        s->handing = k + 1;
        pthread_cond_broadcast(&s->room);
        pthread_mutex_unlock(&s->lock);
    }
    return rc->write_failed;
}

/* Groups first..b->ng-1 of this shard through one stream of `workers`
 * workers, group `first` already loaded in *cur (not yet opened).
 * 0; -1 when nothing could be started (nothing done: the caller goes on
 * a group at a time). */
static int run_groups_streamed(run_ctx *rc, const cli_opts *o, gm_batch *b, gm_model run_model,
                               int wide, batch_group_run *cur, gm_ref *ref, const char *ref_msg,
                               int workers, double t_start)
{
    group_stream s = {.rc = rc, .o = o, .b = b, .run_model = run_model, .wide = wide,
                      .t_start = t_start};
    const size_t most = (size_t)(b->ng - cur->g); /* the groups left, some with nothing */
    s.gnum = malloc(most * sizeof *s.gnum);
    s.start = malloc((most + 1) * sizeof *s.start);
    s.gs = calloc(most, sizeof *s.gs);
    s.ready = calloc(most, sizeof *s.ready);
    stream_group *g0 = calloc(1, sizeof *g0);
    pthread_t th[GROUP_LOADERS_MAX];
    int loaders = 0, done = -1;
    if (!s.gnum || !s.start || !s.gs || !s.ready || !g0)
        goto out;
    int n = 0, m = 0;
    for (int g = cur->g; g < b->ng; g++) {
        int c = g == cur->g ? cur->ni : group_count(b, g, o);
        if (c > 0)
            s.gnum[m] = g, s.start[m++] = n, n += c;
    }
    s.start[m] = n;
    s.m = m;
    int ring = STILL_WINDOW > 4 * workers ? STILL_WINDOW : 4 * workers;
    s.slots = calloc((size_t)ring, sizeof *s.slots);
    if (!s.slots)
        goto out;
    g0->r = *cur; /* opened by the caller */
    g0->opened = 1, g0->ref = ref, g0->gpu = -1;
    s.workers = workers, s.ring = ring;
    /* its GPUs: for the small groups (group_place) and their memory */
    for (int k = 0; k < gm_ref_gpus(ref) && k < GM_MAX_GPUS; k++)
        s.gpu[s.ngpu++] = gm_ref_gpu(ref, k);
    s.kind = gm_ref_backend(ref), s.keep = group_keep();
    snprintf(g0->ref_msg, sizeof g0->ref_msg, "%s", ref_msg);
    s.gs[0] = g0, s.ready[0] = 1, s.next_load = 1;
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.loaded, NULL);
    pthread_cond_init(&s.room, NULL);
    const int want = group_loaders(s.ngpu);
    s.ahead = GROUP_AHEAD * want;
    for (int k = 0; k < want && k < m - 1; k++)
        loaders += pthread_create(&th[loaders], NULL, group_loader_main, &s) == 0;
    if (loaders == 0 && m > 1) {
        pthread_mutex_destroy(&s.lock);
        pthread_cond_destroy(&s.loaded);
        pthread_cond_destroy(&s.room);
        goto out;
    }
    g0 = NULL; /* the stream's now */
    s.t_stream = now_ms();
    (void)gm_stream_run(n, workers, ring, group_work, group_put, &s);
    pthread_mutex_lock(&s.lock);
    s.stop = 1;
    pthread_cond_broadcast(&s.room);
    pthread_mutex_unlock(&s.lock);
    for (int k = 0; k < loaders; k++)
        pthread_join(th[k], NULL);
    /* after a stop (the output failed): the groups loaded whose jobs were
     * never taken */
    for (int k = 0; k < m; k++)
        group_free(s.gs[k]);
    pthread_mutex_destroy(&s.lock);
    pthread_cond_destroy(&s.loaded);
    pthread_cond_destroy(&s.room);
    done = 0;
out:
    if (done != 0)
        free(g0);
    free(s.slots);
    free(s.gnum);
    free(s.start);
    free(s.gs);
    free(s.ready);
    return done;
}

void run_batch(run_ctx *rc, cli_opts *o, gm_batch *b, int appending)
{
    gm_model run_model = o->params.model;
    int wide = run_model == GM_MODEL_HOMOGRAPHY || run_model == GM_MODEL_AUTO;
    for (int i = 0; i < b->n; i++)
        wide |= b->pairs[i].model == GM_MODEL_HOMOGRAPHY || b->pairs[i].model == GM_MODEL_AUTO;
    if (!appending && gm_output_header(rc->out, o->format, wide ? GM_MODEL_HOMOGRAPHY
                                                                 : GM_MODEL_SIMILARITY, 1) != 0) {
        diag_file(rc->out_name, "write error: %s", strerror(errno));
        rc->write_failed = 1;
        return;
    }
    int n = o->shards > 0 ? o->shards : 1;
    /* the bad lines of this shard first: one error line each */
    for (int i = 0; i < b->n && !rc->write_failed; i++) {
        gm_batch_pair *p = &b->pairs[i];
        if (!p->error || gm_batch_pair_shard(b, i, n) != o->shard || p->written > 0)
            continue;
        char msg[600];
        snprintf(msg, sizeof msg, "line %" PRId64 ": %s", p->line, p->error);
        diag_file(o->batch, "%s", msg);
        gm_output_rec rec = {.line = p->line, .id = p->id,
                             .ref = p->ref ? p->ref : "", .query = p->query ? p->query : "",
                             .model = p->model >= 0 ? (gm_model)p->model : run_model,
                             .wide = wide, .error = msg};
        rc->failed = 1;
        if (emit(rc->out, rc->out_name, o->format, &rec) != 0)
            rc->write_failed = 1;
        gm_progress_step(&g_run);
    }
    /* group by group; on a GPU the next group's reference is prepared on a
     * thread of its own while this group's stills are matched */
    batch_group_run cur, next;
    int have_next = 0;
    for (int g = 0; g < b->ng && !rc->write_failed; g++) {
        double t_start = now_ms(); /* the first line's time: the wait for its reference too */
        if (have_next && next.g == g) {
            if (next.ahead) /* its reference loaded meanwhile */
                pthread_join(next.th, NULL);
            cur = next;
            have_next = 0;
        } else if (!group_items(rc, b, g, o, run_model, wide, &cur)) {
            continue;
        }
        char ref_msg[1024] = "";
        int ref_w, ref_h;
        gm_image_free(&g_pictures.ref);
        if (!cur.ahead)
            load_reference(&cur.go, cur.gr->ref_path, &cur.loaded);
        gm_ref *ref = opened_reference(rc, &cur.go, cur.gr->ref_path, cur.gr->ref, &cur.loaded,
                                       &ref_w, &ref_h, ref_msg, sizeof ref_msg);
        for (int k = 0; k < cur.ni; k++) /* the model: group_items' */
            cur.items[k].tmpl.ref_w = ref_w, cur.items[k].tmpl.ref_h = ref_h;
        /* on several workers (a GPU's) and without pictures (whose
         * reference image is the group's): this group and every later one
         * through one stream, their references prepared meanwhile */
        if (!have_next && ref && still_workers(ref) > 1 && !o->draw &&
            run_groups_streamed(rc, o, b, run_model, wide, &cur, ref, ref_msg,
                                still_workers(ref), t_start) == 0)
            return;
        /* else this group's stills on several workers (a GPU's), the next
         * group's reference meanwhile */
        if (ref && still_workers(ref) > 1)
            for (int g2 = g + 1; g2 < b->ng && !have_next; g2++)
                if (group_items(rc, b, g2, o, run_model, wide, &next)) {
                    have_next = 1;
                    next.ahead = pthread_create(&next.th, NULL, group_load_main, &next) == 0;
                }
        run_items(rc, o, &ref, ref_msg, cur.items, cur.ni, t_start, 0);
        free(cur.items);
        release_reference(ref);
    }
    if (have_next) { /* the output failed: the next group's reference is not used */
        if (next.ahead) {
            pthread_join(next.th, NULL);
            gm_ref_free(next.loaded.ref);
            gm_image_free(&next.loaded.img);
        }
        free(next.items);
    }
}

int run_progress_start(const cli_opts *o, const gm_batch *b, const char *ref, int nq)
{
    int64_t total = nq;
    if (o->batch) {
        total = 0;
        for (int i = 0; i < b->n; i++)
            total += gm_batch_pair_shard(b, i, o->shards > 0 ? o->shards : 1) == o->shard &&
                     (b->pairs[i].written == 0 ||
                      (!b->pairs[i].error && !starts_still(b->pairs[i].query_path)));
    }
    int want = o->verbosity < VERBOSITY_NORMAL || !(o->batch || nq >= RUN_MANY) ? 0
               : o->progress                                                    ? 2
                                                                                : 1;
    gm_progress_start(&g_run, want, o->batch ? o->batch : ref, o->batch ? "pairs" : "queries",
                      total);
    return g_run.enabled;
}

void run_summary(void)
{
    gm_progress_clear(&g_run);
    fprintf(stderr, PROG ": %" PRId64 " lines: %" PRId64 " matched, %" PRId64 " none, %" PRId64
            " error%s, %.1f s\n", g_tally.match + g_tally.none + g_tally.error, g_tally.match,
            g_tally.none, g_tally.error, g_tally.error == 1 ? "" : "s", since_main() / 1e3);
}
