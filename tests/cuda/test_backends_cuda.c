/* test_backends_cuda.c: every backend table (src/pipeline/backend.h) against the
 * CPU's, entry by entry, through the table alone: one harness that loops
 * over the backends (vid.stab's reference-vs-fast tests), so a new backend
 * or a new entry is checked by adding it here, not by a suite of its own.
 *
 * The run, on the sample pair (data/ref.jpg at its working size, a
 * downscaled data/query.jpg): the reference's side (edge points and
 * corners), a level (basis index and table), the reference map, the
 * query's side and basis index, the vote and its k best rows (and again:
 * with the same cloud, a cloud of as many points moved 2 px, the first
 * one; a backend that keeps an upload must see each change), the
 * triangles' table (the CPU's on the host, the GPU's on the device) and
 * their vote, the loose
 * verification of every candidate, the refinement of the best three to a
 * similarity and to a homography, their growth from a seed, the corner
 * spread.  Against the CPU: integer stages and point positions exactly
 * (angles within 1e-6 rad: the GPU's atan2f), scores exactly, refined and
 * grown transforms within 0.01 px at the query's corners with confidences
 * within 0.01, the spread within 0.01 px; a refinement beside the spread
 * and a chain of refinements (the matcher's rivals') the same way.
 *
 * The stage suites (test_<stage>_cuda.c) test each kernel's edge cases;
 * this one tests what the pipeline sees.  Exit 77 (skipped) when no backend
 * but the CPU can be opened. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gm_cuda.h"
#include "gmatch.h"
#include "pipeline/backend.h"
#include "pipeline/matcher.h"
#include "stages/resample.h"
#include "stages/transform.h"
#include "test_util.h"

#define K 32          /* candidates of the vote */
#define NREF 3        /* refined and grown */
#define TOL_PX 0.01   /* transforms at the query's corners */
#define TOL_CONF 0.01 /* their confidences */

/* What one backend made of the run. */
typedef struct {
    side rs, qs;
    gm_edge_map map;
    gm_compact index, qindex;
    gm_multi table;
    float *share;
    void *level;
    gm_candidate cands[K];
    uint32_t nc;
    /* the vote again: the same cloud, the cloud moved 2 px (as many points,
     * other bytes), the first cloud once more (a backend that keeps an
     * upload must see each change) */
    gm_candidate again[3][K];
    uint32_t nagain[3];
    gm_tris rt, qt;         /* the triangles: reference, query */
    gm_multi ttable;
    float *tshare;
    void *tlevel;
    gm_candidate tcands[K];
    uint32_t tnc;
    double ms[6 * K];
    gm_verify_score sv[K];
    double hs[NREF][9], hh[NREF][9], hg[NREF][9];
    gm_verify_score ss[NREF], sh[NREF], sg[NREF];
    double spread;
    double hb[9], hc[NREF][9]; /* the refinement beside the spread; a chain's */
    gm_verify_score sb, sc[NREF];
    gm_points vq;
} run_t;

static gm_image g_ref, g_qry;

static void load(void)
{
    char err[256];
    if (gm_image_load("data/ref.jpg", 0, &g_ref, err, sizeof err) != GM_OK ||
        gm_image_load("data/query.jpg", 0, &g_qry, err, sizeof err) != GM_OK)
        ck_abort_msg("the sample pair: %s", err);
}

static void unload(void)
{
    gm_image_free(&g_ref);
    gm_image_free(&g_qry);
}

/* The whole run on backend be (dev and lane open). */
/* Two candidate lists the same: bases and votes exactly, scores within
 * 1e-4 (the GPU's sums in another order). */
static int cands_equal(const gm_candidate *x, uint32_t nx, const gm_candidate *y, uint32_t ny)
{
    if (nx != ny)
        return 0;
    for (uint32_t c = 0; c < nx; c++)
        if (x[c].ref_basis != y[c].ref_basis || x[c].query_basis != y[c].query_basis ||
            x[c].votes != y[c].votes ||
            !(fabsf(x[c].score - y[c].score) <= 1e-4f * fmaxf(1, fabsf(x[c].score))))
            return 0;
    return 1;
}

/* The same, or the test fails naming the first difference (x: the CPU's). */
static void same_cands(const gm_candidate *x, uint32_t nx, const gm_candidate *y, uint32_t ny,
                       const char *what)
{
    if (nx != ny)
        ck_abort_msg("%s: %u candidates against the CPU's %u", what, ny, nx);
    for (uint32_t c = 0; c < nx; c++)
        if (!cands_equal(&x[c], 1, &y[c], 1))
            ck_abort_msg("%s, candidate %u: (%u, %u, %u, %.6g) against the CPU's (%u, %u, %u, "
                         "%.6g)", what, c, y[c].ref_basis, y[c].query_basis, y[c].votes,
                         y[c].score, x[c].ref_basis, x[c].query_basis, x[c].votes, x[c].score);
}

static void run(const gm_backend_ops *be, void *dev, void *lane, run_t *o)
{
    memset(o, 0, sizeof *o);
    const gm_params p = gm_params_default();
    char err[128];
    gm_view rv = gm_image_view(&g_ref), qv = gm_image_view(&g_qry);
    int fr = gm_downscale_factor(rv.width, rv.height, p.max_side);
    EXPECT_OK(gm_side_build_f(be, lane, rv, fr, 200000, (uint32_t)p.ref_points,
                              (uint32_t)p.basis_points, &o->rs, err, sizeof err));
    /* the query at half: a scale the pairing (0, 0) covers */
    EXPECT_OK(gm_side_build_f(be, lane, qv, 2, 200000, (uint32_t)p.query_points,
                              (uint32_t)p.basis_points / 2, &o->qs, err, sizeof err));
    /* the reference's map, on the host for the CPU and uploaded by the backend */
    EXPECT_OK(gm_edge_map_build_cpu(&o->rs.all, o->rs.w, o->rs.h, GM_VERIFY_RADIUS, &o->map));
    EXPECT_OK(be->map(dev, lane, NULL, &o->map));
    /* a level: the bases drawn on the host, the index and table by the backend */
    float diag = hypotf((float)o->rs.w, (float)o->rs.h);
    gm_bases b = {0}, qb = {0};
    EXPECT_OK(gm_bases_select_cpu(&o->rs.corners, fmaxf(16.0f, 0.03f * diag), 0.25f * diag,
                                  p.ref_basis_prob, p.seed, &b));
    const uint32_t key_bound = 2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS;
    EXPECT_OK(be->level_build(lane, &o->rs.corners, &b, &o->rs.cloud, 0, key_bound, GM_SALT_REF_INDEX,
                              GM_SALT_REF_TABLE,
                              &o->index, &o->table, &o->share, &o->level));
    /* the query's bases (lengths at scale 0.5 to 2) and their index */
    float qdiag = hypotf((float)o->qs.w, (float)o->qs.h);
    EXPECT_OK(gm_bases_select_cpu(&o->qs.corners, 16.0f, 0.5f * qdiag, 1.0, p.seed, &qb));
    uint32_t nq = qb.n < (uint32_t)p.query_bases ? qb.n : (uint32_t)p.query_bases;
    EXPECT(nq > 0);
    EXPECT_OK(be->index(lane, qb.key, nq, GM_SALT_QUERY_INDEX, &o->qindex));
    /* votes: the k best rows */
    double tv, tr;
    gm_level_at lat = {&o->table, o->share, o->index.u, o->level};
    EXPECT_OK(be->vote(lane, lat, &o->qs.corners, o->qindex.unique, o->qindex.u, &o->qs.cloud, K,
                       o->cands, &o->nc, &tv, &tr));
    EXPECT(o->nc > 0);
    gm_points moved = {xmalloc(o->qs.cloud.n, sizeof *moved.p), o->qs.cloud.n};
    for (uint32_t i = 0; i < moved.n; i++) {
        moved.p[i] = o->qs.cloud.p[i];
        moved.p[i].x += 2.0f;
    }
    const gm_points *clouds[3] = {&o->qs.cloud, &moved, &o->qs.cloud};
    for (int a = 0; a < 3; a++)
        EXPECT_OK(be->vote(lane, lat, &o->qs.corners, o->qindex.unique, o->qindex.u, clouds[a], K,
                           o->again[a], &o->nagain[a], &tv, &tr));
    free(moved.p);
    /* the triangles: the reference's drawn on the host, their table made
     * by the backend, the query's triangles' k best rows */
    EXPECT_OK(gm_tris_select_cpu(&o->rs.corners, fmaxf(16.0f, 0.03f * diag), 0.2f * diag, 0.35f,
                                 0.3, p.seed, &o->rt));
    EXPECT_OK(be->tri_level(lane, &o->rs.corners, &o->rt, &o->rs.cloud, GM_SALT_TRI_TABLE,
                            &o->ttable, &o->tshare, &o->tlevel));
    EXPECT_OK(gm_tris_select_cpu(&o->qs.corners, 8.0f, 0.1f * diag, 0.35f, 0.2, p.seed, &o->qt));
    EXPECT(o->qt.n > 0);
    gm_level_at tlat = {&o->ttable, o->tshare, o->rt.n, o->tlevel};
    EXPECT_OK(be->tri_vote(lane, tlat, &o->qs.corners, o->qt.t, o->qt.n, &o->qs.cloud, K,
                           o->tcands, &o->tnc, &tv, &tr));
    EXPECT(o->tnc > 0);
    /* every candidate's similarity, verified on the query's points */
    uint32_t step = o->qs.all.n > 2000 ? (o->qs.all.n + 1999) / 2000 : 1;
    o->vq.p = xmalloc(o->qs.all.n, sizeof *o->vq.p);
    for (uint32_t k = 0; k < o->qs.all.n; k += step)
        o->vq.p[o->vq.n++] = o->qs.all.p[k];
    EXPECT_OK(be->points(lane, &o->vq));
    for (uint32_t c = 0; c < o->nc; c++) {
        uint32_t rk = o->index.unique[o->cands[c].ref_basis];
        uint32_t qk = o->qindex.unique[o->cands[c].query_basis];
        gm_point qa = o->qs.corners.p[qk >> 16], qb2 = o->qs.corners.p[qk & 0xFFFF];
        gm_point ra = o->rs.corners.p[rk >> 16], rb = o->rs.corners.p[rk & 0xFFFF];
        gm_similarity_from_pairs(qa.x, qa.y, qb2.x, qb2.y, ra.x, ra.y, rb.x, rb.y, o->ms + 6 * c);
    }
    gm_map_at mat = {&o->map, NULL};
    EXPECT_OK(be->verify(lane, mat, &o->vq, o->ms, o->nc, o->sv));
    /* a chain as the matcher's rivals' (begun here and ended after the
     * refinements below, which the device runs meanwhile, as the matcher's
     * answer checks beside its rivals): the candidates' similarities (the
     * second left out) up the ladder to a homography, its rounds, then
     * carried to another level's factor (scored there as they stand) and
     * back, refined again */
    static const uint8_t take[NREF] = {1, 0, 1};
    for (int i = 0; i < NREF; i++)
        gm_h_from_m(o->ms + 6 * ((uint32_t)i < o->nc ? (uint32_t)i : 0), o->hc[i]);
    const gm_chain_step steps[] = {
        {mat, GM_MODEL_SIMILARITY, 6, 0, 2, 1, 1, take},
        {mat, GM_MODEL_AFFINE, 6, 0, 2, 1, 1, take},
        {mat, GM_MODEL_HOMOGRAPHY, 10, 0, 2, 1, 1, NULL},
        {mat, GM_MODEL_HOMOGRAPHY, 10, 4, 2, 1, 1, NULL},
        {mat, GM_MODEL_HOMOGRAPHY, 0, 0, 2, 1, 2, NULL}, /* scored only */
        {mat, GM_MODEL_HOMOGRAPHY, 10, 0, 2, 2, 1, NULL},
    };
    gm_chain_job job;
    EXPECT_OK(gm_chain_begin(&job, be, lane, &o->vq, steps, (int)(sizeof steps / sizeof *steps),
                             &o->hc[0][0], o->sc, NREF));
    /* the best three (by the CPU's order, the same scores), refined to a
     * similarity and to a homography, grown from a seed, and the spread */
    double seeds[NREF][3];
    for (int i = 0; i < NREF; i++) {
        uint32_t c = (uint32_t)i < o->nc ? (uint32_t)i : 0;
        gm_h_from_m(o->ms + 6 * c, o->hs[i]);
        memcpy(o->hh[i], o->hs[i], sizeof o->hh[i]);
        memcpy(o->hg[i], o->hs[i], sizeof o->hg[i]);
        seeds[i][0] = o->qs.w / 2.0, seeds[i][1] = o->qs.h / 2.0;
        seeds[i][2] = 0.3 * (o->qs.w < o->qs.h ? o->qs.w : o->qs.h);
    }
    EXPECT_OK(be->refine(lane, mat, &o->vq, GM_MODEL_SIMILARITY, &o->hs[0][0], 6, NREF, o->ss));
    EXPECT_OK(be->refine(lane, mat, &o->vq, GM_MODEL_HOMOGRAPHY, &o->hh[0][0], 10, NREF, o->sh));
    EXPECT_OK(be->grow(lane, mat, &o->vq, GM_MODEL_HOMOGRAPHY, &o->hg[0][0], &seeds[0][0], NREF,
                       o->sg));
    /* the spread with a homography refined beside it (the matcher's
     * answer checks), from the refined similarity */
    memcpy(o->hb, o->hs[0], sizeof o->hb);
    const gm_refine_beside beside = {GM_MODEL_HOMOGRAPHY, 10, o->hb, &o->sb};
    EXPECT_OK(be->spread(lane, mat, &o->vq, GM_MODEL_HOMOGRAPHY, o->hh[0], o->qs.w, o->qs.h,
                         &o->spread, &beside));
    EXPECT_OK(gm_chain_end(&job));
    /* the same chain again, begun and ended with nothing between (the
     * lane's chain buffers used anew, after one set aside): the same
     * numbers bit for bit */
    double hc2[NREF][9];
    gm_verify_score sc2[NREF];
    memset(sc2, 0, sizeof sc2);
    for (int i = 0; i < NREF; i++)
        gm_h_from_m(o->ms + 6 * ((uint32_t)i < o->nc ? (uint32_t)i : 0), hc2[i]);
    EXPECT_OK(gm_chain_begin(&job, be, lane, &o->vq, steps, (int)(sizeof steps / sizeof *steps),
                             &hc2[0][0], sc2, NREF));
    EXPECT_OK(gm_chain_end(&job));
    EXPECT(memcmp(hc2, o->hc, sizeof hc2) == 0);
    for (int i = 0; i < NREF; i++)
        EXPECT(sc2[i].hits == o->sc[i].hits && sc2[i].whole == o->sc[i].whole);
    free(b.key);
    free(qb.key);
}

static void run_free(const gm_backend_ops *be, run_t *o)
{
    gm_side_free(&o->rs);
    gm_side_free(&o->qs);
    gm_edge_map_free(&o->map);
    gm_compact_free(&o->index);
    gm_compact_free(&o->qindex);
    gm_multi_free(&o->table);
    free(o->share);
    if (o->level)
        be->level_free(o->level);
    free(o->rt.t);
    free(o->qt.t);
    gm_multi_free(&o->ttable);
    free(o->tshare);
    if (o->tlevel)
        be->level_free(o->tlevel);
    free(o->vq.p);
}

static void same_points(const gm_points *a, const gm_points *b, const char *what)
{
    EXPECT_EQ(a->n, b->n);
    for (uint32_t k = 0; k < a->n; k++)
        if (a->p[k].x != b->p[k].x || a->p[k].y != b->p[k].y || a->p[k].w != b->p[k].w ||
            !(fabsf(a->p[k].angle - b->p[k].angle) <= 1e-6f))
            ck_abort_msg("%s %u: (%.9g %.9g %.9g %.9g) against the CPU's (%.9g %.9g %.9g %.9g)",
                         what, k, b->p[k].x, b->p[k].y, b->p[k].angle, b->p[k].w, a->p[k].x,
                         a->p[k].y, a->p[k].angle, a->p[k].w);
}

static void same_score(gm_verify_score a, gm_verify_score b, const char *what, int i)
{
    if (a.total != b.total || a.hits != b.hits || a.bg_hits != b.bg_hits)
        ck_abort_msg("%s %d: (%u, %u, %u) against the CPU's (%u, %u, %u)", what, i, b.total, b.hits,
                     b.bg_hits, a.total, a.hits, a.bg_hits);
}

static void near_fit(const double a[9], gm_verify_score sa, const double b[9],
                     gm_verify_score sb, int w, int h, const char *what, int i)
{
    double d = h_corner_gap(a, b, w, h);
    if (!(d <= TOL_PX) || !(fabs(sa.confidence - sb.confidence) <= TOL_CONF))
        ck_abort_msg("%s %d: corners %.3g px from the CPU's, confidence %.4f against %.4f", what, i,
                     d, sb.confidence, sa.confidence);
}

/* b's run against the CPU's (a). */
static void compare(const run_t *a, const run_t *b, const char *name)
{
    printf("%s: %u reference points, %u corners, %u bases; %u query points, %u candidates, "
           "best votes %u; %u and %u triangles, best votes %u; refined confidences %.3f %.3f, "
           "spread %.3f px\n",
           name, b->rs.all.n, b->rs.corners.n, b->index.u, b->qs.all.n, b->nc,
           b->nc ? b->cands[0].votes : 0, b->rt.n, b->qt.n, b->tnc ? b->tcands[0].votes : 0,
           b->ss[0].confidence, b->sh[0].confidence, b->spread);
    same_points(&a->rs.all, &b->rs.all, "reference edge point");
    same_points(&a->rs.corners, &b->rs.corners, "reference corner");
    same_points(&a->qs.all, &b->qs.all, "query edge point");
    same_points(&a->qs.corners, &b->qs.corners, "query corner");
    EXPECT_EQ(a->index.u, b->index.u);
    EXPECT(memcmp(a->index.unique, b->index.unique, a->index.u * sizeof *a->index.unique) == 0);
    EXPECT_EQ(a->qindex.u, b->qindex.u);
    EXPECT(memcmp(a->qindex.unique, b->qindex.unique, a->qindex.u * sizeof *a->qindex.unique) == 0);
    same_cands(a->cands, a->nc, b->cands, b->nc, "the vote");
    for (uint32_t c = 0; c < a->nc; c++)
        same_score(a->sv[c], b->sv[c], "loose score", (int)c);
    /* the votes again: each the CPU's; the moved cloud's differs from the
     * first (else a stale cloud would pass) */
    static const char *again[3] = {"the vote again", "the moved cloud's vote",
                                   "the first cloud's vote after the moved one"};
    for (int v = 0; v < 3; v++)
        same_cands(a->again[v], a->nagain[v], b->again[v], b->nagain[v], again[v]);
    same_cands(a->cands, a->nc, a->again[0], a->nagain[0], "the CPU's vote again");
    EXPECT(!cands_equal(a->cands, a->nc, a->again[1], a->nagain[1]));
    /* the triangles' vote: the same candidates, field for field */
    EXPECT_EQ(a->tnc, b->tnc);
    for (uint32_t c = 0; c < a->tnc; c++) {
        const gm_candidate *x = &a->tcands[c], *y = &b->tcands[c];
        if (x->ref_basis != y->ref_basis || x->query_basis != y->query_basis ||
            x->votes != y->votes || memcmp(&x->score, &y->score, sizeof x->score) != 0)
            ck_abort_msg("triangle candidate %u: (%u, %u, %u, %.9g) against the CPU's (%u, %u, "
                         "%u, %.9g)", c, y->ref_basis, y->query_basis, y->votes, y->score,
                         x->ref_basis, x->query_basis, x->votes, x->score);
    }
    int w = b->qs.w, h = b->qs.h;
    for (int i = 0; i < NREF; i++) {
        near_fit(a->hs[i], a->ss[i], b->hs[i], b->ss[i], w, h, "similarity refined", i);
        near_fit(a->hh[i], a->sh[i], b->hh[i], b->sh[i], w, h, "homography refined", i);
        /* a growth that converges ends where the CPU's does; one that does
         * not (a wrong candidate) wanders with the sums' rounding: only its
         * failing is compared (test_verify_cuda's rule) */
        if (a->sg[i].confidence > 0.5)
            near_fit(a->hg[i], a->sg[i], b->hg[i], b->sg[i], w, h, "homography grown", i);
        else
            EXPECT(b->sg[i].confidence < 0.5 + TOL_CONF);
    }
    if (!(fabs(a->spread - b->spread) <= TOL_PX))
        ck_abort_msg("spread %.6g px against the CPU's %.6g", b->spread, a->spread);
    near_fit(a->hb, a->sb, b->hb, b->sb, w, h, "homography refined beside the spread", 0);
    for (int i = 0; i < NREF; i++) { /* the rule of the growth's comparison above */
        if (a->sc[i].confidence > 0.5)
            near_fit(a->hc[i], a->sc[i], b->hc[i], b->sc[i], w, h, "chain", i);
        else
            EXPECT(b->sc[i].confidence < 0.5 + TOL_CONF);
    }
}

START_TEST(test_every_backend)
{
    run_t ref;
    void *lane = gm_backend_cpu.acquire(NULL);
    run(&gm_backend_cpu, NULL, lane, &ref);
    gm_backend_cpu.release(NULL, lane);
    /* the run finds the sample's match: the comparisons are not of noise */
    EXPECT(ref.ss[0].confidence > 0.5);
    EXPECT(ref.sb.confidence > 0.5 && ref.sc[0].confidence > 0.5);
    int compared = 0;
    for (int k = 0; gm_backends[k]; k++) { /* every accelerator of the registry */
        const gm_backend_ops *be = gm_backends[k];
        void *dev = NULL;
        char why[256];
        if (be == &gm_backend_cpu || be->open(&dev, 0, why, sizeof why) != GM_OK)
            continue;
        EXPECT(gm_backend_find(be->device) == be);
        void *l = be->acquire(dev);
        ck_assert_ptr_nonnull(l);
        run_t o;
        run(be, dev, l, &o);
        compare(&ref, &o, be->name);
        run_free(be, &o);
        be->release(dev, l);
        be->close(dev);
        compared++;
    }
    run_free(&gm_backend_cpu, &ref);
    EXPECT(compared > 0);
}
END_TEST

static Suite *backends_suite(void)
{
    Suite *s = suite_create("backends");
    TCase *tc = tcase_create("tables");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, load, unload);
    tcase_add_test(tc, test_every_backend);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(backends_suite); }
