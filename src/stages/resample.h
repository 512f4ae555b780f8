/* resample.h: integer box downscale to the working size (resample.c). */
#ifndef GM_RESAMPLE_H
#define GM_RESAMPLE_H

#include "common/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Factor f >= 1 such that max(w,h)/f <= max_side. */
int gm_downscale_factor(int w, int h, int max_side);
/* dst is (w/f) x (h/f), packed (stride = dst width).  Box average, rounded. */
void gm_downscale_cpu(gm_view src, int f, uint8_t *dst);

#ifdef __cplusplus
}
#endif

#endif
