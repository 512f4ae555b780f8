/* vote.c: every chosen query basis looks up the key of every query point in
 * the reference's multi-value table and votes for each reference basis stored
 * under it (paper section 6).  The matrix is query-basis major, so on the CPU
 * one thread owns a row and no atomics are needed; counts saturate at 65535.
 *
 * gm_vote_rows_cpu is what the matcher runs: like the GPU kernel, it counts
 * one row at a time in a buffer that stays in cache and reduces it at once,
 * never writing the whole matrix (n_q x n_ref x 2 bytes: 8 MB for a
 * 512x512 reference, 40 MB and more for large ones).  Time hardly moves
 * (public stills, 2 cores, vote + reduce median 10.3 -> 10.0 ms): the
 * increments themselves are the cost, every reference basis stored under a
 * key (7 to 40 a key at level 0 of the public references).
 * Tried and dropped (same bench, same results): a list of the row's
 * touched cells so that the reduction and the re-zeroing visit only those
 * (vote 10.0 -> 14.1 ms: the branch in the increment loop costs more than
 * the scans it saves), and skipping cells whose count cannot beat the best
 * score so far (the reduction went from 13% to 18% of a perf profile: the
 * branch stops the scan from vectorizing).
 * gm_vote_cpu keeps the whole matrix for the tests and the GPU's parity
 * checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/reduce.h"

/* Row q of the vote matrix added into row (n_ref counters, zeroed by the caller). */
static void vote_row(const gm_multi *table, uint32_t n_ref, const gm_points *qbasis_pts,
                     uint32_t qkey, const gm_points *qcloud, uint16_t *row)
{
    gm_point a = qbasis_pts->p[qkey >> 16], b = qbasis_pts->p[qkey & 0xFFFF];
    gm_frame f = gm_frame_of(a, b);
    gm_key_batch kb = {table, row, 0, {0}};
    for (uint32_t k = 0; k < qcloud->n; k++) {
        if (gm_near_endpoint(a, b, qcloud->p[k]))
            continue;
        uint32_t key = gm_frame_key(&f, qcloud->p[k]);
        if (key != GM_KEY_EMPTY)
            gm_batch_add(&kb, key);
    }
    gm_batch_flush(&kb);
}

void gm_vote_cpu(const gm_multi *table, uint32_t n_ref, const gm_points *qbasis_pts,
                 const uint32_t *qbasis_keys, uint32_t n_q, const gm_points *qcloud,
                 uint16_t *votes)
{
#pragma omp parallel for num_threads(gm_threads()) schedule(dynamic, 4)
    for (int64_t q = 0; q < (int64_t)n_q; q++) {
        memset(votes + (size_t)q * n_ref, 0, (size_t)n_ref * sizeof *votes);
        vote_row(table, n_ref, qbasis_pts, qbasis_keys[q], qcloud, votes + (size_t)q * n_ref);
    }
}

gm_status gm_rows_reduce_cpu(uint32_t n_ref, const float *share, uint32_t n_q, gm_row_fill fill,
                             const void *ctx, gm_candidate *best)
{
    int failed = 0;
#pragma omp parallel num_threads(gm_threads()) reduction(| : failed)
    {
        uint16_t *row = malloc((n_ref ? n_ref : 1) * sizeof *row);
        failed = row == NULL;
#pragma omp for schedule(dynamic, 4)
        for (int64_t q = 0; q < (int64_t)n_q; q++) {
            if (!row)
                continue;
            memset(row, 0, (size_t)n_ref * sizeof *row);
            fill(ctx, (uint32_t)q, row);
            best[q] = gm_reduce_row_cpu(row, share, n_ref, (uint32_t)q);
        }
        free(row);
    }
    return failed ? GM_ERR_NOMEM : GM_OK;
}

typedef struct {
    const gm_multi *table;
    uint32_t n_ref;
    const gm_points *qbasis_pts, *qcloud;
    const uint32_t *qbasis_keys;
    const gm_grid *grid; /* of qcloud */
} pair_rows;

/* The box of the points that can have a key in the frame of basis (a -> b)
 * (gm_frame_key): u in [-(GM_UV_HALF - B/2), GM_UV_HALF + B/2) and v in
 * [-GM_UV_HALF, GM_UV_HALF) cells, B = GM_BASIS_B cells a basis length, so
 * p = a + s (b - a) + t perp(b - a) with s = u / B, t = v / B; the box of
 * that square, a pixel wider (far beyond the keys' float rounding): a
 * point outside it has no key. */
static void pair_key_box(gm_point a, gm_point b, float *x0, float *y0, float *x1, float *y1)
{
    const float s0 = -(float)(GM_UV_HALF - GM_BASIS_B / 2) / GM_BASIS_B;
    const float s1 = (float)(GM_UV_HALF + GM_BASIS_B / 2) / GM_BASIS_B;
    const float t = (float)GM_UV_HALF / GM_BASIS_B;
    float dx = b.x - a.x, dy = b.y - a.y;
    *x0 = a.x + fminf(s0 * dx, s1 * dx) - t * fabsf(dy) - 1.0f;
    *x1 = a.x + fmaxf(s0 * dx, s1 * dx) + t * fabsf(dy) + 1.0f;
    *y0 = a.y + fminf(s0 * dy, s1 * dy) - t * fabsf(dx) - 1.0f;
    *y1 = a.y + fmaxf(s0 * dy, s1 * dy) + t * fabsf(dx) + 1.0f;
}

/* Row q as vote_row counts it, from the cloud points in the cells of the
 * basis's key box only (pair_key_box) when they are fewer than half the
 * grid's: a row counts its keys' votes in any order, so the row is the
 * same.  A short basis's window is a small part of the query (the CPU
 * path's vote took a fifth of a public still's match, every basis trying
 * every point). */
static void fill_pair_row(const void *ctx, uint32_t q, uint16_t *row)
{
    const pair_rows *c = ctx;
    const gm_grid *g = c->grid;
    const uint32_t qkey = c->qbasis_keys[q];
    gm_point a = c->qbasis_pts->p[qkey >> 16], b = c->qbasis_pts->p[qkey & 0xFFFF];
    float x0, y0, x1, y1;
    int cx0, cy0, cx1, cy1;
    pair_key_box(a, b, &x0, &y0, &x1, &y1);
    gm_grid_box_cells(g, x0, y0, x1, y1, &cx0, &cy0, &cx1, &cy1);
    const int64_t cells = cx1 < cx0 || cy1 < cy0 ? 0 : (int64_t)(cx1 - cx0 + 1) * (cy1 - cy0 + 1);
    if (2 * cells >= (int64_t)g->gw * g->gh) {
        vote_row(c->table, c->n_ref, c->qbasis_pts, qkey, c->qcloud, row);
        return;
    }
    gm_frame f = gm_frame_of(a, b);
    gm_key_batch kb = {c->table, row, 0, {0}};
    for (int cy = cy0; cy <= cy1; cy++) {
        uint32_t i0, i1;
        gm_grid_span(g, cy, cx0, cx1, &i0, &i1);
        for (uint32_t i = i0; i < i1; i++) {
            const gm_point p = c->qcloud->p[g->idx[i]];
            if (gm_near_endpoint(a, b, p))
                continue;
            uint32_t key = gm_frame_key(&f, p);
            if (key != GM_KEY_EMPTY)
                gm_batch_add(&kb, key);
        }
    }
    gm_batch_flush(&kb);
}

gm_status gm_vote_rows_cpu(const gm_multi *table, uint32_t n_ref, const float *share,
                           const gm_points *qbasis_pts, const uint32_t *qbasis_keys, uint32_t n_q,
                           const gm_points *qcloud, gm_candidate *best)
{
    /* cells of the shortest basis's length, at least 8 pixels: a window is
     * four basis lengths across */
    float cell = INFINITY;
    for (uint32_t q = 0; q < n_q; q++) {
        gm_point a = qbasis_pts->p[qbasis_keys[q] >> 16], b = qbasis_pts->p[qbasis_keys[q] & 0xFFFF];
        cell = fminf(cell, hypotf(b.x - a.x, b.y - a.y));
    }
    gm_grid g;
    gm_status st = gm_grid_build(qcloud, fmaxf(isfinite(cell) ? cell : 8.0f, 8.0f), &g);
    if (st != GM_OK)
        return st;
    pair_rows c = {table, n_ref, qbasis_pts, qcloud, qbasis_keys, &g};
    st = gm_rows_reduce_cpu(n_ref, share, n_q, fill_pair_row, &c, best);
    gm_grid_free(&g);
    return st;
}
