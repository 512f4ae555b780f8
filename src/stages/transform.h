/* transform.h: similarities, 3x3 transforms and the model fits
 * (transform.c; gm_h_apply, gm_h_normal and the fits' arithmetic, shared
 * with the GPU, in fit_core.h). */
#ifndef GM_TRANSFORM_H
#define GM_TRANSFORM_H

#include "common/common.h"
#include "stages/fit_core.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/* The inverse of the 3x3 h (0), or -1 when h is singular. */
int gm_h_inverse(const double h[9], double hi[9]);
/* The same scaled so that hi[8] = 1 (a transform's convention), or -1 when
 * h is singular or its inverse has hi[8] = 0. */
int gm_h_invert(const double h[9], double hi[9]);
/* The region a qw x qh query and a rw x rh reference share under h (query
 * pixels -> reference pixels; images span [0, w] x [0, h]): share[0] the
 * share of the query's area that lies on the reference, share[1] the share
 * of the reference's area that the query covers.  The query's outline is
 * carried onto the reference and clipped to it (a homography keeps lines
 * straight, so the clipped polygon carried back is the shared part of the
 * query).  Where the line at infinity of h crosses the query, the side
 * of it that shares more with the reference (the plane seen in front). */
void gm_overlap(const double h[9], int qw, int qh, int rw, int rh, double share[2]);
/* The region gm_overlap measures, in query pixels: its n vertices (at
 * most 16) in px, py; 0 when the two share nothing. */
int gm_overlap_poly(const double h[9], int qw, int qh, int rw, int rh, double px[16], double py[16]);
/* 1 when the line at infinity of h (query pixels -> reference pixels)
 * crosses or touches the w x hgt query: part of the query is carried to
 * infinity and beyond, and the query's corners carried by h say nothing
 * of where the query lies on the reference. */
int gm_h_horizon_crosses(const double h[9], int w, int hgt);
/* Weighted point-to-line fit of the model (with a light point-to-point term),
 * h0 the current estimate (the homography is one Gauss-Newton step from it,
 * the other models are solved exactly).  0 on success, -1 when degenerate. */
int gm_model_fit_lines(gm_model model, const double *qx, const double *qy, const double *rx,
                       const double *ry, const double *nx, const double *ny, const double *w,
                       int n, const double h0[9], double h[9]);

#ifdef __cplusplus
}
#endif

#endif
