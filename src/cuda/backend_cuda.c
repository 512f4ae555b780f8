/* backend_cuda.c: the CUDA backend table (pipeline/backend.h) over the GPU
 * side of the pipeline (cuda/pipeline.c: lanes, levels and the stage
 * launches).  Each entry gives the same results as the CPU table's, which
 * tests/cuda/ checks stage by stage. */
#include <stdio.h>

#include "cuda/pipeline.h"
#include "hash/cuckoo.h"
#include "pipeline/backend.h"

static gm_status cuda_open(void **dev, int index, char *why, size_t whylen)
{
    return gm_gpu_open((gm_gpu **)dev, index, why, whylen);
}

/* CUDA's start in a process, the driver and a context: 0.21-0.25 s on the
 * H100 machine (docs/gpu.md) */
#define GM_CUDA_START_MS 250.0

static void cuda_close(void *dev) { gm_gpu_close(dev); }
static int cuda_count(void) { return gm_cuda_begin(NULL, 0); }

static void cuda_describe(const void *dev, char *buf, size_t len)
{
    /* the GPU's number too: a batch's references may each be on another */
    snprintf(buf, len, "cuda: GPU %d, %s", gm_gpu_number(dev), gm_gpu_name(dev));
}

static gm_status cuda_memory(int index, size_t *avail, size_t *total)
{
    return gm_cuda_device_memory(index, avail, total) == 0 ? GM_OK : GM_ERR_DEVICE;
}

static void *cuda_acquire(void *dev) { return gm_gpu_acquire(dev); }
static void cuda_release(void *dev, void *lane) { gm_gpu_release(dev, lane); }

static gm_status cuda_side(void *lane, gm_view img, int max_edges, uint32_t corner_target,
                           gm_points *all, gm_points *corners)
{
    return gm_gpu_side(lane, img, max_edges, corner_target, all, corners);
}

static gm_status cuda_level_build(void *lane, const gm_points *corners, const gm_bases *b,
                                  const gm_points *cloud, int local, uint32_t key_bound,
                                  uint64_t seed_index, uint64_t seed_table, gm_compact *index,
                                  gm_multi *table, float **share, void **level)
{
    /* every basis against the whole cloud: the kernel has no grid, the keys
     * outside a basis's window are dropped as on the CPU, so the items of a
     * local level are the same */
    (void)local, (void)table, (void)share;
    return gm_gpu_level_build(lane, corners, b, cloud, key_bound, seed_index, seed_table,
                              (gm_gpu_level **)level, &index->unique, &index->u);
}

static void cuda_level_free(void *level) { gm_gpu_level_free(level); }

static gm_status cuda_map(void *dev, void *lane, void *level, const gm_edge_map *map)
{
    return level ? gm_gpu_level_map(lane, level, map) : gm_gpu_map(dev, lane, map);
}

/* A query's basis keys (a few hundred) go into the compacting table on the
 * host: the same table as the device's (tests/cuda/test_cuckoo_cuda.c), so
 * the same dense indices, without its eight launches and two waits.  On the
 * H100 machine with 8 video lanes the device's build took 1.38 ms a frame
 * (0.17 ms for one query alone: the lanes' launches queue behind each
 * other), a third of a 640x360 frame's match (docs/speed.md).  The
 * reference's thousands of bases still build on the device. */
#define GM_GPU_HOST_INDEX 16384

static gm_status cuda_index(void *lane, const uint32_t *keys, uint32_t n, uint64_t seed,
                            gm_compact *index)
{
    if (n < GM_GPU_HOST_INDEX)
        return gm_compact_build_cpu(index, keys, n, 0, seed, NULL);
    return gm_gpu_index(lane, keys, n, seed, &index->unique, &index->u);
}

static gm_status cuda_vote(void *lane, gm_level_at lv, const gm_points *qcorners,
                           const uint32_t *unique, uint32_t n_q, const gm_points *qcloud,
                           uint32_t k, gm_candidate *cands, uint32_t *nc, double *vote_ms,
                           double *reduce_ms)
{
    return gm_gpu_vote(lane, lv.level, qcorners, unique, n_q, qcloud, k, cands, nc, vote_ms,
                       reduce_ms);
}

static gm_status cuda_pair(void *lane, gm_level_at lv, gm_map_at map, const gm_points *qcorners,
                           const uint32_t *unique, uint32_t n_q, const gm_points *qcloud,
                           uint32_t k, const gm_pair_in *in, gm_pair_out *out, double *vote_ms,
                           double *reduce_ms, double *decide_ms)
{
    return gm_gpu_pair(lane, lv.level, map.level, qcorners, unique, n_q, qcloud, k, in, out,
                       vote_ms, reduce_ms, decide_ms);
}

/* the table on the device alone: the host's stays empty */
static gm_status cuda_tri_level(void *lane, const gm_points *corners, const gm_tris *t,
                                const gm_points *cloud, uint64_t seed, gm_multi *table,
                                float **share, void **level)
{
    (void)table, (void)share;
    return gm_gpu_tri_level(lane, corners, t, cloud, seed, (gm_gpu_level **)level);
}

static gm_status cuda_tri_vote(void *lane, gm_level_at lv, const gm_points *qcorners,
                               const gm_tri *qtris, uint32_t n_q, const gm_points *qcloud,
                               uint32_t k, gm_candidate *cands, uint32_t *nc, double *vote_ms,
                               double *reduce_ms)
{
    return gm_gpu_tri_vote(lane, lv.level, qcorners, qtris, n_q, qcloud, k, cands, nc, vote_ms,
                           reduce_ms);
}

static gm_status cuda_points(void *lane, const gm_points *q)
{
    return gm_gpu_verify_points(lane, q);
}

/* the query points were uploaded by points(): q is the host's copy */
static gm_status cuda_verify(void *lane, gm_map_at map, const gm_points *q, const double *ms,
                             uint32_t n, gm_verify_score *scores)
{
    (void)q;
    return gm_gpu_verify(lane, map.level, ms, n, scores);
}

static gm_status cuda_refine(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                             double *h, int iters, uint32_t n, gm_verify_score *scores)
{
    (void)q;
    return gm_gpu_refine(lane, map.level, model, h, iters, n, scores);
}

static gm_status cuda_chain_queue(void *lane, const gm_points *q, const gm_chain_step *steps,
                                 int ns, const double *h, const gm_verify_score *v, uint32_t n)
{
    (void)q;
    if (ns < 0 || ns > GM_CHAIN_STEPS)
        return GM_ERR_INVALID;
    const gm_gpu_level *lv[GM_CHAIN_STEPS];
    gm_chain_dev_step ds[GM_CHAIN_STEPS];
    for (int k = 0; k < ns; k++) {
        lv[k] = steps[k].map.level;
        ds[k] = (gm_chain_dev_step){NULL,           steps[k].model, steps[k].iters,
                                    steps[k].rounds, steps[k].fq,   steps[k].from,
                                    steps[k].to,     steps[k].take};
    }
    return gm_gpu_chain_queue(lane, lv, ds, ns, h, v, n);
}

static gm_status cuda_chain_collect(void *lane, double *h, gm_verify_score *v, uint32_t n)
{
    return gm_gpu_chain_collect(lane, h, v, n);
}

static gm_status cuda_grow(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                           double *h, const double *seeds, uint32_t n, gm_verify_score *scores)
{
    (void)q;
    return gm_gpu_grow(lane, map.level, model, h, seeds, n, scores);
}

static gm_status cuda_spread(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                             const double h[9], int w, int hgt, double *spread,
                             const gm_refine_beside *beside)
{
    (void)q;
    if (!beside)
        return gm_gpu_spread(lane, map.level, model, h, w, hgt, spread, 0, 0, NULL, NULL);
    return gm_gpu_spread(lane, map.level, model, h, w, hgt, spread, beside->model,
                         beside->iters, beside->h, beside->score);
}

const gm_backend_ops gm_backend_cuda = {
    .name = "cuda",
    .label = "CUDA",
    .device = GM_DEVICE_CUDA,
    .start_ms = GM_CUDA_START_MS,
    .open = cuda_open,
    .count = cuda_count,
    .close = cuda_close,
    .describe = cuda_describe,
    .memory = cuda_memory,
    .acquire = cuda_acquire,
    .release = cuda_release,
    .error = gm_cuda_last_error,
    .waits = gm_cuda_thread_waits,
    .side = cuda_side,
    .level_build = cuda_level_build,
    .level_free = cuda_level_free,
    .map = cuda_map,
    .index = cuda_index,
    .vote = cuda_vote,
    .pair = cuda_pair,
    .tri_level = cuda_tri_level,
    .tri_vote = cuda_tri_vote,
    .points = cuda_points,
    .verify = cuda_verify,
    .refine = cuda_refine,
    .grow = cuda_grow,
    .chain_queue = cuda_chain_queue,
    .chain_collect = cuda_chain_collect,
    .spread = cuda_spread,
};
