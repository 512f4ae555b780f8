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
#include "stages/resample.h"
#include "stages/sobel.h"
#include "stages/compact.h"
#include "stages/points.h"
#include "stages/corners.h"
#include "stages/bases.h"
#include "stages/affine.h"
#include "stages/verify.h"

static _Thread_local char g_device_error[320];
const char *gm_last_device_error(void) { return g_device_error; }

gm_params gm_params_default(void)
{
    gm_params p;
    memset(&p, 0, sizeof p);
    p.seed = 1;
    p.threads = 0;
    p.device = GM_DEVICE_AUTO;
    p.model = GM_MODEL_SIMILARITY;
    p.min_confidence = 0.3;
    p.max_pixels = GM_DEFAULT_MAX_PIXELS;
    p.max_side = 1024;
    p.ref_points = 600;
    p.query_points = 500;
    p.basis_points = 400;
    p.ref_basis_prob = 0.2;
    p.query_bases = 400;
    p.top_k = 32;
    return p;
}

void gm_side_free(side *s)
{
    free(s->work);
    gm_edges_free(&s->edges);
    free(s->idx);
    free(s->all.p);
    free(s->cloud.p);
    free(s->corners.p);
    memset(s, 0, sizeof *s);
}

/* extra: 1 for pyramid level 0, 2 for level 1 (half the working size). */
gm_status gm_side_build(void *gpu, const gm_params *p, gm_view img, int extra,
                        uint32_t cloud_target, uint32_t corner_target, side *s, char *err,
                        size_t errlen)
{
    return gm_side_build_f(gpu, img, gm_downscale_factor(img.width, img.height, p->max_side) * extra,
                           200000, cloud_target, corner_target, s, err, errlen);
}

gm_status gm_side_build_f(void *gpu, gm_view img, int f, int64_t max_edges_cap,
                          uint32_t cloud_target, uint32_t corner_target, side *s, char *err,
                          size_t errlen)
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
    gm_status st;
#ifdef GMATCH_WITH_CUDA
    if (gpu) {
        /* edges, points and corners on the device; the spread on the host */
        if ((st = gm_gpu_side(gpu, s->view, max_edges, corner_target, &s->all, &s->corners)) != GM_OK)
            goto fail;
        if ((st = gm_points_spread_cpu(&s->all, s->w, s->h, cloud_target, &s->cloud)) != GM_OK)
            goto fail;
        return GM_OK;
    }
#else
    (void)gpu;
#endif
    st = gm_edges_cpu(s->view, max_edges, &s->edges);
    if (st != GM_OK)
        goto fail;
    s->idx = malloc((area ? area : 1) * sizeof *s->idx);
    if (!s->idx)
        goto nomem;
    s->n_idx = gm_compact_flags_cpu(s->edges.edge, (uint32_t)area, s->idx);
    if ((st = gm_edge_points_cpu(&s->edges, s->idx, s->n_idx, &s->all)) != GM_OK)
        goto fail;
    if ((st = gm_points_spread_cpu(&s->all, s->w, s->h, cloud_target, &s->cloud)) != GM_OK)
        goto fail;
    if ((st = gm_corners_cpu(&s->edges, corner_target, &s->corners)) != GM_OK)
        goto fail;
    /* the per-pixel arrays are done with (about 16 bytes a pixel: 380 MB for
     * a 24 MP reference's own level), before the tables and the map of the
     * level are built */
    gm_edges_free(&s->edges);
    free(s->idx);
    s->idx = NULL;
    return GM_OK;
nomem:
    st = GM_ERR_NOMEM;
fail:
    snprintf(err, errlen, "%s", gm_status_str(st));
    gm_side_free(s);
    return st;
}

static void level_free(ref_level *l)
{
    free(l->corners.p);
    gm_compact_free(&l->bases);
    gm_multi_free(&l->table);
    free(l->share);
    gm_edge_map_free(&l->map);
    free(l->tris.t);
    gm_multi_free(&l->ttable);
    free(l->tshare);
#ifdef GMATCH_WITH_CUDA
    gm_gpu_level_free(l->gpu);
#endif
    memset(l, 0, sizeof *l);
}

/* Item shares: each basis's fraction of n items (vals: basis indices). */
static float *item_shares(const uint32_t *vals, uint32_t n, uint32_t nb)
{
    float *share = calloc(nb ? nb : 1, sizeof *share);
    if (!share)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        share[vals[i]] += 1.0f;
    for (uint32_t i = 0; i < nb; i++)
        share[i] /= (float)(n ? n : 1);
    return share;
}

/* The triangles of a level and their affine-invariant table (host). */
static gm_status level_build_tris(const gm_params *p, const side *s, ref_level *l, float diag0)
{
    l->tlmin = fmaxf(16.0f, 0.03f * diag0);
    l->tlmax = GM_FINE_LMAX_REL * diag0;
    uint32_t *keys = NULL, *vals = NULL, n = 0;
    gm_status st = gm_tris_select_cpu(&s->corners, l->tlmin, l->tlmax, GM_TRI_MIN_SIN, GM_TRI_PROB,
                                      p->seed ^ 0x7219ull ^ (uint64_t)l->f << 48, &l->tris);
    if (st == GM_OK)
        st = gm_tri_items_cpu(&s->corners, &l->tris, &s->cloud, &keys, &vals, &n);
    if (st == GM_OK)
        st = gm_multi_build_cpu(&l->ttable, keys, vals, n, GM_AFF_KEYS, p->seed ^ 0xAFF1, NULL);
    if (st == GM_OK && !(l->tshare = item_shares(vals, n, l->tris.n)))
        st = GM_ERR_NOMEM;
    free(keys);
    free(vals);
    return st;
}

/* Bases and tables of one reference level from its side. */
/* diag0: level 0's diagonal (the fine levels' and the triangles' lengths);
 * tris: also the triangles' table, when the model is not a similarity. */
static gm_status level_build(void *gpu, const gm_params *p, side *s, ref_level *l, float diag0,
                             int tris)
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
    uint32_t *keys = NULL, *vals = NULL, n_items = 0;
    gm_status st;
    double prob = p->ref_basis_prob * (l->fine ? GM_FINE_BASIS_SHARE : 1.0);
    if ((st = (l->fine ? gm_bases_select_local_cpu : gm_bases_select_cpu)(
             &s->corners, l->lmin, l->lmax, prob, p->seed ^ (uint64_t)l->f << 56, &b)) != GM_OK)
        goto done;
    /* at most (2 GM_UV_HALF)^2 x 16 distinct keys exist: size the table by that bound */
    const uint32_t key_bound = 2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS;
#ifdef GMATCH_WITH_CUDA
    if (gpu) {
        st = gm_gpu_level_build(gpu, &s->corners, &b, &s->cloud, key_bound, p->seed ^ 0xB0,
                                p->seed ^ 0x7AB1E, &l->gpu, &l->bases.unique, &l->bases.u);
        if (st != GM_OK)
            goto done;
        goto keep;
    }
#else
    (void)gpu;
#endif
    /* the two-way basis index (paper 4.3): dense index <-> (i, j) */
    if ((st = gm_compact_build_cpu(&l->bases, b.key, b.n, 0, p->seed ^ 0xB0, NULL)) != GM_OK)
        goto done;
    if ((st = (l->fine ? gm_basis_items_local_cpu : gm_basis_items_cpu)(
             &s->corners, l->bases.unique, l->bases.u, &s->cloud, &keys, &vals, &n_items)) != GM_OK)
        goto done;
    st = gm_multi_build_cpu(&l->table, keys, vals, n_items, key_bound, p->seed ^ 0x7AB1E, NULL);
    if (st != GM_OK)
        goto done;
    if (!(l->share = item_shares(vals, n_items, l->bases.u))) {
        st = GM_ERR_NOMEM;
        goto done;
    }
#ifdef GMATCH_WITH_CUDA
keep:
#endif
    if (p->model != GM_MODEL_SIMILARITY && tris && (st = level_build_tris(p, s, l, diag0)) != GM_OK)
        goto done;
    l->corners = s->corners;
    s->corners.p = NULL;
    l->ok = 1;
done:
    free(b.key);
    free(keys);
    free(vals);
    return st;
}

/* The reference's levels and edge map, on the device of r (set before). */
static gm_status ref_build(gm_ref *r, gm_view img)
{
    const gm_params *p = &r->p;
    void *gpu = NULL; /* the GPU lane that builds, NULL on the CPU */
    gm_status st = GM_OK;
    float diag0 = 0; /* level 0's diagonal, its pixels */
#ifdef GMATCH_WITH_CUDA
    if (r->gpu && !(gpu = gm_gpu_acquire(r->gpu)))
        return GM_ERR_DEVICE;
#endif
    for (int lv = 0; lv < GM_LEVELS && st == GM_OK; lv++) {
        side s;
        char err[128];
        st = gm_side_build(gpu, p, img, 1 << lv, (uint32_t)p->ref_points, (uint32_t)p->basis_points,
                        &s, err, sizeof err);
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
#ifdef GMATCH_WITH_CUDA
        if (lv == 0 && st == GM_OK && gpu)
            st = gm_gpu_map(r->gpu, gpu, &r->map);
#endif
        if (lv == 0) /* the fine levels' and the triangles' lengths derive from it */
            diag0 = sqrtf((float)s.w * s.w + (float)s.h * s.h);
        if (st == GM_OK)
            st = level_build(gpu, p, &s, &r->lv[lv], diag0, lv == 0);
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
        st = gm_side_build_f(NULL, img, f, (int64_t)(200000 * grow), (uint32_t)(p->ref_points * grow),
                             (uint32_t)fmin(p->basis_points * grow, 60000.0), &s, err, sizeof err);
        if (st != GM_OK)
            break;
        ref_level *l = &r->lv[GM_LEVELS + k];
        l->fine = 1;
        st = gm_edge_map_build_cpu(&s.all, s.w, s.h, GM_VERIFY_RADIUS, &l->map);
        if (st == GM_OK)
            st = level_build(gpu, p, &s, l, diag0, k == 0);
#ifdef GMATCH_WITH_CUDA
        if (st == GM_OK && gpu)
            st = gm_gpu_level_map(gpu, l->gpu, &l->map);
#endif
        gm_side_free(&s);
    }
#ifdef GMATCH_WITH_CUDA
    if (gpu)
        gm_gpu_release(r->gpu, gpu);
#endif
    return st;
}

/* Frees what ref_build made (the device context stays). */
static void ref_clear(gm_ref *r)
{
    gm_edge_map_free(&r->map);
    for (int lv = 0; lv < GM_ALL_LEVELS; lv++)
        level_free(&r->lv[lv]);
}

static gm_status ref_prepare(const gm_params *p, gm_view img, gm_ref **out)
{
    *out = NULL;
    g_device_error[0] = '\0';
    double t0 = gm_now_ms();
    gm_ref *r = calloc(1, sizeof *r);
    if (!r)
        return GM_ERR_NOMEM;
    r->p = *p;
    int threads = gm_threads();
    snprintf(r->device, sizeof r->device, "cpu, %d threads", threads);
    gm_status st = GM_OK;
#ifdef GMATCH_WITH_CUDA
    if (p->device != GM_DEVICE_CPU) {
        char why[256] = "";
        st = gm_gpu_open(&r->gpu, why, sizeof why);
        if (st == GM_OK) {
            snprintf(r->device, sizeof r->device, "cuda: %s", gm_gpu_name(r->gpu));
            st = ref_build(r, img);
            if (st != GM_OK && (st == GM_ERR_DEVICE || st == GM_ERR_NOMEM)) {
                snprintf(why, sizeof why, "%s: %s", gm_status_str(st), gm_cuda_last_error());
                ref_clear(r);
                gm_gpu_close(r->gpu);
                r->gpu = NULL;
            } else if (st != GM_OK) {
                gm_ref_free(r);
                return st;
            }
        }
        if (!r->gpu) {
            snprintf(g_device_error, sizeof g_device_error, "%s", why);
            if (p->device == GM_DEVICE_CUDA) {
                gm_ref_free(r);
                return GM_ERR_DEVICE;
            }
            snprintf(r->device, sizeof r->device, "cpu, %d threads (auto: no usable GPU: %s)",
                     threads, why);
            st = GM_OK;
        }
    }
    if (!r->gpu)
#else
    if (p->device == GM_DEVICE_CUDA) {
        snprintf(g_device_error, sizeof g_device_error, "this build has no CUDA backend");
        free(r);
        return GM_ERR_DEVICE;
    }
    if (p->device == GM_DEVICE_AUTO)
        snprintf(r->device, sizeof r->device, "cpu, %d threads (auto: built without CUDA)",
                 threads);
#endif
        st = ref_build(r, img);
    if (st != GM_OK) {
        gm_ref_free(r);
        return st;
    }
    r->prep_ms = gm_now_ms() - t0;
    *out = r;
    return GM_OK;
}

void gm_ref_free(gm_ref *r)
{
    if (!r)
        return;
    ref_clear(r);
#ifdef GMATCH_WITH_CUDA
    gm_gpu_close(r->gpu);
#endif
    free(r);
}

const char *gm_ref_device(const gm_ref *r) { return r ? r->device : ""; }
const char *gm_ref_error(const gm_ref *r) { return r ? r->err : "no reference"; }
double gm_ref_time_ms(const gm_ref *r) { return r ? r->prep_ms : 0.0; }

gm_status gm_ref_prepare(const gm_params *p, gm_view img, gm_ref **out)
{
    int budget = gm_threads_enter(p->threads);
    gm_status st = ref_prepare(p, img, out);
    gm_threads_leave(budget);
    return st;
}
