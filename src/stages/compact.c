/* compact.c: compaction of flagged pixels into an index array by a prefix sum,
 * the way the GPU does it: per-block counts, an exclusive scan over blocks,
 * then each block writes its indices at its offset. Order is preserved. */
#include <omp.h>
#include <stdlib.h>

#include "common/common.h"
#include "stages/compact.h"

#define GM_COMPACT_BLOCK 16384

uint32_t gm_compact_flags_cpu(const uint8_t *flags, uint32_t n, uint32_t *out)
{
    uint32_t nblk = (n + GM_COMPACT_BLOCK - 1) / GM_COMPACT_BLOCK;
    if (nblk == 0)
        return 0;
    uint32_t stack_counts[64];
    uint32_t *counts = nblk <= 64 ? stack_counts : malloc(nblk * sizeof *counts);
    if (!counts) { /* fall back to one sequential pass */
        uint32_t c = 0;
        for (uint32_t i = 0; i < n; i++)
            if (flags[i])
                out[c++] = i;
        return c;
    }
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (n >= GM_PAR_PIXELS)
    for (int64_t b = 0; b < (int64_t)nblk; b++) {
        uint32_t lo = (uint32_t)b * GM_COMPACT_BLOCK, hi = lo + GM_COMPACT_BLOCK;
        if (hi > n)
            hi = n;
        uint32_t c = 0;
        for (uint32_t i = lo; i < hi; i++)
            c += flags[i] != 0;
        counts[b] = c;
    }
    uint32_t total = 0;
    for (uint32_t b = 0; b < nblk; b++) { /* exclusive scan */
        uint32_t c = counts[b];
        counts[b] = total;
        total += c;
    }
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (n >= GM_PAR_PIXELS)
    for (int64_t b = 0; b < (int64_t)nblk; b++) {
        uint32_t lo = (uint32_t)b * GM_COMPACT_BLOCK, hi = lo + GM_COMPACT_BLOCK;
        if (hi > n)
            hi = n;
        uint32_t o = counts[b];
        for (uint32_t i = lo; i < hi; i++)
            if (flags[i])
                out[o++] = i;
    }
    if (counts != stack_counts)
        free(counts);
    return total;
}
