/* test_points.c: edge pixels to sub-pixel points and the even spread
 * (points.c).
 *
 * Sub-pixel: a straight edge blurred by a Gaussian (an erf profile) is
 * rendered at a known fractional position and orientation; every point the
 * stage makes must lie on the line (within 0.2 px) with its angle along the
 * gradient.  Spread: on constructed point sets whose best per cell and whose
 * survivors are known without knowing the pitch.
 * Some tests reproduce defects found while writing them (now fixed). */
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
#include "stages/compact.h"
#include "stages/points.h"
#include "test_util.h"

/* Angle difference wrapped to [0, pi]. */
static double angle_diff(double a, double b)
{
    double d = fmod(fabs(a - b), 2 * GM_PI);
    return d > GM_PI ? 2 * GM_PI - d : d;
}

/* A w x h image of the half-plane n.(p - c) > 0 bright (hi) and dark (lo)
 * behind, the step blurred by a Gaussian of sigma px:
 * I = lo + (hi - lo) * Phi(n.(p - c) / sigma), rounded. */
static uint8_t *render_edge(int w, int h, double cx, double cy, double theta, double sigma,
                            int lo, int hi)
{
    uint8_t *im = xmalloc((size_t)w * h, 1);
    double nx = cos(theta), ny = sin(theta);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double d = nx * (x - cx) + ny * (y - cy);
            double v = lo + (hi - lo) * 0.5 * (1 + erf(d / (sigma * sqrt(2.0))));
            im[(size_t)y * w + x] = (uint8_t)lrint(v);
        }
    return im;
}

/* The edge stage, compaction and the sub-pixel points of a w x h image. */
static void points_of(const uint8_t *im, int w, int h, gm_edges *e, gm_points *pts)
{
    gm_view v = {im, w, h, w};
    EXPECT_EQ(gm_edges_cpu(v, 1 << 20, e), GM_OK);
    uint32_t *idx = xmalloc((size_t)w * h, sizeof *idx);
    uint32_t n = gm_compact_flags_cpu(e->edge, (uint32_t)(w * h), idx);
    EXPECT_EQ(gm_edge_points_cpu(e, idx, n, pts), GM_OK);
    EXPECT_EQ(pts->n, n);
    /* every point: near its pixel, the pixel's gradient angle and magnitude */
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = idx[k];
        gm_point p = pts->p[k];
        EXPECT(fabsf(p.x - (float)(i % (uint32_t)w)) <= 0.5f);
        EXPECT(fabsf(p.y - (float)(i / (uint32_t)w)) <= 0.5f);
        EXPECT_NEAR(p.angle, atan2((double)e->gy[i], (double)e->gx[i]), 1e-5);
        EXPECT_NEAR(p.w, sqrt((double)e->mag2[i]), 1e-2);
        EXPECT(p.angle > -GM_PI - 1e-6 && p.angle <= GM_PI + 1e-6);
    }
    free(idx);
}

/* A vertical step at x = 20.3 (bright on the right): points within 0.2 px of
 * x = 20.3 on every row, angle exactly 0 (gy = 0); mirrored: angle pi. */
START_TEST(test_subpixel_vertical)
{
    static const double pos[] = {20.0, 20.3, 20.5, 20.75, 21.1};
    for (size_t t = 0; t < sizeof pos / sizeof *pos; t++) {
        for (int flip = 0; flip < 2; flip++) {
            int w = 41, h = 21;
            uint8_t *im = render_edge(w, h, pos[t], 0, flip ? GM_PI : 0, 1.0, 40, 200);
            gm_edges e;
            gm_points pts;
            points_of(im, w, h, &e, &pts);
            EXPECT_EQ(pts.n, (uint32_t)(h - 4)); /* one per row inside the margin */
            for (uint32_t k = 0; k < pts.n; k++) {
                EXPECT_NEAR(pts.p[k].x, pos[t], 0.2);
                EXPECT_EQ(pts.p[k].y, floorf(pts.p[k].y)); /* no y shift for dir 0 */
                EXPECT_NEAR(pts.p[k].angle, flip ? GM_PI : 0.0, 1e-6);
            }
            free(pts.p);
            gm_edges_free(&e);
            free(im);
        }
    }
}
END_TEST

/* A horizontal step at y = 15.6, bright below: angle pi/2, y within 0.2. */
START_TEST(test_subpixel_horizontal)
{
    int w = 25, h = 33;
    uint8_t *im = render_edge(w, h, 0, 15.6, GM_PI / 2, 1.2, 10, 240);
    gm_edges e;
    gm_points pts;
    points_of(im, w, h, &e, &pts);
    EXPECT_EQ(pts.n, (uint32_t)(w - 4));
    for (uint32_t k = 0; k < pts.n; k++) {
        EXPECT_NEAR(pts.p[k].y, 15.6, 0.2);
        EXPECT_NEAR(pts.p[k].angle, GM_PI / 2, 1e-6);
    }
    free(pts.p);
    gm_edges_free(&e);
    free(im);
}
END_TEST

/* Oblique edges, including the diagonal sectors: each point within 0.2 px
 * of the line (perpendicular distance), angle within 3 degrees of the
 * normal, and points all along the line. */
START_TEST(test_subpixel_oblique)
{
    rng_state = 0x5B9;
    for (int t = 0; t < 24; t++) {
        double theta = 2 * GM_PI * t / 24 + 0.05 * rng_unit();
        int w = 48, h = 48;
        double cx = 23.5 + rng_unit(), cy = 23.5 + rng_unit();
        uint8_t *im = render_edge(w, h, cx, cy, theta, 1.0, 50, 210);
        gm_edges e;
        gm_points pts;
        points_of(im, w, h, &e, &pts);
        EXPECT(pts.n >= 30);
        double nx = cos(theta), ny = sin(theta), tmin = 1e9, tmax = -1e9;
        for (uint32_t k = 0; k < pts.n; k++) {
            gm_point p = pts.p[k];
            double d = nx * (p.x - cx) + ny * (p.y - cy);
            if (fabs(d) > 0.2)
                ck_abort_msg("theta %.3f: point (%.3f, %.3f) is %.3f px off the line", theta,
                             p.x, p.y, d);
            if (angle_diff(p.angle, theta) > 3 * GM_PI / 180)
                ck_abort_msg("theta %.3f: angle %.4f", theta, p.angle);
            double s = -ny * (p.x - cx) + nx * (p.y - cy);
            tmin = fmin(tmin, s);
            tmax = fmax(tmax, s);
        }
        EXPECT(tmax - tmin > 30); /* covers the line, not one spot */
        free(pts.p);
        gm_edges_free(&e);
        free(im);
    }
}
END_TEST

START_TEST(test_edge_points_empty)
{
    uint8_t im[100];
    memset(im, 9, sizeof im);
    gm_edges e;
    gm_points pts;
    EXPECT_EQ(gm_edges_cpu((gm_view){im, 10, 10, 10}, 100, &e), GM_OK);
    EXPECT_EQ(gm_edge_points_cpu(&e, NULL, 0, &pts), GM_OK);
    EXPECT_EQ(pts.n, 0);
    ck_assert_ptr_nonnull(pts.p); /* allocated, freeable */
    free(pts.p);
    gm_edges_free(&e);
}
END_TEST

/* ---- spread --------------------------------------------------------------- */

static int same_point(gm_point a, gm_point b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Every output point is one of the input points, none twice. */
static void check_subset(const gm_points *in, const gm_points *out)
{
    char *used = xmalloc(in->n, 1);
    memset(used, 0, in->n);
    for (uint32_t k = 0; k < out->n; k++) {
        uint32_t i = 0;
        while (i < in->n && (used[i] || !same_point(in->p[i], out->p[k])))
            i++;
        if (i == in->n)
            ck_abort_msg("output point %u (%.2f, %.2f) is not an unused input point", k,
                         out->p[k].x, out->p[k].y);
        used[i] = 1;
    }
    free(used);
}

static gm_points random_points(uint32_t n, int w, int h)
{
    gm_points p = {xmalloc(n, sizeof(gm_point)), n};
    for (uint32_t i = 0; i < n; i++)
        p.p[i] = (gm_point){(float)(rng_unit() * (w - 1)), (float)(rng_unit() * (h - 1)),
                            (float)((rng_unit() * 2 - 1) * GM_PI), (float)(1 + rng_unit() * 100)};
    return p;
}

/* At most target, a subset; target >= n keeps everything in order. */
START_TEST(test_spread_bound_subset)
{
    rng_state = 0x59EAD;
    static const uint32_t targets[] = {1, 2, 10, 100, 499, 500, 501, 2000};
    gm_points in = random_points(500, 320, 240);
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        gm_points out;
        EXPECT_EQ(gm_points_spread_cpu(&in, 320, 240, targets[t], &out), GM_OK);
        EXPECT(out.n <= targets[t]);
        if (targets[t] >= in.n) {
            EXPECT_EQ(out.n, in.n);
            EXPECT(memcmp(out.p, in.p, in.n * sizeof *in.p) == 0);
        } else {
            EXPECT(out.n >= targets[t] / 3); /* actually spreads, not drops */
            check_subset(&in, &out);
        }
        free(out.p);
    }
    gm_points out;
    EXPECT_EQ(gm_points_spread_cpu(&in, 320, 240, 0, &out), GM_OK);
    EXPECT_EQ(out.n, 0);
    free(out.p);
    free(in.p);
    /* empty input (p valid but unused; see the report about p == NULL) */
    gm_point dummy = {0, 0, 0, 0};
    gm_points none = {&dummy, 0};
    EXPECT_EQ(gm_points_spread_cpu(&none, 320, 240, 10, &out), GM_OK);
    EXPECT_EQ(out.n, 0);
    free(out.p);
}
END_TEST

/* An empty point set with p == NULL (what a zero-initialized gm_points is):
 * points.c calls memcpy(out->p, NULL, 0), undefined behaviour that UBSan
 * reports ("null pointer passed as argument 2"). */
START_TEST(test_spread_null_empty)
{
    gm_points none = {NULL, 0}, out;
    EXPECT_EQ(gm_points_spread_cpu(&none, 320, 240, 10, &out), GM_OK);
    EXPECT_EQ(out.n, 0);
    free(out.p);
}
END_TEST

/* Strongest per cell: every location holds two points at the same
 * coordinates (so in the same cell whatever the pitch) with different
 * weights; the weaker one never survives while its twin is there. */
START_TEST(test_spread_strongest)
{
    rng_state = 0x5770;
    uint32_t nloc = 400;
    gm_points in = {xmalloc(2 * nloc, sizeof(gm_point)), 2 * nloc};
    for (uint32_t i = 0; i < nloc; i++) {
        gm_point p = {(float)(rng_unit() * 199), (float)(rng_unit() * 149), 0.5f,
                      (float)(1 + rng_unit() * 50)};
        gm_point q = p;
        q.w = p.w + 1 + (float)rng_unit() * 10;
        q.angle = -0.5f; /* tells the twins apart */
        int strong_first = (int)(rng_next() & 1);
        in.p[2 * i + (strong_first ? 0 : 1)] = q;
        in.p[2 * i + (strong_first ? 1 : 0)] = p;
    }
    static const uint32_t targets[] = {5, 50, 200, 399};
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        gm_points out;
        EXPECT_EQ(gm_points_spread_cpu(&in, 200, 150, targets[t], &out), GM_OK);
        EXPECT(out.n <= targets[t] && out.n > 0);
        check_subset(&in, &out);
        for (uint32_t k = 0; k < out.n; k++)
            if (out.p[k].angle != -0.5f)
                ck_abort_msg("target %u: a weaker twin (%.2f, %.2f) was kept", targets[t],
                             out.p[k].x, out.p[k].y);
        free(out.p);
    }
    free(in.p);
}
END_TEST

/* A dense cluster (2000 points in 10 x 10 px) plus 20 isolated points over
 * a 400 x 400 image: the isolated points, each alone in its cell, survive;
 * the cluster does not fill the output. */
START_TEST(test_spread_sparse_survive)
{
    rng_state = 0xC1u;
    uint32_t nc = 2000, ns = 20;
    gm_points in = {xmalloc(nc + ns, sizeof(gm_point)), nc + ns};
    for (uint32_t i = 0; i < nc; i++)
        in.p[i] = (gm_point){(float)(30 + rng_unit() * 10), (float)(30 + rng_unit() * 10), 0,
                             (float)(100 + rng_unit() * 100)}; /* strong */
    for (uint32_t i = 0; i < ns; i++) /* a 5 x 4 lattice, pitch 80, far from the cluster */
        in.p[nc + i] = (gm_point){(float)(70 + 80 * (i % 5) + rng_unit()),
                                  (float)(80 + 80 * (i / 5) + rng_unit()), 1.0f,
                                  (float)(1 + rng_unit())}; /* weak */
    static const uint32_t targets[] = {40, 50, 100};
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        gm_points out;
        EXPECT_EQ(gm_points_spread_cpu(&in, 400, 400, targets[t], &out), GM_OK);
        EXPECT(out.n <= targets[t]);
        check_subset(&in, &out);
        uint32_t sparse = 0;
        for (uint32_t k = 0; k < out.n; k++)
            sparse += out.p[k].angle == 1.0f;
        EXPECT_EQ(sparse, ns);
        EXPECT(out.n - sparse <= targets[t] - ns);
        free(out.p);
    }
    free(in.p);
}
END_TEST

/* A w x h image with edges everywhere: a product of two sines. */
static uint8_t *wave_image(int w, int h)
{
    uint8_t *im = xmalloc((size_t)w * h, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            im[y * w + x] = (uint8_t)(128 + 100 * sin(x * 0.31) * cos(y * 0.23));
    return im;
}

/* On a real edge image: the spread of the edge points keeps at most target,
 * and cover the image (every quarter of an image with edges everywhere keeps
 * some). */
START_TEST(test_spread_edges_cover)
{
    int w = 160, h = 120;
    uint8_t *im = wave_image(w, h);
    gm_edges e;
    gm_points pts, out;
    points_of(im, w, h, &e, &pts);
    EXPECT(pts.n > 400);
    EXPECT_EQ(gm_points_spread_cpu(&pts, w, h, 100, &out), GM_OK);
    EXPECT(out.n <= 100 && out.n >= 50);
    int quad[4] = {0};
    for (uint32_t k = 0; k < out.n; k++)
        quad[(out.p[k].x >= w / 2) + 2 * (out.p[k].y >= h / 2)]++;
    for (int q = 0; q < 4; q++)
        EXPECT(quad[q] >= 8);
    free(out.p);
    free(pts.p);
    gm_edges_free(&e);
    free(im);
}
END_TEST

/* The spread as it was written first (one scalar loop a pass, the division
 * and the marking together; a pass again for the final pitch and for the
 * best points): the reference the vectorized passes must equal byte for
 * byte (vid.stab's reference-vs-fast tests). */
static uint32_t ref_count_cells(const gm_points *pts, int w, int h, float c, uint32_t *cell,
                                size_t ncell_max)
{
    int gw = (int)(w / c) + 1, gh = (int)(h / c) + 1;
    size_t nc = (size_t)gw * gh;
    if (nc > ncell_max)
        return UINT32_MAX;
    memset(cell, 0, nc * sizeof *cell);
    uint32_t occ = 0;
    for (uint32_t k = 0; k < pts->n; k++) {
        size_t ci = (size_t)(int)(pts->p[k].y / c) * gw + (size_t)(int)(pts->p[k].x / c);
        occ += cell[ci] == 0;
        cell[ci] = 1;
    }
    return occ;
}

static void ref_spread(const gm_points *pts, int w, int h, uint32_t target, gm_points *out)
{
    out->n = 0;
    out->p = xmalloc(target ? target : 1, sizeof *out->p);
    if (target == 0)
        return;
    if (pts->n <= target) {
        if (pts->n)
            memcpy(out->p, pts->p, pts->n * sizeof *pts->p);
        out->n = pts->n;
        return;
    }
    size_t ncell_max = (size_t)w * h + 1;
    uint32_t *cell = xmalloc(ncell_max, sizeof *cell);
    float c = sqrtf((float)w * h / target);
    if (c < 1.0f)
        c = 1.0f;
    for (int it = 0; it < 6; it++) {
        uint32_t occ = ref_count_cells(pts, w, h, c, cell, ncell_max);
        if (occ <= target && occ * 10 >= target * 9)
            break;
        c *= (float)occ / target;
        if (c < 1.0f)
            c = 1.0f;
    }
    while (ref_count_cells(pts, w, h, c, cell, ncell_max) > target)
        c *= 1.05f;
    int gw = (int)(w / c) + 1, gh = (int)(h / c) + 1;
    size_t nc = (size_t)gw * gh;
    memset(cell, 0, nc * sizeof *cell);
    for (uint32_t k = 0; k < pts->n; k++) {
        size_t ci = (size_t)(int)(pts->p[k].y / c) * gw + (size_t)(int)(pts->p[k].x / c);
        if (cell[ci] == 0 || pts->p[cell[ci] - 1].w < pts->p[k].w)
            cell[ci] = k + 1;
    }
    for (size_t ci = 0; ci < nc && out->n < target; ci++)
        if (cell[ci])
            out->p[out->n++] = pts->p[cell[ci] - 1];
    free(cell);
}

static void expect_spread_as_reference(const gm_points *in, int w, int h, uint32_t target)
{
    gm_points a, b;
    ref_spread(in, w, h, target, &a);
    EXPECT_EQ(gm_points_spread_cpu(in, w, h, target, &b), GM_OK);
    if (a.n != b.n || (a.n && memcmp(a.p, b.p, a.n * sizeof *a.p) != 0))
        ck_abort_msg("spread of %u points, %dx%d, target %u: %u points, the reference %u or "
                     "other points", in->n, w, h, target, b.n, a.n);
    free(a.p);
    free(b.p);
}

/* The same points in the same order as the reference: uniform points, a
 * clustered image (few cells taken: the pitch shrinks, to 1 px and its
 * grid's limit), points on cell borders of whole-pixel pitches, equal
 * strengths, tiny and one-row images, and a real edge image. */
START_TEST(test_spread_equals_reference)
{
    rng_state = 77;
    static const int size[][2] = {{320, 240}, {640, 360}, {37, 5}, {1, 900}, {900, 1}, {13, 13}};
    static const uint32_t targets[] = {1, 2, 7, 50, 100, 500, 599, 2000};
    for (size_t s = 0; s < sizeof size / sizeof size[0]; s++) {
        int w = size[s][0], h = size[s][1];
        for (int kind = 0; kind < 4; kind++) {
            uint32_t n = kind == 3 ? 700 : 3000;
            gm_points in = random_points(n, w, h);
            for (uint32_t i = 0; i < n; i++) {
                if (kind == 1) { /* a cluster in one corner */
                    in.p[i].x *= 0.05f;
                    in.p[i].y *= 0.05f;
                } else if (kind == 2) { /* whole pixels, equal strengths */
                    in.p[i].x = floorf(in.p[i].x);
                    in.p[i].y = floorf(in.p[i].y);
                    in.p[i].w = 1.0f;
                } else if (kind == 3 && i % 3 == 0) { /* repeated points */
                    in.p[i] = in.p[i / 2];
                }
            }
            for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++)
                expect_spread_as_reference(&in, w, h, targets[t]);
            free(in.p);
        }
    }
    int w = 160, h = 120;
    uint8_t *im = wave_image(w, h);
    gm_edges e;
    gm_points pts;
    points_of(im, w, h, &e, &pts);
    for (uint32_t t = 1; t < 600; t += 37)
        expect_spread_as_reference(&pts, w, h, t);
    free(pts.p);
    gm_edges_free(&e);
    free(im);
}
END_TEST

static Suite *points_suite(void)
{
    Suite *s = suite_create("points");
    TCase *tc = tcase_create("edge_points");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_subpixel_vertical);
    tcase_add_test(tc, test_subpixel_horizontal);
    tcase_add_test(tc, test_subpixel_oblique);
    tcase_add_test(tc, test_edge_points_empty);
    suite_add_tcase(s, tc);
    TCase *sp = tcase_create("spread");
    tcase_set_timeout(sp, 60);
    tcase_add_test(sp, test_spread_bound_subset);
    tcase_add_test(sp, test_spread_null_empty);
    tcase_add_test(sp, test_spread_strongest);
    tcase_add_test(sp, test_spread_sparse_survive);
    tcase_add_test(sp, test_spread_edges_cover);
    tcase_add_test(sp, test_spread_equals_reference);
    suite_add_tcase(s, sp);
    return s;
}

int main(void)
{
    return run_suite(points_suite());
}
