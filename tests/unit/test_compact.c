/* test_compact.c: prefix-sum compaction of flagged pixels (compact.c),
 * against a sequential reference, across the block size (16384) and the
 * small-count / heap-count switch (64 blocks). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "stages/compact.h"
#include "test_util.h"

#define GUARD 0xDEADBEEFu

/* Runs the compaction on flags[0..n) and checks it against a sequential
 * loop: same count, same indices in increasing order, nothing written past
 * the count (out has n + 1 slots, all preset to GUARD). */
static void check_flags(const uint8_t *flags, uint32_t n)
{
    uint32_t *out = xmalloc((size_t)n + 1, sizeof *out);
    for (uint32_t i = 0; i <= n; i++)
        out[i] = GUARD;
    uint32_t c = gm_compact_flags_cpu(flags, n, out);
    uint32_t want = 0;
    for (uint32_t i = 0; i < n; i++)
        if (flags[i]) {
            if (out[want] != i)
                ck_abort_msg("n=%u: out[%u] = %u, expected %u", n, want, out[want], i);
            want++;
        }
    EXPECT_EQ(c, want);
    for (uint32_t i = want; i <= n; i++)
        if (out[i] != GUARD)
            ck_abort_msg("n=%u: out[%u] written past the count %u", n, i, want);
    for (uint32_t i = 1; i < c; i++)
        EXPECT(out[i - 1] < out[i]);
    free(out);
}

/* Random flags with probability p/256, flag values 1..255 (any non-zero is set). */
static uint8_t *random_flags(uint32_t n, uint32_t p)
{
    uint8_t *f = xmalloc(n, 1);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = rng_next();
        f[i] = (r & 255) < p ? (uint8_t)(1 + (r >> 8) % 255) : 0;
    }
    return f;
}

START_TEST(test_sizes_random)
{
    static const uint32_t sizes[] = {0, 1, 2, 16383, 16384, 16385, 32768, 65537,
                                     64 * 16384, 64 * 16384 + 1, 1000000};
    static const uint32_t probs[] = {1, 30, 128, 250};
    rng_state = 0xC0117AC7;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t p = 0; p < sizeof probs / sizeof *probs; p++) {
            uint8_t *f = random_flags(sizes[s], probs[p]);
            check_flags(f, sizes[s]);
            free(f);
        }
}
END_TEST

START_TEST(test_all_zero_all_one)
{
    static const uint32_t sizes[] = {1, 16383, 16384, 16385, 1000000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        uint32_t n = sizes[s];
        uint8_t *f = xmalloc(n, 1);
        uint32_t *out = xmalloc((size_t)n + 1, sizeof *out);
        memset(f, 0, n);
        out[0] = GUARD;
        EXPECT_EQ(gm_compact_flags_cpu(f, n, out), 0);
        EXPECT_EQ(out[0], GUARD);
        memset(f, 1, n);
        out[n] = GUARD;
        EXPECT_EQ(gm_compact_flags_cpu(f, n, out), n);
        for (uint32_t i = 0; i < n; i++)
            if (out[i] != i)
                ck_abort_msg("all ones n=%u: out[%u] = %u", n, i, out[i]);
        EXPECT_EQ(out[n], GUARD);
        free(f);
        free(out);
    }
}
END_TEST

/* n = 0: nothing read, nothing written, 0 returned. */
START_TEST(test_empty)
{
    uint32_t out[1] = {GUARD};
    uint8_t f[1] = {1};
    EXPECT_EQ(gm_compact_flags_cpu(f, 0, out), 0);
    EXPECT_EQ(out[0], GUARD);
}
END_TEST

/* Flags only at block boundaries (first and last of each block) and a
 * single flag at the very end: the per-block offsets must line up. */
START_TEST(test_block_edges)
{
    uint32_t n = 5 * 16384 + 7;
    uint8_t *f = xmalloc(n, 1);
    memset(f, 0, n);
    for (uint32_t b = 0; b < n; b += 16384) {
        f[b] = 1;
        if (b + 16383 < n)
            f[b + 16383] = 200;
    }
    f[n - 1] = 1;
    check_flags(f, n);
    memset(f, 0, n);
    f[n - 1] = 3;
    uint32_t out[2] = {GUARD, GUARD};
    EXPECT_EQ(gm_compact_flags_cpu(f, n, out), 1);
    EXPECT_EQ(out[0], n - 1);
    EXPECT_EQ(out[1], GUARD);
    /* whole blocks empty between full ones */
    memset(f, 0, n);
    memset(f + 2 * 16384, 1, 16384);
    memset(f + 4 * 16384, 1, 100);
    check_flags(f, n);
    free(f);
}
END_TEST

/* The same result with 1 and with 2 threads (and with many more blocks
 * than threads). */
START_TEST(test_threads)
{
#ifdef _OPENMP
    rng_state = 0x7E4D;
    uint32_t n = 300001;
    uint8_t *f = random_flags(n, 77);
    uint32_t *a = xmalloc(n, sizeof *a), *b = xmalloc(n, sizeof *b);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    uint32_t ca = gm_compact_flags_cpu(f, n, a);
    omp_set_num_threads(2);
    uint32_t cb = gm_compact_flags_cpu(f, n, b);
    omp_set_num_threads(5);
    check_flags(f, n);
    omp_set_num_threads(saved);
    EXPECT_EQ(ca, cb);
    EXPECT(memcmp(a, b, ca * sizeof *a) == 0);
    free(a);
    free(b);
    free(f);
#endif
}
END_TEST

static Suite *compact_suite(void)
{
    Suite *s = suite_create("compact");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sizes_random);
    tcase_add_test(tc, test_all_zero_all_one);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_block_edges);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(compact_suite());
}
