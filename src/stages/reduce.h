/* reduce.h: the best cells of the vote matrix, scored against chance
 * (reduce.c; its CUDA twin src/cuda/reduce.cu). */
#ifndef GM_REDUCE_H
#define GM_REDUCE_H

#include "common/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t ref_basis, query_basis;  /* dense indices */
    uint32_t votes;
    float score;                      /* votes above chance, in standard deviations */
} gm_candidate;

/* The top k cells of the vote matrix, best per query basis, then the k best
 * of those, sorted by score descending (ties by index).  A cell's score is
 * (v - l) / sqrt(l + 1), where l = row_total * share[r] is the votes it would
 * get by chance: share[r] is reference basis r's fraction of all table items.
 * Raw counts would favour the bases with the most items (long bases over busy
 * regions) and the query bases with the most points.  Returns the count, or
 * 0 when out of memory. */
uint32_t gm_reduce_topk_cpu(const uint16_t *votes, const float *share, uint32_t n_ref,
                            uint32_t n_q, uint32_t k, gm_candidate *out);
/* The share[] above: each of nb bases' fraction of n table items (vals:
 * the items' basis indices).  NULL when out of memory; the caller frees. */
float *gm_item_shares(const uint32_t *vals, uint32_t n, uint32_t nb);
/* Its first step for one row q: the best cell (lowest index on ties), the
 * row's total and the cell's score as described above. */
gm_candidate gm_reduce_row_cpu(const uint16_t *row, const float *share, uint32_t n_ref, uint32_t q);
/* Its second step: the k best of the per-row bests (best[] is sorted in
 * place), as the GPU path takes them from the device's per-row reduction. */
uint32_t gm_reduce_select_cpu(gm_candidate *best, uint32_t n_q, uint32_t k, gm_candidate *out);

#ifdef __cplusplus
}
#endif

#endif
