/* internal.h: types and stage entry points shared inside the library.
 * Each stage lives in its own file pair (src/<stage>.c, later cuda/<stage>.cu);
 * CPU entry points end in _cpu so a CUDA twin can share the signature. */
#ifndef GM_INTERNAL_H
#define GM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cuckoo.h"
#include "gmatch.h"

#define GM_PI 3.14159265358979323846

/* Loops over fewer pixels than this run on one thread: every OpenMP region
 * ends in a barrier, and on a machine whose other cores are busy a barrier
 * waits for a descheduled thread (measured: a query set 4x slower with one
 * core taken by another process).  Queries are mostly below it. */
#define GM_PAR_PIXELS (1 << 17)
/* The same for loops over points. */
#define GM_PAR_POINTS 20000

/* Functions that kernels share with the CPU code. */
#ifndef GM_HD
#ifdef __CUDACC__
#define GM_HD __host__ __device__
#else
#define GM_HD
#endif
#endif

/* Overflow-checked size arithmetic (stb's stbi__mul2sizes_valid). */
static inline int gm_mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

/* splitmix64: the one source of randomness; pure function of its input, so
 * results are independent of thread count and order. */
static inline uint64_t gm_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- resample.c: integer box downscale to the working size ---------------- */
/* Factor f >= 1 such that max(w,h)/f <= max_side. */
int gm_downscale_factor(int w, int h, int max_side);
/* dst is (w/f) x (h/f), packed (stride = dst width).  Box average, rounded. */
void gm_downscale_cpu(gm_view src, int f, uint8_t *dst);

/* ---- sobel.c: smoothing, Sobel gradients, thinning, adaptive threshold ---- */
typedef struct {
    int w, h;
    int16_t *gx, *gy;   /* [w*h] Sobel of the binomially smoothed image (x16 scale) */
    int32_t *mag2;      /* [w*h] gx*gx + gy*gy */
    uint8_t *edge;      /* [w*h] 1 where a thinned edge pixel is above threshold */
    int32_t threshold;  /* on mag2 */
} gm_edges;

/* Allocates e's arrays (free with gm_edges_free).  max_edges bounds how many
 * edge pixels the adaptive threshold keeps (the strongest ones). */
gm_status gm_edges_cpu(gm_view img, int max_edges, gm_edges *e);
void gm_edges_free(gm_edges *e);
/* The rules of the edge stage, shared with its CUDA twin (cuda/sobel.cu).
 * Edge pixels within GM_EDGE_MARGIN pixels of the border are dropped: the
 * replicated border makes their gradients unreliable.  GM_MIN_MAG: the
 * smallest edge magnitude, in units of the 16x-scaled Sobel (a clean step of
 * about 3 grey levels; below it is sensor noise and JPEG ringing, whatever
 * the image).  GM_REL_MAG: an edge must also reach this fraction of the 99th
 * percentile magnitude, so low-contrast images keep their edges and
 * high-contrast ones drop texture noise.  The threshold histogram has
 * GM_EDGE_HIST_BINS bins of 1 << GM_EDGE_HIST_SHIFT magnitude units. */
#define GM_EDGE_MARGIN 2
#define GM_MIN_MAG 96
#define GM_REL_MAG 0.06
#define GM_EDGE_HIST_BINS 1024
#define GM_EDGE_HIST_SHIFT 5

/* Quantized gradient direction used by the thinning: 0 horizontal, 1 vertical,
 * 2 diagonal down-right, 3 diagonal down-left.  tan(22.5 deg) ~ 0.4142 as
 * 414/1000 keeps it integer (|g| <= 16320, so g * 1000 fits an int). */
static inline GM_HD int gm_edge_dir(int gx, int gy)
{
    int ax = gx < 0 ? -gx : gx, ay = gy < 0 ? -gy : gy;
    if (ay * 1000 <= ax * 414)
        return 0;
    if (ax * 1000 <= ay * 414)
        return 1;
    return ((gx > 0) == (gy > 0)) ? 2 : 3;
}

/* ---- compact.c: prefix-sum compaction of flagged pixels ------------------- */
/* Writes the indices i with flags[i] != 0, in increasing order, into out
 * (capacity n); returns the count.  Two-pass blocked scan, all cores. */
uint32_t gm_compact_flags_cpu(const uint8_t *flags, uint32_t n, uint32_t *out);

/* ---- points -------------------------------------------------------------- */
typedef struct {
    float x, y;   /* sub-pixel position, working-image pixels */
    float angle;  /* gradient direction, radians in (-pi, pi] */
    float w;      /* strength (gradient magnitude or corner response) */
} gm_point;

typedef struct {
    gm_point *p;
    uint32_t n;
} gm_points;

/* points.c: every compacted edge pixel as a point, sub-pixel along its
 * gradient (parabola through the magnitudes).  Caller frees pts->p. */
gm_status gm_edge_points_cpu(const gm_edges *e, const uint32_t *idx, uint32_t n_idx,
                             gm_points *pts);
/* At most `target` of pts spread evenly over a w x h image: the strongest
 * point of each cell of a grid whose pitch is chosen for about `target`
 * occupied cells.  Caller frees out->p. */
gm_status gm_points_spread_cpu(const gm_points *pts, int w, int h, uint32_t target,
                               gm_points *out);

/* ---- corners.c: basis points ---------------------------------------------- */
/* Corner points (minimum eigenvalue of the structure tensor of the Sobel
 * gradients), local maxima, spread evenly, at most `target`.  Caller frees. */
gm_status gm_corners_cpu(const gm_edges *e, uint32_t target, gm_points *pts);

/* ---- bases.c: basis pairs and their invariant keys ------------------------- */
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
void gm_grid_free(gm_grid *g);
/* A selection made row by row in two passes (count, then fill), rows in
 * parallel, order kept: row(ctx, i, near, m, out) counts the items of point
 * i, or writes them to out when out is not NULL; near holds the m points of
 * the grid cells within `reach` of point i (sorted), or is NULL when grid is
 * 0 (every point is a candidate).  *items (n_items of elem bytes) is the
 * caller's to free. */
typedef uint32_t (*gm_grid_row)(const void *ctx, uint32_t i, const uint32_t *near, uint32_t m,
                                void *out);
gm_status gm_grid_rows(const gm_points *pts, float reach, int grid, size_t elem, gm_grid_row row,
                       const void *ctx, void **items, uint32_t *n_items);
/* Items made basis by basis in two passes (count, then fill), bases in
 * parallel: fn(ctx, d, g, near, seen, keyv) writes basis d's distinct keys
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

#include <math.h>

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

/* ---- vote.c --------------------------------------------------------------- */
/* A query basis as the GPU voting kernel takes it: its frame (made on the
 * host by gm_frame_of, so CPU and GPU keys agree) and its endpoints. */
typedef struct {
    gm_frame f;
    gm_point a, b;
} gm_vote_basis;

/* votes[q * n_ref + r] += 1 for every query basis q (dense index), every
 * cloud point, every reference basis r stored under the point's key. */
void gm_vote_cpu(const gm_multi *table, uint32_t n_ref, const gm_points *qbasis_pts,
                 const uint32_t *qbasis_keys, uint32_t n_q, const gm_points *qcloud,
                 uint16_t *votes);

/* ---- reduce.c -------------------------------------------------------------- */
typedef struct {
    uint32_t ref_basis, query_basis;  /* dense indices */
    uint32_t votes;
    float score;                      /* votes above chance, in standard deviations */
} gm_candidate;

/* The top k cells of the vote matrix, best per query basis, then the k best
 * of those, sorted by score descending (ties by index).  A cell's score is
 * (v - l) / sqrt(l + 1), where l = row_total * share[r] is the votes it would
 * get by chance: share[r] is reference basis r's fraction of all table items.
 * Raw counts would favour the bases with the most items (long bases over busy
 * regions) and the query bases with the most points.  Returns the count, or
 * 0 when out of memory. */
uint32_t gm_reduce_topk_cpu(const uint16_t *votes, const float *share, uint32_t n_ref,
                            uint32_t n_q, uint32_t k, gm_candidate *out);
/* Its first step for one row q: the best cell (lowest index on ties), the
 * row's total and the cell's score as described above. */
gm_candidate gm_reduce_row_cpu(const uint16_t *row, const float *share, uint32_t n_ref, uint32_t q);
/* Its second step: the k best of the per-row bests (best[] is sorted in
 * place), as the GPU path takes them from the device's per-row reduction. */
uint32_t gm_reduce_select_cpu(gm_candidate *best, uint32_t n_q, uint32_t k, gm_candidate *out);
/* (vote.c) gm_vote_cpu and the per-row step of gm_reduce_topk_cpu fused, as the GPU
 * does it: each query basis's row is counted in a per-thread buffer that
 * stays in cache and reduced at once to best[q] (equal to
 * gm_reduce_row_cpu of gm_vote_cpu's row); the n_q x n_ref matrix is never
 * written.  Returns GM_ERR_NOMEM when a thread's row cannot be allocated. */
/* The loop both fuse: each of the n_q rows (n_ref counters, zeroed) filled
 * by fill(ctx, q, row) on some thread, reduced to best[q] at once. */
typedef void (*gm_row_fill)(const void *ctx, uint32_t q, uint16_t *row);
gm_status gm_rows_reduce_cpu(uint32_t n_ref, const float *share, uint32_t n_q, gm_row_fill fill,
                             const void *ctx, gm_candidate *best);
gm_status gm_vote_rows_cpu(const gm_multi *table, uint32_t n_ref, const float *share,
                           const gm_points *qbasis_pts, const uint32_t *qbasis_keys, uint32_t n_q,
                           const gm_points *qcloud, gm_candidate *best);

/* A hash threshold that keeps a share prob of uniform 64-bit hashes. */
static inline uint64_t gm_prob_threshold(double prob)
{
    return prob >= 1.0 ? UINT64_MAX : (uint64_t)(prob * 18446744073709551616.0);
}

/* The votes of n keys (n <= GM_VOTE_CHUNK): every basis stored under each
 * gets one more (counts saturate at 65535).  All n are looked up first, then
 * their value runs counted, the run two ahead prefetched: the lookups are
 * independent of each other and of the counting, so their cache misses
 * overlap instead of each waiting for the previous key's increments. */
#define GM_VOTE_CHUNK 64
static inline void gm_vote_keys(const gm_multi *table, const uint32_t *keys, uint32_t n,
                                uint16_t *row)
{
    const uint32_t *v[GM_VOTE_CHUNK];
    uint32_t c[GM_VOTE_CHUNK];
    for (uint32_t j = 0; j < n; j++)
        c[j] = gm_multi_find(table, keys[j], &v[j]);
    for (uint32_t j = 0; j < n; j++) {
        if (j + 2 < n && c[j + 2])
            __builtin_prefetch(v[j + 2]);
        const uint32_t *vj = v[j];
        for (uint32_t i = 0; i < c[j]; i++)
            if (row[vj[i]] != UINT16_MAX)
                row[vj[i]]++;
    }
}

/* A row's keys gathered GM_VOTE_CHUNK at a time for gm_vote_keys: add each,
 * then flush the rest. */
typedef struct {
    const gm_multi *table;
    uint16_t *row;
    uint32_t n;
    uint32_t keys[GM_VOTE_CHUNK];
} gm_key_batch;

static inline void gm_batch_add(gm_key_batch *b, uint32_t key)
{
    b->keys[b->n++] = key;
    if (b->n == GM_VOTE_CHUNK) {
        gm_vote_keys(b->table, b->keys, b->n, b->row);
        b->n = 0;
    }
}

static inline void gm_batch_flush(gm_key_batch *b)
{
    gm_vote_keys(b->table, b->keys, b->n, b->row);
    b->n = 0;
}

/* ---- affine.c: three-point bases and affine-invariant keys ---------------- */
#define GM_AFF_Q 16      /* cells per unit of the triangle's frame */
#define GM_AFF_LO (-1)   /* u and v kept in [GM_AFF_LO, GM_AFF_LO + GM_AFF_CELLS / GM_AFF_Q) */
#define GM_AFF_CELLS 48
#define GM_AFF_BINS 16   /* direction of M^T n, 22.5 degrees a bin */
#define GM_AFF_KEYS (1u << 16)

typedef struct {
    uint16_t a, b, c; /* corner indices, counter-clockwise */
} gm_tri;

typedef struct {
    gm_tri *t;
    uint32_t n;
} gm_tris;

/* The frame of triangle (a, b, c): M = [b - a, c - a], its inverse. */
typedef struct {
    float ax, ay;
    float m00, m01, m10, m11;
    float i00, i01, i10, i11;
} gm_aframe;

gm_aframe gm_aframe_of(gm_point a, gm_point b, gm_point c);
/* The affine-invariant key of p in frame f, or GM_KEY_EMPTY. */
uint32_t gm_aframe_key(const gm_aframe *f, gm_point p);
/* Counter-clockwise triangles (a, b, c) of pts whose sides ab and ac are in
 * [lmin, lmax] with sin(angle bac) >= min_sin, each kept with probability
 * prob (a hash of seed and the triangle), ordered by (a, b, c).  Caller
 * frees out->t. */
gm_status gm_tris_select_cpu(const gm_points *pts, float lmin, float lmax, float min_sin,
                             double prob, uint64_t seed, gm_tris *out);
/* The (key, triangle index) items: each triangle and every cloud point in
 * its key range, a key once per triangle.  Caller frees both. */
gm_status gm_tri_items_cpu(const gm_points *pts, const gm_tris *t, const gm_points *cloud,
                           uint32_t **keys, uint32_t **vals, uint32_t *n_items);
/* gm_vote_rows_cpu for triangles: each query triangle's row of votes over
 * the n_ref reference triangles, reduced to its best at once. */
gm_status gm_tri_vote_rows_cpu(const gm_multi *table, uint32_t n_ref, const float *share,
                               const gm_points *qpts, const gm_tri *qtris, uint32_t n_q,
                               const gm_points *qcloud, gm_candidate *best);
/* The affine map carrying triangle q onto triangle r; -1 when degenerate. */
int gm_affine_from_tris(const gm_point q[3], const gm_point r[3], double m[6]);

/* ---- transform.c ----------------------------------------------------------- */
/* Similarity [a -b tx; b a ty] carrying q0 -> r0 and q1 -> r1. */
void gm_similarity_from_pairs(double qx0, double qy0, double qx1, double qy1, double rx0,
                              double ry0, double rx1, double ry1, double m[6]);
/* Weighted least squares similarity minimizing sum w * (n . (M q - r))^2
 * (point-to-line); returns 0 on success, -1 when degenerate. */
int gm_similarity_fit_lines(const double *qx, const double *qy, const double *rx,
                            const double *ry, const double *nx, const double *ny,
                            const double *w, int n, double m[6]);
void gm_transform_apply(const double m[6], double x, double y, double *ox, double *oy);
/* 3x3 transforms (row-major, h[8] = 1 for a homography). */
void gm_h_from_m(const double m[6], double h[9]);
/* Is h a view a camera can take of a w x hgt query's plane: the line at
 * infinity outside the query, no mirror, at the corners and the centre a
 * local scale within GM_H_MAX_SCALE_RATIO of each other (a far side shrunk
 * to a third at the most, about 60 degrees of tilt) and a local stretch of
 * at most GM_H_MAX_ANISO?  Degenerate fits (the query folded onto a sliver
 * of edges) fail it. */
#define GM_H_MAX_SCALE_RATIO 3.0
#define GM_H_MAX_ANISO 3.0
int gm_h_plausible(const double h[9], int w, int hgt);
/* gm_h_apply, gm_h_normal and the fits' arithmetic: shared with the GPU. */
#include "fit_core.h"
/* Weighted point-to-line fit of the model (with a light point-to-point term),
 * h0 the current estimate (the homography is one Gauss-Newton step from it,
 * the other models are solved exactly).  0 on success, -1 when degenerate. */
int gm_model_fit_lines(gm_model model, const double *qx, const double *qy, const double *rx,
                       const double *ry, const double *nx, const double *ny, const double *w,
                       int n, const double h0[9], double h[9]);

/* ---- verify.c: edge-orientation map of the reference ------------------------ */
typedef struct {
    int w, h;
    uint16_t *mask;      /* [w*h] orientation bins of edges within the radius */
    int32_t *nearest;    /* [w*h] index into pts of an edge point at this pixel, or -1 */
    gm_points pts;       /* the reference edge pixels, sub-pixel */
    float *dir;          /* [2 * pts.n] unit gradient (cos, sin) of each point */
} gm_edge_map;

/* The orientation mask over the reference's edge points `all` (borrowed:
 * the map keeps a copy). */
gm_status gm_edge_map_build_cpu(const gm_points *all, int w, int h, int radius,
                                gm_edge_map *map);
void gm_edge_map_free(gm_edge_map *map);

typedef struct {
    uint32_t total;     /* query points tested */
    uint32_t hits;      /* landed on a reference edge of agreeing direction */
    uint32_t bg_hits;   /* hits with the direction turned 90 degrees: the chance level */
    double confidence;  /* (hits - bg) / (total - bg), clamped to 0..1 */
} gm_verify_score;

gm_verify_score gm_verify_cpu(const gm_edge_map *map, const gm_points *q, const double m[6]);
/* The same score with a 1-pixel, 20-degree test: for refined transforms. */
gm_verify_score gm_verify_strict_cpu(const gm_edge_map *map, const gm_points *q, const double m[6]);
/* Point-to-line refinement of m on the query points; iterations of IRLS. */
void gm_refine_cpu(const gm_edge_map *map, const gm_points *q, double m[6], int iters);
/* The same for any model, on a 3x3 h. */
void gm_refine_model_cpu(const gm_edge_map *map, const gm_points *q, gm_model model, double h[9],
                         int iters);
gm_verify_score gm_verify_strict_h_cpu(const gm_edge_map *map, const gm_points *q, const double h[9]);
/* Region growing (src/verify.c): h, right near a seed (x, y; its triangle's
 * longer side s), refined to model on the points of q within a radius of
 * the seed, from max(GM_GROW_START s, GM_GROW_MIN_PX) by steps of
 * GM_GROW_STEP (GM_GROW_STEP_ITERS iterations each) until the disc holds
 * every point, then GM_GROW_FINAL_ITERS iterations on all of q.  A point is
 * in the disc when dx^2 + dy^2 <= r^2 (the same test on the GPU). */
#define GM_GROW_STEP 1.15
#define GM_GROW_START 0.5 /* of the triangle's longer side */
#define GM_GROW_MIN_PX 24.0
#define GM_GROW_STEP_ITERS 4
#define GM_GROW_FINAL_ITERS 10
void gm_grow_model_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                       const double seed[3], double h[9]);
/* How far the corners of a w x hgt query under h (a similarity, an affine or
 * a homography, as model says) move when a quarter of the query's points is
 * left out (each quadrant in turn, gm_quadrant; the fit refined from h on
 * the rest, GM_SPREAD_ITERS iterations): the largest move of a corner, in
 * the map's pixels.  gm_corner_moves: that largest move, given the four
 * refits hq. */
#define GM_SPREAD_ITERS 4
double gm_corner_spread_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                            const double h[9], int w, int hgt);
double gm_corner_moves(const double h[9], const double hq[4][9], int w, int hgt);
/* How well the edges pin a transform down: the standard deviation, in the
 * map's pixels, of the worst-placed corner of a w x hgt query under h, from
 * the normal matrix of the point-to-line residuals of its partners (within
 * 1 pixel) for a small similarity after h.  Edges that all run one way (a
 * straight line) or along one arc leave a direction free and the corners
 * uncertain; INFINITY when a direction is unconstrained. */
#define GM_SIGMA_PX 0.5             /* a partner's noise, pixels */
#define GM_SIGMA_PIXELS_PER_OBS 8.0 /* edge pixels per independent measurement */
double gm_corner_sigma_cpu(const gm_edge_map *map, const gm_points *q, const double h[9], int w,
                           int hgt);


#endif
