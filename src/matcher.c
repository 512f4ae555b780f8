/* matcher.c: the pipeline, reference side and query side.
 *
 *   reference: downscale -> Sobel edges -> compaction -> points -> corners ->
 *              bases (compacting table: two-way index) -> (u,v,dir) items ->
 *              multi-value table; edge-direction map for verification
 *   query:     the same up to the bases; m bases in a two-way index; votes
 *              into the m x n matrix; top-k reduction; each candidate's
 *              transform verified on the edges; the best refined.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct gm_ref {
    gm_params p;
    int f;             /* downscale factor: working pixel X is source pixel f*X + (f-1)/2 */
    int w, h;          /* working size */
    float lmin, lmax;  /* basis lengths, working pixels */
    gm_edge_map map;
    gm_points corners;
    gm_compact bases;  /* two-way index: basis key <-> dense index */
    gm_multi table;    /* (u, v, dir) -> dense basis indices */
    float *share;      /* [bases] each basis's fraction of the table's items */
    double prep_ms;
    char err[256];
};

/* Verification radius in working pixels: JPEG, noise and one cell of
 * quantization move edges by about a pixel. */
#define GM_VERIFY_RADIUS 2
/* Points tested per candidate: a sample of the query's edge pixels. */
#define GM_VERIFY_POINTS 3000
/* Candidates refined (the best by verification). */
#define GM_REFINE_CANDS 3

gm_params gm_params_default(void)
{
    gm_params p;
    memset(&p, 0, sizeof p);
    p.seed = 1;
    p.threads = 0;
    p.device = GM_DEVICE_AUTO;
    p.min_confidence = 0.4;
    p.max_pixels = GM_DEFAULT_MAX_PIXELS;
    p.max_side = 1024;
    p.ref_points = 600;
    p.query_points = 500;
    p.basis_points = 400;
    p.ref_basis_prob = 0.2;
    p.query_bases = 400;
    p.top_k = 32;
    return p;
}

static double now_ms(void) { return omp_get_wtime() * 1000.0; }

/* Everything the query and the reference share up to the bases. */
typedef struct {
    int f, w, h;
    uint8_t *work;     /* downscaled copy, NULL when f == 1 */
    gm_view view;      /* working image */
    gm_edges edges;
    uint32_t *idx;
    uint32_t n_idx;
    gm_points all;     /* every edge pixel, sub-pixel */
    gm_points cloud;   /* spread sample that votes / fills the table */
    gm_points corners; /* basis endpoints */
} side;

static void side_free(side *s)
{
    free(s->work);
    gm_edges_free(&s->edges);
    free(s->idx);
    free(s->all.p);
    free(s->cloud.p);
    free(s->corners.p);
    memset(s, 0, sizeof *s);
}

static gm_status side_build(const gm_params *p, gm_view img, uint32_t cloud_target,
                            uint32_t corner_target, side *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (!img.data || img.width <= 0 || img.height <= 0) {
        snprintf(err, errlen, "empty image");
        return GM_ERR_EMPTY;
    }
    s->f = gm_downscale_factor(img.width, img.height, p->max_side);
    s->view = img;
    if (s->f > 1) {
        s->w = img.width / s->f;
        s->h = img.height / s->f;
        s->work = malloc((size_t)s->w * s->h);
        if (!s->work)
            goto nomem;
        gm_downscale_cpu(img, s->f, s->work);
        s->view = (gm_view){s->work, s->w, s->h, s->w};
    }
    s->w = s->view.width;
    s->h = s->view.height;
    size_t area = (size_t)s->w * s->h;
    int max_edges = (int)(area / 8 > 200000 ? 200000 : area / 8);
    gm_status st = gm_edges_cpu(s->view, max_edges, &s->edges);
    if (st != GM_OK)
        goto fail;
    s->idx = malloc((area ? area : 1) * sizeof *s->idx);
    if (!s->idx)
        goto nomem;
    s->n_idx = gm_compact_flags_cpu(s->edges.edge, (uint32_t)area, s->idx);
    if ((st = gm_edge_points_cpu(&s->edges, s->idx, s->n_idx, &s->all)) != GM_OK)
        goto fail;
    if ((st = gm_points_spread_cpu(&s->all, s->w, s->h, cloud_target, &s->cloud)) != GM_OK)
        goto fail;
    if ((st = gm_corners_cpu(&s->edges, corner_target, &s->corners)) != GM_OK)
        goto fail;
    return GM_OK;
nomem:
    st = GM_ERR_NOMEM;
fail:
    snprintf(err, errlen, "%s", gm_status_str(st));
    side_free(s);
    return st;
}

gm_status gm_ref_prepare(const gm_params *p, gm_view img, gm_ref **out)
{
    *out = NULL;
    double t0 = now_ms();
    gm_ref *r = calloc(1, sizeof *r);
    if (!r)
        return GM_ERR_NOMEM;
    r->p = *p;
    if (p->threads > 0)
        omp_set_num_threads(p->threads);
    side s;
    char err[128];
    gm_status st = side_build(p, img, (uint32_t)p->ref_points, (uint32_t)p->basis_points, &s, err,
                              sizeof err);
    if (st != GM_OK) {
        free(r);
        return st;
    }
    r->f = s.f;
    r->w = s.w;
    r->h = s.h;
    float diag = sqrtf((float)s.w * s.w + (float)s.h * s.h);
    r->lmin = fmaxf(16.0f, 0.03f * diag);
    r->lmax = 0.25f * diag;
    gm_bases b = {0};
    uint32_t *keys = NULL, *vals = NULL, n_items = 0;
    if ((st = gm_edge_map_build_cpu(&s.all, s.w, s.h, GM_VERIFY_RADIUS, &r->map)) != GM_OK)
        goto done;
    if ((st = gm_bases_select_cpu(&s.corners, r->lmin, r->lmax, p->ref_basis_prob, p->seed, &b)) !=
        GM_OK)
        goto done;
    /* the two-way basis index (paper 4.3): dense index <-> (i, j) */
    if ((st = gm_compact_build_cpu(&r->bases, b.key, b.n, 0, p->seed ^ 0xB0, NULL)) != GM_OK)
        goto done;
    if ((st = gm_basis_items_cpu(&s.corners, r->bases.unique, r->bases.u, &s.cloud, &keys, &vals,
                                 &n_items)) != GM_OK)
        goto done;
    /* at most 96 * 96 * 16 distinct keys exist: size the table by that bound */
    st = gm_multi_build_cpu(&r->table, keys, vals, n_items,
                            2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS, p->seed ^ 0x7AB1E,
                            NULL);
    if (st != GM_OK)
        goto done;
    if (!(r->share = calloc(r->bases.u ? r->bases.u : 1, sizeof *r->share))) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    for (uint32_t i = 0; i < n_items; i++)
        r->share[vals[i]] += 1.0f;
    for (uint32_t i = 0; i < r->bases.u; i++)
        r->share[i] /= (float)(n_items ? n_items : 1);
    r->corners = s.corners;
    s.corners.p = NULL;
done:
    free(b.key);
    free(keys);
    free(vals);
    side_free(&s);
    if (st != GM_OK) {
        gm_ref_free(r);
        return st;
    }
    r->prep_ms = now_ms() - t0;
    *out = r;
    return GM_OK;
}

void gm_ref_free(gm_ref *r)
{
    if (!r)
        return;
    gm_edge_map_free(&r->map);
    free(r->corners.p);
    gm_compact_free(&r->bases);
    gm_multi_free(&r->table);
    free(r->share);
    free(r);
}

const char *gm_ref_error(const gm_ref *r) { return r ? r->err : "no reference"; }
double gm_ref_time_ms(const gm_ref *r) { return r ? r->prep_ms : 0.0; }

/* Every k-th point so that at most `cap` remain (keeps the spread along edges). */
static gm_points stride_sample(const gm_points *all, uint32_t cap, gm_point *buf)
{
    gm_points out = {buf, 0};
    uint32_t step = all->n > cap ? (all->n + cap - 1) / cap : 1;
    for (uint32_t k = 0; k < all->n; k += step)
        buf[out.n++] = all->p[k];
    return out;
}

/* Working-coordinate transform (query work -> ref work) to source pixels. */
static void to_source(const double mw[6], int fq, int fr, double m[6])
{
    /* ref source = fr * X + (fr-1)/2 ; query work = (x - (fq-1)/2) / fq */
    double sq = 1.0 / fq, oq = -(fq - 1) / 2.0 / fq, orr = (fr - 1) / 2.0;
    m[0] = fr * mw[0] * sq;
    m[1] = fr * mw[1] * sq;
    m[2] = fr * (mw[0] * oq + mw[1] * oq + mw[2]) + orr;
    m[3] = fr * mw[3] * sq;
    m[4] = fr * mw[4] * sq;
    m[5] = fr * (mw[3] * oq + mw[4] * oq + mw[5]) + orr;
}

gm_status gm_match(const gm_ref *r, gm_view query, gm_result *out)
{
    memset(out, 0, sizeof *out);
    double t0 = now_ms(), t1;
    const gm_params *p = &r->p;
    side s;
    char err[128];
    uint32_t corner_target = (uint32_t)p->basis_points / 2;
    gm_status st = side_build(p, query, (uint32_t)p->query_points, corner_target, &s, err, sizeof err);
    if (st != GM_OK)
        return st;
    t1 = now_ms();
    out->time.edges = t1 - t0;

    gm_bases all_b = {0};
    gm_compact qidx;
    memset(&qidx, 0, sizeof qidx);
    uint16_t *votes = NULL;
    gm_candidate *cands = NULL;
    gm_point *vbuf = NULL;
    uint32_t *sel = NULL;
    /* query basis lengths, in query working pixels: reference lengths carried
     * over by the working-size ratio, narrowed so that scales from 0.5 to 2
     * still find a reference basis of the same length */
    double ratio = (double)r->f / s.f; /* ref working px per query working px at scale 1 */
    float qdiag = sqrtf((float)s.w * s.w + (float)s.h * s.h);
    float lmin = (float)(r->lmin / ratio) * 1.25f, lmax = fminf((float)(r->lmax / ratio) * 0.8f, 0.8f * qdiag);
    if ((st = gm_bases_select_cpu(&s.corners, lmin, lmax, 1.0, p->seed, &all_b)) != GM_OK)
        goto done;
    /* m of them at random (a hash of the seed and the pair: thread-independent) */
    sel = malloc((all_b.n ? all_b.n : 1) * sizeof *sel);
    if (!sel) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    uint32_t nsel = 0;
    {
        double prob = all_b.n > (uint32_t)p->query_bases ? (double)p->query_bases / all_b.n : 1.0;
        uint64_t thr = prob >= 1.0 ? UINT64_MAX : (uint64_t)(prob * 18446744073709551616.0);
        for (uint32_t i = 0; i < all_b.n; i++)
            if (gm_mix64(p->seed ^ 0x51EC7ull ^ ((uint64_t)all_b.key[i] << 20)) <= thr)
                sel[nsel++] = all_b.key[i];
    }
    if ((st = gm_compact_build_cpu(&qidx, sel, nsel, 0, p->seed ^ 0x0B, NULL)) != GM_OK)
        goto done;
    uint32_t n_q = qidx.u, n_ref = r->bases.u;
    t0 = now_ms();
    out->time.bases = t0 - t1;
    if (n_q == 0 || n_ref == 0 || r->map.pts.n == 0 || s.all.n < 8)
        goto done; /* nothing to vote with: a successful "no match" */
    size_t nv;
    if (!gm_mul_ok((size_t)n_q, (size_t)n_ref, &nv) || !(votes = malloc(nv * sizeof *votes))) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    gm_vote_cpu(&r->table, n_ref, &s.corners, qidx.unique, n_q, &s.cloud, votes);
    t1 = now_ms();
    out->time.vote = t1 - t0;
    uint32_t k = (uint32_t)(p->top_k > 0 ? p->top_k : 1);
    cands = malloc(k * sizeof *cands);
    if (!cands) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    uint32_t nc = gm_reduce_topk_cpu(votes, r->share, n_ref, n_q, k, cands);
    t0 = now_ms();
    out->time.reduce = t0 - t1;

    /* verification: every candidate's transform against the reference edges */
    vbuf = malloc(GM_VERIFY_POINTS * sizeof *vbuf);
    if (!vbuf) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    gm_points vq = stride_sample(&s.all, GM_VERIFY_POINTS, vbuf);
    double ms[64][6];
    gm_verify_score sc[64];
    if (nc > 64)
        nc = 64;
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t rk = r->bases.unique[cands[c].ref_basis], qk = qidx.unique[cands[c].query_basis];
        gm_point qa = s.corners.p[qk >> 16], qb = s.corners.p[qk & 0xFFFF];
        gm_point ra = r->corners.p[rk >> 16], rb = r->corners.p[rk & 0xFFFF];
        gm_similarity_from_pairs(qa.x, qa.y, qb.x, qb.y, ra.x, ra.y, rb.x, rb.y, ms[c]);
        sc[c] = gm_verify_cpu(&r->map, &vq, ms[c]);
    }
    /* refine the best few, keep the best after refinement */
    int best = -1;
    double best_conf = -1;
    double bm[6] = {0};
    gm_verify_score bs = {0, 0, 0, 0};
    for (int pass = 0; pass < GM_REFINE_CANDS && pass < (int)nc; pass++) {
        int bi = -1;
        for (uint32_t c = 0; c < nc; c++)
            if (sc[c].total != UINT32_MAX && (bi < 0 || sc[c].confidence > sc[bi].confidence))
                bi = (int)c;
        if (bi < 0)
            break;
        double m[6];
        memcpy(m, ms[bi], sizeof m);
        sc[bi].total = UINT32_MAX; /* taken */
        gm_refine_cpu(&r->map, &vq, m, 6);
        gm_verify_score v = gm_verify_strict_cpu(&r->map, &vq, m);
        if (v.confidence > best_conf) {
            best_conf = v.confidence;
            best = bi;
            memcpy(bm, m, sizeof m);
            bs = v;
        }
    }
    t1 = now_ms();
    out->time.verify = t1 - t0;
    if (best >= 0) {
        out->votes = (int)cands[best].votes;
        out->confidence = bs.confidence;
        out->inliers = (int)bs.hits;
        to_source(bm, s.f, r->f, out->m);
        out->scale = hypot(out->m[0], out->m[3]);
        out->angle_deg = atan2(out->m[3], out->m[0]) * 180.0 / GM_PI;
        if (bs.confidence >= p->min_confidence && isfinite(out->scale) && out->scale > 0)
            out->status = GM_MATCH_FOUND;
    }
done:
    free(all_b.key);
    free(sel);
    gm_compact_free(&qidx);
    free(votes);
    free(cands);
    free(vbuf);
    side_free(&s);
    out->time.total = out->time.edges + out->time.bases + out->time.vote + out->time.reduce +
                      out->time.verify;
    return st;
}
