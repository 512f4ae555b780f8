/* points.h: edge pixels as sub-pixel points with a direction, and a spread
 * sample of them (points.c). */
#ifndef GM_POINTS_H
#define GM_POINTS_H

#include "stages/sobel.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/* cs[2i], cs[2i + 1] = cosf, sinf of point i's angle: made once where a
 * point meets many transforms or frames (the refinement's iterations, the
 * triangles' keys, the edge map's directions). */
void gm_points_cs(const gm_points *pts, float *cs);

#ifdef __cplusplus
}
#endif

#endif
