/* reduce.c: the best cells of the vote matrix.  First the best of each
 * query-basis row (lowest reference index on ties), then the k best rows:
 * k candidates from k different query bases, which keeps one busy query
 * basis from filling the list.  Cells are ranked by votes above chance. */
#include <math.h>
#include <stdlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/common.h"
#include "stages/reduce.h"
#include "stages/reduce_core.h"

#define GM_REDUCE_BLOCK 16

static int cand_cmp(const void *a, const void *b)
{
    const gm_candidate *p = a, *q = b;
    if (p->score != q->score)
        return p->score < q->score ? 1 : -1;
    if (p->query_basis != q->query_basis)
        return p->query_basis < q->query_basis ? -1 : 1;
    return p->ref_basis < q->ref_basis ? -1 : p->ref_basis > q->ref_basis;
}

/* Whether a block of GM_REDUCE_BLOCK counts holds one above bs (>= 0):
 * v > bs for an integer v is v > floor(bs).  SSE2 (every x86-64): the
 * saturating difference v - t is not zero exactly where v > t. */
static inline int block_above(const uint16_t *v, float bs)
{
    uint16_t t = bs >= 65535.0f ? 65535 : (uint16_t)bs; /* floor: bs >= 0 */
#ifdef __SSE2__
    __m128i tv = _mm_set1_epi16((short)t);
    __m128i a = _mm_subs_epu16(_mm_loadu_si128((const __m128i *)v), tv);
    __m128i b = _mm_subs_epu16(_mm_loadu_si128((const __m128i *)(v + 8)), tv);
    return _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_or_si128(a, b), _mm_setzero_si128())) != 0xFFFF;
#else
    int any = 0;
    for (int i = 0; i < GM_REDUCE_BLOCK; i++)
        any |= v[i] > t;
    return any;
#endif
}

gm_candidate gm_reduce_row_cpu(const uint16_t *row, const float *share, uint32_t n_ref, uint32_t q)
{
    uint32_t total = 0;
    for (uint32_t r = 0; r < n_ref; r++)
        total += row[r];
    uint32_t bi = 0;
    float bs = -INFINITY;
    /* in blocks of GM_REDUCE_BLOCK cells, a block that cannot hold the
     * best skipped with one vectorized test: on a fine level a row has tens
     * of thousands of cells, and the per-cell branch, square root and
     * division of a plain scan cost as much as the votes themselves.  Cells
     * are visited in the same order, so the best and its ties are the same
     * (the outputs on the public and photo tiers are identical). */
    for (uint32_t r0 = 0; r0 < n_ref; r0 += GM_REDUCE_BLOCK) {
        uint32_t end = n_ref - r0 < GM_REDUCE_BLOCK ? n_ref : r0 + GM_REDUCE_BLOCK;
        if (end - r0 == GM_REDUCE_BLOCK) {
            /* a whole block: skipped when it has no vote, or, once the
             * best is positive, when no cell's d (below) passes it; both
             * tests vectorize, d is computed as in the cell loop */
            int any = 0;
            if (bs >= 0.0f) {
                /* first on the votes alone (d <= v: the chance share is
                 * not negative), which skips most blocks of a long row
                 * without reading its shares */
                if (!block_above(row + r0, bs))
                    continue;
                any = 0;
                for (uint32_t i = 0; i < GM_REDUCE_BLOCK; i++)
                    any |= gm_cell_excess(row[r0 + i], gm_cell_chance(total, share[r0 + i])) > bs;
            } else {
                for (uint32_t i = 0; i < GM_REDUCE_BLOCK; i++)
                    any |= row[r0 + i] != 0;
            }
            if (!any)
                continue;
        }
        for (uint32_t r = r0; r < end; r++) {
            if (row[r] == 0)
                continue;
            float l = gm_cell_chance(total, share[r]);
            float d = gm_cell_excess(row[r], l);
            /* the divisor sqrt(l + 1) is 1 or more, so z is at most d when
             * d >= 0 (rounding is monotone): once the best is positive, a
             * cell whose d does not pass it cannot, and its square root and
             * division are skipped.  The same best, exactly. */
            if (bs >= 0.0f && d <= bs)
                continue;
            float z = gm_cell_score(d, l);
            if (z > bs) {
                bs = z;
                bi = r;
            }
        }
    }
    return (gm_candidate){bi, q, row[bi], bs};
}

uint32_t gm_reduce_topk_cpu(const uint16_t *votes, const float *share, uint32_t n_ref,
                            uint32_t n_q, uint32_t k, gm_candidate *out)
{
    if (n_ref == 0 || n_q == 0 || k == 0)
        return 0;
    gm_candidate *best = malloc((size_t)n_q * sizeof *best);
    if (!best)
        return 0;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if ((size_t)n_q * n_ref >= GM_PAR_PIXELS)
    for (int64_t q = 0; q < (int64_t)n_q; q++)
        best[q] = gm_reduce_row_cpu(votes + (size_t)q * n_ref, share, n_ref, (uint32_t)q);
    uint32_t m = gm_reduce_select_cpu(best, n_q, k, out);
    free(best);
    return m;
}

uint32_t gm_reduce_select_cpu(gm_candidate *best, uint32_t n_q, uint32_t k, gm_candidate *out)
{
    qsort(best, n_q, sizeof *best, cand_cmp);
    uint32_t m = n_q < k ? n_q : k;
    for (uint32_t i = 0; i < m; i++)
        out[i] = best[i];
    return m;
}

float *gm_item_shares(const uint32_t *vals, uint32_t n, uint32_t nb)
{
    float *share = malloc((nb ? nb : 1) * sizeof *share);
    uint32_t *count = calloc(nb ? nb : 1, sizeof *count);
    if (share && count) {
        for (uint32_t i = 0; i < n; i++)
            count[vals[i]]++;
        for (uint32_t i = 0; i < nb; i++)
            share[i] = gm_basis_share(count[i], n);
    } else {
        free(share);
        share = NULL;
    }
    free(count);
    return share;
}
