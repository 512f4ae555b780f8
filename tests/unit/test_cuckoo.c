/* test_cuckoo.c: the basic cuckoo table (cuckoo.h), built on the CPU.
 * Checks lookups, the slot layout, the lockstep largest-key-wins rule against
 * an independent reference, reseeds, restarts, errors and thread-count
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

/* n unique keys != GM_KEY_EMPTY: mix32(i + salt), i = 0..n-1 (the one i that
 * maps to GM_KEY_EMPTY takes mix32(n + salt) instead).  keys not made here
 * for i in [n, 2^32 - 1) are therefore absent. */
static uint32_t *unique_keys(uint32_t n, uint32_t salt)
{
    uint32_t *k = xmalloc(n, sizeof *k);
    for (uint32_t i = 0; i < n; i++) {
        k[i] = mix32(i + salt);
        if (k[i] == GM_KEY_EMPTY)
            k[i] = mix32(n + salt);
    }
    return k;
}

static uint32_t *values_for(uint32_t n)
{
    uint32_t *v = xmalloc(n, sizeof *v);
    for (uint32_t i = 0; i < n; i++)
        v[i] = i * 7u + 3u;
    return v;
}

/* Check every structural property of a built table against its input. */
static void check_table(const gm_cuckoo *t, const uint32_t *keys, const uint32_t *vals, uint32_t n,
                        uint64_t seed, uint32_t force_reseeds)
{
    EXPECT_EQ(t->n, n);
    EXPECT_EQ(t->stats.unique_keys, n);
    check_view_header(CUCKOO_VIEW(t), expected_nb(n, 0), seed, force_reseeds);

    /* Every occupied slot: its key hashes to this bucket and this slot. */
    uint32_t nb = t->nb;
    size_t occupied = 0;
    uint32_t *slot_keys = xmalloc(n, sizeof *slot_keys);
    for (uint32_t b = 0; b < nb; b++) {
        gm_cuckoo_consts k = gm_cuckoo_hash_consts(t->seeds[b]);
        size_t in_bucket = occupied;
        for (int tt = 0; tt < 3; tt++)
            for (uint32_t s = 0; s < GM_CUCKOO_SLOTS; s++) {
                size_t x = slot_of(nb, tt, b, s);
                uint32_t key = t->keys[x];
                if (key == GM_KEY_EMPTY) {
                    EXPECT_EQ(t->vals[x], 0);
                    continue;
                }
                EXPECT_EQ(gm_cuckoo_h(t->h_c0, t->h_c1, t->restart, nb, key), b);
                EXPECT_EQ(gm_cuckoo_g(&k, tt, key), s);
                EXPECT((occupied) < (n));
                slot_keys[occupied++] = key;
            }
        EXPECT(occupied - in_bucket <= GM_CUCKOO_BUCKET_MAX);  /* phase 1's limit */
    }
    EXPECT_EQ(occupied, n);
    /* No key in two slots, and the slot keys are exactly the input keys. */
    uint32_t *sorted = xmalloc(n, sizeof *sorted);
    if (n)
        memcpy(sorted, keys, (size_t)n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_u32);
    qsort(slot_keys, n, sizeof *slot_keys, cmp_u32);
    for (uint32_t i = 0; i < n; i++) {
        EXPECT_EQ(slot_keys[i], sorted[i]);
        if (i)
            EXPECT((slot_keys[i]) != (slot_keys[i - 1]));
    }
    free(sorted);
    free(slot_keys);

    /* Every key found with its value, one at a time and in bulk. */
    uint32_t *out = xmalloc(n, sizeof *out);
    gm_cuckoo_find_all_cpu(t, keys, n, out);
    for (uint32_t i = 0; i < n; i++) {
        EXPECT_EQ(gm_cuckoo_find(t, keys[i]), vals[i]);
        EXPECT_EQ(out[i], vals[i]);
    }
    free(out);
}

/* Keys known to be absent: mix32(i + salt) for i >= n (see unique_keys). */
static void check_absent(const gm_cuckoo *t, uint32_t n, uint32_t salt, uint32_t count)
{
    uint32_t found = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t key = mix32(n + 1 + i + salt);
        if (key == GM_KEY_EMPTY)
            continue;
        found += gm_cuckoo_find(t, key) != GM_KEY_EMPTY;
    }
    EXPECT_EQ(found, 0);
    EXPECT_EQ(gm_cuckoo_find(t, GM_KEY_EMPTY), GM_KEY_EMPTY);
}

static void build_and_check(uint32_t n, uint64_t seed, uint32_t lockstep_buckets)
{
    uint32_t salt = (uint32_t)seed * 2654435761u;
    uint32_t *keys = unique_keys(n, salt), *vals = values_for(n);
    gm_cuckoo t;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, seed, NULL), GM_OK);
    check_table(&t, keys, vals, n, seed, 0);
    check_absent(&t, n, salt, 20000);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, seed, 0, lockstep_buckets);
    gm_cuckoo_free(&t);
    ck_assert_ptr_null(t.keys);
    free(keys);
    free(vals);
}

START_TEST(test_sizes_small)
{
    static const uint32_t sizes[] = {0, 1, 2, 409, 410, 512, 513, 4096};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        build_and_check(sizes[i], 1000 + i, 1000);
}
END_TEST

START_TEST(test_size_100k)
{
    build_and_check(100000, 7, 40);
}
END_TEST

START_TEST(test_size_1m)
{
    build_and_check(1000000, 8, 4);
}
END_TEST

START_TEST(test_empty_table)
{
    gm_cuckoo t;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, NULL, NULL, 0, 1, NULL), GM_OK);
    EXPECT_EQ(t.nb, 1);
    for (size_t s = 0; s < GM_CUCKOO_BUCKET_SLOTS; s++)
        EXPECT_EQ(t.keys[s], GM_KEY_EMPTY);
    EXPECT_EQ(gm_cuckoo_find(&t, 0), GM_KEY_EMPTY);
    EXPECT_EQ(gm_cuckoo_find(&t, 12345), GM_KEY_EMPTY);
    gm_cuckoo_find_all_cpu(&t, NULL, 0, NULL);
    gm_cuckoo_free(&t);
    gm_cuckoo_free(&t);  /* twice is harmless */
    gm_cuckoo_free(NULL);
}
END_TEST

START_TEST(test_key_zero_and_max)
{
    /* 0 and GM_KEY_EMPTY - 1 are ordinary keys (claims are key + 1). */
    uint32_t keys[] = {0, GM_KEY_EMPTY - 1u, 1, 409, 818};
    uint32_t vals[] = {10, 20, 30, 40, 50};
    gm_cuckoo t;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, 5, 3, NULL), GM_OK);
    check_table(&t, keys, vals, 5, 3, 0);
    gm_cuckoo_free(&t);
}
END_TEST

START_TEST(test_invalid)
{
    uint32_t keys[] = {5, 9, GM_KEY_EMPTY, 11};
    uint32_t vals[] = {1, 2, 3, 4};
    gm_cuckoo t;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, 4, 1, NULL), GM_ERR_INVALID);
    ck_assert_ptr_null(t.keys);
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, 2, 1, NULL), GM_OK);
    gm_cuckoo_free(&t);
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, NULL, vals, 2, 1, NULL), GM_ERR_INVALID);
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, NULL, 2, 1, NULL), GM_ERR_INVALID);
    EXPECT_EQ(gm_cuckoo_build_cpu(NULL, keys, vals, 2, 1, NULL), GM_ERR_INVALID);
}
END_TEST

/* The tables' allocator (gm_alloc_large below it): NULL on a size that
 * overflows, a usable block for none, and a large block of an odd size
 * (huge-page advice over its whole pages only) holds every byte asked. */
START_TEST(test_alloc)
{
    ck_assert_ptr_null(gm_cuckoo_alloc(SIZE_MAX / 2 + 1, 2));
    ck_assert_ptr_null(gm_cuckoo_alloc(2, SIZE_MAX / 2 + 1));
    void *none = gm_cuckoo_alloc(0, 4);
    ck_assert_ptr_nonnull(none);
    free(none);
    const size_t n = (3u << 20) / sizeof(uint32_t) + 3; /* over GM_LARGE_BYTES, not whole pages */
    uint32_t *a = gm_cuckoo_alloc(n, sizeof *a);
    ck_assert_ptr_nonnull(a);
    for (size_t i = 0; i < n; i++)
        a[i] = (uint32_t)(i * 2654435761u);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += a[i] != (uint32_t)(i * 2654435761u);
    free(a);
    EXPECT_EQ(bad, 0);
}
END_TEST

START_TEST(test_duplicates)
{
    /* One repeated pair inside a large input. */
    uint32_t n = 50000;
    uint32_t *keys = unique_keys(n, 99), *vals = values_for(n);
    keys[40000] = keys[123];
    gm_cuckoo t;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 1, NULL), GM_ERR_INVALID);
    ck_assert_ptr_null(t.keys);
    /* Many copies of one key: its bucket overflows under every h, so phase 2
     * never sees the duplicates; still GM_ERR_INVALID, not GM_ERR_HASH. */
    for (uint32_t i = 0; i < 600; i++)
        keys[i * 50] = 77;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 1, NULL), GM_ERR_INVALID);
    /* Two equal keys only. */
    uint32_t k2[] = {4, 4}, v2[] = {1, 2};
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, k2, v2, 2, 1, NULL), GM_ERR_INVALID);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_forced_reseeds)
{
    uint32_t n = 20000;
    uint32_t *keys = unique_keys(n, 5), *vals = values_for(n);
    gm_cuckoo_debug dbg = {3, 0};
    gm_cuckoo t;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 11, &dbg), GM_OK);
    check_table(&t, keys, vals, n, 11, 3);
    EXPECT((t.stats.reseeds) >= (3u * t.nb));
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 11, 3, 8);
    gm_cuckoo_free(&t);
    /* Every attempt failing: every restart fails, then GM_ERR_HASH. */
    dbg.force_reseeds = GM_CUCKOO_MAX_RESEEDS;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 11, &dbg), GM_ERR_HASH);
    ck_assert_ptr_null(t.keys);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_forced_restarts)
{
    uint32_t n = 20000;
    uint32_t *keys = unique_keys(n, 6), *vals = values_for(n);
    gm_cuckoo_debug dbg = {0, 2};
    gm_cuckoo t;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 12, &dbg), GM_OK);
    EXPECT_EQ(t.stats.restarts, 2);
    EXPECT_EQ(t.restart, 2);
    EXPECT((t.h_c1) != (0));
    check_table(&t, keys, vals, n, 12, 0);
    check_absent(&t, n, 6, 20000);
    check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 12, 0, 8);
    gm_cuckoo_free(&t);
    /* The last allowed restart still builds; one more fails. */
    dbg.force_restarts = GM_CUCKOO_MAX_RESTARTS;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 12, &dbg), GM_OK);
    EXPECT_EQ(t.restart, GM_CUCKOO_MAX_RESTARTS);
    check_table(&t, keys, vals, n, 12, 0);
    gm_cuckoo_free(&t);
    dbg.force_restarts = GM_CUCKOO_MAX_RESTARTS + 1;
    EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 12, &dbg), GM_ERR_HASH);
    ck_assert_ptr_null(t.keys);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_natural_restart)
{
    /* n = 4090 gives nb = 10.  `heavy` keys == 0 mod 10 overfill bucket 0
     * under restart 0's h(k) = k mod nb, so phase 1 must restart: 600 could
     * not be placed at all, 520 could be (3 choices hold up to ~91% of 576)
     * but are over the basic table's 512. */
    static const uint32_t heavy_counts[] = {600, 520};
    for (size_t h = 0; h < 2; h++) {
        uint32_t n = 4090, heavy = heavy_counts[h];
        uint32_t *keys = malloc(n * sizeof *keys), *vals = values_for(n);
        ck_assert_ptr_nonnull(keys);
        for (uint32_t i = 0; i < n; i++)
            keys[i] = i < heavy ? i * 10u : (i - heavy) * 10u + 1u + (i % 9u);  /* rest: 1..9 mod 10 */
        gm_cuckoo t;
        EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 21, NULL), GM_OK);
        EXPECT_EQ(t.nb, 10);
        EXPECT(t.stats.restarts >= 1);
        check_table(&t, keys, vals, n, 21, 0);
        check_view_lockstep(CUCKOO_VIEW(&t), keys, n, 21, 0, 10);
        gm_cuckoo_free(&t);
        free(keys);
        free(vals);
    }
}
END_TEST

START_TEST(test_deterministic_and_seeded)
{
    uint32_t n = 30000;
    uint32_t *keys = unique_keys(n, 8), *vals = values_for(n);
    gm_cuckoo a, b, c;
    EXPECT_EQ(gm_cuckoo_build_cpu(&a, keys, vals, n, 42, NULL), GM_OK);
    EXPECT_EQ(gm_cuckoo_build_cpu(&b, keys, vals, n, 42, NULL), GM_OK);
    EXPECT_EQ(gm_cuckoo_build_cpu(&c, keys, vals, n, 43, NULL), GM_OK);
    size_t slots = (size_t)3 * a.nb * GM_CUCKOO_SLOTS;
    EXPECT_EQ(memcmp(a.keys, b.keys, slots * 4), 0);
    EXPECT_EQ(memcmp(a.seeds, b.seeds, a.nb * 4), 0);
    /* another seed gives other bucket seeds, so another layout */
    EXPECT((memcmp(a.seeds, c.seeds, a.nb * 4)) != (0));
    EXPECT((memcmp(a.keys, c.keys, slots * 4)) != (0));
    /* item order does not matter either: reverse the input */
    for (uint32_t i = 0; i < n / 2; i++) {
        uint32_t x = keys[i];
        keys[i] = keys[n - 1 - i];
        keys[n - 1 - i] = x;
        x = vals[i];
        vals[i] = vals[n - 1 - i];
        vals[n - 1 - i] = x;
    }
    gm_cuckoo_free(&b);
    EXPECT_EQ(gm_cuckoo_build_cpu(&b, keys, vals, n, 42, NULL), GM_OK);
    EXPECT_EQ(memcmp(a.keys, b.keys, slots * 4), 0);
    EXPECT_EQ(memcmp(a.vals, b.vals, slots * 4), 0);
    gm_cuckoo_free(&a);
    gm_cuckoo_free(&b);
    gm_cuckoo_free(&c);
    free(keys);
    free(vals);
}
END_TEST

static void check_same(const gm_cuckoo *a, const gm_cuckoo *b)
{
    check_view_same(CUCKOO_VIEW(a), CUCKOO_VIEW(b));
    size_t slots = (size_t)3 * a->nb * GM_CUCKOO_SLOTS;
    EXPECT_EQ(memcmp(a->vals, b->vals, slots * sizeof *a->vals), 0);
}

START_TEST(test_thread_count_independent)
{
#ifdef _OPENMP
    /* 300000 items: several phase-1 chunks; the restarted build exercises the
     * seeded h; forced reseeds the attempt loop. */
    uint32_t n = 300000;
    uint32_t *keys = unique_keys(n, 31), *vals = values_for(n);
    static const gm_cuckoo_debug dbgs[] = {{0, 0}, {2, 1}};
    for (size_t d = 0; d < 2; d++) {
        gm_cuckoo ref;
        omp_set_num_threads(1);
        EXPECT_EQ(gm_cuckoo_build_cpu(&ref, keys, vals, n, 5, &dbgs[d]), GM_OK);
        for (int th = 2; th <= 4; th += 2) {
            gm_cuckoo t;
            omp_set_num_threads(th);
            EXPECT_EQ(gm_cuckoo_build_cpu(&t, keys, vals, n, 5, &dbgs[d]), GM_OK);
            check_same(&ref, &t);
            gm_cuckoo_free(&t);
        }
        gm_cuckoo_free(&ref);
    }
    free(keys);
    free(vals);
#endif
}
END_TEST

static Suite *cuckoo_suite(void)
{
    Suite *s = suite_create("cuckoo");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sizes_small);
    tcase_add_test(tc, test_size_100k);
    tcase_add_test(tc, test_size_1m);
    tcase_add_test(tc, test_empty_table);
    tcase_add_test(tc, test_key_zero_and_max);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_alloc);
    tcase_add_test(tc, test_duplicates);
    tcase_add_test(tc, test_forced_reseeds);
    tcase_add_test(tc, test_forced_restarts);
    tcase_add_test(tc, test_natural_restart);
    tcase_add_test(tc, test_deterministic_and_seeded);
    tcase_add_test(tc, test_thread_count_independent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(cuckoo_suite());
}
