/* test_compact_cuda.c: compaction and sub-pixel edge points on the device
 * (src/cuda/compact.cu) against the CPU (src/stages/compact.c, src/stages/points.c).
 *
 * Compaction is exact: the same count and the same indices in the same
 * order, for sizes around the device block (4096 flags) and the CPU block
 * (16384), densities from none to all, any non-zero flag value, unaligned
 * flag pointers, and an output capacity below the count (the first indices,
 * the full count reported, nothing written past the capacity).
 * Points: the whole chain (edges, compaction, points) on both sides; x, y
 * within 1e-5 px (the device spells the CPU's float operations with
 * round-to-nearest intrinsics, so they should be equal), w equal (one
 * correctly rounded sqrtf), angle within 1e-6 rad.
 * Exit 77 (skipped) without a CUDA device. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages/sobel.h"
#include "stages/compact.h"
#include "stages/points.h"
#include "cuda/gm_cuda.h"
#include "test_util.h"

#define GUARD 0xEEEEEEEEu /* cudaMemset(0xEE) of a uint32 array */

static gm_compact_flags_dev g_cmp;
static gm_edges_dev g_edges;

static void teardown(void)
{
    gm_compact_flags_dev_free(&g_cmp);
    gm_edges_dev_free(&g_edges);
}

static void cmp_reserve(uint32_t n)
{
    if (g_cmp.d_blk && n <= g_cmp.cap)
        return;
    gm_compact_flags_dev_free(&g_cmp);
    EXPECT_OK(gm_compact_flags_dev_alloc(&g_cmp, n));
}

/* Random flags with probability p/256 (p = 256: all), values 1..255. */
static uint8_t *random_flags(uint32_t n, uint32_t p)
{
    uint8_t *f = xmalloc(n, 1);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = rng_next();
        f[i] = (r & 255) < p ? (uint8_t)(1 + (r >> 8) % 255) : 0;
    }
    return f;
}

/* Compacts h_flags[0..n) on the device from a buffer at byte offset `shift`
 * (unaligned when odd), output capacity out_cap; checks against the CPU:
 * the count, the first min(count, out_cap) indices, the guard after them. */
static void check_flags(const uint8_t *h_flags, uint32_t n, uint32_t shift, uint32_t out_cap)
{
    uint32_t *want = xmalloc((size_t)n + 1, sizeof *want);
    uint32_t total = gm_compact_flags_cpu(h_flags, n, want);
    cmp_reserve(n);
    uint8_t *d_buf = NULL;
    uint32_t *d_out = NULL;
    CK_CUDA(cudaMalloc((void **)&d_buf, (size_t)n + shift + 1));
    CK_CUDA(cudaMemset(d_buf, 0x77, (size_t)n + shift + 1)); /* set flags around the range */
    if (n)
        CK_CUDA(cudaMemcpy(d_buf + shift, h_flags, n, cudaMemcpyHostToDevice));
    size_t slots = (size_t)out_cap + 64;
    CK_CUDA(cudaMalloc((void **)&d_out, slots * sizeof *d_out));
    CK_CUDA(cudaMemset(d_out, 0xEE, slots * sizeof *d_out));
    *g_cmp.h_count = 0xDEAD;
    EXPECT_OK(gm_compact_flags_cuda(&g_cmp, d_buf + shift, n, d_out, out_cap, 0));
    CK_CUDA(cudaDeviceSynchronize());
    uint32_t count = 0;
    CK_CUDA(cudaMemcpy(&count, g_cmp.d_count, sizeof count, cudaMemcpyDeviceToHost));
    if (count != total || *g_cmp.h_count != total)
        ck_abort_msg("n=%u shift=%u cap=%u: count %u (host copy %u), cpu %u", n, shift, out_cap,
                     count, *g_cmp.h_count, total);
    uint32_t *got = xmalloc(slots, sizeof *got);
    CK_CUDA(cudaMemcpy(got, d_out, slots * sizeof *got, cudaMemcpyDeviceToHost));
    uint32_t kept = total < out_cap ? total : out_cap;
    for (uint32_t k = 0; k < kept; k++)
        if (got[k] != want[k])
            ck_abort_msg("n=%u shift=%u cap=%u: index %u is %u, cpu %u", n, shift, out_cap, k,
                         got[k], want[k]);
    for (size_t k = kept; k < slots; k++)
        if (got[k] != GUARD)
            ck_abort_msg("n=%u shift=%u cap=%u: slot %zu written past %u", n, shift, out_cap, k,
                         kept);
    free(got);
    free(want);
    CK_CUDA(cudaFree(d_buf));
    CK_CUDA(cudaFree(d_out));
}

/* ---- compaction ----------------------------------------------------------------- */

START_TEST(test_flags_random)
{
    static const uint32_t sizes[] = {0,     1,     2,          255,            4095,
                                     4096,  4097,  8191,       16383,          16384,
                                     16385, 65537, 64 * 16384, 64 * 16384 + 1, 1000000,
                                     1920 * 1080};
    static const uint32_t probs[] = {0, 1, 30, 128, 250, 256};
    rng_state = 0xC0DA;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t p = 0; p < sizeof probs / sizeof *probs; p++) {
            uint8_t *f = random_flags(sizes[s], probs[p]);
            check_flags(f, sizes[s], 0, sizes[s]);
            free(f);
        }
}
END_TEST

/* Structured flags: one set flag at each block edge, runs across blocks. */
START_TEST(test_flags_block_edges)
{
    uint32_t n = 5 * 4096 + 17;
    uint8_t *f = xcalloc(n, 1);
    for (uint32_t b = 0; b <= n / 4096; b++) {
        if (b * 4096 < n)
            f[b * 4096] = 1;
        if (b * 4096 + 4095 < n)
            f[b * 4096 + 4095] = 200;
    }
    f[n - 1] = 9;
    check_flags(f, n, 0, n);
    memset(f, 0, n);
    memset(f + 4000, 1, 9000); /* a run over two block boundaries */
    check_flags(f, n, 0, n);
    free(f);
}
END_TEST

START_TEST(test_flags_unaligned)
{
    rng_state = 0x0DD;
    static const uint32_t sizes[] = {1, 17, 4095, 4097, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (uint32_t shift = 1; shift < 8; shift += 2) {
            uint8_t *f = random_flags(sizes[s], 60);
            check_flags(f, sizes[s], shift, sizes[s]);
            free(f);
        }
}
END_TEST

/* Capacity below the count: the first out_cap indices, the full count. */
START_TEST(test_flags_capacity)
{
    rng_state = 0xCA9;
    uint32_t n = 300000;
    uint8_t *f = random_flags(n, 40);
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += f[i] != 0;
    EXPECT(total > 10000);
    uint32_t caps[] = {0, 1, 4095, 4096, total / 2, total - 1, total, total + 1};
    for (size_t c = 0; c < sizeof caps / sizeof *caps; c++)
        check_flags(f, n, 0, caps[c]);
    free(f);
}
END_TEST

START_TEST(test_flags_invalid)
{
    gm_compact_flags_dev c;
    EXPECT_EQ(gm_compact_flags_dev_alloc(NULL, 10), GM_ERR_INVALID);
    EXPECT_OK(gm_compact_flags_dev_alloc(&c, 100));
    uint8_t *d = NULL;
    uint32_t *o = NULL;
    CK_CUDA(cudaMalloc((void **)&d, 200));
    CK_CUDA(cudaMalloc((void **)&o, 200 * sizeof *o));
    EXPECT_EQ(gm_compact_flags_cuda(NULL, d, 10, o, 10, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_compact_flags_cuda(&c, NULL, 10, o, 10, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_compact_flags_cuda(&c, d, 10, NULL, 10, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_compact_flags_cuda(&c, d, 101, o, 101, 0), GM_ERR_INVALID); /* over capacity */
    /* n = 0: count 0, nothing read */
    EXPECT_OK(gm_compact_flags_cuda(&c, NULL, 0, NULL, 0, 0));
    CK_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(*c.h_count, 0);
    gm_compact_flags_dev_free(&c);
    gm_compact_flags_dev_free(&c); /* twice */
    gm_compact_flags_dev zero;
    memset(&zero, 0, sizeof zero);
    gm_compact_flags_dev_free(&zero);
    CK_CUDA(cudaFree(d));
    CK_CUDA(cudaFree(o));
}
END_TEST

/* ---- edge points: the whole chain ------------------------------------------------------- */

static img_t smooth_image(int w, int h, int cell, int noise)
{
    int gw = w / cell + 2, gh = h / cell + 2;
    uint8_t *g = xmalloc((size_t)gw * gh, 1);
    for (int i = 0; i < gw * gh; i++)
        g[i] = (uint8_t)rng_next();
    img_t im = img_new(w, h, 0); /* test_util.h */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int cx = x / cell, cy = y / cell;
            double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
            double v = (1 - fy) * ((1 - fx) * g[cy * gw + cx] + fx * g[cy * gw + cx + 1]) +
                       fy * ((1 - fx) * g[(cy + 1) * gw + cx] + fx * g[(cy + 1) * gw + cx + 1]);
            if (noise)
                v += (int)(rng_next() % (2 * (unsigned)noise + 1)) - noise;
            im.buf[(size_t)y * w + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
        }
    free(g);
    return im;
}

/* Points compared: positions within 1e-5, w equal, angle within 1e-6;
 * returns how many points differ in any bit of x or y (expected 0). */
static uint32_t expect_same_points(const gm_point *c, const gm_point *g, uint32_t n,
                                   const char *what)
{
    uint32_t inexact = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (!(fabsf(c[k].x - g[k].x) <= 1e-5f) || !(fabsf(c[k].y - g[k].y) <= 1e-5f))
            ck_abort_msg("%s: point %u at (%.9g, %.9g), cpu (%.9g, %.9g)", what, k, g[k].x, g[k].y,
                         c[k].x, c[k].y);
        if (!(fabs((double)c[k].angle - (double)g[k].angle) <= 1e-6))
            ck_abort_msg("%s: point %u angle %.9g, cpu %.9g", what, k, g[k].angle, c[k].angle);
        if (c[k].w != g[k].w)
            ck_abort_msg("%s: point %u w %.9g, cpu %.9g", what, k, g[k].w, c[k].w);
        inexact += c[k].x != g[k].x || c[k].y != g[k].y;
    }
    return inexact;
}

/* Edges, compaction (capacity `cap`, 0: w*h) and points on both sides. */
static uint32_t check_chain(const uint8_t *h_img, int w, int h, ptrdiff_t stride, int max_edges,
                            uint32_t cap, const char *tag)
{
    char what[160];
    snprintf(what, sizeof what, "%s %dx%d max_edges %d cap %u", tag, w, h, max_edges, cap);
    uint32_t n = (uint32_t)(w * h);
    if (cap == 0)
        cap = n;
    /* CPU */
    gm_edges ce;
    gm_view v = {h_img, w, h, stride};
    EXPECT_OK(gm_edges_cpu(v, max_edges, &ce));
    uint32_t *cidx = xmalloc(n, sizeof *cidx);
    uint32_t cn = gm_compact_flags_cpu(ce.edge, n, cidx);
    gm_points cp;
    EXPECT_OK(gm_edge_points_cpu(&ce, cidx, cn, &cp));
    /* device */
    if (!g_edges.d_gx || n > g_edges.cap) {
        gm_edges_dev_free(&g_edges);
        EXPECT_OK(gm_edges_dev_alloc(&g_edges, w, h));
    }
    cmp_reserve(n);
    uint8_t *d_img = NULL;
    uint32_t *d_idx = NULL;
    gm_point *d_pts = NULL;
    CK_CUDA(cudaMalloc((void **)&d_img, (size_t)n));
    CK_CUDA(cudaMemcpy2D(d_img, (size_t)w, h_img, (size_t)stride, (size_t)w, (size_t)h,
                         cudaMemcpyHostToDevice));
    CK_CUDA(cudaMalloc((void **)&d_idx, ((size_t)cap + 1) * sizeof *d_idx));
    CK_CUDA(cudaMalloc((void **)&d_pts, ((size_t)cap + 1) * sizeof *d_pts));
    CK_CUDA(cudaMemset(d_pts, 0xEE, ((size_t)cap + 1) * sizeof *d_pts));
    EXPECT_OK(gm_edges_cuda(d_img, (size_t)w, w, h, max_edges, &g_edges, 0));
    EXPECT_OK(gm_compact_flags_cuda(&g_cmp, g_edges.d_edge, n, d_idx, cap, 0));
    EXPECT_OK(gm_edge_points_cuda(&g_edges, d_idx, g_cmp.d_count, cap, d_pts, 0));
    CK_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(*g_edges.h_threshold, ce.threshold);
    if (*g_cmp.h_count != cn)
        ck_abort_msg("%s: count %u, cpu %u", what, *g_cmp.h_count, cn);
    uint32_t kept = cn < cap ? cn : cap;
    uint32_t *gidx = xmalloc((size_t)kept + 1, sizeof *gidx);
    gm_point *gp = xmalloc((size_t)cap + 1, sizeof *gp);
    CK_CUDA(cudaMemcpy(gidx, d_idx, (size_t)kept * sizeof *gidx, cudaMemcpyDeviceToHost));
    CK_CUDA(cudaMemcpy(gp, d_pts, ((size_t)cap + 1) * sizeof *gp, cudaMemcpyDeviceToHost));
    for (uint32_t k = 0; k < kept; k++)
        if (gidx[k] != cidx[k])
            ck_abort_msg("%s: index %u is %u, cpu %u", what, k, gidx[k], cidx[k]);
    uint32_t inexact = expect_same_points(cp.p, gp, kept, what);
    if (inexact)
        fprintf(stderr, "%s: %u of %u points differ in the last bits (within 1e-5)\n", what,
                inexact, kept);
    /* nothing written past the count */
    uint32_t guard;
    memset(&guard, 0xEE, sizeof guard);
    for (size_t k = kept; k <= cap; k++) {
        uint32_t wx;
        memcpy(&wx, &gp[k].x, sizeof wx);
        if (wx != guard)
            ck_abort_msg("%s: point %zu written past %u", what, k, kept);
    }
    CK_CUDA(cudaFree(d_img));
    CK_CUDA(cudaFree(d_idx));
    CK_CUDA(cudaFree(d_pts));
    free(gidx);
    free(gp);
    free(cidx);
    free(cp.p);
    gm_edges_free(&ce);
    return cn;
}

START_TEST(test_points_random)
{
    rng_state = 0x9017;
    static const int dims[][2] = {{1, 1}, {7, 5}, {64, 65}, {640, 360}, {1023, 769}, {1920, 1080}};
    uint32_t total = 0;
    for (size_t s = 0; s < sizeof dims / sizeof *dims; s++) {
        img_t im = smooth_image(dims[s][0], dims[s][1], 2 + (int)(rng_next() % 20), 3);
        total += check_chain(im.buf, im.w, im.h, im.w, 1 << 22, 0, "smooth");
        free(im.buf);
    }
    EXPECT(total > 100000);
}
END_TEST

START_TEST(test_points_real)
{
    static const char *files[] = {"data/ref.jpg", "data/bench/ref_gravel.jpg",
                                  "data/bench/ref_text.jpg", "data/bench/ref_hubble_deep_field.jpg",
                                  "data/bench/q_cell_00_easy.jpg"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        gm_image img = load_data(files[f]);
        EXPECT(check_chain(img.data, img.width, img.height, img.stride, 1 << 20, 0, files[f]) > 50);
        gm_image_free(&img);
    }
}
END_TEST

/* The max_edges limit through the chain: the count never above the limit,
 * so a compaction capacity of max_edges never overflows; and a capacity
 * below the count keeps the first points. */
START_TEST(test_points_max_edges)
{
    rng_state = 0x3A8E;
    img_t im = smooth_image(800, 600, 7, 3);
    static const int limits[] = {0, 1, 7, 100, 1000, 10000};
    for (size_t l = 0; l < sizeof limits / sizeof *limits; l++) {
        uint32_t cap = limits[l] > 0 ? (uint32_t)limits[l] : 1;
        uint32_t n = check_chain(im.buf, im.w, im.h, im.w, limits[l], cap, "limit");
        EXPECT(n <= (uint32_t)limits[l]);
    }
    /* no limit, small capacities: overflow reported, first indices and points kept */
    uint32_t all = check_chain(im.buf, im.w, im.h, im.w, 1 << 22, 0, "all");
    EXPECT(all > 2000);
    check_chain(im.buf, im.w, im.h, im.w, 1 << 22, 1000, "overflow");
    check_chain(im.buf, im.w, im.h, im.w, 1 << 22, all - 1, "overflow by one");
    free(im.buf);
}
END_TEST

/* Points from a host-known count (d_n = NULL) and a max_n below the
 * device count. */
START_TEST(test_points_counts)
{
    rng_state = 0xC0C0;
    img_t im = smooth_image(300, 200, 6, 2);
    uint32_t n = (uint32_t)(im.w * im.h);
    gm_edges ce;
    gm_view v = {im.buf, im.w, im.h, im.w};
    EXPECT_OK(gm_edges_cpu(v, 1 << 20, &ce));
    uint32_t *cidx = xmalloc(n, sizeof *cidx);
    uint32_t cn = gm_compact_flags_cpu(ce.edge, n, cidx);
    EXPECT(cn > 100);
    gm_points cp;
    EXPECT_OK(gm_edge_points_cpu(&ce, cidx, cn, &cp));

    EXPECT_OK(gm_edges_dev_alloc(&g_edges, im.w, im.h));
    EXPECT_OK(gm_compact_flags_dev_alloc(&g_cmp, n));
    uint8_t *d_img;
    uint32_t *d_idx;
    gm_point *d_pts;
    CK_CUDA(cudaMalloc((void **)&d_img, n));
    CK_CUDA(cudaMemcpy(d_img, im.buf, n, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMalloc((void **)&d_idx, (size_t)n * sizeof *d_idx));
    CK_CUDA(cudaMalloc((void **)&d_pts, (size_t)n * sizeof *d_pts));
    EXPECT_OK(gm_edges_cuda(d_img, (size_t)im.w, im.w, im.h, 1 << 20, &g_edges, 0));
    EXPECT_OK(gm_compact_flags_cuda(&g_cmp, g_edges.d_edge, n, d_idx, n, 0));
    CK_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(*g_cmp.h_count, cn);
    gm_point *gp = xmalloc(n, sizeof *gp);

    /* d_n = NULL: exactly max_n points */
    CK_CUDA(cudaMemset(d_pts, 0xEE, (size_t)n * sizeof *d_pts));
    EXPECT_OK(gm_edge_points_cuda(&g_edges, d_idx, NULL, cn, d_pts, 0));
    CK_CUDA(cudaMemcpy(gp, d_pts, (size_t)n * sizeof *gp, cudaMemcpyDeviceToHost));
    expect_same_points(cp.p, gp, cn, "d_n NULL");
    uint32_t guard;
    memset(&guard, 0xEE, sizeof guard);
    uint32_t wx;
    memcpy(&wx, &gp[cn].x, sizeof wx);
    EXPECT_EQ(wx, guard);

    /* max_n below the device count */
    uint32_t half = cn / 2;
    CK_CUDA(cudaMemset(d_pts, 0xEE, (size_t)n * sizeof *d_pts));
    EXPECT_OK(gm_edge_points_cuda(&g_edges, d_idx, g_cmp.d_count, half, d_pts, 0));
    CK_CUDA(cudaMemcpy(gp, d_pts, (size_t)n * sizeof *gp, cudaMemcpyDeviceToHost));
    expect_same_points(cp.p, gp, half, "max_n half");
    memcpy(&wx, &gp[half].x, sizeof wx);
    EXPECT_EQ(wx, guard);

    /* max_n 0: nothing; bad arguments */
    EXPECT_OK(gm_edge_points_cuda(&g_edges, NULL, NULL, 0, NULL, 0));
    EXPECT_EQ(gm_edge_points_cuda(NULL, d_idx, NULL, 1, d_pts, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_edge_points_cuda(&g_edges, NULL, NULL, 1, d_pts, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_edge_points_cuda(&g_edges, d_idx, NULL, 1, NULL, 0), GM_ERR_INVALID);
    CK_CUDA(cudaDeviceSynchronize());

    CK_CUDA(cudaFree(d_img));
    CK_CUDA(cudaFree(d_idx));
    CK_CUDA(cudaFree(d_pts));
    free(gp);
    free(cidx);
    free(cp.p);
    gm_edges_free(&ce);
    free(im.buf);
}
END_TEST

static Suite *compact_cuda_suite(void)
{
    Suite *s = suite_create("compact_cuda");
    TCase *tc = tcase_create("cuda_vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_flags_random);
    tcase_add_test(tc, test_flags_block_edges);
    tcase_add_test(tc, test_flags_unaligned);
    tcase_add_test(tc, test_flags_capacity);
    tcase_add_test(tc, test_flags_invalid);
    tcase_add_test(tc, test_points_random);
    tcase_add_test(tc, test_points_real);
    tcase_add_test(tc, test_points_max_edges);
    tcase_add_test(tc, test_points_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(compact_cuda_suite); }
