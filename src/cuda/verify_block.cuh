/* verify_block.cuh: the loose verification of one candidate by one block,
 * shared by verify.cu's k_verify and pair.cu's fused pairing (both compiled
 * with --fmad=false, so the scores are gm_verify_cpu's bit for bit). */
#ifndef GM_VERIFY_BLOCK_CUH
#define GM_VERIFY_BLOCK_CUH

#include <stdint.h>

#include "cuda/verify_cuda.h"
#include "stages/verify_core.h"

#define GM_VERIFY_THREADS 256
#define GM_VERIFY_WARPS (GM_VERIFY_THREADS / 32)

/* The device map as gm_verify_point reads it. */
static inline gm_map_view map_view(const gm_edge_map_dev *d)
{
    gm_map_view v = {d->w, d->h, d->d_mask, d->d_nearest, d->d_pts, d->d_dir, {NULL}};
    return v;
}

/* Sum of each thread's `part` over the block, returned to every thread.
 * s_part: GM_VERIFY_WARPS counters of shared memory; the caller's next
 * write to it must follow a __syncthreads(). */
static __device__ uint32_t block_sum_u32(uint32_t part, uint32_t *s_part)
{
    for (int off = 16; off > 0; off >>= 1)
        part += __shfl_down_sync(0xFFFFFFFFu, part, off);
    if ((threadIdx.x & 31) == 0)
        s_part[threadIdx.x >> 5] = part;
    __syncthreads();
    uint32_t total = 0; /* integers: any order */
    for (int w = 0; w < (int)(blockDim.x >> 5); w++)
        total += s_part[w];
    return total;
}

/* gm_verify_cpu's score of the similarity m (rotation r) on the n points,
 * by the whole block (every thread gets it; every thread must call). */
static __device__ gm_verify_score verify_block(const gm_map_view &map, const gm_point *pts,
                                               uint32_t n, const double m[6], float r)
{
    __shared__ uint32_t s_hits[GM_VERIFY_WARPS], s_bg[GM_VERIFY_WARPS], s_in[GM_VERIFY_WARPS];
    uint32_t hits = 0, bg = 0, in = 0;
    for (uint32_t k = threadIdx.x; k < n; k += blockDim.x)
        hits += gm_verify_point(&map, m, r, pts[k], &bg, &in);
    hits = block_sum_u32(hits, s_hits);
    bg = block_sum_u32(bg, s_bg);
    in = block_sum_u32(in, s_in);
    return gm_score_of(n, in, hits, bg);
}

#endif
