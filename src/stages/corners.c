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

#include "stages/corners_core.h"
#include "common/common.h"
#include "stages/sobel.h"
#include "stages/points.h"
#include "stages/corners.h"

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
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if ((size_t)w * h >= GM_PAR_PIXELS)
    for (int y = 0; y < h; y++) {
        const float *s = src + (size_t)y * w;
        float *t = tmp + (size_t)y * w;
        for (int x = 0; x < w; x++)
            t[x] = gm_corner_box(s, x, w, 1);
    }
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if ((size_t)w * h >= GM_PAR_PIXELS)
    for (int y = 0; y < h; y++) {
        float *d = dst + (size_t)y * w;
        for (int x = 0; x < w; x++)
            d[x] = gm_corner_box(tmp + x, y, h, (size_t)w);
    }
}

gm_status gm_corners_cpu(const gm_edges *e, uint32_t target, gm_points *pts)
{
    int w = e->w, h = e->h;
    size_t n = (size_t)w * h;
    pts->n = 0;
    pts->p = malloc((target ? target : 1) * sizeof *pts->p);
    float *buf = gm_alloc_large(n, 5 * sizeof *buf); /* five planes, every pixel written */
    if (!pts->p || !buf) {
        free(pts->p);
        pts->p = NULL;
        free(buf);
        return GM_ERR_NOMEM;
    }
    float *xx = buf, *yy = buf + n, *xy = buf + 2 * n, *tmp = buf + 3 * n, *resp = buf + 4 * n;
    /* gradients scaled down so the sums stay well inside float precision */
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (n >= GM_PAR_PIXELS)
    for (int64_t i = 0; i < (int64_t)n; i++)
        gm_corner_products(e->gx[i], e->gy[i], &xx[i], &yy[i], &xy[i]);
    box_sum(xx, tmp, xx, w, h);
    box_sum(yy, tmp, yy, w, h);
    box_sum(xy, tmp, xy, w, h);
    float best = 0;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) reduction(max : best) if (n >= GM_PAR_PIXELS)
    for (int64_t i = 0; i < (int64_t)n; i++) {
        float r = gm_corner_response(xx[i], xy[i], yy[i]);
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
    float floor_r = gm_corner_floor(best);
    for (int y = GM_CORNER_MARGIN; y < h - GM_CORNER_MARGIN; y++) {
        for (int x = GM_CORNER_MARGIN; x < w - GM_CORNER_MARGIN; x++) {
            size_t i = (size_t)y * w + x;
            if (!gm_corner_is_max(resp, i, w, floor_r))
                continue;
            float r = resp[i];
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
    /* grid pitch rad/sqrt(2) (GM_CORNER_PITCH): all kept corners within rad
     * of a candidate lie in the 5x5 cells around it.  A cell keeps the last
     * corner kept in it (two can share one: corners_core.h). */
    int gw = gm_corner_cell(w) + 1, gh = gm_corner_cell(h) + 1;
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
        int cx = gm_corner_cell(cs[k].x), cy = gm_corner_cell(cs[k].y);
        int ok = 1;
        for (int dy = -2; dy <= 2 && ok; dy++)
            for (int dx = -2; dx <= 2 && ok; dx++) {
                int gx2 = cx + dx, gy2 = cy + dy;
                if (gx2 < 0 || gy2 < 0 || gx2 >= gw || gy2 >= gh)
                    continue;
                int32_t j = grid[gy2 * gw + gx2];
                if (j >= 0 && gm_corner_near(pts->p[j].x, pts->p[j].y, cs[k].x, cs[k].y))
                    ok = 0;
            }
        if (!ok)
            continue;
        size_t i = (size_t)cs[k].y * w + cs[k].x;
        gm_point p;
        gm_corner_subpixel(resp, i, w, cs[k].x, cs[k].y, &p.x, &p.y);
        p.angle = gm_corner_angle(e->gx[i], e->gy[i]);
        p.w = resp[i];
        grid[cy * gw + cx] = (int32_t)pts->n;
        pts->p[pts->n++] = p;
    }
    free(grid);
    free(cs);
    free(buf);
    return GM_OK;
}
