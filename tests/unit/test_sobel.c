/* test_sobel.c: the edge stage (sobel.c) and the integer box downscale
 * (resample.c).
 *
 * The smoothing is the 5-tap binomial [1 4 6 4 1] along x, then along y
 * (weights sum 256), rounded as (v + 8) >> 4, so the smoothed image s is 16x
 * the intensity; borders are replicated.  Sobel of s:
 *   gx = (s[y-1][x+1] + 2 s[y][x+1] + s[y+1][x+1]) - (same at x-1)
 *   gy = (s[y+1][x-1] + 2 s[y+1][x] + s[y+1][x+1]) - (same at y-1)
 * The expected numbers below are worked out by hand in the comments. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/common.h"
#include "stages/resample.h"
#include "stages/sobel.h"
#include "test_util.h"

static gm_view view_of(const img_t *im) { return (gm_view){im->buf, im->w, im->h, im->stride}; }

static size_t at(const gm_edges *e, int x, int y) { return (size_t)y * (size_t)e->w + (size_t)x; }

static uint32_t count_edges(const gm_edges *e)
{
    uint32_t c = 0;
    for (size_t i = 0; i < (size_t)e->w * e->h; i++)
        c += e->edge[i] != 0;
    return c;
}

/* Vertical step: columns x < x0 have value lo, x >= x0 value hi. */
static img_t vstep(int w, int h, int x0, int lo, int hi)
{
    img_t im = img_new(w, h, 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            *px(&im, x, y) = (uint8_t)(x < x0 ? lo : hi);
    return im;
}

static img_t transpose(const img_t *src)
{
    img_t im = img_new(src->h, src->w, 5);
    for (int y = 0; y < src->h; y++)
        for (int x = 0; x < src->w; x++)
            *px(&im, y, x) = src->buf[(ptrdiff_t)y * src->stride + x];
    return im;
}

/* ---- hand-computed gradients --------------------------------------------- */

/* 12 x 10, 0 for x < 5, 100 for x >= 5.  Every row is the same, so the y pass
 * multiplies by 16 and (16 t + 8) >> 4 = t: s(x) = 100 * (sum of the binomial
 * weights whose tap x+k lies at >= 5):
 *   s(0..2) = 0, s(3) = 100 (tap +2: 1), s(4) = 500 (1+4), s(5) = 1100 (1+4+6),
 *   s(6) = 1500 (1+4+6+4), s(7..11) = 1600.
 * Rows equal -> gx = 4 (s(x+1) - s(x-1)), gy = 0:
 *   gx(1) = 0, gx(2) = 400, gx(3) = 2000, gx(4) = 4000, gx(5) = 4000,
 *   gx(6) = 2000, gx(7) = 400, gx(8) = 0.
 * Thinning (dir 0): x = 4 is > its left (2000) and >= its right (4000); x = 5
 * is not > its left: one column, x = 4, rows 2..7 (the 2-pixel margin). */
START_TEST(test_vertical_step)
{
    img_t im = vstep(12, 10, 5, 0, 100);
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 1000, &e), GM_OK);
    EXPECT_EQ(e.w, 12);
    EXPECT_EQ(e.h, 10);
    static const int gx_exp[12] = {0, 0, 400, 2000, 4000, 4000, 2000, 400, 0, 0, 0, 0};
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 12; x++) {
            size_t i = at(&e, x, y);
            EXPECT_EQ(e.gx[i], gx_exp[x]);
            EXPECT_EQ(e.gy[i], 0);
            EXPECT_EQ(e.mag2[i], gx_exp[x] * gx_exp[x]);
            EXPECT_EQ(e.edge[i], (x == 4 && y >= 2 && y <= 7) ? 1 : 0);
        }
    EXPECT_EQ(e.mag2[at(&e, 4, 5)], 16000000);
    EXPECT(e.threshold >= 96 * 96);
    EXPECT(e.threshold <= 4000 * 4000);
    gm_edges_free(&e);
    EXPECT(e.gx == NULL && e.edge == NULL);
    free(im.buf);
}
END_TEST

/* The same step, horizontal (rows y < 5 are 0): gy takes gx's values, gx = 0,
 * and the thinning (dir 1) keeps the row y = 4, columns 2..9. */
START_TEST(test_horizontal_step)
{
    img_t v = vstep(10, 12, 5, 0, 100), im = transpose(&v); /* 12 wide, 10 high */
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 1000, &e), GM_OK);
    EXPECT_EQ(e.w, 12);
    EXPECT_EQ(e.h, 10);
    static const int gy_exp[10] = {0, 0, 400, 2000, 4000, 4000, 2000, 400, 0, 0};
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 12; x++) {
            size_t i = at(&e, x, y);
            EXPECT_EQ(e.gx[i], 0);
            EXPECT_EQ(e.gy[i], gy_exp[y]);
            EXPECT_EQ(e.mag2[i], gy_exp[y] * gy_exp[y]);
            EXPECT_EQ(e.edge[i], (y == 4 && x >= 2 && x <= 9) ? 1 : 0);
        }
    gm_edges_free(&e);
    free(v.buf);
    free(im.buf);
}
END_TEST

/* A step from bright to dark: the gradient is negative, same magnitude. */
START_TEST(test_falling_step)
{
    img_t im = vstep(12, 10, 5, 100, 0);
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 1000, &e), GM_OK);
    static const int gx_exp[12] = {0, 0, -400, -2000, -4000, -4000, -2000, -400, 0, 0, 0, 0};
    for (int x = 0; x < 12; x++) {
        EXPECT_EQ(e.gx[at(&e, x, 5)], gx_exp[x]);
        EXPECT_EQ(e.edge[at(&e, x, 5)], x == 4);
    }
    gm_edges_free(&e);
    free(im.buf);
}
END_TEST

/* Ramp I(x) = 10 x, 16 wide.  Inside, the binomial keeps a linear function:
 * s(x) = 160 x for 2 <= x <= 13, so gx = 4 * 320 = 1280 for 3 <= x <= 12.
 * At the left border (replicated, I(-1) = I(-2) = 0):
 *   s(0) = 1*0 + 4*0 + 6*0 + 4*10 + 1*20 = 60
 *   s(1) = 1*0 + 4*0 + 6*10 + 4*20 + 1*30 = 170
 *   gx(0) = 4 (s(1) - s(0)) = 440   (x-1 clamps to 0)
 *   gx(1) = 4 (s(2) - s(0)) = 4 (320 - 60) = 1040
 *   gx(2) = 4 (s(3) - s(1)) = 4 (480 - 170) = 1240
 * and mirrored at the right border (I(16) = I(17) = 150):
 *   s(15) = 130 + 4*140 + 6*150 + 4*150 + 150 = 2340, s(14) = 2230,
 *   gx(15) = 4 (2340 - 2230) = 440, gx(14) = 4 (2340 - 2080) = 1040,
 *   gx(13) = 4 (2230 - 1920) = 1240. */
START_TEST(test_ramp)
{
    img_t im = img_new(16, 9, 1);
    for (int y = 0; y < 9; y++)
        for (int x = 0; x < 16; x++)
            *px(&im, x, y) = (uint8_t)(10 * x);
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 1000, &e), GM_OK);
    static const int gx_exp[16] = {440,  1040, 1240, 1280, 1280, 1280, 1280, 1280,
                                   1280, 1280, 1280, 1280, 1280, 1240, 1040, 440};
    for (int y = 0; y < 9; y++) {
        int row_edges = 0;
        for (int x = 0; x < 16; x++) {
            EXPECT_EQ(e.gx[at(&e, x, y)], gx_exp[x]);
            EXPECT_EQ(e.gy[at(&e, x, y)], 0);
            EXPECT_EQ(e.mag2[at(&e, x, y)], gx_exp[x] * gx_exp[x]);
            row_edges += e.edge[at(&e, x, y)];
        }
        /* a gradient plateau keeps at most one pixel per row */
        EXPECT(row_edges <= 1);
    }
    gm_edges_free(&e);
    free(im.buf);
}
END_TEST

/* One pixel of 100 at (5, 5) in 11 x 11 zeros.  s(5+i, 5+j) = (100 * wx(i) *
 * wy(j) + 8) >> 4 with w = 1 4 6 4 1:
 *   s(5,5) = 3600/16 = 225     s(6,5) = 2400/16 = 150     s(6,6) = 1600/16 = 100
 *   s(7,5) = (600+8)>>4 = 38   (37.5 rounds up)
 *   s(7,6) = (400+8)>>4 = 25   s(7,7) = (100+8)>>4 = 6    (6.25 rounds down)
 *   s(8,*) = 0.
 * gx(6,5) = (s(7,4) + 2 s(7,5) + s(7,6)) - (s(5,4) + 2 s(5,5) + s(5,6))
 *         = (25 + 76 + 25) - (150 + 450 + 150) = 126 - 750 = -624; gy(6,5) = 0.
 * gx(6,6) = (s(7,5) + 2 s(7,6) + s(7,7)) - (s(5,5) + 2 s(5,6) + s(5,7))
 *         = (38 + 50 + 6) - (225 + 300 + 38) = 94 - 563 = -469 = gy(6,6).
 * (Truncating instead of rounding would give s(7,5) = 37 and gx(6,6) = -470.) */
START_TEST(test_impulse_rounding)
{
    img_t im = img_new(11, 11, 2);
    for (int y = 0; y < 11; y++)
        for (int x = 0; x < 11; x++)
            *px(&im, x, y) = 0;
    *px(&im, 5, 5) = 100;
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 1000, &e), GM_OK);
    EXPECT_EQ(e.gx[at(&e, 5, 5)], 0);
    EXPECT_EQ(e.gy[at(&e, 5, 5)], 0);
    EXPECT_EQ(e.gx[at(&e, 6, 5)], -624);
    EXPECT_EQ(e.gy[at(&e, 6, 5)], 0);
    EXPECT_EQ(e.gx[at(&e, 4, 5)], 624);
    EXPECT_EQ(e.gy[at(&e, 5, 6)], -624);
    EXPECT_EQ(e.gx[at(&e, 5, 6)], 0);
    EXPECT_EQ(e.gy[at(&e, 5, 4)], 624);
    EXPECT_EQ(e.gx[at(&e, 6, 6)], -469);
    EXPECT_EQ(e.gy[at(&e, 6, 6)], -469);
    EXPECT_EQ(e.mag2[at(&e, 6, 6)], 2 * 469 * 469);
    EXPECT_EQ(e.gx[at(&e, 4, 4)], 469);
    EXPECT_EQ(e.gy[at(&e, 4, 4)], 469);
    EXPECT_EQ(e.gx[at(&e, 4, 6)], 469);
    EXPECT_EQ(e.gy[at(&e, 4, 6)], -469);
    gm_edges_free(&e);
    free(im.buf);
}
END_TEST

/* ---- a direct 2-D reference on random images -------------------------------- */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* s computed as one 5x5 sum (the separable passes sum the same integers). */
static void ref_smooth(const img_t *im, int *s)
{
    static const int wt[5] = {1, 4, 6, 4, 1};
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            int v = 0;
            for (int j = -2; j <= 2; j++)
                for (int k = -2; k <= 2; k++)
                    v += wt[j + 2] * wt[k + 2] *
                         im->buf[(ptrdiff_t)clampi(y + j, 0, im->h - 1) * im->stride +
                                 clampi(x + k, 0, im->w - 1)];
            s[y * im->w + x] = (v + 8) >> 4;
        }
}

/* Quantized direction, written from the definition: |gy|/|gx| <= tan 22.5
 * (as 0.414) horizontal, |gx|/|gy| <= 0.414 vertical, else by sign. */
static int ref_dir(int gx, int gy)
{
    long ax = labs(gx), ay = labs(gy);
    if (ay * 1000 <= ax * 414)
        return 0;
    if (ax * 1000 <= ay * 414)
        return 1;
    return (gx > 0) == (gy > 0) ? 2 : 3;
}

static void check_against_reference(const img_t *im, int max_edges)
{
    int w = im->w, h = im->h;
    int *s = xcalloc((size_t)w * h, sizeof *s);
    ref_smooth(im, s);
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu(view_of(im), max_edges, &e), GM_OK);
    int32_t *m2 = xcalloc((size_t)w * h, sizeof *m2);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int ym = clampi(y - 1, 0, h - 1), yp = clampi(y + 1, 0, h - 1);
            int xm = clampi(x - 1, 0, w - 1), xp = clampi(x + 1, 0, w - 1);
#define S(xx, yy) s[(yy) * w + (xx)]
            int gx = S(xp, ym) + 2 * S(xp, y) + S(xp, yp) - S(xm, ym) - 2 * S(xm, y) - S(xm, yp);
            int gy = S(xm, yp) + 2 * S(x, yp) + S(xp, yp) - S(xm, ym) - 2 * S(x, ym) - S(xp, ym);
#undef S
            EXPECT_EQ(e.gx[at(&e, x, y)], gx);
            EXPECT_EQ(e.gy[at(&e, x, y)], gy);
            EXPECT_EQ(e.mag2[at(&e, x, y)], gx * gx + gy * gy);
            m2[y * w + x] = gx * gx + gy * gy;
        }
    /* thinning from its definition, then the library's threshold */
    EXPECT(e.threshold >= 96 * 96);
    uint32_t kept = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int want = 0;
            if (x >= 2 && y >= 2 && x < w - 2 && y < h - 2 && m2[y * w + x] >= e.threshold) {
                int d = ref_dir(e.gx[at(&e, x, y)], e.gy[at(&e, x, y)]);
                static const int ox[4] = {1, 0, 1, -1}, oy[4] = {0, 1, 1, 1};
                int32_t m = m2[y * w + x];
                int32_t before = m2[(y - oy[d]) * w + x - ox[d]];
                int32_t after = m2[(y + oy[d]) * w + x + ox[d]];
                want = m > before && m >= after;
            }
            EXPECT_EQ(e.edge[at(&e, x, y)], want);
            kept += (uint32_t)want;
        }
    EXPECT(kept <= (uint32_t)max_edges);
    gm_edges_free(&e);
    free(m2);
    free(s);
}

START_TEST(test_random_against_reference)
{
    rng_state = 0x50BE1;
    for (int trial = 0; trial < 6; trial++) {
        int w = 5 + (int)(rng_next() % 40), h = 5 + (int)(rng_next() % 30);
        img_t im = img_new(w, h, (int)(rng_next() % 7));
        /* blocks of random grey plus noise: a mix of strong and weak edges */
        int bs = 2 + (int)(rng_next() % 6);
        uint8_t blk[64][64];
        for (int j = 0; j < 64; j++)
            for (int i = 0; i < 64; i++)
                blk[j][i] = (uint8_t)(rng_next() & 255);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int v = blk[y / bs][x / bs] + (int)(rng_next() % 9) - 4;
                *px(&im, x, y) = (uint8_t)clampi(v, 0, 255);
            }
        check_against_reference(&im, 100000);
        check_against_reference(&im, 20);
        free(im.buf);
    }
    /* extremes: a 1x1, a 1-row and a 1-column image, 0/255 checkerboard */
    img_t one = img_new(1, 1, 0);
    one.buf[0] = 77;
    check_against_reference(&one, 10);
    free(one.buf);
    img_t row = img_new(9, 1, 0), col = img_new(1, 9, 3);
    for (int x = 0; x < 9; x++) {
        *px(&row, x, 0) = (uint8_t)(x * 30);
        *px(&col, 0, x) = (uint8_t)(255 - x * 30);
    }
    check_against_reference(&row, 10);
    check_against_reference(&col, 10);
    free(row.buf);
    free(col.buf);
    img_t cb = img_new(20, 20, 0);
    for (int y = 0; y < 20; y++)
        for (int x = 0; x < 20; x++)
            *px(&cb, x, y) = (uint8_t)(((x / 3 + y / 3) & 1) ? 255 : 0);
    check_against_reference(&cb, 100000);
    free(cb.buf);
}
END_TEST

/* The transposed image has gx and gy swapped at transposed pixels, the same
 * magnitudes, threshold and (the thinning is symmetric too) edges. */
START_TEST(test_transpose_symmetry)
{
    rng_state = 0x7A05E;
    img_t im = img_new(37, 23, 4);
    for (int y = 0; y < 23; y++)
        for (int x = 0; x < 37; x++) {
            double v = 128 + 60 * sin(x * 0.4 + y * 0.17) + 40 * cos(x * 0.05 - y * 0.5);
            *px(&im, x, y) = (uint8_t)clampi((int)v + (int)(rng_next() % 11) - 5, 0, 255);
        }
    img_t t = transpose(&im);
    gm_edges a, b;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 300, &a), GM_OK);
    EXPECT_EQ(gm_edges_cpu(view_of(&t), 300, &b), GM_OK);
    EXPECT_EQ(b.w, 23);
    EXPECT_EQ(b.h, 37);
    EXPECT_EQ(a.threshold, b.threshold);
    uint32_t n = 0;
    for (int y = 0; y < 23; y++)
        for (int x = 0; x < 37; x++) {
            size_t i = at(&a, x, y), j = at(&b, y, x);
            EXPECT_EQ(a.gx[i], b.gy[j]);
            EXPECT_EQ(a.gy[i], b.gx[j]);
            EXPECT_EQ(a.mag2[i], b.mag2[j]);
            EXPECT_EQ(a.edge[i], b.edge[j]);
            n += a.edge[i];
        }
    EXPECT(n > 10); /* the image does have edges */
    gm_edges_free(&a);
    gm_edges_free(&b);
    free(im.buf);
    free(t.buf);
}
END_TEST

/* A 3-grey-level step (gx peak 4 * 3 * (11 - 1) = 120) is above the absolute
 * floor of 96; a 2-level step (80) is not.  An image of only a weak step
 * keeps it (the threshold adapts); next to a strong step (200 levels, gx
 * peak 8000, the 99th percentile) a 10-level step (gx peak 400 < 6% of
 * 8000) is dropped while a 20-level step (800) is kept. */
START_TEST(test_flat_and_low_contrast)
{
    for (int v = 0; v <= 255; v += 85) {
        img_t im = vstep(40, 30, 0, 0, v); /* flat: x >= 0 is all v */
        gm_edges e;
        EXPECT_EQ(gm_edges_cpu(view_of(&im), 100000, &e), GM_OK);
        for (size_t i = 0; i < 40 * 30; i++) {
            EXPECT_EQ(e.gx[i], 0);
            EXPECT_EQ(e.gy[i], 0);
            EXPECT_EQ(e.mag2[i], 0);
            EXPECT_EQ(e.edge[i], 0);
        }
        gm_edges_free(&e);
        free(im.buf);
    }
    /* contrast 3: found, one column at x = 19, rows 2..37 */
    img_t im = vstep(40, 40, 20, 100, 103);
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 100000, &e), GM_OK);
    EXPECT_EQ(e.gx[at(&e, 19, 10)], 120);
    EXPECT_EQ(count_edges(&e), 36);
    for (int y = 2; y < 38; y++)
        EXPECT_EQ(e.edge[at(&e, 19, y)], 1);
    gm_edges_free(&e);
    free(im.buf);
    /* contrast 2: under the absolute floor */
    im = vstep(40, 40, 20, 100, 102);
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 100000, &e), GM_OK);
    EXPECT_EQ(e.gx[at(&e, 19, 10)], 80);
    EXPECT_EQ(count_edges(&e), 0);
    gm_edges_free(&e);
    free(im.buf);
    /* contrast 10 alone: found */
    im = vstep(40, 40, 20, 100, 110);
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 100000, &e), GM_OK);
    EXPECT_EQ(count_edges(&e), 36);
    gm_edges_free(&e);
    free(im.buf);
    /* strong step at x = 10, weak steps beside it */
    for (int weak = 10; weak <= 20; weak += 10) {
        im = img_new(40, 40, 0);
        for (int y = 0; y < 40; y++)
            for (int x = 0; x < 40; x++)
                *px(&im, x, y) = (uint8_t)(x < 10 ? 20 : x < 28 ? 220 : 220 + weak);
        EXPECT_EQ(gm_edges_cpu(view_of(&im), 100000, &e), GM_OK);
        EXPECT_EQ(e.gx[at(&e, 9, 20)], 8000);
        EXPECT_EQ(e.gx[at(&e, 27, 20)], 40 * weak);
        for (int y = 2; y < 38; y++) {
            EXPECT_EQ(e.edge[at(&e, 9, y)], 1);
            EXPECT_EQ(e.edge[at(&e, 27, y)], weak == 20);
        }
        EXPECT_EQ(count_edges(&e), weak == 20 ? 72 : 36);
        gm_edges_free(&e);
        free(im.buf);
    }
}
END_TEST

/* max_edges keeps at most that many, and they are the strongest: the edges
 * under a small bound are a subset of those under a large one, and every
 * dropped pixel is weaker than every kept one. */
START_TEST(test_max_edges)
{
    rng_state = 0x3A7;
    img_t im = img_new(96, 80, 0);
    uint8_t blk[16][16];
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++)
            blk[j][i] = (uint8_t)(rng_next() & 255);
    for (int y = 0; y < 80; y++)
        for (int x = 0; x < 96; x++)
            *px(&im, x, y) = blk[y / 7][x / 7];
    gm_edges all;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 1 << 30, &all), GM_OK);
    uint32_t n_all = count_edges(&all);
    EXPECT(n_all > 500);
    static const int bounds[] = {0, 1, 50, 300, 1000};
    for (size_t b = 0; b < sizeof bounds / sizeof *bounds; b++) {
        gm_edges e;
        EXPECT_EQ(gm_edges_cpu(view_of(&im), bounds[b], &e), GM_OK);
        uint32_t n = count_edges(&e);
        EXPECT(n <= (uint32_t)bounds[b]);
        if (bounds[b] >= 50)
            EXPECT(n >= (uint32_t)bounds[b] / 4); /* not just everything dropped */
        int32_t min_kept = INT32_MAX, max_dropped = -1;
        for (size_t i = 0; i < (size_t)96 * 80; i++) {
            EXPECT_EQ(e.mag2[i], all.mag2[i]);
            if (e.edge[i]) {
                EXPECT(all.edge[i]);
                EXPECT(e.mag2[i] >= e.threshold);
                if (e.mag2[i] < min_kept)
                    min_kept = e.mag2[i];
            } else if (all.edge[i] && e.mag2[i] > max_dropped) {
                max_dropped = e.mag2[i];
            }
        }
        if (n > 0 && max_dropped >= 0)
            EXPECT(max_dropped < min_kept);
        gm_edges_free(&e);
    }
    gm_edges_free(&all);
    free(im.buf);
}
END_TEST

START_TEST(test_invalid)
{
    uint8_t d[4] = {0};
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu((gm_view){d, 0, 2, 2}, 10, &e), GM_ERR_INVALID);
    EXPECT(e.gx == NULL && e.edge == NULL);
    EXPECT_EQ(gm_edges_cpu((gm_view){d, 2, -1, 2}, 10, &e), GM_ERR_INVALID);
    gm_edges_free(&e); /* freeing the zeroed struct is harmless */
}
END_TEST

/* Sectors: |gy| <= 0.414 |gx| -> 0, |gx| <= 0.414 |gy| -> 1, otherwise 2 when
 * gx and gy have the same sign (down-right), 3 otherwise. */
START_TEST(test_edge_dir)
{
    EXPECT_EQ(gm_edge_dir(10, 0), 0);
    EXPECT_EQ(gm_edge_dir(-10, 0), 0);
    EXPECT_EQ(gm_edge_dir(100, -30), 0);
    EXPECT_EQ(gm_edge_dir(0, 10), 1);
    EXPECT_EQ(gm_edge_dir(0, -10), 1);
    EXPECT_EQ(gm_edge_dir(-30, 100), 1);
    EXPECT_EQ(gm_edge_dir(10, 10), 2);
    EXPECT_EQ(gm_edge_dir(-10, -10), 2);
    EXPECT_EQ(gm_edge_dir(10, -10), 3);
    EXPECT_EQ(gm_edge_dir(-10, 10), 3);
    /* the sector boundaries: 414/1000 exactly is still the axis */
    EXPECT_EQ(gm_edge_dir(1000, 414), 0);
    EXPECT_EQ(gm_edge_dir(1000, 415), 2);
    EXPECT_EQ(gm_edge_dir(-1000, 415), 3);
    EXPECT_EQ(gm_edge_dir(414, 1000), 1);
    EXPECT_EQ(gm_edge_dir(415, 1000), 2);
    EXPECT_EQ(gm_edge_dir(415, -1000), 3);
    EXPECT_EQ(gm_edge_dir(16320, 16320), 2); /* the largest gradients */
    /* against the angle, away from the boundaries */
    for (int k = 0; k < 360; k++) {
        double a = k * GM_PI / 180.0;
        double deg = fmod(k, 180.0);
        double dist = fmin(fmin(fabs(deg - 22.5), fabs(deg - 67.5)),
                           fmin(fabs(deg - 112.5), fabs(deg - 157.5)));
        if (dist < 0.5)
            continue;
        int want = (deg < 22.5 || deg > 157.5) ? 0 : (deg > 67.5 && deg < 112.5) ? 1 : deg < 90 ? 2 : 3;
        EXPECT_EQ(gm_edge_dir((int)lround(8000 * cos(a)), (int)lround(8000 * sin(a))), want);
    }
}
END_TEST

/* ---- resample.c --------------------------------------------------------- */

START_TEST(test_downscale_factor)
{
    EXPECT_EQ(gm_downscale_factor(100, 50, 1024), 1);
    EXPECT_EQ(gm_downscale_factor(1024, 1024, 1024), 1);
    EXPECT_EQ(gm_downscale_factor(1025, 10, 1024), 2);
    EXPECT_EQ(gm_downscale_factor(10, 1025, 1024), 2);
    EXPECT_EQ(gm_downscale_factor(2048, 2048, 1024), 2);
    EXPECT_EQ(gm_downscale_factor(2049, 30, 1024), 3);
    EXPECT_EQ(gm_downscale_factor(4000, 3000, 1000), 4);
    EXPECT_EQ(gm_downscale_factor(4001, 3000, 1000), 5);
    EXPECT_EQ(gm_downscale_factor(5000, 5000, 0), 1);  /* no limit */
    EXPECT_EQ(gm_downscale_factor(5000, 5000, -3), 1);
    /* the defining property over a range */
    for (int m = 1; m < 3000; m += 7)
        for (int side = 1; side < 700; side += 37) {
            int f = gm_downscale_factor(m, m / 2 + 1, side);
            EXPECT(f >= 1);
            EXPECT(m / f <= side);                   /* small enough */
            EXPECT(f == 1 || m > side * (f - 1));    /* and the smallest such */
        }
}
END_TEST

/* Box averages rounded half up: (sum + f*f/2) / (f*f). */
START_TEST(test_downscale)
{
    /* 5 x 4 source, f = 2 -> 2 x 2 (the last column is dropped) */
    static const uint8_t src[4][5] = {
        {1, 2, 0, 0, 99},
        {3, 4, 0, 1, 99},
        {0, 0, 255, 255, 99},
        {1, 1, 255, 254, 99},
    };
    img_t im = img_new(5, 4, 3);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 5; x++)
            *px(&im, x, y) = src[y][x];
    uint8_t dst[4 + 1];
    dst[4] = 0xEE; /* guard */
    gm_downscale_cpu(view_of(&im), 2, dst);
    EXPECT_EQ(dst[0], 3);   /* (1+2+3+4 = 10 + 2) / 4 = 3 (2.5 rounds up) */
    EXPECT_EQ(dst[1], 0);   /* (1 + 2) / 4 = 0 */
    EXPECT_EQ(dst[2], 1);   /* (2 + 2) / 4 = 1 (0.5 rounds up) */
    EXPECT_EQ(dst[3], 255); /* (1019 + 2) / 4 = 255 (254.75) */
    EXPECT_EQ(dst[4], 0xEE);
    free(im.buf);

    /* f = 3 on 7 x 7 -> 2 x 2; area 9, rounding (s + 4) / 9 */
    im = img_new(7, 7, 1);
    for (int y = 0; y < 7; y++)
        for (int x = 0; x < 7; x++)
            *px(&im, x, y) = (uint8_t)(y * 7 + x);
    uint8_t d3[4];
    gm_downscale_cpu(view_of(&im), 3, d3);
    /* block (0,0): rows 0..2, cols 0..2: mean of y*7+x = 7*1 + 1 = 8 exactly */
    EXPECT_EQ(d3[0], 8);
    EXPECT_EQ(d3[1], 11);  /* cols 3..5: 7 + 4 */
    EXPECT_EQ(d3[2], 29);  /* rows 3..5: 7*4 + 1 */
    EXPECT_EQ(d3[3], 32);
    free(im.buf);

    /* f = 1 copies; random f against a brute force; the last trials f = 2
     * (its own vectorized loop) on frames of a video's size, odd and even,
     * and f = 3 to 8 (the column sums) on such frames */
    rng_state = 0xD05C;
    for (int trial = 0; trial < 29; trial++) {
        int w = 1 + (int)(rng_next() % 50), h = 1 + (int)(rng_next() % 50);
        int f = 1 + (int)(rng_next() % 6);
        if (trial >= 20)
            w = 1920 + trial - 20, h = 1080 + trial - 20, f = trial < 23 ? 2 : trial - 20;
        im = img_new(w, h, (int)(rng_next() % 5));
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                *px(&im, x, y) = (uint8_t)rng_next();
        int dw = w / f, dh = h / f;
        uint8_t *d = xcalloc((size_t)dw * dh + 1, 1);
        d[dw * dh] = 0x5A;
        gm_downscale_cpu(view_of(&im), f, d);
        for (int y = 0; y < dh; y++)
            for (int x = 0; x < dw; x++) {
                unsigned s = 0;
                for (int j = 0; j < f; j++)
                    for (int i = 0; i < f; i++)
                        s += *px(&im, x * f + i, y * f + j);
                unsigned a = (unsigned)(f * f);
                EXPECT_EQ(d[y * dw + x], (s * 2 + a) / (2 * a)); /* round half up */
            }
        EXPECT_EQ(d[dw * dh], 0x5A);
        free(d);
        free(im.buf);
    }
}
END_TEST

/* Same output whatever the thread count. */
START_TEST(test_threads)
{
#ifdef _OPENMP
    rng_state = 0x7777;
    img_t im = img_new(123, 77, 0);
    for (int y = 0; y < 77; y++)
        for (int x = 0; x < 123; x++)
            *px(&im, x, y) = (uint8_t)(((x * x + 3 * y * y) / 50 + (int)(rng_next() % 20)) & 255);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    gm_edges a, b;
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 500, &a), GM_OK);
    omp_set_num_threads(2);
    EXPECT_EQ(gm_edges_cpu(view_of(&im), 500, &b), GM_OK);
    omp_set_num_threads(saved);
    size_t n = (size_t)123 * 77;
    EXPECT(memcmp(a.gx, b.gx, n * sizeof *a.gx) == 0);
    EXPECT(memcmp(a.gy, b.gy, n * sizeof *a.gy) == 0);
    EXPECT(memcmp(a.mag2, b.mag2, n * sizeof *a.mag2) == 0);
    EXPECT(memcmp(a.edge, b.edge, n) == 0);
    EXPECT_EQ(a.threshold, b.threshold);
    gm_edges_free(&a);
    gm_edges_free(&b);
    free(im.buf);
#endif
}
END_TEST

static Suite *sobel_suite(void)
{
    Suite *s = suite_create("sobel");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_vertical_step);
    tcase_add_test(tc, test_horizontal_step);
    tcase_add_test(tc, test_falling_step);
    tcase_add_test(tc, test_ramp);
    tcase_add_test(tc, test_impulse_rounding);
    tcase_add_test(tc, test_random_against_reference);
    tcase_add_test(tc, test_transpose_symmetry);
    tcase_add_test(tc, test_flat_and_low_contrast);
    tcase_add_test(tc, test_max_edges);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_edge_dir);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    TCase *rs = tcase_create("resample");
    tcase_add_test(rs, test_downscale_factor);
    tcase_add_test(rs, test_downscale);
    suite_add_tcase(s, rs);
    return s;
}

int main(void)
{
    return run_suite(sobel_suite());
}
