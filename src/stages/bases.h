/* bases.h: basis pairs, their frames and invariant keys, and the reference
 * table's (key, basis) items (bases.c). */
#ifndef GM_BASES_H
#define GM_BASES_H

#include <math.h>

#include "hash/cuckoo.h"
#include "stages/points.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GM_BASIS_B 16       /* the basis end sits at (B, 0): B cells per basis length */
#ifndef GM_UV_HALF
#define GM_UV_HALF 32       /* |u - B/2| < 32 and |v| < 32 cells are kept */
#endif
#define GM_ANGLE_BINS 16    /* edge direction relative to the basis, 22.5 degrees a bin */

typedef struct {
    uint32_t *key;   /* [n] (i << 16) | j: ordered pair of basis-point indices */
    uint32_t n;
} gm_bases;

/* Ordered pairs (i, j) of pts with length in [lmin, lmax], each kept with
 * probability prob (a hash of seed, i, j).  Caller frees b->key. */
gm_status gm_bases_select_cpu(const gm_points *pts, float lmin, float lmax, double prob,
                              uint64_t seed, gm_bases *b);
/* Points bucketed by a square grid: cell c holds idx[start[c] .. start[c+1]),
 * in increasing point index.  gm_grid_gather writes the indices of the
 * points in the cells that the disc (cx, cy, r) touches into out (room for
 * every point), sorted when `sorted`, else cell by cell; returns how many. */
typedef struct {
    float cell, x0, y0;
    int gw, gh;
    uint32_t *start, *idx;
} gm_grid;
gm_status gm_grid_build(const gm_points *pts, float cell, gm_grid *g);
uint32_t gm_grid_gather(const gm_grid *g, float cx, float cy, float r, int sorted, uint32_t *out);
/* The same for the cells that the box [x0, x1] x [y0, y1] touches, cell by
 * cell (rows of cells top to bottom, each left to right): a box inside
 * another gathers a subsequence of its points. */
uint32_t gm_grid_gather_box(const gm_grid *g, float x0, float y0, float x1, float y1, uint32_t *out);
/* The cells that box touches, [*cx0, *cx1] x [*cy0, *cy1] (empty when *cx0 >
 * *cx1 or *cy0 > *cy1): every point of the grid inside the box is in them. */
void gm_grid_box_cells(const gm_grid *g, float x0, float y0, float x1, float y1, int *cx0,
                       int *cy0, int *cx1, int *cy1);
/* The points of cells cx0..cx1 of cell row cy: g->idx[*i0 .. *i1) (a row's
 * cells are consecutive in idx); empty when cx1 < cx0. */
static inline void gm_grid_span(const gm_grid *g, int cy, int cx0, int cx1, uint32_t *i0,
                                uint32_t *i1)
{
    if (cx1 < cx0) {
        *i0 = *i1 = 0;
        return;
    }
    *i0 = g->start[(size_t)cy * g->gw + cx0];
    *i1 = g->start[(size_t)cy * g->gw + cx1 + 1];
}
void gm_grid_free(gm_grid *g);
/* A selection made row by row, rows in parallel, order kept: row(ctx, i,
 * near, m, out, cap) returns the number of items of point i and writes the
 * first min(that, cap) of them to out; near holds the m points of the grid
 * cells within `reach` of point i (in increasing order when sorted is 1,
 * else in the grid's), or is NULL when grid is 0 (every point is a
 * candidate); the row may overwrite it, and use the whole of its
 * GM_GRID_ROW_ROOM * pts->n entries as scratch.  Each thread writes its
 * rows into a buffer of its own, a row that does not fit is made again once
 * the buffer has grown, and the rows are put in order at the end (one pass:
 * the count-then-fill passes before enumerated every row twice, the
 * triangles' selection a sixth of a video's host time under auto,
 * docs/speed.md).  *items (n_items of elem bytes) is the caller's to
 * free. */
typedef uint32_t (*gm_grid_row)(const void *ctx, uint32_t i, uint32_t *near, uint32_t m,
                                void *out, size_t cap);
#define GM_GRID_ROW_ROOM 5
gm_status gm_grid_rows(const gm_points *pts, float reach, int grid, int sorted, size_t elem,
                       gm_grid_row row, const void *ctx, void **items, uint32_t *n_items);
/* Items made basis by basis in one pass, bases in parallel, laid out in
 * basis order: fn(ctx, d, g, near, seen, keyv) writes basis d's distinct keys
 * to keyv and returns how many (g: a grid of the cloud with cell `cell`;
 * near: scratch for a gather; seen: a zeroed bitmap of key_bound bits that
 * fn leaves zeroed, through gm_keys_add and gm_keys_clear).  The caller
 * frees *keys and *vals. */
typedef uint32_t (*gm_item_keys)(const void *ctx, uint32_t d, const gm_grid *g, uint32_t *near,
                                 uint64_t *seen, uint32_t *keyv);
gm_status gm_grid_items(const gm_points *cloud, float cell, uint32_t nb, uint32_t key_bound,
                        gm_item_keys fn, const void *ctx, uint32_t **keys, uint32_t **vals,
                        uint32_t *n_items);
uint32_t gm_keys_add(uint64_t *seen, uint32_t key, uint32_t *keyv, uint32_t c);
void gm_keys_clear(uint64_t *seen, const uint32_t *keyv, uint32_t c);

/* The same pairs, found through a grid of cell lmax instead of testing every
 * pair: for the fine levels, whose bases are short beside the image (time
 * linear in the points, not quadratic).  Output identical to
 * gm_bases_select_cpu (tested). */
gm_status gm_bases_select_local_cpu(const gm_points *pts, float lmin, float lmax, double prob,
                                    uint64_t seed, gm_bases *b);

/* The frame of one basis, precomputed: (u, v) = B * R^T (p - a) / |b - a|. */
typedef struct {
    float ax, ay, ex, ey; /* e = B * (b - a) / |b - a|^2 */
    float ang;            /* direction of b - a */
} gm_frame;

static inline gm_frame gm_frame_of(gm_point a, gm_point b)
{
    gm_frame f;
    float dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
    f.ax = a.x;
    f.ay = a.y;
    f.ex = GM_BASIS_B * dx / l2;
    f.ey = GM_BASIS_B * dy / l2;
    f.ang = atan2f(dy, dx);
    return f;
}

static inline GM_HD uint32_t gm_frame_key(const gm_frame *f, gm_point p)
{
    float dx = p.x - f->ax, dy = p.y - f->ay;
    float u = dx * f->ex + dy * f->ey;
    float v = dy * f->ex - dx * f->ey;
    float fu = floorf(u) + (GM_UV_HALF - GM_BASIS_B / 2), fv = floorf(v) + GM_UV_HALF;
    if (!(fu >= 0 && fu < 2 * GM_UV_HALF && fv >= 0 && fv < 2 * GM_UV_HALF))
        return GM_KEY_EMPTY;
    float a = p.angle - f->ang;
    int bin = (int)floorf(a * (float)(GM_ANGLE_BINS / (2 * GM_PI)));
    bin &= GM_ANGLE_BINS - 1; /* wraps negative bins too: two's complement */
    return (uint32_t)fu | (uint32_t)fv << 7 | (uint32_t)bin << 14;
}

/* Points closer than this to a basis endpoint say nothing about the match
 * (every basis has them at its origin) and are left out, in pixels. */
#define GM_ENDPOINT_EXCL 2.0f

static inline GM_HD int gm_near_endpoint(gm_point a, gm_point b, gm_point p)
{
    float dx = p.x - a.x, dy = p.y - a.y, ex = p.x - b.x, ey = p.y - b.y;
    const float r2 = GM_ENDPOINT_EXCL * GM_ENDPOINT_EXCL;
    return dx * dx + dy * dy < r2 || ex * ex + ey * ey < r2;
}

/* Key of point p in the frame of basis (a -> b); GM_KEY_EMPTY when p falls
 * outside the kept window. */
uint32_t gm_basis_key(gm_point a, gm_point b, gm_point p);

/* All (key, basis index) items of the reference: for every basis (dense index
 * d, points pts[i], pts[j]) and every point q of `cloud`.  Caller frees both. */
gm_status gm_basis_items_cpu(const gm_points *basis_pts, const uint32_t *basis_keys,
                             uint32_t nb, const gm_points *cloud, uint32_t **keys,
                             uint32_t **vals, uint32_t *n_items);
/* The same items, each basis visiting only the cloud points of the grid
 * cells its key range can reach (a point keeps a key only within 2 basis
 * lengths of the basis midpoint in u and v), in two passes (count, fill)
 * instead of a scratch of nb x cloud->n.  The same (key, basis) items as
 * gm_basis_items_cpu, a basis's keys in another order (tested); votes count
 * items, so the order plays no part. */
gm_status gm_basis_items_local_cpu(const gm_points *basis_pts, const uint32_t *basis_keys,
                                   uint32_t nb, const gm_points *cloud, uint32_t **keys,
                                   uint32_t **vals, uint32_t *n_items);

#ifdef __cplusplus
}
#endif

#endif
