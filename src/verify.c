/* verify.c: checks a candidate transform against the reference's edges and
 * refines it.
 *
 * The map holds, per reference pixel, a bit mask of the gradient directions
 * (GM_ANGLE_BINS bins) of the edge points within `radius` pixels; built once
 * per reference and reused for every query and frame.  A query edge point
 * mapped by the transform "hits" when an edge of agreeing direction (within
 * one bin) lies there.  Chance hits are measured on the same points with the
 * direction turned by 90 degrees, so the confidence is self-calibrating:
 * busy references (fur, foliage) have a high chance level and need more hits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static inline int angle_bin(float a)
{
    int b = (int)floorf(a * (float)(GM_ANGLE_BINS / (2 * GM_PI)) + 0.5f);
    return b & (GM_ANGLE_BINS - 1);
}

/* mask with bins b-1, b, b+1 */
static inline uint16_t bin3(int b)
{
    const int n = GM_ANGLE_BINS;
    return (uint16_t)(1u << (b & (n - 1)) | 1u << ((b + 1) & (n - 1)) | 1u << ((b + n - 1) & (n - 1)));
}

gm_status gm_edge_map_build_cpu(const gm_points *all, int w, int h, int radius, gm_edge_map *map)
{
    memset(map, 0, sizeof *map);
    size_t n = (size_t)w * h;
    map->w = w;
    map->h = h;
    map->mask = calloc(n, sizeof *map->mask);
    map->nearest = malloc(n * sizeof *map->nearest);
    map->pts.p = malloc((all->n ? all->n : 1) * sizeof *map->pts.p);
    map->dir = malloc((all->n ? all->n : 1) * 2 * sizeof *map->dir);
    if (!map->mask || !map->nearest || !map->pts.p || !map->dir) {
        gm_edge_map_free(map);
        return GM_ERR_NOMEM;
    }
    memcpy(map->pts.p, all->p, all->n * sizeof *all->p);
    map->pts.n = all->n;
    for (uint32_t k = 0; k < all->n; k++) {
        map->dir[2 * k] = cosf(all->p[k].angle);
        map->dir[2 * k + 1] = sinf(all->p[k].angle);
    }
    for (size_t i = 0; i < n; i++)
        map->nearest[i] = -1;
    for (uint32_t k = 0; k < all->n; k++) {
        int x = (int)lrintf(all->p[k].x), y = (int)lrintf(all->p[k].y);
        if (x < 0 || y < 0 || x >= w || y >= h)
            continue;
        map->nearest[(size_t)y * w + x] = (int32_t)k;
    }
    /* dilate: each edge point ORs its bit into a (2r+1)^2 window.  From
     * the points, not from `nearest`, which keeps one point per pixel. */
    for (uint32_t k = 0; k < all->n; k++) {
        int x = (int)lrintf(all->p[k].x), y = (int)lrintf(all->p[k].y);
        if (x < 0 || y < 0 || x >= w || y >= h)
            continue;
        uint16_t bit = (uint16_t)(1u << angle_bin(all->p[k].angle));
        int x0 = x - radius < 0 ? 0 : x - radius, x1 = x + radius >= w ? w - 1 : x + radius;
        int y0 = y - radius < 0 ? 0 : y - radius, y1 = y + radius >= h ? h - 1 : y + radius;
        for (int yy = y0; yy <= y1; yy++)
            for (int xx = x0; xx <= x1; xx++)
                map->mask[(size_t)yy * w + xx] |= bit;
    }
    return GM_OK;
}

void gm_edge_map_free(gm_edge_map *map)
{
    free(map->mask);
    free(map->nearest);
    free(map->pts.p);
    free(map->dir);
    memset(map, 0, sizeof *map);
}

/* The score of `total` points with `hits` hits and `bg2` chance hits counted
 * twice (once per perpendicular direction): the confidence is the share of
 * the points above chance that hit, clamped to [0, 1]; 0 when no point is
 * above chance. */
static gm_verify_score score_of(uint32_t total, uint32_t hits, uint32_t bg2)
{
    gm_verify_score s = {0, 0, 0, 0.0};
    s.total = total;
    s.hits = hits;
    s.bg_hits = bg2 / 2;
    double chance = (double)bg2 / 2.0;
    if (s.total > 0 && s.total > chance) {
        double c = ((double)hits - chance) / ((double)s.total - chance);
        s.confidence = c < 0 ? 0 : c > 1 ? 1 : c;
    }
    return s;
}

gm_verify_score gm_verify_cpu(const gm_edge_map *map, const gm_points *q, const double m[6])
{
    float rot = (float)atan2(m[3], m[0]);
    const int quarter = GM_ANGLE_BINS / 4;
    uint32_t hits = 0, bg = 0;
#pragma omp parallel for schedule(static) reduction(+ : hits, bg) if (q->n >= GM_PAR_POINTS)
    for (int64_t k = 0; k < (int64_t)q->n; k++) {
        gm_point p = q->p[k];
        double x = m[0] * p.x + m[1] * p.y + m[2], y = m[3] * p.x + m[4] * p.y + m[5];
        long ix = lrint(x), iy = lrint(y);
        if (ix < 0 || iy < 0 || ix >= map->w || iy >= map->h)
            continue;
        uint16_t mk = map->mask[(size_t)iy * map->w + ix];
        int b = angle_bin(p.angle + rot);
        hits += (mk & bin3(b)) != 0;
        /* chance level: the two perpendicular directions, averaged (x2 here) */
        bg += ((mk & bin3(b + quarter)) != 0) + ((mk & bin3(b - quarter)) != 0);
    }
    return score_of(q->n, hits, bg);
}

/* The strict test, for refined transforms: a hit needs a reference edge
 * point in the 3x3 pixels around the mapped point whose direction agrees
 * within GM_STRICT_DEG and whose edge line passes within GM_STRICT_DIST of it.
 * A true match, refined to sub-pixel, keeps most of its hits; a wrong one,
 * however busy the reference, keeps few. */
#define GM_STRICT_DEG 20.0
#define GM_STRICT_DIST 1.0

static int strict_hit(const gm_edge_map *map, double x, double y, float ca, float sa)
{
    long ix = lrint(x), iy = lrint(y);
    const float cos_tol = (float)cos(GM_STRICT_DEG * GM_PI / 180.0);
    for (long yy = iy - 1; yy <= iy + 1; yy++) {
        if (yy < 0 || yy >= map->h)
            continue;
        for (long xx = ix - 1; xx <= ix + 1; xx++) {
            if (xx < 0 || xx >= map->w)
                continue;
            int32_t j = map->nearest[(size_t)yy * map->w + xx];
            if (j < 0)
                continue;
            gm_point e = map->pts.p[j];
            float ce = map->dir[2 * j], se = map->dir[2 * j + 1];
            if (ce * ca + se * sa < cos_tol)
                continue;
            if (fabs(ce * (x - e.x) + se * (y - e.y)) <= GM_STRICT_DIST)
                return 1;
        }
    }
    return 0;
}

gm_verify_score gm_verify_strict_h_cpu(const gm_edge_map *map, const gm_points *q, const double h[9])
{
    uint32_t hits = 0, bg = 0;
#pragma omp parallel for schedule(static) reduction(+ : hits, bg) if (q->n >= GM_PAR_POINTS)
    for (int64_t k = 0; k < (int64_t)q->n; k++) {
        gm_point p = q->p[k];
        double x, y;
        gm_h_apply(h, p.x, p.y, &x, &y);
        float ca, sa;
        gm_h_normal(h, p.x, p.y, cosf(p.angle), sinf(p.angle), &ca, &sa);
        hits += (uint32_t)strict_hit(map, x, y, ca, sa);
        /* chance level: the perpendicular directions */
        bg += (uint32_t)strict_hit(map, x, y, -sa, ca) + (uint32_t)strict_hit(map, x, y, sa, -ca);
    }
    return score_of(q->n, hits, bg);
}

gm_verify_score gm_verify_strict_cpu(const gm_edge_map *map, const gm_points *q, const double m[6])
{
    double h[9];
    gm_h_from_m(m, h);
    return gm_verify_strict_h_cpu(map, q, h);
}

/* Refinement: each query point mapped by h is paired with the reference edge
 * point nearest to it within `r` pixels whose direction agrees within 30
 * degrees; the model minimizing the point-to-line distances (Huber weights)
 * is solved; repeated with a shrinking radius. */
void gm_refine_model_cpu(const gm_edge_map *map, const gm_points *q, gm_model model, double h[9],
                         int iters)
{
    size_t n = q->n;
    double *buf = malloc(n * 7 * sizeof *buf);
    if (!buf || n < 8) {
        free(buf);
        return;
    }
    double *qx = buf, *qy = buf + n, *rx = buf + 2 * n, *ry = buf + 3 * n, *nx = buf + 4 * n,
           *ny = buf + 5 * n, *wt = buf + 6 * n;
    const float cos_tol = 0.866f; /* 30 degrees */
    for (int it = 0; it < iters; it++) {
        int r = it < 2 ? 3 : 2;
        double huber = it < 2 ? 1.5 : 0.75;
        int cnt = 0;
        /* one slot per query point (weight 0: no partner), so the search
         * runs on all cores and the fit sees the points in a fixed order */
#pragma omp parallel for schedule(static) reduction(+ : cnt) if (n >= GM_PAR_POINTS)
        for (int64_t k = 0; k < (int64_t)n; k++) {
            gm_point p = q->p[k];
            wt[k] = 0;
            qx[k] = qy[k] = rx[k] = ry[k] = nx[k] = ny[k] = 0;
            double x, y;
            gm_h_apply(h, p.x, p.y, &x, &y);
            long ix = lrint(x), iy = lrint(y);
            if (ix < 0 || iy < 0 || ix >= map->w || iy >= map->h)
                continue;
            float ca, sa;
            gm_h_normal(h, p.x, p.y, cosf(p.angle), sinf(p.angle), &ca, &sa);
            double bestd = 1e30;
            int32_t best = -1;
            for (long yy = iy - r; yy <= iy + r; yy++) {
                if (yy < 0 || yy >= map->h)
                    continue;
                for (long xx = ix - r; xx <= ix + r; xx++) {
                    if (xx < 0 || xx >= map->w)
                        continue;
                    int32_t j = map->nearest[(size_t)yy * map->w + xx];
                    if (j < 0)
                        continue;
                    if (map->dir[2 * j] * ca + map->dir[2 * j + 1] * sa < cos_tol)
                        continue;
                    gm_point e = map->pts.p[j];
                    double dx = e.x - x, dy = e.y - y, d = dx * dx + dy * dy;
                    if (d < bestd) {
                        bestd = d;
                        best = j;
                    }
                }
            }
            if (best < 0)
                continue;
            gm_point e = map->pts.p[best];
            double enx = map->dir[2 * best], eny = map->dir[2 * best + 1];
            double res = fabs(enx * (x - e.x) + eny * (y - e.y));
            qx[k] = p.x;
            qy[k] = p.y;
            rx[k] = e.x;
            ry[k] = e.y;
            nx[k] = enx;
            ny[k] = eny;
            wt[k] = res < huber ? 1.0 : huber / res;
            cnt++;
        }
        double hh[9];
        if (cnt < 8 || gm_model_fit_lines(model, qx, qy, rx, ry, nx, ny, wt, (int)n, h, hh) != 0)
            break;
        memcpy(h, hh, sizeof hh);
    }
    free(buf);
}

void gm_refine_cpu(const gm_edge_map *map, const gm_points *q, double m[6], int iters)
{
    double h[9];
    gm_h_from_m(m, h);
    gm_refine_model_cpu(map, q, GM_MODEL_SIMILARITY, h, iters);
    memcpy(m, h, 6 * sizeof *m);
}
