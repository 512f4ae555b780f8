/* test_selfmap.c: the reference's self-maps (src/pipeline/selfmap.c) and
 * the ambiguity they reveal (matcher.c's self_rivals).
 *
 * Two references made from data/large's, enlarged twice (2880 x 1920,
 * level 0 at factor 3): a point-symmetric one (its right half the left
 * half turned half a turn about the centre) and a repeated one (its right
 * half a copy of the left).  Their self-maps must hold the half turn, and the shift both
 * ways, within a working pixel over the level; the plain reference keeps
 * none that carries it far onto itself.  A crop of either shows a place
 * that appears twice: the answer must be "none", "ambiguous", under every
 * model (the stripes set's point-symmetric illustration was answered
 * with its twin at 0.70 before, docs/calibration.md). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gmatch.h"
#include "pipeline/matcher.h"
#include "stages/transform.h"
#include "test_util.h"

enum { SYMMETRIC, REPEATED, PLAIN };

/* data/large's reference enlarged twice (bilinear: 2880 x 1920, so that
 * level 0 is at factor 3 and the fine levels hold a sparse share of the
 * corner pairs each), as `kind` says (caller frees data) */
static gm_image make_ref(int kind)
{
    gm_image src = load_data("data/large/ref_mosaic.jpg");
    const int sw = src.width, sh = src.height, w = 2 * sw, h = 2 * sh;
    uint8_t *big = xmalloc((size_t)w * h, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double fx = fmin(fmax((x - 0.5) / 2, 0), sw - 1.0), fy = fmin(fmax((y - 0.5) / 2, 0), sh - 1.0);
            int x0 = (int)fx, y0 = (int)fy, x1 = x0 + (x0 < sw - 1), y1 = y0 + (y0 < sh - 1);
            double ax = fx - x0, ay = fy - y0;
            const uint8_t *r0 = src.data + (size_t)y0 * src.stride, *r1 = src.data + (size_t)y1 * src.stride;
            double v = (1 - ay) * ((1 - ax) * r0[x0] + ax * r0[x1]) + ay * ((1 - ax) * r1[x0] + ax * r1[x1]);
            big[(size_t)y * w + x] = (uint8_t)lrint(v);
        }
    gm_image out = src;
    out.data = xmalloc((size_t)w * h, 1);
    out.width = w, out.height = h, out.stride = w;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sx = x, sy = y;
            if (kind == SYMMETRIC && x >= w / 2)
                sx = w - 1 - x, sy = h - 1 - y;
            else if (kind == REPEATED && x >= w / 2)
                sx = x - w / 2;
            out.data[(size_t)y * w + x] = big[(size_t)sy * w + sx];
        }
    free(big);
    gm_image_free(&src);
    return out;
}

static gm_ref *prepare(gm_image img, gm_model model)
{
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CPU;
    p.model = model;
    gm_ref *r = NULL;
    ck_assert_int_eq(gm_ref_prepare(&p, gm_image_view(&img), &r), GM_OK);
    ck_assert_msg(r->ix.lv[0].f == 3 && r->ix.lv[GM_LEVELS].ok,
                  "level 0 at factor 3 and fine levels expected, got %d", r->ix.lv[0].f);
    return r;
}

/* The largest distance between a self-map and `want` (level 0's working
 * pixels) over a grid of the points of the level that `want` keeps in it. */
static double gap_over_level(const ref_level *l, const double s[9], const double want[9])
{
    double worst = 0;
    for (int j = 0; j <= 8; j++)
        for (int i = 0; i <= 8; i++) {
            double x = (l->w - 1) * i / 8.0, y = (l->h - 1) * j / 8.0, wx, wy, sx, sy;
            gm_h_apply(want, x, y, &wx, &wy);
            if (wx < 0 || wy < 0 || wx > l->w - 1 || wy > l->h - 1)
                continue;
            gm_h_apply(s, x, y, &sx, &sy);
            worst = fmax(worst, hypot(sx - wx, sy - wy));
        }
    return worst;
}

/* the self-map of r closest to want: its gap (gap_over_level) */
static double closest(const gm_ref *r, const double want[9])
{
    double best = INFINITY;
    for (int k = 0; k < r->ix.n_self; k++)
        best = fmin(best, gap_over_level(&r->ix.lv[0], r->ix.self[k], want));
    return best;
}

/* The self-maps each kind must hold: the symmetric one the half turn
 * (source x -> W - 1 - x is X -> w0 - 1 - X in level 0's pixels, W = 3
 * w0), the repeated one the shift by half its width, both ways. */
START_TEST(test_twins_found)
{
    const int kind = _i ? REPEATED : SYMMETRIC;
    gm_image img = make_ref(kind);
    gm_ref *r = prepare(img, GM_MODEL_SIMILARITY);
    const double w = r->ix.lv[0].w, h = r->ix.lv[0].h;
    const double want[2][2][9] = {{{-1, 0, w - 1, 0, -1, h - 1, 0, 0, 1}, {-1, 0, w - 1, 0, -1, h - 1, 0, 0, 1}},
                                  {{1, 0, w / 2, 0, 1, 0, 0, 0, 1}, {1, 0, -w / 2, 0, 1, 0, 0, 0, 1}}};
    for (int k = 0; k < 2; k++) {
        double gap = closest(r, want[_i][k]);
        ck_assert_msg(gap < 1.0, "%s: %d self-maps, the nearest %.2f px from the twin's map %d",
                      kind == SYMMETRIC ? "symmetric" : "repeated", r->ix.n_self, gap, k);
    }
    gm_ref_free(r);
    gm_image_free(&img);
}
END_TEST

/* The plain reference does not repeat: whatever self-maps its edges
 * suggest, none is a half turn or the shift (no twin invented). */
START_TEST(test_plain_has_no_twin)
{
    gm_image img = make_ref(PLAIN);
    gm_ref *r = prepare(img, GM_MODEL_SIMILARITY);
    const ref_level *l = &r->ix.lv[0];
    const double turn[9] = {-1, 0, l->w - 1.0, 0, -1, l->h - 1.0, 0, 0, 1};
    const double right[9] = {1, 0, l->w / 2.0, 0, 1, 0, 0, 0, 1};
    ck_assert_msg(closest(r, turn) > 20 && closest(r, right) > 20,
                  "a twin found in a reference that has none");
    gm_ref_free(r);
    gm_image_free(&img);
}
END_TEST

/* A crop of the left half, which appears again (turned, or shifted) on the
 * right: "none" and "ambiguous" under every model. */
START_TEST(test_twin_is_ambiguous)
{
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY,
                                      GM_MODEL_AUTO};
    const int kind = _i / 4 ? REPEATED : SYMMETRIC;
    const gm_model model = models[_i % 4];
    gm_image img = make_ref(kind);
    gm_ref *r = prepare(img, model);
    const int qw = 500, qh = 400, ox = 500, oy = 500;
    uint8_t *q = xmalloc((size_t)qw * qh, 1);
    for (int y = 0; y < qh; y++)
        memcpy(q + (size_t)y * qw, img.data + (size_t)(y + oy) * img.stride + ox, (size_t)qw);
    gm_result res;
    ck_assert_int_eq(gm_match(r, (gm_view){q, qw, qh, qw}, &res), GM_OK);
    ck_assert_msg(res.status == GM_MATCH_NONE && res.reason == GM_REASON_AMBIGUOUS,
                  "%s reference, model %d: status %d, reason %s, confidence %.3f, at (%.1f, %.1f)",
                  kind == SYMMETRIC ? "symmetric" : "repeated", (int)model, (int)res.status,
                  gm_reason_name(res.reason), res.confidence, res.h[2], res.h[5]);
    free(q);
    gm_ref_free(r);
    gm_image_free(&img);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("selfmap");
    TCase *tc = tcase_create("selfmap");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_twins_found, 0, 2);
    tcase_add_test(tc, test_plain_has_no_twin);
    tcase_add_loop_test(tc, test_twin_is_ambiguous, 0, 8);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
