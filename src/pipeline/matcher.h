/* matcher.h: what the reference side (src/pipeline/reference.c) and the query side
 * (src/pipeline/matcher.c) of the pipeline share: the prepared reference, its
 * pyramid levels, and the per-image stages up to the corners ("side"),
 * which run on the CPU or on a GPU lane (src/cuda/pipeline.h).  Internal. */
#ifndef GM_MATCHER_H
#define GM_MATCHER_H

#include <omp.h>

#include "stages/sobel.h"
#include "stages/points.h"
#include "stages/affine.h"
#include "stages/verify.h"
#ifdef GMATCH_WITH_CUDA
#include "cuda/pipeline.h"
#endif

#define GM_LEVELS 2        /* pyramid levels: working size, half of it */
/* Fine levels: a reference larger than the working size is also indexed at
 * finer factors (f0/2, f0/4, ... down to the source pixels), so that a
 * query showing a small part of it meets that part at a comparable size.
 * Their points and corners keep level 0's density per area, and their
 * bases are local (at most GM_FINE_LMAX_REL of level 0's diagonal long,
 * so that a basis sees the points within twice that), which keeps the
 * bases and the table's items linear in the area (docs/photo.md). */
#define GM_FINE_LEVELS 3
#define GM_ALL_LEVELS (GM_LEVELS + GM_FINE_LEVELS)
#define GM_FINE_LMAX_REL 0.125f
/* Triangles: the fine levels' side band at every level, kept with this
 * probability, angle at a between 30 and 150 degrees. */
#define GM_TRI_PROB 0.1
#define GM_TRI_MIN_SIN 0.5f
#ifndef GM_FINE_BASIS_SHARE
#define GM_FINE_BASIS_SHARE 0.5 /* of ref_basis_prob: a fine level's table stays short */
#endif
#define GM_MIN_LEVEL_SIDE 48 /* a level smaller than this a side is skipped */

typedef struct {
    int ok;            /* the level exists (image big enough) */
    int f;             /* downscale factor: working pixel X is source pixel f*X + (f-1)/2 */
    int w, h;
    float lmin, lmax;  /* basis lengths, this level's pixels */
    gm_points corners;
    gm_compact bases;  /* two-way index: basis key <-> dense index */
    gm_multi table;    /* (u, v, dir) -> dense basis indices */
    float *share;      /* [bases] each basis's fraction of the table's items */
    int fine;          /* a fine level: verified on its own map, on the host */
    /* three-point bases and their affine-invariant table (src/stages/affine.c),
     * for the models with more freedom than a similarity; host stages */
    gm_tris tris;
    gm_multi ttable;   /* affine key -> triangle indices */
    float *tshare;     /* [tris] each triangle's fraction of the table's items */
    float tlmin, tlmax; /* triangle side lengths, this level's pixels */
    gm_edge_map map;   /* a fine level's edge directions (level 0's is the reference's) */
#ifdef GMATCH_WITH_CUDA
    gm_gpu_level *gpu; /* the index and the table on the device (GPU path: bases.unique only on the host) */
#endif
} ref_level;

struct gm_ref {
    gm_params p;
    ref_level lv[GM_ALL_LEVELS]; /* [0, GM_LEVELS): working size and half; then fine, coarse to fine */
    gm_edge_map map;   /* level 0 edge directions, for verification */
    double prep_ms;
    char err[256];
    char device[320]; /* what runs the matching, for -v */
#ifdef GMATCH_WITH_CUDA
    gm_gpu *gpu;       /* NULL: the CPU path */
#endif
};

/* Verification radius in working pixels: JPEG, noise and one cell of
 * quantization move edges by about a pixel. */
#define GM_VERIFY_RADIUS 2

static inline double gm_now_ms(void) { return omp_get_wtime() * 1000.0; }

/* Everything the query and the reference share up to the bases. */
typedef struct {
    int f, w, h;
    uint8_t *work;     /* downscaled copy, NULL when f == 1 */
    gm_view view;      /* working image */
    gm_edges edges;
    uint32_t *idx;
    uint32_t n_idx;
    gm_points all;     /* every edge pixel, sub-pixel */
    gm_points cloud;   /* spread sample that votes / fills the table */
    gm_points corners; /* basis endpoints */
} side;

/* Edges, points, spread and corners of img at pyramid level `extra` (1: the
 * working size, 2: half of it), on the CPU or on the GPU lane gpu (NULL: the
 * CPU).  On error s is freed and err says why. */
gm_status gm_side_build(void *gpu, const gm_params *p, gm_view img, int extra,
                        uint32_t cloud_target, uint32_t corner_target, side *s, char *err,
                        size_t errlen);
/* The same at downscale factor f of the source, edges capped at max_edges. */
gm_status gm_side_build_f(void *gpu, gm_view img, int f, int64_t max_edges, uint32_t cloud_target,
                          uint32_t corner_target, side *s, char *err, size_t errlen);
void gm_side_free(side *s);

#endif
