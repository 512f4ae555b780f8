/* test_corners_cuda.c: the corner stage on the device (src/cuda/corners.cu)
 * against the CPU (src/stages/corners.c), which test_corners checks by hand.
 * The points must be EQUAL: the same count, the same order, x, y, w and the
 * angle bit for bit, after gm_edges_cuda on the device and gm_edges_cpu on
 * the host (their parity is test_sobel_cuda's).  On: odd sizes from 1 x 1 to
 * about 1000 x 700, noise, blocks and discs (many candidates, so that the
 * suppression grid is crowded), flat images, the real images of data/,
 * targets 0, 1, 50, 400 and "all"; one gm_corners_dev reused for frames of
 * every size, on a stream of its own too.
 * GM_TEST_SMALL=1 (compute-sanitizer) keeps the frames small.
 * GM_CORNERS_TIME=1 prints the time of the stage on a 1024 x 768 frame (no
 * assertion on it).  Exit 77 (skipped) without a CUDA device. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stages/sobel.h"
#include "stages/points.h"
#include "stages/corners.h"
#include "cuda/gm_cuda.h"
#include "cuda/corners_cuda.h"
#include "test_util.h"

#define MAX_TARGET 20000 /* "all": more than any test image keeps */

static int g_small;
static gm_edges_dev g_edges;
static gm_corners_dev g_corners;

static void teardown(void)
{
    gm_edges_dev_free(&g_edges);
    gm_corners_dev_free(&g_corners);
}

/* Buffers for at least w x h (grown, never shrunk: smaller frames reuse them). */
static void dev_reserve(int w, int h)
{
    if (!g_edges.d_gx || (size_t)w * h > g_edges.cap) {
        gm_edges_dev_free(&g_edges);
        EXPECT_OK(gm_edges_dev_alloc(&g_edges, w, h));
    }
    if (!g_corners.d_sum || (size_t)w * h > g_corners.cap) {
        gm_corners_dev_free(&g_corners);
        EXPECT_OK(gm_corners_dev_alloc(&g_corners, w, h, MAX_TARGET));
    }
}

/* ---- images ------------------------------------------------------------------------ */

static uint8_t *noise_image(int w, int h)
{
    uint8_t *im = xmalloc((size_t)w * h, 1);
    for (size_t i = 0; i < (size_t)w * h; i++)
        im[i] = (uint8_t)rng_next();
    return im;
}

/* `count` rectangles and discs of random grey on grey, plus +-2 of noise:
 * corners of every strength, many of them within a suppression radius. */
static uint8_t *shapes_image(int w, int h, int count)
{
    uint8_t *im = xmalloc((size_t)w * h, 1);
    memset(im, 100, (size_t)w * h);
    for (int s = 0; s < count; s++) {
        int cx = (int)(rng_next() % (uint32_t)w), cy = (int)(rng_next() % (uint32_t)h);
        int rx = 2 + (int)(rng_next() % 20), ry = 2 + (int)(rng_next() % 20);
        int disc = (int)(rng_next() & 1);
        uint8_t v = (uint8_t)rng_next();
        for (int y = cy - ry; y <= cy + ry; y++)
            for (int x = cx - rx; x <= cx + rx; x++) {
                if (x < 0 || y < 0 || x >= w || y >= h)
                    continue;
                double u = (double)(x - cx) / rx, t = (double)(y - cy) / ry;
                if (!disc || u * u + t * t <= 1)
                    im[(size_t)y * w + x] = v;
            }
    }
    for (size_t i = 0; i < (size_t)w * h; i++) {
        int v = im[i] + (int)(rng_next() % 5) - 2;
        im[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    return im;
}

/* ---- the comparison ------------------------------------------------------------------ */

/* Both chains on one image (rows `stride` bytes apart), target after target
 * on the same edges; returns the points kept under the largest target. */
static uint32_t check_image(const uint8_t *h_img, int w, int h, ptrdiff_t stride, cudaStream_t stream,
                            const char *tag)
{
    static const uint32_t targets[] = {0, 1, 50, 400, MAX_TARGET};
    gm_edges ce;
    EXPECT_OK(gm_edges_cpu((gm_view){h_img, w, h, stride}, 1 << 20, &ce));
    dev_reserve(w, h);
    uint8_t *d_img = NULL;
    CK_CUDA(cudaMalloc((void **)&d_img, (size_t)w * h));
    /* on the stream the stages run on: see test_sobel_cuda's to_device() */
    CK_CUDA(cudaMemcpy2DAsync(d_img, (size_t)w, h_img, (size_t)stride, (size_t)w, (size_t)h,
                              cudaMemcpyHostToDevice, stream));
    EXPECT_OK(gm_edges_cuda(d_img, (size_t)w, w, h, 1 << 20, &g_edges, stream));
    gm_point *g = xmalloc(MAX_TARGET, sizeof *g);
    uint32_t kept = 0;
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        gm_points c;
        EXPECT_OK(gm_corners_cpu(&ce, targets[t], &c));
        uint32_t n = 0xDEADu;
        memset(g, 0xA5, MAX_TARGET * sizeof *g);
        EXPECT_OK(gm_corners_cuda(&g_edges, targets[t], &g_corners, g, &n, stream));
        if (n != c.n)
            ck_abort_msg("%s %dx%d target %u: %u corners on the device, %u on the cpu", tag, w, h,
                         targets[t], n, c.n);
        for (uint32_t k = 0; k < n; k++)
            if (memcmp(&g[k], &c.p[k], sizeof g[k]) != 0)
                ck_abort_msg("%s %dx%d target %u: corner %u of %u: cuda (%.9g, %.9g) w %.9g angle "
                             "%.9g, cpu (%.9g, %.9g) w %.9g angle %.9g",
                             tag, w, h, targets[t], k, n, g[k].x, g[k].y, g[k].w, g[k].angle,
                             c.p[k].x, c.p[k].y, c.p[k].w, c.p[k].angle);
        if (n < targets[t]) { /* beyond the count: untouched */
            uint32_t bits;
            memcpy(&bits, &g[n].x, sizeof bits);
            EXPECT_EQ(bits, 0xA5A5A5A5u);
        }
        kept = n;
        free(c.p);
    }
    CK_CUDA(cudaFree(d_img));
    gm_edges_free(&ce);
    free(g);
    return kept;
}

/* ---- tests ------------------------------------------------------------------------------ */

static const int sizes[][2] = {{9, 9},    {10, 12},  {13, 11},  {31, 33},  {64, 65},  {97, 40},
                               {40, 97},  {200, 9},  {333, 222}, {640, 360}, {1000, 700},
                               {1023, 769}};
static size_t num_sizes(void) { return sizeof sizes / sizeof *sizes - (g_small ? 3 : 0); }

START_TEST(test_random_sizes)
{
    rng_state = 0xC0E5;
    uint64_t kept = 0;
    for (size_t s = 0; s < num_sizes(); s++) {
        int w = sizes[s][0], h = sizes[s][1];
        uint8_t *a = noise_image(w, h);
        uint8_t *b = shapes_image(w, h, 1 + w * h / 800);
        kept += check_image(a, w, h, w, 0, "noise");
        kept += check_image(b, w, h, w, 0, "shapes");
        free(a);
        free(b);
    }
    EXPECT(kept > (g_small ? 200u : 2000u)); /* not a comparison of empty lists */
}
END_TEST

/* Crowded: 2000 shapes on 640 x 480, many candidates per grid cell. */
START_TEST(test_crowded)
{
    rng_state = 0xC20D;
    int w = g_small ? 200 : 640, h = g_small ? 150 : 480;
    for (int r = 0; r < 3; r++) {
        uint8_t *im = shapes_image(w, h, w * h / 150);
        EXPECT(check_image(im, w, h, w, 0, "crowded") > (g_small ? 20u : 150u));
        free(im);
    }
}
END_TEST

START_TEST(test_real_images)
{
    static const char *files[] = {"data/ref.jpg", "data/query.jpg", "data/bench/ref_gravel.jpg",
                                  "data/bench/ref_text.jpg"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        gm_image img = load_data(files[f]);
        EXPECT(check_image(img.data, img.width, img.height, img.stride, 0, files[f]) > 20);
        if (f == 0 && !g_small) { /* 2x nearest neighbour: 960 x 960 */
            int w = img.width * 2, h = img.height * 2;
            uint8_t *big = xmalloc((size_t)w * h, 1);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    big[(size_t)y * w + x] = img.data[(ptrdiff_t)(y / 2) * img.stride + x / 2];
            check_image(big, w, h, w, 0, "ref x2");
            free(big);
        }
        gm_image_free(&img);
    }
}
END_TEST

/* Flat and tiny images: nothing found, nothing read out of bounds. */
START_TEST(test_empty)
{
    static const int values[] = {0, 128, 255};
    for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
        uint8_t *im = xmalloc(300 * 200, 1);
        memset(im, values[v], 300 * 200);
        EXPECT_EQ(check_image(im, 300, 200, 300, 0, "flat"), 0);
        free(im);
    }
    rng_state = 0x7127;
    for (int h = 1; h <= 10; h++)
        for (int w = 1; w <= 10; w++) {
            uint8_t *im = noise_image(w, h);
            uint32_t n = check_image(im, w, h, w, 0, "tiny");
            if (w <= 8 || h <= 8)
                EXPECT_EQ(n, 0);
            free(im);
        }
    uint8_t *im = noise_image(2, 97);
    EXPECT_EQ(check_image(im, 2, 97, 2, 0, "thin"), 0);
    EXPECT_EQ(check_image(im, 97, 2, 97, 0, "flat-thin"), 0);
    free(im);
}
END_TEST

/* One set of buffers for a large frame, then smaller ones of other shapes,
 * then the large one again, on a non-blocking stream. */
START_TEST(test_reuse_stream)
{
    rng_state = 0x2E05;
    cudaStream_t st;
    CK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    teardown();
    int bw = g_small ? 320 : 1000, bh = g_small ? 240 : 700;
    EXPECT_OK(gm_edges_dev_alloc(&g_edges, bw, bh));
    EXPECT_OK(gm_corners_dev_alloc(&g_corners, bw, bh, MAX_TARGET));
    uint8_t *big = shapes_image(bw, bh, bw * bh / 500);
    uint8_t *small = shapes_image(123, 77, 30);
    uint8_t *tall = shapes_image(bh, bw, bw * bh / 500); /* transposed shape, same pixels */
    uint32_t n0 = check_image(big, bw, bh, bw, st, "big");
    uint32_t s0 = check_image(small, 123, 77, 123, st, "small");
    check_image(tall, bh, bw, bh, st, "tall");
    EXPECT_EQ(check_image(small, 123, 77, 123, st, "small again"), s0);
    EXPECT_EQ(check_image(big, bw, bh, bw, st, "big again"), n0);
    EXPECT(g_corners.cap == (size_t)bw * bh); /* never reallocated */
    CK_CUDA(cudaStreamDestroy(st));
    free(big);
    free(small);
    free(tall);
}
END_TEST

START_TEST(test_invalid)
{
    gm_corners_dev c;
    gm_edges_dev e;
    EXPECT_EQ(gm_corners_dev_alloc(NULL, 5, 5, 10), GM_ERR_INVALID);
    EXPECT_EQ(gm_corners_dev_alloc(&c, 0, 5, 10), GM_ERR_INVALID);
    EXPECT_EQ(gm_corners_dev_alloc(&c, 5, -1, 10), GM_ERR_INVALID);
    EXPECT_EQ(gm_corners_dev_alloc(&c, 65536, 65536, 10), GM_ERR_INVALID);
    gm_corners_dev_free(&c); /* zeroed by the failed alloc: a no-op */
    gm_corners_dev_free(NULL);
    EXPECT_OK(gm_corners_dev_alloc(&c, 64, 32, 10));
    EXPECT_OK(gm_edges_dev_alloc(&e, 64, 64));
    gm_point pts[20];
    uint32_t n = 0;
    /* nothing computed into e yet */
    EXPECT_EQ(gm_corners_cuda(&e, 5, &c, pts, &n, 0), GM_ERR_INVALID);
    uint8_t *d = NULL;
    CK_CUDA(cudaMalloc((void **)&d, 64 * 64));
    CK_CUDA(cudaMemset(d, 9, 64 * 64));
    EXPECT_OK(gm_edges_cuda(d, 64, 64, 64, 100, &e, 0));
    EXPECT_EQ(gm_corners_cuda(&e, 5, &c, pts, &n, 0), GM_ERR_INVALID); /* 64 x 64 > cap */
    EXPECT_OK(gm_edges_cuda(d, 64, 32, 64, 100, &e, 0));              /* 32 x 64 fits */
    EXPECT_EQ(gm_corners_cuda(NULL, 5, &c, pts, &n, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_corners_cuda(&e, 5, NULL, pts, &n, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_corners_cuda(&e, 5, &c, NULL, &n, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_corners_cuda(&e, 5, &c, pts, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_corners_cuda(&e, 11, &c, pts, &n, 0), GM_ERR_INVALID); /* > max_target */
    n = 77;
    EXPECT_OK(gm_corners_cuda(&e, 0, &c, NULL, &n, 0)); /* target 0: no output needed */
    EXPECT_EQ(n, 0);
    EXPECT_OK(gm_corners_cuda(&e, 10, &c, pts, &n, 0)); /* flat: none */
    EXPECT_EQ(n, 0);
    CK_CUDA(cudaFree(d));
    gm_edges_dev_free(&e);
    gm_corners_dev_free(&c);
    EXPECT(c.d_sum == NULL && c.cap == 0);
    gm_corners_dev_free(&c); /* twice */
}
END_TEST

/* GM_CORNERS_TIME=1: the stage on a busy 1024 x 768 frame, by wall clock
 * around the synchronizing call (mean of 50 after 5 warm-up calls). */
START_TEST(test_timing)
{
    const char *on = getenv("GM_CORNERS_TIME");
    if (!on || strcmp(on, "0") == 0)
        return;
    rng_state = 0x71AE;
    int w = 1024, h = 768;
    uint8_t *im = shapes_image(w, h, w * h / 400);
    dev_reserve(w, h);
    uint8_t *d_img = to_dev(im, (size_t)w * h);
    gm_point *g = xmalloc(MAX_TARGET, sizeof *g);
    static const uint32_t targets[] = {50, 400, MAX_TARGET};
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        uint32_t n = 0;
        double total = 0, edges = 0;
        for (int it = 0; it < 55; it++) {
            struct timespec t0, t1, t2;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            EXPECT_OK(gm_edges_cuda(d_img, (size_t)w, w, h, 1 << 20, &g_edges, 0));
            CK_CUDA(cudaStreamSynchronize(0));
            clock_gettime(CLOCK_MONOTONIC, &t1);
            EXPECT_OK(gm_corners_cuda(&g_edges, targets[t], &g_corners, g, &n, 0));
            clock_gettime(CLOCK_MONOTONIC, &t2);
            if (it >= 5) {
                edges += (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3;
                total += (t2.tv_sec - t1.tv_sec) * 1e6 + (t2.tv_nsec - t1.tv_nsec) * 1e-3;
            }
        }
        gm_edges ce;
        gm_points c;
        struct timespec t0, t1;
        EXPECT_OK(gm_edges_cpu((gm_view){im, w, h, w}, 1 << 20, &ce));
        clock_gettime(CLOCK_MONOTONIC, &t0);
        EXPECT_OK(gm_corners_cpu(&ce, targets[t], &c));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("timing %dx%d target %u: %u corners, gm_corners_cuda %.1f us (gm_edges_cuda %.1f us), "
               "gm_corners_cpu %.1f us\n",
               w, h, targets[t], n, total / 50, edges / 50,
               (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3);
        EXPECT_EQ(n, c.n);
        free(c.p);
        gm_edges_free(&ce);
    }
    CK_CUDA(cudaFree(d_img));
    free(g);
    free(im);
}
END_TEST

static Suite *corners_cuda_suite(void)
{
    const char *small = getenv("GM_TEST_SMALL");
    g_small = small && strcmp(small, "0") != 0;
    Suite *s = suite_create("corners_cuda");
    TCase *tc = tcase_create("cuda_vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_random_sizes);
    tcase_add_test(tc, test_crowded);
    tcase_add_test(tc, test_real_images);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_reuse_stream);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_timing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(corners_cuda_suite); }
