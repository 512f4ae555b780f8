/* affine.c: three-point bases and affine-invariant keys, for views with
 * perspective (Lamdan and Wolfson, "Geometric hashing: a general and
 * efficient model-based recognition scheme", 1988; Wolfson and Rigoutsos,
 * "Geometric hashing: an overview", 1997).
 *
 * A view with perspective is locally affine, and a similarity does not
 * describe even the neighbourhood of a basis once the view is foreshortened
 * (docs/photo.md).  A basis here is an ordered triangle of corners (a, b, c),
 * counter-clockwise, its sides within a length band and not too flat.  A
 * point p gets its affine coordinates (u, v) in the frame p = a + u (b - a) +
 * v (c - a) and the direction of M^T n, with M = [b - a, c - a] and n the
 * point's gradient direction: both are unchanged by any affine map of
 * positive determinant (the gradient maps by A^-T, M by A), so a triangle
 * and its image key their points alike.
 *
 * Key layout (16 bits): bits 0..5 the u cell, 6..11 the v cell (GM_AFF_Q
 * cells a unit, u and v kept in [GM_AFF_LO, GM_AFF_LO + GM_AFF_CELLS /
 * GM_AFF_Q)), 12..15 the direction bin.
 *
 * Triangles come from a grid of the corners (each corner meets the corners
 * within lmax of it), items from a grid of the cloud; both linear in the
 * area for a fixed band. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/reduce.h"
#include "stages/affine.h"

gm_aframe gm_aframe_of(gm_point a, gm_point b, gm_point c)
{
    gm_aframe f;
    float m00 = b.x - a.x, m01 = c.x - a.x, m10 = b.y - a.y, m11 = c.y - a.y;
    float det = m00 * m11 - m01 * m10;
    f.ax = a.x, f.ay = a.y;
    f.m00 = m00, f.m01 = m01, f.m10 = m10, f.m11 = m11;
    f.i00 = m11 / det, f.i01 = -m01 / det, f.i10 = -m10 / det, f.i11 = m00 / det;
    return f;
}

gm_tri_frame gm_tri_frame_of(gm_point a, gm_point b, gm_point c)
{
    return (gm_tri_frame){gm_aframe_of(a, b, c), b.x, b.y, c.x, c.y};
}

uint32_t gm_aframe_key(const gm_aframe *f, gm_point p)
{
    return gm_aframe_key_cs(f, p, cosf(p.angle), sinf(p.angle));
}

/* The cloud's cosines and sines (gm_points_cs), NULL when out of memory. */
static float *cloud_cs(const gm_points *cloud)
{
    float *cs = malloc((cloud->n ? cloud->n : 1) * 2 * sizeof *cs);
    if (cs)
        gm_points_cs(cloud, cs);
    return cs;
}

static int near_vertex(const gm_point *a, const gm_point *b, const gm_point *c, gm_point p)
{
    return gm_near_vertex(a->x, a->y, b->x, b->y, c->x, c->y, p);
}

/* Row a of the selection: the triangles (a, b, c) with b and c among near
 * (sorted), in increasing (b, c), the first cap of them written to out.  near is
 * compacted in place first to the points in the band (a itself out): both
 * sides of a triangle must lie in it, so the pairs (b, c) left are those
 * that could pass, in the same order, and each is tested with the same
 * expressions; the m x m pairs of the box went through the band test
 * (a negative 640x360 frame under auto: the selection took a tenth of its
 * time, the box around a corner holding about twice the band's points). */
static uint32_t tri_row(const gm_points *pts, uint32_t a, uint32_t *near, uint32_t m,
                        float l2min, float l2max, float min_sin, uint64_t seed, uint64_t thr,
                        gm_tri *out, size_t cap)
{
    const gm_point pa = pts->p[a];
    const uint32_t n = pts->n;
    /* the band's points relative to a, in arrays past near's m entries
     * (gm_grid_rows' scratch): the pairs' loop reads them in order instead
     * of gathering each point again for every pair (the same float
     * expressions, so the same tests: a tenth of a 640x360 video's host time
     * under auto went to this loop, docs/speed.md) */
    float *X = (float *)(near + n), *Y = X + n, *L = Y + n;
    uint8_t *keep = (uint8_t *)(L + n);
    uint32_t k = 0;
    for (uint32_t s = 0; s < m; s++) {
        uint32_t ib = near[s];
        float bx = pts->p[ib].x - pa.x, by = pts->p[ib].y - pa.y, lb = bx * bx + by * by;
        if (ib != a && !(lb < l2min || lb > l2max))
            near[k] = ib, X[k] = bx, Y[k] = by, L[k] = lb, k++;
    }
    const float ms2 = min_sin * min_sin;
    uint32_t c = 0;
    for (uint32_t s = 0; s < k; s++) {
        const float bx = X[s], by = Y[s], bound = ms2 * L[s];
        /* counter-clockwise and not too flat: min_sin^2 lb lc as
         * ((min_sin min_sin) lb) lc; c = b gives cross 0, out */
        for (uint32_t t = 0; t < k; t++) {
            float cross = bx * Y[t] - by * X[t];
            keep[t] = (uint8_t)(!(cross <= 0) & !(cross * cross < bound * L[t]));
        }
        const uint32_t ib = near[s];
        for (uint32_t t = 0; t < k; t++) {
            if (!keep[t])
                continue;
            const uint32_t ic = near[t];
            /* every triangle kept at prob 1 (the query's selection, which
             * the matcher thins itself): no hash to compute */
            if (thr == UINT64_MAX ||
                gm_mix64(seed ^ ((uint64_t)a << 40 | (uint64_t)ib << 20 | ic)) <= thr) {
                if (c < cap)
                    out[c] = (gm_tri){(uint16_t)a, (uint16_t)ib, (uint16_t)ic};
                c++;
            }
        }
    }
    return c;
}

typedef struct {
    const gm_points *pts;
    float l2min, l2max, min_sin;
    uint64_t seed, thr;
} tri_sel;

static uint32_t tri_row_of(const void *ctx, uint32_t a, uint32_t *near, uint32_t m, void *out,
                           size_t cap)
{
    const tri_sel *c = ctx;
    return tri_row(c->pts, a, near, m, c->l2min, c->l2max, c->min_sin, c->seed, c->thr, out, cap);
}

uint32_t gm_tri_corners_kept(uint32_t have, double want, uint32_t least)
{
    if (!(want < have)) /* NaN too: every corner */
        return have;
    if (want < least)
        return least < have ? least : have;
    return (uint32_t)want;
}

gm_status gm_tris_select_cpu(const gm_points *pts, float lmin, float lmax, float min_sin,
                             double prob, uint64_t seed, gm_tris *out)
{
    out->t = NULL;
    out->n = 0;
    if (pts->n > 65535)
        return GM_ERR_INVALID;
    tri_sel c = {pts, lmin * lmin, lmax * lmax, min_sin, seed, gm_prob_threshold(prob)};
    void *items;
    gm_status st = gm_grid_rows(pts, lmax, 1, 1, sizeof *out->t, tri_row_of, &c, &items, &out->n);
    out->t = items;
    return st;
}

/* How far from vertex a a kept point can lie: |u| and |v| at most
 * max(-GM_AFF_LO, GM_AFF_LO + GM_AFF_CELLS / GM_AFF_Q) along each side. */
static float tri_reach(const gm_point *a, const gm_point *b, const gm_point *c)
{
    float k = fmaxf(-(float)GM_AFF_LO, (float)GM_AFF_LO + (float)GM_AFF_CELLS / GM_AFF_Q);
    return k * (hypotf(b->x - a->x, b->y - a->y) + hypotf(c->x - a->x, c->y - a->y)) + 1.0f;
}

typedef struct {
    const gm_points *pts, *cloud;
    const float *cs; /* the cloud's angles (cloud_cs) */
    const gm_tri *t;
} tri_items;

/* The box of the points of triangle (a, b, c) that can have a key, u and v
 * in [lo, hi) = [GM_AFF_LO, GM_AFF_LO + GM_AFF_CELLS / GM_AFF_Q): the box of
 * that parallelogram, a pixel wider (far beyond the keys' float rounding):
 * a point outside it has no key. */
static void tri_key_box(const gm_point *a, const gm_point *b, const gm_point *c, float *x0,
                        float *y0, float *x1, float *y1)
{
    const float lo = (float)GM_AFF_LO, hi = (float)GM_AFF_LO + (float)GM_AFF_CELLS / GM_AFF_Q;
    float ex = b->x - a->x, ey = b->y - a->y, fx = c->x - a->x, fy = c->y - a->y;
    *x0 = a->x + fminf(lo * ex, hi * ex) + fminf(lo * fx, hi * fx) - 1.0f;
    *x1 = a->x + fmaxf(lo * ex, hi * ex) + fmaxf(lo * fx, hi * fx) + 1.0f;
    *y0 = a->y + fminf(lo * ey, hi * ey) + fminf(lo * fy, hi * fy) - 1.0f;
    *y1 = a->y + fmaxf(lo * ey, hi * ey) + fmaxf(lo * fy, hi * fy) + 1.0f;
}

static uint32_t tri_keys(const void *ctx, uint32_t d, const gm_grid *g, uint32_t *near,
                         uint64_t *seen, uint32_t *keyv)
{
    const tri_items *x = ctx;
    const gm_point *a = &x->pts->p[x->t[d].a], *b = &x->pts->p[x->t[d].b], *c = &x->pts->p[x->t[d].c];
    gm_aframe f = gm_aframe_of(*a, *b, *c);
    /* the cells of the points that can have a key (tri_key_box).  The box
     * lies inside the square of half side tri_reach around a that was
     * gathered before, and cells come in the same order, so its points are
     * those of the square that can have a key, in the same order (about a
     * third of the square's: the same items from fewer key computations) */
    float x0, y0, x1, y1;
    tri_key_box(a, b, c, &x0, &y0, &x1, &y1);
    uint32_t m = gm_grid_gather_box(g, x0, y0, x1, y1, near), k = 0;
    for (uint32_t s = 0; s < m; s++) {
        gm_point q = x->cloud->p[near[s]];
        if (!near_vertex(a, b, c, q))
            k = gm_keys_add(seen, gm_aframe_key_cs(&f, q, x->cs[2 * near[s]], x->cs[2 * near[s] + 1]),
                            keyv, k);
    }
    gm_keys_clear(seen, keyv, k);
    return k;
}

gm_status gm_tri_items_cpu(const gm_points *pts, const gm_tris *t, const gm_points *cloud,
                           uint32_t **keys, uint32_t **vals, uint32_t *n_items)
{
    float reach = 1.0f;
    for (uint32_t d = 0; d < t->n; d++)
        reach = fmaxf(reach, tri_reach(&pts->p[t->t[d].a], &pts->p[t->t[d].b], &pts->p[t->t[d].c]));
    float *cs = cloud_cs(cloud);
    if (!cs)
        return GM_ERR_NOMEM;
    tri_items x = {pts, cloud, cs, t->t};
    gm_status st =
        gm_grid_items(cloud, reach / 2, t->n, GM_AFF_KEYS, tri_keys, &x, keys, vals, n_items);
    free(cs);
    return st;
}

typedef struct {
    const gm_multi *table;
    const gm_points *qpts, *qcloud;
    const float *cs; /* qcloud's angles (cloud_cs) */
    const gm_tri *qtris;
    const gm_grid *grid; /* of qcloud */
} tri_rows;

/* Row q: the key of every cloud point in the cells of the triangle's key
 * box (tri_key_box: the points outside it have none), where every cloud
 * point was tried.  A row counts its keys' votes, in any order, so the row
 * is the same (a negative 640x360 frame under auto: the box holds a small
 * part of the cloud). */
static void fill_tri_row(const void *ctx, uint32_t q, uint16_t *row)
{
    const tri_rows *x = ctx;
    const gm_point *a = &x->qpts->p[x->qtris[q].a], *b = &x->qpts->p[x->qtris[q].b],
                   *c = &x->qpts->p[x->qtris[q].c];
    gm_aframe f = gm_aframe_of(*a, *b, *c);
    gm_key_batch kb = {x->table, row, 0, {0}};
    const gm_grid *g = x->grid;
    float x0, y0, x1, y1;
    int cx0, cy0, cx1, cy1;
    tri_key_box(a, b, c, &x0, &y0, &x1, &y1);
    gm_grid_box_cells(g, x0, y0, x1, y1, &cx0, &cy0, &cx1, &cy1);
    for (int cy = cy0; cy <= cy1; cy++) {
        uint32_t i0, i1;
        gm_grid_span(g, cy, cx0, cx1, &i0, &i1);
        for (uint32_t i = i0; i < i1; i++) {
            const uint32_t j = g->idx[i];
            const gm_point p = x->qcloud->p[j];
            if (near_vertex(a, b, c, p))
                continue;
            uint32_t key = gm_aframe_key_cs(&f, p, x->cs[2 * j], x->cs[2 * j + 1]);
            if (key != GM_KEY_EMPTY)
                gm_batch_add(&kb, key);
        }
    }
    gm_batch_flush(&kb);
}

gm_status gm_tri_vote_rows_cpu(const gm_multi *table, uint32_t n_ref, const float *share,
                               const gm_points *qpts, const gm_tri *qtris, uint32_t n_q,
                               const gm_points *qcloud, gm_candidate *best)
{
    /* cells of half the largest key box's reach, as the items' grid */
    float reach = 1.0f;
    for (uint32_t d = 0; d < n_q; d++)
        reach = fmaxf(reach, tri_reach(&qpts->p[qtris[d].a], &qpts->p[qtris[d].b],
                                       &qpts->p[qtris[d].c]));
    gm_grid g;
    gm_status st = gm_grid_build(qcloud, reach / 2, &g);
    if (st != GM_OK)
        return st;
    float *cs = cloud_cs(qcloud);
    if (!cs) {
        gm_grid_free(&g);
        return GM_ERR_NOMEM;
    }
    tri_rows x = {table, qpts, qcloud, cs, qtris, &g};
    st = gm_rows_reduce_cpu(n_ref, share, n_q, fill_tri_row, &x, best);
    free(cs);
    gm_grid_free(&g);
    return st;
}

int gm_affine_from_tris(const gm_point q[3], const gm_point r[3], double m[6])
{
    /* [qx qy 1] [m0 m1 m2]^T = rx and likewise for ry at the three vertices:
     * Cramer's rule on the 3x3 system with rows (qx, qy, 1) */
    double x0 = q[0].x, y0 = q[0].y, x1 = q[1].x, y1 = q[1].y, x2 = q[2].x, y2 = q[2].y;
    double det = x0 * (y1 - y2) - y0 * (x1 - x2) + (x1 * y2 - x2 * y1);
    if (fabs(det) < 1e-9)
        return -1;
    for (int row = 0; row < 2; row++) {
        double t0 = row ? r[0].y : r[0].x, t1 = row ? r[1].y : r[1].x, t2 = row ? r[2].y : r[2].x;
        m[3 * row + 0] = (t0 * (y1 - y2) - y0 * (t1 - t2) + (t1 * y2 - t2 * y1)) / det;
        m[3 * row + 1] = (x0 * (t1 - t2) - t0 * (x1 - x2) + (x1 * t2 - x2 * t1)) / det;
        m[3 * row + 2] = (x0 * (y1 * t2 - y2 * t1) - y0 * (x1 * t2 - x2 * t1) +
                          t0 * (x1 * y2 - x2 * y1)) / det;
    }
    return 0;
}
