/* test_bases.c: basis pairs and their invariant keys (bases.c, and the
 * inline frame helpers of stages/bases.h).
 *
 * Key of p in the frame of basis (a -> b): (u, v) = B R^T (p - a) / |b - a|
 * with B = 16, cell (floor u, floor v), kept when -UO <= floor u < UO + 16 and
 * -GM_UV_HALF <= floor v < GM_UV_HALF, and the direction bin
 * floor((angle_p - angle_ab) * 16 / 2 pi) mod 16; key = (floor u + UO) |
 * (floor v + GM_UV_HALF) << 7 | bin << 14 with UO = GM_UV_HALF - 8. */
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
#include "test_util.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static gm_point P(double x, double y, double angle)
{
    return (gm_point){(float)x, (float)y, (float)angle, 1.0f};
}

static gm_points random_points(uint32_t n, double w, double h)
{
    gm_points p = {xmalloc(n, sizeof(gm_point)), n};
    for (uint32_t i = 0; i < n; i++)
        p.p[i] = (gm_point){(float)(rng_unit() * w), (float)(rng_unit() * h),
                            (float)((rng_unit() * 2 - 1) * GM_PI), (float)(1 + rng_unit())};
    return p;
}

/* Sorted copy of the selected keys, with a check that none repeats and
 * that every key is a valid ordered pair i != j. */
static uint32_t *sorted_keys(const gm_bases *b, uint32_t n_pts)
{
    uint32_t *k = xmalloc(b->n, sizeof *k);
    memcpy(k, b->key, b->n * sizeof *k);
    qsort(k, b->n, sizeof *k, cmp_u32);
    for (uint32_t i = 0; i < b->n; i++) {
        EXPECT((k[i] >> 16) < n_pts && (k[i] & 0xFFFF) < n_pts);
        EXPECT((k[i] >> 16) != (k[i] & 0xFFFF));
        if (i)
            EXPECT(k[i - 1] < k[i]);
    }
    return k;
}

/* ---- selection ----------------------------------------------------------- */

/* Exact lengths on integer points: |AB| = 5, |AC| = 20, |AD| = 20.5,
 * |BC| = sqrt(9 + 256) = 16.28, |BD| = sqrt(9 + 272.25) = 16.77,
 * |CD| = 0.5, |AE| = 4.99: with [5, 20] and prob 1, exactly the ordered
 * pairs AB, BA, AC, CA, BC, CB, BD, DB (bounds inclusive). */
START_TEST(test_select_exact_bounds)
{
    gm_point pts[5] = {P(10, 10, 0), P(13, 14, 0), P(10, 30, 0), P(10, 30.5, 0), P(14.99, 10, 0)};
    gm_points ps = {pts, 5};
    gm_bases b;
    EXPECT_EQ(gm_bases_select_cpu(&ps, 5, 20, 1.0, 7, &b), GM_OK);
    uint32_t *k = sorted_keys(&b, 5);
    /* A=0 B=1 C=2 D=3 E=4.  |BE| = sqrt(3.9601 + 16) = 4.47, |CE| = 20.6,
     * |DE| = 21.08: none in range. */
    static const uint32_t want[] = {0 << 16 | 1, 0 << 16 | 2, 1 << 16 | 0, 1 << 16 | 2,
                                    1 << 16 | 3, 2 << 16 | 0, 2 << 16 | 1, 3 << 16 | 1};
    EXPECT_EQ(b.n, 8);
    for (int i = 0; i < 8; i++)
        EXPECT_EQ(k[i], want[i]);
    free(k);
    free(b.key);
}
END_TEST

/* prob 1: every ordered pair with length in [lmin, lmax] (checked for every
 * pair against a double-precision length; no pair lies within 1e-3 of a
 * bound so float and double agree). */
START_TEST(test_select_all_in_range)
{
    rng_state = 0xBA5E;
    gm_points ps = random_points(150, 300, 200);
    const float lmin = 25, lmax = 110;
    gm_bases b;
    EXPECT_EQ(gm_bases_select_cpu(&ps, lmin, lmax, 1.0, 99, &b), GM_OK);
    uint32_t *k = sorted_keys(&b, ps.n);
    uint32_t c = 0;
    for (uint32_t i = 0; i < ps.n; i++)
        for (uint32_t j = 0; j < ps.n; j++) {
            if (i == j)
                continue;
            double d = hypot((double)ps.p[j].x - ps.p[i].x, (double)ps.p[j].y - ps.p[i].y);
            EXPECT(fabs(d - lmin) > 1e-3 && fabs(d - lmax) > 1e-3);
            if (d < lmin || d > lmax)
                continue;
            uint32_t key = i << 16 | j;
            EXPECT(c < b.n);
            EXPECT_EQ(k[c], key); /* both ascending */
            c++;
        }
    EXPECT_EQ(c, b.n);
    EXPECT(b.n > 1000);
    free(k);
    free(b.key);
    free(ps.p);
}
END_TEST

/* prob 0.2 keeps about 20%: 200 points, all 39800 ordered pairs in range,
 * mean 7960, sd 79.8; bounds at 5 sd.  prob 0 keeps none; a smaller prob
 * keeps a subset (same seed, a threshold on the same hash); another seed
 * another selection. */
START_TEST(test_select_probability)
{
    rng_state = 0x9807;
    gm_points ps = random_points(200, 100, 100);
    gm_bases b2, b1, b0, bs;
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 1e6f, 0.2, 12345, &b2), GM_OK);
    EXPECT(b2.n >= 7960 - 400 && b2.n <= 7960 + 400);
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 1e6f, 0.0, 12345, &b0), GM_OK);
    EXPECT_EQ(b0.n, 0);
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 1e6f, 0.1, 12345, &b1), GM_OK);
    EXPECT(b1.n >= 3980 - 300 && b1.n <= 3980 + 300);
    uint32_t *k2 = sorted_keys(&b2, ps.n), *k1 = sorted_keys(&b1, ps.n);
    for (uint32_t i = 0, j = 0; i < b1.n; i++) { /* k1 subset of k2 */
        while (j < b2.n && k2[j] < k1[i])
            j++;
        EXPECT(j < b2.n && k2[j] == k1[i]);
    }
    /* each row i gets about its share too: no row is skipped wholesale */
    uint32_t rows[200] = {0};
    for (uint32_t i = 0; i < b2.n; i++)
        rows[k2[i] >> 16]++;
    for (int i = 0; i < 200; i++)
        EXPECT(rows[i] >= 10 && rows[i] <= 80); /* mean 39.8, sd 5.6 */
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 1e6f, 0.2, 54321, &bs), GM_OK);
    uint32_t *ks = sorted_keys(&bs, ps.n), common = 0;
    for (uint32_t i = 0, j = 0; i < bs.n; i++) {
        while (j < b2.n && k2[j] < ks[i])
            j++;
        common += j < b2.n && k2[j] == ks[i];
    }
    EXPECT(common < b2.n / 2); /* independent: about 20% in common */
    free(k1);
    free(k2);
    free(ks);
    free(b0.key);
    free(b1.key);
    free(b2.key);
    free(bs.key);
    free(ps.p);
}
END_TEST

/* Same seed, same keys in the same order, with 1 and 2 threads. */
START_TEST(test_select_deterministic)
{
    rng_state = 0xDE7E;
    gm_points ps = random_points(300, 400, 300);
    gm_bases a, b, c;
#ifdef _OPENMP
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    EXPECT_EQ(gm_bases_select_cpu(&ps, 20, 150, 0.2, 42, &a), GM_OK);
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    EXPECT_EQ(gm_bases_select_cpu(&ps, 20, 150, 0.2, 42, &b), GM_OK);
    EXPECT_EQ(gm_bases_select_cpu(&ps, 20, 150, 0.2, 42, &c), GM_OK);
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    EXPECT(a.n > 1000);
    EXPECT_EQ(a.n, b.n);
    EXPECT_EQ(a.n, c.n);
    EXPECT(memcmp(a.key, b.key, a.n * sizeof *a.key) == 0);
    EXPECT(memcmp(a.key, c.key, a.n * sizeof *a.key) == 0);
    free(a.key);
    free(b.key);
    free(c.key);
    free(ps.p);
}
END_TEST

START_TEST(test_select_edge_cases)
{
    gm_bases b;
    gm_point one = P(5, 5, 0);
    gm_points ps = {&one, 1};
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 100, 1.0, 1, &b), GM_OK);
    EXPECT_EQ(b.n, 0);
    free(b.key);
    ps.n = 0;
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 100, 1.0, 1, &b), GM_OK);
    EXPECT_EQ(b.n, 0);
    free(b.key);
    /* indices must fit 16 bits */
    ps.n = 65536;
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 100, 1.0, 1, &b), GM_ERR_INVALID);
    EXPECT_EQ(b.n, 0);
    EXPECT(b.key == NULL);
    /* two coincident points: length 0, kept only when lmin is 0 */
    gm_point two[2] = {P(3, 3, 0), P(3, 3, 1)};
    ps = (gm_points){two, 2};
    EXPECT_EQ(gm_bases_select_cpu(&ps, 0, 10, 1.0, 1, &b), GM_OK);
    EXPECT_EQ(b.n, 2);
    free(b.key);
    EXPECT_EQ(gm_bases_select_cpu(&ps, 1, 10, 1.0, 1, &b), GM_OK);
    EXPECT_EQ(b.n, 0);
    free(b.key);
}
END_TEST

/* ---- keys ---------------------------------------------------------------- */

START_TEST(test_key_hand_values)
{
    /* basis (0,0) -> (16,0): e = (1, 0), u = x, v = y; the window is
     * UO = GM_UV_HALF - 8 cells before the basis start in u, VO = GM_UV_HALF
     * cells either side in v */
    const int UO = GM_UV_HALF - GM_BASIS_B / 2, VO = GM_UV_HALF;
#define K(fu, fv, bin) ((uint32_t)((fu) + UO) | (uint32_t)((fv) + VO) << 7 | (uint32_t)(bin) << 14)
    gm_point a = P(0, 0, 0), b = P(16, 0, 0);
    /* (3.5, -2.5): cell (3, -3); 0.1 rad -> bin floor(0.255) = 0 */
    EXPECT_EQ(gm_basis_key(a, b, P(3.5, -2.5, 0.1)), K(3, -3, 0));
    /* -0.1 rad -> floor(-0.255) = -1 -> bin 15 */
    EXPECT_EQ(gm_basis_key(a, b, P(3.5, -2.5, -0.1)), K(3, -3, 15));
    /* 3.0 rad -> floor(7.64) = 7 */
    EXPECT_EQ(gm_basis_key(a, b, P(3.5, -2.5, 3.0)), K(3, -3, 7));
    /* -3.0 rad -> floor(-7.64) = -8 -> bin 8 */
    EXPECT_EQ(gm_basis_key(a, b, P(3.5, -2.5, -3.0)), K(3, -3, 8));
    /* the window: -UO <= floor u < 2 GM_UV_HALF - UO, -VO <= floor v < VO */
    const int UE = 2 * GM_UV_HALF - UO;
    EXPECT_EQ(gm_basis_key(a, b, P(UE - 0.1, 0, 0.1)), K(UE - 1, 0, 0));
    EXPECT_EQ(gm_basis_key(a, b, P(UE, 0, 0.1)), GM_KEY_EMPTY);
    EXPECT_EQ(gm_basis_key(a, b, P(-UO, 0, 0.1)), K(-UO, 0, 0));
    EXPECT_EQ(gm_basis_key(a, b, P(-UO - 0.01, 0, 0.1)), GM_KEY_EMPTY);
    EXPECT_EQ(gm_basis_key(a, b, P(0, VO - 0.1, 0.1)), K(0, VO - 1, 0));
    EXPECT_EQ(gm_basis_key(a, b, P(0, VO, 0.1)), GM_KEY_EMPTY);
    EXPECT_EQ(gm_basis_key(a, b, P(0, -VO, 0.1)), K(0, -VO, 0));
    EXPECT_EQ(gm_basis_key(a, b, P(0, -VO - 0.01, 0.1)), GM_KEY_EMPTY);
    EXPECT_EQ(gm_basis_key(a, b, P(1e9, 1e9, 0.1)), GM_KEY_EMPTY);
    EXPECT_EQ(gm_basis_key(a, b, P(NAN, 0, 0.1)), GM_KEY_EMPTY);
    /* the basis end itself: (16, 0) -> cell (16, 0) */
    EXPECT_EQ(gm_basis_key(a, b, P(16, 0, 0.1)), K(16, 0, 0));
    /* scale: basis of length 32 halves u and v: (2 UE - 0.1, 0) -> u UE - 0.05 */
    gm_point b32 = P(32, 0, 0);
    EXPECT_EQ(gm_basis_key(a, b32, P(2 * UE - 0.1, 0, 0.1)), K(UE - 1, 0, 0));
    EXPECT_EQ(gm_basis_key(a, b32, P(2 * UE, 0, 0.1)), GM_KEY_EMPTY);
    /* rotation: basis (10,20) -> (10,52), direction pi/2, length 32:
     * u = (y - 20) / 2, v = -(x - 10) / 2.  (4.6, 30.9): u = 5.45, v = 2.7
     * -> cell (5, 2); angle pi/2 + 1 -> relative 1 rad -> bin floor(2.55) = 2. */
    gm_point ra = P(10, 20, 0), rb = P(10, 52, 0);
    EXPECT_EQ(gm_basis_key(ra, rb, P(4.6, 30.9, GM_PI / 2 + 1.0)), K(5, 2, 2));
    /* the same triple with a and b swapped: u -> 16 - u, v -> -v, the
     * relative angle turns by pi: (16 - 5.45 = 10.55, -2.7) -> cell (10, -3),
     * bin floor(2.55 - 8) = -6 -> 10 */
    EXPECT_EQ(gm_basis_key(rb, ra, P(4.6, 30.9, GM_PI / 2 + 1.0)), K(10, -3, 10));
#undef K
}
END_TEST

/* Every key of random triples is EMPTY or inside the 18-bit layout, under
 * the hash prime 1900813, with fields in range. */
START_TEST(test_key_range)
{
    rng_state = 0x1900813;
    uint32_t kept = 0;
    for (int t = 0; t < 200000; t++) {
        gm_point a = P(rng_unit() * 500, rng_unit() * 500, 0);
        gm_point b = P(rng_unit() * 500, rng_unit() * 500, 0);
        gm_point p = P(rng_unit() * 500, rng_unit() * 500, (rng_unit() * 2 - 1) * GM_PI);
        if (hypot(a.x - b.x, a.y - b.y) < 1)
            continue;
        uint32_t k = gm_basis_key(a, b, p);
        if (k == GM_KEY_EMPTY)
            continue;
        kept++;
        EXPECT(k < 1900813u);
        EXPECT(k < (1u << 18));
        EXPECT((k & 127) < 96);
        EXPECT(((k >> 7) & 127) < 96);
    }
    EXPECT(kept > 50000);
}
END_TEST

/* u, v and the angle bin position of p in basis (a, b), in double. */
static void frame_coords(gm_point a, gm_point b, gm_point p, double *u, double *v, double *bin)
{
    double dx = (double)b.x - a.x, dy = (double)b.y - a.y, l2 = dx * dx + dy * dy;
    double px = (double)p.x - a.x, py = (double)p.y - a.y;
    *u = GM_BASIS_B * (px * dx + py * dy) / l2;
    *v = GM_BASIS_B * (py * dx - px * dy) / l2;
    double rel = (double)p.angle - atan2(dy, dx);
    *bin = rel * GM_ANGLE_BINS / (2 * GM_PI);
}

static int near_int(double x, double tol) { return fabs(x - floor(x + 0.5)) < tol; }

/* Invariance: a point set and its image under a random similarity (rotation,
 * scale 0.5..2, translation; the point angles turned too) give the same key
 * for every triple not within 0.02 cells (or bins) of a boundary. */
START_TEST(test_key_similarity_invariance)
{
    rng_state = 0x51A1;
    uint32_t compared = 0, skipped = 0, in_window = 0;
    for (int t = 0; t < 60; t++) {
        double th = (rng_unit() * 2 - 1) * GM_PI, s = exp((rng_unit() * 2 - 1) * log(2.0));
        double tx = (rng_unit() * 2 - 1) * 300, ty = (rng_unit() * 2 - 1) * 300;
        double c = s * cos(th), sn = s * sin(th);
        gm_points ps = random_points(40, 300, 300);
        gm_points qs = {xmalloc(ps.n, sizeof(gm_point)), ps.n};
        for (uint32_t i = 0; i < ps.n; i++) {
            gm_point p = ps.p[i];
            double ang = p.angle + th;
            ang = ang > GM_PI ? ang - 2 * GM_PI : ang <= -GM_PI ? ang + 2 * GM_PI : ang;
            qs.p[i] = P(c * p.x - sn * p.y + tx, sn * p.x + c * p.y + ty, ang);
        }
        for (uint32_t i = 0; i < ps.n; i++)
            for (uint32_t j = 0; j < ps.n; j++) {
                if (i == j || hypot(ps.p[i].x - ps.p[j].x, ps.p[i].y - ps.p[j].y) < 10)
                    continue;
                for (uint32_t k = 0; k < ps.n; k++) {
                    double u, v, bin;
                    frame_coords(ps.p[i], ps.p[j], ps.p[k], &u, &v, &bin);
                    if (near_int(u, 0.02) || near_int(v, 0.02) || near_int(bin, 0.02)) {
                        skipped++;
                        continue;
                    }
                    uint32_t kp = gm_basis_key(ps.p[i], ps.p[j], ps.p[k]);
                    uint32_t kq = gm_basis_key(qs.p[i], qs.p[j], qs.p[k]);
                    if (kp != kq)
                        ck_abort_msg("trial %d (rot %.3f scale %.3f): triple %u %u %u keys %u vs %u "
                                     "(u %.4f v %.4f bin %.4f)",
                                     t, th, s, i, j, k, kp, kq, u, v, bin);
                    /* and the key says what (u, v, bin) says */
                    int inside = floor(u) >= -(GM_UV_HALF - 8) && floor(u) < GM_UV_HALF + 8 &&
                                 floor(v) >= -GM_UV_HALF && floor(v) < GM_UV_HALF;
                    if (inside) {
                        uint32_t want = (uint32_t)(floor(u) + GM_UV_HALF - 8) | (uint32_t)(floor(v) + GM_UV_HALF) << 7 |
                                        (uint32_t)(((int)floor(bin) % 16 + 16) % 16) << 14;
                        EXPECT_EQ(kp, want);
                        in_window++;
                    } else {
                        EXPECT_EQ(kp, GM_KEY_EMPTY);
                    }
                    compared++;
                }
            }
        free(ps.p);
        free(qs.p);
    }
    EXPECT(compared > 5 * skipped); /* about 12% lie near a boundary */
    EXPECT(in_window > compared / 10);
}
END_TEST

/* ---- items --------------------------------------------------------------- */

typedef struct {
    uint32_t *keys, *vals, n;
} items_t;

/* Brute force: per basis, the distinct keys of the cloud points not within
 * 2 px (strictly) of an endpoint, as sorted (key << 32 | basis) pairs. */
static uint64_t *brute_items(const gm_points *bp, const uint32_t *bk, uint32_t nb,
                             const gm_points *cloud, uint32_t *n_out)
{
    uint64_t *out = xmalloc((size_t)nb * cloud->n, sizeof *out);
    uint32_t n = 0;
    for (uint32_t d = 0; d < nb; d++) {
        gm_point a = bp->p[bk[d] >> 16], b = bp->p[bk[d] & 0xFFFF];
        uint32_t first = n;
        for (uint32_t k = 0; k < cloud->n; k++) {
            gm_point q = cloud->p[k];
            double da = hypot((double)q.x - a.x, (double)q.y - a.y);
            double db = hypot((double)q.x - b.x, (double)q.y - b.y);
            if (da < 2.0 || db < 2.0)
                continue;
            uint32_t key = gm_basis_key(a, b, q);
            if (key == GM_KEY_EMPTY)
                continue;
            uint64_t it = (uint64_t)key << 32 | d;
            int dup = 0;
            for (uint32_t m = first; m < n && !dup; m++)
                dup = out[m] == it;
            if (!dup)
                out[n++] = it;
        }
    }
    qsort(out, n, sizeof *out, cmp_u64);
    *n_out = n;
    return out;
}

static void check_items(const gm_points *bp, const uint32_t *bk, uint32_t nb, const gm_points *cloud)
{
    items_t it;
    EXPECT_EQ(gm_basis_items_cpu(bp, bk, nb, cloud, &it.keys, &it.vals, &it.n), GM_OK);
    uint32_t nbf;
    uint64_t *bf = brute_items(bp, bk, nb, cloud, &nbf);
    EXPECT_EQ(it.n, nbf);
    uint64_t *got = xmalloc(it.n, sizeof *got);
    for (uint32_t i = 0; i < it.n; i++) {
        EXPECT(it.vals[i] < nb);
        EXPECT(it.keys[i] != GM_KEY_EMPTY);
        got[i] = (uint64_t)it.keys[i] << 32 | it.vals[i];
    }
    qsort(got, it.n, sizeof *got, cmp_u64);
    for (uint32_t i = 0; i < it.n; i++) {
        if (i)
            EXPECT(got[i - 1] != got[i]); /* every (key, basis) once */
        if (got[i] != bf[i])
            ck_abort_msg("item %u: (key %u, basis %u) vs brute force (key %u, basis %u)", i,
                         (uint32_t)(got[i] >> 32), (uint32_t)got[i], (uint32_t)(bf[i] >> 32),
                         (uint32_t)bf[i]);
    }
    free(got);
    free(bf);
    free(it.keys);
    free(it.vals);
}

/* A hand case: basis (0,0) -> (16,0) (u = x, v = y); cloud points at exactly
 * 2 px from an endpoint count, closer ones do not; a duplicate point and a
 * second point of the same cell and bin give one item. */
START_TEST(test_items_hand)
{
    gm_point bp_[2] = {P(0, 0, 0), P(16, 0, 0)};
    gm_points bp = {bp_, 2};
    uint32_t bk[2] = {0 << 16 | 1, 1 << 16 | 0};
    gm_point cl[] = {
        P(0, 0, 0.1),      /* endpoint a: excluded */
        P(1.99, 0, 0.1),   /* within 2 of a: excluded */
        P(2, 0, 0.1),      /* exactly 2: kept, cell (2, 0) */
        P(16, 1.9, 0.1),   /* within 2 of b: excluded */
        P(5.5, 5.5, 0.1),  /* cell (5, 5) */
        P(5.5, 5.5, 0.1),  /* duplicate */
        P(5.9, 5.1, 0.2),  /* same cell, same bin 0 */
        P(5.9, 5.1, -0.2), /* same cell, bin 15 */
        P(300, 0, 0.1),    /* outside the window */
    };
    gm_points cloud = {cl, sizeof cl / sizeof *cl};
    uint32_t *keys, *vals, n;
    EXPECT_EQ(gm_basis_items_cpu(&bp, bk, 1, &cloud, &keys, &vals, &n), GM_OK);
    EXPECT_EQ(n, 3);
    uint32_t sorted[3];
    for (uint32_t i = 0; i < n && i < 3; i++) {
        EXPECT_EQ(vals[i], 0);
        sorted[i] = keys[i];
    }
    qsort(sorted, 3, sizeof *sorted, cmp_u32);
    const uint32_t UO = GM_UV_HALF - GM_BASIS_B / 2, VO = GM_UV_HALF;
    EXPECT_EQ(sorted[0], (2 + UO) | (0 + VO) << 7);  /* cell (2, 0) */
    EXPECT_EQ(sorted[1], (5 + UO) | (5 + VO) << 7);  /* cell (5, 5) */
    EXPECT_EQ(sorted[2], (5 + UO) | (5 + VO) << 7 | 15 << 14);
    free(keys);
    free(vals);
    check_items(&bp, bk, 2, &cloud);
    /* no basis / no cloud: no items */
    EXPECT_EQ(gm_basis_items_cpu(&bp, bk, 0, &cloud, &keys, &vals, &n), GM_OK);
    EXPECT_EQ(n, 0);
    free(keys);
    free(vals);
    gm_points empty = {cl, 0};
    EXPECT_EQ(gm_basis_items_cpu(&bp, bk, 2, &empty, &keys, &vals, &n), GM_OK);
    EXPECT_EQ(n, 0);
    free(keys);
    free(vals);
}
END_TEST

/* Random scenes: the items match the brute force exactly, including clouds
 * with repeated points and points on the basis endpoints. */
START_TEST(test_items_brute_force)
{
    rng_state = 0x17E5;
    for (int t = 0; t < 4; t++) {
        gm_points bp = random_points(30, 200, 200);
        gm_bases b;
        EXPECT_EQ(gm_bases_select_cpu(&bp, 15, 90, 0.5, (uint64_t)t, &b), GM_OK);
        EXPECT(b.n > 50);
        /* cloud: random points, the basis points, and a cluster of near
         * copies (many share a cell) */
        uint32_t nr = 300;
        gm_points cloud = {xmalloc(nr + bp.n + 100, sizeof(gm_point)), 0};
        gm_points r = random_points(nr, 200, 200);
        memcpy(cloud.p, r.p, nr * sizeof *r.p);
        memcpy(cloud.p + nr, bp.p, bp.n * sizeof *bp.p);
        for (int i = 0; i < 100; i++)
            cloud.p[nr + bp.n + i] = P(100 + rng_unit() * 3, 100 + rng_unit() * 3, 0.3);
        cloud.n = nr + bp.n + 100;
        check_items(&bp, b.key, b.n, &cloud);
        free(r.p);
        free(cloud.p);
        free(b.key);
        free(bp.p);
    }
}
END_TEST

#ifdef _OPENMP
typedef gm_status (*items_fn)(const gm_points *, const uint32_t *, uint32_t, const gm_points *,
                              uint32_t **, uint32_t **, uint32_t *);

/* fn's items of nb bases with 1, 2 and 3 threads: the same items in the
 * same order, bases in order (values never decrease); their count. */
static uint32_t same_across_threads(items_fn fn, const gm_points *bp, const uint32_t *key,
                                    uint32_t nb, const gm_points *cloud)
{
    items_t it[3];
    int saved = omp_get_max_threads();
    for (int k = 0; k < 3; k++) {
        omp_set_num_threads(k + 1);
        EXPECT_EQ(fn(bp, key, nb, cloud, &it[k].keys, &it[k].vals, &it[k].n), GM_OK);
    }
    omp_set_num_threads(saved);
    for (uint32_t i = 1; i < it[0].n; i++)
        EXPECT(it[0].vals[i] >= it[0].vals[i - 1]);
    for (int k = 1; k < 3; k++) {
        EXPECT_EQ(it[k].n, it[0].n);
        EXPECT(memcmp(it[k].keys, it[0].keys, it[0].n * sizeof *it[0].keys) == 0);
        EXPECT(memcmp(it[k].vals, it[0].vals, it[0].n * sizeof *it[0].vals) == 0);
    }
    for (int k = 0; k < 3; k++)
        free(it[k].keys), free(it[k].vals);
    return it[0].n;
}
#endif

/* Same items, same order, with 1, 2 and 3 threads: the basis items (a
 * small scene), and the grid path of the fine levels (gm_grid_items: one
 * pass in blocks of bases, a thread's keys laid out after each block;
 * 2000 bases, several blocks). */
START_TEST(test_items_threads)
{
#ifdef _OPENMP
    const struct {
        items_fn fn;
        int n, w, h, cloud;
        float lmin, lmax;
        double prob;
        uint32_t least;
    } c[2] = {{gm_basis_items_cpu, 40, 300, 300, 500, 20, 150, 1.0, 1000},
              {gm_basis_items_local_cpu, 600, 2000, 1200, 3000, 16, 96, 0.3, 10000}};
    rng_state = 0x7411;
    for (int k = 0; k < 2; k++) {
        gm_points bp = random_points(c[k].n, c[k].w, c[k].h);
        gm_points cloud = random_points(c[k].cloud, c[k].w, c[k].h);
        gm_bases b;
        EXPECT_EQ(gm_bases_select_cpu(&bp, c[k].lmin, c[k].lmax, c[k].prob, 3, &b), GM_OK);
        uint32_t nb = b.n > 2000 ? 2000 : b.n;
        EXPECT(same_across_threads(c[k].fn, &bp, b.key, nb, &cloud) > c[k].least);
        free(b.key), free(bp.p), free(cloud.p);
    }
#endif
}
END_TEST

/* The grid versions for the fine levels against the brute-force ones: the
 * same bases in the same order; the same (key, basis) items as a set.
 * Points spread over an image far larger than the basis lengths, and with
 * negative and exactly-on-cell-edge coordinates. */
static int cmp_item(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    if (x[1] != y[1])
        return (x[1] > y[1]) - (x[1] < y[1]);
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static uint32_t *item_pairs(const items_t *it)
{
    uint32_t *kv = xmalloc((size_t)it->n * 2 + 1, sizeof *kv);
    for (uint32_t i = 0; i < it->n; i++)
        kv[2 * i] = it->keys[i], kv[2 * i + 1] = it->vals[i];
    qsort(kv, it->n, 2 * sizeof *kv, cmp_item);
    return kv;
}

START_TEST(test_local_equals_brute_force)
{
    rng_state = 0x10CA1;
    for (int t = 0; t < 4; t++) {
        gm_points bp = random_points(600, 2000, 1200), cloud = random_points(3000, 2000, 1200);
        bp.p[0].x = -3.5f, bp.p[1].y = -7.0f, bp.p[2].x = 96.0f, bp.p[3].x = 192.0f;
        float lmin = 16, lmax = t == 3 ? 3000 : 96; /* t == 3: one grid cell holds all */
        gm_bases a, b;
        EXPECT_EQ(gm_bases_select_cpu(&bp, lmin, lmax, 0.3, (uint64_t)t, &a), GM_OK);
        EXPECT_EQ(gm_bases_select_local_cpu(&bp, lmin, lmax, 0.3, (uint64_t)t, &b), GM_OK);
        EXPECT_EQ(a.n, b.n);
        EXPECT(a.n > 200);
        EXPECT(memcmp(a.key, b.key, a.n * sizeof *a.key) == 0);
        uint32_t nb = a.n > 2000 ? 2000 : a.n;
        items_t x, y;
        EXPECT_EQ(gm_basis_items_cpu(&bp, a.key, nb, &cloud, &x.keys, &x.vals, &x.n), GM_OK);
        EXPECT_EQ(gm_basis_items_local_cpu(&bp, a.key, nb, &cloud, &y.keys, &y.vals, &y.n), GM_OK);
        EXPECT_EQ(x.n, y.n);
        EXPECT(x.n > 1000);
        uint32_t *kx = item_pairs(&x), *ky = item_pairs(&y);
        EXPECT(memcmp(kx, ky, (size_t)x.n * 2 * sizeof *kx) == 0);
        free(kx), free(ky);
        free(x.keys), free(x.vals), free(y.keys), free(y.vals);
        free(a.key), free(b.key);
        free(bp.p), free(cloud.p);
    }
}
END_TEST

/* The selection as it was first written (a branch on the length and one on
 * the hash a candidate, every ordered pair in turn): the reference the
 * branch-free rows of both selections must equal key for key, in order
 * (vid.stab's reference-vs-fast tests). */
static uint32_t *ref_select(const gm_points *pts, float lmin, float lmax, double prob,
                            uint64_t seed, uint32_t *n_out)
{
    size_t cap = (size_t)pts->n * pts->n + 1, c = 0;
    uint32_t *out = xmalloc(cap, sizeof *out);
    float l2min = lmin * lmin, l2max = lmax * lmax;
    uint64_t thr = gm_prob_threshold(prob);
    for (uint32_t i = 0; i < pts->n; i++)
        for (uint32_t j = 0; j < pts->n; j++) {
            if (j == i)
                continue;
            float dx = pts->p[j].x - pts->p[i].x, dy = pts->p[j].y - pts->p[i].y;
            float d2 = dx * dx + dy * dy;
            if (d2 < l2min || d2 > l2max)
                continue;
            if (gm_mix64(seed ^ ((uint64_t)i << 32 | j)) <= thr)
                out[c++] = i << 16 | j;
        }
    *n_out = (uint32_t)c;
    return out;
}

/* Random points, integer points whose lengths fall on the bounds exactly,
 * repeated points, a NaN point (its lengths are NaN: kept, as the first
 * version kept them), more candidates than a row's 256-block, and
 * probabilities 0, 0.3, 0.99 and 1: the same keys as the reference, by
 * both the all-pairs and the grid selection. */
START_TEST(test_select_equals_reference)
{
    rng_state = 0x5E1EC7;
    static const double probs[] = {0.0, 0.3, 0.99, 1.0};
    for (int kind = 0; kind < 4; kind++) {
        uint32_t n = kind == 3 ? 700 : 300;
        gm_points ps = random_points(n, 200, 150);
        for (uint32_t i = 0; i < n; i++) {
            if (kind == 1) { /* integers: squared lengths 25, 400 and 0 land on bounds */
                ps.p[i].x = floorf(ps.p[i].x / 5) * 5;
                ps.p[i].y = floorf(ps.p[i].y / 5) * 5;
            } else if (kind == 2 && i % 4 == 0) {
                ps.p[i] = ps.p[i / 3];
            }
        }
        if (kind == 2)
            ps.p[7].x = NAN;
        for (size_t k = 0; k < sizeof probs / sizeof probs[0]; k++) {
            float lmin = kind == 1 ? 5 : 12, lmax = kind == 1 ? 20 : 80;
            uint32_t nr;
            uint32_t *r = ref_select(&ps, lmin, lmax, probs[k], 41 + k, &nr);
            gm_bases a, b;
            EXPECT_EQ(gm_bases_select_cpu(&ps, lmin, lmax, probs[k], 41 + k, &a), GM_OK);
            EXPECT_EQ(a.n, nr);
            EXPECT(nr == 0 || memcmp(a.key, r, nr * sizeof *r) == 0);
            if (kind != 2) { /* the grid cannot place a NaN point */
                EXPECT_EQ(gm_bases_select_local_cpu(&ps, lmin, lmax, probs[k], 41 + k, &b), GM_OK);
                EXPECT_EQ(b.n, nr);
                EXPECT(nr == 0 || memcmp(b.key, r, nr * sizeof *r) == 0);
                free(b.key);
            }
            if (probs[k] > 0.5)
                EXPECT(nr > 1000);
            free(a.key);
            free(r);
        }
        free(ps.p);
    }
}
END_TEST

static Suite *bases_suite(void)
{
    Suite *s = suite_create("bases");
    TCase *sel = tcase_create("select");
    tcase_set_timeout(sel, 60);
    tcase_add_test(sel, test_select_exact_bounds);
    tcase_add_test(sel, test_select_all_in_range);
    tcase_add_test(sel, test_select_probability);
    tcase_add_test(sel, test_select_deterministic);
    tcase_add_test(sel, test_select_edge_cases);
    tcase_add_test(sel, test_select_equals_reference);
    suite_add_tcase(s, sel);
    TCase *key = tcase_create("key");
    tcase_set_timeout(key, 60);
    tcase_add_test(key, test_key_hand_values);
    tcase_add_test(key, test_key_range);
    tcase_add_test(key, test_key_similarity_invariance);
    suite_add_tcase(s, key);
    TCase *it = tcase_create("items");
    tcase_set_timeout(it, 60);
    tcase_add_test(it, test_items_hand);
    tcase_add_test(it, test_items_brute_force);
    tcase_add_test(it, test_items_threads);
    tcase_add_test(it, test_local_equals_brute_force);
    suite_add_tcase(s, it);
    return s;
}

int main(void)
{
    return run_suite(bases_suite());
}
