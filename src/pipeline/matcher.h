/* matcher.h: what the reference side (src/pipeline/reference.c) and the query side
 * (src/pipeline/matcher.c) of the pipeline share: the prepared reference, its
 * pyramid levels, and the per-image stages up to the corners ("side"),
 * which run on a lane of the reference's backend (backend.h).  Internal. */
#ifndef GM_MATCHER_H
#define GM_MATCHER_H

#include <omp.h>
#include <pthread.h>

#include "stages/sobel.h"
#include "stages/points.h"
#include "stages/affine.h"
#include "stages/verify.h"
#include "pipeline/backend.h"
#include "pipeline/placement.h"

/* The default --min-confidence (docs/calibration.md): gm_params_default's,
 * and the forward confidence below which the reverse search still runs
 * (direction.c), whatever threshold the caller set. */
#define GM_DEFAULT_MIN_CONFIDENCE 0.3
#define GM_LEVELS 2        /* pyramid levels: working size, half of it */
/* The query's pyramid: working size, half and a quarter of it (the quarter
 * pairs last, for a query enlarged 3 to 6 times against the reference) */
#define GM_QUERY_LEVELS 3
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
/* A fine level's edges and corners on the reference's device when the
 * square of its longer side is at most this (reference.c) */
#define GM_FINE_DEVICE_MAX_PX ((int64_t)2048 * 2048)
/* Triangles: the fine levels' side band at every level, kept with this
 * probability, angle at a between 30 and 150 degrees. */
#define GM_TRI_PROB 0.1
#define GM_TRI_MIN_SIN 0.5f
#ifndef GM_FINE_BASIS_SHARE
#define GM_FINE_BASIS_SHARE 0.5 /* of ref_basis_prob: a fine level's table stays short */
#endif
#define GM_MIN_LEVEL_SIDE 48 /* a level smaller than this a side is skipped */

/* Self-maps of a reference kept (selfmap.h), before their inverses. */
#define GM_SELF_MAX 4

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
     * for the models with more freedom than a similarity: the triangles
     * drawn on the host, the table where the backend keeps it (tri_level) */
    gm_tris tris;
    gm_multi ttable;   /* affine key -> triangle indices (CPU; empty on CUDA) */
    float *tshare;     /* [tris] each triangle's fraction of the table's items (CPU) */
    void *tdev;        /* the table on the backend's device, NULL on the CPU */
    float tlmin, tlmax; /* triangle side lengths, this level's pixels */
    gm_edge_map map;   /* a fine level's edge directions (level 0's is the reference's) */
    void *dev;         /* the level on the backend's device (its index, table and map;
                          bases.unique only on the host), NULL on the CPU */
} ref_level;

/* A reference as the matcher sees it, on one backend: its parameters,
 * levels, maps, tables and self-maps.  The matcher (matcher.c) searches a
 * const gm_index and knows nothing of where it lives. */
typedef struct gm_index {
    gm_params p;
    ref_level lv[GM_ALL_LEVELS]; /* [0, GM_LEVELS): working size and half; then fine, coarse to fine */
    gm_edge_map map;   /* level 0 edge directions, for verification */
    const gm_backend_ops *be; /* the backend, chosen once (backend.h) */
    void *dev;         /* its device (the backend's handle), NULL on the CPU */
    /* Prepared on another reference's device (gm_ref_prepare_on): the
     * device is not closed with it, and its level-0 map lives on lv[0]'s
     * device copy (the device's own map is its reference's). */
    int borrowed;
    /* Where level 0 repeats itself (selfmap.h): similarities in its working
     * coordinates on both sides, each with its inverse; none on a borrowed
     * reference (the reverse search's). */
    double self[2 * GM_SELF_MAX][9];
    int n_self;
} gm_index;

/* The public reference: its index, where it lives (its copies on other
 * devices and its CPU twin: placement.h), its image and its preparation's
 * outcome. */
struct gm_ref {
    gm_index ix;
    double prep_ms;
    gm_prep_timing prep; /* where ref_build's time went (reference.c) */
    gm_status status;  /* of the preparation: a failed handle only says why */
    char err[256];     /* why it failed, "" otherwise */
    char device[320]; /* what runs the matching, for -v */
    /* its image, kept for the CPU's twin after a device failure
     * (placement.c) and the reverse search (direction.c) */
    gm_image keep;
    gm_placement pl;   /* where it lives, its copies and its twin (placement.h) */
};

/* img prepared as a reference on host's device and lanes, with host's
 * parameters: the reverse search's query (direction.c).  On failure *out
 * still holds the message; gm_ref_free it either way. */
gm_status gm_ref_prepare_on(const gm_ref *host, gm_view img, gm_ref **out);

/* Forward, and where it finds nothing and r's direction allows, the
 * reverse: the reference looked for inside the query (direction.c). */
gm_status gm_match_dirs(const gm_ref *r, gm_model model, gm_view query, gm_result *out);

/* A found answer out (h: query pixels -> reference pixels, a qw x qh
 * query, an rw x rh reference) judged on the part the two images share
 * (direction.c): its overlap set, and "none" where the line at infinity
 * crosses the query, the two share less than GM_MIN_OVERLAP of the
 * smaller image, or the shared part's scales differ past GM_MAX_SCALE. */
void gm_answer_shared(gm_result *out, int qw, int qh, int rw, int rh);

/* A reference's levels built on its backend r->be (opened, r->dev), from
 * image img (reference.c); on failure r->err says why (unless set before)
 * and what was made is freed, the device left open. */
gm_status gm_ref_build(gm_ref *r, gm_view img);

/* The key of the search's draws: which corner pairs and triangles of a
 * reference level enter its tables, which of the query's vote, and the
 * further draws of a search (direction.c).  A constant: an answer is a
 * function of the two images and the parameters that shape the search, not
 * of the seed (issue 29: seeds 1-5 gave one status to 84% of the photo and
 * scene tiers' queries).  The seed (gm_params.seed) salts the hash tables'
 * functions only, which move where an entry lies and never which entries
 * there are.  1: the draws that the default seed made before, so the
 * default's answers are unchanged. */
#define GM_DRAW_KEY 1ull

/* The salts of a key, one per use, so that no two draws or tables share a
 * stream (gm_mix64(key ^ salt ^ ...)); named once here for both backends.
 * The draws take GM_DRAW_KEY, the tables the seed. */
#define GM_SALT_QUERY_PICK 0x51EC7ull  /* which query bases vote */
#define GM_SALT_QUERY_INDEX 0x0Bull    /* the query bases' two-way index */
#define GM_SALT_QUERY_TRIS 0x3A1ull    /* which query triangles vote */
#define GM_SALT_REF_INDEX 0xB0ull      /* a level's basis index */
#define GM_SALT_REF_TABLE 0x7AB1Eull   /* a level's multi-value table */
#define GM_SALT_TRIS 0x7219ull         /* a level's triangles */
#define GM_SALT_TRI_TABLE 0xAFF1ull    /* their table */
#define GM_SALT_RETRY 0x2E7Dull        /* a search drawn again (direction.c) */
#define GM_SALT_SELF 0x5E1Full         /* level 0's pairs that vote for its self-maps */

/* Points tested per candidate: a sample of the query's edge pixels. */
#ifndef GM_VERIFY_POINTS
#define GM_VERIFY_POINTS 2000
#endif
/* Every k-th point of all so that at most cap remain (keeps the spread
 * along edges), in buf (room for cap). */
gm_points gm_stride_sample(const gm_points *all, uint32_t cap, gm_point *buf);

/* Verification radius in working pixels: JPEG, noise and one cell of
 * quantization move edges by about a pixel. */
#define GM_VERIFY_RADIUS 2


/* Everything the query and the reference share up to the bases. */
typedef struct {
    int f, w, h;
    uint8_t *work;     /* downscaled copy, NULL when f == 1 */
    gm_view view;      /* working image */
    gm_points all;     /* every edge pixel, sub-pixel */
    gm_points cloud;   /* spread sample that votes / fills the table */
    gm_points corners; /* basis endpoints */
} side;

/* Edges, points, spread and corners of img at pyramid level `extra` (1: the
 * working size, 2: half of it), on backend be's lane.  On error s is freed and err says why. */
gm_status gm_side_build(const gm_backend_ops *be, void *lane, const gm_params *p, gm_view img, int extra,
                        uint32_t cloud_target, uint32_t corner_target, side *s, char *err,
                        size_t errlen);
/* The same at downscale factor f of the source, edges capped at max_edges. */
gm_status gm_side_build_f(const gm_backend_ops *be, void *lane, gm_view img, int f, int64_t max_edges, uint32_t cloud_target,
                          uint32_t corner_target, side *s, char *err, size_t errlen);
void gm_side_free(side *s);

/* A query's levels (0: the working size, 1: half, 2: a quarter), built by
 * gm_match_forward on first use.  No draw changes them, so the draws of
 * one search (direction.c) share them: zero it before the first, free it
 * with gm_query_levels_free after the last (it also zeroes it). */
#define GM_SEEN_MAX 8
/* Every triangle of a query level's corners in a band of side lengths
 * (gm_tris_select_cpu at prob 1), from which each draw of a triangle
 * pairing takes its own few at random: the list depends on the level, the
 * corners kept and the band, never on the draw, so the first draw that
 * pairs so makes it and the later draws read it (a negative 640x360 frame
 * under auto: 145,876 triangles of 113 corners, for some 400, made again by
 * each of the three draws). */
typedef struct {
    int level;        /* the query level */
    uint32_t corners; /* its strongest corners taken */
    float lmin, lmax; /* the band */
    gm_tris all;
} gm_tri_list;
typedef struct {
    side q[GM_QUERY_LEVELS];
    int tried[GM_QUERY_LEVELS];
    gm_status st0; /* level 0's build, once tried: the others' outcome is tried[] and q[] */
    /* each earlier draw's answer (its model, source pixels), found or not:
     * a later draw's rivals in the distinctiveness test */
    double seen[GM_SEEN_MAX][9];
    int n_seen;
    gm_tri_list *tris; /* the lists made so far */
    int n_tris, cap_tris;
} gm_query_levels;
void gm_query_levels_free(gm_query_levels *lv);

/* The search of a query inside reference r (matcher.c): the pipeline of
 * docs/design.md, the query's bases and triangles drawn with key (the
 * first draw GM_DRAW_KEY, a further draw its own; r's bases and triangles
 * were drawn with GM_DRAW_KEY).  levels: the query's levels as
 * earlier draws of this query on r's parameters left them (built here
 * where missing, kept for the next), or NULL (built and freed here).
 * gm_match_model runs it through gm_match_dirs. */
gm_status gm_match_forward(const gm_index *r, gm_model model, gm_view query, uint64_t key,
                           gm_query_levels *levels, gm_result *out);

/* An answer found on fine level bl of r, polished coarse to fine (matcher.c:
 * refined on level 0's map, then on each fine level down to bl): hw, its
 * model in the working coordinates of the query's level q0 and of bl, and
 * score, its strict test on bl, are replaced when the polished model
 * verifies better on bl and its corners moved at most GM_POLISH_MOVE
 * level-0 pixels (a model grown from triangles, affine or homography: at
 * most GM_POLISH_GROWN_SHARE of the query's mapped diagonal, where that is
 * more, its scale within GM_POLISH_SCALE of the start's and the view
 * plausible); otherwise left alone, as for an answer on a working level.
 * vq0: the query points the refinements use (on the lane's device). */
#define GM_POLISH_MOVE 3.0
#define GM_POLISH_GROWN_SHARE 0.05
#define GM_POLISH_SCALE 1.25
gm_status gm_polish_answer(const gm_index *r, void *lane, const side *q0, const gm_points *vq0,
                           const ref_level *bl, gm_model model, double hw[9],
                           gm_verify_score *score);

#endif
