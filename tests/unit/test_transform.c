/* test_transform.c: transforms (transform.c): the similarity from two point
 * pairs, the weighted point-to-line least-squares fits (similarity, affine,
 * homography), application and the carried edge normal.
 * Some tests reproduce defects found while writing them (now fixed).
 * m = [a -b tx; b a ty] maps query (x, y) to (a x - b y + tx, b x + a y + ty). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "pipeline/backend.h"
#include "stages/chain_core.h"
#include "stages/pair_core.h"
#include "stages/transform.h"
#include "test_util.h"

static double rng_sym(void) { return 2 * rng_unit() - 1; }

static void apply(const double m[6], double x, double y, double *ox, double *oy)
{
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
}

/* Largest distance between the images of the corners of a w x h query
 * under two transforms. */
static double corner_error(const double a[6], const double b[6], double w, double h)
{
    static const double cx[4] = {0, 1, 1, 0}, cy[4] = {0, 0, 1, 1};
    double e = 0;
    for (int i = 0; i < 4; i++) {
        double x1, y1, x2, y2;
        apply(a, cx[i] * w, cy[i] * h, &x1, &y1);
        apply(b, cx[i] * w, cy[i] * h, &x2, &y2);
        e = fmax(e, hypot(x1 - x2, y1 - y2));
    }
    return e;
}

START_TEST(test_from_pairs_exact)
{
    double m[6];
    /* (0,0) -> (10,20), (1,0) -> (10,22): z = 2i, a = 0, b = 2 */
    gm_similarity_from_pairs(0, 0, 1, 0, 10, 20, 10, 22, m);
    EXPECT_EQ(m[0], 0);
    EXPECT_EQ(m[1], -2);
    EXPECT_EQ(m[2], 10);
    EXPECT_EQ(m[3], 2);
    EXPECT_EQ(m[4], 0);
    EXPECT_EQ(m[5], 20);
    /* (1,2) -> (5,5), (3,2) -> (7,7): q diff (2,0), r diff (2,2): a = b = 1,
     * tx = 5 - (1 - 2) = 6, ty = 5 - (1 + 2) = 2 */
    gm_similarity_from_pairs(1, 2, 3, 2, 5, 5, 7, 7, m);
    static const double want[6] = {1, -1, 6, 1, 1, 2};
    for (int i = 0; i < 6; i++)
        EXPECT(m[i] == want[i]);
    /* identity */
    gm_similarity_from_pairs(3, 4, -7, 9, 3, 4, -7, 9, m);
    static const double id[6] = {1, 0, 0, 0, 1, 0};
    for (int i = 0; i < 6; i++)
        EXPECT_NEAR(m[i], id[i], 1e-15);
    /* half-turn and scale 0.5 about the origin: (2,0) -> (-1,0), (0,2) -> (0,-1) */
    gm_similarity_from_pairs(2, 0, 0, 2, -1, 0, 0, -1, m);
    static const double ht[6] = {-0.5, 0, 0, 0, -0.5, 0};
    for (int i = 0; i < 6; i++)
        EXPECT_NEAR(m[i], ht[i], 1e-15);
    /* coincident query points: no rotation or scale to find; the identity
     * part with the translation r0 - q0 */
    gm_similarity_from_pairs(5, 6, 5, 6, 15, 26, 99, 99, m);
    static const double dg[6] = {1, 0, 10, 0, 1, 20};
    for (int i = 0; i < 6; i++)
        EXPECT(m[i] == dg[i]);
}
END_TEST

/* Random similarities: the two pairs are carried exactly (to rounding), and
 * the recovered matrix is the one that made them. */
START_TEST(test_from_pairs_random)
{
    rng_state = 0xF7;
    for (int t = 0; t < 1000; t++) {
        double T[6], m[6];
        make_sim(rng_sym() * 180, exp(rng_sym() * 2), rng_sym() * 1000, rng_sym() * 1000, T);
        double qx0 = rng_sym() * 500, qy0 = rng_sym() * 500, qx1 = rng_sym() * 500, qy1 = rng_sym() * 500;
        if (hypot(qx1 - qx0, qy1 - qy0) < 1)
            continue;
        double rx0, ry0, rx1, ry1;
        apply(T, qx0, qy0, &rx0, &ry0);
        apply(T, qx1, qy1, &rx1, &ry1);
        gm_similarity_from_pairs(qx0, qy0, qx1, qy1, rx0, ry0, rx1, ry1, m);
        for (int i = 0; i < 6; i++)
            EXPECT_NEAR(m[i], T[i], 1e-9 * (1 + fabs(T[i])));
        EXPECT(m[0] == m[4] && m[1] == -m[3]); /* a similarity by construction */
        double x, y;
        gm_transform_apply(m, qx1, qy1, &x, &y);
        EXPECT_NEAR(x, rx1, 1e-8);
        EXPECT_NEAR(y, ry1, 1e-8);
    }
}
END_TEST

START_TEST(test_apply)
{
    const double m[6] = {2, -3, 5, 7, 11, -13};
    double x, y;
    gm_transform_apply(m, 0, 0, &x, &y);
    EXPECT(x == 5 && y == -13);
    gm_transform_apply(m, 1, 0, &x, &y);
    EXPECT(x == 7 && y == -6);
    gm_transform_apply(m, 0, 1, &x, &y);
    EXPECT(x == 2 && y == -2);
    gm_transform_apply(m, -2, 0.5, &x, &y); /* 2*-2 - 1.5 + 5, 7*-2 + 5.5 - 13 */
    EXPECT(x == -0.5 && y == -21.5);
}
END_TEST

/* Point-to-line data of a known similarity T: query points q_i with normals
 * n_i (in the reference frame); r_i = T q_i + s_i t_i + e_i n_i, slid along
 * the edge by s_i (which the fit must not care about much) and off it by e_i. */
typedef struct {
    double *qx, *qy, *rx, *ry, *nx, *ny, *w;
    int n;
} lines;

static lines make_lines(const double T[6], int n, double slide, double noise)
{
    lines L;
    L.n = n;
    double *buf = calloc((size_t)n * 7, sizeof *buf);
    ck_assert_ptr_nonnull(buf);
    L.qx = buf;
    L.qy = buf + n;
    L.rx = buf + 2 * n;
    L.ry = buf + 3 * n;
    L.nx = buf + 4 * n;
    L.ny = buf + 5 * n;
    L.w = buf + 6 * n;
    for (int i = 0; i < n; i++) {
        L.qx[i] = rng_unit() * 300;
        L.qy[i] = rng_unit() * 200;
        double th = rng_unit() * 2 * GM_PI;
        L.nx[i] = cos(th);
        L.ny[i] = sin(th);
        double x, y;
        apply(T, L.qx[i], L.qy[i], &x, &y);
        double s = rng_sym() * slide, e = rng_sym() * noise;
        L.rx[i] = x - s * L.ny[i] + e * L.nx[i];
        L.ry[i] = y + s * L.nx[i] + e * L.ny[i];
        L.w[i] = 1;
    }
    return L;
}

static int fit(const lines *L, double m[6])
{
    return gm_similarity_fit_lines(L->qx, L->qy, L->rx, L->ry, L->nx, L->ny, L->w, L->n, m);
}

/* Exact data: exactly T (to rounding).  The result is a similarity. */
START_TEST(test_fit_exact)
{
    rng_state = 0xF17;
    for (int t = 0; t < 50; t++) {
        double T[6], m[6];
        make_sim(rng_sym() * 180, exp(rng_sym() * 0.7), rng_sym() * 400, rng_sym() * 400, T);
        lines L = make_lines(T, 2 + (int)(rng_next() % 200), 0, 0);
        EXPECT_EQ(fit(&L, m), 0);
        EXPECT(m[0] == m[4] && m[1] == -m[3]);
        EXPECT(corner_error(m, T, 300, 200) < 1e-6);
        free(L.qx);
    }
}
END_TEST

/* Points slid along their edges by up to 1.5 px: the point-to-line part
 * dominates (the point-to-point part is weighted 0.02), so the recovered
 * transform is within 0.1 px at the corners of the query; with the slides
 * counted as point-to-point errors the fit would be off by much more than
 * their mean (which is about 0). */
START_TEST(test_fit_point_to_line)
{
    rng_state = 0x2F17;
    for (int t = 0; t < 20; t++) {
        double T[6], m[6];
        make_sim(rng_sym() * 180, exp(rng_sym() * 0.7), rng_sym() * 400, rng_sym() * 400, T);
        lines L = make_lines(T, 400, 1.5, 0.0);
        EXPECT_EQ(fit(&L, m), 0);
        double e = corner_error(m, T, 300, 200);
        if (!(e < 0.1))
            ck_abort_msg("trial %d: corner error %.4f px", t, e);
        free(L.qx);
    }
    /* two edge directions only, every point slid the same way (+3 px along
     * its edge's tangent): now the point-to-point pull is systematic (the
     * slides of one direction shift the translation along the other), and
     * its weight of 0.02 keeps it at about 0.02 * 3 = 0.06 px */
    double T[6], m[6];
    make_sim(30, 1.2, 50, -20, T);
    lines L = make_lines(T, 400, 0, 0);
    for (int i = 0; i < L.n; i++) {
        double th = (i & 1 ? 30 : 120) * GM_PI / 180;
        L.nx[i] = cos(th);
        L.ny[i] = sin(th);
        apply(T, L.qx[i], L.qy[i], &L.rx[i], &L.ry[i]);
        L.rx[i] += -3 * L.ny[i];
        L.ry[i] += 3 * L.nx[i];
    }
    EXPECT_EQ(fit(&L, m), 0);
    double e = corner_error(m, T, 300, 200);
    if (!(e < 0.1))
        ck_abort_msg("systematic slides: corner error %.4f px", e);
    free(L.qx);
}
END_TEST

/* Outliers: 10% of the points 15 px off their lines.  With weight 1 they
 * pull the fit away; weighted 0.001 (as IRLS would) the fit is back within
 * 0.02 px; weight 0 removes them entirely. */
START_TEST(test_fit_outliers)
{
    rng_state = 0x0071;
    double T[6], m[6];
    make_sim(-35, 0.8, 120, 40, T);
    lines L = make_lines(T, 300, 0.5, 0.0);
    for (int i = 0; i < L.n; i += 10) {
        L.rx[i] += 15 * L.nx[i];
        L.ry[i] += 15 * L.ny[i];
    }
    EXPECT_EQ(fit(&L, m), 0);
    double e_plain = corner_error(m, T, 300, 200);
    EXPECT(e_plain > 0.3);
    for (int i = 0; i < L.n; i += 10)
        L.w[i] = 0.001;
    EXPECT_EQ(fit(&L, m), 0);
    double e_down = corner_error(m, T, 300, 200);
    EXPECT(e_down < 0.05);
    EXPECT(e_down < e_plain / 5);
    for (int i = 0; i < L.n; i += 10)
        L.w[i] = 0;
    EXPECT_EQ(fit(&L, m), 0);
    EXPECT(corner_error(m, T, 300, 200) < 0.05);
    free(L.qx);
}
END_TEST

/* All edges parallel (one straight edge): the point-to-point rows keep the
 * system solvable, and exact data still gives T. */
START_TEST(test_fit_parallel_edges)
{
    double T[6], m[6];
    make_sim(10, 1.5, 5, 6, T);
    lines L = make_lines(T, 50, 0, 0);
    for (int i = 0; i < L.n; i++) {
        L.qx[i] = 10 + i * 3;
        L.qy[i] = 40;
        apply(T, L.qx[i], L.qy[i], &L.rx[i], &L.ry[i]);
        L.nx[i] = -sin(10 * GM_PI / 180);
        L.ny[i] = cos(10 * GM_PI / 180);
    }
    EXPECT_EQ(fit(&L, m), 0);
    EXPECT(corner_error(m, T, 300, 200) < 1e-6);
    free(L.qx);
}
END_TEST

/* Degenerate input: fewer than 2 points, all points at one place, all
 * weights 0: -1 and m untouched. */
START_TEST(test_fit_degenerate)
{
    double T[6];
    make_sim(20, 1, 3, 4, T);
    rng_state = 0xDE6;
    lines L = make_lines(T, 10, 0, 0);
    double m[6], sentinel[6] = {7, 7, 7, 7, 7, 7};
    memcpy(m, sentinel, sizeof m);
    EXPECT_EQ(gm_similarity_fit_lines(L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, 0, m), -1);
    EXPECT_EQ(gm_similarity_fit_lines(L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, 1, m), -1);
    EXPECT(memcmp(m, sentinel, sizeof m) == 0);
    for (int i = 0; i < L.n; i++) { /* one point, repeated */
        L.qx[i] = 12.5;
        L.qy[i] = -3;
        apply(T, L.qx[i], L.qy[i], &L.rx[i], &L.ry[i]);
    }
    EXPECT_EQ(fit(&L, m), -1);
    EXPECT(memcmp(m, sentinel, sizeof m) == 0);
    free(L.qx);
    L = make_lines(T, 10, 0, 0);
    for (int i = 0; i < L.n; i++)
        L.w[i] = 0;
    EXPECT_EQ(fit(&L, m), -1);
    EXPECT(memcmp(m, sentinel, sizeof m) == 0);
    free(L.qx);
}
END_TEST

/* ---- 3x3 transforms and the other models --------------------------------- */

START_TEST(test_h_basics)
{
    const double m[6] = {2, -3, 5, 7, 11, -13};
    double h[9];
    gm_h_from_m(m, h);
    static const double want[9] = {2, -3, 5, 7, 11, -13, 0, 0, 1};
    for (int i = 0; i < 9; i++)
        EXPECT(h[i] == want[i]);
    double x, y;
    gm_h_apply(h, -2, 0.5, &x, &y); /* as the affine map */
    EXPECT(x == -0.5 && y == -21.5);
    /* a perspective division: h = [1 0 0; 0 1 0; 0.01 0 1], (100, 50) ->
     * (100, 50) / 2 */
    const double hp[9] = {1, 0, 0, 0, 1, 0, 0.01, 0, 1};
    gm_h_apply(hp, 100, 50, &x, &y);
    EXPECT(x == 50 && y == 25);
    /* scaling h changes nothing */
    const double hs[9] = {3, 0, 0, 0, 3, 0, 0.03, 0, 3};
    gm_h_apply(hs, 100, 50, &x, &y);
    EXPECT_NEAR(x, 50, 1e-12);
    EXPECT_NEAR(y, 25, 1e-12);
    /* on the horizon (w = 0): finite, no division by zero */
    gm_h_apply(hp, -100, 7, &x, &y);
    EXPECT(isfinite(x) && isfinite(y));
}
END_TEST

/* The normal of an edge carried by h: map two points of the edge line
 * (through p, perpendicular to n) a little apart and take the normal of the
 * mapped segment, on the same side as h's image of p + n. */
static void numeric_normal(const double h[9], double x, double y, double ca, double sa, double *oc,
                           double *os)
{
    const double e = 1e-4;
    double ax, ay, bx, by, px, py, nx, ny;
    gm_h_apply(h, x - e * sa, y + e * ca, &ax, &ay);
    gm_h_apply(h, x + e * sa, y - e * ca, &bx, &by);
    gm_h_apply(h, x, y, &px, &py);
    gm_h_apply(h, x + e * ca, y + e * sa, &nx, &ny);
    double tx = bx - ax, ty = by - ay, l = hypot(tx, ty);
    double cx = -ty / l, cy = tx / l;
    if (cx * (nx - px) + cy * (ny - py) < 0)
        cx = -cx, cy = -cy;
    *oc = cx;
    *os = cy;
}

START_TEST(test_h_normal)
{
    rng_state = 0x40F;
    static const double hs[][9] = {
        {1, 0, 0, 0, 1, 0, 0, 0, 1},                       /* identity */
        {0.8, -0.6, 10, 0.6, 0.8, -4, 0, 0, 1},            /* rotation */
        {2.0, 0.3, 1, -0.1, 0.7, 2, 0, 0, 1},              /* affine, shear */
        {-1.5, 0.2, 3, 0.4, 1.1, 0, 0, 0, 1},              /* affine, mirrored */
        {1.1, 0.05, 5, -0.02, 0.95, 8, 4e-4, -2e-4, 1},    /* homography */
    };
    for (size_t k = 0; k < sizeof hs / sizeof *hs; k++)
        for (int t = 0; t < 200; t++) {
            double x = rng_unit() * 300, y = rng_unit() * 300, th = rng_sym() * GM_PI;
            float oc, os;
            gm_h_normal(hs[k], x, y, (float)cos(th), (float)sin(th), &oc, &os);
            double nc, ns;
            numeric_normal(hs[k], x, y, cos(th), sin(th), &nc, &ns);
            EXPECT_NEAR(hypot(oc, os), 1, 1e-5);
            if (!(fabs(oc - nc) < 1e-4 && fabs(os - ns) < 1e-4))
                ck_abort_msg("h %zu at (%.1f, %.1f) angle %.3f: normal (%.5f, %.5f), expected "
                             "(%.5f, %.5f)", k, x, y, th, oc, os, nc, ns);
        }
    /* a similarity turns the normal by its angle */
    double m[6], h[9];
    make_sim(30, 2.5, 1, 2, m);
    gm_h_from_m(m, h);
    float oc, os;
    gm_h_normal(h, 10, 20, 1, 0, &oc, &os);
    EXPECT_NEAR(oc, cos(30 * GM_PI / 180), 1e-6);
    EXPECT_NEAR(os, sin(30 * GM_PI / 180), 1e-6);
}
END_TEST

/* Point-to-line data (as make_lines) of a general 3x3 h. */
static lines make_lines_h(const double H[9], int n)
{
    double id[6] = {1, 0, 0, 0, 1, 0};
    lines L = make_lines(id, n, 0, 0);
    for (int i = 0; i < n; i++)
        gm_h_apply(H, L.qx[i], L.qy[i], &L.rx[i], &L.ry[i]);
    return L;
}

static double h_corner_error(const double a[9], const double b[9], double w, double h)
{
    static const double cx[4] = {0, 1, 1, 0}, cy[4] = {0, 0, 1, 1};
    double e = 0;
    for (int i = 0; i < 4; i++) {
        double x1, y1, x2, y2;
        gm_h_apply(a, cx[i] * w, cy[i] * h, &x1, &y1);
        gm_h_apply(b, cx[i] * w, cy[i] * h, &x2, &y2);
        e = fmax(e, hypot(x1 - x2, y1 - y2));
    }
    return e;
}

/* The similarity model is gm_similarity_fit_lines as a 3x3; the affine
 * model recovers an affine map exactly in one solve; the homography model
 * converges by Gauss-Newton steps from a nearby start. */
START_TEST(test_model_fit)
{
    rng_state = 0x30DE1;
    const double id9[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    /* similarity */
    double T[6], m[6], h[9], hm[9];
    make_sim(25, 1.3, 7, -9, T);
    lines L = make_lines(T, 100, 1.0, 0.2);
    EXPECT_EQ(fit(&L, m), 0);
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_SIMILARITY, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n,
                                 id9, h), 0);
    gm_h_from_m(m, hm);
    for (int i = 0; i < 9; i++)
        EXPECT(h[i] == hm[i]);
    free(L.qx);
    /* affine, exact data: exact */
    const double A[9] = {1.2, 0.3, -15, -0.2, 0.9, 22, 0, 0, 1};
    L = make_lines_h(A, 150);
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_AFFINE, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n, id9,
                                 h), 0);
    EXPECT(h[6] == 0 && h[7] == 0 && h[8] == 1);
    EXPECT(h_corner_error(h, A, 300, 200) < 1e-6);
    /* affine, points slid along their edges: still close */
    for (int i = 0; i < L.n; i++) {
        double s = rng_sym();
        L.rx[i] -= s * L.ny[i];
        L.ry[i] += s * L.nx[i];
    }
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_AFFINE, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n, id9,
                                 h), 0);
    EXPECT(h_corner_error(h, A, 300, 200) < 0.1);
    free(L.qx);
    /* homography: from the affine part of H, Gauss-Newton steps converge */
    const double H[9] = {1.05, 0.08, 12, -0.04, 0.97, -6, 3e-4, -2e-4, 1};
    L = make_lines_h(H, 200);
    double cur[9] = {1.05, 0.08, 12, -0.04, 0.97, -6, 0, 0, 1}, next[9];
    double e0 = h_corner_error(cur, H, 300, 200);
    EXPECT(e0 > 5);
    for (int it = 0; it < 8; it++) {
        EXPECT_EQ(gm_model_fit_lines(GM_MODEL_HOMOGRAPHY, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n,
                                     cur, next), 0);
        EXPECT(next[8] == 1);
        memcpy(cur, next, sizeof cur);
    }
    double e = h_corner_error(cur, H, 300, 200);
    if (!(e < 1e-4))
        ck_abort_msg("homography: corner error %.6f px after 8 steps (%.3f before)", e, e0);
    /* at the solution a step stays there */
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_HOMOGRAPHY, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n, H,
                                 next), 0);
    EXPECT(h_corner_error(next, H, 300, 200) < 1e-6);
    /* too few points with weight for the model: -1 */
    for (int i = 5; i < L.n; i++)
        L.w[i] = 0;
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_AFFINE, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n, id9,
                                 h), -1);
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_HOMOGRAPHY, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n, H,
                                 h), -1);
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_AFFINE, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, 0, id9, h),
              -1);
    free(L.qx);
}
END_TEST

/* h0 and any multiple of it are the same homography, so one step from
 * 2 * h0 should land where one step from h0 does; the Jacobian is taken in
 * the units of the unnormalized h0 but the step is added to h0 / h0[8]. */
START_TEST(test_model_fit_scaled_start)
{
    rng_state = 0x5CA1E;
    const double H[9] = {1.05, 0.08, 12, -0.04, 0.97, -6, 3e-4, -2e-4, 1};
    lines L = make_lines_h(H, 200);
    double h0[9] = {1.05, 0.08, 12, -0.04, 0.97, -6, 0, 0, 1}, h0x2[9], a[9], b[9];
    for (int i = 0; i < 9; i++)
        h0x2[i] = 2 * h0[i];
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_HOMOGRAPHY, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n, h0, a),
              0);
    EXPECT_EQ(gm_model_fit_lines(GM_MODEL_HOMOGRAPHY, L.qx, L.qy, L.rx, L.ry, L.nx, L.ny, L.w, L.n, h0x2,
                                 b), 0);
    double e = h_corner_error(a, b, 300, 200);
    if (!(e < 1e-6))
        ck_abort_msg("one step from h0: %.4f px from H; from 2 h0: %.4f px from H (%.4f apart)",
                     h_corner_error(a, H, 300, 200), h_corner_error(b, H, 300, 200), e);
    free(L.qx);
}
END_TEST

/* gm_h_invert: h times its inverse is the identity up to scale; a
 * singular h is refused. */
START_TEST(test_h_invert)
{
    const double h[9] = {1.3, -0.2, 40, 0.25, 0.9, -12, 2e-4, -1e-4, 1};
    double hi[9], p[9] = {0};
    ck_assert_int_eq(gm_h_invert(h, hi), 0);
    ck_assert(fabs(hi[8] - 1) < 1e-15);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                p[3 * i + j] += h[3 * i + k] * hi[3 * k + j];
    for (int i = 0; i < 9; i++)
        ck_assert_msg(fabs(p[i] / p[8] - (i % 4 == 0)) < 1e-12, "entry %d: %g", i, p[i] / p[8]);
    const double sing[9] = {1, 2, 3, 2, 4, 6, 0, 0, 1};
    ck_assert_int_eq(gm_h_invert(sing, hi), -1);
}
END_TEST

/* gm_overlap on cases whose areas are known: a query inside the reference,
 * the reference inside a larger query, half a query off the reference's
 * side, a rotated square over a corner, no overlap, and views whose line
 * at infinity crosses the query. */
START_TEST(test_overlap)
{
    double s[2];
    const double inside[9] = {1, 0, 10, 0, 1, 20, 0, 0, 1};
    gm_overlap(inside, 50, 40, 200, 100, s);
    ck_assert(fabs(s[0] - 1) < 1e-12 && fabs(s[1] - 2000.0 / 20000) < 1e-12);
    /* the reference (100 x 50) is the query's region [40, 90] x [30, 55]
     * at half scale: query pixels -> reference pixels doubles */
    const double around[9] = {2, 0, -80, 0, 2, -60, 0, 0, 1};
    gm_overlap(around, 400, 300, 100, 50, s);
    ck_assert(fabs(s[0] - 50.0 * 25 / (400 * 300)) < 1e-12 && fabs(s[1] - 1) < 1e-12);
    /* half the query past the reference's right side */
    const double half[9] = {1, 0, 150, 0, 1, 0, 0, 0, 1};
    gm_overlap(half, 100, 100, 200, 100, s);
    ck_assert(fabs(s[0] - 0.5) < 1e-12 && fabs(s[1] - 0.25) < 1e-12);
    /* a 100 x 100 query turned 45 degrees about the reference's corner
     * (0, 0): the quarter of the turned square in x, y >= 0 */
    const double c = sqrt(0.5);
    const double turned[9] = {c, -c, 0, c, c, -50 * sqrt(2.0), 0, 0, 1};
    gm_overlap(turned, 100, 100, 1000, 1000, s);
    /* the square's centre at (0, 0): a quarter of its area on the reference */
    ck_assert_msg(fabs(s[0] - 0.25) < 1e-9, "turned: %g", s[0]);
    ck_assert(fabs(s[1] - 2500.0 / 1e6) < 1e-9);
    const double off[9] = {1, 0, 500, 0, 1, 0, 0, 0, 1};
    gm_overlap(off, 100, 100, 200, 100, s);
    ck_assert(s[0] == 0 && s[1] == 0);
    /* w = 1 - 0.02 x: 0 at x = 50.  The side x < 50 maps onto the
     * reference where x <= 40 and y <= 200 - 4 x: the query's polygon (0,
     * 0) (40, 0) (40, 40) (25, 100) (0, 100), area 3550, carried to (0, 0)
     * (200, 0) (200, 200) (50, 200) (0, 100), area 37500; the side x > 50
     * maps to x < 0, off the reference */
    const double horizon[9] = {1, 0, 0, 0, 1, 0, -0.02, 0, 1};
    gm_overlap(horizon, 100, 100, 200, 200, s);
    ck_assert_msg(fabs(s[0] - 0.355) < 1e-9 && fabs(s[1] - 0.9375) < 1e-9, "horizon: %g %g", s[0],
                  s[1]);
    /* the same map with the sign of every entry turned: the same homography */
    double neg[9];
    for (int i = 0; i < 9; i++)
        neg[i] = -horizon[i];
    gm_overlap(neg, 100, 100, 200, 200, s);
    ck_assert_msg(fabs(s[0] - 0.355) < 1e-9 && fabs(s[1] - 0.9375) < 1e-9, "-horizon: %g %g", s[0],
                  s[1]);
    /* a tilted poster (the reference, 100 x 50) inside a wide frame (the
     * query, 400 x 100): g carries the poster into the frame (corners
     * (250, 25) (285.7, 17.9) (285.7, 53.6) (250, 75)), and the line at
     * infinity of h = g^-1 is the frame's x = 375 */
    const double g[9] = {1.5, 0, 250, 0, 1.0, 25, 0.004, 0, 1};
    double hg[9];
    ck_assert_int_eq(gm_h_invert(g, hg), 0);
    gm_overlap(hg, 400, 100, 100, 50, s);
    /* the whole poster is in the frame, and the frame's share is the
     * poster's quadrilateral */
    ck_assert_msg(fabs(s[1] - 1) < 1e-9, "poster: %g", s[1]);
    double qa = 0, px[4] = {0, 100, 100, 0}, py[4] = {0, 0, 50, 50}, gx[4], gy[4];
    for (int i = 0; i < 4; i++) {
        double w = g[6] * px[i] + g[7] * py[i] + g[8];
        gx[i] = (g[0] * px[i] + g[1] * py[i] + g[2]) / w;
        gy[i] = (g[3] * px[i] + g[4] * py[i] + g[5]) / w;
    }
    for (int i = 0; i < 4; i++)
        qa += gx[i] * gy[(i + 1) % 4] - gx[(i + 1) % 4] * gy[i];
    ck_assert_msg(fabs(s[0] - fabs(qa) / 2 / 40000) < 1e-9, "poster: %g", s[0]);
    /* the line at infinity in the query: across it (horizon, hg), not in it
     * (inside, whatever the sign of the matrix) */
    ck_assert_int_eq(gm_h_horizon_crosses(horizon, 100, 100), 1);
    ck_assert_int_eq(gm_h_horizon_crosses(neg, 100, 100), 1);
    ck_assert_int_eq(gm_h_horizon_crosses(hg, 400, 100), 1);
    ck_assert_int_eq(gm_h_horizon_crosses(hg, 300, 100), 0); /* the frame ends before x = 375 */
    double ineg[9];
    for (int i = 0; i < 9; i++)
        ineg[i] = -inside[i];
    ck_assert_int_eq(gm_h_horizon_crosses(inside, 50, 40), 0);
    ck_assert_int_eq(gm_h_horizon_crosses(ineg, 50, 40), 0);
}
END_TEST

/* pair_core.h: the conversions between working frames and source pixels
 * are inverses; a candidate's similarity carries its query basis onto its
 * reference basis. */
START_TEST(test_pair_similarity)
{
    rng_state = 0x9a;
    for (int t = 0; t < 200; t++) {
        int fq = 1 + (int)(rng_next() % 4), fr = 1 + (int)(rng_next() % 8);
        double mw[6], m[6], back[6];
        make_sim(360 * rng_unit(), 0.3 + 2 * rng_unit(), 500 * rng_sym(), 500 * rng_sym(), mw);
        gm_work_to_source(mw, fq, fr, m);
        gm_source_to_work(m, fq, fr, back);
        for (int i = 0; i < 6; i++)
            ck_assert_double_eq_tol(back[i], mw[i], 1e-9 * (1 + fabs(mw[i])));
    }
    /* query level 2 against reference level 4, verified on a map of 2,
     * level 0 of 1: the basis (10, 20)-(30, 20) onto (5, 5)-(5, 15) */
    gm_pair_scales s = {2, 4, 1, 2, 1};
    double ms[6], m0[6];
    gm_pair_similarity(10, 20, 30, 20, 5, 5, 5, 15, s, ms, m0);
    /* the query's source pixels of the basis: 2 X + 0.5; the reference's: 4 X + 1.5 */
    double x, y;
    apply(m0, 2 * 10 + 0.5, 2 * 20 + 0.5, &x, &y);
    ck_assert_double_eq_tol(x, 4 * 5 + 1.5, 1e-9);
    ck_assert_double_eq_tol(y, 4 * 5 + 1.5, 1e-9);
    apply(ms, 2 * 30 + 0.5, 2 * 20 + 0.5, &x, &y); /* the map's pixels: (source - 0.5) / 2 */
    ck_assert_double_eq_tol(x, (4 * 5 + 1.5 - 0.5) / 2, 1e-9);
    ck_assert_double_eq_tol(y, (4 * 15 + 1.5 - 0.5) / 2, 1e-9);
}
END_TEST

/* A float rotation that another library's atan2 could round the other
 * way is in doubt: within a few ulps of a double of a midpoint between two
 * floats, or not finite; exact values and ordinary ones are not. */
START_TEST(test_pair_rot_doubtful)
{
    ck_assert_int_eq(gm_pair_rot_doubtful(0.0), 0);
    ck_assert_int_eq(gm_pair_rot_doubtful(GM_PI), 0);
    ck_assert_int_eq(gm_pair_rot_doubtful(-GM_PI / 2), 0);
    ck_assert_int_eq(gm_pair_rot_doubtful(NAN), 1);
    ck_assert_int_eq(gm_pair_rot_doubtful(INFINITY), 1);
    float f = 1.2345f;
    double mid = 0.5 * ((double)f + (double)nextafterf(f, 2.0f));
    ck_assert_int_eq(gm_pair_rot_doubtful(mid), 1);
    ck_assert_int_eq(gm_pair_rot_doubtful(nextafter(nextafter(mid, 0), 0)), 1);
    ck_assert_int_eq(gm_pair_rot_doubtful(nextafter(mid, 4)), 1);
    ck_assert_int_eq(gm_pair_rot_doubtful(mid + 64 * (mid * 0x1p-52)), 0);
    ck_assert_int_eq(gm_pair_rot_doubtful(-mid), 1);
    ck_assert_int_eq(gm_pair_rot_doubtful((double)f), 0);
    /* of random angles, few (the band is 2^-26 of a float's step wide on each side) */
    rng_state = 0x77;
    int doubtful = 0;
    for (int t = 0; t < 100000; t++)
        doubtful += gm_pair_rot_doubtful(atan2(rng_sym(), rng_sym()));
    ck_assert_int_le(doubtful, 2);
}
END_TEST

/* gm_pair_pick: by the share of the whole query, the first of equals; the
 * first below the floor ends it (marked taken, as every candidate looked
 * at); a repeat of a remembered transform is passed over; the remembered
 * list grows by the picks while it has room. */
/* ---- a chain of refinements (pipeline/chain.c's rule) ---------------------------- */

/* A refinement that moves each transform's x shift one pixel towards 9
 * (its "optimum" held in h[5] for the test) and scores it by its distance
 * from there: whole = 1 / (1 + |tx - target|).  Each call logged. */
static int g_calls, g_models[16], g_counts[16];
static gm_status step_refine(void *lane, gm_map_at map, const gm_points *q, gm_model model,
                             double *h, int iters, uint32_t n, gm_verify_score *sc)
{
    (void)lane, (void)map, (void)q, (void)iters;
    if (g_calls < 16)
        g_models[g_calls] = (int)model, g_counts[g_calls] = (int)n;
    g_calls++;
    for (uint32_t i = 0; i < n; i++) {
        h[9 * i + 2] += 1;
        memset(&sc[i], 0, sizeof sc[i]);
        sc[i].whole = sc[i].confidence = 1.0 / (1.0 + fabs(h[9 * i + 2] - h[9 * i + 5]));
    }
    return GM_OK;
}
static const gm_backend_ops k_step_be = {.name = "steps", .refine = step_refine};

/* The ladder refines only the flagged, the rounds keep a refinement while
 * it explains more and drop a transform at its first that does not, the
 * rounds end when none is left, a level's step carries every transform
 * first (gm_h_rescale); the CPU's chain (no chain_queue) is this rule. */
START_TEST(test_chain_rule)
{
    /* three transforms at x shift 0, their optima 1, 3 and 9 */
    double h[27];
    gm_verify_score v[3];
    const double target[3] = {1, 3, 9};
    for (int i = 0; i < 3; i++) {
        const double t[9] = {1, 0, 0, 0, 1, target[i], 0, 0, 1};
        memcpy(h + 9 * i, t, sizeof t);
        memset(&v[i], 0, sizeof v[i]);
    }
    static const uint8_t only_first[3] = {1, 0, 0};
    const gm_map_at none = {NULL, NULL};
    const gm_chain_step steps[] = {
        {none, GM_MODEL_SIMILARITY, 6, 0, 1, 1, 1, only_first}, /* x: 1, 0, 0 */
        {none, GM_MODEL_AFFINE, 6, 3, 1, 1, 1, NULL},           /* rounds */
    };
    g_calls = 0;
    EXPECT_EQ(GM_OK, gm_chain_run(&k_step_be, NULL, NULL, steps, 2, h, v, 3));
    /* the ladder: one call, the first alone (x 0 -> 1).  Round 1: x 1 -> 2
     * for the first (worse than its 1.0 at its optimum: it leaves), 0 -> 1
     * for the others (better than no score: kept); round 2: the second
     * 1 -> 2, the third 1 -> 2 (both better); round 3: 2 -> 3 (the second at
     * its optimum) and 2 -> 3 */
    EXPECT_EQ(g_calls, 4);
    EXPECT_EQ(g_models[0], GM_MODEL_SIMILARITY);
    EXPECT_EQ(g_counts[0], 1);
    EXPECT_EQ(g_models[1], GM_MODEL_AFFINE);
    EXPECT_EQ(g_counts[1], 3);
    EXPECT_EQ(g_counts[2], 2);
    EXPECT_EQ(g_counts[3], 2);
    EXPECT(h[2] == 1 && h[9 + 2] == 3 && h[18 + 2] == 3);
    EXPECT(v[0].whole == 1.0 && v[1].whole == 1.0 && v[2].whole == 1.0 / 7);
    /* the rounds end early once every transform has left them */
    for (int i = 0; i < 3; i++) /* each at its optimum: its first round is worse */
        h[9 * i + 2] = target[i], v[i].whole = 1.0;
    g_calls = 0;
    EXPECT_EQ(GM_OK, gm_chain_run(&k_step_be, NULL, NULL, &steps[1], 1, h, v, 3));
    EXPECT_EQ(g_calls, 1); /* one round, nothing better: the rest not run */
    EXPECT(h[2] == 1 && h[9 + 2] == 3 && h[18 + 2] == 9);
    /* a level's step: every transform carried from factor 2 to 1 first */
    double hr[9] = {1.1, 0.1, 5, -0.1, 0.9, 7, 0, 0, 1}, want[9];
    memcpy(want, hr, sizeof want);
    gm_h_rescale(want, 1, 2, 1);
    EXPECT(fabs(want[2] - (2 * 5 + 0.5)) < 1e-9 && fabs(want[0] - 2 * 1.1) < 1e-12);
    const gm_chain_step level = {none, GM_MODEL_SIMILARITY, 0, 0, 1, 2, 1, NULL};
    gm_verify_score vr;
    memset(&vr, 0, sizeof vr);
    g_calls = 0;
    EXPECT_EQ(GM_OK, gm_chain_run(&k_step_be, NULL, NULL, &level, 1, hr, &vr, 1));
    want[2] += 1; /* then refined once */
    EXPECT(memcmp(hr, want, sizeof want) == 0);
    /* what a chain cannot hold */
    EXPECT_EQ(gm_chain_host(&k_step_be, NULL, NULL, steps, GM_CHAIN_STEPS + 1, h, v, 3),
              GM_ERR_INVALID);
    EXPECT_EQ(gm_chain_host(&k_step_be, NULL, NULL, steps, 1, h, v, GM_CHAIN_MAX + 1),
              GM_ERR_INVALID);
}
END_TEST

START_TEST(test_pair_pick)
{
    enum { N = 6 };
    gm_verify_score sc[N];
    double m0[N][6], done[4][6];
    const double conf[N] = {0.5, 0.9, 0.9, 0.05, 0.7, 0.6};
    const double whole[N] = {0.5, 0.8, 0.8, 0.95, 0.7, 0.6};
    for (int c = 0; c < N; c++) {
        sc[c] = (gm_verify_score){100, 100, 50, 1, conf[c], whole[c]};
        make_sim(0, 1, 10.0 * c, 0, m0[c]);
    }
    m0[2][2] = m0[1][2] + 1.0; /* candidate 2 repeats candidate 1 (1 px) */
    int ndone = 1, pick[GM_PAIR_PICKS];
    memcpy(done[0], m0[4], sizeof m0[4]); /* 4 was refined before */
    /* 3 (0.95 of the whole, loose confidence 0.05) comes first and is below
     * the floor: nothing is picked */
    int np = gm_pair_pick(sc, m0, N, 100, 50, 0.1, done, &ndone, 4, pick);
    ck_assert_int_eq(np, 0);
    ck_assert_uint_eq(sc[3].total, UINT32_MAX);
    ck_assert_uint_eq(sc[1].total, 100);
    ck_assert_int_eq(ndone, 1);
    /* without 3: 1, then 2 (its equal, after it) repeats 1, 4 was done: 5, 0 */
    sc[3].whole = 0.0;
    sc[3].total = 100;
    np = gm_pair_pick(sc, m0, N, 100, 50, 0.1, done, &ndone, 3, pick);
    ck_assert_int_eq(np, 3);
    ck_assert_int_eq(pick[0], 1);
    ck_assert_int_eq(pick[1], 5);
    ck_assert_int_eq(pick[2], 0);
    ck_assert_int_eq(ndone, 3); /* 1 and 5; 0 found the list full */
    ck_assert(memcmp(done[1], m0[1], sizeof m0[1]) == 0);
    ck_assert(memcmp(done[2], m0[5], sizeof m0[5]) == 0);
    for (int c = 0; c < N; c++)
        if (c != 3)
            ck_assert_uint_eq(sc[c].total, UINT32_MAX);
    /* the corner distance: the mean over the four corners */
    double a[6], b[6];
    make_sim(0, 1, 0, 0, a);
    make_sim(0, 1, 3, 4, b);
    ck_assert_double_eq(gm_pair_corner_dist(a, b, 100, 50), 5.0);
}
END_TEST

static Suite *transform_suite(void)
{
    Suite *s = suite_create("transform");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_from_pairs_exact);
    tcase_add_test(tc, test_pair_similarity);
    tcase_add_test(tc, test_pair_rot_doubtful);
    tcase_add_test(tc, test_pair_pick);
    tcase_add_test(tc, test_chain_rule);
    tcase_add_test(tc, test_from_pairs_random);
    tcase_add_test(tc, test_apply);
    tcase_add_test(tc, test_fit_exact);
    tcase_add_test(tc, test_fit_point_to_line);
    tcase_add_test(tc, test_fit_outliers);
    tcase_add_test(tc, test_fit_parallel_edges);
    tcase_add_test(tc, test_fit_degenerate);
    tcase_add_test(tc, test_h_basics);
    tcase_add_test(tc, test_h_normal);
    tcase_add_test(tc, test_model_fit);
    tcase_add_test(tc, test_model_fit_scaled_start);
    tcase_add_test(tc, test_h_invert);
    tcase_add_test(tc, test_overlap);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(transform_suite());
}
