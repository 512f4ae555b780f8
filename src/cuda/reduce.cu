/* reduce.cu: the k best candidates on the GPU (the reduction's second step).
 *
 * The voting kernel leaves one candidate per query basis (its best reference
 * basis, by votes above chance); this picks the k best of those on the
 * device, in the CPU's order (gm_reduce_select_cpu: score descending, ties by
 * query basis then reference basis), so that only k candidates travel to the
 * host.  A tile of candidates is sorted in shared memory by a bitonic network
 * (padded to a power of two with sentinels that sort last); each tile keeps
 * its k best, and tiles of survivors are reduced again until one is left. */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_check.cuh"
#include "cuda/reduce_cuda.h"

#define GM_TOPK_THREADS 1024

/* a goes before b in the CPU's order */
static __device__ __forceinline__ bool before(const gm_candidate &a, const gm_candidate &b)
{
    if (a.score != b.score)
        return a.score > b.score;
    if (a.query_basis != b.query_basis)
        return a.query_basis < b.query_basis;
    return a.ref_basis < b.ref_basis;
}

/* after every real candidate, whatever its score (-inf included) */
static __device__ __forceinline__ gm_candidate sentinel()
{
    return gm_candidate{0xFFFFFFFFu, 0xFFFFFFFFu, 0, -INFINITY};
}

/* Block b sorts in[b*TILE, min(n, (b+1)*TILE)) and writes its k best to
 * out[b*k, (b+1)*k), sentinels where the tile has fewer; the last pass (one
 * block) writes min(k, n) entries. */
static __global__ void __launch_bounds__(GM_TOPK_THREADS)
k_topk(const gm_candidate *__restrict__ in, uint32_t n, uint32_t k, gm_candidate *__restrict__ out)
{
    __shared__ gm_candidate s[GM_TOPK_TILE];
    const uint32_t first = blockIdx.x * GM_TOPK_TILE;
    const uint32_t m = n - first < GM_TOPK_TILE ? n - first : GM_TOPK_TILE;
    uint32_t p = 32;
    while (p < m)
        p <<= 1;
    for (uint32_t i = threadIdx.x; i < p; i += blockDim.x)
        s[i] = i < m ? in[first + i] : sentinel();
    __syncthreads();
    for (uint32_t size = 2; size <= p; size <<= 1) {
        for (uint32_t stride = size >> 1; stride > 0; stride >>= 1) {
            for (uint32_t i = threadIdx.x; i < p; i += blockDim.x) {
                uint32_t j = i ^ stride;
                if (j > i) {
                    const bool up = (i & size) == 0;
                    gm_candidate a = s[i], b = s[j];
                    if (up ? before(b, a) : before(a, b)) {
                        s[i] = b;
                        s[j] = a;
                    }
                }
            }
            __syncthreads();
        }
    }
    const bool last = gridDim.x == 1;
    const uint32_t keep = last ? (k < m ? k : m) : k;
    for (uint32_t i = threadIdx.x; i < keep; i += blockDim.x)
        out[(size_t)blockIdx.x * k + i] = i < p ? s[i] : sentinel();
}

static uint32_t tiles_of(uint32_t n) { return (n + GM_TOPK_TILE - 1) / GM_TOPK_TILE; }

/* Pass i writes tiles * k survivors into region i % 2 of the scratch; the
 * first pass writes the most. */
extern "C" size_t gm_topk_tmp_count(uint32_t n, uint32_t k)
{
    size_t sizes[2] = {0, 0};
    for (int region = 0; n > GM_TOPK_TILE; region ^= 1) {
        n = tiles_of(n) * k;
        if (n > sizes[region])
            sizes[region] = n;
    }
    return sizes[0] + sizes[1];
}

extern "C" gm_status gm_topk_cuda(const gm_candidate *d_best, uint32_t n, uint32_t k,
                                  gm_candidate *d_tmp, gm_candidate *d_out, cudaStream_t stream)
{
    if (n == 0 || k == 0)
        return GM_OK;
    if (!d_best || !d_out || k > GM_TOPK_TILE / 2 || (n > GM_TOPK_TILE && !d_tmp))
        return GM_ERR_INVALID;
    /* ping-pong between the two regions of d_tmp (sizes as gm_topk_tmp_count) */
    const size_t first_region = n > GM_TOPK_TILE ? (size_t)tiles_of(n) * k : 0;
    const gm_candidate *cur = d_best;
    uint32_t cn = n;
    int region = 0;
    while (cn > GM_TOPK_TILE) {
        gm_candidate *dst = region == 0 ? d_tmp : d_tmp + first_region;
        k_topk<<<tiles_of(cn), GM_TOPK_THREADS, 0, stream>>>(cur, cn, k, dst);
        GM_CUDA_CHECK_LAUNCH();
        cur = dst;
        cn = tiles_of(cn) * k;
        region ^= 1;
    }
    k_topk<<<1, GM_TOPK_THREADS, 0, stream>>>(cur, cn, k, d_out);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}
