/* reduce_cuda.h: the top-k step of the reduction on the GPU (src/cuda/reduce.cu),
 * C interface.  The per-row step (best reference basis of every query
 * basis) runs inside the voting kernel (vote_cuda.h). */
#ifndef GM_REDUCE_CUDA_H
#define GM_REDUCE_CUDA_H

#include "cuda/gm_cuda.h"
#include "stages/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gm_reduce_select_cpu on the device: the min(k, n) best of d_best[n] by
 * score descending, ties by query basis then reference basis (the CPU's
 * comparator, so the order is the same), written to d_out[0..].  Tiles of
 * GM_TOPK_TILE candidates are sorted in shared memory (bitonic), each keeps
 * its k best, and the survivors are reduced again until one tile is left.
 * d_tmp: gm_topk_tmp_count(n, k) candidates of scratch (none needed, may be
 * NULL, when n <= GM_TOPK_TILE).  k <= GM_TOPK_TILE.  Asynchronous on
 * stream. */
#define GM_TOPK_TILE 2048
gm_status gm_topk_cuda(const gm_candidate *d_best, uint32_t n, uint32_t k, gm_candidate *d_tmp,
                       gm_candidate *d_out, cudaStream_t stream);
size_t gm_topk_tmp_count(uint32_t n, uint32_t k);

#ifdef __cplusplus
}
#endif
#endif
