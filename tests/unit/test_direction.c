/* test_direction.c: an answer judged on the part the two images share
 * (gm_answer_shared, src/pipeline/direction.c): kept with its overlap when
 * the two share a view of each other, "none" when the matrix's line at
 * infinity crosses the query, when they share a sliver, or when one image
 * is a speck of the other. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gmatch.h"
#include "pipeline/matcher.h"
#include "test_util.h"

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

int main(void)
{
    Suite *s = suite_create("direction");
    TCase *tc = tcase_create("shared");
    tcase_add_test(tc, test_shared_kept);
    tcase_add_test(tc, test_speck);
    tcase_add_test(tc, test_sliver_and_horizon);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
