/* test_draw.c: the pictures of results (src/draw/draw.c) and the PNG
 * writer (src/io/png_write.c): a known transform gives its outline at known
 * pixels and the query's pixels in the green channel inside it; no match
 * gives the two images side by side; a path draws every outline; a written
 * PNG reads back as the picture's gray. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmatch.h"
#include "draw/draw.h"
#include "test_util.h"

enum { RW = 300, RH = 200, QW = 80, QH = 60 };

static const uint8_t *pxl(const gm_rgb *c, int x, int y)
{
    return c->data + (ptrdiff_t)y * c->stride + 3 * x;
}

static int is_red(const uint8_t *p) { return p[0] == 255 && p[1] == 40 && p[2] == 40; }

/* The flat pair of the tests: a reference of 100, a query of 200, and a
 * result of the given status (its matrix zero). */
static void flat_pair(uint8_t **ref, uint8_t **q, gm_result *res, gm_match_status status)
{
    *ref = malloc(RW * RH), *q = malloc(QW * QH);
    ck_assert(*ref && *q);
    memset(*ref, 100, RW * RH);
    memset(*q, 200, QW * QH);
    memset(res, 0, sizeof *res);
    res->status = status;
}

/* A reference of value 100 and a query of value 200, a translation by
 * (50, 40): the outline's corners at (50, 40), (129, 40), (129, 99),
 * (50, 99); inside, red and blue the reference (100), green the query
 * (200); outside, the reference dimmed (60). */
START_TEST(test_match_outline)
{
    uint8_t *ref, *q;
    gm_result res;
    flat_pair(&ref, &q, &res, GM_MATCH_FOUND);
    const double h[9] = {1, 0, 50, 0, 1, 40, 0, 0, 1};
    memcpy(res.h, h, sizeof h);
    gm_rgb c;
    EXPECT_EQ(gm_draw_result((gm_view){ref, RW, RH, RW}, (gm_view){q, QW, QH, QW}, &res, 0, &c),
              GM_OK);
    EXPECT(c.width >= RW && c.height > RH); /* the caption bar below */
    /* the outline's edges: top (y 40), bottom (y 99), left (x 50), right (x 129) */
    for (int x = 52; x <= 127; x += 5) {
        EXPECT(is_red(pxl(&c, x, 40)));
        EXPECT(is_red(pxl(&c, x, 99)));
    }
    for (int y = 42; y <= 97; y += 5) {
        EXPECT(is_red(pxl(&c, 50, y)));
        EXPECT(is_red(pxl(&c, 129, y)));
    }
    const uint8_t *in = pxl(&c, 90, 70), *out = pxl(&c, 200, 150), *above = pxl(&c, 90, 30);
    EXPECT(in[0] == 100 && in[1] == 200 && in[2] == 100);
    EXPECT(out[0] == 60 && out[1] == 60 && out[2] == 60);
    EXPECT(!is_red(above) && above[0] == 60);
    gm_rgb_free(&c);
    EXPECT(c.data == NULL);

    /* scaled: max_width 150 halves everything, the outline moves with it */
    EXPECT_EQ(gm_draw_result((gm_view){ref, RW, RH, RW}, (gm_view){q, QW, QH, QW}, &res, 150, &c),
              GM_OK);
    /* the reference is 150 x 100 now (the canvas is at least 400 wide for the caption) */
    EXPECT(pxl(&c, 149, 80)[0] == 60 && pxl(&c, 160, 80)[0] == 0 && pxl(&c, 100, 99)[0] == 60);
    int red = 0;
    for (int x = 27; x <= 62; x++) /* (50.5 / 2 - 0.5 .. 129.5 / 2 - 0.5) on row 20 */
        red += is_red(pxl(&c, x, 20)) || is_red(pxl(&c, x, 19)) || is_red(pxl(&c, x, 21));
    EXPECT(red >= 30);
    gm_rgb_free(&c);
    free(ref);
    free(q);
}
END_TEST

/* No match: the reference at the left, the query beside it after a gap, the
 * caption says so (white pixels in the bar). */
START_TEST(test_none_side_by_side)
{
    uint8_t *ref, *q;
    gm_result res;
    flat_pair(&ref, &q, &res, GM_MATCH_NONE);
    gm_rgb c;
    EXPECT_EQ(gm_draw_result((gm_view){ref, RW, RH, RW}, (gm_view){q, QW, QH, QW}, &res, 0, &c),
              GM_OK);
    EXPECT(c.width >= RW + QW);
    EXPECT(pxl(&c, 10, 10)[0] == 100 && pxl(&c, 10, 10)[1] == 100);
    EXPECT(pxl(&c, c.width - QW + 5, 10)[0] == 200 || pxl(&c, RW + 8 + 5, 10)[0] == 200);
    int white = 0;
    for (int y = c.height - 20; y < c.height; y++)
        for (int x = 0; x < c.width; x++)
            white += pxl(&c, x, y)[0] == 255;
    EXPECT(white > 50);
    gm_rgb_free(&c);
    /* bad arguments */
    EXPECT_EQ(gm_draw_result((gm_view){NULL, RW, RH, RW}, (gm_view){q, QW, QH, QW}, &res, 0, &c),
              GM_ERR_INVALID);
    EXPECT_EQ(gm_draw_result((gm_view){ref, RW, RH, RW}, (gm_view){q, QW, QH, QW}, NULL, 0, &c),
              GM_ERR_INVALID);
    free(ref);
    free(q);
}
END_TEST

/* A path of three outlines (one a gap): the first blue, the last red. */
START_TEST(test_path)
{
    uint8_t *ref = calloc(RW * RH, 1);
    ck_assert(ref);
    double c3[24];
    const double a[8] = {20, 20, 60, 20, 60, 60, 20, 60}, b[8] = {200, 100, 260, 100, 260, 160,
                                                                    200, 160};
    memcpy(c3, a, sizeof a);
    for (int k = 8; k < 16; k++)
        c3[k] = NAN;
    memcpy(c3 + 16, b, sizeof b);
    gm_rgb c;
    EXPECT_EQ(gm_draw_path((gm_view){ref, RW, RH, RW}, c3, 3, 0, &c), GM_OK);
    const uint8_t *first = pxl(&c, 40, 20), *last = pxl(&c, 230, 100);
    EXPECT(first[2] == 255 && first[0] == 0);
    EXPECT(last[0] == 255 && last[2] == 0);
    gm_rgb_free(&c);
    free(ref);
}
END_TEST

/* A caption bar below a picture (gm_draw_caption): the picture's rows
 * unchanged above it, white text on the bar at 2 x 2 font pixels where it
 * fits; a text wider than the picture keeps its end ("...", then the
 * tail); bad arguments are GM_ERR_INVALID. */
static int white_in_rows(const gm_rgb *c, int y0, int y1, int x0, int x1)
{
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            n += pxl(c, x, y)[0] == 255 && pxl(c, x, y)[1] == 255 && pxl(c, x, y)[2] == 255;
    return n;
}

START_TEST(test_caption)
{
    gm_rgb pic, c;
    EXPECT_EQ(gm_rgb_alloc(420, 30, &pic), GM_OK);
    memset(pic.data, 77, (size_t)pic.stride * 30);
    EXPECT_EQ(gm_draw_caption(&pic, "QUERY d1/q_1.jpg FRAME 20", &c), GM_OK);
    EXPECT(c.width == 420 && c.height > 30);
    for (int y = 0; y < 30; y++)
        EXPECT(memcmp(c.data + y * c.stride, pic.data + y * pic.stride, 420 * 3) == 0);
    int bar = c.height - 30;
    EXPECT(white_in_rows(&c, 30, c.height, 0, 420) > 100);
    /* 2 x 2 font pixels: some text at least 2 rows below the bar's middle */
    EXPECT(white_in_rows(&c, 30 + bar / 2 + 5, c.height, 0, 420) > 0);
    gm_rgb_free(&c);
    /* the end of a long text stays: its last glyph (an L) ends at the right */
    char longt[400];
    memset(longt, 'A', sizeof longt - 2);
    longt[sizeof longt - 2] = 'L', longt[sizeof longt - 1] = '\0';
    EXPECT_EQ(gm_draw_caption(&pic, longt, &c), GM_OK);
    EXPECT(white_in_rows(&c, 30, c.height, 0, 12) > 0);    /* "..." at the start */
    EXPECT(white_in_rows(&c, 30, c.height, 400, 420) > 0); /* the tail reaches the right */
    gm_rgb_free(&c);
    EXPECT_EQ(gm_draw_caption(NULL, "x", &c), GM_ERR_INVALID);
    EXPECT_EQ(gm_draw_caption(&pic, NULL, &c), GM_ERR_INVALID);
    EXPECT(c.data == NULL);
    gm_rgb_free(&pic);
}
END_TEST

/* A written PNG reads back (gm_image_load) with the picture's size and the
 * gray of its colours; a folder that does not exist is a one-line error. */
START_TEST(test_png_round_trip)
{
    gm_rgb c;
    EXPECT_EQ(gm_rgb_alloc(7, 5, &c), GM_OK);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 7; x++) {
            uint8_t *p = c.data + y * c.stride + 3 * x;
            p[0] = p[1] = p[2] = (uint8_t)(30 * x + y);
        }
    char path[] = "/tmp/gmatch-test-draw-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    char err[160];
    EXPECT_EQ(gm_rgb_write_png(&c, path, err, sizeof err), GM_OK);
    gm_image im;
    EXPECT_EQ(gm_image_load(path, 0, &im, err, sizeof err), GM_OK);
    EXPECT(im.width == 7 && im.height == 5);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 7; x++)
            EXPECT_EQ(im.data[y * im.stride + x], 30 * x + y);
    gm_image_free(&im);
    unlink(path);
    EXPECT_EQ(gm_rgb_write_png(&c, "/nonexistent-dir/x.png", err, sizeof err), GM_ERR_IO);
    EXPECT(strstr(err, "No such file") != NULL);
    gm_rgb_free(&c);
}
END_TEST

static Suite *draw_suite(void)
{
    Suite *s = suite_create("draw");
    TCase *tc = tcase_create("draw");
    tcase_add_test(tc, test_match_outline);
    tcase_add_test(tc, test_none_side_by_side);
    tcase_add_test(tc, test_path);
    tcase_add_test(tc, test_png_round_trip);
    tcase_add_test(tc, test_caption);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(draw_suite());
}
