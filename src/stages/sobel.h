/* sobel.h: smoothing, Sobel gradients, thinning and the adaptive threshold
 * (sobel.c; its CUDA twin src/cuda/sobel.cu). */
#ifndef GM_SOBEL_H
#define GM_SOBEL_H

#include "common/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int w, h;
    int16_t *gx, *gy;   /* [w*h] Sobel of the binomially smoothed image (x16 scale) */
    int32_t *mag2;      /* [w*h] gx*gx + gy*gy */
    uint8_t *edge;      /* [w*h] 1 where a thinned edge pixel is above threshold */
    int32_t threshold;  /* on mag2 */
} gm_edges;

/* Allocates e's arrays (free with gm_edges_free).  max_edges bounds how many
 * edge pixels the adaptive threshold keeps (the strongest ones). */
gm_status gm_edges_cpu(gm_view img, int max_edges, gm_edges *e);
void gm_edges_free(gm_edges *e);
/* The rules of the edge stage, shared with its CUDA twin (src/cuda/sobel.cu).
 * Edge pixels within GM_EDGE_MARGIN pixels of the border are dropped: the
 * replicated border makes their gradients unreliable.  GM_MIN_MAG: the
 * smallest edge magnitude, in units of the 16x-scaled Sobel (a clean step of
 * about 3 grey levels; below it is sensor noise and JPEG ringing, whatever
 * the image).  GM_REL_MAG: an edge must also reach this fraction of the 99th
 * percentile magnitude, so low-contrast images keep their edges and
 * high-contrast ones drop texture noise.  The threshold histogram has
 * GM_EDGE_HIST_BINS bins of 1 << GM_EDGE_HIST_SHIFT magnitude units. */
#define GM_EDGE_MARGIN 2
#define GM_MIN_MAG 96
#define GM_REL_MAG 0.06
#define GM_EDGE_HIST_BINS 1024
#define GM_EDGE_HIST_SHIFT 5

/* Quantized gradient direction used by the thinning: 0 horizontal, 1 vertical,
 * 2 diagonal down-right, 3 diagonal down-left.  tan(22.5 deg) ~ 0.4142 as
 * 414/1000 keeps it integer (|g| <= 16320, so g * 1000 fits an int). */
static inline GM_HD int gm_edge_dir(int gx, int gy)
{
    int ax = gx < 0 ? -gx : gx, ay = gy < 0 ? -gy : gy;
    if (ay * 1000 <= ax * 414)
        return 0;
    if (ax * 1000 <= ay * 414)
        return 1;
    return ((gx > 0) == (gy > 0)) ? 2 : 3;
}

#ifdef __cplusplus
}
#endif

#endif
