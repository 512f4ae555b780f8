/* corners.c: the points that bases are drawn from.
 *
 * A basis endpoint must land on the same physical point in both images, or
 * every (u, v) it produces is shifted.  A point in the middle of a straight
 * edge can slide along the edge; a corner cannot.  So basis endpoints are the
 * edge structures with the largest minimum eigenvalue of the structure tensor
 * (Shi-Tomasi) of the Sobel gradients, suppressed within a radius so that
 * they spread over the image, and located to sub-pixel by a parabola fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifndef GM_CORNER_WIN
#define GM_CORNER_WIN 2          /* structure tensor window: 5x5 */
#endif
#define GM_CORNER_MARGIN 4       /* corners this close to the border are dropped */
#define GM_CORNER_REL 0.001f     /* response at least this fraction of the image's best */
#ifndef GM_CORNER_RADIUS
#define GM_CORNER_RADIUS 20.0f   /* suppression radius, working pixels */
#endif

typedef struct {
    float r;
    int x, y;
} cand;

static int cand_cmp(const void *a, const void *b)
{
    const cand *p = a, *q = b;
    if (p->r != q->r)
        return p->r < q->r ? 1 : -1;
    if (p->y != q->y)
        return p->y - q->y;
    return p->x - q->x;
}

/* Box sum of radius GM_CORNER_WIN over rows then columns. */
static void box_sum(const float *src, float *tmp, float *dst, int w, int h)
{
    const int r = GM_CORNER_WIN;
#pragma omp parallel for schedule(static) if ((size_t)w * h >= GM_PAR_PIXELS)
    for (int y = 0; y < h; y++) {
        const float *s = src + (size_t)y * w;
        float *t = tmp + (size_t)y * w;
        for (int x = 0; x < w; x++) {
            float acc = 0;
            for (int k = -r; k <= r; k++) {
                int xx = x + k < 0 ? 0 : x + k >= w ? w - 1 : x + k;
                acc += s[xx];
            }
            t[x] = acc;
        }
    }
#pragma omp parallel for schedule(static) if ((size_t)w * h >= GM_PAR_PIXELS)
    for (int y = 0; y < h; y++) {
        float *d = dst + (size_t)y * w;
        for (int x = 0; x < w; x++) {
            float acc = 0;
            for (int k = -r; k <= r; k++) {
                int yy = y + k < 0 ? 0 : y + k >= h ? h - 1 : y + k;
                acc += tmp[(size_t)yy * w + x];
            }
            d[x] = acc;
        }
    }
}

gm_status gm_corners_cpu(const gm_edges *e, uint32_t target, gm_points *pts)
{
    int w = e->w, h = e->h;
    size_t n = (size_t)w * h;
    pts->n = 0;
    pts->p = malloc((target ? target : 1) * sizeof *pts->p);
    float *buf = malloc(n * 5 * sizeof *buf);
    if (!pts->p || !buf) {
        free(pts->p);
        pts->p = NULL;
        free(buf);
        return GM_ERR_NOMEM;
    }
    float *xx = buf, *yy = buf + n, *xy = buf + 2 * n, *tmp = buf + 3 * n, *resp = buf + 4 * n;
    /* gradients scaled down so the sums stay well inside float precision */
#pragma omp parallel for schedule(static) if (n >= GM_PAR_PIXELS)
    for (int64_t i = 0; i < (int64_t)n; i++) {
        float gx = e->gx[i] * (1.0f / 64), gy = e->gy[i] * (1.0f / 64);
        xx[i] = gx * gx;
        yy[i] = gy * gy;
        xy[i] = gx * gy;
    }
    box_sum(xx, tmp, xx, w, h);
    box_sum(yy, tmp, yy, w, h);
    box_sum(xy, tmp, xy, w, h);
    float best = 0;
#pragma omp parallel for schedule(static) reduction(max : best) if (n >= GM_PAR_PIXELS)
    for (int64_t i = 0; i < (int64_t)n; i++) {
        float a = xx[i], c = yy[i], b = xy[i];
        float hm = 0.5f * (a - c);
        float r = 0.5f * (a + c) - sqrtf(hm * hm + b * b);
        resp[i] = r;
        if (r > best)
            best = r;
    }
    /* 3x3 local maxima above the relative floor */
    size_t cap = 4096, nc = 0;
    cand *cs = malloc(cap * sizeof *cs);
    if (!cs) {
        free(buf);
        free(pts->p);
        pts->p = NULL;
        return GM_ERR_NOMEM;
    }
    float floor_r = best * GM_CORNER_REL;
    for (int y = GM_CORNER_MARGIN; y < h - GM_CORNER_MARGIN; y++) {
        for (int x = GM_CORNER_MARGIN; x < w - GM_CORNER_MARGIN; x++) {
            size_t i = (size_t)y * w + x;
            float r = resp[i];
            if (r <= floor_r || r <= 0)
                continue;
            if (r < resp[i - 1] || r <= resp[i + 1] || r < resp[i - w - 1] || r < resp[i - w] ||
                r < resp[i - w + 1] || r <= resp[i + w - 1] || r <= resp[i + w] || r <= resp[i + w + 1])
                continue;
            if (nc == cap) {
                cand *g = realloc(cs, cap * 2 * sizeof *cs);
                if (!g) {
                    free(cs);
                    free(buf);
                    free(pts->p);
                    pts->p = NULL;
                    return GM_ERR_NOMEM;
                }
                cs = g;
                cap *= 2;
            }
            cs[nc++] = (cand){r, x, y};
        }
    }
    qsort(cs, nc, sizeof *cs, cand_cmp);
    /* greedy suppression: strongest first, none closer than GM_CORNER_RADIUS
     * to a kept one.  The radius is fixed in pixels, not derived from the
     * image size, so a query and the reference around it select the same
     * corners whatever their sizes; `target` then keeps the strongest. */
    float rad = GM_CORNER_RADIUS;
    /* grid pitch rad/sqrt(2): a cell holds at most one kept corner, and all
     * kept corners within rad of a candidate lie in the 5x5 cells around it */
    float pitch = rad * 0.70710678f;
    int gw = (int)(w / pitch) + 1, gh = (int)(h / pitch) + 1;
    int32_t *grid = malloc((size_t)gw * gh * sizeof *grid);
    if (!grid) {
        free(cs);
        free(buf);
        free(pts->p);
        pts->p = NULL;
        return GM_ERR_NOMEM;
    }
    for (size_t g = 0; g < (size_t)gw * gh; g++)
        grid[g] = -1;
    for (size_t k = 0; k < nc && pts->n < target; k++) {
        int cx = (int)(cs[k].x / pitch), cy = (int)(cs[k].y / pitch);
        int ok = 1;
        for (int dy = -2; dy <= 2 && ok; dy++)
            for (int dx = -2; dx <= 2 && ok; dx++) {
                int gx2 = cx + dx, gy2 = cy + dy;
                if (gx2 < 0 || gy2 < 0 || gx2 >= gw || gy2 >= gh)
                    continue;
                int32_t j = grid[gy2 * gw + gx2];
                if (j >= 0) {
                    float ddx = pts->p[j].x - cs[k].x, ddy = pts->p[j].y - cs[k].y;
                    if (ddx * ddx + ddy * ddy < rad * rad)
                        ok = 0;
                }
            }
        if (!ok)
            continue;
        size_t i = (size_t)cs[k].y * w + cs[k].x;
        float l = resp[i - 1], r = resp[i + 1], u = resp[i - w], d = resp[i + w], c = resp[i];
        float ox = 0, oy = 0, den = l - 2 * c + r;
        if (den < 0)
            ox = 0.5f * (l - r) / den;
        den = u - 2 * c + d;
        if (den < 0)
            oy = 0.5f * (u - d) / den;
        gm_point p;
        p.x = cs[k].x + (ox < -0.5f ? -0.5f : ox > 0.5f ? 0.5f : ox);
        p.y = cs[k].y + (oy < -0.5f ? -0.5f : oy > 0.5f ? 0.5f : oy);
        p.angle = atan2f((float)e->gy[i], (float)e->gx[i]);
        p.w = c;
        grid[cy * gw + cx] = (int32_t)pts->n;
        pts->p[pts->n++] = p;
    }
    free(grid);
    free(cs);
    free(buf);
    return GM_OK;
}
