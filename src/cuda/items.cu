/* items.cu: the reference's (key, basis) items on the GPU, the twin of
 * gm_basis_items_cpu (src/stages/bases.c), and its (key, triangle) items,
 * gm_tri_items_cpu's (src/stages/affine.c): one kernel, the key its functor
 * (keys.cuh).
 *
 * One thread block per basis.  The block's "seen" set of keys is a bitset of
 * 2^18 bits (keys are fu | fv << 7 | bin << 14 with fu, fv < 64, bin < 16)
 * in shared memory, 32 KB.  The cloud is taken in chunks of blockDim points,
 * thread t of a chunk owning point base + t, so that the CPU's order (the
 * first cloud point with a key wins, items in cloud order) is kept:
 *   1. every thread computes its point's key (or none);
 *   2. within a warp, __match_any_sync leaves only the lowest lane of each
 *      key;
 *   3. the warps then mark their keys in the bitset one after another, warp
 *      0 first (a __syncthreads between them): an atomicOr whose old word
 *      had the bit clear means that no earlier point (an earlier chunk, an
 *      earlier warp of this chunk, an earlier lane of this warp) had the key,
 *      so the point's key is a new item.  Warps in index order and lanes
 *      deduplicated by lowest index give the first occurrence, the same as
 *      the CPU's sequential scan.
 * Pass 1 counts the new items per basis; an exclusive scan (CUB) of the
 * counts gives every basis its output offset; pass 2 repeats the same logic
 * and places each new item with a block-wide exclusive scan of the chunk's
 * new-item flags.
 *
 * Exactness: keys are computed from frames made on the host (gm_frame_of)
 * with the CPU's float expressions (gm_frame_key, gm_near_endpoint); this
 * file is compiled with --fmad=false, so every key equals the CPU's. */
#include <stdint.h>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/cuda_check.cuh"
#include "cuda/gm_cuda.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/reduce_core.h"
#include "cuda/keys.cuh"
#include "cuda/items_cuda.h"

#define IT_THREADS 256
#define IT_WARPS (IT_THREADS / 32)
#define IT_KEY_BITS 18
#define IT_WORDS ((1u << IT_KEY_BITS) / 32)

/* Every key gm_frame_key and gm_aframe_key_cs can return fits the bitset. */
static_assert(2 * GM_UV_HALF <= (1 << 7) && GM_ANGLE_BINS <= (1 << (IT_KEY_BITS - 14)),
              "gm_frame_key's keys must be below 2^18");
static_assert(GM_AFF_KEYS <= (1u << IT_KEY_BITS), "gm_aframe_key_cs's keys must be below 2^18");

typedef cub::BlockScan<uint32_t, IT_THREADS> ItScan;

/* FILL false: d_cnt[basis] = its number of items.  FILL true: its items at
 * keys/vals + d_off[basis]. */
template <bool FILL, class Keys>
static __global__ void __launch_bounds__(IT_THREADS)
    k_items(Keys key_of, uint32_t n_cloud, uint32_t *d_cnt, const uint32_t *d_off, uint32_t *keys,
            uint32_t *vals)
{
    __shared__ uint32_t seen[IT_WORDS];
    __shared__ uint32_t s_count;
    __shared__ typename ItScan::TempStorage scan_tmp;
    const uint32_t d = blockIdx.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (uint32_t i = threadIdx.x; i < IT_WORDS; i += IT_THREADS)
        seen[i] = 0;
    if (threadIdx.x == 0)
        s_count = 0;
    __syncthreads();
    uint32_t mine = 0;                           /* count pass: this thread's new items */
    uint32_t out = FILL ? d_off[d] : 0;          /* fill pass: next output index */
    for (uint32_t base = 0; base < n_cloud; base += IT_THREADS) {
        const uint32_t k = base + threadIdx.x;
        const uint32_t key = k < n_cloud ? key_of(d, k) : GM_KEY_EMPTY;
        /* the lowest lane of each key within the warp */
        const uint32_t same = __match_any_sync(0xFFFFFFFFu, key);
        const bool lead = key != GM_KEY_EMPTY && (__ffs(same) - 1) == lane;
        uint32_t is_new = 0;
        for (int w = 0; w < IT_WARPS; w++) {
            if (warp == w && lead) {
                const uint32_t bit = 1u << (key & 31);
                is_new = (atomicOr(&seen[key >> 5], bit) & bit) == 0;
            }
            __syncthreads();
        }
        if (FILL) {
            uint32_t pos, total;
            ItScan(scan_tmp).ExclusiveSum(is_new, pos, total);
            if (is_new) {
                keys[out + pos] = key;
                vals[out + pos] = d;
            }
            out += total;
            __syncthreads(); /* scan_tmp is reused by the next chunk */
        } else {
            mine += is_new;
        }
    }
    if (!FILL) {
        if (mine)
            atomicAdd(&s_count, mine);
        __syncthreads();
        if (threadIdx.x == 0)
            d_cnt[d] = s_count;
    }
}

/* The items of nb bases (pair_keys) or triangles (tri_keys): both passes,
 * the scan between them, one synchronization. */
template <class Keys>
static gm_status items_of(Keys key_of, uint32_t nb, uint32_t n_cloud, uint32_t **d_keys,
                          uint32_t **d_vals, uint32_t *n_items, cudaStream_t stream)
{
    /* d_cnt[nb + 1] (the last one 0), d_off[nb + 1]: d_off[nb] is the total */
    uint32_t *d_cnt = NULL, *d_off = NULL, *keys = NULL, *vals = NULL;
    void *d_temp = NULL;
    size_t temp_bytes = 0;
    uint32_t total = 0;
    gm_status st = GM_OK;
    cudaError_t err = cudaSuccess;
    const size_t nc = (size_t)nb + 1;
    GM_CUDA_TRY(err, gm_cuda_malloc_async((void **)&d_cnt, 2 * nc * sizeof *d_cnt, stream));
    if (err == cudaSuccess)
        d_off = d_cnt + nc;
    GM_CUDA_TRY(err, cudaMemsetAsync(d_cnt + nb, 0, sizeof *d_cnt, stream));
    if (err == cudaSuccess) {
        k_items<false><<<nb, IT_THREADS, 0, stream>>>(key_of, n_cloud, d_cnt, NULL, NULL, NULL);
        GM_CUDA_TRY(err, gm_cuda_launched());
    }
    GM_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, d_cnt, d_off, (int64_t)nc,
                                                   stream));
    GM_CUDA_TRY(err, gm_cuda_malloc_async(&d_temp, temp_bytes ? temp_bytes : 1, stream));
    GM_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(d_temp, temp_bytes, d_cnt, d_off, (int64_t)nc,
                                                   stream));
    GM_CUDA_TRY(err, cudaMemcpyAsync(&total, d_off + nb, sizeof total, cudaMemcpyDeviceToHost,
                                     stream));
    GM_CUDA_TRY(err, gm_cuda_stream_wait(stream));
    if (err == cudaSuccess && total) {
        GM_CUDA_TRY(err, gm_cuda_malloc_async((void **)&keys, (size_t)total * sizeof *keys, stream));
        GM_CUDA_TRY(err, gm_cuda_malloc_async((void **)&vals, (size_t)total * sizeof *vals, stream));
        if (err == cudaSuccess) {
            k_items<true><<<nb, IT_THREADS, 0, stream>>>(key_of, n_cloud, NULL, d_off, keys, vals);
            GM_CUDA_TRY(err, gm_cuda_launched());
        }
    }
    if (d_temp)
        (void)cudaFreeAsync(d_temp, stream);
    if (d_cnt)
        (void)cudaFreeAsync(d_cnt, stream);
    if (err != cudaSuccess) {
        if (keys)
            (void)cudaFreeAsync(keys, stream);
        if (vals)
            (void)cudaFreeAsync(vals, stream);
        (void)cudaGetLastError();
        st = gm_cuda_status(err);
        return st;
    }
    *d_keys = keys;
    *d_vals = vals;
    *n_items = total;
    return GM_OK;
}

extern "C" gm_status gm_basis_items_cuda(const gm_vote_basis *d_bases, uint32_t nb,
                                         const gm_point *d_cloud, uint32_t n_cloud,
                                         uint32_t **d_keys, uint32_t **d_vals, uint32_t *n_items,
                                         cudaStream_t stream)
{
    if (!d_keys || !d_vals || !n_items)
        return GM_ERR_INVALID;
    *d_keys = *d_vals = NULL;
    *n_items = 0;
    if (nb == 0 || n_cloud == 0)
        return GM_OK;
    if (!d_bases || !d_cloud)
        return GM_ERR_INVALID;
    return items_of(pair_keys{d_bases, d_cloud}, nb, n_cloud, d_keys, d_vals, n_items, stream);
}

extern "C" gm_status gm_tri_items_cuda(const gm_tri_frame *d_tris, uint32_t nt,
                                       const gm_point *d_cloud, const float *d_cs,
                                       uint32_t n_cloud, uint32_t **d_keys, uint32_t **d_vals,
                                       uint32_t *n_items, cudaStream_t stream)
{
    if (!d_keys || !d_vals || !n_items)
        return GM_ERR_INVALID;
    *d_keys = *d_vals = NULL;
    *n_items = 0;
    if (nt == 0 || n_cloud == 0)
        return GM_OK;
    if (!d_tris || !d_cloud || !d_cs)
        return GM_ERR_INVALID;
    return items_of(tri_keys{d_tris, d_cloud, d_cs}, nt, n_cloud, d_keys, d_vals, n_items, stream);
}

static __global__ void k_share_count(const uint32_t *vals, uint32_t n, uint32_t nb, uint32_t *count)
{
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (vals[i] < nb)
            atomicAdd(&count[vals[i]], 1u);
}

static __global__ void k_share_div(const uint32_t *count, uint32_t nb, uint32_t n, float *share)
{
    uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < nb)
        share[b] = gm_basis_share(count[b], n);
}

extern "C" gm_status gm_basis_share_cuda(const uint32_t *d_vals, uint32_t n_items, uint32_t nb,
                                         uint32_t *d_count, float *d_share, cudaStream_t stream)
{
    if (nb == 0)
        return GM_OK;
    if (!d_count || !d_share || (n_items && !d_vals))
        return GM_ERR_INVALID;
    GM_CUDA_CHECK(cudaMemsetAsync(d_count, 0, (size_t)nb * sizeof *d_count, stream));
    if (n_items) {
        uint32_t blocks = (n_items + 255) / 256;
        k_share_count<<<blocks < 1024 ? blocks : 1024, 256, 0, stream>>>(d_vals, n_items, nb, d_count);
        GM_CUDA_CHECK_LAUNCH();
    }
    k_share_div<<<(nb + 255) / 256, 256, 0, stream>>>(d_count, nb, n_items, d_share);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}
