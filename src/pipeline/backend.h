/* backend.h: what the pipeline asks of a device, as one table of functions
 * (ggml's backend interface).  The CPU table (pipeline/backend_cpu.c) runs
 * the stages' _cpu references; the CUDA table (cuda/backend_cuda.c) runs
 * their twins on a GPU.  A reference chooses its table once
 * (gm_backend_find) and the pipeline calls through it: no #ifdef, no
 * `void *gpu` that means "the CPU" when NULL.
 *
 * Three kinds of state, all owned by the table's functions:
 *   dev    the device, opened once per reference (CPU: NULL);
 *   lane   one thread's working state on it (CUDA: a stream and buffers
 *          from a pool; CPU: a token), acquired per query or preparation;
 *   level  a reference level's data on the device (CUDA: its basis index,
 *          table and edge map; CPU: NULL, the host copies are the data).
 * Where a stage reads the host copies (the CPU) or the device's (CUDA), it
 * is handed both: gm_level_at and gm_map_at. */
#ifndef GM_BACKEND_H
#define GM_BACKEND_H

#include "hash/cuckoo.h"
#include "stages/affine.h"
#include "stages/bases.h"
#include "stages/chain_core.h"
#include "stages/pair_core.h"
#include "stages/points.h"
#include "stages/reduce.h"
#include "stages/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reference level as the vote reads it. */
typedef struct {
    const gm_multi *table; /* host: (u, v, dir) -> dense basis indices */
    const float *share;    /* host: [n_ref] each basis's share of the items */
    uint32_t n_ref;        /* bases */
    const void *level;     /* the device's copy (the table's level_build) */
} gm_level_at;

/* An edge map as verification reads it: the host copy, and the device's
 * (a level's, from map(); NULL: the reference's). */
typedef struct {
    const gm_edge_map *host;
    const void *level;
} gm_map_at;

/* A step of a chain of refinements (chain_core.h; the backend's chain, or
 * gm_chain_host): first, where from != to, every transform carried from
 * the working coordinates of (fq, from) to those of (fq, to)
 * (gm_h_rescale); then those with take[i] (NULL: all) refined to model on
 * map (iters iterations, then scored strictly), in place; or, rounds > 0,
 * up to `rounds` such refinements, each transform keeping a round's only
 * where it explains more (gm_chain_better) and leaving the rounds at its
 * first that does not. */
typedef struct {
    gm_map_at map;
    gm_model model;
    int iters, rounds;
    int fq, from, to;
    const uint8_t *take;
} gm_chain_step;

/* A refinement queued beside a spread (its `beside`): h refined to model
 * on the same map (iters iterations) and scored strictly into *score, as
 * refine's: a GPU waits once for both (matcher.c's answer checks, which
 * start from the same answer). */
typedef struct {
    gm_model model;
    int iters;
    double *h;
    gm_verify_score *score;
} gm_refine_beside;

typedef struct gm_backend_ops {
    const char *name;  /* "cpu", "cuda": gm_device_name of device */
    const char *label; /* "CPU", "CUDA": how messages name it */
    gm_device device;
    /* What the device's start costs a process, in ms (CUDA: the driver and
     * a context, measured 0.21-0.25 s on the H100 machine, docs/gpu.md; the
     * CPU: 0): what GM_DEVICE_AUTO's warm start weighs (warm.c). */
    double start_ms;

    /* ---- the device and its lanes */
    /* device number index (CUDA: the GPU; the CPU has one, 0);
     * GM_ERR_DEVICE with why filled when it cannot be used */
    gm_status (*open)(void **dev, int index, char *why, size_t whylen);
    /* how many devices of this kind are usable (the CPU: 1) */
    int (*count)(void);
    void (*close)(void *dev);
    /* one line: "cuda: <GPU>, ..." (the CPU's names its threads) */
    void (*describe)(const void *dev, char *buf, size_t len);
    /* device number index's memory that allocations can still have, and
     * its total (gm_device_memory); NULL where the library does not hold
     * device memory of its own (the CPU) */
    gm_status (*memory)(int index, size_t *avail, size_t *total);
    /* NULL when none can be had (a device error) */
    void *(*acquire)(void *dev);
    void (*release)(void *dev, void *lane);
    /* the message of the calling thread's last device failure ("" if none) */
    const char *(*error)(void);
    /* the calling thread's waits for the device so far, and their time in
     * ms (gm_timing.wait; the CPU: none) */
    void (*waits)(uint64_t *count, double *ms);

    /* ---- reference and query side */
    /* a working image's edge points (every edge pixel, sub-pixel) and at
     * most corner_target corners; max_edges bounds the edge pixels kept */
    gm_status (*side)(void *lane, gm_view img, int max_edges, uint32_t corner_target,
                      gm_points *all, gm_points *corners);
    /* a level's two-way basis index (paper 4.3) and multi-value table
     * (4.2) from its bases b over cloud: keys of the bases within 2 basis
     * lengths (`local`: through a grid, the fine levels).  Fills what the
     * vote reads: the host's index (at least unique[] and u), table and
     * share (CPU), or *level (CUDA). */
    gm_status (*level_build)(void *lane, const gm_points *corners, const gm_bases *b,
                             const gm_points *cloud, int local, uint32_t key_bound,
                             uint64_t seed_index, uint64_t seed_table, gm_compact *index,
                             gm_multi *table, float **share, void **level);
    void (*level_free)(void *level);
    /* an edge map made available to verification: the reference's (level
     * NULL, once per reference, dev's) or a level's */
    gm_status (*map)(void *dev, void *lane, void *level, const gm_edge_map *map);
    /* the query bases' two-way index (unique[] and u at least) */
    gm_status (*index)(void *lane, const uint32_t *keys, uint32_t n, uint64_t seed,
                       gm_compact *index);
    /* votes of the n_q query bases, each row's best, the k best rows
     * (gm_reduce_select_cpu's order); stage times in *vote_ms, *reduce_ms */
    gm_status (*vote)(void *lane, gm_level_at lv, const gm_points *qcorners,
                      const uint32_t *unique, uint32_t n_q, const gm_points *qcloud, uint32_t k,
                      gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms);
    /* vote, then the candidates decided as run_pairing would (pair_core.h:
     * their similarities, verified on map, the picks refined), in one go:
     * a GPU waits once instead of three times.  out->doubtful: only the
     * candidates are the backend's (gm_pair_out), the caller decides.
     * NULL: the caller votes and decides (the CPU, which has no waits to
     * save) */
    gm_status (*pair)(void *lane, gm_level_at lv, gm_map_at map, const gm_points *qcorners,
                      const uint32_t *unique, uint32_t n_q, const gm_points *qcloud, uint32_t k,
                      const gm_pair_in *in, gm_pair_out *out, double *vote_ms, double *reduce_ms,
                      double *decide_ms);
    /* a level's triangle table: the items of triangles t over corners
     * against cloud and their multi-value table (seed), each triangle's
     * share of the items.  Fills what tri_vote reads: *table and *share
     * (CPU), or *level (CUDA) */
    gm_status (*tri_level)(void *lane, const gm_points *corners, const gm_tris *t,
                           const gm_points *cloud, uint64_t seed, gm_multi *table, float **share,
                           void **level);
    /* vote's twin for the n_q query triangles qtris over qcorners, in the
     * triangle table lv (gm_tri_vote_rows_cpu, gm_reduce_select_cpu) */
    gm_status (*tri_vote)(void *lane, gm_level_at lv, const gm_points *qcorners,
                          const gm_tri *qtris, uint32_t n_q, const gm_points *qcloud, uint32_t k,
                          gm_candidate *cands, uint32_t *nc, double *vote_ms, double *reduce_ms);
    /* the query points that verification tests, once per query */
    gm_status (*points)(void *lane, const gm_points *q);
    /* n similarities ms[6 n] scored on map (gm_verify_cpu) */
    gm_status (*verify)(void *lane, gm_map_at map, const gm_points *q, const double *ms,
                        uint32_t n, gm_verify_score *scores);
    /* n transforms h[9 n] refined to model in place, then scored strictly */
    gm_status (*refine)(void *lane, gm_map_at map, const gm_points *q, gm_model model, double *h,
                        int iters, uint32_t n, gm_verify_score *scores);
    /* n transforms grown from their seeds[3 n] (gm_grow_model_cpu), scored */
    gm_status (*grow)(void *lane, gm_map_at map, const gm_points *q, gm_model model, double *h,
                      const double *seeds, uint32_t n, gm_verify_score *scores);
    /* a chain of ns <= GM_CHAIN_STEPS steps over n <= GM_CHAIN_MAX
     * transforms h[9 n] with their scores v[n] (the rounds compare with
     * them), as gm_chain_host runs it, queued as one (steps and h read
     * before it returns) and its results, the same h and v, collected by
     * chain_collect: a GPU waits once instead of once a step, and the host
     * may work in between (the lane's other entries not called).  NULL
     * (both): gm_chain_host (the CPU) */
    gm_status (*chain_queue)(void *lane, const gm_points *q, const gm_chain_step *steps, int ns,
                             const double *h, const gm_verify_score *v, uint32_t n);
    gm_status (*chain_collect)(void *lane, double *h, gm_verify_score *v, uint32_t n);
    /* gm_corner_spread_cpu; beside (may be NULL): a refinement with it */
    gm_status (*spread)(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                        const double h[9], int w, int hgt, double *spread,
                        const gm_refine_beside *beside);
} gm_backend_ops;

extern const gm_backend_ops gm_backend_cpu;

/* A chain run with be's refine, a call a step (a round a call): what a
 * backend's chain must give.  GM_ERR_INVALID for more than GM_CHAIN_MAX
 * transforms or GM_CHAIN_STEPS steps (pipeline/chain.c). */
gm_status gm_chain_host(const gm_backend_ops *be, void *lane, const gm_points *q,
                        const gm_chain_step *steps, int ns, double *h, gm_verify_score *v,
                        uint32_t n);
/* A chain begun and not yet ended: gm_chain_begin queues it on be's
 * device (be->chain_queue), or runs it there and then (gm_chain_host);
 * gm_chain_end gives its results in the h and v it was begun with (which
 * stay the caller's until then), and must follow a begin that returned
 * GM_OK before the lane is used again. */
typedef struct {
    const gm_backend_ops *be;
    void *lane;
    double *h;
    gm_verify_score *v;
    uint32_t n;
    int queued;
} gm_chain_job;
gm_status gm_chain_begin(gm_chain_job *j, const gm_backend_ops *be, void *lane,
                         const gm_points *q, const gm_chain_step *steps, int ns, double *h,
                         gm_verify_score *v, uint32_t n);
gm_status gm_chain_end(gm_chain_job *j);
/* gm_chain_begin then gm_chain_end. */
gm_status gm_chain_run(const gm_backend_ops *be, void *lane, const gm_points *q,
                       const gm_chain_step *steps, int ns, double *h, gm_verify_score *v,
                       uint32_t n);

/* The backends of this build, NULL-ended: the accelerators first, in the
 * order GM_DEVICE_AUTO tries them, the CPU's last (cuda/registry.c in a
 * build with CUDA, pipeline/registry_cpu.c without).  A new backend is its
 * file and its entry here (and its gm_device value and name, placement.c). */
extern const gm_backend_ops *const gm_backends[];

/* The table of a device: the CPU's for GM_DEVICE_CPU and GM_DEVICE_AUTO;
 * another's when this build has it, else NULL (placement.c). */
const gm_backend_ops *gm_backend_find(gm_device d);
/* The first accelerator of gm_backends (what GM_DEVICE_AUTO moves to), NULL
 * in a build with the CPU's alone. */
const gm_backend_ops *gm_backend_accel(void);

#ifdef __cplusplus
}
#endif
#endif
