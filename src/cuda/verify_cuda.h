/* verify_cuda.h: verification and refinement of candidate transforms on the
 * GPU, in batches (src/cuda/verify.cu), C interface.
 *
 * Twins of verify.c's gm_verify_cpu and of gm_refine_model_cpu followed by
 * gm_verify_strict_h_cpu, for many candidates at once.  The per-point rules
 * are the CPU's own (src/stages/verify_core.h, src/stages/fit_core.h), so:
 *  - loose scores (gm_verify_batch_cuda) equal gm_verify_cpu's exactly;
 *  - strict scores of a given h equal gm_verify_strict_h_cpu's exactly;
 *  - refined transforms agree with gm_refine_model_cpu's to rounding (the
 *    normal equations are summed in another order), and the strict score is
 *    that of the GPU's refined h.
 *
 * Buffers belong to the caller: the edge map is uploaded once per
 * reference, a gm_verify_dev is allocated once for the largest point set and
 * batch and reused query after query.
 *
 *     gm_edge_map_dev dm;  gm_verify_dev v;
 *     gm_edge_map_upload(&map, &dm, stream);             // once per reference
 *     gm_verify_dev_alloc(&v, GM_VERIFY_POINTS, 32);     // once
 *     gm_verify_points_upload(&v, &vq0, stream);         // once per query
 *     gm_verify_batch_cuda(&dm, &v, ms, nc, scores, stream);
 *     gm_refine_verify_cuda(&dm, &v, GM_MODEL_SIMILARITY, hs, 6, 3, strict, stream);
 *     gm_verify_dev_free(&v);  gm_edge_map_dev_free(&dm); */
#ifndef GM_VERIFY_CUDA_H
#define GM_VERIFY_CUDA_H

#include "cuda/gm_cuda.h"
#include "stages/chain_core.h"
#include "stages/pair_core.h"
#include "stages/points.h"
#include "stages/reduce.h"
#include "stages/verify.h"
#include "stages/vote.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A pairing's decisions on the device (src/cuda/pair.cu, pair_core.h's
 * steps); the part up to ms comes back in one copy, the picks' refinements
 * with it. */
typedef struct {
    uint32_t nc;        /* candidates */
    uint32_t npick;     /* picked and refined (hr[0, npick)) */
    uint32_t doubtful;  /* some rotation is in doubt (gm_pair_rot_doubtful) */
    int32_t pick[GM_PAIR_PICKS];
    double hr[GM_PAIR_PICKS][9];         /* the picks refined (3x3) */
    gm_verify_score vr[GM_PAIR_PICKS];   /* their strict scores */
    gm_candidate cands[GM_MAX_TOP_K];
    gm_verify_score sc[GM_MAX_TOP_K]; /* loose scores, the looked-at marked taken */
    double m0[GM_MAX_TOP_K][6];
    /* the device's alone */
    double ms[GM_MAX_TOP_K][6];
    double done[GM_PAIR_DONE_MAX][6];
    uint32_t doubt[GM_MAX_TOP_K]; /* each candidate's rotation in doubt */
    uint32_t arrived;  /* the decision's blocks done (pair.cu); 0 between pairings, zeroed
                          when the buffer is made */
} gm_pair_dev;

/* A gm_edge_map on the device (the same arrays). */
typedef struct {
    int w, h;
    uint32_t n;          /* reference edge points */
    uint16_t *d_mask;    /* [w*h] */
    int32_t *d_nearest;  /* [w*h] */
    gm_point *d_pts;     /* [n] (at least one element) */
    float *d_dir;        /* [2n] (cos, sin) */
    float4 *d_cells;     /* [w*h] the nearest edge point of each pixel as (x, y, cos, sin),
                          * x NaN where there is none: the refinement's search reads one
                          * 16-byte cell a pixel, no dependent loads */
} gm_edge_map_dev;

/* Allocates d's arrays (d is zeroed first), copies map's points and
 * directions into them and makes the pixels there from the points, the
 * same as gm_edge_map_fill_cpu's (map's own pixels are not read: a map of
 * gm_edge_map_points will do); synchronizes stream before returning, so map
 * may be freed then.  Free with gm_edge_map_dev_free (also safe on a zeroed
 * or failed d).  GM_ERR_INVALID for an empty or inconsistent map. */
gm_status gm_edge_map_upload(const gm_edge_map *map, gm_edge_map_dev *d, cudaStream_t stream);
void gm_edge_map_dev_free(gm_edge_map_dev *d);

/* The query's verification points on the device and the per-candidate
 * buffers of a batch.  The cosines and sines of the point angles are
 * computed on the host (glibc's cosf/sinf, as the CPU functions use them). */
typedef struct {
    uint32_t cap;             /* points at most (of gm_verify_dev_alloc) */
    uint32_t n;               /* points of the last gm_verify_points_upload */
    uint32_t max_cands;       /* candidates per call at most */
    gm_point *d_pts;          /* [cap] */
    float *d_cs;              /* [2 * cap] (cosf, sinf) of each point's angle */
    double *d_params;         /* [9 * max_cands] m (6 used) or h per candidate */
    double *d_seeds;          /* [3 * max_cands] a growth's seed (x, y, side) per candidate */
    float *d_rot;             /* [max_cands] (float)atan2(m[3], m[0]) per candidate */
    gm_verify_score *d_scores; /* [max_cands] */
    double *d_part;           /* the split refinement's partial sums: [max_cands * blocks *
                                 GM_MAX_NV], blocks = ceil(cap / GM_REFINE_CHUNK) */
    int *d_stop;              /* [2 * max_cands] its loop has ended, then each candidate's
                                 blocks done in this iteration (verify.cu) */
    gm_point *h_pts;          /* pinned staging of the points [cap] */
    float *h_cs;              /* pinned [2 * cap] */
    double *h_params;         /* pinned [9 * max_cands] */
    double *h_seeds;          /* pinned [3 * max_cands] */
    float *h_rot;             /* pinned [max_cands] */
    gm_verify_score *h_scores; /* pinned [max_cands] */
    gm_pair_dev *d_pair;      /* a pairing's decisions (gm_pair_queue_cuda) */
    gm_pair_dev *h_pair;      /* pinned: its done list up, its decisions down */
    uint8_t *d_take;          /* a chain's flags: [GM_CHAIN_STEPS + 1][max_cands] */
    uint8_t *h_take;          /* pinned, the steps' rows */
    cudaEvent_t staged;       /* the last points upload has left h_pts, h_cs */
    int wide;                 /* refinements of a similarity or an affine with a helper
                                 thread a point (blocks of 512 threads, a whole SM's
                                 registers each): the lower latency of a query alone on
                                 the device; 0: blocks of 256, which other lanes' kernels
                                 can share SMs with (the same numbers either way) */
    int cluster;              /* the device launches thread block clusters (compute
                                 capability 9.0 on): a refinement is one launch, its
                                 iterations in a cluster of blocks a candidate; 0: a
                                 launch an iteration (the tests set it to compare) */
    cudaStream_t pool;        /* gm_verify_dev_alloc_on's stream (NULL: cudaMalloc's) */
} gm_verify_dev;

/* Buffers for up to max_points points and max_cands candidates per call
 * (v is zeroed first).  Free with gm_verify_dev_free (also safe on a zeroed
 * or failed v).  GM_ERR_INVALID when max_cands is 0. */
gm_status gm_verify_dev_alloc(gm_verify_dev *v, uint32_t max_points, uint32_t max_cands);
/* The same grown in place on stream (gm_dev_bufs_resize_on): v zeroed, or
 * made by this call on the same stream; the buffers that do not depend on
 * the points (the candidates', the pairing's, the chain's) kept as they are,
 * with wide and cluster; the device buffers from the library's pool, handed
 * back on stream by gm_verify_dev_free.  On a failure v is freed and zeroed. */
gm_status gm_verify_dev_alloc_on(gm_verify_dev *v, uint32_t max_points, uint32_t max_cands,
                                 cudaStream_t stream);
void gm_verify_dev_free(gm_verify_dev *v);

/* The query points q (q->n <= v->cap; 0 allowed) with the cosf/sinf of
 * their angles, through pinned staging; asynchronous on stream (waits only
 * for the previous upload to have left the staging).  GM_ERR_INVALID when
 * q->n > v->cap. */
gm_status gm_verify_points_upload(gm_verify_dev *v, const gm_points *q, cudaStream_t stream);

/* gm_verify_cpu(map, points, m + 6c) for the nc <= v->max_cands candidates
 * of the host array m[6 * nc]: scores[c] equal to the CPU's (total, hits,
 * bg_hits, confidence) exactly.  The rotations (float)atan2(m[3], m[0]) are
 * computed on the host.  One kernel; synchronizes stream once.  nc = 0:
 * nothing.  GM_ERR_INVALID when nc > v->max_cands. */
gm_status gm_verify_batch_cuda(const gm_edge_map_dev *map, gm_verify_dev *v, const double *m,
                               uint32_t nc, gm_verify_score *scores, cudaStream_t stream);

/* For each of the nc <= v->max_cands candidates h[9c..9c+9) (host, in and
 * out): gm_refine_model_cpu(map, points, model, h, iters), then
 * gm_verify_strict_h_cpu of the refined h into scores[c].  A launch an
 * iteration over blocks of points, a point a thread (its partner, its rows
 * of the normal equations in double), each candidate's last block summing
 * the partials in block order and solving; then the strict score; a
 * degenerate solve or too few pairs keeps the previous h and stops, as on
 * the CPU.
 * iters = 0: strict scoring only (h unchanged).  Synchronizes stream once.
 * GM_ERR_INVALID when nc > v->max_cands, iters < 0 or model unknown. */
gm_status gm_refine_verify_cuda(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                                double *h, int iters, uint32_t nc, gm_verify_score *scores,
                                cudaStream_t stream);
/* gm_corner_spread_cpu(map, points, model, h, w, hgt) into *spread: the
 * four refits as four candidates of one split refinement (each leaving out
 * its quadrant of the w x hgt query), the corners' moves on the host
 * (gm_corner_moves).  Needs v->max_cands >= 4, w and hgt > 0.
 * Synchronizes stream once. */
gm_status gm_spread_cuda(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                         const double h[9], int w, int hgt, double *spread, cudaStream_t stream);
/* gm_spread_cuda and, rh not NULL, gm_refine_verify_cuda of the one
 * transform rh (rmodel, riters; the scores into *rscore) queued beside it:
 * one wait for both.  Needs v->max_cands >= 5 then. */
gm_status gm_spread_refine_cuda(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                                const double h[9], int w, int hgt, double *spread,
                                gm_model rmodel, int riters, double *rh,
                                gm_verify_score *rscore, cudaStream_t stream);

/* For each of the nc <= v->max_cands candidates h[9c..9c+9) (host, in and
 * out): gm_grow_model_cpu(map, points, model, seeds + 3c, h), then
 * gm_verify_strict_h_cpu of the grown h into scores[c].  One kernel, one
 * block per candidate: every radius step and the final refinement in the
 * block, the disc test gm_grow_d2's.  Synchronizes stream once.
 * GM_ERR_INVALID when nc > v->max_cands or model is not affine or
 * homography. */
gm_status gm_grow_verify_cuda(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                              double *h, const double *seeds, uint32_t nc,
                              gm_verify_score *scores, cudaStream_t stream);

/* Queued without a wait, for a caller that keeps the candidates on the
 * device: a refinement (gm_refine_verify_cuda's) of the candidates at
 * v->d_params[9 (first + c)], c < nc (first + nc <= v->max_cands), with the
 * strict scores into v->d_scores[first + c], those from the device count
 * *live on or with take[c] 0 (device arrays; NULL: none) left alone. */
gm_status gm_refine_queue_at(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                             int iters, uint32_t first, uint32_t nc, const uint32_t *live,
                             const uint8_t *take, cudaStream_t stream);
/* gm_refine_queue_at's for the nc candidates at params[9c..] with the strict
 * scores into scores[c] (device arrays outside v: a pairing's picks in its
 * gm_pair_dev, which come back in the pairing's one copy). */
gm_status gm_refine_queue_into(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                               int iters, uint32_t nc, double *params, gm_verify_score *scores,
                               const uint32_t *live, cudaStream_t stream);

/* A step of a chain on the device (backend.h's gm_chain_step, its map the
 * device's; take NULL: all). */
typedef struct {
    const gm_edge_map_dev *map;
    gm_model model;
    int iters, rounds;
    int fq, from, to;
    const uint8_t *take; /* host [n] */
} gm_chain_dev_step;

/* A chain of ns <= GM_CHAIN_STEPS steps over the n transforms h[9 n] and
 * their scores v_sc[n] (host, in and out), as pipeline/chain.c's
 * gm_chain_host runs it with gm_refine_verify_cuda a step, the same
 * numbers bit for bit: every step and round queued (the rounds' test on
 * the device, gm_chain_better), one copy back, one wait.  Needs
 * 2 n <= v->max_cands (a round refines copies beside the transforms) and
 * n <= GM_CHAIN_MAX (src/cuda/chain.cu). */
gm_status gm_chain_cuda(gm_verify_dev *v, const gm_chain_dev_step *steps, int ns, double *h,
                        gm_verify_score *v_sc, uint32_t n, cudaStream_t stream);
/* gm_chain_cuda in two: queued without a wait (steps, h and v_sc read
 * before it returns), then the wait and the results; nothing else may use
 * v in between. */
gm_status gm_chain_queue_cuda(gm_verify_dev *v, const gm_chain_dev_step *steps, int ns,
                              const double *h, const gm_verify_score *v_sc, uint32_t n,
                              cudaStream_t stream);
gm_status gm_chain_collect_cuda(gm_verify_dev *v, double *h, gm_verify_score *v_sc, uint32_t n,
                                cudaStream_t stream);

/* A pairing's voted candidates d_cands[nc] (nc <= GM_MAX_TOP_K and
 * v->max_cands) decided on the device, the host's run_pairing steps
 * (pair_core.h), queued without a wait: each candidate's similarity from
 * its query basis (d_qbases[query_basis].a, .b) and reference basis
 * (d_rends[ref_basis]: a.x, a.y, b.x, b.y), verified on map, the best
 * picked against in->done, the picks refined (in->iters, a similarity),
 * and what the host needs copied back.  gm_pair_collect_cuda then waits,
 * once, and fills out: the candidates, their marked scores, m0, the picks,
 * the refined transforms and their strict scores, or out->doubtful with
 * the candidates alone (the host decides then).  GM_ERR_DEVICE when what
 * came back is not what was queued. */
gm_status gm_pair_queue_cuda(const gm_edge_map_dev *map, gm_verify_dev *v,
                             const gm_candidate *d_cands, uint32_t nc,
                             const gm_vote_basis *d_qbases, const float4 *d_rends,
                             const gm_pair_in *in, cudaStream_t stream);
gm_status gm_pair_collect_cuda(gm_verify_dev *v, uint32_t nc, gm_pair_out *out,
                               cudaStream_t stream);

/* A level's reference bases' ends (frames[i].a, .b as a.x, a.y, b.x, b.y)
 * into d_ends[n], queued on stream: what gm_pair_queue_cuda reads. */
gm_status gm_pair_ends_cuda(const gm_vote_basis *d_frames, uint32_t n, float4 *d_ends,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
