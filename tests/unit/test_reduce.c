/* test_reduce.c: the top-k reduction of the vote matrix (reduce.c): the
 * best cell of each query-basis row by votes above chance, (v - l) /
 * sqrt(l + 1) with l = row total * the basis's share of the table (lowest
 * reference index on ties, cells without votes never chosen), then the k
 * best rows sorted by that score descending, ties by query index. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "stages/reduce.h"
#include "test_util.h"

#define EXPECT_CAND(c, r, q, v)                                               \
    do {                                                                      \
        EXPECT_EQ((c).ref_basis, r);                                          \
        EXPECT_EQ((c).query_basis, q);                                        \
        EXPECT_EQ((c).votes, v);                                              \
    } while (0)

/* The score of a cell: (v - l) / sqrt(l + 1), l = row total * share[r]. */
static double score(double v, double total, double share)
{
    double l = total * share;
    return (v - l) / sqrt(l + 1);
}

/* 4 query rows x 5 reference columns, every basis the same share 0.2, so
 * within a row the score follows the votes:
 *   q0: 1 9 3 9 0   total 22, l 4.4: best r1 (9; r3 ties, lower index wins),
 *                   score 4.6 / sqrt 5.4 = 1.9795
 *   q1: 0 0 0 0 0   no vote: (r0, 0 votes, score -inf), last
 *   q2: 2 2 12 1 12 total 29, l 5.8: best r2, 6.2 / sqrt 6.8 = 2.3776
 *   q3: 9 0 0 0 4   total 13, l 2.6: best r0, 6.4 / sqrt 3.6 = 3.3731
 * sorted by score: q3, q2, q0, q1 (q3's 9 votes beat q2's 12: above chance
 * counts, not raw votes). */
static const uint16_t M[4 * 5] = {1, 9, 3, 9, 0, 0, 0, 0, 0, 0, 2, 2, 12, 1, 12, 9, 0, 0, 0, 4};
static const float U5[5] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};

START_TEST(test_hand_matrix)
{
    gm_candidate out[8];
    memset(out, 0xEE, sizeof out);
    EXPECT_EQ(gm_reduce_topk_cpu(M, U5, 5, 4, 4, out), 4);
    EXPECT_CAND(out[0], 0, 3, 9);
    EXPECT_CAND(out[1], 2, 2, 12);
    EXPECT_CAND(out[2], 1, 0, 9);
    EXPECT_CAND(out[3], 0, 1, 0);
    EXPECT(fabsf(out[0].score - 3.3731f) < 1e-3f);
    EXPECT(fabsf(out[1].score - 2.3776f) < 1e-3f);
    EXPECT(fabsf(out[2].score - 1.9795f) < 1e-3f);
    EXPECT(out[3].score < -1e30f);
    /* k = 2: the first two, nothing written past them */
    memset(out, 0xEE, sizeof out);
    EXPECT_EQ(gm_reduce_topk_cpu(M, U5, 5, 4, 2, out), 2);
    EXPECT_CAND(out[0], 0, 3, 9);
    EXPECT_CAND(out[1], 2, 2, 12);
    EXPECT_EQ(out[2].votes, 0xEEEEEEEEu);
    /* k larger than the rows: one per row, no more */
    memset(out, 0xEE, sizeof out);
    EXPECT_EQ(gm_reduce_topk_cpu(M, U5, 5, 4, 8, out), 4);
    EXPECT_CAND(out[3], 0, 1, 0);
    EXPECT_EQ(out[4].votes, 0xEEEEEEEEu);
    /* k = 1 */
    EXPECT_EQ(gm_reduce_topk_cpu(M, U5, 5, 4, 1, out), 1);
    EXPECT_CAND(out[0], 0, 3, 9);
}
END_TEST

/* The share decides between equal counts: row (5, 5) with shares 0.9 and
 * 0.1 (total 10): r0 expects 9 (score -4 / sqrt 10), r1 expects 1 (score
 * 4 / sqrt 2 = 2.83): r1.  A cell without votes is never the best, even
 * when its score would tie: row (0, 1), shares (0, 1): r0 would score 0,
 * r1 scores (1 - 1) / sqrt 2 = 0; r1. */
START_TEST(test_share)
{
    static const uint16_t m[3 * 2] = {5, 5, 0, 1, 6, 6};
    static const float sh[2] = {0.9f, 0.1f}, sh01[2] = {0.0f, 1.0f};
    gm_candidate out[3];
    EXPECT_EQ(gm_reduce_topk_cpu(m, sh, 2, 1, 1, out), 1);
    EXPECT_CAND(out[0], 1, 0, 5);
    EXPECT(fabs(out[0].score - 4 / sqrt(2.0)) < 1e-4);
    EXPECT_EQ(gm_reduce_topk_cpu(m + 2, sh01, 2, 1, 1, out), 1);
    EXPECT_CAND(out[0], 1, 0, 1);
    EXPECT(fabsf(out[0].score) < 1e-6f);
    /* uniform shares: (5, 5) and (6, 6) tie inside their rows -> r0; row
     * (6, 6) scores (6 - 6) / sqrt 7 = 0, row (5, 5) 0 too: by query index */
    static const float half[2] = {0.5f, 0.5f};
    static const uint16_t t[2 * 2] = {6, 6, 5, 5};
    EXPECT_EQ(gm_reduce_topk_cpu(t, half, 2, 2, 2, out), 2);
    EXPECT_CAND(out[0], 0, 0, 6);
    EXPECT_CAND(out[1], 0, 1, 5);
}
END_TEST

/* Degenerate sizes return 0 and write nothing. */
START_TEST(test_empty)
{
    gm_candidate out[2];
    memset(out, 0xEE, sizeof out);
    EXPECT_EQ(gm_reduce_topk_cpu(M, U5, 0, 4, 2, out), 0);
    EXPECT_EQ(gm_reduce_topk_cpu(M, U5, 5, 0, 2, out), 0);
    EXPECT_EQ(gm_reduce_topk_cpu(M, U5, 5, 4, 0, out), 0);
    EXPECT_EQ(out[0].votes, 0xEEEEEEEEu);
    /* one column (share 1): every row's best is column 0, score
     * (v - v) / sqrt(v + 1) = 0: ties by query index */
    static const uint16_t col[3] = {5, 65535, 5};
    static const float one[1] = {1.0f};
    EXPECT_EQ(gm_reduce_topk_cpu(col, one, 1, 3, 2, out), 2);
    EXPECT_CAND(out[0], 0, 0, 5);
    EXPECT_CAND(out[1], 0, 1, 65535);
}
END_TEST

/* The last column wins when it alone is the best; saturated rows work. */
START_TEST(test_row_extremes)
{
    static const uint16_t m[2 * 4] = {0, 0, 0, 7, 65535, 65535, 65535, 65534};
    static const float u4[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    gm_candidate out[2];
    EXPECT_EQ(gm_reduce_topk_cpu(m, u4, 4, 2, 2, out), 2);
    /* row 0: total 7, l 1.75, score 5.25 / sqrt 2.75 = 3.166;
     * row 1: total 262139, l 65534.75, best r0: 0.25 / 256 = 0.001 */
    EXPECT_CAND(out[0], 3, 0, 7);
    EXPECT_CAND(out[1], 0, 1, 65535);
    EXPECT(fabs(out[0].score - score(7, 7, 0.25)) < 1e-4);
}
END_TEST

/* Random matrices and shares against a straightforward reference (scores
 * in double; the ranking is compared where scores are not within 1e-3): one
 * candidate per row (distinct query bases), each its row's best non-zero
 * cell, sorted by score descending, the k best rows. */
START_TEST(test_random_reference)
{
    rng_state = 0x4ED0CE;
    for (int t = 0; t < 40; t++) {
        uint32_t n_ref = 1 + rng_next() % 300, n_q = 1 + rng_next() % 200, k = 1 + rng_next() % 64;
        uint32_t range = 1 + rng_next() % 300;
        uint16_t *v = xmalloc((size_t)n_ref * n_q, sizeof *v);
        for (size_t i = 0; i < (size_t)n_ref * n_q; i++)
            v[i] = (uint16_t)(rng_next() % 4 == 0 ? rng_next() % range : 0);
        float *share = xmalloc(n_ref, sizeof *share);
        double sum = 0;
        for (uint32_t r = 0; r < n_ref; r++)
            sum += share[r] = (float)(1 + rng_next() % 1000);
        for (uint32_t r = 0; r < n_ref; r++)
            share[r] = (float)(share[r] / sum);
        gm_candidate *out = xmalloc(k, sizeof *out);
        uint32_t m = gm_reduce_topk_cpu(v, share, n_ref, n_q, k, out);
        EXPECT_EQ(m, n_q < k ? n_q : k);
        /* reference: each row's best score over its non-zero cells */
        double *bs = xmalloc(n_q, sizeof *bs);
        for (uint32_t q = 0; q < n_q; q++) {
            const uint16_t *row = v + (size_t)q * n_ref;
            double total = 0;
            for (uint32_t r = 0; r < n_ref; r++)
                total += row[r];
            bs[q] = -INFINITY;
            for (uint32_t r = 0; r < n_ref; r++)
                if (row[r])
                    bs[q] = fmax(bs[q], score(row[r], total, share[r]));
        }
        char *seen = calloc(n_q, 1);
        ck_assert_ptr_nonnull(seen);
        for (uint32_t i = 0; i < m; i++) {
            gm_candidate c = out[i];
            EXPECT(c.query_basis < n_q && c.ref_basis < n_ref);
            EXPECT(!seen[c.query_basis]); /* distinct query bases */
            seen[c.query_basis] = 1;
            const uint16_t *row = v + (size_t)c.query_basis * n_ref;
            EXPECT_EQ(c.votes, row[c.ref_basis]);
            if (isinf(bs[c.query_basis])) { /* an empty row */
                EXPECT_EQ(c.ref_basis, 0);
                EXPECT(isinf(c.score) && c.score < 0);
                continue;
            }
            EXPECT(row[c.ref_basis] > 0);
            double total = 0;
            for (uint32_t r = 0; r < n_ref; r++)
                total += row[r];
            double sc = score(row[c.ref_basis], total, share[c.ref_basis]);
            EXPECT(fabs(sc - bs[c.query_basis]) < 1e-3 * (1 + fabs(sc))); /* the row's best */
            EXPECT(fabs(c.score - sc) < 1e-3 * (1 + fabs(sc)));
            if (i > 0)
                EXPECT(out[i - 1].score > c.score ||
                       (out[i - 1].score == c.score && out[i - 1].query_basis < c.query_basis));
        }
        /* nothing left out scores clearly better than the last one taken */
        for (uint32_t q = 0; q < n_q; q++)
            if (!seen[q] && m > 0 && !isinf(bs[q]))
                EXPECT(bs[q] <= out[m - 1].score + 1e-3 * (1 + fabs(bs[q])));
        free(seen);
        free(bs);
        free(out);
        free(share);
        free(v);
    }
}
END_TEST

START_TEST(test_threads)
{
#ifdef _OPENMP
    rng_state = 0x7E;
    uint32_t n_ref = 1000, n_q = 400, k = 50;
    uint16_t *v = xmalloc((size_t)n_ref * n_q, sizeof *v);
    for (size_t i = 0; i < (size_t)n_ref * n_q; i++)
        v[i] = (uint16_t)(rng_next() % 50);
    float *share = xmalloc(n_ref, sizeof *share);
    for (uint32_t r = 0; r < n_ref; r++)
        share[r] = (float)(1 + r % 7) / (4.0f * n_ref);
    gm_candidate a[50], b[50];
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    EXPECT_EQ(gm_reduce_topk_cpu(v, share, n_ref, n_q, k, a), k);
    omp_set_num_threads(2);
    EXPECT_EQ(gm_reduce_topk_cpu(v, share, n_ref, n_q, k, b), k);
    omp_set_num_threads(saved);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    free(share);
    free(v);
#endif
}
END_TEST

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_hand_matrix);
    tcase_add_test(tc, test_share);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_row_extremes);
    tcase_add_test(tc, test_random_reference);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(reduce_suite());
}
