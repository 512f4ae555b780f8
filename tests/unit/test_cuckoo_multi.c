/* test_cuckoo_multi.c: the multi-value cuckoo table (cuckoo.h), built on the
 * CPU.  Checks that every key gives exactly its values in input order, the
 * value-block layout (slot order from the bucket's phase-1 start), the slot
 * layout, the lockstep rule with equal keys winning together (against an
 * independent per-item reference), reseeds, restarts and thread-count
 * independence. */
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

/* Items whose values are their input index i (so every value is unique and
 * input order is visible in the values). */
static uint32_t *index_values(uint32_t n)
{
    uint32_t *v = xmalloc(n, sizeof *v);
    for (uint32_t i = 0; i < n; i++)
        v[i] = i;
    return v;
}

typedef struct {
    uint32_t key, idx;
} pair;

static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Everything a built table must satisfy for its input. */
static void check_multi(const gm_multi *t, const uint32_t *keys, const uint32_t *vals, uint32_t n,
                        uint32_t unique_bound, uint64_t seed, uint32_t force_reseeds,
                        uint32_t absent_salt, uint32_t absent_from)
{
    uint32_t nb = t->nb;
    EXPECT_EQ(t->n, n);
    check_view_header(CUCKOO_VIEW(t), expected_nb(n, unique_bound), seed, force_reseeds);

    /* Expected: (key, input index) sorted, so each key's values in input order. */
    pair *p = xmalloc(n, sizeof *p);
    for (uint32_t i = 0; i < n; i++) {
        p[i].key = keys[i];
        p[i].idx = i;
    }
    qsort(p, n, sizeof *p, cmp_pair);
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && p[j].key == p[i].key)
            j++;
        const uint32_t *first;
        uint32_t c = gm_multi_find(t, p[i].key, &first);
        EXPECT_EQ(c, j - i);
        EXPECT(first != NULL);
        for (uint32_t q = 0; q < c; q++)
            EXPECT_EQ(first[q], vals[p[i + q].idx]);
        distinct++;
        i = j;
    }
    EXPECT_EQ(t->stats.unique_keys, distinct);

    /* Bucket starts from phase 1's h, then the slot-order block layout. */
    uint32_t *start = xmalloc((size_t)nb + 1, sizeof *start);
    memset(start, 0, ((size_t)nb + 1) * sizeof *start);
    for (uint32_t i = 0; i < n; i++)
        start[gm_cuckoo_h(t->h_c0, t->h_c1, t->restart, nb, keys[i]) + 1]++;
    for (uint32_t b = 0; b < nb; b++)
        start[b + 1] += start[b];
    uint32_t occupied = 0;
    uint32_t *slot_keys = xmalloc(distinct, sizeof *slot_keys);
    for (uint32_t b = 0; b < nb; b++) {
        gm_cuckoo_consts k = gm_cuckoo_hash_consts(t->seeds[b]);
        uint32_t run = start[b];
        for (int tt = 0; tt < 3; tt++)
            for (uint32_t s = 0; s < GM_CUCKOO_SLOTS; s++) {
                size_t x = slot_of(nb, tt, b, s);
                uint32_t key = t->keys[x];
                if (key == GM_KEY_EMPTY) {
                    EXPECT_EQ(t->counts[x], 0);
                    EXPECT_EQ(t->offsets[x], 0);
                    continue;
                }
                EXPECT_EQ(gm_cuckoo_h(t->h_c0, t->h_c1, t->restart, nb, key), b);
                EXPECT_EQ(gm_cuckoo_g(&k, tt, key), s);
                EXPECT_EQ(t->offsets[x], run);
                EXPECT(t->counts[x] >= 1);
                run += t->counts[x];
                EXPECT(occupied < distinct);
                slot_keys[occupied++] = key;
            }
        EXPECT_EQ(run, start[b + 1]);
    }
    EXPECT_EQ(occupied, distinct);
    /* no key in two slots (the finds above found each key somewhere) */
    for (uint32_t i = 0; i < occupied; i++)
        p[i].key = slot_keys[i], p[i].idx = 0;
    qsort(p, occupied, sizeof *p, cmp_pair);
    for (uint32_t i = 1; i < occupied; i++)
        EXPECT(p[i].key != p[i - 1].key);

    /* Absent keys. */
    uint32_t found = 0;
    for (uint32_t j = 0; j < 20000; j++) {
        uint32_t key = key_of(absent_from + j, absent_salt);
        const uint32_t *first = (const uint32_t *)1;
        uint32_t c = gm_multi_find(t, key, &first);
        found += c != 0 || first != NULL;
    }
    EXPECT_EQ(found, 0);
    const uint32_t *first;
    EXPECT_EQ(gm_multi_find(t, GM_KEY_EMPTY, &first), 0);

    free(slot_keys);
    free(start);
    free(p);
}

static void build_random(uint32_t n, uint32_t d, uint32_t unique_bound, uint64_t seed,
                         uint32_t lockstep_buckets)
{
    rng_state = seed;
    uint32_t salt = (uint32_t)seed * 40503u;
    uint32_t *keys = random_items(n, d, salt), *vals = index_values(n);
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, unique_bound, seed, NULL), GM_OK);
    check_multi(&t, keys, vals, n, unique_bound, seed, 0, salt, d);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, seed, 0, lockstep_buckets);
    gm_multi_free(&t);
    EXPECT(t.values == NULL);
    free(keys);
    free(vals);
}

START_TEST(test_sizes)
{
    /* n = 0, 1, 409, 512, 513 with distinct and repeated keys, sized by n
     * and by an exact unique_bound. */
    static const uint32_t sizes[] = {0, 1, 409, 512, 513};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t n = sizes[i];
        build_random(n, n, 0, 100 + i, 100);
        build_random(n, n / 7 + 1 < n ? n / 7 + 1 : n, 0, 200 + i, 100);
        build_random(n, n / 7 + 1 < n ? n / 7 + 1 : n, n / 7 + 1, 300 + i, 100);
    }
}
END_TEST

START_TEST(test_size_100k)
{
    build_random(100000, 100000, 0, 7, 10);      /* all distinct */
    build_random(100000, 3000, 3000, 8, 10);     /* ~33 values a key, sized by the bound */
}
END_TEST

START_TEST(test_size_1m)
{
    /* The matcher's shape: many values over ~60k keys. */
    build_random(1000000, 60000, 60000, 9, 2);
}
END_TEST

START_TEST(test_empty)
{
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, NULL, NULL, 0, 0, 1, NULL), GM_OK);
    EXPECT_EQ(t.nb, 1);
    const uint32_t *first = (const uint32_t *)1;
    EXPECT_EQ(gm_multi_find(&t, 0, &first), 0);
    EXPECT(first == NULL);
    gm_multi_free(&t);
    gm_multi_free(&t);
    gm_multi_free(NULL);
}
END_TEST

START_TEST(test_multiplicity)
{
    /* Keys with 1 .. 5000 values each, items in random order. */
    static const uint32_t mult[] = {1, 2, 3, 5, 8, 32, 33, 100, 511, 512, 513, 1000, 2500, 5000};
    const uint32_t nm = sizeof mult / sizeof mult[0];
    const uint32_t reps = 40;  /* keys per multiplicity */
    uint32_t n = 0;
    for (uint32_t i = 0; i < nm; i++)
        n += mult[i] * reps;
    uint32_t *keys = xmalloc(n, sizeof *keys), *vals = index_values(n);
    uint32_t x = 0;
    for (uint32_t i = 0; i < nm; i++)
        for (uint32_t r = 0; r < reps; r++)
            for (uint32_t c = 0; c < mult[i]; c++)
                keys[x++] = key_of(i * reps + r, 77);
    rng_state = 5;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = rng_next() % i;
        uint32_t y = keys[i - 1];
        keys[i - 1] = keys[j];
        keys[j] = y;
    }
    uint32_t d = nm * reps;
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, d, 3, NULL), GM_OK);
    EXPECT_EQ(t.nb, 2);
    check_multi(&t, keys, vals, n, d, 3, 0, 77, d);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 3, 0, 2);
    /* spot-check one key directly: values are input indices, increasing */
    const uint32_t *first;
    uint32_t c = gm_multi_find(&t, key_of(nm * reps - 1, 77), &first);
    EXPECT_EQ(c, 5000);
    for (uint32_t q = 0; q < c; q++) {
        EXPECT_EQ(keys[first[q]], key_of(nm * reps - 1, 77));
        if (q)
            EXPECT(first[q] > first[q - 1]);
    }
    gm_multi_free(&t);
    /* same items, sized by n instead: many sparse buckets */
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, 0, 3, NULL), GM_OK);
    check_multi(&t, keys, vals, n, 0, 3, 0, 77, d);
    gm_multi_free(&t);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_invalid)
{
    uint32_t keys[] = {5, 9, GM_KEY_EMPTY, 11};
    uint32_t vals[] = {1, 2, 3, 4};
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, 4, 0, 1, NULL), GM_ERR_INVALID);
    EXPECT(t.keys == NULL);
    EXPECT_EQ(gm_multi_build_cpu(&t, NULL, vals, 2, 0, 1, NULL), GM_ERR_INVALID);
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, NULL, 2, 0, 1, NULL), GM_ERR_INVALID);
    EXPECT_EQ(gm_multi_build_cpu(NULL, keys, vals, 2, 0, 1, NULL), GM_ERR_INVALID);
}
END_TEST

START_TEST(test_bound_too_small)
{
    /* 10000 distinct keys but a bound of 100: one bucket, which cannot hold
     * them under any h, so the build runs out of restarts. */
    rng_state = 1;
    uint32_t n = 10000;
    uint32_t *keys = random_items(n, n, 3), *vals = index_values(n);
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, 100, 1, NULL), GM_ERR_HASH);
    EXPECT(t.keys == NULL);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_forced_reseeds_restarts)
{
    rng_state = 2;
    uint32_t n = 30000, d = 2000;
    uint32_t *keys = random_items(n, d, 9), *vals = index_values(n);
    gm_cuckoo_debug dbg = {4, 0};
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, d, 13, &dbg), GM_OK);
    EXPECT(t.stats.reseeds >= 4u * t.nb);
    check_multi(&t, keys, vals, n, d, 13, 4, 9, d);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 13, 4, 5);
    gm_multi_free(&t);

    dbg.force_reseeds = 0;
    dbg.force_restarts = 3;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, d, 13, &dbg), GM_OK);
    EXPECT_EQ(t.stats.restarts, 3);
    check_multi(&t, keys, vals, n, d, 13, 0, 9, d);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 13, 0, 5);
    gm_multi_free(&t);

    dbg.force_restarts = GM_CUCKOO_MAX_RESTARTS + 1;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, d, 13, &dbg), GM_ERR_HASH);
    dbg.force_restarts = 0;
    dbg.force_reseeds = GM_CUCKOO_MAX_RESEEDS;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, d, 13, &dbg), GM_ERR_HASH);
    EXPECT(t.values == NULL);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_natural_restart)
{
    /* nb = 10 (4090 items, no bound).  Bucket 0 under h(k) = k mod 10 gets
     * 600 distinct keys (multiples of 10, some repeated): more than 576, so
     * phase 1 must restart with the seeded h. */
    uint32_t n = 4090;
    uint32_t *keys = xmalloc(n, sizeof *keys), *vals = index_values(n);
    for (uint32_t i = 0; i < n; i++) {
        if (i < 700)
            keys[i] = (i % 600) * 10u;                /* 600 distinct, 100 repeated */
        else
            keys[i] = (i % 1000) * 10u + 1u + i % 9u;  /* 1..9 mod 10 */
    }
    gm_multi t;
    EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, 0, 21, NULL), GM_OK);
    EXPECT_EQ(t.nb, 10);
    EXPECT(t.stats.restarts >= 1);
    check_multi(&t, keys, vals, n, 0, 21, 0, 12345, 0);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 21, 0, 10);
    gm_multi_free(&t);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_key_order_independent)
{
    /* The table (keys, seeds, counts) does not depend on item order; the
     * values follow the items' order. */
    rng_state = 4;
    uint32_t n = 50000, d = 4000;
    uint32_t *keys = random_items(n, d, 1), *vals = index_values(n);
    gm_multi a, b;
    EXPECT_EQ(gm_multi_build_cpu(&a, keys, vals, n, d, 8, NULL), GM_OK);
    for (uint32_t i = 0; i < n / 2; i++) {
        uint32_t x = keys[i];
        keys[i] = keys[n - 1 - i];
        keys[n - 1 - i] = x;
    }
    EXPECT_EQ(gm_multi_build_cpu(&b, keys, vals, n, d, 8, NULL), GM_OK);
    size_t slots = (size_t)3 * a.nb * GM_CUCKOO_SLOTS;
    EXPECT_EQ(memcmp(a.keys, b.keys, slots * 4), 0);
    EXPECT_EQ(memcmp(a.counts, b.counts, slots * 4), 0);
    EXPECT_EQ(memcmp(a.offsets, b.offsets, slots * 4), 0);
    EXPECT_EQ(memcmp(a.seeds, b.seeds, a.nb * 4), 0);
    check_multi(&b, keys, vals, n, d, 8, 0, 1, d);
    gm_multi_free(&a);
    gm_multi_free(&b);
    free(keys);
    free(vals);
}
END_TEST

static void check_same(const gm_multi *a, const gm_multi *b)
{
    check_view_same(CUCKOO_VIEW(a), CUCKOO_VIEW(b));
    EXPECT_EQ(a->n, b->n);
    size_t slots = (size_t)3 * a->nb * GM_CUCKOO_SLOTS;
    EXPECT_EQ(memcmp(a->counts, b->counts, slots * sizeof *a->counts), 0);
    EXPECT_EQ(memcmp(a->offsets, b->offsets, slots * sizeof *a->offsets), 0);
    EXPECT_EQ(memcmp(a->values, b->values, (size_t)a->n * sizeof *a->values), 0);
}

START_TEST(test_thread_count_independent)
{
#ifdef _OPENMP
    rng_state = 6;
    uint32_t n = 400000, d = 20000;
    uint32_t *keys = random_items(n, d, 2), *vals = index_values(n);
    static const gm_cuckoo_debug dbgs[] = {{0, 0}, {1, 2}};
    for (size_t k = 0; k < 2; k++) {
        gm_multi ref;
        omp_set_num_threads(1);
        EXPECT_EQ(gm_multi_build_cpu(&ref, keys, vals, n, d, 5, &dbgs[k]), GM_OK);
        for (int th = 2; th <= 4; th += 2) {
            gm_multi t;
            omp_set_num_threads(th);
            EXPECT_EQ(gm_multi_build_cpu(&t, keys, vals, n, d, 5, &dbgs[k]), GM_OK);
            check_same(&ref, &t);
            gm_multi_free(&t);
        }
        gm_multi_free(&ref);
    }
    free(keys);
    free(vals);
#endif
}
END_TEST

static Suite *multi_suite(void)
{
    Suite *s = suite_create("cuckoo_multi");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_size_100k);
    tcase_add_test(tc, test_size_1m);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_multiplicity);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_bound_too_small);
    tcase_add_test(tc, test_forced_reseeds_restarts);
    tcase_add_test(tc, test_natural_restart);
    tcase_add_test(tc, test_key_order_independent);
    tcase_add_test(tc, test_thread_count_independent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(multi_suite());
}
