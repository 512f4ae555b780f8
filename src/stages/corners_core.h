/* corners_core.h: internal.  The formulas of the corner stage that the CPU
 * (src/stages/corners.c) and its CUDA twin (src/cuda/corners.cu) share, so that both
 * give the same points bit for bit.  Each is one IEEE float expression
 * evaluated left to right: the CPU build contracts no multiply-add (C11 mode
 * implies -ffp-contract=off, and x86-64 has no FMA by default) and
 * src/cuda/corners.cu is compiled with --fmad=false; sqrtf and '/' are the IEEE
 * round-to-nearest ones on both (nvcc's default -prec-sqrt / -prec-div).
 *
 * What the device must also reproduce, outside these functions:
 *   box sums     rows then columns, each tap sum from 0 in the order
 *                k = -GM_CORNER_WIN .. GM_CORNER_WIN (gm_corner_box).
 *   best         the largest response over the image, at least 0.
 *   candidates   gm_corner_is_max inside GM_CORNER_MARGIN, sorted by response
 *                descending, then y ascending, then x ascending.
 *   suppression  greedy in that order with the grid below; a grid cell holds
 *                the LAST kept corner whose integer pixel falls in it (two kept
 *                corners can share a cell: the check uses the kept corner's
 *                sub-pixel position), and only the 5 x 5 cells around a
 *                candidate's cell are checked; at most `target` kept. */
#ifndef GM_CORNERS_CORE_H
#define GM_CORNERS_CORE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

#ifndef GM_CORNER_WIN
#define GM_CORNER_WIN 2          /* structure tensor window: 5x5 */
#endif
#define GM_CORNER_MARGIN 4       /* corners this close to the border are dropped */
#define GM_CORNER_REL 0.001f     /* response at least this fraction of the image's best */
#ifndef GM_CORNER_RADIUS
#define GM_CORNER_RADIUS 20.0f   /* suppression radius, working pixels */
#endif
/* grid pitch rad/sqrt(2): all kept corners within rad of a candidate lie in
 * the 5x5 cells around it */
#define GM_CORNER_PITCH (GM_CORNER_RADIUS * 0.70710678f)

/* The structure-tensor products of one pixel, gradients scaled down so the
 * sums stay well inside float precision (exact: a power of two). */
static inline GM_HD void gm_corner_products(int16_t gx, int16_t gy, float *xx, float *yy, float *xy)
{
    float fx = gx * (1.0f / 64), fy = gy * (1.0f / 64);
    *xx = fx * fx;
    *yy = fy * fy;
    *xy = fx * fy;
}

/* Edge replication: coordinate v clamped to [0, n). */
static inline GM_HD int gm_corner_clamp(int v, int n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

/* The box sum of radius GM_CORNER_WIN around sample i of a line of n samples
 * `stride` floats apart starting at s (a row: stride 1; a column: stride w). */
static inline GM_HD float gm_corner_box(const float *s, int i, int n, size_t stride)
{
    float acc = 0;
    for (int k = -GM_CORNER_WIN; k <= GM_CORNER_WIN; k++)
        acc += s[(size_t)gm_corner_clamp(i + k, n) * stride];
    return acc;
}

/* Minimum eigenvalue of the structure tensor [a b; b c]. */
static inline GM_HD float gm_corner_response(float a, float b, float c)
{
    float hm = 0.5f * (a - c);
    return 0.5f * (a + c) - sqrtf(hm * hm + b * b);
}

/* The relative floor under which no candidate is taken. */
static inline GM_HD float gm_corner_floor(float best)
{
    return best * GM_CORNER_REL;
}

/* Pixel i (not on the outer ring) of a response map w wide is a candidate:
 * above the floor and positive, at least its upper-left neighbours and above
 * its lower-right ones (a plateau yields one pixel, its first in raster
 * order; no two 8-neighbours both pass, so at most one pixel of each 2 x 2
 * block does). */
static inline GM_HD int gm_corner_is_max(const float *resp, size_t i, int w, float floor_r)
{
    float r = resp[i];
    if (r <= floor_r || r <= 0)
        return 0;
    return !(r < resp[i - 1] || r <= resp[i + 1] || r < resp[i - w - 1] || r < resp[i - w] ||
             r < resp[i - w + 1] || r <= resp[i + w - 1] || r <= resp[i + w] ||
             r <= resp[i + w + 1]);
}

/* Candidates of a w x h image can be at most this many (one per 2 x 2 block
 * of the part inside the margin). */
static inline GM_HD size_t gm_corner_max_candidates(int w, int h)
{
    if (w <= 2 * GM_CORNER_MARGIN || h <= 2 * GM_CORNER_MARGIN)
        return 0;
    return (size_t)((w - 2 * GM_CORNER_MARGIN + 1) / 2) * (size_t)((h - 2 * GM_CORNER_MARGIN + 1) / 2);
}

/* The suppression grid cell of integer coordinate v; a w-wide image has
 * gm_corner_cell(w) + 1 columns. */
static inline GM_HD int gm_corner_cell(int v)
{
    return (int)(v / GM_CORNER_PITCH);
}

/* A kept corner at (kx, ky) suppresses the candidate at pixel (x, y). */
static inline GM_HD int gm_corner_near(float kx, float ky, int x, int y)
{
    float dx = kx - x, dy = ky - y;
    return dx * dx + dy * dy < GM_CORNER_RADIUS * GM_CORNER_RADIUS;
}

/* Sub-pixel position of the corner at pixel (x, y), index i: a parabola
 * through the responses along each axis, the offset clamped to half a pixel. */
static inline GM_HD void gm_corner_subpixel(const float *resp, size_t i, int w, int x, int y,
                                            float *px, float *py)
{
    float l = resp[i - 1], r = resp[i + 1], u = resp[i - w], d = resp[i + w], c = resp[i];
    float ox = 0, oy = 0, den = l - 2 * c + r;
    if (den < 0)
        ox = 0.5f * (l - r) / den;
    den = u - 2 * c + d;
    if (den < 0)
        oy = 0.5f * (u - d) / den;
    *px = x + (ox < -0.5f ? -0.5f : ox > 0.5f ? 0.5f : ox);
    *py = y + (oy < -0.5f ? -0.5f : oy > 0.5f ? 0.5f : oy);
}

/* The corner's direction: the Sobel gradient at its pixel.  HOST ONLY (the
 * CUDA twin computes it on the host too): the C library's atan2f and CUDA's
 * differ in the last bit. */
static inline float gm_corner_angle(int16_t gx, int16_t gy)
{
    return atan2f((float)gy, (float)gx);
}

#endif
