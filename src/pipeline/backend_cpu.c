/* backend_cpu.c: the CPU's backend table (backend.h): the stages' _cpu
 * references on the host, all cores through OpenMP.  The reference the
 * CUDA table is tested against; the default without a usable GPU.  Every
 * level's data are the host copies the pipeline keeps, so there is no
 * device, no lane state and no level: those entries do nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "pipeline/backend.h"
#include "stages/compact.h"
#include "stages/corners.h"
#include "stages/sobel.h"
#include "stages/vote.h"

static gm_status cpu_open(void **dev, int index, char *why, size_t whylen)
{
    (void)index; /* one CPU */
    *dev = NULL;
    if (why && whylen)
        why[0] = '\0';
    return GM_OK;
}

static void cpu_close(void *dev) { (void)dev; }
static void cpu_waits(uint64_t *count, double *ms) { *count = 0, *ms = 0.0; }
static int cpu_count(void) { return 1; }

static void cpu_describe(const void *dev, char *buf, size_t len)
{
    (void)dev;
    snprintf(buf, len, "cpu, %d threads", gm_threads());
}

/* the lane is a token: NULL would read as a failure */
static char cpu_lane_token;

static void *cpu_acquire(void *dev)
{
    (void)dev;
    return &cpu_lane_token;
}

static void cpu_release(void *dev, void *lane) { (void)dev, (void)lane; }

static const char *cpu_error(void) { return ""; }

static gm_status cpu_side(void *lane, gm_view img, int max_edges, uint32_t corner_target,
                          gm_points *all, gm_points *corners)
{
    (void)lane;
    gm_edges e;
    gm_status st = gm_edges_cpu(img, max_edges, &e);
    if (st != GM_OK)
        return st;
    size_t area = (size_t)img.width * img.height;
    uint32_t *idx = malloc((area ? area : 1) * sizeof *idx);
    if (!idx) {
        gm_edges_free(&e);
        return GM_ERR_NOMEM;
    }
    uint32_t n_idx = gm_compact_flags_cpu(e.edge, (uint32_t)area, idx);
    st = gm_edge_points_cpu(&e, idx, n_idx, all);
    if (st == GM_OK && (st = gm_corners_cpu(&e, corner_target, corners)) != GM_OK) {
        free(all->p);
        all->p = NULL;
    }
    free(idx);
    gm_edges_free(&e);
    return st;
}

static gm_status cpu_level_build(void *lane, const gm_points *corners, const gm_bases *b,
                                 const gm_points *cloud, int local, uint32_t key_bound,
                                 uint64_t seed_index, uint64_t seed_table, gm_compact *index,
                                 gm_multi *table, float **share, void **level)
{
    (void)lane;
    *level = NULL;
    uint32_t *keys = NULL, *vals = NULL, n_items = 0;
    gm_status st = gm_compact_build_cpu(index, b->key, b->n, 0, seed_index, NULL);
    if (st == GM_OK)
        st = (local ? gm_basis_items_local_cpu : gm_basis_items_cpu)(
            corners, index->unique, index->u, cloud, &keys, &vals, &n_items);
    if (st == GM_OK)
        st = gm_multi_build_cpu(table, keys, vals, n_items, key_bound, seed_table, NULL);
    if (st == GM_OK && !(*share = gm_item_shares(vals, n_items, index->u)))
        st = GM_ERR_NOMEM;
    free(keys);
    free(vals);
    return st;
}

static void cpu_level_free(void *level) { (void)level; }

/* the host's map is the CPU's: its pixels made here */
static gm_status cpu_map(void *dev, void *lane, void *level, const gm_edge_map *map)
{
    (void)dev, (void)lane, (void)level;
    return gm_edge_map_pixels(map);
}

static gm_status cpu_index(void *lane, const uint32_t *keys, uint32_t n, uint64_t seed,
                           gm_compact *index)
{
    (void)lane;
    return gm_compact_build_cpu(index, keys, n, 0, seed, NULL);
}

/* The votes of n_q query bases (unique keys) or triangles and each row's
 * best, one row at a time (the matrix is never written; fill:
 * gm_vote_rows_cpu or gm_tri_vote_rows_cpu), then the k best rows, timed. */
typedef gm_status (*rows_fill)(gm_level_at lv, const gm_points *qcorners, const void *qbases,
                               uint32_t n_q, const gm_points *qcloud, gm_candidate *best);

static gm_status pair_rows(gm_level_at lv, const gm_points *qcorners, const void *qbases,
                           uint32_t n_q, const gm_points *qcloud, gm_candidate *best)
{
    return gm_vote_rows_cpu(lv.table, lv.n_ref, lv.share, qcorners, qbases, n_q, qcloud, best);
}

static gm_status tri_rows(gm_level_at lv, const gm_points *qcorners, const void *qbases,
                          uint32_t n_q, const gm_points *qcloud, gm_candidate *best)
{
    return gm_tri_vote_rows_cpu(lv.table, lv.n_ref, lv.share, qcorners, qbases, n_q, qcloud, best);
}

static gm_status rows_topk(rows_fill fill, gm_level_at lv, const gm_points *qcorners,
                           const void *qbases, uint32_t n_q, const gm_points *qcloud, uint32_t k,
                           gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms)
{
    *nc = 0;
    double t0 = gm_now_ms();
    gm_candidate *best = malloc((n_q ? n_q : 1) * sizeof *best);
    if (!best)
        return GM_ERR_NOMEM;
    gm_status st = fill(lv, qcorners, qbases, n_q, qcloud, best);
    double t1 = gm_now_ms();
    *vote_ms = t1 - t0;
    if (st == GM_OK)
        *nc = gm_reduce_select_cpu(best, n_q, k, cands);
    *reduce_ms = gm_now_ms() - t1;
    free(best);
    return st;
}

static gm_status cpu_vote(void *lane, gm_level_at lv, const gm_points *qcorners,
                          const uint32_t *unique, uint32_t n_q, const gm_points *qcloud, uint32_t k,
                          gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms)
{
    (void)lane;
    return rows_topk(pair_rows, lv, qcorners, unique, n_q, qcloud, k, cands, nc, vote_ms,
                     reduce_ms);
}

static gm_status cpu_tri_level(void *lane, const gm_points *corners, const gm_tris *t,
                               const gm_points *cloud, uint64_t seed, gm_multi *table,
                               float **share, void **level)
{
    (void)lane;
    *level = NULL;
    uint32_t *keys = NULL, *vals = NULL, n = 0;
    gm_status st = gm_tri_items_cpu(corners, t, cloud, &keys, &vals, &n);
    if (st == GM_OK)
        st = gm_multi_build_cpu(table, keys, vals, n, GM_AFF_KEYS, seed, NULL);
    if (st == GM_OK && !(*share = gm_item_shares(vals, n, t->n)))
        st = GM_ERR_NOMEM;
    free(keys);
    free(vals);
    return st;
}

static gm_status cpu_tri_vote(void *lane, gm_level_at lv, const gm_points *qcorners,
                              const gm_tri *qtris, uint32_t n_q, const gm_points *qcloud,
                              uint32_t k, gm_candidate *cands, uint32_t *nc, double *vote_ms,
                              double *reduce_ms)
{
    (void)lane;
    return rows_topk(tri_rows, lv, qcorners, qtris, n_q, qcloud, k, cands, nc, vote_ms,
                     reduce_ms);
}

static gm_status cpu_points(void *lane, const gm_points *q)
{
    (void)lane, (void)q;
    return GM_OK;
}

/* one region over the candidates (each candidate's loop is serial), not
 * one region per candidate */
static gm_status cpu_verify(void *lane, gm_map_at map, const gm_points *q, const double *ms,
                            uint32_t n, gm_verify_score *scores)
{
    (void)lane;
#pragma omp parallel for num_threads(gm_threads()) schedule(dynamic, 1) if (n > 1)
    for (int64_t c = 0; c < (int64_t)n; c++)
        scores[c] = gm_verify_cpu(map.host, q, ms + 6 * c);
    return GM_OK;
}

/* side by side, each serial below GM_PAR_POINTS (a refinement's barrier
 * on a busy machine waits for a descheduled thread); fewer transforms than
 * threads (at least GM_REFINE_SPREAD_THREADS of them) together, their
 * points' searches spread over the threads (gm_refine_models_cpu: the
 * same numbers) */
#define GM_REFINE_SPREAD_THREADS 4
static int together(uint32_t n)
{
    const int th = gm_threads();
    return th >= GM_REFINE_SPREAD_THREADS && (int64_t)n < th;
}

static gm_status cpu_refine(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                            double *h, int iters, uint32_t n, gm_verify_score *scores)
{
    (void)lane;
    if (together(n)) {
        gm_refine_models_cpu(map.host, q, model, h, iters, (int)n, scores);
        return GM_OK;
    }
#pragma omp parallel for num_threads(gm_threads()) schedule(static, 1) if (n > 1)
    for (int64_t i = 0; i < (int64_t)n; i++) {
        gm_refine_model_cpu(map.host, q, model, h + 9 * i, iters);
        scores[i] = gm_verify_strict_h_cpu(map.host, q, h + 9 * i);
    }
    return GM_OK;
}

/* side by side, a thread each; fewer growths than threads (at least
 * GM_REFINE_SPREAD_THREADS of them) together, each step's searches spread
 * over the threads (gm_grow_models_cpu: the same numbers) */
static gm_status cpu_grow(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                          double *h, const double *seeds, uint32_t n, gm_verify_score *scores)
{
    (void)lane;
    if (together(n)) {
        gm_grow_models_cpu(map.host, q, model, seeds, h, (int)n, scores);
        return GM_OK;
    }
#pragma omp parallel for num_threads(gm_threads()) schedule(static, 1) if (n > 1)
    for (int64_t i = 0; i < (int64_t)n; i++) {
        gm_grow_model_cpu(map.host, q, model, seeds + 3 * i, h + 9 * i);
        scores[i] = gm_verify_strict_h_cpu(map.host, q, h + 9 * i);
    }
    return GM_OK;
}

static gm_status cpu_spread(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                            const double h[9], int w, int hgt, double *spread,
                            const gm_refine_beside *beside)
{
    *spread = gm_corner_spread_cpu(map.host, q, model, h, w, hgt);
    if (beside)
        return cpu_refine(lane, map, q, beside->model, beside->h, beside->iters, 1,
                          beside->score);
    return GM_OK;
}

const gm_backend_ops gm_backend_cpu = {
    .name = "cpu",
    .label = "CPU",
    .device = GM_DEVICE_CPU,
    .start_ms = 0.0,
    .open = cpu_open,
    .count = cpu_count,
    .close = cpu_close,
    .describe = cpu_describe,
    .acquire = cpu_acquire,
    .release = cpu_release,
    .error = cpu_error,
    .waits = cpu_waits,
    .side = cpu_side,
    .level_build = cpu_level_build,
    .level_free = cpu_level_free,
    .map = cpu_map,
    .index = cpu_index,
    .vote = cpu_vote,
    .tri_level = cpu_tri_level,
    .tri_vote = cpu_tri_vote,
    .points = cpu_points,
    .verify = cpu_verify,
    .refine = cpu_refine,
    .grow = cpu_grow,
    .chain_queue = NULL,
    .chain_collect = NULL,
    .spread = cpu_spread,
};
