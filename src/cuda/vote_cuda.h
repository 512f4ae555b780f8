/* vote_cuda.h: the voting stage on the GPU (src/cuda/vote.cu), C interface. */
#ifndef GM_VOTE_CUDA_H
#define GM_VOTE_CUDA_H

#include "cuda/gm_cuda.h"
#include "stages/points.h"
#include "stages/vote.h"
#include "stages/reduce.h"
#include "stages/affine_core.h"

#define GM_VOTE_SCRATCH_BUDGET ((size_t)256 << 20)

#ifdef __cplusplus
extern "C" {
#endif

/* Votes of every query basis (d_qbases[q], frames from gm_frame_of on the
 * host) with the points d_cloud against the reference's multi-value table,
 * and per query basis the best reference basis by votes above chance
 * (d_share: each reference basis's share of the table's items), written to
 * d_best[q] -- exactly gm_vote_cpu followed by the per-row step of
 * gm_reduce_topk_cpu.  d_votes (optional, NULL to skip) receives the whole
 * n_q x n_ref matrix, saturated to 16 bits as on the CPU (for tests).
 * d_scratch: gm_vote_scratch_bytes() of counters, needed only when a row
 * is too large for shared memory (else 0 bytes and d_scratch may be NULL);
 * then the query bases are voted in tiles whose rows fit in
 * GM_VOTE_SCRATCH_BUDGET bytes, the scratch reused tile after tile (each row
 * is reduced to its best as soon as it is counted).
 * Asynchronous on stream. */
gm_status gm_vote_reduce_cuda(const gm_cuckoo_dev *table, uint32_t n_ref, const float *d_share,
                              const gm_vote_basis *d_qbases, uint32_t n_q, const gm_point *d_cloud,
                              uint32_t n_cloud, uint32_t *d_scratch, uint16_t *d_votes,
                              gm_candidate *d_best, cudaStream_t stream);
/* The same for n_q query triangles (d_qtris: gm_tri_frame_of on the host)
 * against a level's triangle table: each cloud point's key is
 * gm_aframe_key_cs on d_cs[2 k], d_cs[2 k + 1] (gm_points_cs on the host),
 * the points near a vertex left out -- exactly gm_tri_vote_rows_cpu. */
gm_status gm_tri_vote_reduce_cuda(const gm_cuckoo_dev *table, uint32_t n_ref, const float *d_share,
                                  const gm_tri_frame *d_qtris, uint32_t n_q,
                                  const gm_point *d_cloud, const float *d_cs, uint32_t n_cloud,
                                  uint32_t *d_scratch, uint16_t *d_votes, gm_candidate *d_best,
                                  cudaStream_t stream);
size_t gm_vote_scratch_bytes(uint32_t n_ref, uint32_t n_q);
/* Test hook (not thread-safe): rows > 0 makes every row count in global
 * scratch, in tiles of `rows` query bases; 0 restores the normal choice. */
void gm_vote_debug_tiles(uint32_t rows);

#ifdef __cplusplus
}
#endif
#endif
