/* test_verify.c: the edge-orientation map, the verification scores and the
 * point-to-line refinement (verify.c).
 *
 * The map is checked bit for bit against a brute force; the scores on a
 * rendered scene (the identity scores 1, a far-off or wrong transform about
 * 0); the refinement on a query rendered from the same scene under a known
 * similarity, started 1.5 px / 1 degree off.  Tests under
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
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/transform.h"
#include "stages/verify.h"
#include "stages/verify_core.h"
#include "test_util.h"
#include "test_scene.h"

/* The map's direction bin: round(angle * 16 / 2 pi) mod 16. */
static int bin_of(float a)
{
    return (int)floorf(a * (float)(GM_ANGLE_BINS / (2 * GM_PI)) + 0.5f) & (GM_ANGLE_BINS - 1);
}

/* ---- the map ----------------------------------------------------------- */

/* One point at (10.3, 20.6), angle 1 rad (bin round(2.55) = 3): its pixel is
 * (10, 21); bit 3 is set on exactly the 5 x 5 pixels around it (radius 2). */
START_TEST(test_map_single_point)
{
    gm_point p = {10.3f, 20.6f, 1.0f, 5.0f};
    gm_points all = {&p, 1};
    gm_edge_map map;
    int w = 30, h = 40;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &map), GM_OK);
    EXPECT_EQ(map.w, w);
    EXPECT_EQ(map.h, h);
    EXPECT_EQ(map.pts.n, 1);
    EXPECT(memcmp(&map.pts.p[0], &p, sizeof p) == 0);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int in = abs(x - 10) <= 2 && abs(y - 21) <= 2;
            EXPECT_EQ(map.mask[y * w + x], in ? 1 << 3 : 0);
            EXPECT_EQ(map.nearest[y * w + x], (x == 10 && y == 21) ? 0 : -1);
        }
    gm_edge_map_free(&map);
    EXPECT(map.mask == NULL && map.nearest == NULL && map.pts.p == NULL);
    /* radius 0: the pixel alone */
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 0, &map), GM_OK);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            EXPECT_EQ(map.mask[y * w + x], (x == 10 && y == 21) ? 1 << 3 : 0);
    gm_edge_map_free(&map);
}
END_TEST

START_TEST(test_map_bins)
{
    /* the bins of a few angles: round(a * 16 / 2 pi) mod 16 */
    static const struct {
        float a;
        int bin;
    } cases[] = {{0.0f, 0}, {0.19f, 0}, {0.2f, 1}, {1.0f, 3}, {-1.0f, 13},
                 {3.14159265f, 8}, {-3.14159265f, 8}, {1.5707963f, 4}, {-0.2f, 15}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gm_point p = {5, 5, cases[i].a, 1};
        gm_points all = {&p, 1};
        gm_edge_map map;
        EXPECT_EQ(gm_edge_map_build_cpu(&all, 11, 11, 1, &map), GM_OK);
        if (map.mask[5 * 11 + 5] != (1 << cases[i].bin))
            ck_abort_msg("angle %.4f: mask %#x, expected bin %d", cases[i].a, map.mask[5 * 11 + 5],
                         cases[i].bin);
        EXPECT_EQ(bin_of(cases[i].a), cases[i].bin);
        gm_edge_map_free(&map);
    }
}
END_TEST

/* Random points, at most one per pixel (as the edge stage makes them), some
 * outside the image, against a brute force: every pixel's mask is the OR of
 * the bits of the points whose rounded pixel is within the radius
 * (Chebyshev), clipped at the borders; nearest names the point rounded to
 * that pixel. */
START_TEST(test_map_brute_force)
{
    rng_state = 0x3A9;
    for (int t = 0; t < 6; t++) {
        int w = 20 + (int)(rng_next() % 60), h = 20 + (int)(rng_next() % 60), radius = (int)(rng_next() % 4);
        uint32_t n = 0, cap = 50 + rng_next() % 300;
        gm_points all = {xmalloc(cap, sizeof(gm_point)), 0};
        char *used = calloc((size_t)(w + 8) * (h + 8), 1);
        ck_assert_ptr_nonnull(used);
        while (n < cap) {
            int px = (int)(rng_next() % (uint32_t)(w + 6)) - 3, py = (int)(rng_next() % (uint32_t)(h + 6)) - 3;
            if (used[(py + 3) * (w + 8) + px + 3])
                continue;
            used[(py + 3) * (w + 8) + px + 3] = 1;
            all.p[n++] = (gm_point){(float)(px + (rng_unit() - 0.5) * 0.98), (float)(py + (rng_unit() - 0.5) * 0.98),
                                    (float)((rng_unit() * 2 - 1) * GM_PI), 1};
        }
        all.n = n;
        free(used);
        gm_edge_map map;
        EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, radius, &map), GM_OK);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                uint16_t want = 0;
                int any_here = 0;
                for (uint32_t k = 0; k < n; k++) {
                    long px = lrintf(all.p[k].x), py = lrintf(all.p[k].y);
                    if (px < 0 || py < 0 || px >= w || py >= h)
                        continue;
                    if (labs(px - x) <= radius && labs(py - y) <= radius)
                        want |= (uint16_t)(1u << bin_of(all.p[k].angle));
                    any_here |= px == x && py == y;
                }
                if (map.mask[y * w + x] != want)
                    ck_abort_msg("pixel (%d, %d) radius %d: mask %#x, expected %#x", x, y, radius,
                                 map.mask[y * w + x], want);
                /* the reach bits: a point's pixel within r, 1 to GM_REACH_R */
                for (int r = 1; r <= GM_REACH_R; r++) {
                    int reach = 0;
                    for (uint32_t k = 0; k < n && !reach; k++) {
                        long px = lrintf(all.p[k].x), py = lrintf(all.p[k].y);
                        reach = px >= 0 && py >= 0 && px < w && py < h && labs(px - x) <= r &&
                                labs(py - y) <= r;
                    }
                    if (gm_reach_bit(map.reach[r - 1], w, x, y) != reach)
                        ck_abort_msg("pixel (%d, %d): reach bit of radius %d %d, expected %d", x,
                                     y, r, gm_reach_bit(map.reach[r - 1], w, x, y), reach);
                }
                int32_t j = map.nearest[y * w + x];
                if (!any_here) {
                    EXPECT_EQ(j, -1);
                } else {
                    EXPECT(j >= 0 && (uint32_t)j < n);
                    EXPECT_EQ(lrintf(all.p[j].x), x);
                    EXPECT_EQ(lrintf(all.p[j].y), y);
                }
            }
        gm_edge_map_free(&map);
        free(all.p);
    }
}
END_TEST

/* Two points that round to the same pixel (the edge stage can make them:
 * sub-pixel offsets of +-0.5 on gradient plateaus, rounded half to even)
 * should both mark their directions; the map keeps only the last one's. */
START_TEST(test_map_shared_pixel)
{
    gm_point p[2] = {{9.5f, 5.0f, 0.0f, 1}, {10.4f, 5.0f, 1.5707963f, 1}}; /* both -> (10, 5) */
    gm_points all = {p, 2};
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, 20, 11, 1, &map), GM_OK);
    EXPECT_EQ(map.mask[5 * 20 + 10], (1 << 0) | (1 << 4));
    gm_edge_map_free(&map);
}
END_TEST

/* A map made without its pixels (gm_edge_map_points, as a GPU's reference
 * keeps it) gets them later from gm_edge_map_pixels, once, whichever of
 * the threads that ask at once makes them: the same pixels as
 * gm_edge_map_build_cpu's, and asking again changes nothing. */
START_TEST(test_map_pixels_later)
{
    rng_state = 0x5EED;
    const int w = 90, h = 70;
    const uint32_t n = 900;
    gm_points all = {xmalloc(n, sizeof(gm_point)), n};
    for (uint32_t k = 0; k < n; k++)
        all.p[k] = (gm_point){(float)(rng_unit() * (w + 4) - 2), (float)(rng_unit() * (h + 4) - 2),
                              (float)((rng_unit() * 2 - 1) * GM_PI), 1};
    gm_edge_map want, later;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &want), GM_OK);
    EXPECT_EQ(gm_edge_map_points(&all, w, h, 2, &later), GM_OK);
    EXPECT(later.mask == NULL && later.nearest == NULL && !later.filled);
    EXPECT_EQ(later.pts.n, n);
    EXPECT(memcmp(later.dir, want.dir, 2 * n * sizeof *want.dir) == 0);
    int bad = 0;
#pragma omp parallel num_threads(8) reduction(+ : bad)
    bad += gm_edge_map_pixels(&later) != GM_OK;
    EXPECT_EQ(bad, 0);
    EXPECT(later.filled);
    uint16_t *mask = later.mask;
    EXPECT_EQ(gm_edge_map_pixels(&later), GM_OK);
    EXPECT(later.mask == mask);
    EXPECT(memcmp(later.mask, want.mask, (size_t)w * h * sizeof *want.mask) == 0);
    EXPECT(memcmp(later.nearest, want.nearest, (size_t)w * h * sizeof *want.nearest) == 0);
    for (int k = 0; k < GM_REACH_R; k++)
        EXPECT(memcmp(later.reach[k], want.reach[k], GM_REACH_WORDS(w) * h * sizeof(uint64_t)) == 0);
    gm_edge_map_free(&later);
    gm_edge_map_free(&want);
    free(all.p);
}
END_TEST

/* The searches that stop at once where the map says that no point lies
 * near (gm_map_empty: the reach bits of the search's radius) find what
 * the whole window's scan finds: random
 * sparse edges, query points mapped all over (near the edges, between
 * them, off the map), every radius, the partner and its correspondence bit
 * for bit; and the strict test's counts the same. */
START_TEST(test_map_empty_windows)
{
    rng_state = 0xE3B7;
    for (int t = 0; t < 8; t++) {
        const int w = 40 + (int)(rng_next() % 80), h = 40 + (int)(rng_next() % 80);
        const uint32_t n = 20 + rng_next() % 200;
        gm_points all = {xmalloc(n, sizeof(gm_point)), n};
        for (uint32_t k = 0; k < n; k++)
            all.p[k] = (gm_point){(float)(rng_unit() * (w + 4) - 2), (float)(rng_unit() * (h + 4) - 2),
                                  (float)((rng_unit() * 2 - 1) * GM_PI), 1};
        gm_edge_map map;
        EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 1 + t % 2, &map), GM_OK);
        gm_map_view fast = {map.w, map.h, map.mask, map.nearest, map.pts.p, map.dir, {NULL}};
        for (int k = 0; k < GM_REACH_R; k++)
            fast.reach[k] = map.reach[k];
        const gm_map_view whole = {map.w, map.h, map.mask, map.nearest, map.pts.p, map.dir, {NULL}};
        const double h9[9] = {cos(0.1 * t), -sin(0.1 * t), 3.0 - t, sin(0.1 * t), cos(0.1 * t),
                              1.5 * t, 1e-4 * t, -5e-5 * t, 1};
        int skipped = 0, found = 0;
        for (int i = 0; i < 4000; i++) {
            gm_point p = {(float)(rng_unit() * (w + 10) - 5), (float)(rng_unit() * (h + 10) - 5),
                          (float)((rng_unit() * 2 - 1) * GM_PI), 1};
            const float cp = cosf(p.angle), sp = sinf(p.angle);
            for (int r = 1; r <= GM_REFINE_MAX_R; r++) {
                gm_corr a = {0, 0, 0, 0, 0, 0, 0}, b = a;
                const int fa = gm_refine_match(&fast, h9, p, cp, sp, r, 0.75, &a);
                const int fb = gm_refine_match(&whole, h9, p, cp, sp, r, 0.75, &b);
                if (fa != fb || memcmp(&a, &b, sizeof a) != 0)
                    ck_abort_msg("map %d point %d radius %d: %d against the whole window's %d", t,
                                 i, r, fa, fb);
                found += fa;
                double x, y;
                gm_h_apply(h9, p.x, p.y, &x, &y);
                const long ix = lrint(x), iy = lrint(y);
                skipped += ix >= 0 && iy >= 0 && ix < w && iy < h && gm_map_empty(&fast, ix, iy, r);
            }
            uint32_t bg_a = 0, in_a = 0, bg_b = 0, in_b = 0;
            const uint32_t ha = gm_verify_strict_point(&fast, h9, p, cp, sp, &bg_a, &in_a);
            const uint32_t hb = gm_verify_strict_point(&whole, h9, p, cp, sp, &bg_b, &in_b);
            EXPECT(ha == hb && bg_a == bg_b && in_a == in_b);
        }
        /* both kinds of search happened */
        EXPECT(skipped > 100 && found > 100);
        gm_edge_map_free(&map);
        free(all.p);
    }
}
END_TEST

START_TEST(test_map_empty)
{
    gm_point dummy = {0, 0, 0, 0};
    gm_points none = {&dummy, 0};
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&none, 16, 9, 2, &map), GM_OK);
    for (int i = 0; i < 16 * 9; i++) {
        EXPECT_EQ(map.mask[i], 0);
        EXPECT_EQ(map.nearest[i], -1);
    }
    /* scores against an empty map: nothing hits */
    gm_point q[3] = {{3, 3, 0, 1}, {5, 5, 1, 1}, {8, 2, 2, 1}};
    gm_points qs = {q, 3};
    const double id[6] = {1, 0, 0, 0, 1, 0};
    gm_verify_score s = gm_verify_cpu(&map, &qs, id);
    EXPECT_EQ(s.total, 3);
    EXPECT_EQ(s.hits, 0);
    EXPECT(s.confidence == 0);
    gm_edge_map_free(&map);
}
END_TEST

static const double IDENT[6] = {1, 0, 0, 0, 1, 0};

/* The shared region (verify_core.h): a query that shows the reference's
 * right half and as much again beyond its border is judged on the half
 * that lies on the reference: the points carried outside neither hit nor
 * count, so the right transform keeps a confidence near 1 (it was about
 * the shared share before).  Below GM_SHARED_FLOOR of the points inside,
 * the denominator stays at the floor: a sliver cannot score high. */
START_TEST(test_verify_shared)
{
    int w = 240, h = 200;
    uint8_t *im = render(w, h, IDENT);
    gm_points all = edge_points(im, w, h);
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &map), GM_OK);
    gm_point *qp = malloc(2 * all.n * sizeof *qp);
    uint32_t n = 0, half = 0;
    for (uint32_t k = 0; k < all.n; k++) /* the right half, in query pixels x - w/2 */
        if (all.p[k].x >= w / 2) {
            qp[n] = all.p[k];
            qp[n++].x -= w / 2;
            half++;
        }
    for (uint32_t k = 0; k < half; k++) { /* as many beyond the border (x >= w) */
        qp[n] = qp[k];
        qp[n++].x += w / 2 + 8;
    }
    gm_points q = {qp, n};
    const double m[6] = {1, 0, w / 2, 0, 1, 0};
    gm_verify_score s = gm_verify_cpu(&map, &q, m), t = gm_verify_strict_cpu(&map, &q, m);
    EXPECT_EQ(s.total, n);
    EXPECT(s.inside <= half && s.inside >= half - half / 20);
    EXPECT(s.confidence > 0.95);
    EXPECT(t.inside == s.inside && t.confidence > 0.95);
    /* a sliver: 5% of the points on the reference, all of them right,
     * the rest carried beyond its border */
    uint32_t k5 = half / 20;
    for (uint32_t k = 0; k < 19 * k5; k++)
        qp[k5 + k] = qp[half + k % half];
    gm_points sliver = {qp, 20 * k5};
    s = gm_verify_strict_cpu(&map, &sliver, m);
    EXPECT(s.inside <= k5);
    EXPECT(s.confidence <= (double)s.inside / (GM_SHARED_FLOOR * sliver.n) + 1e-9);
    EXPECT(s.confidence < 0.3);
    free(qp);
    free(all.p);
    free(im);
    gm_edge_map_free(&map);
}
END_TEST

/* The reference's own points: every point hits, confidence exactly 1; the
 * same points given in a rotated and scaled query frame with the matching
 * transform: still 1.  Translated out of the image: 0 hits, 0.  A wrong
 * transform (turned 40 degrees about the centre): low. */
START_TEST(test_verify_scores)
{
    int w = 240, h = 200;
    uint8_t *im = render(w, h, IDENT);
    gm_points all = edge_points(im, w, h);
    EXPECT(all.n > 800);
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &map), GM_OK);

    gm_verify_score s = gm_verify_cpu(&map, &all, IDENT);
    EXPECT_EQ(s.total, all.n);
    EXPECT_EQ(s.hits, all.n);
    EXPECT(s.bg_hits < all.n / 4);
    EXPECT(s.confidence == 1.0);
    s = gm_verify_strict_cpu(&map, &all, IDENT);
    EXPECT_EQ(s.hits, all.n);
    EXPECT(s.confidence == 1.0);

    double M[6];
    make_sim(73, 1.7, 30, -12, M);
    gm_points q = pull_back(&all, M);
    s = gm_verify_cpu(&map, &q, M);
    EXPECT_EQ(s.total, all.n);
    EXPECT(s.hits >= all.n - all.n / 100);
    EXPECT(s.confidence > 0.98);
    s = gm_verify_strict_cpu(&map, &q, M);
    EXPECT(s.confidence > 0.98);

    double far[6] = {1, 0, 5000, 0, 1, -3000};
    s = gm_verify_cpu(&map, &all, far);
    EXPECT_EQ(s.total, all.n);
    EXPECT_EQ(s.hits, 0);
    EXPECT_EQ(s.bg_hits, 0);
    EXPECT(s.confidence == 0.0);
    s = gm_verify_strict_cpu(&map, &all, far);
    EXPECT_EQ(s.hits, 0);
    EXPECT(s.confidence == 0.0);

    /* turned 40 degrees about the image centre */
    double wrong[6];
    make_sim(40, 1.0, 0, 0, wrong);
    wrong[2] = 120 - (wrong[0] * 120 + wrong[1] * 100);
    wrong[5] = 100 - (wrong[3] * 120 + wrong[4] * 100);
    s = gm_verify_cpu(&map, &all, wrong);
    EXPECT(s.confidence < 0.2);
    s = gm_verify_strict_cpu(&map, &all, wrong);
    EXPECT(s.confidence < 0.2);
    /* the directions must agree: the right positions with every angle
     * turned 90 degrees score nothing above chance */
    gm_points turned = {xmalloc(all.n, sizeof(gm_point)), all.n};
    for (uint32_t k = 0; k < all.n; k++) {
        turned.p[k] = all.p[k];
        turned.p[k].angle = (float)remainder(all.p[k].angle + GM_PI / 2, 2 * GM_PI);
    }
    s = gm_verify_cpu(&map, &turned, IDENT);
    EXPECT(s.confidence < 0.1);
    s = gm_verify_strict_cpu(&map, &turned, IDENT);
    EXPECT(s.confidence < 0.1);
    /* one bin of tolerance (22.5 degrees) in the loose test, 20 degrees in
     * the strict one: turned by 15 degrees every point still hits both */
    for (uint32_t k = 0; k < all.n; k++)
        turned.p[k].angle = (float)remainder(all.p[k].angle + 15 * GM_PI / 180, 2 * GM_PI);
    s = gm_verify_cpu(&map, &turned, IDENT);
    EXPECT(s.hits >= all.n - all.n / 50);
    s = gm_verify_strict_cpu(&map, &turned, IDENT);
    EXPECT(s.hits >= all.n - all.n / 50);
    /* turned by 30 degrees: past the strict test's 20, but a neighbour bin
     * of the loose test for most points */
    for (uint32_t k = 0; k < all.n; k++)
        turned.p[k].angle = (float)remainder(all.p[k].angle - 30 * GM_PI / 180, 2 * GM_PI);
    s = gm_verify_strict_cpu(&map, &turned, IDENT);
    EXPECT(s.hits < all.n / 5);
    /* shifted 4 px: the loose test (radius 2) misses most, the strict one too */
    double shift[6] = {1, 0, 4, 0, 1, 3};
    s = gm_verify_cpu(&map, &all, shift);
    EXPECT(s.confidence < 0.5);
    s = gm_verify_strict_cpu(&map, &all, shift);
    EXPECT(s.confidence < 0.3);
    /* no points: total 0, confidence 0 */
    gm_points none = {all.p, 0};
    s = gm_verify_cpu(&map, &none, IDENT);
    EXPECT(s.total == 0 && s.hits == 0 && s.confidence == 0.0);

    free(turned.p);
    free(q.p);
    gm_edge_map_free(&map);
    free(all.p);
    free(im);
}
END_TEST

/* Largest distance between the images of the query corners under a and b. */
static double corner_error(const double a[6], const double b[6], double w, double h)
{
    static const double cx[4] = {0, 1, 1, 0}, cy[4] = {0, 0, 1, 1};
    double e = 0;
    for (int i = 0; i < 4; i++) {
        double x = cx[i] * (w - 1), y = cy[i] * (h - 1);
        double dx = (a[0] - b[0]) * x + (a[1] - b[1]) * y + (a[2] - b[2]);
        double dy = (a[3] - b[3]) * x + (a[4] - b[4]) * y + (a[5] - b[5]);
        e = fmax(e, hypot(dx, dy));
    }
    return e;
}

/* A query rendered from the scene under T (query -> reference), its edge
 * points refined from T perturbed by up to 1.5 px and 1 degree: the result
 * is within 0.05 px of T at the query corners. */
START_TEST(test_refine_converges)
{
    int w = 240, h = 200;
    uint8_t *ref = render(w, h, IDENT);
    gm_points all = edge_points(ref, w, h);
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &map), GM_OK);
    static const struct {
        double deg, scale, tx, ty;
        int qw, qh;
    } cases[] = {{0, 1.0, 20.25, 15.5, 180, 150}, {17, 1.1, 40, 10, 150, 130}, {-90, 0.9, 30, 180, 170, 150},
                 {160, 1.25, 200, 160, 140, 110}};
    static const double perturb[][3] = {{1.5, 0, 1}, {-1.1, 1.1, -1}, {0, -1.5, 0.7}, {1.0, 1.0, -0.5}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double T[6];
        make_sim(cases[c].deg, cases[c].scale, cases[c].tx, cases[c].ty, T);
        uint8_t *qim = render(cases[c].qw, cases[c].qh, T);
        gm_points q = edge_points(qim, cases[c].qw, cases[c].qh);
        EXPECT(q.n > 300);
        for (size_t p = 0; p < sizeof perturb / sizeof *perturb; p++) {
            /* m = T turned by perturb[2] degrees about the query centre, then
             * shifted by perturb[0..1] reference px */
            double R[6], m[6];
            make_sim(perturb[p][2], 1.0, 0, 0, R);
            double cx = cases[c].qw / 2.0, cy = cases[c].qh / 2.0;
            R[2] = cx - (R[0] * cx + R[1] * cy);
            R[5] = cy - (R[3] * cx + R[4] * cy);
            for (int r = 0; r < 2; r++) /* m = T o R */
                for (int k = 0; k < 3; k++)
                    m[3 * r + k] = T[3 * r] * R[k] + T[3 * r + 1] * R[3 + k] + (k == 2 ? T[3 * r + 2] : 0);
            m[2] += perturb[p][0];
            m[5] += perturb[p][1];
            double e0 = corner_error(m, T, cases[c].qw, cases[c].qh);
            EXPECT(e0 > 1.0);
            gm_refine_cpu(&map, &q, m, 6);
            double e = corner_error(m, T, cases[c].qw, cases[c].qh);
            if (!(e < 0.05))
                ck_abort_msg("case %zu perturbation %zu: corner error %.4f px after refinement "
                             "(%.3f before)", c, p, e, e0);
            EXPECT(fabs(m[0] - m[4]) < 1e-12 && fabs(m[1] + m[3]) < 1e-12);
            /* and the strict score of the refined transform is high */
            gm_verify_score s = gm_verify_strict_cpu(&map, &q, m);
            EXPECT(s.confidence > 0.6);
        }
        free(q.p);
        free(qim);
    }
    gm_edge_map_free(&map);
    free(all.p);
    free(ref);
}
END_TEST

static double h_corner_error(const double a[9], const double b[9], double w, double h)
{
    static const double cx[4] = {0, 1, 1, 0}, cy[4] = {0, 0, 1, 1};
    double e = 0;
    for (int i = 0; i < 4; i++) {
        double x1, y1, x2, y2;
        gm_h_apply(a, cx[i] * (w - 1), cy[i] * (h - 1), &x1, &y1);
        gm_h_apply(b, cx[i] * (w - 1), cy[i] * (h - 1), &x2, &y2);
        e = fmax(e, hypot(x1 - x2, y1 - y2));
    }
    return e;
}

/* The other models: a query rendered under an affine map (shear, unequal
 * scales) and one under a homography, refined from their best similarity
 * (the truth with its shear / perspective dropped, a few px off at the
 * corners) with the matching model: within 0.1 px at the corners; the
 * similarity model cannot get there.  The strict score of the truth is
 * high, of the similarity start lower. */
START_TEST(test_refine_models)
{
    int w = 240, h = 200;
    uint8_t *ref = render(w, h, IDENT);
    gm_points all = edge_points(ref, w, h);
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &map), GM_OK);
    static const struct {
        gm_model model;
        double H[9];
    } cases[] = {
        {GM_MODEL_AFFINE, {1.02, 0.03, 30, -0.01, 0.98, 25, 0, 0, 1}},
        {GM_MODEL_HOMOGRAPHY, {1.0, 0.02, 35, -0.02, 1.0, 30, 6e-5, 4e-5, 1}},
    };
    const int qw = 170, qh = 140;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint8_t *qim = render_h(qw, qh, cases[c].H);
        gm_points q = edge_points(qim, qw, qh);
        /* the start: the similarity part of H's linear part, placed to
         * agree with H at the query's centre */
        const double *H = cases[c].H;
        double a = (H[0] + H[4]) / 2, b = (H[3] - H[1]) / 2, cx = (qw - 1) / 2.0, cy = (qh - 1) / 2.0, tx, ty;
        gm_h_apply(H, cx, cy, &tx, &ty);
        double start[9] = {a, -b, tx - (a * cx - b * cy), b, a, ty - (b * cx + a * cy), 0, 0, 1};
        double hm[9], hs[9];
        memcpy(hm, start, sizeof hm);
        memcpy(hs, start, sizeof hs);
        double e0 = h_corner_error(hm, cases[c].H, qw, qh);
        if (!(e0 > 1.5 && e0 < 6))
            ck_abort_msg("model %d: the start is %.3f px off", (int)cases[c].model, e0);
        gm_refine_model_cpu(&map, &q, cases[c].model, hm, 8);
        gm_refine_model_cpu(&map, &q, GM_MODEL_SIMILARITY, hs, 8);
        double e = h_corner_error(hm, cases[c].H, qw, qh), es = h_corner_error(hs, cases[c].H, qw, qh);
        if (!(e < 0.1))
            ck_abort_msg("model %d: corner error %.4f px after refinement (%.3f before, %.3f as a "
                         "similarity)", (int)cases[c].model, e, e0, es);
        EXPECT(es > 0.5); /* the model matters */
        EXPECT(hm[8] == 1);
        if (cases[c].model == GM_MODEL_AFFINE)
            EXPECT(hm[6] == 0 && hm[7] == 0);
        gm_verify_score good = gm_verify_strict_h_cpu(&map, &q, cases[c].H);
        gm_verify_score st0 = gm_verify_strict_h_cpu(&map, &q, start);
        EXPECT(good.confidence > 0.8);
        EXPECT(st0.confidence < good.confidence);
        free(q.p);
        free(qim);
    }
    /* the similarity model through the 3x3 path is gm_refine_cpu */
    double T[6];
    make_sim(17, 1.1, 40, 10, T);
    uint8_t *qim = render(150, 130, T);
    gm_points q = edge_points(qim, 150, 130);
    double m[6], hh[9];
    memcpy(m, T, sizeof m);
    m[2] += 1.2;
    m[5] -= 0.8;
    gm_h_from_m(m, hh);
    gm_refine_cpu(&map, &q, m, 6);
    gm_refine_model_cpu(&map, &q, GM_MODEL_SIMILARITY, hh, 6);
    for (int i = 0; i < 6; i++)
        EXPECT(fabs(m[i] - hh[i]) <= 1e-12 * (1 + fabs(m[i])));
    /* and the strict score through h equals the one through m */
    gm_verify_score s1 = gm_verify_strict_cpu(&map, &q, m), s2 = gm_verify_strict_h_cpu(&map, &q, hh);
    EXPECT(s1.hits == s2.hits && s1.bg_hits == s2.bg_hits);
    free(q.p);
    free(qim);
    gm_edge_map_free(&map);
    free(all.p);
    free(ref);
}
END_TEST

/* A 240x200 reference scene with its edge points and map (scene_open), and
 * a 170x140 view of it under H with its edge points (view_open); both
 * closed by view_close. */
typedef struct {
    uint8_t *ref, *qim;
    gm_points all, q;
    gm_edge_map map;
} scene_view;

static void scene_open(scene_view *v)
{
    v->ref = render(240, 200, IDENT);
    v->all = edge_points(v->ref, 240, 200);
    EXPECT_EQ(gm_edge_map_build_cpu(&v->all, 240, 200, 2, &v->map), GM_OK);
    v->qim = NULL;
    v->q = (gm_points){NULL, 0};
}

static void view_open(scene_view *v, const double H[9])
{
    scene_open(v);
    v->qim = render_h(170, 140, H);
    v->q = edge_points(v->qim, 170, 140);
}

static void view_close(scene_view *v)
{
    free(v->q.p);
    free(v->qim);
    gm_edge_map_free(&v->map);
    free(v->all.p);
    free(v->ref);
}

/* Region growing: from the local affine of a view with perspective at a
 * seed off the query's centre (its far corners 3-10 px off), grown to the
 * homography within 0.1 px; a seed far outside the points grows from an
 * empty disc and still ends on every point; no points: h kept. */
START_TEST(test_grow_model)
{
    const double H[9] = {1.0, 0.02, 35, -0.02, 1.0, 30, 4e-4, 2e-4, 1};
    const int qw = 170, qh = 140;
    scene_view v;
    view_open(&v, H);
    static const double seeds[][3] = {{50, 45, 30}, {120, 95, 20}, {400, 300, 30}};
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        /* the affine that agrees with H to first order at the seed */
        double sx = fmin(seeds[i][0], qw - 1.0), sy = fmin(seeds[i][1], qh - 1.0), x0, y0, x1,
               y1, x2, y2;
        gm_h_apply(H, sx, sy, &x0, &y0);
        gm_h_apply(H, sx + 1e-3, sy, &x1, &y1);
        gm_h_apply(H, sx, sy + 1e-3, &x2, &y2);
        double a = (x1 - x0) / 1e-3, b = (x2 - x0) / 1e-3, c = (y1 - y0) / 1e-3,
               d = (y2 - y0) / 1e-3;
        double start[9] = {a, b, x0 - a * sx - b * sy, c, d, y0 - c * sx - d * sy, 0, 0, 1};
        double e0 = h_corner_error(start, H, qw, qh);
        if (!(e0 > 3))
            ck_abort_msg("seed %zu: the start is only %.3f px off", i, e0);
        double hg[9];
        memcpy(hg, start, sizeof hg);
        gm_grow_model_cpu(&v.map, &v.q, GM_MODEL_HOMOGRAPHY, seeds[i], hg);
        double e = h_corner_error(hg, H, qw, qh);
        if (!(e < 0.1))
            ck_abort_msg("seed %zu: corner error %.4f px after growing (%.3f before)", i, e, e0);
    }
    gm_points none = {NULL, 0};
    double hk[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, h0[9];
    memcpy(h0, hk, sizeof hk);
    gm_grow_model_cpu(&v.map, &none, GM_MODEL_HOMOGRAPHY, seeds[0], hk);
    EXPECT(memcmp(hk, h0, sizeof hk) == 0);
    view_close(&v);
}
END_TEST

/* The corner spread test: the truth of a rendered view hardly moves when a
 * quadrant is left out (under 0.5 px); a start 3+ px off moves by about
 * that much (the refits go to the truth); no points: nothing moves. */
START_TEST(test_corner_spread)
{
    const double H[9] = {1.0, 0.02, 35, -0.02, 1.0, 30, 6e-5, 4e-5, 1};
    const int qw = 170, qh = 140;
    scene_view v;
    view_open(&v, H);
    double off[9];
    memcpy(off, H, sizeof off);
    off[2] += 2.5;
    off[5] -= 2.0;
    double s0 = gm_corner_spread_cpu(&v.map, &v.q, GM_MODEL_HOMOGRAPHY, H, qw, qh),
           s1 = gm_corner_spread_cpu(&v.map, &v.q, GM_MODEL_HOMOGRAPHY, off, qw, qh);
    if (!(s0 < 0.5 && s1 > 2.0))
        ck_abort_msg("spread of the truth %.3f px, of a start 3.2 px off %.3f px", s0, s1);
    gm_points none = {NULL, 0};
    EXPECT(gm_corner_spread_cpu(&v.map, &none, GM_MODEL_AFFINE, off, qw, qh) == 0.0);
    view_close(&v);
}
END_TEST

/* Too few points: m is left alone. */
START_TEST(test_refine_few_points)
{
    gm_point p = {5, 5, 0, 1};
    gm_points all = {&p, 1};
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, 20, 20, 2, &map), GM_OK);
    double m[6] = {1, 0, 0.5, 0, 1, -0.5}, m0[6];
    memcpy(m0, m, sizeof m);
    gm_refine_cpu(&map, &all, m, 6);
    EXPECT(memcmp(m, m0, sizeof m) == 0);
    gm_edge_map_free(&map);
}
END_TEST

/* Same scores and refinement with 1 and 2 threads. */
START_TEST(test_threads)
{
#ifdef _OPENMP
    int w = 240, h = 200;
    uint8_t *ref = render(w, h, IDENT);
    gm_points all = edge_points(ref, w, h);
    double T[6];
    make_sim(12, 1.05, 25, 20, T);
    uint8_t *qim = render(160, 140, T);
    gm_points q = edge_points(qim, 160, 140);
    int saved = omp_get_max_threads();
    gm_edge_map m1, m2;
    double a[6], b[6];
    memcpy(a, T, sizeof a);
    memcpy(b, T, sizeof b);
    a[2] += 1;
    b[2] += 1;
    omp_set_num_threads(1);
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &m1), GM_OK);
    gm_verify_score s1 = gm_verify_cpu(&m1, &q, a), t1 = gm_verify_strict_cpu(&m1, &q, a);
    gm_refine_cpu(&m1, &q, a, 6);
    omp_set_num_threads(2);
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &m2), GM_OK);
    gm_verify_score s2 = gm_verify_cpu(&m2, &q, b), t2 = gm_verify_strict_cpu(&m2, &q, b);
    gm_refine_cpu(&m2, &q, b, 6);
    omp_set_num_threads(saved);
    EXPECT(memcmp(m1.mask, m2.mask, (size_t)w * h * sizeof *m1.mask) == 0);
    EXPECT(memcmp(m1.nearest, m2.nearest, (size_t)w * h * sizeof *m1.nearest) == 0);
    EXPECT(s1.hits == s2.hits && s1.bg_hits == s2.bg_hits && s1.confidence == s2.confidence);
    EXPECT(t1.hits == t2.hits && t1.bg_hits == t2.bg_hits && t1.confidence == t2.confidence);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    gm_edge_map_free(&m1);
    gm_edge_map_free(&m2);
    free(q.p);
    free(qim);
    free(all.p);
    free(ref);
#endif
}
END_TEST

/* gm_refine_models_cpu: several transforms refined together on 1 and 4
 * threads, each the same bit for bit as gm_refine_model_cpu alone then
 * gm_verify_strict_h_cpu, under each model; one far off (no partners: its
 * refinement ends at once while the others go on), zero iterations (scores
 * only), and too few points; the corners' spread on 1 and 8 threads. */
START_TEST(test_refine_together)
{
    int w = 240, h = 200;
    uint8_t *ref = render(w, h, IDENT);
    gm_points all = edge_points(ref, w, h);
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&all, w, h, 2, &map), GM_OK);
    double T[6];
    make_sim(12, 1.05, 25, 20, T);
    uint8_t *qim = render(160, 140, T);
    gm_points q = edge_points(qim, 160, 140);
    enum { NT = 4 };
    double h0[NT][9];
    for (int t = 0; t < NT; t++) {
        double m[6];
        memcpy(m, T, sizeof m);
        m[2] += 0.7 * t - 1.0;
        m[5] += 0.4 * t;
        gm_h_from_m(m, h0[t]);
    }
    h0[2][2] += 5000; /* far off the reference: no partner */
    gm_point few_p[3] = {{5, 5, 0, 1}, {6, 5, 0, 1}, {7, 5, 0, 1}};
    const gm_points few = {few_p, 3};
    const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY};
    const int iters[] = {6, 10, 0};
    for (int mi = 0; mi < 3; mi++)
        for (int ii = 0; ii < 3; ii++)
            for (int fq = 0; fq < 2; fq++) {
                const gm_points *qq = fq ? &few : &q;
                double ha[NT][9];
                gm_verify_score sa[NT];
                memcpy(ha, h0, sizeof ha);
                for (int t = 0; t < NT; t++) {
                    gm_refine_model_cpu(&map, qq, models[mi], ha[t], iters[ii]);
                    sa[t] = gm_verify_strict_h_cpu(&map, qq, ha[t]);
                }
                for (int threads = 1; threads <= 4; threads *= 4) {
                    int old = gm_threads_enter(threads);
                    double hb[NT][9];
                    gm_verify_score sb[NT];
                    memcpy(hb, h0, sizeof hb);
                    gm_refine_models_cpu(&map, qq, models[mi], &hb[0][0], iters[ii], NT, sb);
                    gm_threads_leave(old);
                    for (int t = 0; t < NT; t++) {
                        if (memcmp(ha[t], hb[t], sizeof ha[t]) != 0)
                            ck_abort_msg("model %d, %d iterations, %s, %d threads: transform %d "
                                         "differs from its refinement alone",
                                         (int)models[mi], iters[ii], fq ? "3 points" : "a query",
                                         threads, t);
                        EXPECT(sa[t].hits == sb[t].hits && sa[t].bg_hits == sb[t].bg_hits &&
                               sa[t].total == sb[t].total && sa[t].confidence == sb[t].confidence);
                    }
                }
            }
    /* the spread's four refits, together on 8 threads (each on its own
     * points) and a thread each: the same spread bit for bit */
    for (int mi = 0; mi < 3; mi++) {
        int old = gm_threads_enter(1);
        double s1 = gm_corner_spread_cpu(&map, &q, models[mi], h0[1], 160, 140);
        gm_threads_leave(old);
        old = gm_threads_enter(8);
        double s8 = gm_corner_spread_cpu(&map, &q, models[mi], h0[1], 160, 140);
        gm_threads_leave(old);
        EXPECT(memcmp(&s1, &s8, sizeof s1) == 0 && s1 > 0);
    }
    /* growths from seeds, together (8 threads: each step's discs in one
     * parallel loop; 1 thread) and each alone: the same bit for bit; seeds
     * of different discs, so that the growths end their steps at different
     * times, and one far off the reference */
    const double seeds[NT][3] = {{80, 70, 30}, {40, 40, 12}, {120, 100, 60}, {20, 120, 20}};
    for (int mi = 0; mi < 3; mi++) {
        double ha[NT][9], hb[NT][9];
        gm_verify_score sa[NT], sb[NT];
        memcpy(ha, h0, sizeof ha);
        for (int t = 0; t < NT; t++) {
            gm_grow_model_cpu(&map, &q, models[mi], seeds[t], ha[t]);
            sa[t] = gm_verify_strict_h_cpu(&map, &q, ha[t]);
        }
        for (int threads = 1; threads <= 8; threads *= 8) {
            memcpy(hb, h0, sizeof hb);
            int old = gm_threads_enter(threads);
            gm_grow_models_cpu(&map, &q, models[mi], &seeds[0][0], &hb[0][0], NT, sb);
            gm_threads_leave(old);
            for (int t = 0; t < NT; t++) {
                if (memcmp(ha[t], hb[t], sizeof ha[t]) != 0)
                    ck_abort_msg("model %d, %d threads: growth %d differs from its growth alone",
                                 (int)models[mi], threads, t);
                EXPECT(sa[t].hits == sb[t].hits && sa[t].bg_hits == sb[t].bg_hits &&
                       sa[t].total == sb[t].total && sa[t].confidence == sb[t].confidence);
            }
        }
        EXPECT(memcmp(ha[0], h0[0], sizeof ha[0]) != 0); /* it grew: work was compared */
    }
    /* the refinements moved: the test compares work done */
    double hm[9];
    memcpy(hm, h0[0], sizeof hm);
    gm_refine_model_cpu(&map, &q, GM_MODEL_SIMILARITY, hm, 6);
    EXPECT(memcmp(hm, h0[0], sizeof hm) != 0);
    gm_edge_map_free(&map);
    free(q.p);
    free(qim);
    free(all.p);
    free(ref);
}
END_TEST

/* GM_STRICT_COS, written out for the GPU, is the CPU's cos of GM_STRICT_DEG. */
START_TEST(test_strict_cos)
{
    volatile double deg = GM_STRICT_DEG;
    EXPECT((float)cos(deg * GM_PI / 180.0) == GM_STRICT_COS);
}
END_TEST

/* gm_corner_sigma_cpu: the scene's own edges (every direction) pin the
 * corners to well under a pixel; the edges that run one way only (normals
 * within 2.6 degrees of x) leave y nearly free: the sigma is more than ten
 * times larger and past 2 px; fewer than 8 partners: infinite. */
START_TEST(test_corner_sigma)
{
    int w = 240, h = 200;
    scene_view v;
    scene_open(&v);
    const gm_points all = v.all;
    const gm_edge_map map = v.map;
    double hid[9];
    gm_h_from_m(IDENT, hid);
    double s_all = gm_corner_sigma_cpu(&map, &all, GM_MODEL_SIMILARITY, hid, w, h, NULL, NULL, 0, NULL);
    if (!(s_all < 0.5))
        ck_abort_msg("every edge: sigma %.3f px", s_all);
    gm_point *one = malloc(all.n * sizeof *one);
    gm_points ow = {one, 0};
    for (uint32_t k = 0; k < all.n; k++)
        if (fabsf(cosf(all.p[k].angle)) > 0.999f)
            one[ow.n++] = all.p[k];
    EXPECT(ow.n >= 8);
    double s_one = gm_corner_sigma_cpu(&map, &ow, GM_MODEL_SIMILARITY, hid, w, h, NULL, NULL, 0, NULL);
    if (!(s_one > 10 * s_all && s_one > 2.0))
        ck_abort_msg("edges one way: sigma %.3f px (every edge %.3f)", s_one, s_all);
    gm_points few = {all.p, 7};
    EXPECT(isinf(gm_corner_sigma_cpu(&map, &few, GM_MODEL_SIMILARITY, hid, w, h, NULL, NULL, 0, NULL)));
    /* the residual: the scene's own points on their own edges are on the
     * line (the map's points are these very points); shifted by 0.4 px in
     * x, the partners are still found within a pixel and their rms
     * point-to-line distance grows to the shift's normal part, between
     * 0.4 / sqrt(2) (normals in every direction) and 0.4 */
    double rms0 = -1, rms1 = -1;
    (void)gm_corner_sigma_cpu(&map, &all, GM_MODEL_SIMILARITY, hid, w, h, NULL, NULL, 0, &rms0);
    double hs[9];
    memcpy(hs, hid, sizeof hs);
    hs[2] += 0.4;
    (void)gm_corner_sigma_cpu(&map, &all, GM_MODEL_SIMILARITY, hs, w, h, NULL, NULL, 0, &rms1);
    if (!(rms0 >= 0 && rms0 < 0.05 && rms1 > 0.4 / sqrt(2.0) - 0.05 && rms1 < 0.45))
        ck_abort_msg("residual rms %.4f px on the truth, %.4f px shifted 0.4 px", rms0, rms1);
    double rms_few = -1;
    gm_points none = {all.p, 0};
    (void)gm_corner_sigma_cpu(&map, &none, GM_MODEL_SIMILARITY, hid, w, h, NULL, NULL, 0, &rms_few);
    EXPECT(isnan(rms_few));
    free(one);
    view_close(&v);
}
END_TEST

/* gm_corner_sigma_cpu under each model, on point sets drawn directly (the
 * query's points are the reference's, h the identity, every partner at 0):
 * (a) circles, normals every way: every model's corners pinned, well under
 * a pixel; (b) vertical lines only: the corners free along them, INFINITY
 * under every model; (c) the lines with a short horizontal bar at the
 * centre: a similarity is pinned (the bar fixes the slide along the lines,
 * the lines the turn), an affine is not (a shear slides each line by its
 * own amount and the bar at the centre cannot see it): its corners' sigma
 * several times the similarity's. */
static gm_points sigma_points(int circles, int lines, int bar)
{
    gm_points pts = {xmalloc(20000, sizeof(gm_point)), 0};
    if (circles)
        for (int c = 0; c < 9; c++)
            for (int k = 0; k < 120; k++) {
                double a = 2 * GM_PI * k / 120, cx = 40 + 60 * (c % 3), cy = 35 + 55 * (c / 3);
                pts.p[pts.n++] = (gm_point){(float)(cx + 18 * cos(a)), (float)(cy + 18 * sin(a)),
                                            (float)a, 1};
            }
    if (lines)
        for (int x = 20; x < 220; x += 25)
            for (int y = 10; y < 190; y++)
                pts.p[pts.n++] = (gm_point){(float)x, (float)y, 0, 1};
    if (bar)
        for (int x = 100; x < 140; x++)
            pts.p[pts.n++] = (gm_point){(float)x + 0.5f, 100, (float)(GM_PI / 2), 1};
    return pts;
}

START_TEST(test_corner_sigma_models)
{
    const int w = 240, h = 200;
    const double H[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY};
    double sig[3][3];
    for (int set = 0; set < 3; set++) {
        gm_points pts = sigma_points(set == 0, set > 0, set == 2);
        gm_edge_map map;
        EXPECT_EQ(gm_edge_map_build_cpu(&pts, w, h, 2, &map), GM_OK);
        for (int m = 0; m < 3; m++)
            sig[set][m] = gm_corner_sigma_cpu(&map, &pts, models[m], H, w, h, NULL, NULL, 0, NULL);
        gm_edge_map_free(&map);
        free(pts.p);
    }
    for (int m = 0; m < 3; m++) {
        ck_assert_msg(sig[0][m] < 1.0, "circles, model %d: sigma %.3f", m, sig[0][m]);
        ck_assert_msg(!(sig[1][m] < 100.0), "lines, model %d: sigma %.3f", m, sig[1][m]);
    }
    ck_assert_msg(sig[2][0] < 2.0, "lines and a bar, similarity: sigma %.3f", sig[2][0]);
    ck_assert_msg(sig[2][1] > 4 * sig[2][0], "lines and a bar: affine %.3f against similarity %.3f",
                  sig[2][1], sig[2][0]);
}
END_TEST

/* The bound of a fit on drawn edges with known noise: the circles' points
 * moved along their normals by N(0, GM_SIGMA_PX) noise, one draw for every
 * GM_SIGMA_PIXELS_PER_OBS neighbours (the independence the covariance
 * assumes), the similarity refined from the truth (the identity) and its
 * corners' error set against gm_uncertainty_px of the fit's sigma: within
 * it in at least 90% of 40 trials (the promise is 95% over real images),
 * and not vacuous (the median error at least a tenth of the bound).  Then
 * parallel lines with a short bar: the bound of an affine, which the bar
 * cannot pin along the lines, several times the similarity's; lines alone:
 * no bound; a perfect fit: the floor. */
START_TEST(test_uncertainty_bound)
{
    const int w = 240, h = 200;
    const double H0[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    gm_points ref = sigma_points(1, 0, 0);
    gm_edge_map map;
    EXPECT_EQ(gm_edge_map_build_cpu(&ref, w, h, 2, &map), GM_OK);
    gm_point *buf = xmalloc(ref.n, sizeof *buf);
    gm_points q = {buf, ref.n};
    rng_state = 12345;
    int within = 0, trials = 40;
    double ratio[40];
    for (int t = 0; t < trials; t++) {
        double n = 0;
        for (uint32_t k = 0; k < ref.n; k++) {
            if (k % (uint32_t)GM_SIGMA_PIXELS_PER_OBS == 0) /* Box-Muller */
                n = GM_SIGMA_PX * sqrt(-2 * log(1 - rng_unit())) * cos(2 * GM_PI * rng_unit());
            gm_point p = ref.p[k];
            p.x += (float)(n * cos(p.angle));
            p.y += (float)(n * sin(p.angle));
            buf[k] = p;
        }
        double H[9];
        memcpy(H, H0, sizeof H);
        gm_refine_model_cpu(&map, &q, GM_MODEL_SIMILARITY, H, 10);
        double sigma = gm_corner_sigma_cpu(&map, &q, GM_MODEL_SIMILARITY, H, w, h, NULL, NULL, 0, NULL);
        double u = gm_uncertainty_px(sigma), e = 0;
        const double cx[4] = {0, w - 1.0, w - 1.0, 0}, cy[4] = {0, 0, h - 1.0, h - 1.0};
        for (int c = 0; c < 4; c++) {
            double x, y;
            gm_h_apply(H, cx[c], cy[c], &x, &y);
            e += hypot(x - cx[c], y - cy[c]) / 4;
        }
        within += e <= u;
        ratio[t] = e / u;
    }
    qsort(ratio, (size_t)trials, sizeof *ratio, cmp_double);
    ck_assert_msg(within >= 36, "error within the bound in %d of %d trials", within, trials);
    ck_assert_msg(ratio[trials / 2] >= 0.1, "median error / bound %.3f: a vacuous bound",
                  ratio[trials / 2]);
    gm_edge_map_free(&map);
    free(buf);
    free(ref.p);
    /* lines and a bar: affine against similarity; lines alone: no bound */
    for (int bar = 1; bar >= 0; bar--) {
        gm_points pts = sigma_points(0, 1, bar);
        EXPECT_EQ(gm_edge_map_build_cpu(&pts, w, h, 2, &map), GM_OK);
        double us = gm_uncertainty_px(
            gm_corner_sigma_cpu(&map, &pts, GM_MODEL_SIMILARITY, H0, w, h, NULL, NULL, 0, NULL));
        double ua = gm_uncertainty_px(
            gm_corner_sigma_cpu(&map, &pts, GM_MODEL_AFFINE, H0, w, h, NULL, NULL, 0, NULL));
        if (bar)
            ck_assert_msg(isfinite(us) && ua > 3 * us, "lines and a bar: affine %.3f, similarity %.3f",
                          ua, us);
        else
            ck_assert_msg(isinf(us) && isinf(ua), "lines alone: %.3f, %.3f", us, ua);
        gm_edge_map_free(&map);
        free(pts.p);
    }
    ck_assert_double_eq_tol(gm_uncertainty_px(0), GM_UNC_FLOOR, 1e-12);
}
END_TEST

static Suite *verify_suite(void)
{
    Suite *s = suite_create("verify");
    TCase *map = tcase_create("map");
    tcase_set_timeout(map, 60);
    tcase_add_test(map, test_map_single_point);
    tcase_add_test(map, test_map_bins);
    tcase_add_test(map, test_map_brute_force);
    tcase_add_test(map, test_map_empty);
    tcase_add_test(map, test_map_empty_windows);
    tcase_add_test(map, test_map_pixels_later);
    tcase_add_test(map, test_map_shared_pixel);
    suite_add_tcase(s, map);
    TCase *sc = tcase_create("score");
    tcase_set_timeout(sc, 60);
    tcase_add_test(sc, test_verify_scores);
    tcase_add_test(sc, test_verify_shared);
    tcase_add_test(sc, test_strict_cos);
    tcase_add_test(sc, test_corner_sigma);
    suite_add_tcase(s, sc);
    TCase *rf = tcase_create("refine");
    tcase_set_timeout(rf, 120);
    tcase_add_test(rf, test_refine_converges);
    tcase_add_test(rf, test_refine_models);
    tcase_add_test(rf, test_corner_sigma_models);
    tcase_add_test(rf, test_uncertainty_bound);
    tcase_add_test(rf, test_grow_model);
    tcase_add_test(rf, test_corner_spread);
    tcase_add_test(rf, test_refine_few_points);
    tcase_add_test(rf, test_threads);
    tcase_add_test(rf, test_refine_together);
    suite_add_tcase(s, rf);
    return s;
}

int main(void)
{
    return run_suite(verify_suite());
}
