/* selfmap.c: the reference's self-maps (selfmap.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/selfmap.h"
#include "stages/bases.h"
#include "stages/transform.h"
#include "stages/verify.h"

static int key_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Where the similarity h puts (x, y), as a distance from (tx, ty). */
static double moved(const double h[9], double x, double y, double tx, double ty)
{
    double ox, oy;
    gm_h_apply(h, x, y, &ox, &oy);
    return hypot(ox - tx, oy - ty);
}

/* The corner pairs that vote: those of the table's length band that the
 * table does not hold, GM_SELF_BASES of them at most, drawn from
 * GM_DRAW_KEY.  *sel is the caller's to free. */
static gm_status self_bases(const ref_level *l, uint32_t **sel, uint32_t *nsel)
{
    gm_bases all = {0};
    *sel = NULL, *nsel = 0;
    gm_status st = gm_bases_select_cpu(&l->corners, l->lmin, l->lmax, 1.0, GM_DRAW_KEY ^ GM_SALT_SELF, &all);
    uint32_t *in = NULL, nin = l->bases.u;
    if (st == GM_OK && (!(in = malloc((nin ? nin : 1) * sizeof *in)) ||
                        !(*sel = malloc((all.n ? all.n : 1) * sizeof **sel))))
        st = GM_ERR_NOMEM;
    if (st != GM_OK)
        goto done;
    memcpy(in, l->bases.unique, nin * sizeof *in);
    qsort(in, nin, sizeof *in, key_cmp);
    /* those outside the table, then GM_SELF_BASES of them in place */
    uint32_t nout = 0;
    for (uint32_t i = 0; i < all.n; i++)
        if (!bsearch(&all.key[i], in, nin, sizeof *in, key_cmp))
            (*sel)[nout++] = all.key[i];
    double prob = nout > GM_SELF_BASES ? (double)GM_SELF_BASES / nout : 1.0;
    uint64_t thr = gm_prob_threshold(prob);
    for (uint32_t i = 0; i < nout; i++)
        if (gm_mix64(GM_DRAW_KEY ^ GM_SALT_SELF ^ ((uint64_t)(*sel)[i] << 20)) <= thr)
            (*sel)[(*nsel)++] = (*sel)[i];
done:
    free(all.key);
    free(in);
    return st;
}

gm_status gm_selfmaps_find(const gm_backend_ops *be, void *lane, const ref_level *l,
                           const side *s, gm_map_at map, double out[][9], int *n)
{
    *n = 0;
    uint32_t *sel = NULL, nsel = 0, nc = 0;
    gm_candidate cands[GM_MAX_TOP_K];
    gm_point *vbuf = NULL;
    gm_status st = self_bases(l, &sel, &nsel);
    if (st != GM_OK || nsel == 0 || l->bases.u == 0 || s->all.n < 8)
        goto done;
    double tv, tr;
    gm_level_at lat = {&l->table, l->share, l->bases.u, l->dev};
    if ((st = be->vote(lane, lat, &l->corners, sel, nsel, &s->cloud, GM_MAX_TOP_K, cands, &nc, &tv,
                       &tr)) != GM_OK)
        goto done;
    /* the rows best first: the first of each place (a row consistent with
     * an earlier one at both of their pairs is the same repeat) */
    double h[GM_SELF_ROWS][9], seeds[GM_SELF_ROWS][3];
    gm_verify_score sc[GM_SELF_ROWS];
    uint32_t ng = 0;
    const double near = GM_SELF_NEAR * l->lmin;
    for (uint32_t c = 0; c < nc && ng < GM_SELF_ROWS; c++) {
        if (cands[c].votes == 0)
            break;
        uint32_t qk = sel[cands[c].query_basis], rk = l->bases.unique[cands[c].ref_basis];
        gm_point qa = l->corners.p[qk >> 16], qb = l->corners.p[qk & 0xFFFF];
        gm_point ra = l->corners.p[rk >> 16], rb = l->corners.p[rk & 0xFFFF];
        if (hypot(qa.x - ra.x, qa.y - ra.y) <= near && hypot(qb.x - rb.x, qb.y - rb.y) <= near)
            continue; /* the same place */
        double m[6], hc[9];
        gm_similarity_from_pairs(qa.x, qa.y, qb.x, qb.y, ra.x, ra.y, rb.x, rb.y, m);
        gm_h_from_m(m, hc);
        double sx = 0.5 * (qa.x + qb.x), sy = 0.5 * (qa.y + qb.y);
        int same = 0;
        for (uint32_t g = 0; g < ng && !same; g++) {
            double gx, gy, ox, oy;
            gm_h_apply(h[g], seeds[g][0], seeds[g][1], &gx, &gy);
            gm_h_apply(h[g], sx, sy, &ox, &oy);
            same = moved(hc, seeds[g][0], seeds[g][1], gx, gy) <= near &&
                   moved(hc, sx, sy, ox, oy) <= near;
        }
        if (same)
            continue;
        memcpy(h[ng], hc, sizeof hc);
        seeds[ng][0] = sx, seeds[ng][1] = sy;
        seeds[ng][2] = hypot(qb.x - qa.x, qb.y - qa.y);
        ng++;
    }
    if (ng == 0)
        goto done;
    /* refined on a sample of the reference's own edge points */
    if (!(vbuf = malloc(GM_VERIFY_POINTS * sizeof *vbuf))) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    gm_points vq = gm_stride_sample(&s->all, GM_VERIFY_POINTS, vbuf);
    if ((st = be->points(lane, &vq)) != GM_OK ||
        (st = be->refine(lane, map, &vq, GM_MODEL_SIMILARITY, &h[0][0], GM_SELF_ITERS, ng, sc)) !=
            GM_OK)
        goto done;
    /* the kept, most explaining first: a repeat (its seed carried away
     * from itself), a similarity not far from scale 1, distinct from
     * those before; then each one's inverse where it is another map */
    int order[GM_SELF_ROWS], no = 0;
    for (uint32_t g = 0; g < ng; g++) {
        double sc_g = hypot(h[g][0], h[g][3]);
        int finite = 1;
        for (int i = 0; i < 9; i++)
            finite &= isfinite(h[g][i]);
        if (!finite || !(sc[g].whole >= GM_SELF_MIN_WHOLE) || !(sc_g > 0.5 && sc_g < 2.0) ||
            moved(h[g], seeds[g][0], seeds[g][1], seeds[g][0], seeds[g][1]) <= near)
            continue;
        int at = no++;
        while (at > 0 && sc[order[at - 1]].whole < sc[g].whole)
            order[at] = order[at - 1], at--;
        order[at] = (int)g;
    }
    for (int i = 0; i < no && *n < GM_SELF_MAX; i++) {
        const double *hg = h[order[i]];
        int dup = 0;
        for (int k = 0; k < *n && !dup; k++)
            dup = gm_corner_move(out[k], hg, l->w, l->h) <= near;
        if (dup)
            continue;
        memcpy(out[(*n)++], hg, 9 * sizeof(double));
    }
    for (int k = 0, kept = *n; k < kept; k++) {
        double hi[9];
        int dup = gm_h_invert(out[k], hi) != 0;
        for (int j = 0; j < *n && !dup; j++)
            dup = gm_corner_move(out[j], hi, l->w, l->h) <= near;
        if (!dup)
            memcpy(out[(*n)++], hi, sizeof hi);
    }
done:
    free(sel);
    free(vbuf);
    return st;
}
