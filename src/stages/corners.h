/* corners.h: the basis points (corners.c; the formulas shared with the GPU
 * in corners_core.h). */
#ifndef GM_CORNERS_H
#define GM_CORNERS_H

#include "stages/points.h"
#include "stages/sobel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Corner points (minimum eigenvalue of the structure tensor of the Sobel
 * gradients), local maxima, spread evenly, at most `target`.  Caller frees. */
gm_status gm_corners_cpu(const gm_edges *e, uint32_t target, gm_points *pts);

#ifdef __cplusplus
}
#endif

#endif
