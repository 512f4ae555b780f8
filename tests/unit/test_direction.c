/* test_direction.c: an answer judged on the part the two images share
 * (gm_answer_shared, src/pipeline/direction.c): kept with its overlap when
 * the two share a view of each other, "none" when the matrix's line at
 * infinity crosses the query, when they share a sliver, or when one image
 * is a speck of the other. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gmatch.h"
#include "common/common.h"
#include "pipeline/matcher.h"
#include "test_util.h"
#include "test_scene.h"

/* A found answer of matrix h. */
static gm_result found(const double h[9])
{
    gm_result r;
    memset(&r, 0, sizeof r);
    r.status = GM_MATCH_FOUND;
    r.confidence = 0.9;
    memcpy(r.h, h, sizeof r.h);
    return r;
}

START_TEST(test_shared_kept)
{
    /* a 200 x 100 query inside a 400 x 400 reference at (50, 60) */
    const double inside[9] = {1, 0, 50, 0, 1, 60, 0, 0, 1};
    gm_result r = found(inside);
    gm_answer_shared(&r, 200, 100, 400, 400);
    ck_assert_int_eq(r.status, GM_MATCH_FOUND);
    ck_assert(fabs(r.overlap[0] - 1) < 1e-12 && fabs(r.overlap[1] - 0.125) < 1e-12);
    /* a 100 x 50 poster shown at a tenth of its size in a 1280 x 720 frame
     * (query pixels -> reference pixels: times 10): kept */
    const double small[9] = {10, 0, -5000, 0, 10, -3000, 0, 0, 1};
    r = found(small);
    gm_answer_shared(&r, 1280, 720, 100, 50);
    ck_assert_int_eq(r.status, GM_MATCH_FOUND);
    ck_assert(fabs(r.overlap[1] - 1) < 1e-12);
}
END_TEST

START_TEST(test_speck)
{
    /* the calibration's video, frame 86: a similarity at scale 704 put the
     * whole 1200 x 675 poster on about two pixels of the frame */
    const double speck[9] = {676.579571, -195.714999, -367299.906013,
                             195.714999, 676.579571, -472304.42793, 0, 0, 1};
    gm_result r = found(speck);
    gm_answer_shared(&r, 1280, 720, 1200, 675);
    ck_assert_int_eq(r.status, GM_MATCH_NONE);
    /* and the reverse: a whole frame on a few reference pixels */
    const double tiny[9] = {0.02, 0, 100, 0, 0.02, 100, 0, 0, 1};
    r = found(tiny);
    gm_answer_shared(&r, 1280, 720, 1200, 675);
    ck_assert_int_eq(r.status, GM_MATCH_NONE);
    /* at the search's own bound (8 times) it stands */
    const double eight[9] = {8, 0, 0, 0, 8, 0, 0, 0, 1};
    r = found(eight);
    gm_answer_shared(&r, 1280, 720, 1200, 675);
    ck_assert_int_eq(r.status, GM_MATCH_FOUND);
}
END_TEST

START_TEST(test_sliver_and_horizon)
{
    /* 5% of the query's area on the reference, 2.5% of the reference's */
    const double sliver[9] = {1, 0, 390, 0, 1, 0, 0, 0, 1};
    gm_result r = found(sliver);
    gm_answer_shared(&r, 200, 400, 400, 400);
    ck_assert_int_eq(r.status, GM_MATCH_NONE);
    /* the line at infinity at x = 50 of a 100 x 100 query */
    const double horizon[9] = {1, 0, 0, 0, 1, 0, -0.02, 0, 1};
    r = found(horizon);
    gm_answer_shared(&r, 100, 100, 200, 200);
    ck_assert_int_eq(r.status, GM_MATCH_NONE);
    /* a "none" stays "none", its overlap unset */
    const double inside[9] = {1, 0, 50, 0, 1, 60, 0, 0, 1};
    r = found(inside);
    r.status = GM_MATCH_NONE;
    gm_answer_shared(&r, 200, 100, 400, 400);
    ck_assert_int_eq(r.status, GM_MATCH_NONE);
    ck_assert(r.overlap[0] == 0 && r.overlap[1] == 0);
}
END_TEST

/* The draws of one query share its triangle lists (gm_query_levels.tris):
 * a mirrored view under auto (no model carries it, so every pairing runs,
 * the triangles' too) drawn three times with one levels struct gives, draw
 * by draw, what the same draws give when each remakes its lists, and the
 * later draws make none. */
START_TEST(test_draws_share_triangles)
{
    const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const double mirror[9] = {-0.9, 0.12, 230, -0.08, 0.95, 10, 0.0006, 0.0003, 1};
    const int rw = 240, rh = 200, qw = 200, qh = 160;
    uint8_t *ref = render_h(rw, rh, id), *q = render_h(qw, qh, mirror);
    gm_params p = gm_params_default();
    p.model = GM_MODEL_AUTO;
    gm_ref *r;
    ck_assert_int_eq(gm_ref_prepare(&p, (gm_view){ref, rw, rh, rw}, &r), GM_OK);
    const gm_view qv = {q, qw, qh, qw};
    gm_query_levels kept, remade;
    memset(&kept, 0, sizeof kept);
    memset(&remade, 0, sizeof remade);
    int lists = 0;
    for (int t = 0; t < 3; t++) {
        uint64_t key = t == 0 ? GM_DRAW_KEY : gm_mix64(GM_DRAW_KEY ^ GM_SALT_RETRY ^ (uint64_t)t);
        gm_result a, b;
        ck_assert_int_eq(gm_match_forward(&r->ix, GM_MODEL_AUTO, qv, key, &kept, &a), GM_OK);
        if (t == 0)
            lists = kept.n_tris;
        ck_assert_msg(lists > 0, "the draws paired no triangles");
        ck_assert_int_eq(kept.n_tris, lists); /* read, not made again */
        for (int i = 0; i < remade.n_tris; i++)
            free(remade.tris[i].all.t);
        remade.n_tris = 0;
        ck_assert_int_eq(gm_match_forward(&r->ix, GM_MODEL_AUTO, qv, key, &remade, &b), GM_OK);
        ck_assert_int_eq(a.status, b.status);
        ck_assert_int_eq(a.model, b.model);
        ck_assert_int_eq(a.votes, b.votes);
        ck_assert_int_eq(a.inliers, b.inliers);
        ck_assert_int_eq(a.reason, b.reason);
        ck_assert(memcmp(&a.confidence, &b.confidence, sizeof a.confidence) == 0);
        ck_assert(memcmp(a.h, b.h, sizeof a.h) == 0);
    }
    gm_query_levels_free(&kept);
    gm_query_levels_free(&remade);
    gm_ref_free(r);
    free(ref);
    free(q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("direction");
    TCase *tc = tcase_create("shared");
    tcase_add_test(tc, test_shared_kept);
    tcase_add_test(tc, test_speck);
    tcase_add_test(tc, test_sliver_and_horizon);
    tcase_add_test(tc, test_draws_share_triangles);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
