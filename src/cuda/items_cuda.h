/* items_cuda.h: the reference items stage on the GPU (src/cuda/items.cu), C
 * interface. */
#ifndef GM_ITEMS_CUDA_H
#define GM_ITEMS_CUDA_H

#include "cuda/gm_cuda.h"
#include "stages/points.h"
#include "stages/vote.h"
#include "stages/affine_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* All (key, basis) items of the reference, exactly as gm_basis_items_cpu
 * makes them: for every basis d of d_bases (frames from gm_frame_of on the
 * host, and the endpoints) and every point of d_cloud, the point's key in
 * d's frame; points near an endpoint and keys outside the window are left
 * out, and a key is stored once per basis (its first cloud point wins).
 * The order equals the CPU's: basis 0's items in cloud order, then basis
 * 1's, ...; (*d_vals)[i] is the basis of (*d_keys)[i].
 *
 * Two passes over the same per-basis logic: a count pass, an exclusive scan
 * of the counts, then a fill pass into arrays of exactly *n_items entries,
 * which this function allocates stream-ordered (cudaMallocAsync, from the
 * device's default memory pool); the caller frees both with cudaFree or
 * cudaFreeAsync.  It synchronizes the stream once (to read the total).
 * With no items (nb == 0, n_cloud == 0, or nothing in the window) *n_items
 * is 0 and *d_keys = *d_vals = NULL.  Errors: GM_ERR_INVALID (NULL
 * arguments), GM_ERR_NOMEM, GM_ERR_DEVICE; on error nothing stays
 * allocated and *d_keys = *d_vals = NULL. */
gm_status gm_basis_items_cuda(const gm_vote_basis *d_bases, uint32_t nb, const gm_point *d_cloud,
                              uint32_t n_cloud, uint32_t **d_keys, uint32_t **d_vals,
                              uint32_t *n_items, cudaStream_t stream);

/* The same for nt triangles (d_tris: gm_tri_frame_of on the host): every
 * triangle's distinct keys (gm_aframe_key_cs on d_cs, gm_points_cs of the
 * cloud on the host; the points near a vertex left out), each once, in
 * cloud order -- the same items as gm_tri_items_cpu, whose order within a
 * triangle is its grid's (a table and its votes do not depend on it). */
gm_status gm_tri_items_cuda(const gm_tri_frame *d_tris, uint32_t nt, const gm_point *d_cloud,
                            const float *d_cs, uint32_t n_cloud, uint32_t **d_keys,
                            uint32_t **d_vals, uint32_t *n_items, cudaStream_t stream);

/* Each basis's share of the items (reference.c's level share): d_share[b] =
 * (items of basis b) / n_items, for b < nb, from the basis index of every
 * item (d_vals of gm_basis_items_cuda); equal to the CPU's float sums (a
 * count below 2^24 is exact in float, then one division).  d_count: nb
 * counters of scratch.  Asynchronous on stream. */
gm_status gm_basis_share_cuda(const uint32_t *d_vals, uint32_t n_items, uint32_t nb,
                              uint32_t *d_count, float *d_share, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
