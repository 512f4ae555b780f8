/* test_corners.c: Shi-Tomasi corners with greedy radius suppression
 * (corners.c).
 *
 * Square corners of rendered images are found at a small, symmetric offset
 * inside the corner (the 5x5 structure-tensor window sees the corner best a
 * little inside it): within 1.5 px along each axis and on the corner's
 * bisector.  Straight edges give no corner; the target cap, the suppression
 * radius and determinism (runs, thread counts) are checked. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/common.h"
#include "stages/sobel.h"
#include "stages/points.h"
#include "stages/corners.h"
#include "test_util.h"

/* corners.c's suppression radius (working pixels); the test relies on it. */
#ifndef GM_CORNER_RADIUS
#define GM_CORNER_RADIUS 20.0f
#endif

typedef struct {
    double cx, cy, half, rot; /* centre, half side, rotation (radians) */
} square;

/* Corner c (0..3) of a square, in pixel-centre coordinates. */
static void square_corner(const square *s, int c, double *x, double *y)
{
    static const int sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
    double u = sx[c] * s->half, v = sy[c] * s->half;
    *x = s->cx + cos(s->rot) * u - sin(s->rot) * v;
    *y = s->cy + sin(s->rot) * u + cos(s->rot) * v;
}

/* Background bg, squares fg, 4x4 supersampled (pixel (x, y) covers
 * [x-0.5, x+0.5) x [y-0.5, y+0.5)). */
static uint8_t *render_squares(int w, int h, const square *sq, int n, int bg, int fg)
{
    uint8_t *im = xmalloc((size_t)w * h, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int in = 0;
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    double px = x - 0.375 + 0.25 * i, py = y - 0.375 + 0.25 * j;
                    for (int k = 0; k < n; k++) {
                        double dx = px - sq[k].cx, dy = py - sq[k].cy;
                        double u = cos(sq[k].rot) * dx + sin(sq[k].rot) * dy;
                        double v = -sin(sq[k].rot) * dx + cos(sq[k].rot) * dy;
                        if (fabs(u) < sq[k].half && fabs(v) < sq[k].half) {
                            in++;
                            break;
                        }
                    }
                }
            im[(size_t)y * w + x] = (uint8_t)((bg * (16 - in) + fg * in + 8) / 16);
        }
    return im;
}

static void corners_of(const uint8_t *im, int w, int h, uint32_t target, gm_points *pts)
{
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu((gm_view){im, w, h, w}, 1 << 20, &e), GM_OK);
    EXPECT_EQ(gm_corners_cpu(&e, target, pts), GM_OK);
    EXPECT(pts->n <= target);
    /* the angle is the Sobel direction at the corner pixel; every point lies
     * inside the 4-pixel border margin */
    for (uint32_t k = 0; k < pts->n; k++) {
        EXPECT(pts->p[k].x >= 3.5f && pts->p[k].x <= w - 4.5f);
        EXPECT(pts->p[k].y >= 3.5f && pts->p[k].y <= h - 4.5f);
        EXPECT(pts->p[k].w > 0);
        EXPECT(isfinite(pts->p[k].angle));
    }
    gm_edges_free(&e);
}

/* Distance to the nearest corner of any square; *dx, *dy the offset. */
static double nearest_corner(const square *sq, int n, gm_point p, double *dx, double *dy)
{
    double best = 1e9;
    for (int k = 0; k < n; k++)
        for (int c = 0; c < 4; c++) {
            double x, y;
            square_corner(&sq[k], c, &x, &y);
            double d = hypot(p.x - x, p.y - y);
            if (d < best) {
                best = d;
                *dx = p.x - x;
                *dy = p.y - y;
            }
        }
    return best;
}

/* Three axis-aligned squares with corners on pixel boundaries: 12 corners,
 * each found once, at most 1.5 px from the corner along each axis, on the
 * bisector (equal offsets along x and y, pointing inside), no other corner;
 * the four corners of one square equally strong. */
START_TEST(test_axis_squares)
{
    const square sq[3] = {{49.5, 49.5, 20, 0}, {134.5, 64.5, 25, 0}, {67.5, 117.5, 18, 0}};
    int w = 200, h = 160;
    uint8_t *im = render_squares(w, h, sq, 3, 30, 200);
    gm_points pts;
    corners_of(im, w, h, 100, &pts);
    EXPECT_EQ(pts.n, 12);
    int hit[3][4] = {{0}};
    for (uint32_t k = 0; k < pts.n; k++) {
        double dx = 0, dy = 0, d = nearest_corner(sq, 3, pts.p[k], &dx, &dy);
        if (!(fabs(dx) <= 1.5 && fabs(dy) <= 1.5 && d <= 2.2))
            ck_abort_msg("corner (%.2f, %.2f) is (%.2f, %.2f) from its square corner", pts.p[k].x,
                         pts.p[k].y, dx, dy);
        EXPECT(fabs(fabs(dx) - fabs(dy)) < 0.05);
        for (int s = 0; s < 3; s++)
            for (int c = 0; c < 4; c++) {
                double x, y;
                square_corner(&sq[s], c, &x, &y);
                if (hypot(pts.p[k].x - x, pts.p[k].y - y) == d) {
                    hit[s][c]++;
                    /* inside: the offset points towards the square's centre */
                    EXPECT((dx > 0) == (sq[s].cx > x) && (dy > 0) == (sq[s].cy > y));
                    /* the gradient at a corner points out of the bright square,
                     * here along the diagonal */
                    double out = atan2(y - sq[s].cy, x - sq[s].cx) + GM_PI;
                    double da = fmod(fabs(pts.p[k].angle - out), 2 * GM_PI);
                    EXPECT(fmin(da, 2 * GM_PI - da) < 0.2);
                }
            }
    }
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 4; c++)
            EXPECT_EQ(hit[s][c], 1);
    for (uint32_t k = 1; k < pts.n; k++) /* all the same contrast and shape */
        EXPECT(fabsf(pts.p[k].w - pts.p[0].w) <= 1e-3f * pts.p[0].w);
    free(pts.p);
    free(im);
}
END_TEST

/* Rotated squares (35 and -20 degrees, anti-aliased): every corner found
 * once, at most 2.5 px away (measured: 2.0 to 2.25 px, the same inward bias
 * along the bisector as on the axis-aligned squares), no corner elsewhere. */
START_TEST(test_rotated_squares)
{
    const square sq[2] = {{60.3, 70.1, 22, 35 * GM_PI / 180}, {150.7, 80.6, 26, -20 * GM_PI / 180}};
    int w = 220, h = 150;
    uint8_t *im = render_squares(w, h, sq, 2, 220, 40); /* dark squares this time */
    gm_points pts;
    corners_of(im, w, h, 100, &pts);
    EXPECT_EQ(pts.n, 8);
    int hit[2][4] = {{0}};
    for (uint32_t k = 0; k < pts.n; k++) {
        double dx = 0, dy = 0, d = nearest_corner(sq, 2, pts.p[k], &dx, &dy);
        if (!(d <= 2.5))
            ck_abort_msg("corner (%.2f, %.2f) is %.2f px from any square corner", pts.p[k].x,
                         pts.p[k].y, d);
        for (int s = 0; s < 2; s++)
            for (int c = 0; c < 4; c++) {
                double x, y;
                square_corner(&sq[s], c, &x, &y);
                if (hypot(pts.p[k].x - x, pts.p[k].y - y) == d) {
                    hit[s][c]++;
                    /* on the bisector: the offset points to the centre */
                    double a = atan2(dy, dx), b = atan2(sq[s].cy - y, sq[s].cx - x);
                    double da = fmod(fabs(a - b), 2 * GM_PI);
                    EXPECT(fmin(da, 2 * GM_PI - da) < 0.35);
                }
            }
    }
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 4; c++)
            EXPECT_EQ(hit[s][c], 1);
    free(pts.p);
    free(im);
}
END_TEST

/* An axis-aligned straight step has a rank-one structure tensor (gy = 0):
 * the response is exactly 0, no corner.  A blurred oblique edge has only
 * rounding-level responses, orders of magnitude under a real corner; next
 * to a square, it gives none. */
START_TEST(test_straight_edges)
{
    int w = 120, h = 100;
    uint8_t *im = xmalloc((size_t)w * h, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            im[y * w + x] = x < 57 ? 20 : 230;
    gm_points pts;
    corners_of(im, w, h, 100, &pts);
    EXPECT_EQ(pts.n, 0);
    free(pts.p);
    /* flat */
    memset(im, 128, (size_t)w * h);
    corners_of(im, w, h, 100, &pts);
    EXPECT_EQ(pts.n, 0);
    free(pts.p);
    free(im);

    /* the response of a square corner of this contrast, for scale */
    const square sq = {30.5, 30.5, 12, 0};
    w = 160;
    h = 140;
    im = render_squares(w, h, &sq, 1, 30, 200);
    corners_of(im, w, h, 100, &pts);
    EXPECT_EQ(pts.n, 4);
    float corner_w = pts.p[0].w;
    free(pts.p);
    free(im);

    for (int t = 0; t < 6; t++) {
        double th = 0.3 + t * 0.45, nx = cos(th), ny = sin(th);
        im = xmalloc((size_t)w * h, 1);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double d = nx * (x - 100.2) + ny * (y - 90.7);
                im[y * w + x] = (uint8_t)lrint(30 + 170 * 0.5 * (1 + erf(d / 1.2)));
            }
        corners_of(im, w, h, 100, &pts);
        for (uint32_t k = 0; k < pts.n; k++)
            EXPECT(pts.p[k].w < 1e-3f * corner_w);
        free(pts.p);
        /* with the square drawn in (far from the line): only its 4 corners */
        for (int y = 18; y < 43; y++)
            for (int x = 18; x < 43; x++)
                if (fabs(nx * (x - 100.2) + ny * (y - 90.7)) > 20)
                    im[y * w + x] = (uint8_t)(x >= 19 && x <= 42 && y >= 19 && y <= 42 ? 200 : im[y * w + x]);
        double fx = nx * (30.5 - 100.2) + ny * (30.5 - 90.7);
        if (fabs(fx) > 40) { /* the square lies well clear of the line */
            corners_of(im, w, h, 100, &pts);
            EXPECT_EQ(pts.n, 4);
            for (uint32_t k = 0; k < pts.n; k++)
                EXPECT(fabsf(pts.p[k].x - 30.5f) < 14 && fabsf(pts.p[k].y - 30.5f) < 14);
            free(pts.p);
        }
        free(im);
    }
}
END_TEST

/* Random blocks: many candidate corners. */
static uint8_t *busy_image(int w, int h, uint64_t seed)
{
    rng_state = seed;
    uint8_t *im = xmalloc((size_t)w * h, 1);
    memset(im, 90, (size_t)w * h);
    for (int r = 0; r < 160; r++) {
        int x0 = (int)(rng_next() % (uint32_t)w), y0 = (int)(rng_next() % (uint32_t)h);
        int sw = 3 + (int)(rng_next() % 25), sh = 3 + (int)(rng_next() % 25);
        uint8_t v = (uint8_t)(rng_next() & 255);
        for (int y = y0; y < y0 + sh && y < h; y++)
            for (int x = x0; x < x0 + sw && x < w; x++)
                im[y * w + x] = v;
    }
    for (int i = 0; i < w * h; i++) /* a little noise */
        im[i] = (uint8_t)(im[i] + (rng_next() % 5) - 2 + (im[i] < 2 ? 2 : 0) - (im[i] > 253 ? 2 : 0));
    return im;
}

/* Suppression: no two corners closer than the radius.  The check in
 * corners.c compares a candidate's integer pixel with the kept corners'
 * sub-pixel positions and the candidate then moves by up to half a pixel
 * along each axis, so the bound on the final points is radius - sqrt(0.5). */
START_TEST(test_suppression_radius)
{
    int w = 240, h = 200;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        uint8_t *im = busy_image(w, h, seed * 0x9E37);
        gm_points pts;
        corners_of(im, w, h, 1000, &pts);
        EXPECT(pts.n >= 40); /* the image is busy enough for the test to mean something */
        /* a grid of pitch radius/sqrt 2 holds at most ~(w h) / (pi r^2 / 4) */
        EXPECT(pts.n <= (uint32_t)(w * h / (GM_PI * GM_CORNER_RADIUS * GM_CORNER_RADIUS / 4)));
        double dmin = 1e9;
        for (uint32_t i = 0; i < pts.n; i++)
            for (uint32_t j = i + 1; j < pts.n; j++)
                dmin = fmin(dmin, hypot(pts.p[i].x - pts.p[j].x, pts.p[i].y - pts.p[j].y));
        if (!(dmin >= GM_CORNER_RADIUS - 0.7072))
            ck_abort_msg("seed %d: two corners %.3f px apart", (int)seed, dmin);
        /* sorted by strength (greedy, strongest first) */
        for (uint32_t k = 1; k < pts.n; k++)
            EXPECT(pts.p[k - 1].w >= pts.p[k].w);
        free(pts.p);
        free(im);
    }
}
END_TEST

/* The target keeps the strongest: the corners under a small target are the
 * first ones under a large target, bit for bit. */
START_TEST(test_target_cap)
{
    int w = 240, h = 200;
    uint8_t *im = busy_image(w, h, 0x7A26);
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu((gm_view){im, w, h, w}, 1 << 20, &e), GM_OK);
    gm_points all;
    EXPECT_EQ(gm_corners_cpu(&e, 100000, &all), GM_OK);
    EXPECT(all.n >= 40);
    static const uint32_t targets[] = {0, 1, 7, 30};
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        gm_points p;
        EXPECT_EQ(gm_corners_cpu(&e, targets[t], &p), GM_OK);
        EXPECT_EQ(p.n, targets[t]);
        EXPECT(memcmp(p.p, all.p, p.n * sizeof *p.p) == 0);
        free(p.p);
    }
    free(all.p);
    gm_edges_free(&e);
    free(im);
}
END_TEST

/* Same result on every run and with 1 or 2 threads, bit for bit. */
START_TEST(test_deterministic)
{
    int w = 240, h = 200;
    uint8_t *im = busy_image(w, h, 0xDE7);
    gm_points a, b, c;
#ifdef _OPENMP
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    corners_of(im, w, h, 200, &a);
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    corners_of(im, w, h, 200, &b);
    corners_of(im, w, h, 200, &c);
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    EXPECT(a.n > 20);
    EXPECT_EQ(a.n, b.n);
    EXPECT_EQ(b.n, c.n);
    EXPECT(memcmp(a.p, b.p, a.n * sizeof *a.p) == 0);
    EXPECT(memcmp(b.p, c.p, b.n * sizeof *b.p) == 0);
    free(a.p);
    free(b.p);
    free(c.p);
    free(im);
}
END_TEST

/* Images too small for the 4-pixel margin: no corner, no crash. */
START_TEST(test_tiny)
{
    for (int s = 1; s <= 9; s++) {
        uint8_t im[81];
        for (int i = 0; i < s * s; i++)
            im[i] = (uint8_t)((i * 37) & 255);
        gm_points p;
        corners_of(im, s, s, 10, &p);
        EXPECT_EQ(p.n, 0);
        free(p.p);
    }
}
END_TEST

static Suite *corners_suite(void)
{
    Suite *s = suite_create("corners");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_axis_squares);
    tcase_add_test(tc, test_rotated_squares);
    tcase_add_test(tc, test_straight_edges);
    tcase_add_test(tc, test_suppression_radius);
    tcase_add_test(tc, test_target_cap);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_tiny);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(corners_suite());
}
