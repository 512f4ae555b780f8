/* reference.c: the reference side of the pipeline, prepared once and
 * reused for every query and frame.
 *
 *   per pyramid level (working size, and half of it): Sobel edges ->
 *   compaction -> points -> corners -> bases (compacting table: the two-way
 *   basis index) -> (u, v, dir) items -> multi-value table; at level 0 also
 *   the edge-direction map for verification.  On the GPU (a CUDA build,
 *   --device auto or cuda) the tables and the map live on the device.
 *
 * Also the per-image stages shared with the query side (gm_side_build) and
 * the default parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/matcher.h"
#include "pipeline/selfmap.h"
#include "stages/resample.h"
#include "stages/sobel.h"
#include "stages/compact.h"
#include "stages/points.h"
#include "stages/corners.h"
#include "stages/bases.h"
#include "stages/affine.h"
#include "stages/verify.h"

gm_params gm_params_default(void)
{
    gm_params p;
    memset(&p, 0, sizeof p);
    p.seed = 1;
    p.threads = 0;
    p.device = GM_DEVICE_AUTO;
    p.model = GM_MODEL_AUTO;
    p.min_confidence = GM_DEFAULT_MIN_CONFIDENCE;
    p.max_pixels = GM_DEFAULT_MAX_PIXELS;
    p.max_side = 1024;
    p.ref_points = 600;
    p.query_points = 500;
    p.basis_points = 400;
    p.ref_basis_prob = 0.2;
    p.query_bases = 400;
    p.top_k = 32;
    p.max_uncertainty = GM_DEFAULT_MAX_UNCERTAINTY;
    return p;
}

void gm_side_free(side *s)
{
    free(s->work);
    free(s->all.p);
    free(s->cloud.p);
    free(s->corners.p);
    memset(s, 0, sizeof *s);
}

/* extra: 1 for pyramid level 0, 2 for level 1 (half the working size). */
gm_status gm_side_build(const gm_backend_ops *be, void *lane, const gm_params *p, gm_view img,
                        int extra, uint32_t cloud_target, uint32_t corner_target, side *s,
                        char *err, size_t errlen)
{
    return gm_side_build_f(be, lane, img, gm_downscale_factor(img.width, img.height, p->max_side) * extra,
                           200000, cloud_target, corner_target, s, err, errlen);
}

gm_status gm_side_build_f(const gm_backend_ops *be, void *lane, gm_view img, int f,
                          int64_t max_edges_cap, uint32_t cloud_target, uint32_t corner_target,
                          side *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (!img.data || img.width <= 0 || img.height <= 0) {
        snprintf(err, errlen, "empty image");
        return GM_ERR_EMPTY;
    }
    s->f = f;
    if (img.width / s->f < 1 || img.height / s->f < 1) {
        snprintf(err, errlen, "image too small for this level");
        return GM_ERR_EMPTY;
    }
    s->view = img;
    if (s->f > 1) {
        s->w = img.width / s->f;
        s->h = img.height / s->f;
        s->work = malloc((size_t)s->w * s->h);
        if (!s->work)
            goto nomem;
        gm_downscale_cpu(img, s->f, s->work);
        s->view = (gm_view){s->work, s->w, s->h, s->w};
    }
    s->w = s->view.width;
    s->h = s->view.height;
    size_t area = (size_t)s->w * s->h;
    int max_edges = (int)((int64_t)(area / 8) > max_edges_cap ? max_edges_cap : (int64_t)(area / 8));
    /* edges, points and corners on the backend (the per-pixel arrays freed
     * there: about 16 bytes a pixel, 380 MB for a 24 MP reference's own
     * level); the spread on the host */
    gm_status st = be->side(lane, s->view, max_edges, corner_target, &s->all, &s->corners);
    if (st != GM_OK)
        goto fail;
    if ((st = gm_points_spread_cpu(&s->all, s->w, s->h, cloud_target, &s->cloud)) != GM_OK)
        goto fail;
    return GM_OK;
nomem:
    st = GM_ERR_NOMEM;
fail:
    snprintf(err, errlen, "%s", gm_status_str(st));
    gm_side_free(s);
    return st;
}

static void level_free(const gm_backend_ops *be, ref_level *l)
{
    free(l->corners.p);
    gm_compact_free(&l->bases);
    gm_multi_free(&l->table);
    free(l->share);
    gm_edge_map_free(&l->map);
    free(l->tris.t);
    gm_multi_free(&l->ttable);
    free(l->tshare);
    if (l->dev)
        be->level_free(l->dev);
    memset(l, 0, sizeof *l);
}

/* The triangles of a level and their affine-invariant table (host). */
static gm_status level_build_tris(const gm_params *p, const side *s, ref_level *l, float diag0)
{
    l->tlmin = fmaxf(16.0f, 0.03f * diag0);
    l->tlmax = GM_FINE_LMAX_REL * diag0;
    uint32_t *keys = NULL, *vals = NULL, n = 0;
    gm_status st = gm_tris_select_cpu(&s->corners, l->tlmin, l->tlmax, GM_TRI_MIN_SIN, GM_TRI_PROB,
                                      GM_DRAW_KEY ^ GM_SALT_TRIS ^ (uint64_t)l->f << 48, &l->tris);
    if (st == GM_OK)
        st = gm_tri_items_cpu(&s->corners, &l->tris, &s->cloud, &keys, &vals, &n);
    if (st == GM_OK)
        st = gm_multi_build_cpu(&l->ttable, keys, vals, n, GM_AFF_KEYS, p->seed ^ GM_SALT_TRI_TABLE,
                                NULL);
    if (st == GM_OK && !(l->tshare = gm_item_shares(vals, n, l->tris.n)))
        st = GM_ERR_NOMEM;
    free(keys);
    free(vals);
    return st;
}

/* Bases and tables of one reference level from its side. */
/* diag0: level 0's diagonal (the fine levels' and the triangles' lengths);
 * tris: also the triangles' table, when the model is not a similarity. */
static gm_status level_build(const gm_backend_ops *be, void *lane, const gm_params *p, side *s,
                             ref_level *l, float diag0, int tris)
{
    l->f = s->f;
    l->w = s->w;
    l->h = s->h;
    float diag = sqrtf((float)s->w * s->w + (float)s->h * s->h);
    l->lmin = fmaxf(16.0f, 0.03f * diag);
    l->lmax = 0.25f * diag;
    if (l->fine) { /* local bases, level 0's lengths in this level's pixels */
        l->lmin = fmaxf(16.0f, 0.03f * diag0);
        l->lmax = GM_FINE_LMAX_REL * diag0;
    }
    gm_bases b = {0};
    gm_status st;
    double prob = p->ref_basis_prob * (l->fine ? GM_FINE_BASIS_SHARE : 1.0);
    if ((st = (l->fine ? gm_bases_select_local_cpu : gm_bases_select_cpu)(
             &s->corners, l->lmin, l->lmax, prob, GM_DRAW_KEY ^ (uint64_t)l->f << 56, &b)) != GM_OK)
        goto done;
    /* at most (2 GM_UV_HALF)^2 x 16 distinct keys exist: size the table by that bound */
    const uint32_t key_bound = 2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS;
    /* the two-way basis index (paper 4.3) and the multi-value table */
    if ((st = be->level_build(lane, &s->corners, &b, &s->cloud, l->fine, key_bound,
                              p->seed ^ GM_SALT_REF_INDEX, p->seed ^ GM_SALT_REF_TABLE, &l->bases,
                              &l->table, &l->share, &l->dev)) != GM_OK)
        goto done;
    if (p->model != GM_MODEL_SIMILARITY && tris && (st = level_build_tris(p, s, l, diag0)) != GM_OK)
        goto done;
    l->corners = s->corners;
    s->corners.p = NULL;
    l->ok = 1;
done:
    free(b.key);
    return st;
}

/* The reference's levels and edge map, on the device of r (set before). */
static gm_status ref_build(gm_ref *r, gm_view img)
{
    const gm_params *p = &r->p;
    const gm_backend_ops *be = r->be;
    void *lane = be->acquire(r->dev); /* the lane that builds */
    if (!lane)
        return GM_ERR_DEVICE;
    gm_status st = GM_OK;
    float diag0 = 0; /* level 0's diagonal, its pixels */
    for (int lv = 0; lv < GM_LEVELS && st == GM_OK; lv++) {
        side s;
        char err[128];
        st = gm_side_build(be, lane, p, img, 1 << lv, (uint32_t)p->ref_points,
                           (uint32_t)p->basis_points, &s, err, sizeof err);
        if (st != GM_OK) {
            if (lv > 0 && st != GM_ERR_DEVICE && st != GM_ERR_NOMEM)
                st = GM_OK; /* a reference too small for the coarse level still works */
            break;
        }
        if (lv > 0 && (s.w < GM_MIN_LEVEL_SIDE || s.h < GM_MIN_LEVEL_SIDE)) {
            gm_side_free(&s);
            break;
        }
        if (lv == 0)
            st = gm_edge_map_build_cpu(&s.all, s.w, s.h, GM_VERIFY_RADIUS, &r->map);
        /* the device's own map is its reference's: a reference on a
         * borrowed device (gm_ref_prepare_on) keeps its map on level 0 */
        if (lv == 0 && st == GM_OK && !r->borrowed)
            st = be->map(r->dev, lane, NULL, &r->map);
        if (lv == 0) /* the fine levels' and the triangles' lengths derive from it */
            diag0 = sqrtf((float)s.w * s.w + (float)s.h * s.h);
        if (st == GM_OK)
            st = level_build(be, lane, p, &s, &r->lv[lv], diag0, lv == 0);
        /* where level 0 repeats itself (selfmap.h); not for the reverse
         * search's reference, a query prepared for one search */
        if (lv == 0 && st == GM_OK && !r->borrowed) {
            st = gm_selfmaps_find(be, lane, &r->lv[0], &s, (gm_map_at){&r->map, NULL}, r->self,
                                  &r->n_self);
        }
        if (lv == 0 && st == GM_OK && r->borrowed)
            st = be->map(r->dev, lane, r->lv[0].dev, &r->map);
        gm_side_free(&s);
    }
    /* fine levels, coarse to fine: factors f0/2, f0/4, ..., 1.  Their
     * edges and corners are found on the host (a lane's buffers would grow
     * to the finest level's 24 megapixels and stay so); their tables and
     * edge maps go to the device like level 0's, so that their votes and
     * verification run there.  The host keeps each map for the stages that
     * stay host stages on both devices (triangles, growth, the spread and
     * the finest refinement). */
    const ref_level *l0 = &r->lv[0];
    int fprev = l0->f;
    for (int k = 0; k < GM_FINE_LEVELS && st == GM_OK && l0->ok && fprev > 1; k++) {
        int f = (fprev + 1) / 2; /* 6, 3, 2, 1: steps of 2 at most, so the
                                    pairings' scale ranges meet */
        if (f >= fprev)
            break;
        fprev = f;
        double grow = ((double)(img.width / f) * (img.height / f)) / ((double)l0->w * l0->h);
        side s;
        char err[128];
        st = gm_side_build_f(&gm_backend_cpu, NULL, img, f, (int64_t)(200000 * grow), (uint32_t)(p->ref_points * grow),
                             (uint32_t)fmin(p->basis_points * grow, 60000.0), &s, err, sizeof err);
        if (st != GM_OK)
            break;
        ref_level *l = &r->lv[GM_LEVELS + k];
        l->fine = 1;
        st = gm_edge_map_build_cpu(&s.all, s.w, s.h, GM_VERIFY_RADIUS, &l->map);
        if (st == GM_OK)
            st = level_build(be, lane, p, &s, l, diag0, k == 0);
        if (st == GM_OK)
            st = be->map(r->dev, lane, l->dev, &l->map);
        gm_side_free(&s);
    }
    be->release(r->dev, lane);
    return st;
}

/* Frees what ref_build made (the device context stays). */
static void ref_clear(gm_ref *r)
{
    gm_edge_map_free(&r->map);
    for (int lv = 0; lv < GM_ALL_LEVELS; lv++)
        level_free(r->be, &r->lv[lv]);
}

/* The GPUs that gpus names (gmatch.h): NULL or "" -> 0; "all" -> 0 to
 * count - 1; "1" or "0,2" -> those.  count < 0: the syntax only (no GPU
 * asked).  Their number, or -1 with the cause in why. */
static int gpu_list(const char *gpus, int count, int *out, char *why, size_t len)
{
    if (!gpus || !*gpus) {
        out[0] = 0;
        return 1;
    }
    if (strcmp(gpus, "all") == 0) {
        int n = count < 0 ? 1 : count < GM_MAX_GPUS ? count : GM_MAX_GPUS;
        for (int i = 0; i < n; i++)
            out[i] = i;
        return n > 0 ? n : (snprintf(why, len, "no CUDA device"), -1);
    }
    int n = 0;
    for (const char *s = gpus;;) {
        char *end;
        long v = (*s >= '0' && *s <= '9') ? strtol(s, &end, 10) : -1;
        if (v < 0 || v > 1023 || (*end != ',' && *end != '\0') || n == GM_MAX_GPUS) {
            snprintf(why, len, "invalid parameter: gpus '%.60s' is not \"all\" or up to %d GPU "
                     "numbers like \"0,2\"", gpus, GM_MAX_GPUS);
            return -1;
        }
        if (count >= 0 && v >= count) {
            snprintf(why, len, "no CUDA device %ld (%d visible)", v, count);
            return -1;
        }
        out[n++] = (int)v;
        if (*end == '\0')
            return n;
        s = end + 1;
    }
}

/* The parameters' ranges (gmatch.h); NULL when every one is in range, else
 * what is wrong. */
static const char *params_check(const gm_params *p, char *buf, size_t len)
{
#define RANGE(field, lo, hi)                                                              \
    if (!(p->field >= (lo) && p->field <= (hi))) {                                        \
        snprintf(buf, len, "invalid parameter: " #field " %g is outside %g..%g",          \
                 (double)p->field, (double)(lo), (double)(hi));                           \
        return buf;                                                                       \
    }
    RANGE(threads, 0, GM_MAX_THREADS)
    RANGE(device, GM_DEVICE_AUTO, GM_DEVICE_CUDA)
    RANGE(model, GM_MODEL_SIMILARITY, GM_MODEL_AUTO)
    RANGE(min_confidence, 0.0, 1.0)
    RANGE(max_side, GM_MIN_MAX_SIDE, GM_MAX_MAX_SIDE)
    RANGE(ref_points, GM_MIN_POINTS, GM_MAX_POINTS)
    RANGE(query_points, GM_MIN_POINTS, GM_MAX_POINTS)
    RANGE(basis_points, GM_MIN_BASIS_POINTS, GM_MAX_BASIS_POINTS)
    RANGE(ref_basis_prob, 1e-6, 1.0)
    RANGE(query_bases, 1, GM_MAX_QUERY_BASES)
    RANGE(top_k, 1, GM_MAX_TOP_K)
    RANGE(direction, GM_DIRECTION_AUTO, GM_DIRECTION_REVERSE)
    RANGE(max_uncertainty, 0.0, INFINITY)
#undef RANGE
    int list[GM_MAX_GPUS];
    if (p->gpus && gpu_list(p->gpus, -1, list, buf, len) < 0)
        return buf;
    return NULL;
}

/* ref_build, and on failure its message (unless one is set) and what it
 * made freed; the device stays open. */
static gm_status ref_build_or_clear(gm_ref *r, gm_view img)
{
    gm_status st = ref_build(r, img);
    if (st != GM_OK) {
        const char *dev_err = r->be->error();
        if (!r->err[0])
            snprintf(r->err, sizeof r->err, "%s%s%.200s", gm_status_str(st),
                     *dev_err ? ": " : "", dev_err);
        ref_clear(r);
    }
    return st;
}

/* The reference on backend be (opened here), its message on failure. */
static gm_status ref_on(gm_ref *r, const gm_backend_ops *be, gm_view img)
{
    char why[256] = "";
    r->be = be;
    gm_status st = be->open(&r->dev, r->gpu, why, sizeof why);
    if (st != GM_OK) {
        snprintf(r->err, sizeof r->err, "no usable %s device: %.200s",
                 be->device == GM_DEVICE_CUDA ? "CUDA" : be->name, why);
        return st;
    }
    be->describe(r->dev, r->device, sizeof r->device);
    st = ref_build_or_clear(r, img);
    if (st != GM_OK) {
        be->close(r->dev);
        r->dev = NULL;
    }
    return st;
}

/* While on a GPU the reference keeps a copy of its image, for the CPU
 * twin a device failure calls for (gm_ref_failover). */
static gm_status keep_image(gm_ref *r, gm_view img)
{
    size_t row = (size_t)img.width;
    r->keep.data = malloc(row * (size_t)img.height);
    if (!r->keep.data)
        return GM_ERR_NOMEM;
    for (int y = 0; y < img.height; y++)
        memcpy(r->keep.data + (size_t)y * row, img.data + (ptrdiff_t)y * img.stride, row);
    r->keep.width = img.width;
    r->keep.height = img.height;
    r->keep.stride = (ptrdiff_t)row;
    return GM_OK;
}

const gm_ref *gm_ref_current(const gm_ref *r)
{
    return __atomic_load_n(&r->failed, __ATOMIC_ACQUIRE) ? r->cpu : r;
}

const gm_ref *gm_ref_failover(const gm_ref *rc, const char *dev_err)
{
    gm_ref *r = (gm_ref *)rc; /* the twin is made once, under the lock */
    if (!r->keep.data)
        return NULL;
    pthread_mutex_lock(&r->fo_lock);
    if (!r->failed) {
        gm_params p = r->p;
        p.device = GM_DEVICE_CPU;
        gm_ref *cpu = NULL;
        if (gm_ref_prepare(&p, gm_image_view(&r->keep), &cpu) == GM_OK) {
            snprintf(r->fo_why, sizeof r->fo_why, "the GPU failed (%.200s): matching on the CPU",
                     dev_err && *dev_err ? dev_err : "device error");
            r->cpu = cpu;
            __atomic_store_n(&r->failed, 1, __ATOMIC_RELEASE);
        } else {
            gm_ref_free(cpu);
        }
    }
    pthread_mutex_unlock(&r->fo_lock);
    return __atomic_load_n(&r->failed, __ATOMIC_ACQUIRE) ? r->cpu : NULL;
}

/* The reference's copies on the GPUs list[0..n) (gm_params.gpus), each a
 * reference of its own prepared on its GPU, on a thread each while the
 * first GPU's is prepared (replicas_start, then replicas_join): on two
 * H200s the copies cost the preparation's time once, not once a GPU. */
typedef struct {
    gm_params q;
    char one[16];
    gm_view img;
    gm_ref *c;
    gm_status st;
    pthread_t th;
    int started;
} replica_job;

static void *replica_main(void *arg)
{
    replica_job *j = arg;
    j->st = gm_ref_prepare(&j->q, j->img, &j->c);
    return NULL;
}

static replica_job *replicas_start(const gm_params *p, gm_view img, const int *list, int n)
{
    replica_job *jobs = calloc((size_t)n, sizeof *jobs);
    for (int k = 0; jobs && k < n; k++) {
        replica_job *j = &jobs[k];
        j->q = *p;
        snprintf(j->one, sizeof j->one, "%d", list[k]);
        j->q.gpus = j->one, j->q.device = GM_DEVICE_CUDA;
        j->img = img;
        j->started = pthread_create(&j->th, NULL, replica_main, j) == 0;
        if (!j->started) /* no thread: prepared here, one after the other */
            replica_main(j);
    }
    return jobs;
}

/* Waits for the copies; keeps them when use (the first GPU's is ready on
 * its GPU), else frees them.  GM_OK, or the first copy's failure (with
 * r->err saying which GPU). */
static gm_status replicas_join(gm_ref *r, replica_job *jobs, int n, int use)
{
    gm_status st = jobs ? GM_OK : GM_ERR_NOMEM;
    for (int k = 0; jobs && k < n; k++)
        if (jobs[k].started)
            pthread_join(jobs[k].th, NULL);
    if (st == GM_OK && use) {
        r->rep = calloc((size_t)n, sizeof *r->rep);
        r->load = calloc((size_t)n + 1, sizeof *r->load);
        r->served = calloc((size_t)n + 1, sizeof *r->served);
        if (!r->rep || !r->load || !r->served)
            st = GM_ERR_NOMEM;
    }
    for (int k = 0; jobs && k < n; k++) {
        replica_job *j = &jobs[k];
        if (st == GM_OK && use && j->st == GM_OK && j->c->be == &gm_backend_cpu) {
            snprintf(r->err, sizeof r->err, "GPU %s: %.200s", j->one, j->c->fo_why);
            st = GM_ERR_DEVICE; /* the GPU failed while preparing */
        } else if (st == GM_OK && use && j->st != GM_OK) {
            snprintf(r->err, sizeof r->err, "GPU %s: %.200s", j->one, gm_ref_error(j->c));
            st = j->st;
        }
        if (st == GM_OK && use)
            r->rep[r->nrep++] = j->c;
        else
            gm_ref_free(j->c);
    }
    free(jobs);
    if (st != GM_OK) { /* none kept */
        for (int k = 0; k < r->nrep; k++)
            gm_ref_free(r->rep[k]);
        r->nrep = 0;
        return st;
    }
    size_t k = strlen(r->device);
    for (int i = 0; i < r->nrep && k < sizeof r->device; i++)
        k += (size_t)snprintf(r->device + k, sizeof r->device - k, "%s GPU %d",
                              i == 0 ? "; queries spread over it and" : ",", r->rep[i]->gpu);
    return GM_OK;
}

const gm_ref *gm_ref_pick(const gm_ref *r, int *slot)
{
    *slot = -1;
    if (r->nrep == 0)
        return r;
    int best = 0, low = __atomic_load_n(&r->load[0], __ATOMIC_RELAXED);
    for (int k = 1; k <= r->nrep; k++) {
        int l = __atomic_load_n(&r->load[k], __ATOMIC_RELAXED);
        if (l < low)
            best = k, low = l;
    }
    __atomic_fetch_add(&r->load[best], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->served[best], 1, __ATOMIC_RELAXED);
    *slot = best;
    return best == 0 ? r : r->rep[best - 1];
}

void gm_ref_unpick(const gm_ref *r, int slot)
{
    if (slot >= 0)
        __atomic_fetch_sub(&r->load[slot], 1, __ATOMIC_RELAXED);
}

static gm_status ref_prepare(const gm_params *p, gm_view img, gm_ref *r)
{
    double t0 = gm_now_ms();
    r->p = *p;
    r->p.gpus = NULL; /* read here only (gmatch.h): the caller's string need not outlive
                         this call, and the CPU's twin (gm_ref_failover) needs none */
    if (r->p.max_uncertainty == 0)
        r->p.max_uncertainty = GM_DEFAULT_MAX_UNCERTAINTY;
    if (params_check(p, r->err, sizeof r->err))
        return GM_ERR_INVALID;
    const gm_backend_ops *gpu = gm_backend_find(GM_DEVICE_CUDA);
    gm_status st;
    if (p->device == GM_DEVICE_CPU) {
        st = ref_on(r, &gm_backend_cpu, img);
    } else if (!gpu) {
        if (p->device == GM_DEVICE_CUDA) {
            snprintf(r->err, sizeof r->err, "no usable CUDA device: this build has no CUDA backend");
            return GM_ERR_DEVICE;
        }
        st = ref_on(r, &gm_backend_cpu, img);
        snprintf(r->device, sizeof r->device, "cpu, %d threads (auto: built without CUDA)",
                 gm_threads());
    } else {
        int list[GM_MAX_GPUS], n = 1;
        char bad[200];
        list[0] = 0;
        if (p->gpus && *p->gpus) {
            int count = gpu->count();
            n = count > 0 ? gpu_list(p->gpus, count, list, bad, sizeof bad) : 1;
            if (n < 0 && p->device == GM_DEVICE_CUDA) {
                snprintf(r->err, sizeof r->err, "no usable CUDA device: %s", bad);
                return GM_ERR_DEVICE;
            }
            if (n < 0) /* auto: the CPU, below (device 0's failure names why) */
                list[0] = count, n = 1;
        }
        r->gpu = list[0];
        replica_job *reps = n > 1 ? replicas_start(&r->p, img, list + 1, n - 1) : NULL;
        st = ref_on(r, gpu, img);
        /* under auto a device that cannot be opened, or fails or runs out of
         * memory while preparing, hands over to the CPU; under cuda a device
         * that opened and then failed does too (gm_ref_fallback says so) */
        int opened = r->device[0] != '\0' || st == GM_ERR_NOMEM; /* a device, failing */
        if ((p->device == GM_DEVICE_AUTO || opened) && (st == GM_ERR_DEVICE || st == GM_ERR_NOMEM)) {
            char why[sizeof r->err];
            snprintf(why, sizeof why, "%s", r->err);
            r->err[0] = '\0';
            st = ref_on(r, &gm_backend_cpu, img);
            snprintf(r->device, sizeof r->device, "cpu, %d threads (%s: %.200s)", gm_threads(),
                     p->device == GM_DEVICE_AUTO ? "auto" : "cuda failed", why);
            if (p->device == GM_DEVICE_CUDA && st == GM_OK)
                snprintf(r->fo_why, sizeof r->fo_why,
                         "the GPU failed while preparing the reference (%.200s): matching on the CPU",
                         why);
        }
        if (n > 1) {
            gm_status rs = replicas_join(r, reps, n - 1, st == GM_OK && r->be != &gm_backend_cpu);
            if (st == GM_OK && r->be != &gm_backend_cpu)
                st = rs;
        }
    }
    /* the image stays: the CPU's twin after a device failure
     * (gm_ref_failover) and the reverse search (direction.c) read it */
    if (st == GM_OK)
        st = keep_image(r, img);
    if (st == GM_OK)
        r->prep_ms = gm_now_ms() - t0;
    return st;
}

/* A new handle with its lock; NULL when out of memory. */
static gm_ref *ref_new(void)
{
    gm_ref *r = calloc(1, sizeof *r);
    if (r)
        pthread_mutex_init(&r->fo_lock, NULL);
    return r;
}

gm_status gm_ref_prepare_on(const gm_ref *host, gm_view img, gm_ref **out)
{
    gm_ref *r = *out = ref_new();
    if (!r)
        return GM_ERR_NOMEM;
    double t0 = gm_now_ms();
    r->p = host->p;
    r->be = host->be;
    r->dev = host->dev;
    r->gpu = host->gpu;
    r->borrowed = 1;
    snprintf(r->device, sizeof r->device, "%s", host->device);
    gm_status st = ref_build_or_clear(r, img);
    if (st != GM_OK)
        r->be = NULL; /* nothing of it on the device: gm_ref_free leaves the device alone */
    r->prep_ms = gm_now_ms() - t0;
    r->status = st;
    return st;
}

void gm_ref_free(gm_ref *r)
{
    if (!r)
        return;
    if (r->be) {
        ref_clear(r);
        if (!r->borrowed)
            r->be->close(r->dev);
    }
    gm_ref_free(r->cpu);
    for (int k = 0; k < r->nrep; k++)
        gm_ref_free(r->rep[k]);
    free(r->rep);
    free(r->load);
    free(r->served);
    gm_image_free(&r->keep);
    pthread_mutex_destroy(&r->fo_lock);
    free(r);
}

const char *gm_ref_device(const gm_ref *r) { return r ? gm_ref_current(r)->device : ""; }
const char *gm_ref_error(const gm_ref *r) { return r ? r->err : "no reference"; }
gm_device gm_ref_backend(const gm_ref *r)
{
    return r && r->status == GM_OK ? gm_ref_current(r)->be->device : GM_DEVICE_AUTO;
}
const char *gm_ref_fallback(const gm_ref *r)
{
    if (!r)
        return "";
    /* on the CPU from the start ("" unless the GPU failed while preparing),
     * or the twin's reason once it answers (written before failed is set) */
    if (r->be == &gm_backend_cpu || __atomic_load_n(&r->failed, __ATOMIC_ACQUIRE))
        return r->fo_why;
    for (int k = 0; k < r->nrep; k++) /* a copy on another GPU that failed */
        if (*gm_ref_fallback(r->rep[k]))
            return gm_ref_fallback(r->rep[k]);
    return "";
}
int gm_set_thread_budget(int n)
{
    int old = gm_thread_budget;
    gm_thread_budget = n > 0 ? (n > GM_MAX_THREADS ? GM_MAX_THREADS : n) : 0;
    return old;
}
int gm_ref_gpus(const gm_ref *r)
{
    return r && r->status == GM_OK && r->be && r->be->device == GM_DEVICE_CUDA ? 1 + r->nrep : 0;
}
int gm_backend_available(gm_device d) { return gm_backend_find(d) != NULL; }
double gm_ref_time_ms(const gm_ref *r) { return r ? r->prep_ms : 0.0; }

gm_status gm_ref_prepare(const gm_params *p, gm_view img, gm_ref **out)
{
    *out = NULL;
    if (!p)
        return GM_ERR_INVALID;
    gm_ref *r = *out = ref_new(); /* on failure too: its message, then gm_ref_free */
    if (!r)
        return GM_ERR_NOMEM;
    int budget = gm_threads_enter(p->threads);
    gm_status st = ref_prepare(p, img, r);
    gm_threads_leave(budget);
    r->status = st;
    return st;
}
