/* test_cuckoo_compact.c: the compacting table / two-way index (cuckoo.h),
 * built on the CPU.  Checks that the indices are a bijection onto 0..u-1 in
 * global slot order, unique[find(k)] == k, the slot layout, the lockstep
 * rule against an independent per-item reference, reseeds, restarts and
 * thread-count independence. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "hash/cuckoo.h"
#include "hash/cuckoo_core.h"
#include "test_util.h"

static void check_compact(const gm_compact *t, const uint32_t *keys, uint32_t n,
                          uint32_t unique_bound, uint64_t seed, uint32_t force_reseeds,
                          uint32_t absent_salt, uint32_t absent_from)
{
    uint32_t nb = t->nb;
    EXPECT_EQ(t->n, n);
    check_view_header(CUCKOO_VIEW(t), expected_nb(n, unique_bound), seed, force_reseeds);

    /* u = number of distinct input keys. */
    uint32_t *sorted = xmalloc(n, sizeof *sorted);
    if (n)
        memcpy(sorted, keys, (size_t)n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_u32);
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < n; i++)
        distinct += i == 0 || sorted[i] != sorted[i - 1];
    EXPECT_EQ(t->u, distinct);
    EXPECT_EQ(t->stats.unique_keys, distinct);

    /* Global slot order: index[s] = occupied slots before s; the slot's key
     * hashes to its bucket and slot; unique[index] = key. */
    uint32_t run = 0;
    for (int tt = 0; tt < 3; tt++)
        for (uint32_t b = 0; b < nb; b++) {
            gm_cuckoo_consts k = gm_cuckoo_hash_consts(t->seeds[b]);
            for (uint32_t s = 0; s < GM_CUCKOO_SLOTS; s++) {
                size_t x = slot_of(nb, tt, b, s);
                EXPECT_EQ(t->index[x], run);
                uint32_t key = t->keys[x];
                if (key == GM_KEY_EMPTY)
                    continue;
                EXPECT_EQ(gm_cuckoo_h(t->h_c0, t->h_c1, t->restart, nb, key), b);
                EXPECT_EQ(gm_cuckoo_g(&k, tt, key), s);
                EXPECT(run < distinct);
                EXPECT_EQ(t->unique[run], key);
                run++;
            }
        }
    EXPECT_EQ(run, distinct);

    /* unique[] holds each distinct key exactly once (so no key is in two
     * slots and the index is a bijection onto 0..u-1). */
    uint32_t *us = xmalloc(distinct, sizeof *us);
    if (distinct)
        memcpy(us, t->unique, (size_t)distinct * sizeof *us);
    qsort(us, distinct, sizeof *us, cmp_u32);
    for (uint32_t i = 0, j = 0; i < n; i++) {
        if (i && sorted[i] == sorted[i - 1])
            continue;
        EXPECT_EQ(us[j], sorted[i]);
        j++;
    }
    free(us);

    /* Every input key: find gives an index below u that maps back to it. */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = gm_compact_find(t, keys[i]);
        EXPECT(idx < distinct);
        EXPECT_EQ(t->unique[idx], keys[i]);
    }
    uint32_t found = 0;
    for (uint32_t j = 0; j < 20000; j++)
        found += gm_compact_find(t, key_of(absent_from + j, absent_salt)) != GM_KEY_EMPTY;
    EXPECT_EQ(found, 0);
    EXPECT_EQ(gm_compact_find(t, GM_KEY_EMPTY), GM_KEY_EMPTY);
    free(sorted);
}

static void build_random(uint32_t n, uint32_t d, uint32_t unique_bound, uint64_t seed,
                         uint32_t lockstep_buckets)
{
    rng_state = seed;
    uint32_t salt = (uint32_t)seed * 69069u;
    uint32_t *keys = random_items(n, d, salt);
    gm_compact t;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, unique_bound, seed, NULL), GM_OK);
    check_compact(&t, keys, n, unique_bound, seed, 0, salt, d);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, seed, 0, lockstep_buckets);
    gm_compact_free(&t);
    EXPECT(t.unique == NULL);
    free(keys);
}

START_TEST(test_sizes)
{
    static const uint32_t sizes[] = {0, 1, 409, 512, 513};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t n = sizes[i];
        uint32_t d = n / 5 + 1 < n ? n / 5 + 1 : n;
        build_random(n, n, 0, 100 + i, 100);
        build_random(n, d, 0, 200 + i, 100);
        build_random(n, d, d, 300 + i, 100);
    }
}
END_TEST

START_TEST(test_size_100k)
{
    build_random(100000, 100000, 0, 7, 10);
    build_random(100000, 20000, 20000, 8, 10);
}
END_TEST

START_TEST(test_size_1m)
{
    build_random(1000000, 1000000, 0, 9, 2);
    build_random(1000000, 60000, 60000, 10, 2);
}
END_TEST

START_TEST(test_empty)
{
    gm_compact t;
    EXPECT_EQ(gm_compact_build_cpu(&t, NULL, 0, 0, 1, NULL), GM_OK);
    EXPECT_EQ(t.u, 0);
    EXPECT_EQ(t.nb, 1);
    EXPECT_EQ(gm_compact_find(&t, 0), GM_KEY_EMPTY);
    for (size_t s = 0; s < GM_CUCKOO_BUCKET_SLOTS; s++)
        EXPECT_EQ(t.index[s], 0);
    gm_compact_free(&t);
    gm_compact_free(&t);
    gm_compact_free(NULL);
}
END_TEST

START_TEST(test_all_same_key)
{
    /* 100000 copies of one key: u = 1, index 0. */
    uint32_t n = 100000;
    uint32_t *keys = xmalloc(n, sizeof *keys);
    for (uint32_t i = 0; i < n; i++)
        keys[i] = 123456789u;
    gm_compact t;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, 1, 4, NULL), GM_OK);
    EXPECT_EQ(t.u, 1);
    EXPECT_EQ(gm_compact_find(&t, 123456789u), 0);
    EXPECT_EQ(t.unique[0], 123456789u);
    check_compact(&t, keys, n, 1, 4, 0, 1, 0);
    gm_compact_free(&t);
    free(keys);
}
END_TEST

START_TEST(test_invalid)
{
    uint32_t keys[] = {5, 9, GM_KEY_EMPTY, 11};
    gm_compact t;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, 4, 0, 1, NULL), GM_ERR_INVALID);
    EXPECT(t.keys == NULL);
    EXPECT_EQ(gm_compact_build_cpu(&t, NULL, 2, 0, 1, NULL), GM_ERR_INVALID);
    EXPECT_EQ(gm_compact_build_cpu(NULL, keys, 2, 0, 1, NULL), GM_ERR_INVALID);
}
END_TEST

START_TEST(test_bound_too_small)
{
    rng_state = 1;
    uint32_t n = 10000;
    uint32_t *keys = random_items(n, n, 3);
    gm_compact t;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, 100, 1, NULL), GM_ERR_HASH);
    EXPECT(t.keys == NULL);
    free(keys);
}
END_TEST

START_TEST(test_forced_reseeds_restarts)
{
    rng_state = 2;
    uint32_t n = 30000, d = 5000;
    uint32_t *keys = random_items(n, d, 9);
    gm_cuckoo_debug dbg = {5, 0};
    gm_compact t;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, d, 13, &dbg), GM_OK);
    EXPECT(t.stats.reseeds >= 5u * t.nb);
    check_compact(&t, keys, n, d, 13, 5, 9, d);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 13, 5, 5);
    gm_compact_free(&t);

    dbg.force_reseeds = 0;
    dbg.force_restarts = 4;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, d, 13, &dbg), GM_OK);
    EXPECT_EQ(t.stats.restarts, 4);
    check_compact(&t, keys, n, d, 13, 0, 9, d);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 13, 0, 5);
    gm_compact_free(&t);

    dbg.force_restarts = GM_CUCKOO_MAX_RESTARTS + 1;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, d, 13, &dbg), GM_ERR_HASH);
    dbg.force_restarts = 0;
    dbg.force_reseeds = GM_CUCKOO_MAX_RESEEDS;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, d, 13, &dbg), GM_ERR_HASH);
    EXPECT(t.unique == NULL);
    free(keys);
}
END_TEST

START_TEST(test_natural_restart)
{
    /* nb = 10: bucket 0 under k mod 10 gets 600 distinct keys (> 576). */
    uint32_t n = 4090;
    uint32_t *keys = xmalloc(n, sizeof *keys);
    for (uint32_t i = 0; i < n; i++)
        keys[i] = i < 700 ? (i % 600) * 10u : (i % 1000) * 10u + 1u + i % 9u;
    gm_compact t;
    EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, 0, 21, NULL), GM_OK);
    EXPECT_EQ(t.nb, 10);
    EXPECT(t.stats.restarts >= 1);
    check_compact(&t, keys, n, 0, 21, 0, 12345, 0);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 21, 0, 10);
    gm_compact_free(&t);
    free(keys);
}
END_TEST

static void check_same(const gm_compact *a, const gm_compact *b)
{
    check_view_same(CUCKOO_VIEW(a), CUCKOO_VIEW(b));
    EXPECT_EQ(a->u, b->u);
    EXPECT_EQ(a->n, b->n);
    size_t slots = (size_t)3 * a->nb * GM_CUCKOO_SLOTS;
    EXPECT_EQ(memcmp(a->index, b->index, slots * sizeof *a->index), 0);
    EXPECT_EQ(memcmp(a->unique, b->unique, (size_t)a->u * sizeof *a->unique), 0);
}

START_TEST(test_thread_count_independent)
{
#ifdef _OPENMP
    rng_state = 6;
    uint32_t n = 400000, d = 50000;
    uint32_t *keys = random_items(n, d, 2);
    static const gm_cuckoo_debug dbgs[] = {{0, 0}, {1, 2}};
    for (size_t k = 0; k < 2; k++) {
        gm_compact ref;
        omp_set_num_threads(1);
        EXPECT_EQ(gm_compact_build_cpu(&ref, keys, n, 0, 5, &dbgs[k]), GM_OK);
        for (int th = 2; th <= 4; th += 2) {
            gm_compact t;
            omp_set_num_threads(th);
            EXPECT_EQ(gm_compact_build_cpu(&t, keys, n, 0, 5, &dbgs[k]), GM_OK);
            check_same(&ref, &t);
            gm_compact_free(&t);
        }
        gm_compact_free(&ref);
    }
    free(keys);
#endif
}
END_TEST

static Suite *compact_suite(void)
{
    Suite *s = suite_create("cuckoo_compact");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_size_100k);
    tcase_add_test(tc, test_size_1m);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_all_same_key);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_bound_too_small);
    tcase_add_test(tc, test_forced_reseeds_restarts);
    tcase_add_test(tc, test_natural_restart);
    tcase_add_test(tc, test_thread_count_independent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(compact_suite());
}
