/* test_affine.c: three-point bases and affine-invariant keys (affine.c),
 * and the plausibility test of homographies (transform.c).
 *
 * The keys must be the same for a triangle and its points and for their
 * images under any affine map of positive determinant (away from cell
 * borders); triangles must be counter-clockwise, in band, not flat, and the
 * same set as a brute-force enumeration; items must be those of a
 * brute-force loop; a triangle's affine map must carry it exactly; a
 * query's own triangles voted against a table of its affine image must put
 * the corresponding triangle first. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/reduce.h"
#include "stages/affine.h"
#include "stages/transform.h"
#include "test_util.h"

static gm_point P(double x, double y, double angle)
{
    return (gm_point){(float)x, (float)y, (float)angle, 1.0f};
}

static gm_points random_points(uint32_t n, double w, double h)
{
    gm_points p = {xmalloc(n, sizeof(gm_point)), n};
    for (uint32_t i = 0; i < n; i++)
        p.p[i] = P(rng_unit() * w, rng_unit() * h, (rng_unit() * 2 - 1) * GM_PI);
    return p;
}

/* p under the affine map m, its gradient direction mapped by m^-T. */
static gm_point map_point(const double m[6], gm_point p)
{
    double x = m[0] * p.x + m[1] * p.y + m[2], y = m[3] * p.x + m[4] * p.y + m[5];
    double det = m[0] * m[4] - m[1] * m[3];
    double c = cos(p.angle), s = sin(p.angle);
    /* A^-T n = (1/det) [m4 -m3; -m1 m0] n */
    double nx = (m[4] * c - m[3] * s) / det, ny = (-m[1] * c + m[0] * s) / det;
    return P(x, y, atan2(ny, nx));
}

/* Is p's key in frame f far from every cell and bin border (so that
 * rounding cannot move it)? */
static int well_inside(const gm_aframe *f, gm_point p)
{
    double dx = p.x - f->ax, dy = p.y - f->ay;
    double u = (f->i00 * dx + f->i01 * dy - GM_AFF_LO) * GM_AFF_Q;
    double v = (f->i10 * dx + f->i11 * dy - GM_AFF_LO) * GM_AFF_Q;
    double nx = f->m00 * cos(p.angle) + f->m10 * sin(p.angle);
    double ny = f->m01 * cos(p.angle) + f->m11 * sin(p.angle);
    double b = atan2(ny, nx) * GM_AFF_BINS / (2 * GM_PI);
    double fu = u - floor(u), fv = v - floor(v), fb = b - floor(b);
    return fu > 0.02 && fu < 0.98 && fv > 0.02 && fv < 0.98 && fb > 0.02 && fb < 0.98;
}

START_TEST(test_key_affine_invariance)
{
    rng_state = 0xAFF;
    int tested = 0;
    for (int t = 0; t < 200; t++) {
        /* a random affine map of positive determinant: rotation, scales
         * 0.5..2 on two axes, shear, translation */
        double th = rng_unit() * 2 * GM_PI, sx = 0.5 + 1.5 * rng_unit(), sy = 0.5 + 1.5 * rng_unit();
        double sh = rng_unit() - 0.5, c = cos(th), s = sin(th);
        double m[6] = {c * sx, c * sh * sy - s * sy, 100 * rng_unit(),
                       s * sx, s * sh * sy + c * sy, 100 * rng_unit()};
        gm_point a = P(50, 50, 0), b = P(50 + 40 * rng_unit() + 20, 40 + 20 * rng_unit(), 0);
        gm_point cc = P(40 + 20 * rng_unit(), 50 + 40 * rng_unit() + 20, 0);
        gm_aframe f = gm_aframe_of(a, b, cc);
        gm_aframe g = gm_aframe_of(map_point(m, a), map_point(m, b), map_point(m, cc));
        for (int k = 0; k < 50; k++) {
            gm_point p = P(rng_unit() * 200 - 20, rng_unit() * 200 - 20, (rng_unit() * 2 - 1) * GM_PI);
            if (!well_inside(&f, p))
                continue;
            EXPECT_EQ(gm_aframe_key(&f, p), gm_aframe_key(&g, map_point(m, p)));
            tested++;
        }
    }
    EXPECT(tested > 2000);
}
END_TEST

START_TEST(test_key_range)
{
    gm_aframe f = gm_aframe_of(P(0, 0, 0), P(16, 0, 0), P(0, 16, 0));
    /* u = x / 16, v = y / 16; kept for u, v in [-1, 2) */
    EXPECT(gm_aframe_key(&f, P(-15.9, 0, 0)) != GM_KEY_EMPTY);
    EXPECT_EQ(gm_aframe_key(&f, P(-16.1, 0, 0)), GM_KEY_EMPTY);
    EXPECT(gm_aframe_key(&f, P(31.9, 31.9, 0)) != GM_KEY_EMPTY);
    EXPECT_EQ(gm_aframe_key(&f, P(32.1, 0, 0)), GM_KEY_EMPTY);
    EXPECT_EQ(gm_aframe_key(&f, P(0, 32.1, 0)), GM_KEY_EMPTY);
    /* u cell, v cell, bin: (0.5 + 1) * 16 = 24, (0.25 + 1) * 16 = 20, a
     * gradient along +x is along M^T n = 16 (1, 0): bin 0 */
    EXPECT_EQ(gm_aframe_key(&f, P(8.01, 4.01, 0)), 24u | 20u << 6 | 0u << 12);
    EXPECT_EQ(gm_aframe_key(&f, P(8.01, 4.01, GM_PI / 2 + 0.01)), 24u | 20u << 6 | 4u << 12);
    for (int k = 0; k < 1000; k++) {
        uint32_t key = gm_aframe_key(&f, P(rng_unit() * 60 - 20, rng_unit() * 60 - 20,
                                           (rng_unit() * 2 - 1) * GM_PI));
        EXPECT(key == GM_KEY_EMPTY || key < GM_AFF_KEYS);
    }
}
END_TEST

START_TEST(test_tris_select)
{
    rng_state = 0x7415;
    gm_points pts = random_points(150, 400, 300);
    float lmin = 20, lmax = 90, min_sin = 0.5f;
    gm_tris t;
    EXPECT_EQ(gm_tris_select_cpu(&pts, lmin, lmax, min_sin, 1.0, 5, &t), GM_OK);
    /* brute force: every counter-clockwise triangle in band, not flat */
    uint32_t want = 0;
    for (uint32_t a = 0; a < pts.n; a++)
        for (uint32_t b = 0; b < pts.n; b++)
            for (uint32_t c = 0; c < pts.n; c++) {
                if (a == b || a == c || b == c)
                    continue;
                double bx = pts.p[b].x - pts.p[a].x, by = pts.p[b].y - pts.p[a].y;
                double cx = pts.p[c].x - pts.p[a].x, cy = pts.p[c].y - pts.p[a].y;
                double lb = hypot(bx, by), lc = hypot(cx, cy), cr = bx * cy - by * cx;
                if (lb < lmin || lb > lmax || lc < lmin || lc > lmax || cr <= 0 ||
                    cr < min_sin * lb * lc)
                    continue;
                EXPECT(want < t.n);
                EXPECT(t.t[want].a == a && t.t[want].b == b && t.t[want].c == c);
                want++;
            }
    EXPECT_EQ(t.n, want);
    EXPECT(want > 500);
    /* probability: about prob of them, a subset, the same for any thread count */
    gm_tris h;
    EXPECT_EQ(gm_tris_select_cpu(&pts, lmin, lmax, min_sin, 0.25, 5, &h), GM_OK);
    EXPECT(h.n > want / 6 && h.n < want / 3);
    free(h.t);
    free(t.t);
    free(pts.p);
}
END_TEST

START_TEST(test_items_brute_force)
{
    rng_state = 0x1735;
    gm_points pts = random_points(80, 500, 400), cloud = random_points(1500, 500, 400);
    gm_tris t;
    EXPECT_EQ(gm_tris_select_cpu(&pts, 20, 80, 0.5f, 0.2, 9, &t), GM_OK);
    EXPECT(t.n > 50);
    uint32_t *keys, *vals, n;
    EXPECT_EQ(gm_tri_items_cpu(&pts, &t, &cloud, &keys, &vals, &n), GM_OK);
    /* per triangle: the distinct keys of the cloud points away from the vertices */
    uint32_t k = 0;
    uint8_t *seen = xmalloc(GM_AFF_KEYS, 1);
    for (uint32_t d = 0; d < t.n; d++) {
        const gm_point a = pts.p[t.t[d].a], b = pts.p[t.t[d].b], c = pts.p[t.t[d].c];
        gm_aframe f = gm_aframe_of(a, b, c);
        memset(seen, 0, GM_AFF_KEYS);
        uint32_t want = 0;
        for (uint32_t q = 0; q < cloud.n; q++) {
            gm_point p = cloud.p[q];
            if (hypot(p.x - a.x, p.y - a.y) < GM_ENDPOINT_EXCL || hypot(p.x - b.x, p.y - b.y) < GM_ENDPOINT_EXCL ||
                hypot(p.x - c.x, p.y - c.y) < GM_ENDPOINT_EXCL)
                continue;
            uint32_t key = gm_aframe_key(&f, p);
            if (key != GM_KEY_EMPTY && !seen[key])
                seen[key] = 1, want++;
        }
        uint32_t got = 0;
        for (; k < n && vals[k] == d; k++, got++) {
            EXPECT(seen[keys[k]] == 1);
            seen[keys[k]] = 2; /* once each */
        }
        EXPECT_EQ(got, want);
    }
    EXPECT_EQ(k, n);
    free(seen);
    free(keys);
    free(vals);
    free(t.t);
    free(pts.p);
    free(cloud.p);
}
END_TEST

/* The direction bin of (nx, ny) from its angle, in double: the bin's
 * meaning, which gm_aff_bin decides without an arc tangent.  *margin gets
 * the angle's distance to the nearest bin end, in rad. */
static int bin_by_angle(float nx, float ny, double *margin)
{
    double a = atan2((double)ny, (double)nx);
    if (a < 0)
        a += 2 * GM_PI;
    double t = a * (GM_AFF_BINS / (2 * GM_PI));
    double near_end = fabs(t - nearbyint(t)) * (2 * GM_PI / GM_AFF_BINS);
    *margin = near_end;
    return (int)floor(t) & (GM_AFF_BINS - 1);
}

/* gm_aff_bin against the bin of the angle (vid.stab's reference-vs-fast): a
 * sweep of directions across every bin's end, from 3e-4 rad before it to
 * 3e-4 rad after in steps of 3e-8 rad, at three lengths, and a million
 * random directions of random lengths: the same bin wherever the angle is
 * more than 1e-6 rad from a bin's end (the rounding of the float direction
 * itself is 6e-8 rad), either neighbour within it, and a bin that turns
 * counter-clockwise with the angle across each end.  The axes and
 * diagonals, zeros of both signs: the bin of the angle, (0, 0) bin 0;
 * non-finite directions bin 0.  The rule is host and device code alike
 * (affine_core.h); tests/cuda/ compares the device's keys with these. */
START_TEST(test_aff_bin_exact)
{
    long checked = 0, near = 0;
    for (int k = 0; k < GM_AFF_BINS; k++) {
        double end = k * (2 * GM_PI / GM_AFF_BINS);
        const double len[3] = {1.0, 1e-3, 3e4};
        for (int l = 0; l < 3; l++) {
            int last = -1;
            for (int i = -10000; i <= 10000; i++) {
                double a = end + i * 3e-8, margin;
                float nx = (float)(len[l] * cos(a)), ny = (float)(len[l] * sin(a));
                int got = gm_aff_bin(nx, ny), want = bin_by_angle(nx, ny, &margin);
                if (margin > 1e-6)
                    ck_assert_int_eq(got, want);
                else {
                    near++;
                    ck_assert(got == want || got == ((want + 1) & (GM_AFF_BINS - 1)) ||
                              got == ((want + GM_AFF_BINS - 1) & (GM_AFF_BINS - 1)));
                }
                /* monotone: the bin before the end, then the bin after */
                if (last >= 0 && got != last)
                    ck_assert_int_eq(got, (last + 1) & (GM_AFF_BINS - 1));
                last = got;
                checked++;
            }
            ck_assert_int_eq(last, k);
        }
    }
    const float z[4] = {0.0f, -0.0f, 1.0f, -1.0f};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            /* a multiple of 45 degrees: the bin that starts there (-0.0
             * as y with x < 0: the angle -pi, the bin of pi) */
            double a = atan2((double)z[j], (double)z[i]);
            int want = z[i] == 0 && z[j] == 0 ? 0 : (int)lround(a * (GM_AFF_BINS / (2 * GM_PI))) & (GM_AFF_BINS - 1);
            ck_assert_int_eq(gm_aff_bin(z[i], z[j]), want);
        }
    ck_assert_int_eq(gm_aff_bin(NAN, 1.0f), 0);
    ck_assert_int_eq(gm_aff_bin(INFINITY, 1.0f), 0);
    ck_assert_int_eq(gm_aff_bin(1.0f, -INFINITY), 0);
    uint64_t st = 12345;
    for (int i = 0; i < 1000000; i++) {
        st = gm_mix64(st + 1);
        double a = (double)(st >> 11) / 9007199254740992.0 * 2 * GM_PI;
        double r = exp(((double)(gm_mix64(st) >> 11) / 9007199254740992.0 - 0.5) * 20);
        float nx = (float)(r * cos(a)), ny = (float)(r * sin(a));
        double margin;
        int want = bin_by_angle(nx, ny, &margin);
        if (margin > 1e-6)
            ck_assert_int_eq(gm_aff_bin(nx, ny), want);
        checked++;
    }
    ck_assert_int_gt(checked, 1900000);
    ck_assert_int_gt(near, 100); /* the sweep did reach the ends */
}
END_TEST

START_TEST(test_affine_from_tris)
{
    rng_state = 0xA3;
    for (int t = 0; t < 100; t++) {
        double m[6];
        for (int i = 0; i < 6; i++)
            m[i] = rng_unit() * 4 - 2;
        gm_point q[3], r[3];
        for (int i = 0; i < 3; i++) {
            q[i] = P(rng_unit() * 100, rng_unit() * 100, 0);
            r[i] = P(m[0] * q[i].x + m[1] * q[i].y + m[2], m[3] * q[i].x + m[4] * q[i].y + m[5], 0);
        }
        double got[6];
        EXPECT_EQ(gm_affine_from_tris(q, r, got), 0);
        for (int i = 0; i < 6; i++)
            EXPECT_NEAR(got[i], m[i], 1e-3 * (1 + fabs(m[i])));
    }
    gm_point line[3] = {P(0, 0, 0), P(1, 1, 0), P(2, 2, 0)};
    double m[6];
    EXPECT_EQ(gm_affine_from_tris(line, line, m), -1);
}
END_TEST

/* The query's triangles voted against the table of its affine image: each
 * query triangle's best reference triangle is its own image. */
START_TEST(test_vote_finds_image)
{
    rng_state = 0x5EED;
    gm_points qc = random_points(60, 300, 300), cloud = random_points(800, 300, 300);
    const double m[6] = {0.9, 0.45, 40, -0.2, 1.3, 25}; /* sheared, stretched */
    gm_points rc = {xmalloc(qc.n, sizeof(gm_point)), qc.n}, rcloud = {xmalloc(cloud.n, sizeof(gm_point)), cloud.n};
    for (uint32_t i = 0; i < qc.n; i++)
        rc.p[i] = map_point(m, qc.p[i]);
    for (uint32_t i = 0; i < cloud.n; i++)
        rcloud.p[i] = map_point(m, cloud.p[i]);
    gm_tris rt, qt;
    EXPECT_EQ(gm_tris_select_cpu(&rc, 20, 160, 0.3f, 1.0, 1, &rt), GM_OK);
    EXPECT_EQ(gm_tris_select_cpu(&qc, 20, 120, 0.3f, 0.05, 2, &qt), GM_OK);
    EXPECT(qt.n > 20);
    uint32_t *keys, *vals, n;
    EXPECT_EQ(gm_tri_items_cpu(&rc, &rt, &rcloud, &keys, &vals, &n), GM_OK);
    gm_multi table;
    EXPECT_EQ(gm_multi_build_cpu(&table, keys, vals, n, GM_AFF_KEYS, 3, NULL), GM_OK);
    float *share = xcalloc(rt.n, sizeof *share);
    for (uint32_t i = 0; i < n; i++)
        share[vals[i]] += 1.0f / n;
    gm_candidate *best = xmalloc(qt.n, sizeof *best);
    EXPECT_EQ(gm_tri_vote_rows_cpu(&table, rt.n, share, &qc, qt.t, qt.n, &cloud, best), GM_OK);
    uint32_t right = 0, in_ref = 0;
    for (uint32_t q = 0; q < qt.n; q++) {
        const gm_tri *a = &qt.t[q];
        for (uint32_t r = 0; r < rt.n; r++)
            if (rt.t[r].a == a->a && rt.t[r].b == a->b && rt.t[r].c == a->c) {
                in_ref++;
                right += best[q].ref_basis == r;
            }
    }
    EXPECT(in_ref > 10);
    EXPECT(right >= in_ref * 9 / 10);
    free(best);
    free(share);
    gm_multi_free(&table);
    free(keys), free(vals), free(rt.t), free(qt.t);
    free(qc.p), free(cloud.p), free(rc.p), free(rcloud.p);
}
END_TEST

/* gm_tri_vote_rows_cpu against rows counted over every cloud point (it
 * tries only the points in each triangle's key box): the same best cell,
 * count and score for every query triangle, on a cloud much larger than
 * the triangles' boxes, triangles of every shape the selection keeps. */
START_TEST(test_vote_rows_brute_force)
{
    rng_state = 0xB0C5;
    gm_points qc = random_points(120, 640, 360), cloud = random_points(6000, 640, 360);
    gm_points rc = random_points(80, 500, 400), rcloud = random_points(3000, 500, 400);
    gm_tris rt, qt;
    EXPECT_EQ(gm_tris_select_cpu(&rc, 15, 140, 0.2f, 0.3, 1, &rt), GM_OK);
    EXPECT_EQ(gm_tris_select_cpu(&qc, 12, 160, 0.16f, 0.2, 2, &qt), GM_OK);
    EXPECT(qt.n > 200 && rt.n > 50);
    uint32_t *keys, *vals, n;
    EXPECT_EQ(gm_tri_items_cpu(&rc, &rt, &rcloud, &keys, &vals, &n), GM_OK);
    gm_multi table;
    EXPECT_EQ(gm_multi_build_cpu(&table, keys, vals, n, GM_AFF_KEYS, 3, NULL), GM_OK);
    float *share = gm_item_shares(vals, n, rt.n);
    gm_candidate *best = xmalloc(qt.n, sizeof *best);
    EXPECT_EQ(gm_tri_vote_rows_cpu(&table, rt.n, share, &qc, qt.t, qt.n, &cloud, best), GM_OK);
    uint16_t *row = xmalloc(rt.n, sizeof *row);
    const float r2 = GM_ENDPOINT_EXCL * GM_ENDPOINT_EXCL;
    uint32_t voted = 0;
    for (uint32_t q = 0; q < qt.n; q++) {
        const gm_point *v[3] = {&qc.p[qt.t[q].a], &qc.p[qt.t[q].b], &qc.p[qt.t[q].c]};
        gm_aframe f = gm_aframe_of(*v[0], *v[1], *v[2]);
        memset(row, 0, rt.n * sizeof *row);
        for (uint32_t k = 0; k < cloud.n; k++) {
            gm_point p = cloud.p[k];
            int near = 0;
            for (int j = 0; j < 3; j++)
                near |= (p.x - v[j]->x) * (p.x - v[j]->x) + (p.y - v[j]->y) * (p.y - v[j]->y) < r2;
            uint32_t key = near ? GM_KEY_EMPTY : gm_aframe_key(&f, p);
            const uint32_t *vs;
            uint32_t c = key == GM_KEY_EMPTY ? 0 : gm_multi_find(&table, key, &vs);
            for (uint32_t i = 0; i < c; i++)
                if (row[vs[i]] != UINT16_MAX)
                    row[vs[i]]++;
        }
        gm_candidate want = gm_reduce_row_cpu(row, share, rt.n, q);
        EXPECT(best[q].ref_basis == want.ref_basis && best[q].query_basis == want.query_basis);
        EXPECT(best[q].votes == want.votes && best[q].score == want.score);
        voted += want.votes > 0;
    }
    EXPECT(voted > qt.n / 2);
    free(row);
    free(best);
    free(share);
    gm_multi_free(&table);
    free(keys), free(vals), free(rt.t), free(qt.t);
    free(qc.p), free(cloud.p), free(rc.p), free(rcloud.p);
}
END_TEST

START_TEST(test_h_plausible)
{
    const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    EXPECT(gm_h_plausible(id, 400, 300));
    /* a tilted view: the far side at 60% */
    const double tilt[9] = {1, 0, 0, 0, 1, 0, 0, 0.6 / 300 * (1 / 0.6 - 1), 1};
    EXPECT(gm_h_plausible(tilt, 400, 300));
    /* mirrored */
    const double mir[9] = {-1, 0, 400, 0, 1, 0, 0, 0, 1};
    EXPECT(!gm_h_plausible(mir, 400, 300));
    /* the line at infinity through the view */
    const double inf[9] = {1, 0, 0, 0, 1, 0, -0.004, 0, 1};
    EXPECT(!gm_h_plausible(inf, 400, 300));
    /* one side ten times the other */
    const double deep[9] = {1, 0, 0, 0, 1, 0, 0, 9.0 / 299, 1};
    EXPECT(!gm_h_plausible(deep, 400, 300));
    /* folded onto a sliver: stretch 20 to 1 */
    const double sliver[9] = {20, 0, 0, 0, 1, 0, 0, 0, 1};
    EXPECT(!gm_h_plausible(sliver, 400, 300));
}
END_TEST

/* The query's triangle corners: never more than the query has (a view with
 * 6 corners was given 12 and its triangles read past the list). */
START_TEST(test_tri_corners_kept)
{
    ck_assert_uint_eq(gm_tri_corners_kept(6, 0.5, 12), 6);
    ck_assert_uint_eq(gm_tri_corners_kept(6, 30.0, 12), 6);
    ck_assert_uint_eq(gm_tri_corners_kept(12, 3.0, 12), 12);
    ck_assert_uint_eq(gm_tri_corners_kept(40, 3.0, 12), 12);
    ck_assert_uint_eq(gm_tri_corners_kept(40, 25.7, 12), 25);
    ck_assert_uint_eq(gm_tri_corners_kept(40, 400.0, 12), 40);
    ck_assert_uint_eq(gm_tri_corners_kept(0, 0.0, 12), 0);
    ck_assert_uint_eq(gm_tri_corners_kept(5, NAN, 12), 5);
    for (uint32_t have = 0; have < 40; have++)
        for (double want = 0; want < 60; want += 0.75)
            ck_assert_uint_le(gm_tri_corners_kept(have, want, 12), have);
}
END_TEST

static Suite *affine_suite(void)
{
    Suite *s = suite_create("affine");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_key_affine_invariance);
    tcase_add_test(tc, test_key_range);
    tcase_add_test(tc, test_tris_select);
    tcase_add_test(tc, test_vote_rows_brute_force);
    tcase_add_test(tc, test_items_brute_force);
    tcase_add_test(tc, test_aff_bin_exact);
    tcase_add_test(tc, test_affine_from_tris);
    tcase_add_test(tc, test_vote_finds_image);
    tcase_add_test(tc, test_h_plausible);
    tcase_add_test(tc, test_tri_corners_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(affine_suite());
}
