/* draw.c: pictures of results (gmatch.h, "pictures"): what a person looks at
 * before trusting a number.
 *
 * A match: the reference, scaled to at most max_width pixels wide, in gray,
 * dimmed outside the query; inside, the query warped into the reference's
 * frame and blended in false colour (red and blue from the reference, green
 * from the query: where the two agree the picture is gray, a misalignment
 * shows as green and magenta fringes); the query's outline in red; a caption
 * with the status, the model and the numbers.  No match: the reference and
 * the query side by side, the caption saying so.  A path: every outline of
 * a video's frames on the reference, from blue (first) to red (last).
 *
 * Plain loops on 8-bit RGB, no dependency: the pictures are small (the
 * reference at most max_width wide) and made once per result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "draw/draw.h"
#include "stages/transform.h"

/* ---- the canvas ---------------------------------------------------------------- */

gm_status gm_rgb_alloc(int w, int h, gm_rgb *out)
{
    memset(out, 0, sizeof *out);
    size_t n;
    if (w <= 0 || h <= 0 || !gm_mul_ok((size_t)w * 3, (size_t)h, &n))
        return GM_ERR_INVALID;
    out->data = calloc(n, 1);
    if (!out->data)
        return GM_ERR_NOMEM;
    out->width = w, out->height = h, out->stride = (ptrdiff_t)w * 3;
    return GM_OK;
}

void gm_rgb_free(gm_rgb *img)
{
    if (!img)
        return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

static inline void put(gm_rgb *c, int x, int y, uint8_t r, uint8_t g, uint8_t b)
{
    if (x < 0 || y < 0 || x >= c->width || y >= c->height)
        return;
    uint8_t *p = c->data + (ptrdiff_t)y * c->stride + 3 * x;
    p[0] = r, p[1] = g, p[2] = b;
}

/* The mean of img over the source box of canvas pixel (x, y) at scale s
 * (canvas pixels per source pixel, at most 1): an area average, so a large
 * reference shrinks without aliasing. */
static uint8_t box(gm_view img, double s, int x, int y)
{
    int x0 = (int)floor(x / s), x1 = (int)ceil((x + 1) / s);
    int y0 = (int)floor(y / s), y1 = (int)ceil((y + 1) / s);
    x1 = x1 > img.width ? img.width : x1 <= x0 ? x0 + 1 : x1;
    y1 = y1 > img.height ? img.height : y1 <= y0 ? y0 + 1 : y1;
    x0 = x0 >= img.width ? img.width - 1 : x0;
    y0 = y0 >= img.height ? img.height - 1 : y0;
    uint32_t sum = 0, n = 0;
    for (int v = y0; v < y1; v++)
        for (int u = x0; u < x1; u++)
            sum += img.data[(ptrdiff_t)v * img.stride + u], n++;
    return (uint8_t)((sum + n / 2) / n);
}

/* Bilinear sample of img at (x, y); -1 outside. */
static int bilinear(gm_view img, double x, double y)
{
    if (!(x >= 0 && y >= 0 && x <= img.width - 1 && y <= img.height - 1))
        return -1;
    int x0 = (int)x, y0 = (int)y;
    int x1 = x0 + 1 < img.width ? x0 + 1 : x0, y1 = y0 + 1 < img.height ? y0 + 1 : y0;
    double fx = x - x0, fy = y - y0;
    const uint8_t *r0 = img.data + (ptrdiff_t)y0 * img.stride, *r1 = img.data + (ptrdiff_t)y1 * img.stride;
    double v = (r0[x0] * (1 - fx) + r0[x1] * fx) * (1 - fy) + (r1[x0] * (1 - fx) + r1[x1] * fx) * fy;
    return (int)(v + 0.5);
}

/* A line of the given width from (x0, y0) to (x1, y1), canvas pixels. */
void gm_draw_line(gm_rgb *c, double x0, double y0, double x1, double y1, int width, uint8_t r,
                  uint8_t g, uint8_t b)
{
    if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1))
        return;
    double len = hypot(x1 - x0, y1 - y0);
    /* a bound far outside the canvas: an outline through the line at
     * infinity is drawn as far as it matters */
    if (len > 1e5)
        return;
    int steps = (int)ceil(len * 2) + 1, h0 = -(width - 1) / 2, h1 = width / 2;
    for (int i = 0; i <= steps; i++) {
        double t = (double)i / steps;
        int x = (int)lround(x0 + (x1 - x0) * t), y = (int)lround(y0 + (y1 - y0) * t);
        for (int dy = h0; dy <= h1; dy++)
            for (int dx = h0; dx <= h1; dx++)
                put(c, x + dx, y + dy, r, g, b);
    }
}

/* ---- text: a 5 x 7 font for the captions ---------------------------------------- */

static const char k_chars[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ.-:=/%_";
static const uint8_t k_font[][7] = {
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}, {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}, {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}, {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}, {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C},
    {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11}, {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E},
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}, {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C},
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}, {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10},
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}, {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11},
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}, {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C},
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F},
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}, {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11},
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10},
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}, {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11},
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}, {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04},
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}, {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11},
    {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F},
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}, {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00},
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}, {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00},
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}, {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03},
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F},
};

/* Text at (x, y) (its top left), each font pixel k x k canvas pixels;
 * lower case as upper case, characters without a glyph as spaces.  Returns
 * the x after the text. */
int gm_draw_text(gm_rgb *c, int x, int y, int k, const char *s, uint8_t r, uint8_t g, uint8_t b)
{
    for (; *s; s++, x += 6 * k) {
        char ch = *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;
        const char *at = ch ? strchr(k_chars, ch) : NULL;
        if (!at)
            continue;
        const uint8_t *gl = k_font[at - k_chars];
        for (int row = 0; row < 7; row++)
            for (int col = 0; col < 5; col++)
                if (gl[row] & (0x10 >> col))
                    for (int dy = 0; dy < k; dy++)
                        for (int dx = 0; dx < k; dx++)
                            put(c, x + col * k + dx, y + row * k + dy, r, g, b);
    }
    return x;
}

/* ---- the pictures ------------------------------------------------------------------ */

#define CAPTION_K 2                      /* font pixels: 2 x 2 */
#define CAPTION_H (7 * CAPTION_K + 10)   /* the caption bar's height */
#define GAP 8                            /* between the reference and the query */
#define GM_PATH_OUTLINES 24              /* outlines a path draws, about */

static double scale_for(int w, int max_width)
{
    return max_width > 0 && w > max_width ? (double)max_width / w : 1.0;
}

/* The caption bar at the bottom: the text at 2 x 2 font pixels, or 1 x 1
 * where that does not fit the width; a text too long even so keeps its
 * end, after "..." (a file name's last folders). */
static void caption(gm_rgb *c, const char *text)
{
    int y0 = c->height - CAPTION_H;
    for (int y = y0; y < c->height; y++)
        memset(c->data + (ptrdiff_t)y * c->stride, 24, (size_t)c->width * 3);
    size_t len = strlen(text), fit = c->width > 12 + 6 * 3 ? (size_t)(c->width - 12) / 6 : 3;
    int k = 12 + 6 * CAPTION_K * (int)len <= c->width ? CAPTION_K : 1;
    int x = 6, y = y0 + (CAPTION_H - 7 * k) / 2;
    if (len > fit) {
        x = gm_draw_text(c, x, y, k, "...", 255, 255, 255);
        text += len - (fit - 3);
    }
    gm_draw_text(c, x, y, k, text, 255, 255, 255);
}

/* Reference pixels to canvas pixels at scale s, in place (pixel centres:
 * canvas (x + 0.5) = s (ref x + 0.5)). */
static void to_canvas(double s, double xy[8])
{
    for (int k = 0; k < 8; k++)
        xy[k] = (xy[k] + 0.5) * s - 0.5;
}

static void polygon(gm_rgb *c, const double xy[8], int width, uint8_t r, uint8_t g, uint8_t b)
{
    for (int k = 0; k < 4; k++) {
        int n = (k + 1) % 4;
        gm_draw_line(c, xy[2 * k], xy[2 * k + 1], xy[2 * n], xy[2 * n + 1], width, r, g, b);
    }
}

/* A canvas for the reference at scale s (at most max_width wide): cw x ch
 * pixels of picture, at least 400 wide for the caption, the bar below. */
static gm_status ref_canvas(gm_view ref, int max_width, double *s, int *cw, int *ch, gm_rgb *out)
{
    *s = scale_for(ref.width, max_width);
    *cw = (int)lround(ref.width * *s), *ch = (int)lround(ref.height * *s);
    *cw = *cw < 1 ? 1 : *cw, *ch = *ch < 1 ? 1 : *ch;
    return gm_rgb_alloc(*cw < 400 ? 400 : *cw, *ch + CAPTION_H, out);
}

static int valid_view(gm_view v)
{
    return v.data && v.width > 0 && v.height > 0 && v.stride >= v.width;
}

gm_status gm_draw_result(gm_view ref, gm_view query, const gm_result *res, int max_width,
                         gm_rgb *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!out || !res || !valid_view(ref) || !valid_view(query))
        return GM_ERR_INVALID;
    char text[160];
    double hi[9];
    if (res->status == GM_MATCH_FOUND && gm_h_inverse(res->h, hi) == 0) {
        double s;
        int cw, ch;
        gm_status st = ref_canvas(ref, max_width, &s, &cw, &ch, out);
        if (st != GM_OK)
            return st;
        for (int y = 0; y < ch; y++)
            for (int x = 0; x < cw; x++) {
                uint8_t g = box(ref, s, x, y);
                /* the reference pixel of this canvas pixel, then the query's */
                double rx = (x + 0.5) / s - 0.5, ry = (y + 0.5) / s - 0.5;
                double d = hi[6] * rx + hi[7] * ry + hi[8];
                int q = d > 0 ? bilinear(query, (hi[0] * rx + hi[1] * ry + hi[2]) / d,
                                         (hi[3] * rx + hi[4] * ry + hi[5]) / d)
                              : -1;
                if (q < 0)
                    put(out, x, y, (uint8_t)(g * 3 / 5), (uint8_t)(g * 3 / 5), (uint8_t)(g * 3 / 5));
                else
                    put(out, x, y, g, (uint8_t)q, g);
            }
        double xy[8];
        gm_result_corners(res, query.width, query.height, xy);
        to_canvas(s, xy);
        polygon(out, xy, cw > 800 ? 3 : 2, 255, 40, 40);
        snprintf(text, sizeof text, "MATCH %s  CONF %.3f  SCALE %.3f  ANGLE %.1f  RES %.2f PX",
                 gm_model_name(res->model), res->confidence, res->scale, res->angle_deg,
                 res->residual_px);
        caption(out, text);
        return GM_OK;
    }
    /* side by side: the reference at most max_width / 2 wide (the whole
     * max_width when none is given), the query at the reference's height or
     * less, each area-averaged */
    const double s = scale_for(ref.width, max_width > 0 ? max_width / 2 : 0);
    int rw = (int)lround(ref.width * s), rh = (int)lround(ref.height * s);
    rw = rw < 1 ? 1 : rw, rh = rh < 1 ? 1 : rh;
    double sq = fmin(1.0, fmin((double)rh / query.height,
                               max_width > 0 ? (double)(max_width / 2) / query.width : 1.0));
    int qw = (int)lround(query.width * sq), qh = (int)lround(query.height * sq);
    qw = qw < 1 ? 1 : qw, qh = qh < 1 ? 1 : qh;
    int cw = rw + GAP + qw, chh = rh > qh ? rh : qh;
    gm_status st = gm_rgb_alloc(cw < 400 ? 400 : cw, chh + CAPTION_H, out);
    if (st != GM_OK)
        return st;
    for (int y = 0; y < rh; y++)
        for (int x = 0; x < rw; x++) {
            uint8_t g = box(ref, s, x, y);
            put(out, x, y, g, g, g);
        }
    for (int y = 0; y < qh; y++)
        for (int x = 0; x < qw; x++) {
            uint8_t g = box(query, sq, x, y);
            put(out, rw + GAP + x, y, g, g, g);
        }
    snprintf(text, sizeof text, "NO MATCH  CONF %.3f  (REFERENCE LEFT, QUERY RIGHT)",
             res->confidence);
    caption(out, text);
    return GM_OK;
}

gm_status gm_draw_caption(const gm_rgb *pic, const char *text, gm_rgb *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!out || !pic || !pic->data || pic->width <= 0 || pic->height <= 0 ||
        pic->stride < (ptrdiff_t)pic->width * 3 || !text)
        return GM_ERR_INVALID;
    gm_status st = gm_rgb_alloc(pic->width, pic->height + CAPTION_H, out);
    if (st != GM_OK)
        return st;
    for (int y = 0; y < pic->height; y++)
        memcpy(out->data + (ptrdiff_t)y * out->stride, pic->data + (ptrdiff_t)y * pic->stride,
               (size_t)pic->width * 3);
    caption(out, text);
    return GM_OK;
}

gm_status gm_draw_path(gm_view ref, const double *corners, int n, int max_width, gm_rgb *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!out || !valid_view(ref) || n < 0 || (n > 0 && !corners))
        return GM_ERR_INVALID;
    double s;
    int cw, ch;
    gm_status st = ref_canvas(ref, max_width, &s, &cw, &ch, out);
    if (st != GM_OK)
        return st;
    for (int y = 0; y < ch; y++)
        for (int x = 0; x < cw; x++) {
            uint8_t g = (uint8_t)(box(ref, s, x, y) * 3 / 5);
            put(out, x, y, g, g, g);
        }
    /* at most about GM_PATH_OUTLINES outlines (every stride-th, and the
     * last), so that a long video stays readable; the centres of all */
    const int stride = n > GM_PATH_OUTLINES ? n / GM_PATH_OUTLINES : 1;
    double px = NAN, py = NAN;
    for (int i = 0; i < n; i++) {
        const double *c = corners + 8 * (size_t)i;
        if (!isfinite(c[0]))
            continue; /* a frame without a match */
        double t = n > 1 ? (double)i / (n - 1) : 1.0;
        uint8_t r = (uint8_t)lround(255 * t), b = (uint8_t)lround(255 * (1 - t));
        double xy[8];
        memcpy(xy, c, sizeof xy);
        to_canvas(s, xy);
        if (i % stride == 0 || i == n - 1)
            polygon(out, xy, 1, r, 60, b);
        double mx = (xy[0] + xy[2] + xy[4] + xy[6]) / 4, my = (xy[1] + xy[3] + xy[5] + xy[7]) / 4;
        if (isfinite(px))
            gm_draw_line(out, px, py, mx, my, 3, 255, 255, 0);
        px = mx, py = my;
    }
    char text[96];
    snprintf(text, sizeof text, "PATH OF %d FRAMES: BLUE FIRST, RED LAST", n);
    caption(out, text);
    return GM_OK;
}
