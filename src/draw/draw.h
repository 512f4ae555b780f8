/* draw.h: the drawing helpers behind gm_draw_result and gm_draw_path
 * (draw.c; the public half is in gmatch.h). */
#ifndef GM_DRAW_H
#define GM_DRAW_H

#include "gmatch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A w x h canvas, black. */
gm_status gm_rgb_alloc(int w, int h, gm_rgb *out);
/* A line `width` canvas pixels wide; pixels outside the canvas are skipped. */
void gm_draw_line(gm_rgb *c, double x0, double y0, double x1, double y1, int width, uint8_t r,
                  uint8_t g, uint8_t b);
/* Text in a 5 x 7 font scaled k times, top left at (x, y); returns the x after it. */
int gm_draw_text(gm_rgb *c, int x, int y, int k, const char *s, uint8_t r, uint8_t g, uint8_t b);

#ifdef __cplusplus
}
#endif

#endif
