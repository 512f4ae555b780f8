/* pipeline.h: the GPU side of the pipeline (src/cuda/pipeline.c), C interface,
 * called by src/pipeline/reference.c and src/pipeline/matcher.c.
 *
 * One context per prepared reference: the reference's device tables and
 * edge map, and lanes of device buffers sized for the largest frame seen,
 * reused query after query (they grow, never shrink; no allocation per query
 * once the sizes are reached).  reference.c and matcher.c keep the flow
 * (levels, pairings, candidate picking, distinctiveness) in one place for
 * both devices and call these for the stages; every stage gives the CPU
 * stage's results (integer stages exactly: see the tests/test_*_cuda.c
 * suites).
 *
 * A context serves several threads at once: each query takes a lane (a
 * stream and its own buffers) for its whole match and gives it back;
 * the reference's tables and edge map are shared and only read. */
#ifndef GM_PIPELINE_H
#define GM_PIPELINE_H

#include "cuda/gm_cuda.h"
#include "cuda/verify_cuda.h"
#include "stages/pair_core.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/reduce.h"
#include "stages/verify.h"
#include "stages/affine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gm_gpu gm_gpu;
typedef struct gm_gpu_lane gm_gpu_lane;
typedef struct gm_gpu_level gm_gpu_level;

/* CUDA's devices (gm_cuda_device_count), and the first call of the process
 * that finds one applies the scheduling flag gm_cuda_set_sync kept for
 * later: everything of the library that starts CUDA starts it here. */
int gm_cuda_begin(char *why, size_t whylen);

/* Queries in flight on one context at most (lanes are made on demand). */
#define GM_GPU_MAX_LANES 16

/* A context on CUDA device dev (0: the first).  Without a usable device (no
 * driver, an old one, no device dev, less than GM_GPU_MIN_FREE_MIB of free
 * memory) returns GM_ERR_DEVICE with the reason in why; the caller falls
 * back to the CPU or reports it.  Every lane and level of it makes dev the
 * current device of the thread that uses it (cudaSetDevice: a thread may
 * use several GPUs' references in turn). */
#define GM_GPU_MIN_FREE_MIB 256
gm_status gm_gpu_open(gm_gpu **out, int dev, char *why, size_t whylen);
void gm_gpu_close(gm_gpu *g);
/* "<name>, compute capability X.Y, N SMs, M MiB" */
const char *gm_gpu_name(const gm_gpu *g);
/* Its device number (-1 for NULL). */
int gm_gpu_number(const gm_gpu *g);
/* A free lane, made when none is free and fewer than GM_GPU_MAX_LANES
 * exist, else waited for; NULL when a lane cannot be made and none exists
 * (gm_cuda_last_error says why).  Give it back with gm_gpu_release. */
gm_gpu_lane *gm_gpu_acquire(gm_gpu *g);
void gm_gpu_release(gm_gpu *g, gm_gpu_lane *l);

/* Edges, compaction, sub-pixel edge points and corners of a working image
 * (host memory): *all and *corners are malloc'd host copies (the caller
 * frees ->p), equal to gm_edges_cpu + gm_compact_flags_cpu +
 * gm_edge_points_cpu and gm_corners_cpu. */
gm_status gm_gpu_side(gm_gpu_lane *g, gm_view img, int max_edges, uint32_t corner_target,
                      gm_points *all, gm_points *corners);

/* One reference level's tables on the device: the two-way basis index
 * (compacting table of the basis keys b), the (key, basis) items of every
 * basis against cloud, the multi-value table sized by unique_bound, each
 * basis's share of the items.  *unique (malloc'd, *nu entries) is the index's
 * dense-index -> basis-key array, as gm_compact's unique. */
gm_status gm_gpu_level_build(gm_gpu_lane *g, const gm_points *corners, const gm_bases *b,
                             const gm_points *cloud, uint32_t unique_bound, uint64_t seed_index,
                             uint64_t seed_table, gm_gpu_level **out, uint32_t **unique,
                             uint32_t *nu);
void gm_gpu_level_free(gm_gpu_level *l);

/* The query's basis keys sel[nsel] into a compacting table on the device
 * (seed); *unique (malloc'd, *n_q entries) is its dense-index -> key array,
 * as gm_compact_build_cpu's. */
gm_status gm_gpu_index(gm_gpu_lane *g, const uint32_t *sel, uint32_t nsel, uint64_t seed,
                       uint32_t **unique, uint32_t *n_q);
/* One pairing's votes and candidates: the frames of the query bases
 * unique[n_q] (keys over qcorners), the votes of qcloud against level l, the
 * best reference basis of every query basis, and the k best of those
 * (gm_reduce_topk_cpu: same candidates, same order) copied to cands[*nc],
 * *nc = min(k, n_q).  *vote_ms and *reduce_ms get the two stages' times. */
gm_status gm_gpu_vote(gm_gpu_lane *g, const gm_gpu_level *l, const gm_points *qcorners,
                      const uint32_t *unique, uint32_t n_q, const gm_points *qcloud, uint32_t k,
                      gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms);
/* gm_gpu_vote's candidates decided on the device against vl's map (the
 * verifying level: NULL for the reference's own map), with one wait
 * (gm_pair_queue_cuda): out as it says, or out->doubtful with the
 * candidates alone where the device cannot decide (a rotation in doubt, a
 * level without its bases' ends, nothing to vote with), for the host to
 * decide.  *decide_ms: the decisions' time on the stream. */
gm_status gm_gpu_pair(gm_gpu_lane *g, const gm_gpu_level *l, const gm_gpu_level *vl,
                      const gm_points *qcorners, const uint32_t *unique, uint32_t nq,
                      const gm_points *qcloud, uint32_t k, const gm_pair_in *in,
                      gm_pair_out *out, double *vote_ms, double *reduce_ms, double *decide_ms);

/* A reference level's triangle table on the device: the (key, triangle)
 * items of the triangles t over corners against cloud (gm_tri_items_cuda),
 * their multi-value table (seed) and each triangle's share of the items --
 * the table gm_tri_items_cpu and gm_multi_build_cpu make on the host, but
 * for the order of a key's values; free with gm_gpu_level_free. */
gm_status gm_gpu_tri_level(gm_gpu_lane *g, const gm_points *corners, const gm_tris *t,
                           const gm_points *cloud, uint64_t seed, gm_gpu_level **out);
/* gm_gpu_vote for the nq query triangles qtris (over qcorners): the same
 * candidates as gm_tri_vote_rows_cpu then gm_reduce_select_cpu. */
gm_status gm_gpu_tri_vote(gm_gpu_lane *g, const gm_gpu_level *l, const gm_points *qcorners,
                          const gm_tri *qtris, uint32_t nq, const gm_points *qcloud, uint32_t k,
                          gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms);

/* The reference's level-0 edge map, uploaded once (the host map stays the
 * caller's and must outlive the context's use of it). */
gm_status gm_gpu_map(gm_gpu *g, gm_gpu_lane *l, const gm_edge_map *map);
/* A fine level's own edge map (a fine level is verified on it, the working
 * levels on the reference's), uploaded once into lv. */
gm_status gm_gpu_level_map(gm_gpu_lane *g, gm_gpu_level *lv, const gm_edge_map *map);
/* The query points that every candidate is verified on. */
gm_status gm_gpu_verify_points(gm_gpu_lane *g, const gm_points *q);
/* gm_verify_cpu of nc similarity candidates m[6 * c], on the map of fine
 * level lv (its gm_gpu_level_map), or on the reference's (lv NULL);
 * GM_ERR_INVALID when lv has no map. */
gm_status gm_gpu_verify(gm_gpu_lane *g, const gm_gpu_level *lv, const double *m, uint32_t nc,
                        gm_verify_score *scores);
/* gm_refine_model_cpu(iters) then gm_verify_strict_h_cpu of nc candidates
 * h[9 * c] (in/out), on the map as gm_gpu_verify's. */
gm_status gm_gpu_refine(gm_gpu_lane *g, const gm_gpu_level *lv, gm_model model, double *h,
                        int iters, uint32_t nc, gm_verify_score *scores);
/* A chain of refinements queued (gm_chain_queue_cuda): step k on the map
 * of lv[k], as gm_gpu_verify's (each step's map is set here); its results
 * by gm_gpu_chain_collect, one wait. */
gm_status gm_gpu_chain_queue(gm_gpu_lane *g, const gm_gpu_level *const *lv,
                             gm_chain_dev_step *steps, int ns, const double *h,
                             const gm_verify_score *v, uint32_t n);
gm_status gm_gpu_chain_collect(gm_gpu_lane *g, double *h, gm_verify_score *v, uint32_t n);
/* gm_corner_spread_cpu of h for a w x hgt query into *spread, on the map as
 * gm_gpu_verify's; rh not NULL: gm_gpu_refine of rh beside it, one wait
 * (gm_spread_refine_cuda). */
gm_status gm_gpu_spread(gm_gpu_lane *g, const gm_gpu_level *lv, gm_model model,
                        const double h[9], int w, int hgt, double *spread, gm_model rmodel,
                        int riters, double *rh, gm_verify_score *rscore);
/* gm_grow_model_cpu from seeds[3 * c] then gm_verify_strict_h_cpu of nc
 * candidates h[9 * c] (in/out), on the map as gm_gpu_verify's. */
gm_status gm_gpu_grow(gm_gpu_lane *g, const gm_gpu_level *lv, gm_model model, double *h,
                      const double *seeds, uint32_t nc, gm_verify_score *scores);

#ifdef __cplusplus
}
#endif
#endif
