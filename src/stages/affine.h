/* affine.h: three-point bases and their affine-invariant keys (affine.c). */
#ifndef GM_AFFINE_H
#define GM_AFFINE_H

#include "hash/cuckoo.h"
#include "stages/points.h"
#include "stages/reduce.h"
#include "stages/affine_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint16_t a, b, c; /* corner indices, counter-clockwise */
} gm_tri;

typedef struct {
    gm_tri *t;
    uint32_t n;
} gm_tris;

/* The frame of triangle (a, b, c) (affine_core.h: the frame, the direction
 * bin gm_aff_bin and the key gm_aframe_key_cs, the device's too). */
gm_aframe gm_aframe_of(gm_point a, gm_point b, gm_point c);
/* The same with its other two vertices, as the device's vote reads it. */
gm_tri_frame gm_tri_frame_of(gm_point a, gm_point b, gm_point c);
/* The affine-invariant key of p in frame f, or GM_KEY_EMPTY
 * (gm_aframe_key_cs on the point's own cosine and sine). */
uint32_t gm_aframe_key(const gm_aframe *f, gm_point p);
/* How many of a query's `have` corners (the strongest first) its triangles
 * are drawn from: `want` (the level's density on the query's area), at least
 * `least`, never more than it has.  (A near-blank view with 6 corners once
 * got 12: the triangles read 6 points past the list.) */
uint32_t gm_tri_corners_kept(uint32_t have, double want, uint32_t least);
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

#ifdef __cplusplus
}
#endif

#endif
