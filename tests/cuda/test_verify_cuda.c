/* test_verify_cuda.c: verification and refinement of candidate transforms on
 * the GPU (src/cuda/verify.cu) against the CPU (verify.c).
 *
 * References: the edge map of data/ref.jpg and of a rendered scene
 * (test_scene.h), built from real edges (gm_edges_cpu, compaction, edge
 * points).  Queries: the reference's points moved by a known similarity
 * (pull_back) and the edge points of queries rendered under a similarity, an
 * affine map and a homography, capped as the matcher caps them (stride
 * sampling to GM_VERIFY_POINTS = 2000).  Candidates: the truth, perturbed
 * ones (1-5 px, a few degrees, a few percent of scale), wrong ones and ones
 * mapping outside the image; batches of 1, 3 and 32.
 *
 * Expected: loose scores equal to gm_verify_cpu's exactly; strict scores of a
 * transform equal to gm_verify_strict_h_cpu's of the same transform exactly;
 * refined transforms within 0.01 px of gm_refine_model_cpu's at the corners
 * of the points' bounding box, for the three models.
 *
 * GM_TEST_SMALL=1 (compute-sanitizer): 300 points instead of 2000.
 * GM_VERIFY_BENCH=1: prints the time of a batch of 32 loose verifications
 * and of 3 refinements of 6 iterations on 2000 points, GPU and CPU (no
 * assertion on time).  Exit 77 (skipped) without a CUDA device. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "common/common.h"
#include "pipeline/backend.h"
#include "stages/chain_core.h"
#include "stages/pair_core.h"
#include "stages/points.h"
#include "stages/transform.h"
#include "stages/verify.h"
#include "cuda/gm_cuda.h"
#include "stages/verify_core.h"
#include "cuda/verify_cuda.h"
#include "test_util.h"
#include "test_scene.h"

#define MAP_RADIUS 2     /* the matcher's GM_VERIFY_RADIUS */
#define MAX_CANDS 32
#define CORNER_TOL 0.01  /* px */
#define GM_CHAIN_ROUNDS_TEST 4 /* the matcher's GM_RIVAL_ROUNDS */

static int g_small;
static cudaStream_t g_stream;

static uint32_t point_cap(void) { return g_small ? 300 : 2000; }

/* ---- references and queries ------------------------------------------------------ */

typedef struct {
    int w, h;
    gm_points all;
    gm_edge_map map;
    gm_edge_map_dev dev;
} ref_t;

static void ref_make(ref_t *r, const uint8_t *im, int w, int h)
{
    r->w = w;
    r->h = h;
    r->all = edge_points(im, w, h);
    EXPECT(r->all.n > 100);
    EXPECT_OK(gm_edge_map_build_cpu(&r->all, w, h, MAP_RADIUS, &r->map));
    EXPECT_OK(gm_edge_map_upload(&r->map, &r->dev, g_stream));
}

static void ref_free(ref_t *r)
{
    gm_edge_map_dev_free(&r->dev);
    gm_edge_map_free(&r->map);
    free(r->all.p);
}

/* data/ref.jpg, packed (edge_points reads rows w apart) */
static void ref_from_jpeg(ref_t *r)
{
    gm_image img = load_data("data/ref.jpg");
    uint8_t *im = xmalloc((size_t)img.width * img.height, 1);
    for (int y = 0; y < img.height; y++)
        memcpy(im + (size_t)y * img.width, img.data + (size_t)y * img.stride, (size_t)img.width);
    ref_make(r, im, img.width, img.height);
    free(im);
    gm_image_free(&img);
}

/* The rendered scene (test_scene.h) at the identity, w x h. */
static void ref_from_scene(ref_t *r, int w, int h)
{
    static const double IDENT[6] = {1, 0, 0, 0, 1, 0};
    uint8_t *im = render(w, h, IDENT);
    ref_make(r, im, w, h);
    free(im);
}

/* Every step-th point so that at most cap remain (matcher.c's stride_sample);
 * the caller frees .p. */
static gm_points stride_cap(const gm_points *all, uint32_t cap)
{
    gm_points out = {xmalloc(all->n, sizeof(gm_point)), 0};
    uint32_t step = all->n > cap ? (all->n + cap - 1) / cap : 1;
    for (uint32_t k = 0; k < all->n; k += step)
        out.p[out.n++] = all->p[k];
    return out;
}

/* The query of a reference r under the similarity T (query -> reference):
 * r's points inside the window [x0, x1) x [y0, y1) pulled back by T, capped. */
static gm_points query_pulled(const ref_t *r, const double T[6], float x0, float y0, float x1,
                              float y1)
{
    gm_points win = {xmalloc(r->all.n, sizeof(gm_point)), 0};
    for (uint32_t k = 0; k < r->all.n; k++) {
        gm_point p = r->all.p[k];
        if (p.x >= x0 && p.x < x1 && p.y >= y0 && p.y < y1)
            win.p[win.n++] = p;
    }
    gm_points q = pull_back(&win, T), out = stride_cap(&q, point_cap());
    free(win.p);
    free(q.p);
    return out;
}

/* The edge points of a qw x qh query rendered from the scene under H, capped. */
static gm_points query_rendered(const double H[9], int qw, int qh)
{
    uint8_t *im = render_h(qw, qh, H);
    gm_points all = edge_points(im, qw, qh), out = stride_cap(&all, point_cap());
    free(all.p);
    free(im);
    return out;
}

/* ---- candidates ---------------------------------------------------------------- */

/* Candidate c of a batch around the true transform H (3x3) of a query whose
 * points lie around (qcx, qcy), in a reference of w x h: kind c % 4 is
 * 0 the truth (c = 0) or a small perturbation, 1 a larger one (up to 5 px and
 * 4 degrees), 2 a wrong transform, 3 the truth moved out of the image. */
static void candidate(int c, const double H[9], double qcx, double qcy, int w, int h, double out[9])
{
    double px, py;
    gm_h_apply(H, qcx, qcy, &px, &py);
    double deg = 0, s = 1, dx = 0, dy = 0;
    switch (c % 4) {
    case 0:
        if (c > 0) {
            deg = (rng_unit() * 2 - 1) * 1.0;
            dx = (rng_unit() * 2 - 1) * 1.5;
            dy = (rng_unit() * 2 - 1) * 1.5;
        }
        break;
    case 1: {
        double a = rng_unit() * 2 * GM_PI, d = 1 + 4 * rng_unit();
        deg = (rng_unit() < 0.5 ? -1 : 1) * (1 + 3 * rng_unit());
        s = 1 + (rng_unit() * 2 - 1) * 0.03;
        dx = d * cos(a);
        dy = d * sin(a);
        break;
    }
    case 2:
        deg = 30 + 300 * rng_unit();
        s = 0.7 + 0.7 * rng_unit();
        dx = (rng_unit() - 0.5) * w * 0.6;
        dy = (rng_unit() - 0.5) * h * 0.6;
        break;
    default:
        dx = (rng_unit() < 0.5 ? -3.0 : 3.0) * w;
        dy = (rng_unit() - 0.5) * h;
        break;
    }
    /* P: scale s and turn deg about the mapped centre, then shift */
    double m[6];
    make_sim(deg, s, 0, 0, m);
    double P[9] = {m[0], m[1], px + dx - (m[0] * px + m[1] * py),
                   m[3], m[4], py + dy - (m[3] * px + m[4] * py), 0, 0, 1};
    h_mul(P, H, out);
}

static void bbox_centre(const gm_points *q, double *cx, double *cy)
{
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (uint32_t k = 0; k < q->n; k++) {
        x0 = fminf(x0, q->p[k].x);
        y0 = fminf(y0, q->p[k].y);
        x1 = fmaxf(x1, q->p[k].x);
        y1 = fmaxf(y1, q->p[k].y);
    }
    *cx = q->n ? (x0 + x1) / 2.0 : 0;
    *cy = q->n ? (y0 + y1) / 2.0 : 0;
}

/* Largest distance between the images under a and b of the corners of the
 * points' bounding box. */
static double corner_dist(const gm_points *q, const double a[9], const double b[9])
{
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (uint32_t k = 0; k < q->n; k++) {
        x0 = fminf(x0, q->p[k].x);
        y0 = fminf(y0, q->p[k].y);
        x1 = fmaxf(x1, q->p[k].x);
        y1 = fmaxf(y1, q->p[k].y);
    }
    return box_corner_gap(a, b, x0, y0, x1, y1);
}

/* ---- the comparisons ------------------------------------------------------------- */

static void expect_same_score(gm_verify_score g, gm_verify_score c, const char *what, uint32_t i)
{
    if (g.total != c.total || g.inside != c.inside || g.hits != c.hits ||
        g.bg_hits != c.bg_hits || memcmp(&g.confidence, &c.confidence, sizeof g.confidence) != 0 ||
        memcmp(&g.whole, &c.whole, sizeof g.whole) != 0)
        ck_abort_msg("%s, candidate %u: GPU (%u, %u, %u, %u, %.17g), CPU (%u, %u, %u, %u, %.17g)",
                     what, i, g.total, g.inside, g.hits, g.bg_hits, g.confidence, c.total,
                     c.inside, c.hits, c.bg_hits, c.confidence);
}

/* The loose scores of the similarities hs[9c..] (their top two rows) on the
 * points v holds (q): exactly gm_verify_cpu's.  Returns the candidates whose
 * confidence exceeds 0.5 (so callers can check the batch has true ones). */
static uint32_t check_loose(const ref_t *r, gm_verify_dev *v, const gm_points *q, const double *hs,
                            uint32_t nc, const char *what)
{
    double m[6 * MAX_CANDS] = {0};
    gm_verify_score g[MAX_CANDS];
    for (uint32_t c = 0; c < nc; c++)
        memcpy(m + 6 * c, hs + 9 * c, 6 * sizeof *m);
    EXPECT_OK(gm_verify_batch_cuda(&r->dev, v, m, nc, g, g_stream));
    uint32_t good = 0;
    for (uint32_t c = 0; c < nc; c++) {
        gm_verify_score s = gm_verify_cpu(&r->map, q, m + 6 * c);
        expect_same_score(g[c], s, what, c);
        good += s.confidence > 0.5;
    }
    return good;
}

/* Refinement of hs[9c..] (iters) then strict scoring, GPU against CPU:
 * corners within CORNER_TOL, the GPU's strict score equal to the CPU's strict
 * score of the GPU's h; with iters = 0, h untouched and the scores equal.
 * Returns the largest corner distance. */
static double check_refine(const ref_t *r, gm_verify_dev *v, const gm_points *q, gm_model model,
                           const double *hs, uint32_t nc, int iters, const char *what)
{
    double hg[9 * MAX_CANDS] = {0};
    gm_verify_score g[MAX_CANDS];
    memcpy(hg, hs, 9 * nc * sizeof *hg);
    EXPECT_OK(gm_refine_verify_cuda(&r->dev, v, model, hg, iters, nc, g, g_stream));
    if (v->cluster) {
        /* the one-launch refinement, with blocks of 256 threads and (wide)
         * of a point to two threads, against a launch an iteration: the same
         * sums in the same order, so the same h and scores bit for bit */
        for (int pass = 0; pass < 3; pass++) {
            double h2[9 * MAX_CANDS] = {0};
            gm_verify_score g2[MAX_CANDS];
            memcpy(h2, hs, 9 * nc * sizeof *h2);
            const int wide = v->wide;
            v->cluster = pass != 0;
            v->wide = pass == 2 ? !wide : wide;
            gm_status st = gm_refine_verify_cuda(&r->dev, v, model, h2, iters, nc, g2, g_stream);
            v->cluster = 1;
            v->wide = wide;
            EXPECT_OK(st);
            for (uint32_t c = 0; c < nc; c++) {
                if (memcmp(h2 + 9 * c, hg + 9 * c, 9 * sizeof *hg) != 0)
                    ck_abort_msg("%s, model %d, candidate %u: the one-launch refinement's h "
                                 "differs from the %s one's", what, (int)model, c,
                                 pass == 0 ? "split" : pass == 1 ? "repeated" : "other width's");
                expect_same_score(g[c], g2[c], what, c);
            }
        }
    }
    double worst = 0;
    uint32_t same_cpu = 0;
    for (uint32_t c = 0; c < nc; c++) {
        double hc[9];
        memcpy(hc, hs + 9 * c, sizeof hc);
        gm_refine_model_cpu(&r->map, q, model, hc, iters);
        gm_verify_score sc = gm_verify_strict_h_cpu(&r->map, q, hc);
        double d = corner_dist(q, hc, hg + 9 * c);
        if (!(d <= CORNER_TOL))
            ck_abort_msg("%s, model %d, candidate %u of %u, %d iterations: corners %.3g px from the "
                         "CPU's", what, (int)model, c, nc, iters, d);
        worst = fmax(worst, d);
        if (iters == 0)
            EXPECT(memcmp(hc, hg + 9 * c, sizeof hc) == 0);
        expect_same_score(g[c], gm_verify_strict_h_cpu(&r->map, q, hg + 9 * c), what, c);
        if (g[c].hits == sc.hits && g[c].bg_hits == sc.bg_hits)
            same_cpu++;
        else
            EXPECT_NEAR(g[c].confidence, sc.confidence, 0.01);
    }
    if (same_cpu != nc)
        printf("%s, model %d: %u of %u strict scores differ from the CPU-refined h's (by < 0.01)\n",
               what, (int)model, nc - same_cpu, nc);
    return worst;
}

/* Region growing (gm_grow_verify_cuda against gm_grow_model_cpu) of nc
 * candidates hs from seeds (x, y, side), truth H: where the CPU's growth
 * ends within 1 px of the truth, the GPU's is within CORNER_TOL of it and
 * the scores compare as check_refine's; where it does not, the GPU's does
 * not either.  A growth that does not converge is 30 and more refinements
 * of a wrong map whose partners change with the rounding of the sums, so
 * the two end apart (0.14 px seen) and only their failing is compared. */
static double check_grow(const ref_t *r, gm_verify_dev *v, const gm_points *q, gm_model model,
                         const double *hs, const double *seeds, const double H[9], uint32_t nc,
                         const char *what, uint32_t *n_converged)
{
    double hg[9 * MAX_CANDS] = {0};
    gm_verify_score g[MAX_CANDS];
    memcpy(hg, hs, 9 * nc * sizeof *hg);
    EXPECT_OK(gm_grow_verify_cuda(&r->dev, v, model, hg, seeds, nc, g, g_stream));
    double worst = 0;
    uint32_t same_cpu = 0, converged = 0;
    for (uint32_t c = 0; c < nc; c++) {
        double hc[9];
        memcpy(hc, hs + 9 * c, sizeof hc);
        gm_grow_model_cpu(&r->map, q, model, seeds + 3 * c, hc);
        gm_verify_score sc = gm_verify_strict_h_cpu(&r->map, q, hc);
        double d = corner_dist(q, hc, hg + 9 * c), ec = corner_dist(q, hc, H),
               eg = corner_dist(q, hg + 9 * c, H);
        if (!(ec < 1.0)) {
            if (!(eg >= 1.0 - CORNER_TOL))
                ck_abort_msg("%s, model %d, growth %u of %u: the CPU's is %.3g px from the "
                             "truth, the GPU's %.3g", what, (int)model, c, nc, ec, eg);
            continue;
        }
        if (!(d <= CORNER_TOL))
            ck_abort_msg("%s, model %d, growth %u of %u (seed %.1f, %.1f, side %.1f): corners "
                         "%.3g px from the CPU's",
                         what, (int)model, c, nc, seeds[3 * c], seeds[3 * c + 1],
                         seeds[3 * c + 2], d);
        converged++;
        worst = fmax(worst, d);
        expect_same_score(g[c], gm_verify_strict_h_cpu(&r->map, q, hg + 9 * c), what, c);
        if (g[c].hits == sc.hits && g[c].bg_hits == sc.bg_hits)
            same_cpu++;
        else
            EXPECT_NEAR(g[c].confidence, sc.confidence, 0.01);
    }
    if (same_cpu != converged)
        printf("%s, model %d: %u of %u strict scores differ from the CPU-grown h's (by < 0.01)\n",
               what, (int)model, converged - same_cpu, converged);
    *n_converged += converged;
    return worst;
}

/* Batches of 1, 3 and MAX_CANDS candidates around H on query q (uploaded
 * here): loose scores (similarity models), refinement with the matcher's
 * iterations and with none. */
static void check_batches(const ref_t *r, gm_verify_dev *v, const gm_points *q, gm_model model,
                          const double H[9], const char *what)
{
    EXPECT_OK(gm_verify_points_upload(v, q, g_stream));
    double qcx, qcy;
    bbox_centre(q, &qcx, &qcy);
    static const uint32_t sizes[] = {1, 3, MAX_CANDS};
    double hs[9 * MAX_CANDS], worst = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        uint32_t nc = sizes[s];
        for (uint32_t c = 0; c < nc; c++)
            candidate((int)c, H, qcx, qcy, r->w, r->h, hs + 9 * c);
        if (model == GM_MODEL_SIMILARITY)
            EXPECT(check_loose(r, v, q, hs, nc, what) >= 1); /* the truth scores */
        int iters = model == GM_MODEL_SIMILARITY ? 6 : 10;
        worst = fmax(worst, check_refine(r, v, q, model, hs, nc, iters, what));
        check_refine(r, v, q, model, hs, nc, 0, what);
    }
    printf("%-28s model %d: %u points, refined corners within %.2g px of the CPU's\n", what,
           (int)model, q->n, worst);
}

/* ---- the tests --------------------------------------------------------------------- */

START_TEST(test_similarity_jpeg)
{
    rng_state = 0x51;
    ref_t r;
    ref_from_jpeg(&r);
    gm_verify_dev v;
    EXPECT_OK(gm_verify_dev_alloc(&v, point_cap(), MAX_CANDS));
    double T[6], H[9];
    make_sim(17, 1.1, 60, 40, T);
    gm_h_from_m(T, H);
    gm_points q = query_pulled(&r, T, 90, 80, 400, 390);
    EXPECT(q.n > point_cap() / 2);
    check_batches(&r, &v, &q, GM_MODEL_SIMILARITY, H, "ref.jpg, pulled back");
    /* the same points refined to the other models (the truth is a similarity) */
    check_batches(&r, &v, &q, GM_MODEL_AFFINE, H, "ref.jpg, pulled back");
    check_batches(&r, &v, &q, GM_MODEL_HOMOGRAPHY, H, "ref.jpg, pulled back");
    free(q.p);
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

START_TEST(test_models_scene)
{
    rng_state = 0x52;
    ref_t r;
    ref_from_scene(&r, 240, 200);
    gm_verify_dev v;
    EXPECT_OK(gm_verify_dev_alloc(&v, point_cap(), MAX_CANDS));
    double T[6];
    make_sim(-12, 0.95, 40, 30, T);
    static const struct {
        gm_model model;
        double H[9];
    } cases[] = {
        {GM_MODEL_SIMILARITY, {0}},
        {GM_MODEL_AFFINE, {1.02, 0.03, 30, -0.01, 0.98, 25, 0, 0, 1}},
        {GM_MODEL_HOMOGRAPHY, {1.0, 0.02, 35, -0.02, 1.0, 30, 6e-5, 4e-5, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double H[9];
        if (cases[c].model == GM_MODEL_SIMILARITY)
            gm_h_from_m(T, H);
        else
            memcpy(H, cases[c].H, sizeof H);
        gm_points q = query_rendered(H, 170, 140);
        EXPECT(q.n > 200);
        check_batches(&r, &v, &q, cases[c].model, H, "scene, rendered");
        free(q.p);
    }
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

/* The views of the growth and spread tests: a 170x140 view of the 240x200
 * scene under each model's transform. */
typedef struct {
    gm_model model;
    double H[9];
} view_case;
static const view_case k_views[] = {
    {GM_MODEL_SIMILARITY, {0.95, -0.2, 40, 0.2, 0.95, 30, 0, 0, 1}},
    {GM_MODEL_AFFINE, {1.02, 0.03, 30, -0.01, 0.98, 25, 0, 0, 1}},
    {GM_MODEL_HOMOGRAPHY, {1.0, 0.02, 35, -0.02, 1.0, 30, 6e-5, 4e-5, 1}},
};
#define N_VIEWS (sizeof k_views / sizeof *k_views)

static void scene_open(ref_t *r, gm_verify_dev *v)
{
    ref_from_scene(r, 240, 200);
    EXPECT_OK(gm_verify_dev_alloc(v, point_cap(), MAX_CANDS));
}

/* Region growing, GPU against CPU: a view with perspective and an affine
 * one, candidates from the truth to wrong ones, seeds inside the points
 * (small and large triangles), at their rim and far outside (steps whose
 * disc holds fewer points than a fit needs). */
START_TEST(test_grow)
{
    rng_state = 0x55;
    ref_t r;
    gm_verify_dev v;
    scene_open(&r, &v);
    const view_case *cases = k_views;
    /* both ways where the device has clusters: one launch (k_grow_fused),
     * then a block a candidate (k_grow_verify, the other devices') */
    const int clusters = v.cluster;
    for (size_t kk = 1; kk < (clusters ? 2 : 1) * N_VIEWS; kk++) {
        const size_t k = kk % N_VIEWS; /* the affine and the homography */
        if (k == 0)
            continue;
        v.cluster = clusters && kk < N_VIEWS;
        gm_points q = query_rendered(cases[k].H, 170, 140);
        EXPECT(q.n > 200);
        EXPECT_OK(gm_verify_points_upload(&v, &q, g_stream));
        double qcx, qcy;
        bbox_centre(&q, &qcx, &qcy);
        static const uint32_t sizes[] = {1, 3, 12};
        double hs[9 * MAX_CANDS], seeds[3 * MAX_CANDS], worst = 0;
        uint32_t converged = 0;
        for (size_t b = 0; b < sizeof sizes / sizeof *sizes; b++) {
            uint32_t nc = sizes[b];
            for (uint32_t c = 0; c < nc; c++) {
                candidate((int)c, cases[k].H, qcx, qcy, r.w, r.h, hs + 9 * c);
                static const double at[4][3] = {{0, 0, 40}, {-40, 25, 12}, {70, -60, 90},
                                                {400, 300, 30}};
                const double *a = at[(c / 4 + b) % 4];
                seeds[3 * c] = qcx + a[0];
                seeds[3 * c + 1] = qcy + a[1];
                seeds[3 * c + 2] = a[2];
            }
            worst = fmax(worst, check_grow(&r, &v, &q, cases[k].model, hs, seeds, cases[k].H, nc,
                                           "grow", &converged));
        }
        printf("%-28s model %d: %u points, %u growths right, within %.2g px of the CPU's (%s)\n",
               "scene, growth", (int)cases[k].model, q.n, converged, worst,
               v.cluster ? "one launch" : "a block a candidate");
        /* something to compare: the truth grows right from every seed (with
         * the sanitizers' few points, GM_TEST_SMALL, from one at least) */
        EXPECT(converged >= (getenv("GM_TEST_SMALL") ? 1u : 3u));
        free(q.p);
    }
    v.cluster = clusters;
    /* nothing to grow on: h kept, scores of nothing */
    gm_points none = {NULL, 0};
    EXPECT_OK(gm_verify_points_upload(&v, &none, g_stream));
    double h[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, h0[9], seed[3] = {10, 10, 20};
    memcpy(h0, h, sizeof h);
    gm_verify_score g;
    EXPECT_OK(gm_grow_verify_cuda(&r.dev, &v, GM_MODEL_HOMOGRAPHY, h, seed, 1, &g, g_stream));
    EXPECT(memcmp(h, h0, sizeof h) == 0);
    EXPECT_EQ(g.total, 0u);
    EXPECT_EQ(gm_grow_verify_cuda(&r.dev, &v, GM_MODEL_SIMILARITY, h, seed, 1, &g, g_stream),
              GM_ERR_INVALID);
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

/* The corner spread test, GPU against CPU: the truth of a rendered view
 * (its corners hardly move: under 0.5 px) and candidates around it (the
 * refits leave them for the truth: they move), each model; the spreads
 * within CORNER_TOL of each other. */
START_TEST(test_spread)
{
    rng_state = 0x56;
    ref_t r;
    gm_verify_dev v;
    scene_open(&r, &v);
    const view_case *cases = k_views;
    const int qw = 170, qh = 140;
    for (size_t k = 0; k < N_VIEWS; k++) {
        gm_points q = query_rendered(cases[k].H, qw, qh);
        EXPECT(q.n > 200);
        EXPECT_OK(gm_verify_points_upload(&v, &q, g_stream));
        double qcx, qcy, worst = 0;
        bbox_centre(&q, &qcx, &qcy);
        for (int c = 0; c < 6; c++) {
            double h[9];
            candidate(c % 2 ? 1 : 4 * c, cases[k].H, qcx, qcy, r.w, r.h, h);
            double sc = gm_corner_spread_cpu(&r.map, &q, cases[k].model, h, qw, qh), sg = -1;
            EXPECT_OK(gm_spread_cuda(&r.dev, &v, cases[k].model, h, qw, qh, &sg, g_stream));
            if (v.cluster) { /* the one launch (both widths) against a launch an
                              * iteration: bit for bit */
                for (int pass = 0; pass < 2; pass++) {
                    double s2 = -1;
                    v.cluster = pass;
                    v.wide = pass;
                    gm_status st =
                        gm_spread_cuda(&r.dev, &v, cases[k].model, h, qw, qh, &s2, g_stream);
                    v.cluster = 1;
                    v.wide = 0;
                    EXPECT_OK(st);
                    EXPECT(memcmp(&s2, &sg, sizeof sg) == 0);
                }
            }
            if (!(fabs(sc - sg) <= CORNER_TOL))
                ck_abort_msg("model %d, candidate %d: spread %.6f on the CPU, %.6f on the GPU",
                             (int)cases[k].model, c, sc, sg);
            if (c == 0)
                EXPECT(sc < 0.5); /* the truth stays */
            worst = fmax(worst, fabs(sc - sg));
        }
        printf("%-28s model %d: %u points, spreads within %.2g px of the CPU's%s\n",
               "scene, spread", (int)cases[k].model, q.n, worst,
               v.cluster ? "; one launch = a launch an iteration, bit for bit"
                         : " (no clusters: a launch an iteration)");
        free(q.p);
    }
    double h[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, sg;
    gm_verify_dev small;
    EXPECT_OK(gm_verify_dev_alloc(&small, 16, 3));
    EXPECT_EQ(gm_spread_cuda(&r.dev, &small, GM_MODEL_AFFINE, h, qw, qh, &sg, g_stream),
              GM_ERR_INVALID); /* the four refits are four candidates */
    EXPECT_EQ(gm_spread_cuda(&r.dev, &v, GM_MODEL_AFFINE, h, 0, qh, &sg, g_stream),
              GM_ERR_INVALID); /* no query */
    gm_verify_dev_free(&small);
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

/* No points and fewer points than a fit needs: scores of nothing, h kept. */
START_TEST(test_few_points)
{
    rng_state = 0x53;
    ref_t r;
    ref_from_scene(&r, 120, 100);
    gm_verify_dev v;
    EXPECT_OK(gm_verify_dev_alloc(&v, 16, 3));
    double hs[27];
    for (int c = 0; c < 3; c++)
        candidate(c, (const double[9]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 60, 50, 120, 100, hs + 9 * c);
    for (uint32_t n = 0; n <= 9; n += 3) {
        gm_points q = stride_cap(&r.all, r.all.n);
        q.n = n; /* the first n reference points, at the identity */
        EXPECT_OK(gm_verify_points_upload(&v, &q, g_stream));
        check_loose(&r, &v, &q, hs, 3, "few points");
        check_refine(&r, &v, &q, GM_MODEL_HOMOGRAPHY, hs, 3, 10, "few points");
        check_refine(&r, &v, &q, GM_MODEL_SIMILARITY, hs, 3, 6, "few points");
        if (n < GM_REFINE_MIN_PAIRS) { /* the CPU leaves h alone: so must the GPU */
            double hg[27];
            gm_verify_score g[3];
            memcpy(hg, hs, sizeof hg);
            EXPECT_OK(gm_refine_verify_cuda(&r.dev, &v, GM_MODEL_AFFINE, hg, 10, 3, g, g_stream));
            EXPECT(memcmp(hg, hs, sizeof hg) == 0);
            EXPECT_EQ(g[0].total, n);
        }
        free(q.p);
    }
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

/* More points than a cluster has chunks (GM_VERIFY_POINTS raised at
 * build time): a block sums several chunks and the partials go through
 * global memory; the one-launch refinement still equals the split one and
 * the CPU's (check_refine).  With the default 2000, a chunk a block and the
 * partials read from the blocks' shared memory. */
START_TEST(test_many_points)
{
    if (g_small)
        return;
    rng_state = 0x5b;
    ref_t r;
    ref_from_jpeg(&r);
    double T[6], H[9];
    make_sim(-12, 0.95, 40, 30, T);
    gm_h_from_m(T, H);
    gm_points win = {xmalloc(r.all.n, sizeof(gm_point)), 0};
    for (uint32_t k = 0; k < r.all.n; k++)
        if (r.all.p[k].x >= 40 && r.all.p[k].x < 470 && r.all.p[k].y >= 40 && r.all.p[k].y < 470)
            win.p[win.n++] = r.all.p[k];
    gm_points qa = pull_back(&win, T), q = stride_cap(&qa, 4000);
    free(qa.p);
    EXPECT(q.n > 2600); /* more than 8 chunks of 256 */
    gm_verify_dev v;
    EXPECT_OK(gm_verify_dev_alloc(&v, q.n, MAX_CANDS));
    EXPECT_OK(gm_verify_points_upload(&v, &q, g_stream));
    double qcx, qcy, hs[9 * 4];
    bbox_centre(&q, &qcx, &qcy);
    for (uint32_t c = 0; c < 4; c++)
        candidate((int)c, H, qcx, qcy, r.w, r.h, hs + 9 * c);
    check_refine(&r, &v, &q, GM_MODEL_SIMILARITY, hs, 4, 6, "many points");
    check_refine(&r, &v, &q, GM_MODEL_HOMOGRAPHY, hs, 4, 10, "many points");
    printf("many points: %u\n", q.n);
    gm_verify_dev_free(&v);
    free(q.p);
    free(win.p);
    ref_free(&r);
}
END_TEST

/* One gm_verify_dev, point sets of different sizes uploaded in turn (and
 * one again), each scored against the CPU. */
START_TEST(test_reuse)
{
    rng_state = 0x54;
    ref_t r;
    ref_from_jpeg(&r);
    gm_verify_dev v;
    EXPECT_OK(gm_verify_dev_alloc(&v, point_cap(), MAX_CANDS));
    double T[3][6], H[3][9];
    make_sim(5, 1.0, 10, 20, T[0]);
    make_sim(-40, 0.8, 200, 60, T[1]);
    make_sim(100, 1.3, 300, 150, T[2]);
    gm_points q[3];
    const float win[3][4] = {{50, 50, 250, 250}, {150, 120, 460, 400}, {200, 200, 330, 330}};
    for (int i = 0; i < 3; i++) {
        gm_h_from_m(T[i], H[i]);
        q[i] = query_pulled(&r, T[i], win[i][0], win[i][1], win[i][2], win[i][3]);
    }
    static const int order[] = {0, 1, 2, 0, 2};
    for (size_t o = 0; o < sizeof order / sizeof *order; o++) {
        int i = order[o];
        EXPECT_OK(gm_verify_points_upload(&v, &q[i], g_stream));
        EXPECT_EQ(v.n, q[i].n);
        double qcx, qcy, hs[9 * 8];
        bbox_centre(&q[i], &qcx, &qcy);
        for (int c = 0; c < 8; c++)
            candidate(c, H[i], qcx, qcy, r.w, r.h, hs + 9 * c);
        EXPECT(check_loose(&r, &v, &q[i], hs, 8, "reuse") >= 1);
        check_refine(&r, &v, &q[i], GM_MODEL_SIMILARITY, hs, 3, 6, "reuse");
    }
    for (int i = 0; i < 3; i++)
        free(q[i].p);
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

/* ---- the map's pixels made on the device ------------------------------------------- */

/* d's mask and nearest equal host's (filled by gm_edge_map_fill_cpu). */
static void expect_same_pixels(const gm_edge_map *host, const gm_edge_map_dev *d)
{
    const size_t px = (size_t)host->w * host->h;
    EXPECT_EQ(d->w, host->w);
    EXPECT_EQ(d->h, host->h);
    uint16_t *mask = xmalloc(px, sizeof *mask);
    int32_t *nearest = xmalloc(px, sizeof *nearest);
    EXPECT(cudaMemcpy(mask, d->d_mask, px * sizeof *mask, cudaMemcpyDeviceToHost) == cudaSuccess);
    EXPECT(cudaMemcpy(nearest, d->d_nearest, px * sizeof *nearest, cudaMemcpyDeviceToHost) ==
           cudaSuccess);
    size_t bad_mask = 0, bad_nearest = 0, edges = 0;
    for (size_t i = 0; i < px; i++) {
        bad_mask += mask[i] != host->mask[i];
        bad_nearest += nearest[i] != host->nearest[i];
        edges += host->nearest[i] >= 0;
    }
    EXPECT_EQ(bad_mask, 0);
    EXPECT_EQ(bad_nearest, 0);
    EXPECT(edges > 0 || host->pts.n == 0 || px < 4);
    free(mask);
    free(nearest);
}

/* The pixels of a map without them (gm_edge_map_points) made on the device
 * equal gm_edge_map_fill_cpu's: on a photograph's edges, and on points
 * made to test the rules (several points a pixel, halves that round to
 * even, points on and past the borders, every direction bin, radii 0 to 3,
 * maps of one row and one pixel, no points). */
START_TEST(test_map_pixels)
{
    ref_t r;
    ref_from_jpeg(&r);
    gm_edge_map bare;
    EXPECT_OK(gm_edge_map_points(&r.all, r.w, r.h, MAP_RADIUS, &bare));
    EXPECT(bare.mask == NULL && bare.nearest == NULL);
    gm_edge_map_dev d;
    EXPECT_OK(gm_edge_map_upload(&bare, &d, g_stream));
    expect_same_pixels(&r.map, &d);
    gm_edge_map_dev_free(&d);
    gm_edge_map_free(&bare);
    ref_free(&r);

    const int sizes[][2] = {{37, 23}, {64, 1}, {1, 1}, {5, 9}};
    uint64_t s = 12345;
    for (int si = 0; si < 4; si++) {
        const int w = sizes[si][0], h = sizes[si][1];
        for (int radius = 0; radius <= 3; radius++) {
            for (uint32_t n = 0; n <= 400; n += 200) {
                gm_points pts = {xmalloc(n ? n : 1, sizeof(gm_point)), n};
                for (uint32_t k = 0; k < n; k++) {
                    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                    /* x, y in [-2, w + 2) in halves and thirds: exact halves round to even */
                    float fx = (float)((s >> 33) % (uint64_t)(6 * (w + 4))) / 6.0f - 2.0f;
                    float fy = (float)((s >> 13) % (uint64_t)(6 * (h + 4))) / 6.0f - 2.0f;
                    float a = (float)((s >> 45) % 4096) / 4096.0f * 2.0f * (float)GM_PI - (float)GM_PI;
                    pts.p[k] = (gm_point){fx, fy, a, 1.0f};
                }
                gm_edge_map host, bare2;
                EXPECT_OK(gm_edge_map_build_cpu(&pts, w, h, radius, &host));
                EXPECT_OK(gm_edge_map_points(&pts, w, h, radius, &bare2));
                EXPECT_OK(gm_edge_map_upload(&bare2, &d, g_stream));
                expect_same_pixels(&host, &d);
                gm_edge_map_dev_free(&d);
                gm_edge_map_free(&bare2);
                gm_edge_map_free(&host);
                free(pts.p);
            }
        }
    }
}
END_TEST

/* ---- a pairing's decisions on the device (pair.cu) --------------------------------- */

/* nc candidates over nb query bases of q (pairs of its points) and as many
 * reference bases: basis i of the reference is query basis i carried by T
 * for i < ntrue (those candidates are true), the rest anywhere on the
 * reference; the device's decisions (gm_pair_queue_cuda, collect) against
 * the host's (pair_core.h, gm_verify_cpu, gm_refine_model_cpu): the same
 * candidates, scores (the looked-at marked), m0 and picks, the refined
 * transforms within CORNER_TOL, their strict scores the GPU h's. */
static int check_pair(const ref_t *r, gm_verify_dev *v, const gm_points *q, const double T[6],
                       gm_pair_in in, uint32_t nc, uint32_t ntrue, const char *what)
{
    enum { NB = 40 };
    gm_vote_basis qb[NB];
    float rends[NB][4];
    memset(qb, 0, sizeof qb);
    for (int i = 0; i < NB; i++) {
        qb[i].a = q->p[rng_next() % q->n];
        qb[i].b = q->p[rng_next() % q->n];
        double ax, ay, bx, by;
        gm_transform_apply(T, qb[i].a.x, qb[i].a.y, &ax, &ay);
        gm_transform_apply(T, qb[i].b.x, qb[i].b.y, &bx, &by);
        if ((uint32_t)i >= ntrue) {
            ax = rng_unit() * r->w, ay = rng_unit() * r->h;
            bx = rng_unit() * r->w, by = rng_unit() * r->h;
        }
        rends[i][0] = (float)ax, rends[i][1] = (float)ay;
        rends[i][2] = (float)bx, rends[i][3] = (float)by;
    }
    gm_candidate cands[MAX_CANDS];
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t b = c < ntrue ? c : rng_next() % NB;
        cands[c] = (gm_candidate){b, c < ntrue ? c : rng_next() % NB, 100 - c, 1.0f};
    }
    gm_candidate *d_cands;
    gm_vote_basis *d_qb;
    float4 *d_rends;
    CK_CUDA(cudaMalloc((void **)&d_cands, sizeof cands));
    CK_CUDA(cudaMalloc((void **)&d_qb, sizeof qb));
    CK_CUDA(cudaMalloc((void **)&d_rends, sizeof rends));
    CK_CUDA(cudaMemcpy(d_cands, cands, sizeof cands, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d_qb, qb, sizeof qb, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d_rends, rends, sizeof rends, cudaMemcpyHostToDevice));
    EXPECT_OK(gm_verify_points_upload(v, q, g_stream));
    gm_pair_out *g = xmalloc(1, sizeof *g), *h = xmalloc(1, sizeof *h);
    EXPECT_OK(gm_pair_queue_cuda(&r->dev, v, d_cands, nc, d_qb, d_rends, &in, g_stream));
    EXPECT_OK(gm_pair_collect_cuda(v, nc, g, g_stream));
    EXPECT(g->nc == nc);
    EXPECT(!g->doubtful);
    EXPECT(memcmp(g->cands, cands, nc * sizeof *cands) == 0);
    /* the host's way */
    double ms[MAX_CANDS][6], done[GM_PAIR_DONE_MAX][6];
    int ndone = in.ndone;
    memcpy(done, in.done, (size_t)in.ndone * sizeof done[0]);
    for (uint32_t c = 0; c < nc; c++) {
        const gm_vote_basis *b = &qb[cands[c].query_basis];
        const float *e = rends[cands[c].ref_basis];
        gm_pair_similarity(b->a.x, b->a.y, b->b.x, b->b.y, e[0], e[1], e[2], e[3], in.s, ms[c],
                           h->m0[c]);
        h->sc[c] = gm_verify_cpu(&r->map, q, ms[c]);
    }
    h->npick = gm_pair_pick(h->sc, h->m0, nc, in.w, in.h, in.floor, done, &ndone, in.max_done,
                            h->pick);
    EXPECT(memcmp(g->m0, h->m0, nc * sizeof h->m0[0]) == 0);
    for (uint32_t c = 0; c < nc; c++)
        expect_same_score(g->sc[c], h->sc[c], what, c);
    ck_assert_int_eq(g->npick, h->npick);
    for (int i = 0; i < h->npick; i++) {
        ck_assert_int_eq(g->pick[i], h->pick[i]);
        double hc[9];
        gm_h_from_m(ms[h->pick[i]], hc);
        gm_refine_model_cpu(&r->map, q, GM_MODEL_SIMILARITY, hc, in.iters);
        double d = corner_dist(q, hc, g->hr[i]);
        if (!(d <= CORNER_TOL))
            ck_abort_msg("%s, pick %d: corners %.3g px from the CPU's", what, i, d);
        expect_same_score(g->vr[i], gm_verify_strict_h_cpu(&r->map, q, g->hr[i]), what,
                          (uint32_t)i);
    }
    printf("%-28s %u candidates, %d picked, %d remembered before\n", what, nc, h->npick,
           in.ndone);
    int np = h->npick;
    free(g);
    free(h);
    cudaFree(d_cands);
    cudaFree(d_qb);
    cudaFree(d_rends);
    return np;
}

START_TEST(test_pair)
{
    rng_state = 0x9a1;
    ref_t r;
    ref_from_jpeg(&r);
    gm_verify_dev v;
    EXPECT_OK(gm_verify_dev_alloc(&v, point_cap(), MAX_CANDS));
    double T[6];
    make_sim(17, 1.1, 60, 40, T);
    gm_points q = query_pulled(&r, T, 90, 80, 400, 390);
    gm_pair_in in = {{1, 1, 1, 1, 1}, 280, 280, 0.1, 6, NULL, 0, GM_PAIR_DONE_MAX};
    /* the true ones repeat each other: one of them picked */
    ck_assert_int_ge(check_pair(&r, &v, &q, T, in, MAX_CANDS, 6, "ref.jpg, nothing before"), 1);
    ck_assert_int_eq(check_pair(&r, &v, &q, T, in, 1, 1, "ref.jpg, one candidate"), 1);
    /* the truth refined before: its repeats are passed over; a full list
     * takes no more */
    double m0[6];
    gm_pair_scales s1 = {1, 1, 1, 1, 1};
    double ms[6];
    gm_pair_similarity(0, 0, 100, 0, (float)T[2], (float)T[5], (float)(T[0] * 100 + T[2]),
                       (float)(T[3] * 100 + T[5]), s1, ms, m0);
    double done[2][6];
    memcpy(done[0], m0, sizeof m0);
    memcpy(done[1], m0, sizeof m0);
    done[1][2] += 50;
    in.done = &done[0][0], in.ndone = 2, in.max_done = 3;
    check_pair(&r, &v, &q, T, in, MAX_CANDS, 6, "ref.jpg, the truth before");
    in.floor = 0.0; /* every candidate goes: the wrong ones picked, the list's last room taken */
    ck_assert_int_eq(check_pair(&r, &v, &q, T, in, MAX_CANDS, 6, "ref.jpg, no floor"),
                     GM_PAIR_PICKS);
    /* other levels: a query level of 2, a reference level of 4 verified on 2 */
    gm_pair_in in2 = {{2, 4, 1, 2, 2}, 280, 280, 0.0, 6, NULL, 0, GM_PAIR_DONE_MAX};
    double T2[6];
    make_sim(-30, 0.9, 120, 60, T2);
    gm_points q2 = query_pulled(&r, T2, 60, 60, 420, 420);
    ck_assert_int_eq(check_pair(&r, &v, &q2, T2, in2, MAX_CANDS, 3, "ref.jpg, other scales"),
                     GM_PAIR_PICKS);
    free(q.p);
    free(q2.p);
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

/* ---- a chain of refinements (chain.cu) ------------------------------------------ */

/* gm_chain_host's refinement: gm_refine_verify_cuda on the map a step's
 * level points to, a call a step and a round. */
static gm_verify_dev *g_chain_v;
static gm_status steps_refine(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                              double *h, int iters, uint32_t n, gm_verify_score *scores)
{
    (void)lane, (void)q;
    return gm_refine_verify_cuda((const gm_edge_map_dev *)map.level, g_chain_v, model, h, iters, n,
                                 scores, g_stream);
}
static const gm_backend_ops k_steps = {.name = "steps", .refine = steps_refine};

/* The matcher's rivals' chain (the ladder, with the similarities' flags;
 * the rounds on the working level a; the fine level b, twice a's
 * resolution) of nc transforms hs to model, on the device in one go
 * against gm_chain_host's calls a step, into h and sc. */
static void check_chain(const ref_t *a, const ref_t *b, gm_verify_dev *v, const gm_points *q,
                        gm_model model, const double *hs, const uint8_t *from_sim, uint32_t nc,
                        double *h, gm_verify_score *sc, const char *what)
{
    gm_chain_step st[GM_CHAIN_STEPS];
    gm_chain_dev_step ds[GM_CHAIN_STEPS];
    int ns = 0;
    for (int m = GM_MODEL_SIMILARITY; m <= (int)model; m++, ns++)
        st[ns] = (gm_chain_step){{&a->map, &a->dev}, (gm_model)m, 6, 0, 1, 2, 2,
                                 m == (int)model ? NULL : from_sim};
    st[ns++] = (gm_chain_step){{&a->map, &a->dev}, model, 6, GM_CHAIN_ROUNDS_TEST, 1, 2, 2, NULL};
    st[ns++] = (gm_chain_step){{&b->map, &b->dev}, model, 6, 0, 1, 2, 1, NULL};
    for (int k = 0; k < ns; k++)
        ds[k] = (gm_chain_dev_step){st[k].map.level, st[k].model, st[k].iters, st[k].rounds,
                                    st[k].fq, st[k].from, st[k].to, st[k].take};
    double hh[9 * GM_CHAIN_MAX];
    gm_verify_score sh[GM_CHAIN_MAX];
    memcpy(hh, hs, 9 * nc * sizeof *hh);
    memset(sh, 0, sizeof sh);
    g_chain_v = v;
    EXPECT_OK(gm_chain_host(&k_steps, NULL, q, st, ns, hh, sh, nc));
    const int cl = v->cluster, wide = v->wide;
    for (int pass = 0; pass < (cl ? 3 : 1); pass++) {
        /* the one-launch refinements at both widths, and a launch an iteration */
        v->cluster = pass < 2 ? cl : 0;
        v->wide = pass == 1 ? !wide : wide;
        double hg[9 * GM_CHAIN_MAX];
        gm_verify_score sg[GM_CHAIN_MAX];
        memcpy(hg, hs, 9 * nc * sizeof *hg);
        memset(sg, 0, sizeof sg);
        gm_status r = gm_chain_cuda(v, ds, ns, hg, sg, nc, g_stream);
        v->cluster = cl, v->wide = wide;
        EXPECT_OK(r);
        for (uint32_t c = 0; c < nc; c++) {
            if (memcmp(hg + 9 * c, hh + 9 * c, 9 * sizeof *hg) != 0)
                ck_abort_msg("%s, model %d, transform %u, pass %d: the chain's h differs from "
                             "the steps'", what, (int)model, c, pass);
            expect_same_score(sh[c], sg[c], what, c);
        }
    }
    memcpy(h, hh, 9 * nc * sizeof *h);
    memcpy(sc, sh, nc * sizeof *sc);
}

/* The rivals' chain on the device equals the host's steps bit for bit
 * (each refinement the same kernels from the same numbers: the level's
 * rescale on the device with --fmad=false, the rounds' test there); the
 * truth ends on the fine level where it should. */
START_TEST(test_chain)
{
    rng_state = 0x5c;
    ref_t a, b;
    gm_verify_dev v;
    scene_open(&a, &v);
    { /* level b: pixel x shows the scene at (x - 0.5) / 2 (a's working pixels at f = 2) */
        static const double HALF[6] = {0.5, 0, -0.25, 0, 0.5, -0.25};
        uint8_t *im = render(480, 400, HALF);
        ref_make(&b, im, 480, 400);
        free(im);
    }
    const int qw = 170, qh = 140;
    for (size_t k = 0; k < N_VIEWS; k++) {
        gm_points q = query_rendered(k_views[k].H, qw, qh);
        EXPECT(q.n > 200);
        EXPECT_OK(gm_verify_points_upload(&v, &q, g_stream));
        double qcx, qcy, hs[9 * 8], h[9 * 8];
        uint8_t from_sim[8];
        gm_verify_score sc[8];
        bbox_centre(&q, &qcx, &qcy);
        const uint32_t nc = 8;
        for (uint32_t c = 0; c < nc; c++) {
            candidate((int)c, k_views[k].H, qcx, qcy, a.w, a.h, hs + 9 * c);
            from_sim[c] = (uint8_t)(c % 2);
        }
        check_chain(&a, &b, &v, &q, k_views[k].model, hs, from_sim, nc, h, sc, "scene, chain");
        /* the truth carried to b: x = 2 X + 0.5 */
        double t[9];
        memcpy(t, k_views[k].H, sizeof t);
        gm_h_rescale(t, 1, 2, 1);
        double d = corner_dist(&q, t, h);
        if (!(d < 0.5))
            ck_abort_msg("model %d: the truth's chain ends %.3g px from it on the fine level",
                         (int)k_views[k].model, d);
        EXPECT(sc[0].confidence > 0.5);
        printf("%-28s model %d: %u transforms, %d steps' worth bit for bit; truth %.3f px\n",
               "scene, chain", (int)k_views[k].model, nc, (int)k_views[k].model + 3, d);
        free(q.p);
    }
    /* what a chain cannot hold */
    double h[9 * (GM_CHAIN_MAX + 1)] = {0};
    gm_verify_score s[GM_CHAIN_MAX + 1];
    gm_chain_dev_step one = {&a.dev, GM_MODEL_SIMILARITY, 6, 0, 1, 2, 2, NULL};
    /* no step: the transforms and scores come back as they went */
    for (int i = 0; i < 18; i++)
        h[i] = i + 0.5;
    memset(s, 0x5a, 2 * sizeof *s);
    gm_verify_score s0[2];
    memcpy(s0, s, sizeof s0);
    EXPECT_OK(gm_chain_cuda(&v, &one, 0, h, s, 2, g_stream));
    for (int i = 0; i < 18; i++)
        EXPECT(h[i] == i + 0.5);
    EXPECT(memcmp(s, s0, sizeof s0) == 0);
    EXPECT_EQ(gm_chain_cuda(&v, &one, 1, h, s, 17, g_stream), GM_ERR_INVALID); /* 2 n > 32 */
    EXPECT_EQ(gm_chain_cuda(&v, &one, GM_CHAIN_STEPS + 1, h, s, 1, g_stream), GM_ERR_INVALID);
    one.map = NULL;
    EXPECT_EQ(gm_chain_cuda(&v, &one, 1, h, s, 1, g_stream), GM_ERR_INVALID);
    EXPECT_EQ(gm_chain_host(&k_steps, NULL, NULL, NULL, 0, h, s, GM_CHAIN_MAX + 1),
              GM_ERR_INVALID);
    gm_verify_dev_free(&v);
    ref_free(&a);
    ref_free(&b);
}
END_TEST

START_TEST(test_invalid)
{
    gm_verify_dev v;
    EXPECT_EQ(gm_verify_dev_alloc(&v, 10, 0), GM_ERR_INVALID);
    gm_verify_dev_free(&v); /* zeroed: safe */
    EXPECT_OK(gm_verify_dev_alloc(&v, 10, 2));
    gm_point p[11];
    memset(p, 0, sizeof p);
    gm_points q = {p, 11};
    EXPECT_EQ(gm_verify_points_upload(&v, &q, g_stream), GM_ERR_INVALID);
    gm_edge_map_dev d;
    gm_edge_map empty;
    memset(&empty, 0, sizeof empty);
    EXPECT_EQ(gm_edge_map_upload(&empty, &d, g_stream), GM_ERR_INVALID);
    double h[27] = {0};
    gm_verify_score s[3];
    EXPECT_EQ(gm_verify_batch_cuda(&d, &v, h, 3, s, g_stream), GM_ERR_INVALID);
    EXPECT_EQ(gm_refine_verify_cuda(&d, &v, GM_MODEL_SIMILARITY, h, 1, 3, s, g_stream),
              GM_ERR_INVALID);
    EXPECT_EQ(gm_refine_verify_cuda(&d, &v, GM_MODEL_SIMILARITY, h, -1, 1, s, g_stream),
              GM_ERR_INVALID);
    EXPECT_EQ(gm_refine_verify_cuda(&d, &v, (gm_model)7, h, 1, 1, s, g_stream), GM_ERR_INVALID);
    EXPECT_OK(gm_verify_batch_cuda(&d, &v, h, 0, s, g_stream)); /* nothing to do */
    gm_edge_map_dev_free(&d);
    gm_verify_dev_free(&v);
}
END_TEST

/* ---- timing (GM_VERIFY_BENCH=1) ---------------------------------------------------- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

START_TEST(test_bench)
{
    const char *b = getenv("GM_VERIFY_BENCH");
    if (!b || strcmp(b, "0") == 0 || g_small) /* not under the sanitizers */
        return;
    rng_state = 0x55;
    ref_t r;
    ref_from_jpeg(&r);
    gm_verify_dev v;
    EXPECT_OK(gm_verify_dev_alloc(&v, 2000, MAX_CANDS));
    double T[6], H[9];
    make_sim(17, 1.1, 60, 40, T);
    gm_h_from_m(T, H);
    gm_points win = {xmalloc(r.all.n, sizeof(gm_point)), 0};
    for (uint32_t k = 0; k < r.all.n; k++)
        if (r.all.p[k].x >= 60 && r.all.p[k].y >= 60 && r.all.p[k].x < 420 && r.all.p[k].y < 420)
            win.p[win.n++] = r.all.p[k];
    gm_points full = pull_back(&win, T), q = stride_cap(&full, 2000);
    double qcx, qcy, hs[9 * MAX_CANDS], m[6 * MAX_CANDS];
    bbox_centre(&q, &qcx, &qcy);
    for (int c = 0; c < MAX_CANDS; c++) {
        candidate(c, H, qcx, qcy, r.w, r.h, hs + 9 * c);
        memcpy(m + 6 * c, hs + 9 * c, 6 * sizeof *m);
    }
    EXPECT_OK(gm_verify_points_upload(&v, &q, g_stream));
    gm_verify_score s[MAX_CANDS];
    const int reps = 200;
    for (int i = 0; i < 5; i++) /* warm-up */
        EXPECT_OK(gm_verify_batch_cuda(&r.dev, &v, m, MAX_CANDS, s, g_stream));
    double t0 = now_ms();
    for (int i = 0; i < reps; i++)
        EXPECT_OK(gm_verify_batch_cuda(&r.dev, &v, m, MAX_CANDS, s, g_stream));
    double gl = (now_ms() - t0) / reps;
    t0 = now_ms();
    for (int i = 0; i < reps; i++)
        for (int c = 0; c < MAX_CANDS; c++)
            s[c] = gm_verify_cpu(&r.map, &q, m + 6 * c);
    double cl = (now_ms() - t0) / reps;
    double h3[27];
    for (int i = 0; i < 5; i++) {
        memcpy(h3, hs, sizeof h3);
        EXPECT_OK(gm_refine_verify_cuda(&r.dev, &v, GM_MODEL_SIMILARITY, h3, 6, 3, s, g_stream));
    }
    t0 = now_ms();
    for (int i = 0; i < reps; i++) {
        memcpy(h3, hs, sizeof h3);
        EXPECT_OK(gm_refine_verify_cuda(&r.dev, &v, GM_MODEL_SIMILARITY, h3, 6, 3, s, g_stream));
    }
    double gr = (now_ms() - t0) / reps;
    t0 = now_ms();
    for (int i = 0; i < reps; i++) {
        memcpy(h3, hs, sizeof h3);
        for (int c = 0; c < 3; c++) {
            gm_refine_model_cpu(&r.map, &q, GM_MODEL_SIMILARITY, h3 + 9 * c, 6);
            s[c] = gm_verify_strict_h_cpu(&r.map, &q, h3 + 9 * c);
        }
    }
    double cr = (now_ms() - t0) / reps;
    t0 = now_ms();
    for (int i = 0; i < reps; i++) {
        memcpy(h3, hs, sizeof h3);
        EXPECT_OK(gm_refine_verify_cuda(&r.dev, &v, GM_MODEL_HOMOGRAPHY, h3, 10, 3, s, g_stream));
    }
    double gh = (now_ms() - t0) / reps;
    printf("bench, %u points: verify 32 candidates GPU %.3f ms (CPU %.3f ms); refine 3 x 6 "
           "iterations + strict GPU %.3f ms (CPU %.3f ms); homography 3 x 10 GPU %.3f ms; "
           "each GPU call end to end, synchronized\n",
           q.n, gl, cl, gr, cr, gh);
    free(win.p);
    free(full.p);
    free(q.p);
    gm_verify_dev_free(&v);
    ref_free(&r);
}
END_TEST

static void setup(void) { CK_CUDA(cudaStreamCreate(&g_stream)); }
static void teardown(void) { cudaStreamDestroy(g_stream); }

static Suite *verify_cuda_suite(void)
{
    const char *small = getenv("GM_TEST_SMALL");
    g_small = small && strcmp(small, "0") != 0;
    Suite *s = suite_create("verify_cuda");
    TCase *tc = tcase_create("cuda_vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_similarity_jpeg);
    tcase_add_test(tc, test_models_scene);
    tcase_add_test(tc, test_few_points);
    tcase_add_test(tc, test_many_points);
    tcase_add_test(tc, test_grow);
    tcase_add_test(tc, test_spread);
    tcase_add_test(tc, test_reuse);
    tcase_add_test(tc, test_map_pixels);
    tcase_add_test(tc, test_pair);
    tcase_add_test(tc, test_chain);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_bench);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(verify_cuda_suite); }
