/* vote.h: query bases voting for reference bases through the multi-value
 * table (vote.c, paper section 6; its CUDA twin src/cuda/vote.cu). */
#ifndef GM_VOTE_H
#define GM_VOTE_H

#include "hash/cuckoo.h"
#include "stages/bases.h"
#include "stages/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A query basis as the GPU voting kernel takes it: its frame (made on the
 * host by gm_frame_of, so CPU and GPU keys agree) and its endpoints. */
typedef struct {
    gm_frame f;
    gm_point a, b;
} gm_vote_basis;

/* votes[q * n_ref + r] += 1 for every query basis q (dense index), every
 * cloud point, every reference basis r stored under the point's key. */
void gm_vote_cpu(const gm_multi *table, uint32_t n_ref, const gm_points *qbasis_pts,
                 const uint32_t *qbasis_keys, uint32_t n_q, const gm_points *qcloud,
                 uint16_t *votes);

/* (vote.c) gm_vote_cpu and the per-row step of gm_reduce_topk_cpu fused, as the GPU
 * does it: each query basis's row is counted in a per-thread buffer that
 * stays in cache and reduced at once to best[q] (equal to
 * gm_reduce_row_cpu of gm_vote_cpu's row); the n_q x n_ref matrix is never
 * written.  Returns GM_ERR_NOMEM when a thread's row cannot be allocated. */
/* The loop both fuse: each of the n_q rows (n_ref counters, zeroed) filled
 * by fill(ctx, q, row) on some thread, reduced to best[q] at once. */
typedef void (*gm_row_fill)(const void *ctx, uint32_t q, uint16_t *row);
gm_status gm_rows_reduce_cpu(uint32_t n_ref, const float *share, uint32_t n_q, gm_row_fill fill,
                             const void *ctx, gm_candidate *best);
gm_status gm_vote_rows_cpu(const gm_multi *table, uint32_t n_ref, const float *share,
                           const gm_points *qbasis_pts, const uint32_t *qbasis_keys, uint32_t n_q,
                           const gm_points *qcloud, gm_candidate *best);

/* The votes of n keys (n <= GM_VOTE_CHUNK): every basis stored under each
 * gets one more (counts saturate at 65535).  All n are looked up first, then
 * their value runs counted, the run two ahead prefetched: the lookups are
 * independent of each other and of the counting, so their cache misses
 * overlap instead of each waiting for the previous key's increments. */
#define GM_VOTE_CHUNK 64
static inline void gm_vote_keys(const gm_multi *table, const uint32_t *keys, uint32_t n,
                                uint16_t *row)
{
    const uint32_t *v[GM_VOTE_CHUNK];
    uint32_t c[GM_VOTE_CHUNK];
    for (uint32_t j = 0; j < n; j++)
        c[j] = gm_multi_find(table, keys[j], &v[j]);
    for (uint32_t j = 0; j < n; j++) {
        if (j + 2 < n && c[j + 2])
            __builtin_prefetch(v[j + 2]);
        const uint32_t *vj = v[j];
        for (uint32_t i = 0; i < c[j]; i++)
            if (row[vj[i]] != UINT16_MAX)
                row[vj[i]]++;
    }
}

/* A row's keys gathered GM_VOTE_CHUNK at a time for gm_vote_keys: add each,
 * then flush the rest. */
typedef struct {
    const gm_multi *table;
    uint16_t *row;
    uint32_t n;
    uint32_t keys[GM_VOTE_CHUNK];
} gm_key_batch;

static inline void gm_batch_add(gm_key_batch *b, uint32_t key)
{
    b->keys[b->n++] = key;
    if (b->n == GM_VOTE_CHUNK) {
        gm_vote_keys(b->table, b->keys, b->n, b->row);
        b->n = 0;
    }
}

static inline void gm_batch_flush(gm_key_batch *b)
{
    gm_vote_keys(b->table, b->keys, b->n, b->row);
    b->n = 0;
}

#ifdef __cplusplus
}
#endif

#endif
