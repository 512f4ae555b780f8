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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "stages/points.h"
#include "stages/transform.h"
#include "stages/verify.h"
#include "stages/verify_core.h"

gm_status gm_edge_map_points(const gm_points *all, int w, int h, int radius, gm_edge_map *map)
{
    memset(map, 0, sizeof *map);
    map->w = w;
    map->h = h;
    map->radius = radius;
    map->pts.p = malloc((all->n ? all->n : 1) * sizeof *map->pts.p);
    map->dir = malloc((all->n ? all->n : 1) * 2 * sizeof *map->dir);
    if (!map->pts.p || !map->dir) {
        gm_edge_map_free(map);
        return GM_ERR_NOMEM;
    }
    memcpy(map->pts.p, all->p, all->n * sizeof *all->p);
    map->pts.n = all->n;
    gm_points_cs(all, map->dir);
    return GM_OK;
}

/* out = in dilated by one pixel (the OR of each 3x3), rows of
 * GM_REACH_WORDS(w) words; tmp holds the row pass. */
static void dilate1(const uint64_t *in, uint64_t *out, uint64_t *tmp, int w, int h)
{
    const size_t words = GM_REACH_WORDS(w);
    const uint64_t last = w % 64 ? (1ull << (w % 64)) - 1 : ~0ull; /* a row's last word's pixels */
    for (int y = 0; y < h; y++) {
        const uint64_t *r = in + (size_t)y * words;
        uint64_t *t = tmp + (size_t)y * words;
        for (size_t k = 0; k < words; k++) {
            uint64_t o = r[k] | r[k] << 1 | r[k] >> 1;
            if (k > 0)
                o |= r[k - 1] >> 63;
            if (k + 1 < words)
                o |= r[k + 1] << 63;
            t[k] = k + 1 < words ? o : o & last;
        }
    }
    for (int y = 0; y < h; y++)
        for (size_t k = 0; k < words; k++) {
            const size_t i = (size_t)y * words + k;
            out[i] = tmp[i] | (y > 0 ? tmp[i - words] : 0) | (y + 1 < h ? tmp[i + words] : 0);
        }
}

gm_status gm_edge_map_fill_cpu(gm_edge_map *map)
{
    const int w = map->w, h = map->h, radius = map->radius;
    const gm_points *all = &map->pts;
    size_t n = (size_t)w * h;
    if (map->filled)
        return GM_OK;
    const size_t bits = GM_REACH_WORDS(w) * (size_t)h + 1; /* words of a reach map */
    map->mask = calloc(n ? n : 1, sizeof *map->mask);
    map->nearest = gm_alloc_large(n, sizeof *map->nearest); /* every pixel written */
    uint64_t *pix = calloc(bits, sizeof *pix), *rows = malloc(bits * sizeof *rows);
    int ok = map->mask && map->nearest && pix && rows;
    for (int k = 0; k < GM_REACH_R; k++)
        ok &= (map->reach[k] = malloc(bits * sizeof *map->reach[k])) != NULL;
    if (!ok) {
        free(map->mask);
        free(map->nearest);
        map->mask = NULL;
        map->nearest = NULL;
        for (int k = 0; k < GM_REACH_R; k++) {
            free(map->reach[k]);
            map->reach[k] = NULL;
        }
        free(pix);
        free(rows);
        return GM_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        map->nearest[i] = -1;
    for (uint32_t k = 0; k < all->n; k++) {
        int x = (int)lrintf(all->p[k].x), y = (int)lrintf(all->p[k].y);
        if (x < 0 || y < 0 || x >= w || y >= h)
            continue;
        map->nearest[(size_t)y * w + x] = (int32_t)k;
        pix[(size_t)y * GM_REACH_WORDS(w) + ((size_t)x >> 6)] |= 1ull << (x & 63);
    }
    /* dilate: each edge point ORs its bit into a (2r+1)^2 window.  From
     * the points, not from `nearest`, which keeps one point per pixel. */
    for (uint32_t k = 0; k < all->n; k++) {
        int x = (int)lrintf(all->p[k].x), y = (int)lrintf(all->p[k].y);
        if (x < 0 || y < 0 || x >= w || y >= h)
            continue;
        uint16_t bit = (uint16_t)(1u << gm_angle_bin(all->p[k].angle));
        int x0 = x - radius < 0 ? 0 : x - radius, x1 = x + radius >= w ? w - 1 : x + radius;
        int y0 = y - radius < 0 ? 0 : y - radius, y1 = y + radius >= h ? h - 1 : y + radius;
        for (int yy = y0; yy <= y1; yy++)
            for (int xx = x0; xx <= x1; xx++)
                map->mask[(size_t)yy * w + xx] |= bit;
    }
    /* the reach bits: the points' pixels dilated by one pixel a radius */
    for (int k = 0; k < GM_REACH_R; k++)
        dilate1(k ? map->reach[k - 1] : pix, map->reach[k], rows, w, h);
    free(pix);
    free(rows);
    __atomic_store_n(&map->filled, 1, __ATOMIC_RELEASE);
    return GM_OK;
}

gm_status gm_edge_map_build_cpu(const gm_points *all, int w, int h, int radius, gm_edge_map *map)
{
    gm_status st = gm_edge_map_points(all, w, h, radius, map);
    if (st == GM_OK && (st = gm_edge_map_fill_cpu(map)) != GM_OK)
        gm_edge_map_free(map);
    return st;
}

/* The maps' fills one at a time: a fill is once per map, so one lock for
 * all of them costs nothing measurable. */
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;

gm_status gm_edge_map_pixels(const gm_edge_map *map)
{
    if (__atomic_load_n(&map->filled, __ATOMIC_ACQUIRE))
        return GM_OK;
    pthread_mutex_lock(&fill_lock);
    /* the map is the reference's, shared and otherwise read-only: its
     * pixels are the one part made after the preparation */
    gm_status st = gm_edge_map_fill_cpu((gm_edge_map *)map);
    pthread_mutex_unlock(&fill_lock);
    return st;
}

void gm_edge_map_free(gm_edge_map *map)
{
    free(map->mask);
    free(map->nearest);
    for (int k = 0; k < GM_REACH_R; k++)
        free(map->reach[k]);
    free(map->pts.p);
    free(map->dir);
    memset(map, 0, sizeof *map);
}

/* The borrowed arrays of map, for the per-point rules (verify_core.h). */
static gm_map_view view_of(const gm_edge_map *map)
{
    gm_map_view v = {map->w, map->h, map->mask, map->nearest, map->pts.p, map->dir, {NULL}};
    for (int k = 0; k < GM_REACH_R; k++)
        v.reach[k] = map->reach[k];
    return v;
}

gm_verify_score gm_verify_cpu(const gm_edge_map *map, const gm_points *q, const double m[6])
{
    const gm_map_view v = view_of(map);
    float rot = (float)atan2(m[3], m[0]);
    uint32_t hits = 0, bg = 0, in = 0;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) reduction(+ : hits, bg, in) if (q->n >= GM_PAR_POINTS)
    for (int64_t k = 0; k < (int64_t)q->n; k++)
        hits += gm_verify_point(&v, m, rot, q->p[k], &bg, &in);
    return gm_score_of(q->n, in, hits, bg);
}

/* The strict score of h on the threads when par (integer counts: the same
 * in any order). */
static gm_verify_score strict_h(const gm_edge_map *map, const gm_points *q, const double h[9],
                                int par)
{
    const gm_map_view v = view_of(map);
    uint32_t hits = 0, bg = 0, in = 0;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) reduction(+ : hits, bg, in) if (par)
    for (int64_t k = 0; k < (int64_t)q->n; k++) {
        gm_point p = q->p[k];
        hits += gm_verify_strict_point(&v, h, p, cosf(p.angle), sinf(p.angle), &bg, &in);
    }
    return gm_score_of(q->n, in, hits, bg);
}

gm_verify_score gm_verify_strict_h_cpu(const gm_edge_map *map, const gm_points *q, const double h[9])
{
    return strict_h(map, q, h, q->n >= GM_PAR_POINTS);
}

/* The perturbation after h of gm_corner_sigma_cpu, about the mapped
 * centre (dx, dy from it, in units of u pixels): its Jacobian rows in the
 * model's np parameters, x (jx) and y (jy).  similarity (a, b, tx, ty):
 * [a -b; b a] d + t; affine (a, b, tx, c, e, ty): [a b; c e] d + t;
 * homography: the affine's, and (g, k) moving d by -d (g dx + k dy). */
static int sigma_jac(gm_model model, double dx, double dy, double jx[8], double jy[8])
{
    if (model == GM_MODEL_SIMILARITY) {
        const double x[4] = {dx, -dy, 1, 0}, y[4] = {dy, dx, 0, 1};
        memcpy(jx, x, sizeof x);
        memcpy(jy, y, sizeof y);
        return 4;
    }
    const double x[8] = {dx, dy, 1, 0, 0, 0, -dx * dx, -dx * dy};
    const double y[8] = {0, 0, 0, dx, dy, 1, -dx * dy, -dy * dy};
    memcpy(jx, x, sizeof x);
    memcpy(jy, y, sizeof y);
    return model == GM_MODEL_AFFINE ? 6 : 8;
}

double gm_corner_sigma_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                           const double h[9], int w, int hgt, const double *ex, const double *ey,
                           int ne, double *rms)
{
    const gm_map_view v = view_of(map);
    /* the perturbation after h (sigma_jac), about the query's mapped centre,
     * distances in units of u (the query's mapped half diagonal: the
     * homography's terms stay of the others' size); every partner's
     * point-to-line residual n . (p' - e) gives one row */
    double c0x, c0y, ax, ay, bx, by;
    gm_h_apply(h, (w - 1) / 2.0, (hgt - 1) / 2.0, &c0x, &c0y);
    gm_h_apply(h, 0, 0, &ax, &ay);
    gm_h_apply(h, w - 1.0, hgt - 1.0, &bx, &by);
    double u = fmax(1.0, hypot(bx - ax, by - ay) / 2);
    double n[8][8] = {{0}}, r2 = 0;
    int np = 4;
    uint32_t pairs = 0;
    for (uint32_t k = 0; k < q->n; k++) {
        gm_point p = q->p[k];
        gm_corr c;
        if (!gm_refine_match(&v, h, p, cosf(p.angle), sinf(p.angle), 1, 1.0, &c))
            continue;
        double x, y, jx[8], jy[8], g[8];
        gm_h_apply(h, p.x, p.y, &x, &y);
        double res = c.nx * (x - c.rx) + c.ny * (y - c.ry);
        r2 += res * res;
        np = sigma_jac(model, (x - c0x) / u, (y - c0y) / u, jx, jy);
        for (int i = 0; i < np; i++)
            g[i] = c.nx * jx[i] + c.ny * jy[i];
        for (int i = 0; i < np; i++)
            for (int j = 0; j < np; j++)
                n[i][j] += g[i] * g[j];
        pairs++;
    }
    if (rms)
        *rms = pairs ? sqrt(r2 / pairs) : NAN;
    if (pairs < 8)
        return INFINITY;
    /* neighbouring edge pixels are not independent measurements: one in
     * GM_SIGMA_PIXELS_PER_OBS counts, each with GM_SIGMA_PX of noise */
    double scale = GM_SIGMA_PX * GM_SIGMA_PX * GM_SIGMA_PIXELS_PER_OBS;
    /* each corner's displacement covariance J N^-1 J^T (J: the corner's
     * 2 x np Jacobian), its larger eigenvalue */
    const double cx[4] = {0, w - 1.0, w - 1.0, 0}, cy[4] = {0, 0, hgt - 1.0, hgt - 1.0};
    if (ne < 3 || !ex || !ey)
        ex = cx, ey = cy, ne = 4;
    double worst = 0;
    for (int c = 0; c < ne; c++) {
        double x, y, jx[8], jy[8];
        gm_h_apply(h, ex[c], ey[c], &x, &y);
        np = sigma_jac(model, (x - c0x) / u, (y - c0y) / u, jx, jy);
        double uu[2][8]; /* N^-1 jx, N^-1 jy */
        for (int e = 0; e < 2; e++) {
            double A[8][8], b[8];
            for (int i = 0; i < np; i++) {
                for (int j = 0; j < np; j++)
                    A[i][j] = n[i][j];
                b[i] = e ? jy[i] : jx[i];
            }
            if (gm_solve_n(np, A, b, uu[e]) != 0)
                return INFINITY; /* a direction the edges do not constrain at all */
        }
        double sxx = 0, sxy = 0, syy = 0;
        for (int i = 0; i < np; i++) {
            sxx += jx[i] * uu[0][i] * scale;
            sxy += jx[i] * uu[1][i] * scale;
            syy += jy[i] * uu[1][i] * scale;
        }
        double tr = sxx + syy, det = sxx * syy - sxy * sxy;
        double l1 = tr / 2 + sqrt(fmax(0, tr * tr / 4 - det));
        worst = fmax(worst, sqrt(fmax(0, l1)));
    }
    return worst;
}

double gm_uncertainty_px(double sigma)
{
    return hypot(GM_UNC_K * sigma, GM_UNC_FLOOR);
}

gm_verify_score gm_verify_strict_cpu(const gm_edge_map *map, const gm_points *q, const double m[6])
{
    double h[9];
    gm_h_from_m(m, h);
    return gm_verify_strict_h_cpu(map, q, h);
}

/* Refinement (the rules in verify_core.h): per iteration every query point
 * looks for its partner, then the model is fitted to the pairs.
 *
 * Each of the nt transforms h[9 t..] refined on its own points qs[t],
 * together (gm_refine_models_cpu, the spread's refits): each iteration's partner
 * searches of every transform still refining in one parallel region (a
 * worksharing loop a transform, none waiting for the last), each partner in
 * its slot, then the fits side by side, each over its slots in its points'
 * order.  par 0: all of it on the calling thread.  0, or -1 where memory
 * ran out (nothing done). */
static int refine_sets(const gm_edge_map *map, const gm_points *const *qs, gm_model model,
                       double *h, int iters, int nt, int par)
{
    size_t total = 0;
    for (int t = 0; t < nt; t++)
        total += qs[t]->n;
    size_t *off = malloc((size_t)nt * sizeof *off);
    int *live = malloc((size_t)nt * sizeof *live), *at = malloc((size_t)nt * sizeof *at);
    double *buf = malloc((total ? total : 1) * 7 * sizeof *buf);
    uint8_t *found = malloc(total ? total : 1);
    float *cs = malloc((total ? total : 1) * 2 * sizeof *cs);
    int ok = off && live && at && buf && found && cs;
    if (ok) {
        size_t o = 0;
        for (int t = 0; t < nt; t++) {
            off[t] = o;
            gm_points_cs(qs[t], cs + 2 * o);
            /* too few points: left as it is, as gm_refine_model_cpu leaves it */
            live[t] = qs[t]->n >= GM_REFINE_MIN_PAIRS;
            o += qs[t]->n;
        }
        double *qx = buf, *qy = buf + total, *rx = buf + 2 * total, *ry = buf + 3 * total,
               *nx = buf + 4 * total, *ny = buf + 5 * total, *wt = buf + 6 * total;
        const gm_map_view v = view_of(map);
        for (int it = 0; it < iters; it++) {
            const int r = gm_refine_radius(it);
            const double huber = gm_refine_huber(it);
            int na = 0;
            for (int t = 0; t < nt; t++)
                if (live[t])
                    at[na++] = t;
            if (na == 0)
                break;
#pragma omp parallel num_threads(gm_threads()) if (par)
            for (int j = 0; j < na; j++) {
                const int t = at[j];
                const gm_points *q = qs[t];
                const size_t o0 = off[t];
                const double *ht = h + 9 * (size_t)t;
#pragma omp for schedule(static) nowait
                for (int64_t k = 0; k < (int64_t)q->n; k++) {
                    const size_t s = o0 + (size_t)k;
                    gm_corr c = {0, 0, 0, 0, 0, 0, 0};
                    found[s] = (uint8_t)(gm_refine_match(&v, ht, q->p[k], cs[2 * s],
                                                         cs[2 * s + 1], r, huber, &c) != 0);
                    qx[s] = c.qx;
                    qy[s] = c.qy;
                    rx[s] = c.rx;
                    ry[s] = c.ry;
                    nx[s] = c.nx;
                    ny[s] = c.ny;
                    wt[s] = c.w;
                }
            }
#pragma omp parallel for num_threads(gm_threads()) schedule(static, 1) if (na > 1)
            for (int j = 0; j < na; j++) {
                const int t = at[j];
                const size_t o0 = off[t], n = qs[t]->n;
                int cnt = 0;
                for (size_t k = 0; k < n; k++)
                    cnt += found[o0 + k];
                double hh[9];
                if (cnt < GM_REFINE_MIN_PAIRS ||
                    gm_model_fit_lines(model, qx + o0, qy + o0, rx + o0, ry + o0, nx + o0,
                                       ny + o0, wt + o0, (int)n, h + 9 * (size_t)t, hh) != 0)
                    live[t] = 0;
                else
                    memcpy(h + 9 * (size_t)t, hh, sizeof hh);
            }
        }
    }
    free(off);
    free(live);
    free(at);
    free(buf);
    free(found);
    free(cs);
    return ok ? 0 : -1;
}

/* One transform: its points' partners searched on all threads from
 * GM_PAR_POINTS points on (each in its slot, so the fit sees them in a
 * fixed order), else on the calling thread. */
void gm_refine_model_cpu(const gm_edge_map *map, const gm_points *q, gm_model model, double h[9],
                         int iters)
{
    const gm_points *qs[1] = {q};
    (void)refine_sets(map, qs, model, h, iters, 1, q->n >= GM_PAR_POINTS);
}

void gm_refine_models_cpu(const gm_edge_map *map, const gm_points *q, gm_model model, double *h,
                          int iters, int nt, gm_verify_score *scores)
{
    if (nt <= 0)
        return;
    const gm_points **qs = malloc((size_t)nt * sizeof *qs);
    if (qs)
        for (int t = 0; t < nt; t++)
            qs[t] = q;
    if (iters > 0 && (!qs || refine_sets(map, qs, model, h, iters, nt, 1) != 0))
        for (int t = 0; t < nt; t++) /* one at a time, as the caller would have */
            gm_refine_model_cpu(map, q, model, h + 9 * (size_t)t, iters);
    free(qs);
    for (int t = 0; scores && t < nt; t++)
        scores[t] = strict_h(map, q, h + 9 * (size_t)t, 1);
}

/* Region growing: an affine map right near its triangle (a view with
 * perspective is locally affine) is refined to the model on the query
 * points within a radius of the triangle's centroid, starting at half its
 * longer side and growing by GM_GROW_STEP; each step's partners must lie
 * within the refinement radius (3 pixels), so the map carries only as far
 * as it explains the edges, and small steps keep what the last step did not
 * see within that radius.  Then the model on every point.
 *
 * Measured on the photo tier's tilted views (docs/photo.md): starting at
 * 1.5 sides with steps of 1.3, affine until half the query, grew 5 of 24
 * right although the triangles' votes gave a right local map for 12; the
 * affine extrapolated 6-10 pixels off at the rim of the first steps.
 * Starting at half a side, steps of 1.15 and the model from the first step:
 * 16 of 24, the same within 1 at starts of 0.35-0.7 sides and steps of
 * 1.1-1.15.  Its CUDA twin is k_grow_verify (src/cuda/verify.cu).
 *
 * Below GM_GROW_PAR_POINTS points in a step's discs together, the growths'
 * partner searches stay on the calling thread: a parallel region an
 * iteration costs more than the first steps' few hundred searches. */
#define GM_GROW_PAR_POINTS 1024

/* The nt growths h[9 t..] from seeds[3 t..], each growth's steps in turn and
 * the growths still stepping together (refine_sets: each the same numbers
 * as alone), then their final refinements together; the partner searches
 * on the threads from par_points points in a call's sets on.  Nothing done
 * where memory runs out. */
static void grow_sets(const gm_edge_map *map, const gm_points *q, gm_model model,
                      const double *seeds, double *h, int nt, size_t par_points)
{
    const size_t cap = q->n ? q->n : 1;
    gm_point *buf = malloc((size_t)nt * cap * sizeof *buf);
    double *rad = malloc((size_t)nt * sizeof *rad), *rmax2 = malloc((size_t)nt * sizeof *rmax2);
    double *hs = malloc((size_t)nt * 9 * sizeof *hs);
    int *at = malloc((size_t)nt * sizeof *at);
    gm_points *sub = malloc((size_t)nt * sizeof *sub);
    const gm_points **qs = malloc((size_t)nt * sizeof *qs);
    if (buf && rad && rmax2 && hs && at && sub && qs) {
        for (int t = 0; t < nt; t++) {
            const double *seed = seeds + 3 * (size_t)t;
            rmax2[t] = 0;
            for (uint32_t k = 0; k < q->n; k++)
                rmax2[t] = fmax(rmax2[t], gm_grow_d2(q->p[k], seed));
            rad[t] = fmax(GM_GROW_START * seed[2], GM_GROW_MIN_PX);
        }
        for (;;) {
            int na = 0;
            size_t total = 0;
            for (int t = 0; t < nt; t++) {
                if (rad[t] < 0)
                    continue; /* its steps are done */
                const double *seed = seeds + 3 * (size_t)t;
                gm_points *st = &sub[na];
                *st = (gm_points){buf + (size_t)na * cap, 0};
                for (uint32_t k = 0; k < q->n; k++)
                    if (gm_grow_d2(q->p[k], seed) <= rad[t] * rad[t])
                        st->p[st->n++] = q->p[k];
                qs[na] = st;
                memcpy(hs + 9 * (size_t)na, h + 9 * (size_t)t, 9 * sizeof *hs);
                total += st->n;
                at[na++] = t;
            }
            if (na == 0)
                break;
            if (refine_sets(map, qs, model, hs, GM_GROW_STEP_ITERS, na, total >= par_points) != 0)
                for (int j = 0; j < na; j++)
                    gm_refine_model_cpu(map, qs[j], model, hs + 9 * (size_t)j, GM_GROW_STEP_ITERS);
            for (int j = 0; j < na; j++) {
                const int t = at[j];
                memcpy(h + 9 * (size_t)t, hs + 9 * (size_t)j, 9 * sizeof *hs);
                if (rad[t] * rad[t] >= rmax2[t])
                    rad[t] = -1;
                else
                    rad[t] *= GM_GROW_STEP;
            }
        }
        /* then the model on every point */
        for (int t = 0; t < nt; t++)
            qs[t] = q;
        if (refine_sets(map, qs, model, h, GM_GROW_FINAL_ITERS, nt,
                        (size_t)nt * q->n >= par_points) != 0)
            for (int t = 0; t < nt; t++)
                gm_refine_model_cpu(map, q, model, h + 9 * (size_t)t, GM_GROW_FINAL_ITERS);
    }
    free(buf);
    free(rad);
    free(rmax2);
    free(hs);
    free(at);
    free(sub);
    free(qs);
}

void gm_grow_model_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                       const double seed[3], double h[9])
{
    grow_sets(map, q, model, seed, h, 1, GM_PAR_POINTS);
}

void gm_grow_models_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                        const double *seeds, double *h, int nt, gm_verify_score *scores)
{
    if (nt <= 0)
        return;
    grow_sets(map, q, model, seeds, h, nt, GM_GROW_PAR_POINTS);
    for (int t = 0; scores && t < nt; t++)
        scores[t] = strict_h(map, q, h + 9 * (size_t)t, 1);
}

double gm_corner_move(const double a[9], const double b[9], int w, int hgt)
{
    const double cx[4] = {0, w - 1.0, w - 1.0, 0}, cy[4] = {0, 0, hgt - 1.0, hgt - 1.0};
    double worst = 0;
    for (int c = 0; c < 4; c++) {
        double ax, ay, bx, by;
        gm_h_apply(a, cx[c], cy[c], &ax, &ay);
        gm_h_apply(b, cx[c], cy[c], &bx, &by);
        worst = fmax(worst, hypot(ax - bx, ay - by));
    }
    return worst;
}

double gm_corner_moves(const double h[9], const double hq[4][9], int w, int hgt)
{
    double worst = 0;
    for (int quad = 0; quad < 4; quad++)
        worst = fmax(worst, gm_corner_move(h, hq[quad], w, hgt));
    return worst;
}

/* Leaving out the only edges near a corner lets it swing.  Its CUDA twin is
 * gm_spread_cuda (src/cuda/verify.cu). */
double gm_corner_spread_cpu(const gm_edge_map *map, const gm_points *q, gm_model model,
                            const double h[9], int w, int hgt)
{
    size_t cap = q->n ? q->n : 1;
    gm_point *buf = malloc(4 * cap * sizeof *buf);
    if (!buf)
        return 0;
    double hq[4][9];
    gm_points sub[4];
    for (int quad = 0; quad < 4; quad++) {
        sub[quad] = (gm_points){buf + quad * cap, 0};
        for (uint32_t k = 0; k < q->n; k++)
            if (gm_quadrant(q->p[k], w, hgt) != quad)
                sub[quad].p[sub[quad].n++] = q->p[k];
        memcpy(hq[quad], h, sizeof hq[quad]);
    }
    /* the four fits together over many threads (at least two a fit:
     * refine_sets, the same numbers), else side by side, a thread each
     * (each refinement is serial below GM_PAR_POINTS points) */
    const gm_points *qs[4] = {&sub[0], &sub[1], &sub[2], &sub[3]};
    if (gm_threads() < 8 || refine_sets(map, qs, model, &hq[0][0], GM_SPREAD_ITERS, 4, 1) != 0) {
#pragma omp parallel for num_threads(gm_threads()) schedule(static, 1)
        for (int quad = 0; quad < 4; quad++)
            gm_refine_model_cpu(map, &sub[quad], model, hq[quad], GM_SPREAD_ITERS);
    }
    free(buf);
    return gm_corner_moves(h, (const double(*)[9])hq, w, hgt);
}

void gm_refine_cpu(const gm_edge_map *map, const gm_points *q, double m[6], int iters)
{
    double h[9];
    gm_h_from_m(m, h);
    gm_refine_model_cpu(map, q, GM_MODEL_SIMILARITY, h, iters);
    memcpy(m, h, 6 * sizeof *m);
}
