/* verify.h: the reference's edge-orientation map, the verification of a
 * transform on it, its refinement and the tests of how well the edges pin it
 * down (verify.c; the formulas shared with the GPU in verify_core.h). */
#ifndef GM_VERIFY_H
#define GM_VERIFY_H

#include "stages/points.h"
#include "stages/transform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reach bits' widest radius: GM_REFINE_MAX_R (verify_core.h, which
 * checks it), and the 64-bit words of a row of them. */
#define GM_REACH_R 3
#define GM_REACH_WORDS(w) (((size_t)(w) + 63) / 64)

typedef struct {
    int w, h;
    int radius;          /* of the dilation that makes mask */
    uint16_t *mask;      /* [w*h] orientation bins of edges within the radius */
    int32_t *nearest;    /* [w*h] index into pts of an edge point at this pixel, or -1 */
    uint64_t *reach[GM_REACH_R]; /* reach[k]: [h * GM_REACH_WORDS(w)] a bit a pixel, rows
                          * of whole words: an edge point's pixel within k + 1 pixels
                          * (Chebyshev), up to the refinement's widest window
                          * (gm_reach_bit) */
    gm_points pts;       /* the reference edge pixels, sub-pixel */
    float *dir;          /* [2 * pts.n] unit gradient (cos, sin) of each point */
    int filled;          /* mask and nearest made (atomic: gm_edge_map_pixels) */
} gm_edge_map;

/* The orientation mask over the reference's edge points `all` (borrowed:
 * the map keeps a copy): gm_edge_map_points, then gm_edge_map_fill_cpu. */
gm_status gm_edge_map_build_cpu(const gm_points *all, int w, int h, int radius,
                                gm_edge_map *map);
/* A map of w x h pixels without its pixels: the points `all` copied, their
 * directions, the radius; mask and nearest NULL until filled.  A device
 * makes its own pixels from the points (verify_cuda.h), so a reference on
 * a GPU leaves the host's unmade until a host stage needs them. */
gm_status gm_edge_map_points(const gm_points *all, int w, int h, int radius, gm_edge_map *map);
/* The pixels of a map made by gm_edge_map_points (not thread-safe). */
gm_status gm_edge_map_fill_cpu(gm_edge_map *map);
/* The pixels of map made once, however many threads ask at once (map is
 * shared by a reference's queries; the first to need them makes them):
 * GM_OK when they are there. */
gm_status gm_edge_map_pixels(const gm_edge_map *map);
void gm_edge_map_free(gm_edge_map *map);

typedef struct {
    uint32_t total;     /* query points tested */
    uint32_t inside;    /* of them, those the transform carries into the shared region
                           (verify_core.h): the others neither hit nor count */
    uint32_t hits;      /* landed on a reference edge of agreeing direction */
    uint32_t bg_hits;   /* hits with the direction turned 90 degrees: the chance level */
    double confidence;  /* (hits - bg) / (max(inside, GM_SHARED_FLOOR total) - bg),
                           clamped to 0..1: the share of the shared region explained */
    double whole;       /* (hits - bg) / (total - bg), clamped: the share of the whole query
                           explained, which ranks candidates (matcher.c) */
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
/* nt transforms h[9 t..] refined together, each as gm_refine_model_cpu
 * refines it (the same numbers bit for bit: each point's partner in its own
 * slot, each fit in the points' order), then, scores not NULL, scored as
 * gm_verify_strict_h_cpu scores it into scores[t]: an iteration's partner
 * searches of every transform still refining in one parallel loop, then
 * their fits side by side.  For fewer transforms than threads, where one
 * transform a thread leaves cores idle (the decision's refinements of one
 * to a few transforms on a machine of many cores). */
void gm_refine_models_cpu(const gm_edge_map *map, const gm_points *q, gm_model model, double *h,
                          int iters, int nt, gm_verify_score *scores);
/* Region growing (src/stages/verify.c): h, right near a seed (x, y; its triangle's
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
/* nt growths h[9 t..] from seeds[3 t..], each as gm_grow_model_cpu grows it
 * (the same numbers bit for bit), then, scores not NULL, scored as
 * gm_verify_strict_h_cpu scores it: the growths still stepping take their
 * next steps together (gm_refine_models_cpu's way: every disc's partner
 * searches in one parallel loop, then the fits side by side), then their
 * final refinements together.  For fewer growths than threads. */
void gm_grow_models_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                        const double *seeds, double *h, int nt, gm_verify_score *scores);
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
/* The largest move of a w x hgt query's corners from a to b (3x3 each). */
double gm_corner_move(const double a[9], const double b[9], int w, int hgt);
/* How well the edges pin a transform down: the standard deviation, in the
 * map's pixels, of the worst-placed corner of a w x hgt query under h, from
 * the normal matrix of the point-to-line residuals of its partners (within
 * 1 pixel) for a small change of the model after h (a similarity, an
 * affine or a homography, as model says), taken at the ne points (ex, ey)
 * of the query (the corners of the region it shares with the reference:
 * gm_overlap_poly), or at its four corners when ne < 3.  Edges that all run one way (a
 * straight line) or along one arc leave a direction free and the corners
 * uncertain; INFINITY when a direction is unconstrained. */
#define GM_SIGMA_PX 0.5             /* a partner's noise, pixels */
#define GM_SIGMA_PIXELS_PER_OBS 8.0 /* edge pixels per independent measurement */
/* rms (when not NULL): the root mean square point-to-line residual of those
 * partners, the same pixels (NAN for none). */
double gm_corner_sigma_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                           const double h[9], int w, int hgt, const double *ex, const double *ey,
                           int ne, double *rms);
/* The reported bound on the shared region's mean corner error, the map's
 * pixels (gmatch.h, uncertainty_px), from gm_corner_sigma_cpu's sigma:
 * GM_UNC_K sigmas, and GM_UNC_FLOOR map pixels for what the fit cannot see
 * (the resampling of the levels, blur, the edges' own placement), added in
 * quadrature.  Calibrated on sets of other images than the benches'
 * (docs/calibration.md, "Uncertainty"): the fit's residual, tried as a
 * scale of sigma, covered no more. */
#define GM_UNC_K 2.0
#define GM_UNC_FLOOR 0.5
double gm_uncertainty_px(double sigma);

#ifdef __cplusplus
}
#endif

#endif
