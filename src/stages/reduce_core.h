/* reduce_core.h: the vote's formulas that both backends evaluate, once: a
 * cell's score against chance (reduce.c's per-row step, vote.cu's per-row
 * reduction) and a basis's share of the table's items (reduce.c's
 * gm_item_shares, items.cu's k_share_div).  Plain float arithmetic, one
 * rounding an operation: vote.cu and items.cu are built with --fmad=false
 * and IEEE division and square root, so the device's scores equal the
 * host's bit for bit (test_reduce_cuda, test_vote_cuda, test_items_cuda). */
#ifndef GM_REDUCE_CORE_H
#define GM_REDUCE_CORE_H

#include <math.h>
#include <stdint.h>

#include "common/common.h"

/* The votes that chance gives a cell of a row with `total` votes: its
 * reference basis's share of the table's items of them. */
static inline GM_HD float gm_cell_chance(uint32_t total, float share) { return (float)total * share; }

/* A cell's votes v above that. */
static inline GM_HD float gm_cell_excess(uint32_t v, float chance) { return (float)v - chance; }

/* The cell's score: its excess in standard deviations, d / sqrt(l + 1)
 * (1 or more below, so the score is at most the excess when that is not
 * negative: reduce.c skips the cells whose excess cannot win). */
static inline GM_HD float gm_cell_score(float excess, float chance)
{
    return excess / sqrtf(chance + 1.0f);
}

/* A basis's share of the n items of a table, count of them its. */
static inline GM_HD float gm_basis_share(uint32_t count, uint32_t n)
{
    return (float)count / (float)(n ? n : 1);
}

#endif
