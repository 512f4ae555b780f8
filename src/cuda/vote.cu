/* vote.cu: voting and the per-row reduction on the GPU (paper section 6).
 *
 * One thread block per query basis: its row of the vote matrix (one counter
 * per reference basis) lives in shared memory, the block's threads take the
 * query points, look each key up in the multi-value table and add a vote for
 * every reference basis stored under it with a shared-memory atomic; then the
 * block reduces its own row to the best cell.  The n x m matrix never goes
 * to device memory (the paper's global T, with its 80 G/s of random atomics
 * on a 40 MB matrix, is the slow step): each row is a tile, which is the
 * issue's tiling taken to one query basis per tile.  When the row does not
 * fit in shared memory, the block counts in a global scratch row instead.
 *
 * The triangles' vote (affine.c's three-point bases, for the models with
 * more freedom than a similarity) is the same kernel with another key: a
 * block per query triangle, its key of each cloud point from affine_core.h
 * (gm_aframe_key_cs, gm_near_vertex; keys.cuh), in the level's triangle
 * table (items.cu's gm_tri_items_cuda, cuckoo.cu's multi-value build).
 *
 * Exactness: keys are computed from frames made on the host (gm_frame_of,
 * whose atan2f differs between glibc and CUDA; gm_aframe_of) and, for the
 * triangles, from the host's cosines and sines of the points' angles, with
 * the CPU's float expressions and affine_core.h's direction bin, exact in
 * double on both; this file is compiled with --fmad=false so no
 * multiply-add is contracted, so every key, every vote and every score
 * equals the CPU's (gm_vote_cpu, gm_tri_vote_rows_cpu, gm_reduce_topk_cpu's
 * per-row step). */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_check.cuh"
#include "cuda/gm_cuda.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/reduce.h"
#include "stages/reduce_core.h"
#include "stages/affine_core.h"
#include "cuda/keys.cuh"
#include "cuda/vote_cuda.h"

#define GM_VOTE_THREADS 256

/* Best cell of a row: larger score wins, ties to the lower reference index. */
struct best_cell {
    float z;
    uint32_t r;
};

static __device__ __forceinline__ best_cell better(best_cell a, best_cell b)
{
    if (b.z > a.z || (b.z == a.z && b.r < a.r))
        return b;
    return a;
}

/* counts: the row (shared or global), n_ref counters. */
template <class Keys>
static __device__ void vote_row(uint32_t *counts, gm_cuckoo_view t, uint32_t n_ref,
                                const float *share, Keys keys, uint32_t n_cloud, uint32_t q,
                                uint16_t *d_votes, gm_candidate *d_best)
{
    for (uint32_t r = threadIdx.x; r < n_ref; r += blockDim.x)
        counts[r] = 0;
    __syncthreads();
    for (uint32_t k = threadIdx.x; k < n_cloud; k += blockDim.x) {
        uint32_t key = keys(q, k);
        if (key == GM_KEY_EMPTY)
            continue;
        int64_t s = gm_cuckoo_slot(t.nb, t.restart, t.h_c0, t.h_c1, t.seeds, t.keys, key);
        if (s < 0)
            continue;
        const uint32_t c = t.counts[s], o = t.offsets[s];
        for (uint32_t i = 0; i < c; i++)
            atomicAdd(&counts[t.values[o + i]], 1u);
    }
    __syncthreads();
    /* row total, then the best score (the CPU's expressions, in order) */
    __shared__ uint32_t s_total[GM_VOTE_THREADS / 32];
    __shared__ best_cell s_best[GM_VOTE_THREADS / 32];
    uint32_t part = 0;
    for (uint32_t r = threadIdx.x; r < n_ref; r += blockDim.x)
        part += counts[r];
    for (int off = 16; off > 0; off >>= 1)
        part += __shfl_down_sync(0xFFFFFFFFu, part, off);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    if (lane == 0)
        s_total[warp] = part;
    __syncthreads();
    uint32_t total = 0;
    for (int w = 0; w < nwarps; w++)
        total += s_total[w];
    best_cell mine = {-INFINITY, 0xFFFFFFFFu};
    for (uint32_t r = threadIdx.x; r < n_ref; r += blockDim.x) {
        uint32_t v = counts[r];
        if (d_votes)
            d_votes[(size_t)q * n_ref + r] = (uint16_t)(v > 65535u ? 65535u : v);
        if (v == 0)
            continue;
        float l = gm_cell_chance(total, share[r]);
        float z = gm_cell_score(gm_cell_excess(v, l), l);
        mine = better(mine, best_cell{z, r});
    }
    for (int off = 16; off > 0; off >>= 1) {
        best_cell o;
        o.z = __shfl_down_sync(0xFFFFFFFFu, mine.z, off);
        o.r = __shfl_down_sync(0xFFFFFFFFu, mine.r, off);
        mine = better(mine, o);
    }
    if (lane == 0)
        s_best[warp] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        best_cell bc = s_best[0];
        for (int w = 1; w < nwarps; w++)
            bc = better(bc, s_best[w]);
        /* an all-zero row: reference basis 0 with no votes, as the CPU */
        uint32_t r = bc.r == 0xFFFFFFFFu ? 0 : bc.r;
        d_best[q] = gm_candidate{r, q, counts[r], bc.z};
    }
}

template <class Keys>
static __global__ void k_vote_shared(gm_cuckoo_view t, uint32_t n_ref, const float *share,
                                     Keys keys, uint32_t n_cloud, uint16_t *d_votes,
                                     gm_candidate *d_best)
{
    extern __shared__ uint32_t s_counts[];
    vote_row(s_counts, t, n_ref, share, keys, n_cloud, blockIdx.x, d_votes, d_best);
}

/* Rows q0 + blockIdx.x of one tile of query bases; block b counts in
 * scratch row b. */
template <class Keys>
static __global__ void k_vote_global(gm_cuckoo_view t, uint32_t n_ref, const float *share,
                                     Keys keys, uint32_t n_cloud, uint32_t q0, uint32_t *scratch,
                                     uint16_t *d_votes, gm_candidate *d_best)
{
    vote_row(scratch + (size_t)blockIdx.x * n_ref, t, n_ref, share, keys, n_cloud,
             q0 + blockIdx.x, d_votes, d_best);
}

/* Query bases per tile when rows count in global scratch: the scratch stays
 * within GM_VOTE_SCRATCH_BUDGET bytes (at least one row). */
static uint32_t g_debug_tile_rows; /* gm_vote_debug_tiles */

extern "C" void gm_vote_debug_tiles(uint32_t rows) { g_debug_tile_rows = rows; }

static uint32_t tile_rows(uint32_t n_ref, uint32_t n_q)
{
    if (g_debug_tile_rows)
        return g_debug_tile_rows < n_q ? g_debug_tile_rows : n_q;
    size_t row = (size_t)n_ref * sizeof(uint32_t);
    size_t rows = GM_VOTE_SCRATCH_BUDGET / (row ? row : 1);
    if (rows < 1)
        rows = 1;
    return rows < n_q ? (uint32_t)rows : n_q;
}

/* The rows of n_q query bases (pair_keys) or triangles (tri_keys), each
 * reduced to its best. */
template <class Keys>
static gm_status vote_reduce(const gm_cuckoo_dev *table, uint32_t n_ref, const float *d_share,
                             Keys keys, uint32_t n_q, uint32_t n_cloud, uint32_t *d_scratch,
                             uint16_t *d_votes, gm_candidate *d_best, cudaStream_t stream)
{
    gm_cuckoo_view v = gm_cuckoo_dev_view(table);
    static int smem_done[GM_SMEM_DEVICES];
    int max_smem = 0;
    GM_CUDA_CHECK(gm_cuda_smem_optin(k_vote_shared<Keys>, smem_done, &max_smem));
    size_t smem = (size_t)n_ref * sizeof(uint32_t);
    if (smem <= (size_t)max_smem - 1024 && !g_debug_tile_rows) {
        k_vote_shared<Keys><<<n_q, GM_VOTE_THREADS, smem, stream>>>(v, n_ref, d_share, keys,
                                                                    n_cloud, d_votes, d_best);
        GM_CUDA_CHECK_LAUNCH();
        return GM_OK;
    }
    if (!d_scratch)
        return GM_ERR_INVALID; /* caller must provide gm_vote_scratch_bytes() */
    /* tiles of query bases, each row reduced to its best as it is voted, so
     * the running best of every row survives the reuse of the scratch */
    const uint32_t rows = tile_rows(n_ref, n_q);
    for (uint32_t q0 = 0; q0 < n_q; q0 += rows) {
        uint32_t nt = n_q - q0 < rows ? n_q - q0 : rows;
        k_vote_global<Keys><<<nt, GM_VOTE_THREADS, 0, stream>>>(v, n_ref, d_share, keys, n_cloud,
                                                                q0, d_scratch, d_votes, d_best);
        GM_CUDA_CHECK_LAUNCH();
    }
    return GM_OK;
}

extern "C" gm_status gm_vote_reduce_cuda(const gm_cuckoo_dev *table, uint32_t n_ref,
                                         const float *d_share, const gm_vote_basis *d_qbases,
                                         uint32_t n_q, const gm_point *d_cloud, uint32_t n_cloud,
                                         uint32_t *d_scratch, uint16_t *d_votes,
                                         gm_candidate *d_best, cudaStream_t stream)
{
    if (n_q == 0)
        return GM_OK;
    if (!table || !d_share || !d_qbases || !d_best || (n_cloud && !d_cloud) || n_ref == 0)
        return GM_ERR_INVALID;
    return vote_reduce(table, n_ref, d_share, pair_keys{d_qbases, d_cloud}, n_q, n_cloud,
                       d_scratch, d_votes, d_best, stream);
}

extern "C" gm_status gm_tri_vote_reduce_cuda(const gm_cuckoo_dev *table, uint32_t n_ref,
                                             const float *d_share, const gm_tri_frame *d_qtris,
                                             uint32_t n_q, const gm_point *d_cloud,
                                             const float *d_cs, uint32_t n_cloud,
                                             uint32_t *d_scratch, uint16_t *d_votes,
                                             gm_candidate *d_best, cudaStream_t stream)
{
    if (n_q == 0)
        return GM_OK;
    if (!table || !d_share || !d_qtris || !d_best || (n_cloud && (!d_cloud || !d_cs)) ||
        n_ref == 0)
        return GM_ERR_INVALID;
    return vote_reduce(table, n_ref, d_share, tri_keys{d_qtris, d_cloud, d_cs}, n_q, n_cloud,
                       d_scratch, d_votes, d_best, stream);
}

extern "C" size_t gm_vote_scratch_bytes(uint32_t n_ref, uint32_t n_q)
{
    int dev = 0, max_smem = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        max_smem = 48 * 1024;
    }
    size_t smem = (size_t)n_ref * sizeof(uint32_t);
    return smem <= (size_t)max_smem - 1024 && !g_debug_tile_rows ? 0
                                            : (size_t)n_ref * tile_rows(n_ref, n_q) * sizeof(uint32_t);
}
