/* affine_core.h: the triangles' per-point rules, shared by the CPU
 * (affine.c) and the GPU (src/cuda/vote.cu's triangle vote).  Static inline
 * GM_HD functions: both sides evaluate the same float and double
 * expressions (the CUDA side with --fmad=false), so every key, and every
 * vote made from them, is the same.
 *
 * What must come from the host: a triangle's frame (gm_aframe_of, its
 * float divisions made once) and the cosines and sines of the points'
 * angles (cosf and sinf of glibc and CUDA differ by an ulp). */
#ifndef GM_AFFINE_CORE_H
#define GM_AFFINE_CORE_H

#include <math.h>
#include <stdint.h>

#include "common/common.h"
#include "stages/points.h"
#include "stages/bases.h"

#define GM_AFF_Q 16      /* cells per unit of the triangle's frame */
#define GM_AFF_LO (-1)   /* u and v kept in [GM_AFF_LO, GM_AFF_LO + GM_AFF_CELLS / GM_AFF_Q) */
#define GM_AFF_CELLS 48
#define GM_AFF_BINS 16   /* direction of M^T n, 22.5 degrees a bin */
#define GM_AFF_KEYS (1u << 16)
#if GM_AFF_BINS != 16
#error "gm_aff_bin assumes 16 direction bins, 4 a quadrant"
#endif

/* The frame of triangle (a, b, c): M = [b - a, c - a], its inverse. */
typedef struct {
    float ax, ay;
    float m00, m01, m10, m11;
    float i00, i01, i10, i11;
} gm_aframe;

/* A triangle as the device's vote reads it: its frame and its other two
 * vertices (the first is the frame's origin), for gm_near_vertex. */
typedef struct {
    gm_aframe f;
    float bx, by, cx, cy;
} gm_tri_frame;

/* The direction bin of (nx, ny) in [0, GM_AFF_BINS), 22.5 degrees a bin
 * counter-clockwise from +x, each bin closed at its start.  Decided on the
 * diamond angle d in [0, 4), which grows with the angle: the quadrant q =
 * floor(d) (half-open, [0, 90) degrees is q = 0: x > 0 and y >= 0), and
 * within it f = d - q = sin(phi) / (cos(phi) + sin(phi)) of the angle phi
 * past the quadrant's start, whose bins end at f = 1 - sqrt(1/2), 1/2,
 * sqrt(1/2) and 1.  Every step is an IEEE double operation on the floats'
 * exact values (a sum, an absolute value, one correctly rounded division,
 * comparisons), so the host and the device give the same bin bit for bit:
 * atan2f, which glibc and CUDA round differently, is not needed.  It is
 * floorf(atan2f(ny, nx) * GM_AFF_BINS / 2 pi) mod GM_AFF_BINS but within
 * rounding of a bin's end (under 1e-6 rad: tests/unit/test_affine.c; a
 * negative 640x360 frame, 2,159,865 bins: 1 differs, docs/speed.md).
 * (0, 0) and non-finite directions: bin 0. */
static inline GM_HD int gm_aff_bin(float nx, float ny)
{
    const double x = nx, y = ny, ax = fabs(x), ay = fabs(y), s = ax + ay;
    if (!(s > 0) || !(s <= 1.7976931348623157e308))
        return 0;
    int q;
    double f;
    if (x > 0 && y >= 0)
        q = 0, f = ay / s;
    else if (x <= 0 && y > 0)
        q = 1, f = ax / s;
    else if (x < 0 && y <= 0)
        q = 2, f = ay / s;
    else /* x >= 0, y < 0 */
        q = 3, f = ax / s;
    int local = f < 0.29289321881345247560 ? 0 : f < 0.5 ? 1 : f < 0.70710678118654752440 ? 2 : 3;
    return 4 * q + local;
}

/* The affine-invariant key of point p in frame f, from c = cosf(p.angle)
 * and s = sinf(p.angle) made on the host, or GM_KEY_EMPTY.  Bits 0..5 the
 * u cell, 6..11 the v cell, 12..15 the direction bin of M^T n. */
static inline GM_HD uint32_t gm_aframe_key_cs(const gm_aframe *f, gm_point p, float c, float s)
{
    float dx = p.x - f->ax, dy = p.y - f->ay;
    float u = f->i00 * dx + f->i01 * dy, v = f->i10 * dx + f->i11 * dy;
    float fu = floorf((u - GM_AFF_LO) * GM_AFF_Q), fv = floorf((v - GM_AFF_LO) * GM_AFF_Q);
    if (!(fu >= 0 && fu < GM_AFF_CELLS && fv >= 0 && fv < GM_AFF_CELLS))
        return GM_KEY_EMPTY;
    float nx = f->m00 * c + f->m10 * s, ny = f->m01 * c + f->m11 * s; /* M^T n */
    return (uint32_t)fu | (uint32_t)fv << 6 | (uint32_t)gm_aff_bin(nx, ny) << 12;
}

/* Points this close to a vertex say nothing (every triangle has them). */
static inline GM_HD int gm_near_vertex(float ax, float ay, float bx, float by, float cx, float cy,
                                       gm_point p)
{
    const float r2 = GM_ENDPOINT_EXCL * GM_ENDPOINT_EXCL;
    float d0 = (p.x - ax) * (p.x - ax) + (p.y - ay) * (p.y - ay);
    float d1 = (p.x - bx) * (p.x - bx) + (p.y - by) * (p.y - by);
    float d2 = (p.x - cx) * (p.x - cx) + (p.y - cy) * (p.y - cy);
    return d0 < r2 || d1 < r2 || d2 < r2;
}

#endif
