/* test_util.h: helpers shared by the Check suites, header-only (static
 * inline), so every test binary stays self-contained.
 *
 * Include it after the project headers: the cuckoo-table helpers at the end
 * are compiled only when cuckoo_core.h was included before. */
#ifndef GM_TEST_UTIL_H
#define GM_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- assertions ------------------------------------------------------------ */

/* Check's ck_assert_* records its location on every PASS (a write to a temp
 * file), which makes millions of per-item checks take seconds; these only
 * call into Check on failure. */
#define EXPECT(cond)                                                          \
    do {                                                                      \
        if (!(cond))                                                          \
            ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond);             \
    } while (0)
#define EXPECT_EQ(a, b)                                                       \
    do {                                                                      \
        long long ea_ = (long long)(a), eb_ = (long long)(b);                 \
        if (ea_ != eb_)                                                       \
            ck_abort_msg("%s:%d: %s == %s (%lld != %lld)", __FILE__, __LINE__, \
                         #a, #b, ea_, eb_);                                   \
    } while (0)
#define EXPECT_NEAR(a, b, tol)                                                \
    do {                                                                      \
        double na_ = (double)(a), nb_ = (double)(b);                          \
        if (!(fabs(na_ - nb_) <= (tol)))                                      \
            ck_abort_msg("%s:%d: %s ~ %s (%.9g vs %.9g, tol %g)", __FILE__,    \
                         __LINE__, #a, #b, na_, nb_, (double)(tol));          \
    } while (0)

/* ---- random numbers: splitmix64, seeded by assigning rng_state ------------- */

static uint64_t rng_state;

static inline uint32_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* uniform in [0, 1) */
static inline double rng_unit(void) { return rng_next() / 4294967296.0; }

/* ---- memory ------------------------------------------------------------------ */

/* count * size bytes (at least one element, so count 0 is not NULL); the
 * test fails when malloc does. */
static inline void *xmalloc(size_t count, size_t size)
{
    void *p = malloc((count ? count : 1) * size);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* xmalloc, zeroed */
static inline void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    ck_assert_ptr_nonnull(p);
    return p;
}

static inline int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- transforms --------------------------------------------------------------- */

/* The similarity [a -b tx; b a ty], a = scale cos(deg), b = scale sin(deg). */
static inline void make_sim(double deg, double scale, double tx, double ty, double m[6])
{
    const double pi = 3.14159265358979323846; /* GM_PI */
    double a = scale * cos(deg * pi / 180), b = scale * sin(deg * pi / 180);
    m[0] = a;
    m[1] = -b;
    m[2] = tx;
    m[3] = b;
    m[4] = a;
    m[5] = ty;
}

/* Largest distance between the images under the 3x3 transforms a and b
 * (row-major, homogeneous) of the corners of the box [x0, x1] x [y0, y1]. */
static inline double box_corner_gap(const double a[9], const double b[9], double x0, double y0,
                                    double x1, double y1)
{
    const double cx[4] = {x0, x1, x1, x0}, cy[4] = {y0, y0, y1, y1};
    double e = 0;
    for (int i = 0; i < 4; i++) {
        double x = cx[i], y = cy[i];
        double wa = a[6] * x + a[7] * y + a[8], wb = b[6] * x + b[7] * y + b[8];
        double dx = (a[0] * x + a[1] * y + a[2]) / wa - (b[0] * x + b[1] * y + b[2]) / wb;
        double dy = (a[3] * x + a[4] * y + a[5]) / wa - (b[3] * x + b[4] * y + b[5]) / wb;
        e = fmax(e, hypot(dx, dy));
    }
    return e;
}

/* The same at the corners of a qw x qh query. */
static inline double h_corner_gap(const double a[9], const double b[9], int qw, int qh)
{
    return box_corner_gap(a, b, 0, 0, qw - 1.0, qh - 1.0);
}

/* The 3x3 product a * b (row-major). */
static inline void h_mul(const double a[9], const double b[9], double out[9])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            out[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}

/* ---- images ------------------------------------------------------------------ */

/* A host image with a stride wider than the row, the padding filled with
 * junk that must never be read into a result. */
typedef struct {
    uint8_t *buf;
    int w, h;
    ptrdiff_t stride;
} img_t;

static inline img_t img_new(int w, int h, int pad)
{
    img_t im = {NULL, w, h, (ptrdiff_t)w + pad};
    im.buf = xmalloc((size_t)im.stride * (size_t)h, 1);
    memset(im.buf, 0xA5, (size_t)im.stride * (size_t)h);
    return im;
}

static inline uint8_t *px(img_t *im, int x, int y)
{
    return im->buf + (ptrdiff_t)y * im->stride + x;
}

/* ---- test data ------------------------------------------------------------- */
#ifdef GMATCH_H
#include <stdio.h>

/* data/... from the source tree (ctest runs in it) or from a build dir in
 * it; the test fails when it cannot be loaded.  Free with gm_image_free. */
static inline gm_image load_data(const char *rel)
{
    static const char *prefix[] = {"", "../", "../../"};
    char path[512], err[256] = "";
    gm_image img;
    memset(&img, 0, sizeof img);
    for (size_t p = 0; p < sizeof prefix / sizeof *prefix; p++) {
        snprintf(path, sizeof path, "%s%s", prefix[p], rel);
        if (gm_image_load(path, 0, &img, err, sizeof err) == GM_OK)
            return img;
    }
    ck_abort_msg("cannot load %s (%s): run from the source directory", rel, err);
    return img;
}
#endif

/* ---- running a suite ------------------------------------------------------- */

/* main() of a test binary: run every test of s, exit status 0 when all pass. */
static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- cuckoo tables (test_cuckoo*.c) ------------------------------------------ */
#ifdef GM_CUCKOO_CORE_H

/* A bijection of uint32 (murmur3 fmix32): distinct inputs, distinct keys. */
static inline uint32_t mix32(uint32_t k)
{
    k ^= k >> 16;
    k *= 0x85EBCA6Bu;
    k ^= k >> 13;
    k *= 0xC2B2AE35u;
    k ^= k >> 16;
    return k;
}

/* Distinct key number j of a test: mix32(j + salt); j >= the number of keys
 * used gives keys known to be absent.  GM_KEY_EMPTY is skipped by callers. */
static inline uint32_t key_of(uint32_t j, uint32_t salt)
{
    uint32_t k = mix32(j + salt);
    return k == GM_KEY_EMPTY ? mix32(0xFFFFFFF0u + salt) : k;
}

/* n items over d distinct keys key_of(0..d-1, salt), each used at least
 * once, the others uniform at random; shuffled so that the first d items are
 * not the distinct ones in order.  Uses rng_next. */
static inline uint32_t *random_items(uint32_t n, uint32_t d, uint32_t salt)
{
    uint32_t *k = xmalloc(n, sizeof *k);
    for (uint32_t i = 0; i < n; i++)
        k[i] = key_of(i < d ? i : rng_next() % d, salt);
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = rng_next() % i;
        uint32_t x = k[i - 1];
        k[i - 1] = k[j];
        k[j] = x;
    }
    return k;
}

/* Buckets of a table of n items sized by unique_bound (0: by n), written
 * from the rule in cuckoo.h: ceil(min(n, bound) / 409), at least 1. */
static inline uint32_t expected_nb(uint32_t n, uint32_t unique_bound)
{
    uint32_t sized = (unique_bound == 0 || unique_bound > n) ? n : unique_bound;
    uint32_t nb = (uint32_t)(((uint64_t)sized + 408) / 409);
    return nb ? nb : 1;
}

static inline size_t slot_of(uint32_t nb, int t, uint32_t b, uint32_t s)
{
    return (size_t)t * nb * GM_CUCKOO_SLOTS + (size_t)b * GM_CUCKOO_SLOTS + s;
}

/* The attempt whose seed is `bseed`, -1 when none. */
static inline int attempt_of(uint64_t seed, uint32_t restart, uint32_t b, uint32_t bseed)
{
    for (uint32_t a = 0; a < GM_CUCKOO_MAX_RESEEDS; a++)
        if (gm_cuckoo_bucket_seed(seed, restart, b, a) == bseed)
            return (int)a;
    return -1;
}

/* Independent reference of one attempt of lockstep parallel cuckoo hashing,
 * written from the rule in cuckoo.h, every ITEM its own thread (equal keys
 * are separate writers): round r, unplaced items write T_{r mod 3} at
 * g_t(k), the largest key written to a slot lands there, then every item
 * checks its slot.  Returns the rounds taken, or -1 after
 * GM_CUCKOO_MAX_ROUNDS. */
static inline int ref_lockstep(const uint32_t *keys, uint32_t m, uint32_t bseed,
                               uint32_t tab[3][GM_CUCKOO_SLOTS])
{
    gm_cuckoo_consts k = gm_cuckoo_hash_consts(bseed);
    int *where = xmalloc(m, sizeof *where); /* -1 unplaced, else t*192+s */
    for (uint32_t i = 0; i < m; i++)
        where[i] = -1;
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < GM_CUCKOO_SLOTS; s++)
            tab[t][s] = GM_KEY_EMPTY;
    int rounds = m == 0 ? 0 : -1;
    for (int r = 0; r < GM_CUCKOO_MAX_ROUNDS && rounds < 0; r++) {
        int t = r % 3;
        int wrote[GM_CUCKOO_SLOTS] = {0};
        uint32_t best[GM_CUCKOO_SLOTS] = {0};
        for (uint32_t i = 0; i < m; i++) {
            if (where[i] >= 0)
                continue;
            uint32_t s = gm_cuckoo_g(&k, t, keys[i]);
            if (!wrote[s] || keys[i] > best[s])
                best[s] = keys[i];
            wrote[s] = 1;
        }
        for (int s = 0; s < GM_CUCKOO_SLOTS; s++)
            if (wrote[s])
                tab[t][s] = best[s];
        int all = 1;
        for (uint32_t i = 0; i < m; i++) {
            int s = where[i] >= 0 ? where[i] % GM_CUCKOO_SLOTS : (int)gm_cuckoo_g(&k, t, keys[i]);
            int tt = where[i] >= 0 ? where[i] / GM_CUCKOO_SLOTS : t;
            if (tt == t)
                where[i] = tab[t][s] == keys[i] ? t * GM_CUCKOO_SLOTS + s : -1;
            all &= where[i] >= 0;
        }
        if (all)
            rounds = r + 1;
    }
    free(where);
    return rounds;
}

/* The fields the three tables of cuckoo.h share, so one check serves all. */
typedef struct {
    uint32_t nb, restart, h_c0, h_c1;
    const uint32_t *seeds; /* [nb] */
    const uint32_t *keys;  /* [3*nb*192] */
    const gm_cuckoo_stats *stats;
} cuckoo_view;

#define CUCKOO_VIEW(t)                                                        \
    ((cuckoo_view){(t)->nb, (t)->restart, (t)->h_c0, (t)->h_c1, (t)->seeds,  \
                   (t)->keys, &(t)->stats})

/* The table-wide fields: nb, the phase-1 constants of the restart taken,
 * stats.restarts, and per bucket a seed of the attempt sequence at or after
 * force_reseeds whose indices sum to stats.reseeds. */
static inline void check_view_header(cuckoo_view v, uint32_t want_nb, uint64_t seed,
                                     uint32_t force_reseeds)
{
    EXPECT_EQ(v.nb, want_nb);
    EXPECT_EQ(v.stats->restarts, v.restart);
    uint32_t c0, c1;
    gm_cuckoo_phase1_consts(seed, v.restart, &c0, &c1);
    EXPECT_EQ(v.h_c0, c0);
    EXPECT_EQ(v.h_c1, c1);
    uint64_t reseeds = 0;
    for (uint32_t b = 0; b < v.nb; b++) {
        int a = attempt_of(seed, v.restart, b, v.seeds[b]);
        EXPECT(a >= (int)force_reseeds);
        reseeds += (uint64_t)a;
    }
    EXPECT_EQ(reseeds, v.stats->reseeds);
}

/* Rebuild each of the first `max_buckets` buckets (the items of keys[0..n)
 * that phase 1 puts there) with ref_lockstep and compare slot for slot;
 * attempts before the chosen one (from force_reseeds) must fail, and the
 * rounds taken must agree with stats.max_rounds. */
static inline void check_view_lockstep(cuckoo_view v, const uint32_t *keys, uint32_t n,
                                       uint64_t seed, uint32_t force_reseeds, uint32_t max_buckets)
{
    uint32_t nb = v.nb;
    uint32_t *bk = xmalloc(n, sizeof *bk);
    uint32_t maxr = 0;
    for (uint32_t b = 0; b < nb && b < max_buckets; b++) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++)
            if (gm_cuckoo_h(v.h_c0, v.h_c1, v.restart, nb, keys[i]) == b)
                bk[m++] = keys[i];
        int a = attempt_of(seed, v.restart, b, v.seeds[b]);
        EXPECT(a >= 0);
        uint32_t tab[3][GM_CUCKOO_SLOTS];
        for (int f = (int)force_reseeds; f < a; f++)
            EXPECT_EQ(ref_lockstep(bk, m, gm_cuckoo_bucket_seed(seed, v.restart, b, (uint32_t)f), tab),
                      -1);
        int rounds = ref_lockstep(bk, m, v.seeds[b], tab);
        EXPECT(rounds >= 0);
        EXPECT((uint32_t)rounds <= v.stats->max_rounds);
        if ((uint32_t)rounds > maxr)
            maxr = (uint32_t)rounds;
        for (int tt = 0; tt < 3; tt++)
            for (uint32_t s = 0; s < GM_CUCKOO_SLOTS; s++)
                EXPECT_EQ(v.keys[slot_of(nb, tt, b, s)], tab[tt][s]);
    }
    if (max_buckets >= nb)
        EXPECT_EQ(maxr, v.stats->max_rounds);
    free(bk);
}

/* Two builds of the same input: the shared fields bit for bit. */
static inline void check_view_same(cuckoo_view a, cuckoo_view b)
{
    EXPECT_EQ(a.nb, b.nb);
    EXPECT_EQ(a.restart, b.restart);
    EXPECT_EQ(a.h_c0, b.h_c0);
    EXPECT_EQ(a.h_c1, b.h_c1);
    EXPECT_EQ(memcmp(a.stats, b.stats, sizeof *a.stats), 0);
    size_t slots = (size_t)3 * a.nb * GM_CUCKOO_SLOTS;
    EXPECT_EQ(memcmp(a.seeds, b.seeds, a.nb * sizeof *a.seeds), 0);
    EXPECT_EQ(memcmp(a.keys, b.keys, slots * sizeof *a.keys), 0);
}

#endif /* GM_CUCKOO_CORE_H */
/* ---- CUDA-vs-CPU tests (test_*_cuda.c; include gm_cuda.h first) ------------- */
#ifdef GM_CUDA_H

/* A CUDA runtime call that must succeed. */
#define CK_CUDA(call)                                                                  \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess)                                                         \
            ck_abort_msg("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    } while (0)

/* A gm_status call that must succeed; the message names the failing CUDA
 * call when there was one. */
#define EXPECT_OK(call)                                                                \
    do {                                                                               \
        gm_status s_ = (call);                                                         \
        if (s_ != GM_OK)                                                               \
            ck_abort_msg("%s:%d: %s = %d (%s) [%s]", __FILE__, __LINE__, #call, (int)s_, \
                         gm_status_str(s_), gm_cuda_last_error());                     \
    } while (0)

/* A device copy of bytes of host memory (at least one byte allocated). */
static inline void *to_dev(const void *h, size_t bytes)
{
    void *d = NULL;
    CK_CUDA(cudaMalloc(&d, bytes ? bytes : 1));
    if (bytes)
        CK_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* main() of a CUDA test binary: 77 (ctest: skipped) without a device, else
 * the device's name and run_suite. */
static inline int run_cuda_suite(Suite *(*make)(void))
{
    char why[256] = "";
    if (gm_cuda_device_count(why, sizeof why) == 0) {
        printf("no CUDA device: skipped (%s)\n", why);
        return 77;
    }
    char desc[256];
    gm_cuda_device_describe(0, desc, sizeof desc);
    printf("device: %s\n", desc);
    return run_suite(make());
}

#endif /* GM_CUDA_H */
#endif /* GM_TEST_UTIL_H */
