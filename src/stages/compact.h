/* compact.h: prefix-sum compaction of flagged pixels (compact.c). */
#ifndef GM_COMPACT_H
#define GM_COMPACT_H

#include "common/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the indices i with flags[i] != 0, in increasing order, into out
 * (capacity n); returns the count.  Two-pass blocked scan, all cores. */
uint32_t gm_compact_flags_cpu(const uint8_t *flags, uint32_t n, uint32_t *out);

#ifdef __cplusplus
}
#endif

#endif
