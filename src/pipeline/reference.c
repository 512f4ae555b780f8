/* reference.c: the reference side of the pipeline, prepared once and
 * reused for every query and frame.
 *
 *   per pyramid level (working size, and half of it): Sobel edges ->
 *   compaction -> points -> corners -> bases (compacting table: the two-way
 *   basis index) -> (u, v, dir) items -> multi-value table; at level 0 also
 *   the edge-direction map for verification.  Every stage runs on the
 *   reference's backend (backend.h), which placement.c chooses: on a
 *   device, the tables and the map live there.
 *
 * Also the per-image stages shared with the query side (gm_side_build) and
 * the default parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/matcher.h"
#include "pipeline/placement.h"
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
    if (l->tdev)
        be->level_free(l->tdev);
    memset(l, 0, sizeof *l);
}

/* The triangles of a level (drawn on the host) and their affine-invariant
 * table (the backend's: tri_level). */
static gm_status level_build_tris(const gm_backend_ops *be, void *lane, const gm_params *p,
                                  const side *s, ref_level *l, float diag0, gm_prep_timing *t)
{
    l->tlmin = fmaxf(16.0f, 0.03f * diag0);
    l->tlmax = GM_FINE_LMAX_REL * diag0;
    double t0 = gm_now_ms();
    gm_status st = gm_tris_select_cpu(&s->corners, l->tlmin, l->tlmax, GM_TRI_MIN_SIN, GM_TRI_PROB,
                                      GM_DRAW_KEY ^ GM_SALT_TRIS ^ (uint64_t)l->f << 48, &l->tris);
    double t1 = gm_now_ms();
    if (st == GM_OK)
        st = be->tri_level(lane, &s->corners, &l->tris, &s->cloud, p->seed ^ GM_SALT_TRI_TABLE,
                           &l->ttable, &l->tshare, &l->tdev);
    t->tri_draw += t1 - t0;
    t->tri_tables += gm_now_ms() - t1;
    return st;
}

/* Bases and tables of one reference level from its side. */
/* diag0: level 0's diagonal (the fine levels' and the triangles' lengths);
 * tris: also the triangles' table, when the model is not a similarity. */
static gm_status level_build(const gm_backend_ops *be, void *lane, const gm_params *p, side *s,
                             ref_level *l, float diag0, int tris, gm_prep_timing *t)
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
    double t0 = gm_now_ms();
    if ((st = (l->fine ? gm_bases_select_local_cpu : gm_bases_select_cpu)(
             &s->corners, l->lmin, l->lmax, prob, GM_DRAW_KEY ^ (uint64_t)l->f << 56, &b)) != GM_OK)
        goto done;
    /* at most (2 GM_UV_HALF)^2 x 16 distinct keys exist: size the table by that bound */
    const uint32_t key_bound = 2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS;
    double t1 = gm_now_ms();
    t->bases += t1 - t0;
    /* the two-way basis index (paper 4.3) and the multi-value table */
    st = be->level_build(lane, &s->corners, &b, &s->cloud, l->fine, key_bound,
                         p->seed ^ GM_SALT_REF_INDEX, p->seed ^ GM_SALT_REF_TABLE, &l->bases,
                         &l->table, &l->share, &l->dev);
    t->tables += gm_now_ms() - t1;
    if (st != GM_OK)
        goto done;
    if (p->model != GM_MODEL_SIMILARITY && tris &&
        (st = level_build_tris(be, lane, p, s, l, diag0, t)) != GM_OK)
        goto done;
    l->corners = s->corners;
    s->corners.p = NULL;
    l->ok = 1;
done:
    free(b.key);
    return st;
}

/* ms since *t0 added to *acc; *t0 moved to now. */
static void lap(double *acc, double *t0)
{
    double t = gm_now_ms();
    *acc += t - *t0;
    *t0 = t;
}

/* The reference's levels and edge map, on the device of r (set before);
 * where the time went into r->prep. */
static gm_status ref_build(gm_ref *r, gm_view img)
{
    const gm_params *p = &r->ix.p;
    const gm_backend_ops *be = r->ix.be;
    gm_prep_timing *t = &r->prep;
    double t0 = gm_now_ms(), tb = t0;
    memset(t, 0, sizeof *t);
    void *lane = be->acquire(r->ix.dev); /* the lane that builds */
    if (!lane)
        return GM_ERR_DEVICE;
    gm_status st = GM_OK;
    float diag0 = 0; /* level 0's diagonal, its pixels */
    for (int lv = 0; lv < GM_LEVELS && st == GM_OK; lv++) {
        side s;
        char err[128];
        st = gm_side_build(be, lane, p, img, 1 << lv, (uint32_t)p->ref_points,
                           (uint32_t)p->basis_points, &s, err, sizeof err);
        lap(&t->sides, &t0);
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
            st = gm_edge_map_points(&s.all, s.w, s.h, GM_VERIFY_RADIUS, &r->ix.map);
        lap(&t->maps, &t0);
        /* the device's own map is its reference's: a reference on a
         * borrowed device (gm_ref_prepare_on) keeps its map on level 0 */
        if (lv == 0 && st == GM_OK && !r->ix.borrowed)
            st = be->map(r->ix.dev, lane, NULL, &r->ix.map);
        lap(&t->map_pixels, &t0);
        if (lv == 0) /* the fine levels' and the triangles' lengths derive from it */
            diag0 = sqrtf((float)s.w * s.w + (float)s.h * s.h);
        if (st == GM_OK)
            st = level_build(be, lane, p, &s, &r->ix.lv[lv], diag0, lv == 0, t);
        t0 = gm_now_ms();
        /* where level 0 repeats itself (selfmap.h); not for the reverse
         * search's reference, a query prepared for one search */
        if (lv == 0 && st == GM_OK && !r->ix.borrowed) {
            st = gm_selfmaps_find(be, lane, &r->ix.lv[0], &s, (gm_map_at){&r->ix.map, NULL}, r->ix.self,
                                  &r->ix.n_self);
        }
        lap(&t->selfmaps, &t0);
        if (lv == 0 && st == GM_OK && r->ix.borrowed)
            st = be->map(r->ix.dev, lane, r->ix.lv[0].dev, &r->ix.map);
        gm_side_free(&s);
        lap(&t->map_pixels, &t0);
    }
    /* fine levels, coarse to fine: factors f0/2, f0/4, ..., 1.  Their
     * edges and corners are found on the reference's device when the level
     * fits a lane's buffers of GM_FINE_DEVICE_MAX_PX (a square of its
     * longer side: a 1080p frame's own level, which every cut-away frame's
     * reverse search prepares), else on the host (a lane's buffers would
     * grow to a photograph's 24 megapixels and stay so); their tables and
     * edge maps go to the device like level 0's, so that their votes and
     * verification run there.  The host keeps each map for the stages that
     * stay host stages on both devices (triangles, growth, the spread and
     * the finest refinement). */
    const ref_level *l0 = &r->ix.lv[0];
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
        const int64_t longer = img.width / f > img.height / f ? img.width / f : img.height / f;
        const int on_dev = longer * longer <= GM_FINE_DEVICE_MAX_PX;
        t0 = gm_now_ms();
        st = gm_side_build_f(on_dev ? be : &gm_backend_cpu, on_dev ? lane : NULL, img, f,
                             (int64_t)(200000 * grow), (uint32_t)(p->ref_points * grow),
                             (uint32_t)fmin(p->basis_points * grow, 60000.0), &s, err, sizeof err);
        lap(&t->sides, &t0);
        if (st != GM_OK)
            break;
        ref_level *l = &r->ix.lv[GM_LEVELS + k];
        l->fine = 1;
        st = gm_edge_map_points(&s.all, s.w, s.h, GM_VERIFY_RADIUS, &l->map);
        lap(&t->maps, &t0);
        if (st == GM_OK)
            st = level_build(be, lane, p, &s, l, diag0, k == 0, t);
        t0 = gm_now_ms();
        if (st == GM_OK)
            st = be->map(r->ix.dev, lane, l->dev, &l->map);
        gm_side_free(&s);
        lap(&t->map_pixels, &t0);
    }
    be->release(r->ix.dev, lane);
    t->total = gm_now_ms() - tb;
    return st;
}

/* Frees what ref_build made (the device context stays). */
static void ref_clear(gm_ref *r)
{
    gm_edge_map_free(&r->ix.map);
    for (int lv = 0; lv < GM_ALL_LEVELS; lv++)
        level_free(r->ix.be, &r->ix.lv[lv]);
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
    return gm_place_check(p, buf, len); /* the device and its list */
}

gm_status gm_ref_build(gm_ref *r, gm_view img)
{
    gm_status st = ref_build(r, img);
    if (st != GM_OK) {
        const char *dev_err = r->ix.be->error();
        if (!r->err[0])
            snprintf(r->err, sizeof r->err, "%s%s%.200s", gm_status_str(st),
                     *dev_err ? ": " : "", dev_err);
        ref_clear(r);
    }
    return st;
}

/* The reference keeps a copy of its image: for the CPU twin a device
 * failure calls for (gm_ref_failover) and the reverse search. */
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

static gm_status ref_prepare(const gm_params *p, gm_view img, gm_ref *r)
{
    double t0 = gm_now_ms();
    r->ix.p = *p;
    if (r->ix.p.max_uncertainty == 0)
        r->ix.p.max_uncertainty = GM_DEFAULT_MAX_UNCERTAINTY;
    if (params_check(p, r->err, sizeof r->err))
        return GM_ERR_INVALID;
    gm_status st = gm_place_prepare(r, p, img);
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
        gm_place_init(&r->pl);
    return r;
}

gm_status gm_ref_prepare_on(const gm_ref *host, gm_view img, gm_ref **out)
{
    gm_ref *r = *out = ref_new();
    if (!r)
        return GM_ERR_NOMEM;
    double t0 = gm_now_ms();
    r->ix.p = host->ix.p;
    r->ix.be = host->ix.be;
    r->ix.dev = host->ix.dev;
    r->pl.dev_index = host->pl.dev_index;
    r->ix.borrowed = 1;
    snprintf(r->device, sizeof r->device, "%s", host->device);
    gm_status st = gm_ref_build(r, img);
    if (st != GM_OK)
        r->ix.be = NULL; /* nothing of it on the device: gm_ref_free leaves the device alone */
    r->prep_ms = gm_now_ms() - t0;
    r->status = st;
    return st;
}

void gm_ref_free(gm_ref *r)
{
    if (!r)
        return;
    if (r->ix.be) {
        ref_clear(r);
        if (!r->ix.borrowed)
            r->ix.be->close(r->ix.dev);
    }
    gm_place_free(&r->pl);
    gm_image_free(&r->keep);
    free(r);
}

int gm_set_thread_budget(int n)
{
    int old = gm_thread_budget;
    gm_thread_budget = n > 0 ? (n > GM_MAX_THREADS ? GM_MAX_THREADS : n) : 0;
    return old;
}
const char *gm_ref_error(const gm_ref *r) { return r ? r->err : "no reference"; }
double gm_ref_time_ms(const gm_ref *r) { return r ? r->prep_ms : 0.0; }
void gm_ref_prep_timing(const gm_ref *r, gm_prep_timing *t)
{
    if (r && r->status == GM_OK)
        *t = r->prep;
    else
        memset(t, 0, sizeof *t);
}

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
