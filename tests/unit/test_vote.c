/* test_vote.c: voting through the multi-value table (vote.c), on a small
 * constructed scene: reference points, the query the same points under a
 * similarity.  The whole vote matrix is recounted by brute force over the
 * (key, basis) items, and the cell of each corresponding basis pair must
 * hold the number of cloud points inside its window and be its row's
 * maximum. */
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
#include "stages/vote.h"
#include "stages/reduce.h"
#include "test_util.h"

/* as in matcher.c: at most 96 * 96 * 16 distinct keys */
#define KEY_BOUND (2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS)

/* n points in [x0, x0+w) x [y0, y0+h), no two closer than dmin. */
static gm_points spaced_points(uint32_t n, double x0, double y0, double w, double h, double dmin)
{
    gm_points p = {xmalloc(n, sizeof(gm_point)), 0};
    for (int tries = 0; p.n < n && tries < 100000; tries++) {
        double x = x0 + rng_unit() * w, y = y0 + rng_unit() * h;
        int ok = 1;
        for (uint32_t i = 0; i < p.n && ok; i++)
            ok = hypot(p.p[i].x - x, p.p[i].y - y) >= dmin;
        if (ok)
            p.p[p.n++] = (gm_point){(float)x, (float)y, (float)((rng_unit() * 2 - 1) * GM_PI), 1};
    }
    EXPECT_EQ(p.n, n);
    return p;
}

typedef struct {
    double c, s, tx, ty, th;
} simil;

static gm_points transform_points(const gm_points *in, simil T)
{
    gm_points out = {xmalloc(in->n, sizeof(gm_point)), in->n};
    for (uint32_t i = 0; i < in->n; i++) {
        gm_point p = in->p[i];
        double a = p.angle + T.th;
        a = a > GM_PI ? a - 2 * GM_PI : a <= -GM_PI ? a + 2 * GM_PI : a;
        out.p[i] = (gm_point){(float)(T.c * p.x - T.s * p.y + T.tx), (float)(T.s * p.x + T.c * p.y + T.ty),
                              (float)a, p.w};
    }
    return out;
}

static simil make_simil(double deg, double scale, double tx, double ty)
{
    double th = deg * GM_PI / 180;
    return (simil){scale * cos(th), scale * sin(th), tx, ty, th};
}

/* The reference side: items of all bases over the cloud, in a multi table. */
typedef struct {
    uint32_t *keys, *vals, n;
    gm_multi table;
} ref_t;

static void build_ref(const gm_points *bp, const uint32_t *bk, uint32_t nb, const gm_points *cloud,
                      ref_t *r)
{
    EXPECT_EQ(gm_basis_items_cpu(bp, bk, nb, cloud, &r->keys, &r->vals, &r->n), GM_OK);
    EXPECT_EQ(gm_multi_build_cpu(&r->table, r->keys, r->vals, r->n, KEY_BOUND, 0x7AB1E, NULL), GM_OK);
}

static void free_ref(ref_t *r)
{
    free(r->keys);
    free(r->vals);
    gm_multi_free(&r->table);
}

/* The vote matrix by brute force: every query basis, every query cloud point
 * not within 2 px of its endpoints, every item with the point's key. */
static uint16_t *brute_votes(const ref_t *r, uint32_t n_ref, const gm_points *qbp, const uint32_t *qk,
                             uint32_t n_q, const gm_points *qcloud)
{
    uint32_t *acc = calloc((size_t)n_q * n_ref + 1, sizeof *acc);
    ck_assert_ptr_nonnull(acc);
    for (uint32_t q = 0; q < n_q; q++) {
        gm_point a = qbp->p[qk[q] >> 16], b = qbp->p[qk[q] & 0xFFFF];
        for (uint32_t k = 0; k < qcloud->n; k++) {
            gm_point p = qcloud->p[k];
            if (hypot((double)p.x - a.x, (double)p.y - a.y) < 2.0 ||
                hypot((double)p.x - b.x, (double)p.y - b.y) < 2.0)
                continue;
            uint32_t key = gm_basis_key(a, b, p);
            if (key == GM_KEY_EMPTY)
                continue;
            for (uint32_t i = 0; i < r->n; i++)
                if (r->keys[i] == key)
                    acc[(size_t)q * n_ref + r->vals[i]]++;
        }
    }
    uint16_t *v = xmalloc((size_t)n_q * n_ref, sizeof *v);
    for (size_t i = 0; i < (size_t)n_q * n_ref; i++)
        v[i] = (uint16_t)(acc[i] > 65535 ? 65535 : acc[i]);
    free(acc);
    return v;
}

static uint16_t *run_vote(const ref_t *r, uint32_t n_ref, const gm_points *qbp, const uint32_t *qk,
                          uint32_t n_q, const gm_points *qcloud)
{
    uint16_t *v = xmalloc((size_t)n_q * n_ref, sizeof *v);
    memset(v, 0xAB, (size_t)n_q * n_ref * sizeof *v); /* rows must be cleared by the stage */
    gm_vote_cpu(&r->table, n_ref, qbp, qk, n_q, qcloud, v);
    return v;
}

/* The matrix equals the brute-force recount, for the true query, an
 * unrelated query, and a query with more points than the reference. */
START_TEST(test_matrix_brute_force)
{
    rng_state = 0x707E;
    gm_points bp = spaced_points(14, 20, 20, 160, 160, 8);
    gm_points cloud = spaced_points(90, 0, 0, 200, 200, 5);
    gm_bases rb;
    EXPECT_EQ(gm_bases_select_cpu(&bp, 20, 130, 1.0, 1, &rb), GM_OK);
    EXPECT(rb.n > 60);
    ref_t r;
    build_ref(&bp, rb.key, rb.n, &cloud, &r);
    EXPECT(r.n > 1000);

    for (int variant = 0; variant < 3; variant++) {
        gm_points qbp, qcl;
        if (variant == 0) { /* the same scene under a similarity */
            simil T = make_simil(-35, 1.3, 40, -20);
            qbp = transform_points(&bp, T);
            qcl = transform_points(&cloud, T);
        } else if (variant == 1) { /* unrelated */
            qbp = spaced_points(14, 0, 0, 200, 200, 8);
            qcl = spaced_points(90, 0, 0, 200, 200, 5);
        } else { /* the reference itself plus noise points */
            qbp = transform_points(&bp, make_simil(0, 1, 0, 0));
            qcl = spaced_points(200, 0, 0, 200, 200, 2);
        }
        /* the basis points vote too (at their own endpoints they must not) */
        gm_point *grown = realloc(qcl.p, (qcl.n + qbp.n) * sizeof *grown);
        ck_assert_ptr_nonnull(grown);
        memcpy(grown + qcl.n, qbp.p, qbp.n * sizeof *grown);
        qcl.p = grown;
        qcl.n += qbp.n;
        gm_bases qb;
        EXPECT_EQ(gm_bases_select_cpu(&qbp, 10, 300, 0.5, 9, &qb), GM_OK);
        uint16_t *got = run_vote(&r, rb.n, &qbp, qb.key, qb.n, &qcl);
        uint16_t *want = brute_votes(&r, rb.n, &qbp, qb.key, qb.n, &qcl);
        uint64_t total = 0;
        for (size_t i = 0; i < (size_t)qb.n * rb.n; i++) {
            if (got[i] != want[i])
                ck_abort_msg("variant %d: cell (q %zu, r %zu): %u votes, brute force %u", variant,
                             i / rb.n, i % rb.n, got[i], want[i]);
            total += got[i];
        }
        EXPECT(total > 100); /* votes were cast */
        /* the fused row-at-a-time vote and reduction: each row's best equals
         * the per-row reduction of the whole matrix, with uneven shares */
        float *share = xmalloc(rb.n, sizeof *share);
        for (uint32_t i = 0; i < rb.n; i++)
            share[i] = (float)(1 + i % 7) / (float)(4 * rb.n);
        gm_candidate *rows = xmalloc(qb.n, sizeof *rows);
        EXPECT_EQ(gm_vote_rows_cpu(&r.table, rb.n, share, &qbp, qb.key, qb.n, &qcl, rows), GM_OK);
        for (uint32_t q = 0; q < qb.n; q++) {
            gm_candidate c = gm_reduce_row_cpu(got + (size_t)q * rb.n, share, rb.n, q);
            if (memcmp(&c, &rows[q], sizeof c) != 0)
                ck_abort_msg("variant %d: row %u: fused best (%u, %u votes, %g), matrix (%u, %u, %g)",
                             variant, q, rows[q].ref_basis, rows[q].votes, rows[q].score,
                             c.ref_basis, c.votes, c.score);
        }
        free(rows);
        free(share);
        free(got);
        free(want);
        free(qb.key);
        free(qbp.p);
        free(qcl.p);
    }
    free_ref(&r);
    free(rb.key);
    free(bp.p);
    free(cloud.p);
}
END_TEST

/* Short bases on a wide cloud: gm_vote_rows_cpu takes only the cloud
 * points in each basis's key box (most of them outside it here), and must
 * still give every row's best as the whole matrix's per-row reduction. */
START_TEST(test_rows_short_bases)
{
    rng_state = 0x5B0A;
    gm_points bp = spaced_points(220, 0, 0, 900, 600, 10);
    gm_points cloud = spaced_points(2500, 0, 0, 900, 600, 3);
    gm_bases rb;
    EXPECT_EQ(gm_bases_select_cpu(&bp, 12, 70, 1.0, 1, &rb), GM_OK);
    EXPECT(rb.n > 100);
    ref_t r;
    build_ref(&bp, rb.key, rb.n, &cloud, &r);
    simil T = make_simil(25, 0.8, 30, -15);
    gm_points qbp = transform_points(&bp, T), qcl = transform_points(&cloud, T);
    gm_bases qb;
    EXPECT_EQ(gm_bases_select_cpu(&qbp, 9, 60, 1.0, 9, &qb), GM_OK);
    EXPECT(qb.n > 100);
    uint16_t *got = run_vote(&r, rb.n, &qbp, qb.key, qb.n, &qcl);
    float *share = xmalloc(rb.n, sizeof *share);
    for (uint32_t i = 0; i < rb.n; i++)
        share[i] = (float)(1 + i % 5) / (float)(3 * rb.n);
    gm_candidate *rows = xmalloc(qb.n, sizeof *rows);
    EXPECT_EQ(gm_vote_rows_cpu(&r.table, rb.n, share, &qbp, qb.key, qb.n, &qcl, rows), GM_OK);
    uint32_t voted = 0;
    for (uint32_t q = 0; q < qb.n; q++) {
        gm_candidate c = gm_reduce_row_cpu(got + (size_t)q * rb.n, share, rb.n, q);
        if (memcmp(&c, &rows[q], sizeof c) != 0)
            ck_abort_msg("row %u: fused best (%u, %u votes, %g), matrix (%u, %u, %g)", q,
                         rows[q].ref_basis, rows[q].votes, rows[q].score, c.ref_basis, c.votes,
                         c.score);
        voted += c.votes > 0;
    }
    EXPECT(voted > qb.n / 2);
    free(rows), free(share), free(got);
    free(qb.key), free(qbp.p), free(qcl.p);
    free_ref(&r);
    free(rb.key), free(bp.p), free(cloud.p);
}
END_TEST

static int near_int(double x, double tol) { return fabs(x - floor(x + 0.5)) < tol; }

/* The corresponding pair: query basis d (the image of reference basis d).
 * For each tested d the clouds are first cleared of points within 0.02 of a
 * cell or bin boundary in d's frame, so every remaining point has the same
 * key in both images; then cell (d, d) holds exactly the number of cloud
 * points in d's window (not at its endpoints), computed here by brute force
 * in the reference frame, and nothing in row d has more. */
START_TEST(test_corresponding_cell)
{
    static const struct {
        double deg, scale, tx, ty;
    } sims[] = {{-35, 1.3, 40, -20}, {90, 2.0, 300, 5}, {170, 0.7, -10, 250}, {0, 1.0, 0.5, 0.25}};
    rng_state = 0xC0DE;
    for (size_t si = 0; si < sizeof sims / sizeof *sims; si++) {
        simil T = make_simil(sims[si].deg, sims[si].scale, sims[si].tx, sims[si].ty);
        gm_points bp = spaced_points(10, 30, 30, 140, 140, 10);
        gm_bases rb;
        EXPECT_EQ(gm_bases_select_cpu(&bp, 25, 120, 1.0, 5, &rb), GM_OK);
        EXPECT(rb.n >= 20);
        gm_points qbp = transform_points(&bp, T);
        for (uint32_t d = 0; d < rb.n; d += 7) {
            gm_point a = bp.p[rb.key[d] >> 16], b = bp.p[rb.key[d] & 0xFFFF];
            /* the cloud: the basis points and random points 6 px apart (so
             * none is within 2 px of an endpoint in either image but the
             * endpoints themselves), cleared of boundary cases */
            gm_points raw = spaced_points(120, 0, 0, 200, 200, 6);
            gm_points cloud = {xmalloc(raw.n + bp.n, sizeof(gm_point)), 0};
            uint32_t expected = 0;
            for (uint32_t k = 0; k < raw.n + bp.n; k++) {
                gm_point p = k < raw.n ? raw.p[k] : bp.p[k - raw.n];
                int far = 1;
                for (uint32_t i = 0; i < bp.n && far; i++)
                    far = k >= raw.n || hypot(p.x - bp.p[i].x, p.y - bp.p[i].y) >= 6;
                if (!far)
                    continue;
                double dx = (double)b.x - a.x, dy = (double)b.y - a.y, l2 = dx * dx + dy * dy;
                double px = (double)p.x - a.x, py = (double)p.y - a.y;
                double u = 16 * (px * dx + py * dy) / l2, v = 16 * (py * dx - px * dy) / l2;
                double bin = ((double)p.angle - atan2(dy, dx)) * 16 / (2 * GM_PI);
                if (near_int(u, 0.02) || near_int(v, 0.02) || near_int(bin, 0.02))
                    continue;
                cloud.p[cloud.n++] = p;
                int at_end = hypot(px, py) < 2 || hypot(p.x - b.x, p.y - b.y) < 2;
                if (!at_end && floor(u) >= -(GM_UV_HALF - 8) && floor(u) < GM_UV_HALF + 8 && floor(v) >= -GM_UV_HALF && floor(v) < GM_UV_HALF)
                    expected++;
            }
            EXPECT(expected >= 15);
            ref_t r;
            build_ref(&bp, rb.key, rb.n, &cloud, &r);
            gm_points qcl = transform_points(&cloud, T);
            uint16_t *v = run_vote(&r, rb.n, &qbp, rb.key, rb.n, &qcl);
            uint16_t *row = v + (size_t)d * rb.n;
            if (row[d] != expected)
                ck_abort_msg("similarity %zu basis %u: %u votes, %u cloud points in the window", si, d,
                             row[d], expected);
            for (uint32_t x = 0; x < rb.n; x++)
                EXPECT(row[x] <= row[d]);
            /* the votes of the whole matrix as the brute force counts them */
            uint16_t *want = brute_votes(&r, rb.n, &qbp, rb.key, rb.n, &qcl);
            EXPECT(memcmp(v, want, (size_t)rb.n * rb.n * sizeof *v) == 0);
            free(want);
            free(v);
            free(qcl.p);
            free_ref(&r);
            free(cloud.p);
            free(raw.p);
        }
        free(qbp.p);
        free(rb.key);
        free(bp.p);
    }
}
END_TEST

/* Counts saturate at 65535: 70000 copies of one point, one query basis, a
 * reference that stores that point's key for bases 0 and 2 (not 1). */
START_TEST(test_saturation)
{
    gm_point bp_[3] = {{0, 0, 0, 1}, {16, 0, 0, 1}, {0, 16, 0, 1}};
    gm_points bp = {bp_, 3};
    gm_point p = {5.5f, 3.5f, 0.3f, 1};
    uint32_t key = gm_basis_key(bp_[0], bp_[1], p);
    EXPECT(key != GM_KEY_EMPTY);
    uint32_t keys[3] = {key, key, key ^ 1}, vals[3] = {0, 2, 1};
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, 3, KEY_BOUND, 5, NULL), GM_OK);
    uint32_t n = 70000;
    gm_points cloud = {xmalloc(n, sizeof(gm_point)), n};
    for (uint32_t i = 0; i < n; i++)
        cloud.p[i] = p;
    uint32_t qk[1] = {0 << 16 | 1};
    uint16_t votes[3] = {7, 7, 7};
    gm_vote_cpu(&t, 3, &bp, qk, 1, &cloud, votes);
    EXPECT_EQ(votes[0], 65535);
    EXPECT_EQ(votes[1], 0);
    EXPECT_EQ(votes[2], 65535);
    /* 1000 copies: exact */
    cloud.n = 1000;
    gm_vote_cpu(&t, 3, &bp, qk, 1, &cloud, votes);
    EXPECT_EQ(votes[0], 1000);
    EXPECT_EQ(votes[1], 0);
    EXPECT_EQ(votes[2], 1000);
    /* no query bases: nothing written */
    gm_vote_cpu(&t, 3, &bp, qk, 0, &cloud, votes);
    EXPECT_EQ(votes[0], 1000);
    free(cloud.p);
    gm_multi_free(&t);
}
END_TEST

/* Same matrix with 1 and 2 threads. */
START_TEST(test_threads)
{
#ifdef _OPENMP
    rng_state = 0x7407;
    gm_points bp = spaced_points(16, 0, 0, 200, 200, 8), cloud = spaced_points(150, 0, 0, 200, 200, 3);
    gm_bases rb;
    EXPECT_EQ(gm_bases_select_cpu(&bp, 20, 150, 1.0, 2, &rb), GM_OK);
    ref_t r;
    build_ref(&bp, rb.key, rb.n, &cloud, &r);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    uint16_t *a = run_vote(&r, rb.n, &bp, rb.key, rb.n, &cloud);
    omp_set_num_threads(2);
    uint16_t *b = run_vote(&r, rb.n, &bp, rb.key, rb.n, &cloud);
    omp_set_num_threads(saved);
    EXPECT(memcmp(a, b, (size_t)rb.n * rb.n * sizeof *a) == 0);
    /* the identity: every basis votes most for itself */
    for (uint32_t q = 0; q < rb.n; q++)
        for (uint32_t x = 0; x < rb.n; x++)
            EXPECT(a[(size_t)q * rb.n + x] <= a[(size_t)q * rb.n + q]);
    free(a);
    free(b);
    free_ref(&r);
    free(rb.key);
    free(bp.p);
    free(cloud.p);
#endif
}
END_TEST

static Suite *vote_suite(void)
{
    Suite *s = suite_create("vote");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_matrix_brute_force);
    tcase_add_test(tc, test_rows_short_bases);
    tcase_add_test(tc, test_corresponding_cell);
    tcase_add_test(tc, test_saturation);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(vote_suite());
}
