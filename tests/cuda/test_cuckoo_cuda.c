/* test_cuckoo_cuda.c: the three cuckoo tables built on the GPU
 * (src/cuda/cuckoo.cu) against the CPU tables (src/cuckoo*.c) built from the same
 * keys and seed: nb, restart, phase-1 constants, stats, bucket seeds and slot
 * keys exactly; basic values, multi counts/offsets, compact indices and
 * unique keys exactly; multi values as a multiset per key (the GPU's phase 1
 * orders a bucket's items by atomics); GPU retrieval of every inserted key and
 * of absent keys equal to CPU retrieval; forced reseeds and restarts; the
 * error cases.  Exit 77 (ctest: skipped) without a CUDA device. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash/cuckoo.h"
#include "hash/cuckoo_core.h"
#include "cuda/gm_cuda.h"
#include "test_util.h"

static uint32_t *dev_copy(const uint32_t *h, size_t n)
{
    void *d = NULL;
    CK_CUDA(cudaMalloc(&d, (n ? n : 1) * sizeof(uint32_t)));
    if (n)
        CK_CUDA(cudaMemcpy(d, h, n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    return (uint32_t *)d;
}

static uint32_t *dev_alloc(size_t n)
{
    void *d = NULL;
    CK_CUDA(cudaMalloc(&d, (n ? n : 1) * sizeof(uint32_t)));
    /* poison: an output the kernel forgot to write shows */
    CK_CUDA(cudaMemset(d, 0xA5, (n ? n : 1) * sizeof(uint32_t)));
    return (uint32_t *)d;
}

static uint32_t *host_copy(const uint32_t *d, size_t n)
{
    uint32_t *h = xmalloc(n, sizeof *h);
    if (n)
        CK_CUDA(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
    return h;
}

static size_t num_slots(uint32_t nb) { return (size_t)nb * GM_CUCKOO_BUCKET_SLOTS; }

/* GM_TEST_SMALL=1 (set by tools/gpu.sh under compute-sanitizer, which runs
 * kernels 10-100x slower): the two largest sizes are left out and the other
 * large inputs shrink. */
static int g_small;

/* The test sizes of the brief, n = 0 .. 1000000; fewer when g_small. */
static const uint32_t g_sizes[] = {0, 1, 409, 512, 513, 100000, 1000000};
static size_t num_sizes(void)
{
    return sizeof g_sizes / sizeof g_sizes[0] - (g_small ? 2 : 0);
}

/* n distinct keys key_of(0..n-1, salt) (in an order that is not sorted: mix32
 * scrambles), n random values. */
static uint32_t *unique_keys(uint32_t n, uint32_t salt)
{
    uint32_t *k = xmalloc(n, sizeof *k);
    for (uint32_t i = 0; i < n; i++)
        k[i] = key_of(i, salt);
    return k;
}

static uint32_t *random_values(uint32_t n)
{
    uint32_t *v = xmalloc(n, sizeof *v);
    for (uint32_t i = 0; i < n; i++)
        v[i] = rng_next();
    return v;
}

/* Multi-value items: key_of(0, salt) `heavy` times, then keys key_of(1..)
 * with 1..64 items each (uniform), shuffled.  *d: distinct keys used. */
static uint32_t *multi_items(uint32_t n, uint32_t heavy, uint32_t salt, uint32_t *d)
{
    uint32_t *k = xmalloc(n, sizeof *k);
    uint32_t i = 0, j = 0;
    if (heavy > n)
        heavy = n;
    if (heavy) {
        for (; i < heavy; i++)
            k[i] = key_of(0, salt);
        j = 1;
    }
    for (; i < n; j++) {
        uint32_t mult = 1 + rng_next() % 64;
        for (uint32_t r = 0; r < mult && i < n; r++)
            k[i++] = key_of(j, salt);
    }
    *d = j;
    for (uint32_t x = n; x > 1; x--) {
        uint32_t y = rng_next() % x;
        uint32_t t = k[x - 1];
        k[x - 1] = k[y];
        k[y] = t;
    }
    return k;
}

/* Queries: the given keys, then `absent` keys key_of(absent_from + j, salt)
 * that no table holds, then GM_KEY_EMPTY. */
static uint32_t *make_queries(const uint32_t *keys, uint32_t n, uint32_t absent, uint32_t salt,
                              uint32_t absent_from, uint32_t *nq)
{
    *nq = n + absent + 1;
    uint32_t *q = xmalloc(*nq, sizeof *q);
    if (n)
        memcpy(q, keys, (size_t)n * sizeof *q);
    for (uint32_t j = 0; j < absent; j++)
        q[n + j] = key_of(absent_from + j, salt);
    q[n + absent] = GM_KEY_EMPTY;
    return q;
}

/* ---- basic table -------------------------------------------------------------- */

/* Build on both, compare everything, free everything. */
static void compare_basic(const uint32_t *keys, const uint32_t *vals, uint32_t n, uint64_t seed,
                          const gm_cuckoo_debug *dbg, uint32_t salt, uint32_t absent_from)
{
    gm_cuckoo cpu, gpu;
    gm_cuckoo_dev dev;
    EXPECT_EQ(gm_cuckoo_build_cpu(&cpu, keys, vals, n, seed, dbg), GM_OK);
    uint32_t *dk = dev_copy(keys, n), *dv = dev_copy(vals, n);
    EXPECT_OK(gm_cuckoo_build_cuda(&dev, dk, dv, n, seed, dbg, 0));
    EXPECT_OK(gm_cuckoo_dev_to_host(&dev, &gpu));
    check_view_same(CUCKOO_VIEW(&cpu), CUCKOO_VIEW(&gpu));
    EXPECT_EQ(gpu.n, n);
    EXPECT_EQ(gpu.stats.unique_keys, n);
    EXPECT_EQ(memcmp(cpu.vals, gpu.vals, num_slots(cpu.nb) * sizeof *cpu.vals), 0);

    uint32_t nq;
    uint32_t *q = make_queries(keys, n, 1000, salt, absent_from, &nq);
    uint32_t *want = xmalloc(nq, sizeof *want);
    gm_cuckoo_find_all_cpu(&cpu, q, nq, want);
    uint32_t *dq = dev_copy(q, nq), *dout = dev_alloc(nq);
    EXPECT_OK(gm_cuckoo_find_cuda(&dev, dq, nq, dout, 0));
    uint32_t *got = host_copy(dout, nq);
    EXPECT_EQ(memcmp(want, got, (size_t)nq * sizeof *got), 0);
    for (uint32_t i = 0; i < n; i++)
        EXPECT_EQ(got[i], vals[i]);
    for (uint32_t i = n; i < nq; i++)
        EXPECT_EQ(got[i], GM_KEY_EMPTY);

    free(q);
    free(want);
    free(got);
    CK_CUDA(cudaFree(dq));
    CK_CUDA(cudaFree(dout));
    CK_CUDA(cudaFree(dk));
    CK_CUDA(cudaFree(dv));
    gm_cuckoo_dev_free(&dev);
    EXPECT(dev.d_keys == NULL);
    gm_cuckoo_free(&cpu);
    gm_cuckoo_free(&gpu);
}

static void basic_random(uint32_t n, uint64_t seed, const gm_cuckoo_debug *dbg)
{
    rng_state = seed;
    uint32_t salt = (uint32_t)seed * 2654435761u;
    uint32_t *keys = unique_keys(n, salt), *vals = random_values(n);
    compare_basic(keys, vals, n, seed, dbg, salt, n);
    free(keys);
    free(vals);
}

/* The GPU build fails with `want` and leaves nothing behind, like the CPU. */
static void basic_fails(const uint32_t *keys, const uint32_t *vals, uint32_t n, uint64_t seed,
                        const gm_cuckoo_debug *dbg, gm_status want)
{
    gm_cuckoo cpu;
    EXPECT_EQ(gm_cuckoo_build_cpu(&cpu, keys, vals, n, seed, dbg), want);
    uint32_t *dk = dev_copy(keys, n), *dv = dev_copy(vals, n);
    gm_cuckoo_dev dev;
    EXPECT_EQ(gm_cuckoo_build_cuda(&dev, dk, dv, n, seed, dbg, 0), want);
    EXPECT(dev.d_keys == NULL && dev.d_seeds == NULL && dev.d_vals == NULL);
    CK_CUDA(cudaFree(dk));
    CK_CUDA(cudaFree(dv));
}

START_TEST(test_basic_sizes)
{
    for (size_t i = 0; i < num_sizes(); i++)
        basic_random(g_sizes[i], 1000 + i, NULL);
}
END_TEST

START_TEST(test_basic_key_zero_and_max)
{
    uint32_t keys[] = {0, 1, 2, 3, 0xFFFFFFFEu, 0xFFFFFFFDu, 0xFFFFFFFBu, 0xFFFFFFFAu, 77};
    uint32_t vals[] = {10, 11, 12, 13, 14, 15, 16, 17, 18};
    compare_basic(keys, vals, 9, 3, NULL, 5, 1000);
}
END_TEST

START_TEST(test_basic_forced)
{
    static const gm_cuckoo_debug dbgs[] = {
        {3, 0}, {0, 2}, {2, 1}, {GM_CUCKOO_MAX_RESEEDS - 1, 0}, {0, GM_CUCKOO_MAX_RESTARTS}};
    for (size_t d = 0; d < sizeof dbgs / sizeof dbgs[0]; d++)
        basic_random(g_small ? 5000 : 20000, 50 + d, &dbgs[d]);
    /* every attempt failing, or one restart too many: GM_ERR_HASH */
    uint32_t n = 5000;
    rng_state = 9;
    uint32_t *keys = unique_keys(n, 9), *vals = random_values(n);
    gm_cuckoo_debug all_fail = {GM_CUCKOO_MAX_RESEEDS, 0};
    basic_fails(keys, vals, n, 9, &all_fail, GM_ERR_HASH);
    gm_cuckoo_debug too_many = {0, GM_CUCKOO_MAX_RESTARTS + 1};
    basic_fails(keys, vals, n, 9, &too_many, GM_ERR_HASH);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_basic_natural_restart)
{
    /* n = 4090 gives nb = 10.  `heavy` keys == 0 mod 10 overfill bucket 0
     * under restart 0's h(k) = k mod nb (test_cuckoo.c). */
    static const uint32_t heavy_counts[] = {600, 520};
    for (size_t h = 0; h < 2; h++) {
        uint32_t n = 4090, heavy = heavy_counts[h];
        uint32_t *keys = xmalloc(n, sizeof *keys);
        rng_state = 21;
        uint32_t *vals = random_values(n);
        for (uint32_t i = 0; i < n; i++)
            keys[i] = i < heavy ? i * 10u : (i - heavy) * 10u + 1u + (i % 9u);
        gm_cuckoo_dev dev;
        uint32_t *dk = dev_copy(keys, n), *dv = dev_copy(vals, n);
        EXPECT_OK(gm_cuckoo_build_cuda(&dev, dk, dv, n, 21, NULL, 0));
        EXPECT(dev.stats.restarts >= 1);
        gm_cuckoo_dev_free(&dev);
        CK_CUDA(cudaFree(dk));
        CK_CUDA(cudaFree(dv));
        compare_basic(keys, vals, n, 21, NULL, 777, 0);
        free(keys);
        free(vals);
    }
}
END_TEST

START_TEST(test_basic_duplicates)
{
    uint32_t n = g_small ? 10000 : 50000;
    rng_state = 99;
    uint32_t *keys = unique_keys(n, 99), *vals = random_values(n);
    keys[n - 100] = keys[123];
    basic_fails(keys, vals, n, 1, NULL, GM_ERR_INVALID);
    /* many copies of one key: its bucket overflows under every h */
    for (uint32_t i = 0; i < 600; i++)
        keys[i * (n / 600)] = 77;
    basic_fails(keys, vals, n, 1, NULL, GM_ERR_INVALID);
    uint32_t k2[] = {4, 4}, v2[] = {1, 2};
    basic_fails(k2, v2, 2, 1, NULL, GM_ERR_INVALID);
    /* a duplicate is found even when every attempt is forced to fail */
    gm_cuckoo_debug all_fail = {GM_CUCKOO_MAX_RESEEDS, 0};
    basic_fails(k2, v2, 2, 1, &all_fail, GM_ERR_INVALID);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_invalid)
{
    uint32_t keys[] = {5, 9, GM_KEY_EMPTY, 11};
    uint32_t vals[] = {1, 2, 3, 4};
    basic_fails(keys, vals, 4, 1, NULL, GM_ERR_INVALID);
    /* with forced restarts the bad key is still seen (first count) */
    gm_cuckoo_debug dbg = {0, 3};
    basic_fails(keys, vals, 4, 1, &dbg, GM_ERR_INVALID);

    uint32_t *dk = dev_copy(keys, 4), *dv = dev_copy(vals, 4);
    gm_cuckoo_dev dev;
    EXPECT_EQ(gm_multi_build_cuda(&dev, dk, dv, 4, 0, 1, NULL, 0), GM_ERR_INVALID);
    EXPECT(dev.d_keys == NULL);
    EXPECT_EQ(gm_compact_build_cuda(&dev, dk, 4, 0, 1, NULL, 0), GM_ERR_INVALID);
    EXPECT(dev.d_keys == NULL);
    EXPECT_EQ(gm_cuckoo_build_cuda(&dev, NULL, dv, 2, 1, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_cuckoo_build_cuda(&dev, dk, NULL, 2, 1, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_cuckoo_build_cuda(NULL, dk, dv, 2, 1, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_multi_build_cuda(&dev, dk, NULL, 2, 0, 1, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_compact_build_cuda(&dev, NULL, 2, 0, 1, NULL, 0), GM_ERR_INVALID);
    EXPECT_OK(gm_cuckoo_build_cuda(&dev, dk, dv, 2, 1, NULL, 0));
    /* a basic table has no counts: multi retrieval refuses it */
    EXPECT_EQ(gm_multi_find_cuda(&dev, dk, 2, dv, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_cuckoo_find_cuda(&dev, NULL, 2, dv, 0), GM_ERR_INVALID);
    EXPECT_OK(gm_cuckoo_find_cuda(&dev, NULL, 0, NULL, 0));
    gm_cuckoo_dev_free(&dev);
    CK_CUDA(cudaFree(dk));
    CK_CUDA(cudaFree(dv));
}
END_TEST

/* ---- multi-value table ----------------------------------------------------------- */

static void compare_multi(const uint32_t *keys, const uint32_t *vals, uint32_t n,
                          uint32_t unique_bound, uint64_t seed, const gm_cuckoo_debug *dbg,
                          uint32_t salt, uint32_t absent_from)
{
    gm_multi cpu, gpu;
    gm_cuckoo_dev dev;
    EXPECT_EQ(gm_multi_build_cpu(&cpu, keys, vals, n, unique_bound, seed, dbg), GM_OK);
    uint32_t *dk = dev_copy(keys, n), *dv = dev_copy(vals, n);
    EXPECT_OK(gm_multi_build_cuda(&dev, dk, dv, n, unique_bound, seed, dbg, 0));
    EXPECT_OK(gm_multi_dev_to_host(&dev, &gpu));
    check_view_same(CUCKOO_VIEW(&cpu), CUCKOO_VIEW(&gpu));
    EXPECT_EQ(gpu.n, n);
    size_t slots = num_slots(cpu.nb);
    EXPECT_EQ(memcmp(cpu.counts, gpu.counts, slots * sizeof *cpu.counts), 0);
    EXPECT_EQ(memcmp(cpu.offsets, gpu.offsets, slots * sizeof *cpu.offsets), 0);
    /* values: the same multiset per key (blocks are equal, so sort each) */
    uint64_t total = 0;
    for (size_t s = 0; s < slots; s++) {
        uint32_t c = cpu.counts[s], o = cpu.offsets[s];
        if (c == 0)
            continue;
        EXPECT((uint64_t)o + c <= n);
        qsort(cpu.values + o, c, sizeof *cpu.values, cmp_u32);
        qsort(gpu.values + o, c, sizeof *gpu.values, cmp_u32);
        EXPECT_EQ(memcmp(cpu.values + o, gpu.values + o, (size_t)c * sizeof *cpu.values), 0);
        total += c;
    }
    EXPECT_EQ(total, n);

    /* retrieval: every item's key (so heavy keys are asked many times),
     * absent keys, GM_KEY_EMPTY */
    uint32_t nq;
    uint32_t *q = make_queries(keys, n, 1000, salt, absent_from, &nq);
    uint32_t *dq = dev_copy(q, nq), *dcount = dev_alloc(nq), *dfirst = dev_alloc(nq);
    EXPECT_OK(gm_multi_find_cuda(&dev, dq, nq, dcount, dfirst, 0));
    uint32_t *count = host_copy(dcount, nq), *first = host_copy(dfirst, nq);
    for (uint32_t i = 0; i < nq; i++) {
        const uint32_t *f;
        uint32_t c = gm_multi_find(&cpu, q[i], &f);
        EXPECT_EQ(count[i], c);
        if (c)
            EXPECT_EQ(first[i], (uint32_t)(f - cpu.values));
        else
            EXPECT_EQ(first[i], 0);
        EXPECT(i >= n ? c == 0 : c > 0);
    }
    /* d_first may be NULL */
    EXPECT_OK(gm_multi_find_cuda(&dev, dq, nq, dcount, NULL, 0));
    uint32_t *count2 = host_copy(dcount, nq);
    EXPECT_EQ(memcmp(count, count2, (size_t)nq * sizeof *count), 0);

    free(q);
    free(count);
    free(count2);
    free(first);
    CK_CUDA(cudaFree(dq));
    CK_CUDA(cudaFree(dcount));
    CK_CUDA(cudaFree(dfirst));
    CK_CUDA(cudaFree(dk));
    CK_CUDA(cudaFree(dv));
    gm_cuckoo_dev_free(&dev);
    gm_multi_free(&cpu);
    gm_multi_free(&gpu);
}

/* n items with multiplicities 1..64 and one heavy key; unique_bound 0 (sized
 * by n: few keys a bucket) and the true distinct count (~409 a bucket). */
static void multi_random(uint32_t n, uint32_t heavy, uint64_t seed, const gm_cuckoo_debug *dbg)
{
    rng_state = seed;
    uint32_t salt = (uint32_t)seed * 2246822519u, d;
    uint32_t *keys = multi_items(n, heavy, salt, &d), *vals = random_values(n);
    compare_multi(keys, vals, n, 0, seed, dbg, salt, d);
    compare_multi(keys, vals, n, d, seed + 1, dbg, salt, d);
    free(keys);
    free(vals);
}

START_TEST(test_multi_sizes)
{
    for (size_t i = 0; i < num_sizes(); i++) {
        uint32_t n = g_sizes[i];
        multi_random(n, n >= 100000 ? 5000 : n / 3, 2000 + i, NULL);
    }
}
END_TEST

START_TEST(test_multi_unique_and_one_key)
{
    /* multiplicity 1 everywhere: the multi table of distinct keys */
    uint32_t n = g_small ? 20000 : 100000;
    rng_state = 31;
    uint32_t *keys = unique_keys(n, 31), *vals = random_values(n);
    compare_multi(keys, vals, n, 0, 31, NULL, 31, n);
    /* one key only, 20000 values: one bucket, one slot, a long value block */
    for (uint32_t i = 0; i < 20000; i++)
        keys[i] = 12345;
    compare_multi(keys, vals, 20000, 0, 32, NULL, 31, n);
    compare_multi(keys, vals, 20000, 1, 33, NULL, 31, n);
    free(keys);
    free(vals);
}
END_TEST

START_TEST(test_multi_forced)
{
    static const gm_cuckoo_debug dbgs[] = {{3, 0}, {0, 2}, {2, 1}};
    for (size_t d = 0; d < sizeof dbgs / sizeof dbgs[0]; d++)
        multi_random(g_small ? 5000 : 30000, 2000, 60 + d, &dbgs[d]);
    uint32_t n = 5000, dd;
    rng_state = 8;
    uint32_t *keys = multi_items(n, 0, 8, &dd), *vals = random_values(n);
    gm_cuckoo_debug fails[] = {{GM_CUCKOO_MAX_RESEEDS, 0}, {0, GM_CUCKOO_MAX_RESTARTS + 1}};
    uint32_t *dk = dev_copy(keys, n), *dv = dev_copy(vals, n);
    for (size_t f = 0; f < 2; f++) {
        gm_multi cpu;
        gm_cuckoo_dev dev;
        EXPECT_EQ(gm_multi_build_cpu(&cpu, keys, vals, n, 0, 8, &fails[f]), GM_ERR_HASH);
        EXPECT_EQ(gm_multi_build_cuda(&dev, dk, dv, n, 0, 8, &fails[f], 0), GM_ERR_HASH);
        EXPECT(dev.d_keys == NULL && dev.d_values == NULL);
    }
    CK_CUDA(cudaFree(dk));
    CK_CUDA(cudaFree(dv));
    free(keys);
    free(vals);
}
END_TEST

/* Phase 2 fails and phase 1 restarts: bucket 0 of restart 0 gets 600
 * distinct keys (> 576), which no table can hold. */
static uint32_t *restart_keys(uint32_t n, uint32_t heavy)
{
    uint32_t *keys = xmalloc(n, sizeof *keys);
    for (uint32_t i = 0; i < n; i++)
        keys[i] = i < heavy ? i * 10u : (i - heavy) * 10u + 1u + (i % 9u);
    return keys;
}

START_TEST(test_multi_natural_restart)
{
    uint32_t n = 4090;
    uint32_t *keys = restart_keys(n, 600);
    rng_state = 41;
    uint32_t *vals = random_values(n);
    gm_multi cpu;
    EXPECT_EQ(gm_multi_build_cpu(&cpu, keys, vals, n, 0, 41, NULL), GM_OK);
    EXPECT(cpu.stats.restarts >= 1);
    gm_multi_free(&cpu);
    compare_multi(keys, vals, n, 0, 41, NULL, 41, 0);
    free(keys);
    free(vals);
}
END_TEST

/* ---- compacting table ------------------------------------------------------------- */

static void compare_compact(const uint32_t *keys, uint32_t n, uint32_t unique_bound,
                            uint64_t seed, const gm_cuckoo_debug *dbg, uint32_t salt,
                            uint32_t absent_from)
{
    gm_compact cpu, gpu;
    gm_cuckoo_dev dev;
    EXPECT_EQ(gm_compact_build_cpu(&cpu, keys, n, unique_bound, seed, dbg), GM_OK);
    uint32_t *dk = dev_copy(keys, n);
    EXPECT_OK(gm_compact_build_cuda(&dev, dk, n, unique_bound, seed, dbg, 0));
    EXPECT_OK(gm_compact_dev_to_host(&dev, &gpu));
    check_view_same(CUCKOO_VIEW(&cpu), CUCKOO_VIEW(&gpu));
    EXPECT_EQ(gpu.n, n);
    EXPECT_EQ(gpu.u, cpu.u);
    EXPECT_EQ(memcmp(cpu.index, gpu.index, num_slots(cpu.nb) * sizeof *cpu.index), 0);
    if (cpu.u == gpu.u)
        EXPECT_EQ(memcmp(cpu.unique, gpu.unique, (size_t)cpu.u * sizeof *cpu.unique), 0);

    uint32_t nq;
    uint32_t *q = make_queries(keys, n, 1000, salt, absent_from, &nq);
    uint32_t *dq = dev_copy(q, nq), *dout = dev_alloc(nq);
    EXPECT_OK(gm_compact_find_cuda(&dev, dq, nq, dout, 0));
    uint32_t *got = host_copy(dout, nq);
    for (uint32_t i = 0; i < nq; i++) {
        uint32_t want = gm_compact_find(&cpu, q[i]);
        EXPECT_EQ(got[i], want);
        EXPECT(i >= n ? want == GM_KEY_EMPTY : want < cpu.u);
    }
    free(q);
    free(got);
    CK_CUDA(cudaFree(dq));
    CK_CUDA(cudaFree(dout));
    CK_CUDA(cudaFree(dk));
    gm_cuckoo_dev_free(&dev);
    gm_compact_free(&cpu);
    gm_compact_free(&gpu);
}

START_TEST(test_compact_sizes)
{
    for (size_t i = 0; i < num_sizes(); i++) {
        uint32_t n = g_sizes[i], d;
        uint64_t seed = 3000 + i;
        rng_state = seed;
        uint32_t salt = (uint32_t)seed * 3266489917u;
        uint32_t *keys = multi_items(n, n >= 100000 ? 5000 : n / 3, salt, &d);
        compare_compact(keys, n, 0, seed, NULL, salt, d);
        compare_compact(keys, n, d, seed + 1, NULL, salt, d);
        free(keys);
        /* all distinct */
        keys = unique_keys(n, salt);
        compare_compact(keys, n, 0, seed + 2, NULL, salt, n);
        free(keys);
    }
}
END_TEST

START_TEST(test_compact_forced_and_restart)
{
    static const gm_cuckoo_debug dbgs[] = {{3, 0}, {0, 2}, {2, 1}};
    for (size_t f = 0; f < sizeof dbgs / sizeof dbgs[0]; f++) {
        uint32_t n = g_small ? 5000 : 30000, d;
        uint64_t seed = 70 + f;
        rng_state = seed;
        uint32_t *keys = multi_items(n, 1000, (uint32_t)seed, &d);
        compare_compact(keys, n, d, seed, &dbgs[f], (uint32_t)seed, d);
        free(keys);
    }
    uint32_t n = 4090;
    uint32_t *keys = restart_keys(n, 600);
    compare_compact(keys, n, 0, 43, NULL, 43, 0);
    /* all one key */
    for (uint32_t i = 0; i < n; i++)
        keys[i] = 5;
    compare_compact(keys, n, 0, 44, NULL, 44, 0);
    gm_cuckoo_debug fail = {GM_CUCKOO_MAX_RESEEDS, 0};
    uint32_t *dk = dev_copy(keys, n);
    gm_cuckoo_dev dev;
    EXPECT_EQ(gm_compact_build_cuda(&dev, dk, n, 0, 44, &fail, 0), GM_ERR_HASH);
    EXPECT(dev.d_keys == NULL && dev.d_unique == NULL);
    CK_CUDA(cudaFree(dk));
    free(keys);
}
END_TEST

/* Building many tables leaks nothing: the device's free memory is back
 * where it was (stream-ordered memory returns to the pool, which gives it
 * back at a synchronization). */
START_TEST(test_no_leak)
{
    uint32_t n = g_small ? 20000 : 200000, d;
    rng_state = 5;
    uint32_t *keys = multi_items(n, 100, 5, &d), *vals = random_values(n);
    uint32_t *uk = unique_keys(n, 5);
    uint32_t *dk = dev_copy(keys, n), *dv = dev_copy(vals, n), *du = dev_copy(uk, n);
    CK_CUDA(cudaDeviceSynchronize());
    size_t free0 = 0, free1 = 0, total = 0;
    CK_CUDA(cudaMemGetInfo(&free0, &total));
    for (int r = 0; r < 5; r++) {
        gm_cuckoo_dev t;
        EXPECT_OK(gm_cuckoo_build_cuda(&t, du, dv, n, 1 + (uint64_t)r, NULL, 0));
        gm_cuckoo_dev_free(&t);
        EXPECT_OK(gm_multi_build_cuda(&t, dk, dv, n, 0, 1, NULL, 0));
        gm_cuckoo_dev_free(&t);
        EXPECT_OK(gm_compact_build_cuda(&t, dk, n, d, 1, NULL, 0));
        gm_cuckoo_dev_free(&t);
        EXPECT_EQ(gm_cuckoo_build_cuda(&t, dk, dv, n, 1, NULL, 0), GM_ERR_INVALID);
    }
    CK_CUDA(cudaDeviceSynchronize());
    CK_CUDA(cudaMemGetInfo(&free1, &total));
    /* the pool may keep up to a few MiB of granularity */
    EXPECT(free1 + ((size_t)64 << 20) >= free0);
    CK_CUDA(cudaFree(dk));
    CK_CUDA(cudaFree(dv));
    CK_CUDA(cudaFree(du));
    free(keys);
    free(vals);
    free(uk);
}
END_TEST

static Suite *cuckoo_cuda_suite(void)
{
    Suite *s = suite_create("cuckoo_cuda");
    TCase *tc = tcase_create("cuda_vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_basic_sizes);
    tcase_add_test(tc, test_basic_key_zero_and_max);
    tcase_add_test(tc, test_basic_forced);
    tcase_add_test(tc, test_basic_natural_restart);
    tcase_add_test(tc, test_basic_duplicates);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_multi_sizes);
    tcase_add_test(tc, test_multi_unique_and_one_key);
    tcase_add_test(tc, test_multi_forced);
    tcase_add_test(tc, test_multi_natural_restart);
    tcase_add_test(tc, test_compact_sizes);
    tcase_add_test(tc, test_compact_forced_and_restart);
    tcase_add_test(tc, test_no_leak);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *cuckoo_cuda_suite_small(void)
{
    const char *small = getenv("GM_TEST_SMALL");
    g_small = small && strcmp(small, "0") != 0;
    return cuckoo_cuda_suite();
}

int main(void) { return run_cuda_suite(cuckoo_cuda_suite_small); }
