/* points.c: edge pixels to sub-pixel points, and an even spread of them.
 *
 * Geometric hashing votes with every point of the query; when all the
 * points come from one busy region (fur, foliage), that region outvotes the
 * rest of the image and any curve matches it (the paper's section 6 names
 * this failure).  Keeping the strongest point per grid cell spreads the
 * points evenly and bounds the table size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "stages/sobel.h"
#include "stages/points.h"

gm_status gm_edge_points_cpu(const gm_edges *e, const uint32_t *idx, uint32_t n_idx,
                             gm_points *pts)
{
    pts->n = 0;
    pts->p = malloc((n_idx ? n_idx : 1) * sizeof *pts->p);
    if (!pts->p)
        return GM_ERR_NOMEM;
    const int w = e->w;
    const ptrdiff_t off[4] = {1, w, w + 1, w - 1};
    const float stepx[4] = {1, 0, 1, -1}, stepy[4] = {0, 1, 1, 1};
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (n_idx >= GM_PAR_POINTS)
    for (int64_t k = 0; k < (int64_t)n_idx; k++) {
        uint32_t i = idx[k];
        int gx = e->gx[i], gy = e->gy[i];
        int d = gm_edge_dir(gx, gy);
        /* edge pixels sit at least 2 px from the border, so i +- off is inside */
        float m0 = sqrtf((float)e->mag2[i]);
        float mm = sqrtf((float)e->mag2[i - off[d]]), mp = sqrtf((float)e->mag2[i + off[d]]);
        float den = mm - 2.0f * m0 + mp, t = 0.0f;
        if (den < 0.0f) {
            t = 0.5f * (mm - mp) / den;
            t = t < -0.5f ? -0.5f : t > 0.5f ? 0.5f : t;
        }
        gm_point p;
        p.x = (float)(i % (uint32_t)w) + t * stepx[d];
        p.y = (float)(i / (uint32_t)w) + t * stepy[d];
        p.angle = atan2f((float)gy, (float)gx);
        p.w = m0;
        pts->p[k] = p;
    }
    pts->n = n_idx;
    return GM_OK;
}

/* The cell of every point on a grid of pitch c, gw cells a row (the
 * division as it always was, in a loop the compiler vectorizes: the
 * spread's passes over a 640x360 frame's 28,000 points were 11% of a GPU
 * video worker's time on the host with the division and the marking in one
 * scalar loop; docs/speed.md). */
static void cell_index(const gm_points *pts, float c, int gw, uint32_t *idx)
{
    const gm_point *p = pts->p;
    const uint32_t n = pts->n;
#pragma omp simd
    for (uint32_t k = 0; k < n; k++)
        idx[k] = (uint32_t)(int)(p[k].y / c) * (uint32_t)gw + (uint32_t)(int)(p[k].x / c);
}

/* The grid of pitch c: its occupied cells counted (UINT32_MAX when it has
 * more than ncell_max cells) and idx[] left holding each point's cell.  The
 * last pitch counted is remembered, so the pitch the search ends on is not
 * counted twice. */
typedef struct {
    uint32_t *idx;
    uint8_t *seen;    /* ncell_max bytes */
    size_t ncell_max;
    float c;          /* the pitch idx[] and occ are of, 0 none */
    uint32_t occ;
} spread_grid;

static uint32_t count_cells(const gm_points *pts, int w, int h, float c, spread_grid *g)
{
    if (g->c == c)
        return g->occ;
    int gw = (int)(w / c) + 1, gh = (int)(h / c) + 1;
    size_t nc = (size_t)gw * gh;
    if (nc > g->ncell_max)
        return UINT32_MAX;
    uint32_t *idx = g->idx;
    const uint32_t n = pts->n;
    uint8_t *seen = g->seen;
    cell_index(pts, c, gw, idx);
    memset(seen, 0, nc);
    uint32_t occ = 0;
    for (uint32_t k = 0; k < n; k++) {
        occ += seen[idx[k]] == 0;
        seen[idx[k]] = 1;
    }
    g->c = c, g->occ = occ;
    return occ;
}

gm_status gm_points_spread_cpu(const gm_points *pts, int w, int h, uint32_t target,
                               gm_points *out)
{
    out->n = 0;
    out->p = malloc((target ? target : 1) * sizeof *out->p);
    if (!out->p)
        return GM_ERR_NOMEM;
    if (target == 0)
        return GM_OK;
    if (pts->n <= target) {
        if (pts->n)
            memcpy(out->p, pts->p, pts->n * sizeof *pts->p);
        out->n = pts->n;
        return GM_OK;
    }
    /* pitch: edges are curves, so occupied cells grow like 1/c; a few secant
     * steps on c find about `target` occupied cells */
    /* at most w h + 1 cells, and a cell's index in 32 bits */
    size_t ncell_max = (size_t)w * h + 1 < UINT32_MAX ? (size_t)w * h + 1 : UINT32_MAX;
    spread_grid g = {malloc(pts->n * sizeof *g.idx), NULL, ncell_max, 0.0f, 0};
    g.seen = malloc(g.ncell_max);
    uint32_t *cell = NULL;
    if (!g.idx || !g.seen)
        goto nomem;
    float c = sqrtf((float)w * h / target);
    if (c < 1.0f)
        c = 1.0f;
    for (int it = 0; it < 6; it++) {
        uint32_t occ = count_cells(pts, w, h, c, &g);
        if (occ <= target && occ * 10 >= target * 9)
            break;
        c *= (float)occ / target;
        if (c < 1.0f)
            c = 1.0f;
    }
    /* make sure the final pitch keeps at most target cells */
    while (count_cells(pts, w, h, c, &g) > target)
        c *= 1.05f;
    /* idx[] is of the final pitch: its count was the last one made */
    int gw = (int)(w / c) + 1, gh = (int)(h / c) + 1;
    size_t nc = (size_t)gw * gh;
    /* best point per cell: cell[] holds index + 1 */
    if (!(cell = calloc(nc, sizeof *cell)))
        goto nomem;
    for (uint32_t k = 0; k < pts->n; k++) {
        uint32_t ci = g.idx[k];
        if (cell[ci] == 0 || pts->p[cell[ci] - 1].w < pts->p[k].w)
            cell[ci] = k + 1;
    }
    for (size_t ci = 0; ci < nc && out->n < target; ci++)
        if (cell[ci])
            out->p[out->n++] = pts->p[cell[ci] - 1];
    free(cell);
    free(g.idx);
    free(g.seen);
    return GM_OK;
nomem:
    free(g.idx);
    free(g.seen);
    free(out->p);
    out->p = NULL;
    return GM_ERR_NOMEM;
}

void gm_points_cs(const gm_points *pts, float *cs)
{
    for (uint32_t i = 0; i < pts->n; i++) {
        cs[2 * i] = cosf(pts->p[i].angle);
        cs[2 * i + 1] = sinf(pts->p[i].angle);
    }
}
