/* test_polish.c: the coarse-to-fine polish of an answer found on a fine
 * level (gm_polish_answer, src/pipeline/matcher.c).
 *
 * data/large's reference (1440 x 960: level 0 at factor 2, one fine level
 * at the source pixels) and a crop of it with its known similarity.  The
 * answer is handed over a few pixels off at the query's far corners, as a
 * fine level's two-corner guess comes: the polish must bring it within a
 * pixel of the truth, verify at least as well as the start refined on the
 * fine level alone, and never move an answer further than GM_POLISH_MOVE
 * level-0 pixels (a start far off stays where it was).  An answer on a
 * working level is left alone. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gmatch.h"
#include "common/common.h"
#include "pipeline/matcher.h"
#include "test_util.h"

/* data/large/manifest.jsonl, q_crop0.jpg: query source -> reference source */
static const double k_truth[9] = {0.9063077870366499, -0.42261826174069944, 207.32050012156495,
                                  0.42261826174069944, 0.9063077870366499, 133.4134569925672,
                                  0, 0, 1};

typedef struct {
    gm_image ref_img, q_img;
    gm_ref *r;
    side q0;
    gm_point *buf;
    gm_points vq0;
    const ref_level *fine;
    void *lane;
} fixture;

static void setup_query(fixture *fx, const char *query)
{
    memset(fx, 0, sizeof *fx);
    fx->ref_img = load_data("data/large/ref_mosaic.jpg");
    fx->q_img = load_data(query);
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CPU;
    ck_assert_int_eq(gm_ref_prepare(&p, gm_image_view(&fx->ref_img), &fx->r), GM_OK);
    fx->fine = &fx->r->ix.lv[GM_LEVELS];
    ck_assert_msg(fx->fine->ok && fx->fine->f == 1 && fx->r->ix.lv[0].f == 2,
                  "data/large: level 0 at factor 2 and a fine level at 1 expected");
    fx->lane = fx->r->ix.be->acquire(fx->r->ix.dev);
    char err[128];
    ck_assert_int_eq(gm_side_build(fx->r->ix.be, fx->lane, &fx->r->ix.p, gm_image_view(&fx->q_img), 1,
                                   (uint32_t)p.query_points, (uint32_t)p.basis_points / 2,
                                   &fx->q0, err, sizeof err),
                     GM_OK);
    ck_assert_int_eq(fx->q0.f, 1);
    /* every k-th edge point, at most GM_VERIFY_POINTS, as the matcher samples them */
    fx->buf = xmalloc(GM_VERIFY_POINTS, sizeof *fx->buf);
    fx->vq0 = gm_stride_sample(&fx->q0.all, GM_VERIFY_POINTS, fx->buf);
}

static void setup(fixture *fx)
{
    setup_query(fx, "data/large/q_crop0.jpg");
}

static void teardown(fixture *fx)
{
    fx->r->ix.be->release(fx->r->ix.dev, fx->lane);
    free(fx->buf);
    gm_side_free(&fx->q0);
    gm_ref_free(fx->r);
    gm_image_free(&fx->q_img);
    gm_image_free(&fx->ref_img);
}

/* h (and its score s) polished as an answer found on the fine level */
static void polish_fine(fixture *fx, gm_model model, double h[9], gm_verify_score *s)
{
    ck_assert_int_eq(gm_polish_answer(&fx->r->ix, fx->lane, &fx->q0, &fx->vq0, fx->fine, model, h, s),
                     GM_OK);
}

/* The truth turned by deg about the query's centre and shifted by (dx, dy)
 * query pixels: at factor 1 on both sides, working = source pixels. */
static void off_truth(const fixture *fx, double deg, double dx, double dy, double h[9])
{
    double c = cos(deg * GM_PI / 180), s = sin(deg * GM_PI / 180);
    double cx = (fx->q0.w - 1) / 2.0, cy = (fx->q0.h - 1) / 2.0;
    const double rot[9] = {c, -s, cx - c * cx + s * cy + dx, s, c, cy - s * cx - c * cy + dy,
                           0, 0, 1};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            h[3 * i + j] = k_truth[3 * i] * rot[j] + k_truth[3 * i + 1] * rot[3 + j] +
                           k_truth[3 * i + 2] * rot[6 + j];
}

/* A few pixels off at the far corners (handed over as it starts, so that
 * only the polish can bring it in): polished within a pixel through level 0
 * and back, its score the polished model's own and better than the
 * start's.  (On this clean mosaic a refinement on the fine level alone
 * also reaches the truth from there; the photographs where it does not are
 * in docs/photo.md.) */
START_TEST(test_polish_reaches_truth)
{
    fixture fx;
    setup(&fx);
    static const double starts[][3] = {{1.0, 2.0, -1.5}, {-0.8, -2.5, 2.0}, {0.6, 3.0, 2.5}};
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        double h[9];
        off_truth(&fx, starts[i][0], starts[i][1], starts[i][2], h);
        double gap0 = h_corner_gap(h, k_truth, fx.q0.w, fx.q0.h);
        ck_assert_msg(gap0 > 3.0 && gap0 < GM_POLISH_MOVE * fx.r->ix.lv[0].f,
                      "start %zu %.2f px off", i, gap0);
        gm_verify_score s0 = gm_verify_strict_h_cpu(&fx.fine->map, &fx.vq0, h), s = s0;
        polish_fine(&fx, GM_MODEL_SIMILARITY, h, &s);
        double gap = h_corner_gap(h, k_truth, fx.q0.w, fx.q0.h);
        ck_assert_msg(gap < 1.0, "start %zu: polished %.2f px off (start %.2f)", i, gap, gap0);
        ck_assert_msg(s.confidence > s0.confidence + 0.1, "start %zu: polished %.3f, start %.3f",
                      i, s.confidence, s0.confidence);
        gm_verify_score again = gm_verify_strict_h_cpu(&fx.fine->map, &fx.vq0, h);
        ck_assert_uint_eq(again.hits, s.hits);
    }
    teardown(&fx);
}
END_TEST

/* Far off (40 px, 8 degrees) or collapsed (a tenth of the scale): whatever
 * the refinements find, the answer never moves by more than
 * GM_POLISH_MOVE level-0 pixels; the score changes only with it. */
START_TEST(test_polish_bounded)
{
    fixture fx;
    setup(&fx);
    double far[9], tiny[9];
    off_truth(&fx, 8.0, 40.0, -30.0, far);
    memcpy(tiny, k_truth, sizeof tiny);
    for (int k = 0; k < 2; k++) {
        tiny[3 * k] *= 0.1;
        tiny[3 * k + 1] *= 0.1;
    }
    const double *starts[2] = {far, tiny};
    double bound = GM_POLISH_MOVE * fx.r->ix.lv[0].f / fx.fine->f;
    for (int i = 0; i < 2; i++) {
        double h[9];
        memcpy(h, starts[i], sizeof h);
        gm_verify_score s0 = gm_verify_strict_h_cpu(&fx.fine->map, &fx.vq0, h), s = s0;
        polish_fine(&fx, GM_MODEL_SIMILARITY, h, &s);
        double moved = h_corner_gap(h, starts[i], fx.q0.w, fx.q0.h);
        ck_assert_msg(moved <= bound + 1e-9, "start %d moved %.2f px (bound %.1f)", i, moved,
                      bound);
        if (moved == 0)
            ck_assert_uint_eq(s.hits, s0.hits);
    }
    teardown(&fx);
}
END_TEST

/* data/large/manifest.jsonl, q_tilt0.jpg: a tilted view, query source ->
 * reference source (at factor 1 on both sides: the fine level's pixels) */
static const double k_tilt[9] = {1.3452914798206284, 0.44877677164672697, 55.42600896860985,
                                 0, 1.568987308897623, 80.0,
                                 0, 0.0016621361912841743, 1.0};

/* k_tilt after a perspective change about the query's centre c:
 * p -> c + (p - c) / (1 + g (x - cx) + k (y - cy)), the far corners carried
 * off as a growth that stopped short leaves them */
static void off_tilt(const fixture *fx, double g, double k, double h[9])
{
    double cx = (fx->q0.w - 1) / 2.0, cy = (fx->q0.h - 1) / 2.0;
    const double t[9] = {1, 0, cx, 0, 1, cy, 0, 0, 1}, ti[9] = {1, 0, -cx, 0, 1, -cy, 0, 0, 1};
    const double p[9] = {1, 0, 0, 0, 1, 0, g, k, 1};
    double a[9], b[9];
    h_mul(p, ti, a);
    h_mul(t, a, b);
    h_mul(k_tilt, b, h);
}

/* A homography grown from triangles, its far corners further off than a
 * similarity's bound (GM_POLISH_MOVE level-0 pixels) and within
 * GM_POLISH_GROWN_SHARE of the diagonal: polished to within a pixel under
 * the homography, left where it was under a similarity's bound; a
 * homography shrunk by a fifth (a collapse under way) moves no further than
 * the similarity's bound. */
START_TEST(test_polish_grown_homography)
{
    fixture fx;
    setup_query(&fx, "data/large/q_tilt0.jpg");
    ck_assert_int_eq(fx.q0.f, 1);
    double small = GM_POLISH_MOVE * fx.r->ix.lv[0].f / fx.fine->f;
    static const double starts[][2] = {{2.5e-4, -2.0e-4}, {-1.5e-4, 1.5e-4}, {0.8e-4, 0.8e-4}, {1.2e-4, -0.6e-4}};
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        double h[9];
        off_tilt(&fx, starts[i][0], starts[i][1], h);
        double gap0 = h_corner_gap(h, k_tilt, fx.q0.w, fx.q0.h);
        ck_assert_msg(gap0 > small + 1, "start %zu only %.2f px off", i, gap0);
        gm_verify_score s0 = gm_verify_strict_h_cpu(&fx.fine->map, &fx.vq0, h), s = s0;
        polish_fine(&fx, GM_MODEL_HOMOGRAPHY, h, &s);
        double gap = h_corner_gap(h, k_tilt, fx.q0.w, fx.q0.h);
        ck_assert_msg(gap < 1.0, "start %zu: polished %.2f px off (start %.2f)", i, gap, gap0);
        ck_assert_msg(s.confidence > s0.confidence, "start %zu: polished %.3f, start %.3f", i,
                      s.confidence, s0.confidence);
    }
    double shrunk[9];
    memcpy(shrunk, k_tilt, sizeof shrunk);
    for (int j = 0; j < 2; j++) /* the query's coordinates scaled by 0.8 */
        for (int i = 0; i < 3; i++)
            shrunk[3 * i + j] *= 0.8;
    double h[9];
    memcpy(h, shrunk, sizeof h);
    gm_verify_score s = gm_verify_strict_h_cpu(&fx.fine->map, &fx.vq0, h);
    polish_fine(&fx, GM_MODEL_HOMOGRAPHY, h, &s);
    double moved = h_corner_gap(h, shrunk, fx.q0.w, fx.q0.h);
    ck_assert_msg(moved <= small + 1e-9 || h_corner_gap(h, k_tilt, fx.q0.w, fx.q0.h) < 1.0,
                  "a shrunk start moved %.2f px (bound %.1f) and not to the truth", moved, small);
    teardown(&fx);
}
END_TEST

/* An answer on level 0 (a working level) is not polished. */
START_TEST(test_polish_working_level)
{
    fixture fx;
    setup(&fx);
    double h[9], h0[9];
    off_truth(&fx, 0.5, 1.0, 1.0, h);
    memcpy(h0, h, sizeof h);
    gm_verify_score s = {100, 100, 50, 5, 0.5, 0.5};
    ck_assert_int_eq(gm_polish_answer(&fx.r->ix, fx.lane, &fx.q0, &fx.vq0, &fx.r->ix.lv[0],
                                      GM_MODEL_SIMILARITY, h, &s),
                     GM_OK);
    ck_assert_mem_eq(h, h0, sizeof h);
    ck_assert_uint_eq(s.hits, 50);
    teardown(&fx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("polish");
    TCase *tc = tcase_create("polish");
    tcase_add_test(tc, test_polish_reaches_truth);
    tcase_add_test(tc, test_polish_bounded);
    tcase_add_test(tc, test_polish_working_level);
    tcase_add_test(tc, test_polish_grown_homography);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
