/* vote.c: every chosen query basis looks up the key of every query point in
 * the reference's multi-value table and votes for each reference basis stored
 * under it (paper section 6).  The matrix is query-basis major, so on the CPU
 * one thread owns a row and no atomics are needed; counts saturate at 65535.
 *
 * gm_vote_rows_cpu is what the matcher runs: like the GPU kernel, it counts
 * one row at a time in a buffer that stays in cache and reduces it at once,
 * never writing the whole matrix (n_q x n_ref x 2 bytes: 8 MB for a
 * 512x512 reference, 40 MB and more for large ones).  Time hardly moves
 * (public stills, 2 cores, vote + reduce median 10.3 -> 10.0 ms): the
 * increments themselves are the cost, every reference basis stored under a
 * key (7 to 40 a key at level 0 of the public references).
 * Tried and dropped (same bench, same results): a list of the row's
 * touched cells so that the reduction and the re-zeroing visit only those
 * (vote 10.0 -> 14.1 ms: the branch in the increment loop costs more than
 * the scans it saves), and skipping cells whose count cannot beat the best
 * score so far (the reduction went from 13% to 18% of a perf profile: the
 * branch stops the scan from vectorizing).
 * gm_vote_cpu keeps the whole matrix for the tests and the GPU's parity
 * checks. */
#include <stdlib.h>
#include <string.h>

#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/reduce.h"

/* Row q of the vote matrix added into row (n_ref counters, zeroed by the caller). */
static void vote_row(const gm_multi *table, uint32_t n_ref, const gm_points *qbasis_pts,
                     uint32_t qkey, const gm_points *qcloud, uint16_t *row)
{
    gm_point a = qbasis_pts->p[qkey >> 16], b = qbasis_pts->p[qkey & 0xFFFF];
    gm_frame f = gm_frame_of(a, b);
    gm_key_batch kb = {table, row, 0, {0}};
    for (uint32_t k = 0; k < qcloud->n; k++) {
        if (gm_near_endpoint(a, b, qcloud->p[k]))
            continue;
        uint32_t key = gm_frame_key(&f, qcloud->p[k]);
        if (key != GM_KEY_EMPTY)
            gm_batch_add(&kb, key);
    }
    gm_batch_flush(&kb);
}

void gm_vote_cpu(const gm_multi *table, uint32_t n_ref, const gm_points *qbasis_pts,
                 const uint32_t *qbasis_keys, uint32_t n_q, const gm_points *qcloud,
                 uint16_t *votes)
{
#pragma omp parallel for num_threads(gm_threads()) schedule(dynamic, 4)
    for (int64_t q = 0; q < (int64_t)n_q; q++) {
        memset(votes + (size_t)q * n_ref, 0, (size_t)n_ref * sizeof *votes);
        vote_row(table, n_ref, qbasis_pts, qbasis_keys[q], qcloud, votes + (size_t)q * n_ref);
    }
}

gm_status gm_rows_reduce_cpu(uint32_t n_ref, const float *share, uint32_t n_q, gm_row_fill fill,
                             const void *ctx, gm_candidate *best)
{
    int failed = 0;
#pragma omp parallel num_threads(gm_threads()) reduction(| : failed)
    {
        uint16_t *row = malloc((n_ref ? n_ref : 1) * sizeof *row);
        failed = row == NULL;
#pragma omp for schedule(dynamic, 4)
        for (int64_t q = 0; q < (int64_t)n_q; q++) {
            if (!row)
                continue;
            memset(row, 0, (size_t)n_ref * sizeof *row);
            fill(ctx, (uint32_t)q, row);
            best[q] = gm_reduce_row_cpu(row, share, n_ref, (uint32_t)q);
        }
        free(row);
    }
    return failed ? GM_ERR_NOMEM : GM_OK;
}

typedef struct {
    const gm_multi *table;
    uint32_t n_ref;
    const gm_points *qbasis_pts, *qcloud;
    const uint32_t *qbasis_keys;
} pair_rows;

static void fill_pair_row(const void *ctx, uint32_t q, uint16_t *row)
{
    const pair_rows *c = ctx;
    vote_row(c->table, c->n_ref, c->qbasis_pts, c->qbasis_keys[q], c->qcloud, row);
}

gm_status gm_vote_rows_cpu(const gm_multi *table, uint32_t n_ref, const float *share,
                           const gm_points *qbasis_pts, const uint32_t *qbasis_keys, uint32_t n_q,
                           const gm_points *qcloud, gm_candidate *best)
{
    pair_rows c = {table, n_ref, qbasis_pts, qcloud, qbasis_keys};
    return gm_rows_reduce_cpu(n_ref, share, n_q, fill_pair_row, &c, best);
}
