/* verify_core.h: the per-point rules of verification and refinement, shared
 * by the CPU (verify.c) and the GPU (src/cuda/verify.cu).  Static inline GM_HD
 * functions: both sides evaluate the same float/double expressions (the
 * CUDA side with --fmad=false, lrint rounding half to even on both), so the
 * counts, and the scores made from them, are the same numbers.
 *
 * What must come from the host: the cosines and sines of the query angles
 * (cosf/sinf of glibc and CUDA differ by an ulp) and the rotation of a
 * similarity (atan2). */
#ifndef GM_VERIFY_CORE_H
#define GM_VERIFY_CORE_H

#include <math.h>
#include <stdint.h>

#include "common/common.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/verify.h"

/* The reference's edge map as the per-point functions read it: borrowed
 * arrays of a gm_edge_map (host) or of its device copy. */
typedef struct {
    int w, h;
    const uint16_t *mask;   /* [w*h] */
    const int32_t *nearest; /* [w*h] */
    const gm_point *pts;    /* [n] */
    const float *dir;       /* [2n] (cos, sin) */
    /* Where the host has them (the GPU's views leave them NULL):
     * gm_edge_map's reach bits, which only let a search that cannot find
     * anything stop at once (gm_map_empty). */
    const uint64_t *reach[GM_REACH_R]; /* each [h * GM_REACH_WORDS(w)] */
} gm_map_view;

/* Pixel (x, y)'s bit of one of gm_edge_map's reach maps. */
static inline GM_HD int gm_reach_bit(const uint64_t *reach, int w, long x, long y)
{
    return (int)((reach[(size_t)y * GM_REACH_WORDS(w) + ((size_t)x >> 6)] >> (x & 63)) & 1);
}

/* No reference point's pixel within Chebyshev distance r of pixel (ix,
 * iy), an in-bounds one: 1 when the view can tell (its reach bits, r from
 * 1 to GM_REACH_R), else 0.  Then a window of radius r around (ix, iy)
 * holds no nearest[] entry, and the search over it finds nothing: skipping
 * it changes no number.  The CPU's refinement ran a full window for every
 * point a wrong transform carries off the edges (the rivals': a
 * 2026-11-30 count over the public stills, 10 of 37 million searches of
 * radius 2 over an empty window).  One bit a pixel, where the mask's 16
 * (which can tell as much for radius 2) cost a reference photograph's
 * query a cache miss a search. */
static inline GM_HD int gm_map_empty(const gm_map_view *map, long ix, long iy, int r)
{
    return r >= 1 && r <= GM_REACH_R && map->reach[r - 1] &&
           !gm_reach_bit(map->reach[r - 1], map->w, ix, iy);
}

static inline GM_HD int gm_angle_bin(float a)
{
    int b = (int)floorf(a * (float)(GM_ANGLE_BINS / (2 * GM_PI)) + 0.5f);
    return b & (GM_ANGLE_BINS - 1);
}

/* mask with bins b-1, b, b+1 */
static inline GM_HD uint16_t gm_bin3(int b)
{
    const int n = GM_ANGLE_BINS;
    return (uint16_t)(1u << (b & (n - 1)) | 1u << ((b + 1) & (n - 1)) | 1u << ((b + n - 1) & (n - 1)));
}

/* The shared region: a query point counts only where the transform carries
 * it inside the reference, GM_SHARED_MARGIN pixels in from its border (an
 * image's own border has no edges: a point there could not hit).  Edges of
 * the query outside the reference neither count for nor against a
 * candidate, so a query that shares only part of its area with the
 * reference (partial overlap, a reference inside a larger query) is judged
 * on that part.  The denominator is at least GM_SHARED_FLOOR of the points:
 * a candidate that carries nearly the whole query outside the reference,
 * leaving a handful of points that could agree by chance, gains nothing
 * from that (docs/scene.md: the floor's measurement). */
#define GM_SHARED_MARGIN 2
#define GM_SHARED_FLOOR 0.2

static inline GM_HD int gm_shared_inside(const gm_map_view *map, long ix, long iy)
{
    return ix >= GM_SHARED_MARGIN && iy >= GM_SHARED_MARGIN && ix < map->w - GM_SHARED_MARGIN &&
           iy < map->h - GM_SHARED_MARGIN;
}

/* The score of `total` points of which `inside` fell in the shared region,
 * with `hits` hits and `bg2` chance hits counted twice (once per
 * perpendicular direction): the confidence is the share of the shared
 * points above chance that hit, clamped to [0, 1]; 0 when no point is
 * above chance.  `whole` is the same share of all the points: how much of
 * the query a candidate explains, which ranks candidates against each other
 * (a wrong candidate that carries part of the query off the reference and
 * fits the rest must not outrank one that explains more of it; matcher.c). */
/* (hits - chance) / (den - chance) clamped to [0, 1]; 0 when den is not
 * above chance. */
static inline GM_HD double gm_share_above(uint32_t hits, double chance, double den)
{
    if (!(den > 0 && den > chance))
        return 0.0;
    double c = ((double)hits - chance) / (den - chance);
    return c < 0 ? 0 : c > 1 ? 1 : c;
}

static inline GM_HD gm_verify_score gm_score_of(uint32_t total, uint32_t inside, uint32_t hits,
                                                uint32_t bg2)
{
    gm_verify_score s = {0, 0, 0, 0, 0.0, 0.0};
    s.total = total;
    s.inside = inside;
    s.hits = hits;
    s.bg_hits = bg2 / 2;
    double chance = (double)bg2 / 2.0;
    double den = (double)inside;
    if (den < GM_SHARED_FLOOR * (double)total)
        den = GM_SHARED_FLOOR * (double)total;
    s.confidence = gm_share_above(hits, chance, den);
    s.whole = gm_share_above(hits, chance, (double)total);
    return s;
}

/* The loose test of one query point p under the similarity m (rot =
 * (float)atan2(m[3], m[0])): returns its hit (0 or 1), adds its chance
 * hits, the two perpendicular directions, to *bg2 and 1 to *in when it lies
 * in the shared region (a point outside it neither hits nor counts). */
static inline GM_HD uint32_t gm_verify_point(const gm_map_view *map, const double m[6], float rot,
                                             gm_point p, uint32_t *bg2, uint32_t *in)
{
    const int quarter = GM_ANGLE_BINS / 4;
    double x = m[0] * p.x + m[1] * p.y + m[2], y = m[3] * p.x + m[4] * p.y + m[5];
    long ix = lrint(x), iy = lrint(y);
    if (!gm_shared_inside(map, ix, iy))
        return 0;
    *in += 1;
    uint16_t mk = map->mask[(size_t)iy * map->w + ix];
    int b = gm_angle_bin(p.angle + rot);
    *bg2 += (uint32_t)((mk & gm_bin3(b + quarter)) != 0) + (uint32_t)((mk & gm_bin3(b - quarter)) != 0);
    return (mk & gm_bin3(b)) != 0;
}

/* The strict test, for refined transforms: a hit needs a reference edge
 * point in the 3x3 pixels around the mapped point whose direction agrees
 * within GM_STRICT_DEG and whose edge line passes within GM_STRICT_DIST of it.
 * A true match, refined to sub-pixel, keeps most of its hits; a wrong one,
 * however busy the reference, keeps few.  GM_STRICT_COS is
 * (float)cos(GM_STRICT_DEG degrees), written out so that no cos runs on the
 * device (tests/unit/test_verify.c checks the value). */
#define GM_STRICT_DEG 20.0
#define GM_STRICT_COS 0.939692616f
#define GM_STRICT_DIST 1.0

static inline GM_HD int gm_strict_hit(const gm_map_view *map, double x, double y, float ca, float sa)
{
    long ix = lrint(x), iy = lrint(y);
    for (long yy = iy - 1; yy <= iy + 1; yy++) {
        if (yy < 0 || yy >= map->h)
            continue;
        for (long xx = ix - 1; xx <= ix + 1; xx++) {
            if (xx < 0 || xx >= map->w)
                continue;
            int32_t j = map->nearest[(size_t)yy * map->w + xx];
            if (j < 0)
                continue;
            gm_point e = map->pts[j];
            float ce = map->dir[2 * j], se = map->dir[2 * j + 1];
            if (ce * ca + se * sa < GM_STRICT_COS)
                continue;
            if (fabs(ce * (x - e.x) + se * (y - e.y)) <= GM_STRICT_DIST)
                return 1;
        }
    }
    return 0;
}

/* The strict test of query point p (cp, sp: cosf, sinf of its angle) under
 * h: returns its hit, adds its chance hits to *bg2 and 1 to *in when it
 * lies in the shared region (gm_verify_point). */
static inline GM_HD uint32_t gm_verify_strict_point(const gm_map_view *map, const double h[9],
                                                    gm_point p, float cp, float sp, uint32_t *bg2,
                                                    uint32_t *in)
{
    double x, y;
    gm_h_apply(h, p.x, p.y, &x, &y);
    if (!(x > -1e9 && x < 1e9 && y > -1e9 && y < 1e9) || !gm_shared_inside(map, lrint(x), lrint(y)))
        return 0;
    *in += 1;
    if (gm_map_empty(map, lrint(x), lrint(y), 1))
        return 0; /* no point in the 3x3 pixels of any of the three tests */
    float ca, sa;
    gm_h_normal(h, p.x, p.y, cp, sp, &ca, &sa);
    /* chance level: the perpendicular directions */
    *bg2 += (uint32_t)gm_strict_hit(map, x, y, -sa, ca) + (uint32_t)gm_strict_hit(map, x, y, sa, -ca);
    return (uint32_t)gm_strict_hit(map, x, y, ca, sa);
}

/* Refinement: each query point mapped by h is paired with the reference edge
 * point nearest to it within gm_refine_radius(it) pixels whose direction
 * agrees within 30 degrees; the model minimizing the point-to-line distances
 * (Huber weights, threshold gm_refine_huber(it) pixels) is solved; repeated
 * with a shrinking radius.  A refinement needs GM_REFINE_MIN_PAIRS pairs. */
#define GM_REFINE_COS 0.866f /* 30 degrees */
#define GM_REFINE_MIN_PAIRS 8

static inline GM_HD int gm_refine_radius(int it) { return it < 2 ? 3 : 2; }
#define GM_REFINE_MAX_R 3 /* the largest gm_refine_radius */
#if GM_REFINE_MAX_R > GM_REACH_R
#error "the reach bits must cover the widest refinement window"
#endif
static inline GM_HD double gm_refine_huber(int it) { return it < 2 ? 1.5 : 0.75; }

/* The corner spread test's quadrant of p in a w x hgt query (0 top left, 1
 * top right, 2 bottom left, 3 bottom right), the same on both devices. */
static inline GM_HD int gm_quadrant(gm_point p, int w, int hgt)
{
    return (p.x >= w / 2.0) + 2 * (p.y >= hgt / 2.0);
}

/* Region growing's disc test (gm_grow_model_cpu and its CUDA twin): the
 * squared distance of p from the seed (x, y), the same double operations on
 * both devices, so that both take the same points. */
static inline GM_HD double gm_grow_d2(gm_point p, const double seed[3])
{
    double dx = p.x - seed[0], dy = p.y - seed[1];
    return dx * dx + dy * dy;
}

/* One correspondence of the fit: query point, reference point, the
 * reference edge's unit normal, weight. */
typedef struct {
    double qx, qy, rx, ry, nx, ny, w;
} gm_corr;

/* The correspondence of query point p, mapped to (x, y), with its partner
 * (rx, ry) of unit normal (nx, ny): the point-to-line residual's Huber
 * weight.  The CPU's and the GPU's partner searches end here. */
static inline GM_HD void gm_corr_set(gm_corr *c, gm_point p, double x, double y, double rx,
                                     double ry, double nx, double ny, double huber)
{
    double res = fabs(nx * (x - rx) + ny * (y - ry));
    c->qx = p.x;
    c->qy = p.y;
    c->rx = rx;
    c->ry = ry;
    c->nx = nx;
    c->ny = ny;
    c->w = res < huber ? 1.0 : huber / res;
}

/* The partner of query point p (cp, sp: cosf, sinf of its angle) under h
 * within radius r; 1 and *c filled when there is one, else 0. */
static inline GM_HD int gm_refine_match(const gm_map_view *map, const double h[9], gm_point p,
                                        float cp, float sp, int r, double huber, gm_corr *c)
{
    double x, y;
    gm_h_apply(h, p.x, p.y, &x, &y);
    long ix = lrint(x), iy = lrint(y);
    if (ix < 0 || iy < 0 || ix >= map->w || iy >= map->h || gm_map_empty(map, ix, iy, r))
        return 0;
    float ca, sa;
    gm_h_normal(h, p.x, p.y, cp, sp, &ca, &sa);
    /* The nearest agreeing point in the (2r+1)^2 window, ties to the first
     * in row-major order (the GPU's refine_match_cells scans it so).  The
     * window is visited ring by ring from the centre: a point stored at a
     * pixel of ring k (Chebyshev distance k from (ix, iy)) rounds to it, so
     * it lies at least k - 1 from (x, y), and once the best is nearer than
     * that no later ring can win or tie.  A refinement that has converged
     * finds most partners within a pixel and reads 9 cells instead of 25 or
     * 49; the partner is the one the row-major scan finds. */
    double bestd = 1e30;
    int32_t best = -1;
    long bestpos = 0;
    for (int k = 0; k <= r; k++) {
        if (k >= 2 && bestd < (double)(k - 1) * (k - 1) - 1e-6)
            break;
        for (long dy = -k; dy <= k; dy++) {
            long yy = iy + dy;
            if (yy < 0 || yy >= map->h)
                continue;
            /* the ring's full top and bottom rows, its two ends on the others */
            long step = dy == -k || dy == k ? 1 : 2 * k;
            for (long dx = -k; dx <= k; dx += step) {
                long xx = ix + dx;
                if (xx >= 0 && xx < map->w) {
                    int32_t j = map->nearest[(size_t)yy * map->w + xx];
                    if (j >= 0 && map->dir[2 * j] * ca + map->dir[2 * j + 1] * sa >= GM_REFINE_COS) {
                        gm_point e = map->pts[j];
                        double ex = e.x - x, ey = e.y - y, d = ex * ex + ey * ey;
                        long pos = (dy + r) * (2 * r + 1) + (dx + r);
                        if (d < bestd || (d == bestd && pos < bestpos)) {
                            bestd = d;
                            best = j;
                            bestpos = pos;
                        }
                    }
                }
            }
        }
    }
    if (best < 0)
        return 0;
    gm_point e = map->pts[best];
    gm_corr_set(c, p, x, y, e.x, e.y, map->dir[2 * best], map->dir[2 * best + 1], huber);
    return 1;
}

#endif
