/* test_sobel_cuda.c: the edge stage on the device (src/cuda/sobel.cu) against
 * the CPU (src/stages/sobel.c), which test_sobel checks by hand.  Everything is
 * integer, so gx, gy, mag2, the edge flags and the threshold must be EQUAL,
 * on: odd sizes from 1 x 1 to 1920 x 1080 (tiles of 32 cut anywhere), noise
 * and smooth random images, pitched device images whose padding holds junk,
 * the real images of data/, flat images, saturated patterns, and the
 * max_edges limit (a negative limit included).  One set of device buffers is
 * reused for every frame, as a caller would (stale histograms would show).
 * Exit 77 (skipped) without a CUDA device. */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages/sobel.h"
#include "cuda/gm_cuda.h"
#include "test_util.h"

/* ---- images ------------------------------------------------------------------ */

static img_t noise_image(int w, int h)
{
    img_t im = img_new(w, h, 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            *px(&im, x, y) = (uint8_t)rng_next();
    return im;
}

/* Random values on a grid of `cell` px, bilinear in between, plus noise of
 * +-`noise`: blobs and ramps with a realistic spread of gradients. */
static img_t smooth_image(int w, int h, int cell, int noise)
{
    int gw = w / cell + 2, gh = h / cell + 2;
    uint8_t *g = xmalloc((size_t)gw * gh, 1);
    for (int i = 0; i < gw * gh; i++)
        g[i] = (uint8_t)rng_next();
    img_t im = img_new(w, h, 5);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int cx = x / cell, cy = y / cell;
            double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
            double v = (1 - fy) * ((1 - fx) * g[cy * gw + cx] + fx * g[cy * gw + cx + 1]) +
                       fy * ((1 - fx) * g[(cy + 1) * gw + cx] + fx * g[(cy + 1) * gw + cx + 1]);
            if (noise)
                v += (int)(rng_next() % (2 * (unsigned)noise + 1)) - noise;
            *px(&im, x, y) = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
        }
    free(g);
    return im;
}

/* ---- the comparison ---------------------------------------------------------------- */

static gm_edges_dev g_dev; /* reused across frames, grown when a frame is larger */

static void dev_reserve(int w, int h)
{
    if (g_dev.d_gx && (size_t)w * h <= g_dev.cap)
        return;
    gm_edges_dev_free(&g_dev);
    EXPECT_OK(gm_edges_dev_alloc(&g_dev, w, h));
}

static void teardown(void) { gm_edges_dev_free(&g_dev); }

/* The host image in device memory with `pitch` bytes a row, the padding junk,
 * uploaded ON `stream` (the stream the edge stage then runs on) and waited
 * for.  A cudaMemset / cudaMemcpy2D on the legacy default stream is NOT
 * ordered with the work of a cudaStreamNonBlocking stream, and a copy from
 * pageable memory may return before its DMA has landed: the kernels of
 * test_reuse_stream then read rows of the image not yet written (the last
 * rows of a 1920 x 1080 frame, the tail of the copy). */
static uint8_t *to_device(const uint8_t *h_img, int w, int h, ptrdiff_t stride, size_t pitch,
                          cudaStream_t stream)
{
    uint8_t *d = NULL;
    CK_CUDA(cudaMalloc((void **)&d, pitch * (size_t)h));
    CK_CUDA(cudaMemsetAsync(d, 0x5A, pitch * (size_t)h, stream));
    CK_CUDA(cudaMemcpy2DAsync(d, pitch, h_img, (size_t)stride, (size_t)w, (size_t)h,
                              cudaMemcpyHostToDevice, stream));
    CK_CUDA(cudaStreamSynchronize(stream));
    return d;
}

/* The first difference of each array, one pass per array in the order the
 * stages make them (gx, gy, mag2, then the edge flags), so that the message
 * names the array where the difference starts, not the first one met in a
 * raster scan (an edge flag depends on mag2 of the next row). */
#define FIRST_DIFF_(arr, fmt_extra, ...)                                                   do {                                                                                       for (size_t i = 0; i < n; i++)                                                             if (c->arr[i] != g->arr[i]) {                                                              int x_ = (int)(i % (size_t)w), y_ = (int)(i / (size_t)w);                              size_t cnt_ = 0;                                                                       for (size_t j = i; j < n; j++)                                                             cnt_ += c->arr[j] != g->arr[j];                                                    ck_abort_msg("%s: " #arr "(%d,%d) cpu %d cuda %d, %zu differ" fmt_extra,                              what, x_, y_, (int)c->arr[i], (int)g->arr[i], cnt_,                                     __VA_ARGS__);                                                         }                                                                              } while (0)

static void expect_same(const gm_edges *c, const gm_edges *g, const char *what)
{
    EXPECT_EQ(g->w, c->w);
    EXPECT_EQ(g->h, c->h);
    int w = c->w;
    size_t n = (size_t)c->w * c->h;
    FIRST_DIFF_(gx, "%s", "");
    FIRST_DIFF_(gy, "%s", "");
    FIRST_DIFF_(mag2, "%s", "");
    if (c->threshold != g->threshold)
        ck_abort_msg("%s: threshold cpu %d cuda %d", what, c->threshold, g->threshold);
    FIRST_DIFF_(edge, " (mag2 %d, threshold %d)", c->mag2[i], c->threshold);
}
#undef FIRST_DIFF_

/* Both stages on one image; returns the number of edge pixels.  The device
 * image has `pitch` bytes a row (w when 0). */
static uint32_t check_image(const uint8_t *h_img, int w, int h, ptrdiff_t stride, size_t pitch,
                            int max_edges, cudaStream_t stream, const char *tag)
{
    char what[160];
    snprintf(what, sizeof what, "%s %dx%d pitch %zu max_edges %d", tag, w, h,
             pitch ? pitch : (size_t)w, max_edges);
    if (!pitch)
        pitch = (size_t)w;
    gm_edges c, g;
    gm_view v = {h_img, w, h, stride};
    EXPECT_OK(gm_edges_cpu(v, max_edges, &c));
    dev_reserve(w, h);
    uint8_t *d_img = to_device(h_img, w, h, stride, pitch, stream);
    *g_dev.h_threshold = -12345;
    EXPECT_OK(gm_edges_cuda(d_img, pitch, w, h, max_edges, &g_dev, stream));
    CK_CUDA(cudaStreamSynchronize(stream));
    EXPECT_EQ(g_dev.w, w);
    EXPECT_EQ(g_dev.h, h);
    if (*g_dev.h_threshold != c.threshold)
        ck_abort_msg("%s: h_threshold cpu %d cuda %d", what, c.threshold, *g_dev.h_threshold);
    EXPECT_OK(gm_edges_dev_to_host(&g_dev, stream, &g));
    expect_same(&c, &g, what);
    uint32_t count = 0;
    for (size_t i = 0; i < (size_t)w * h; i++)
        count += c.edge[i] != 0;
    if (max_edges >= 0 && count > (uint32_t)max_edges)
        ck_abort_msg("%s: %u edges over the limit", what, count);
    CK_CUDA(cudaFree(d_img));
    gm_edges_free(&c);
    gm_edges_free(&g);
    return count;
}

static uint32_t check_img(const img_t *im, size_t pitch, int max_edges, const char *tag)
{
    return check_image(im->buf, im->w, im->h, im->stride, pitch, max_edges, 0, tag);
}

/* ---- tests ------------------------------------------------------------------------------ */

static const int sizes[][2] = {{1, 1},   {2, 1},     {1, 7},     {3, 4},      {5, 5},
                               {7, 5},   {6, 6},     {31, 33},   {32, 32},    {33, 31},
                               {64, 65}, {97, 2},    {2, 97},    {640, 360},  {1023, 769},
                               {1920, 1080}};
#define NSIZES (sizeof sizes / sizeof *sizes)

START_TEST(test_random_sizes)
{
    rng_state = 0x50BE1;
    uint32_t edges_seen = 0;
    for (size_t s = 0; s < NSIZES; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        img_t a = noise_image(w, h), b = smooth_image(w, h, 1 + (int)(rng_next() % 24), 3);
        edges_seen += check_img(&a, 0, 1 << 20, "noise");
        edges_seen += check_img(&b, 0, 1 << 20, "smooth");
        edges_seen += check_img(&b, 0, 2000, "smooth, limited");
        free(a.buf);
        free(b.buf);
    }
    EXPECT(edges_seen > 100000); /* not a comparison of empty maps */
}
END_TEST

/* Device rows wider than the image, the padding junk that must not be read;
 * host strides too. */
START_TEST(test_pitched)
{
    rng_state = 0x917C4;
    static const size_t extra[] = {1, 3, 13, 64, 509};
    for (size_t s = 0; s < NSIZES; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        img_t b = smooth_image(w, h, 3 + (int)(rng_next() % 16), 2);
        for (size_t e = 0; e < sizeof extra / sizeof *extra; e++)
            check_img(&b, (size_t)w + extra[e], 1 << 20, "pitched");
        free(b.buf);
    }
    /* a pitch of 512-byte rows, as cudaMallocPitch gives */
    img_t b = smooth_image(1023, 769, 7, 2);
    check_img(&b, 1536, 1 << 20, "pitch 1536");
    free(b.buf);
}
END_TEST

START_TEST(test_real_images)
{
    static const char *files[] = {"data/ref.jpg",
                                  "data/query.jpg",
                                  "data/bench/ref_cell.jpg",
                                  "data/bench/ref_gravel.jpg",
                                  "data/bench/ref_hubble_deep_field.jpg",
                                  "data/bench/ref_retina.jpg",
                                  "data/bench/ref_text.jpg",
                                  "data/bench/q_text_01_medium.jpg"};
    static const int limits[] = {1 << 20, 20000, 3000, 100};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        gm_image img = load_data(files[f]);
        for (size_t l = 0; l < sizeof limits / sizeof *limits; l++) {
            uint32_t n = check_image(img.data, img.width, img.height, img.stride,
                                     (size_t)img.width + (l & 1) * 7, limits[l], 0, files[f]);
            if (l == 0)
                EXPECT(n > 50);
        }
        /* the gravel image 4x larger (nearest neighbour, then a light blur by
         * the stage itself): a realistic 1920 x 1920 frame */
        if (f == 3) {
            img_t big = img_new(img.width * 4, img.height * 4, 0);
            for (int y = 0; y < big.h; y++)
                for (int x = 0; x < big.w; x++)
                    *px(&big, x, y) = img.data[(ptrdiff_t)(y / 4) * img.stride + x / 4];
            check_img(&big, 0, 1 << 20, "gravel x4");
            check_img(&big, 0, 50000, "gravel x4");
            free(big.buf);
        }
        gm_image_free(&img);
    }
}
END_TEST

/* Flat images: no gradient at all, the threshold at its floor 96^2. */
START_TEST(test_flat)
{
    static const int values[] = {0, 1, 128, 254, 255};
    for (size_t s = 0; s < NSIZES; s++)
        for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
            int w = sizes[s][0], h = sizes[s][1];
            img_t im = img_new(w, h, 2);
            for (int y = 0; y < h; y++)
                memset(px(&im, 0, y), values[v], (size_t)w);
            EXPECT_EQ(check_img(&im, 0, 1 << 20, "flat"), 0);
            EXPECT_EQ(*g_dev.h_threshold, 96 * 96);
            free(im.buf);
        }
}
END_TEST

/* 0 / 255 patterns: the largest gradients (|g| up to 16320, mag2 near 2^29),
 * plateaus of equal magnitude (the thinning's strict/non-strict rule), all
 * four directions. */
START_TEST(test_saturated)
{
    rng_state = 0x5A7;
    static const int dims[][2] = {{7, 5}, {37, 29}, {640, 360}, {1023, 769}};
    for (size_t s = 0; s < sizeof dims / sizeof *dims; s++) {
        int w = dims[s][0], h = dims[s][1];
        img_t im = img_new(w, h, 1);
        for (int pat = 0; pat < 9; pat++) {
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int on;
                    switch (pat) {
                    case 0: on = ((x ^ y) & 1); break;              /* 1-px checkerboard */
                    case 1: on = ((x / 2 + y / 2) & 1); break;      /* 2-px */
                    case 2: on = ((x / 8 + y / 8) & 1); break;      /* 8-px */
                    case 3: on = x >= w / 2; break;                 /* vertical step */
                    case 4: on = y >= h / 2; break;                 /* horizontal step */
                    case 5: on = x + y >= (w + h) / 2; break;       /* diagonal */
                    case 6: on = x - y >= (w - h) / 2; break;       /* anti-diagonal */
                    case 7: on = (x / 5) & 1; break;                /* bars */
                    default: on = (int)(rng_next() & 1); break;     /* random 0/255 */
                    }
                    *px(&im, x, y) = on ? 255 : 0;
                }
            char tag[32];
            snprintf(tag, sizeof tag, "saturated %d", pat);
            check_img(&im, 0, 1 << 20, tag);
            check_img(&im, (size_t)w + 2, 300, tag);
        }
        free(im.buf);
    }
}
END_TEST

/* The limit: from none kept to all kept; negative = no limit (the CPU's
 * (size_t) cast); the count never exceeds a non-negative limit. */
START_TEST(test_max_edges)
{
    rng_state = 0x3A8;
    static const int limits[] = {-1, INT_MIN, 0, 1, 2, 10, 100, 1000, 5000, 20000, 100000, INT_MAX};
    img_t a = smooth_image(640, 360, 9, 4), b = noise_image(333, 222);
    uint32_t prev = UINT32_MAX;
    for (size_t l = 0; l < sizeof limits / sizeof *limits; l++) {
        uint32_t n = check_img(&a, 0, limits[l], "limit smooth");
        check_img(&b, 0, limits[l], "limit noise");
        if (limits[l] >= 0 && prev != UINT32_MAX)
            EXPECT(n >= prev); /* increasing limits keep at least as many */
        if (limits[l] >= 0)
            prev = n;
    }
    EXPECT(prev > 1000);
}
END_TEST

/* Ties at both comparisons of adaptive_threshold(), where >= and > differ.
 * A vertical step 0 -> 100 at x0, all rows equal (test_sobel: columns x0-3
 * .. x0+2 have |gx| 400, 2000, 4000, 4000, 2000, 400, gy = 0; sqrt bins 12,
 * 62, 125): 2h pixels in bin 125, 2h more in bin 62.
 *   w = 200: S(125) * 100 = 200 h = n exactly, so the 99th percentile is bin
 *     125 (4000): t = 0.06 * 4000 = 240, threshold 57600.
 *   w = 400: the tie falls on bin 62 (1984): t = 119.04, threshold 14170.
 *   max_edges = h - 4 (the thinned column x0-1 without the margin rows) is
 *     not exceeded: all kept; h - 5 is: t = 126 * 32, none kept. */
START_TEST(test_threshold_ties)
{
    static const int widths[] = {200, 400};
    static const int32_t want_thr[] = {57600, 14170};
    int h = 24;
    for (int k = 0; k < 2; k++) {
        int w = widths[k];
        img_t im = img_new(w, h, 1);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                *px(&im, x, y) = (uint8_t)(x < w / 2 ? 0 : 100);
        EXPECT_EQ(check_img(&im, 0, 1 << 20, "tie p99"), h - 4);
        EXPECT_EQ(*g_dev.h_threshold, want_thr[k]);
        if (k == 0) {
            EXPECT_EQ(check_img(&im, 0, h - 4, "tie max_edges"), h - 4);
            EXPECT_EQ(check_img(&im, 0, h - 5, "tie max_edges - 1"), 0);
            EXPECT_EQ(*g_dev.h_threshold, 126 * 32 * 126 * 32);
        }
        free(im.buf);
    }
}
END_TEST

/* Frames of different sizes through one set of buffers, on a stream of its
 * own: the same small frame before and after a large one. */
START_TEST(test_reuse_stream)
{
    rng_state = 0x2E05E;
    cudaStream_t st;
    CK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    gm_edges_dev_free(&g_dev);
    EXPECT_OK(gm_edges_dev_alloc(&g_dev, 1920, 1080));
    img_t small = smooth_image(100, 77, 5, 3), big = noise_image(1920, 1080);
    uint32_t n0 = check_image(small.buf, small.w, small.h, small.stride, 0, 500, st, "small");
    check_image(big.buf, big.w, big.h, big.stride, 0, 1 << 20, st, "big");
    uint32_t n1 = check_image(small.buf, small.w, small.h, small.stride, 0, 500, st, "small again");
    EXPECT_EQ(n0, n1);
    /* any shape within the capacity: 1080 x 1920 */
    img_t tall = smooth_image(1080, 1920, 11, 2);
    check_image(tall.buf, tall.w, tall.h, tall.stride, 1100, 1 << 20, st, "tall");
    CK_CUDA(cudaStreamDestroy(st));
    free(small.buf);
    free(big.buf);
    free(tall.buf);
}
END_TEST

START_TEST(test_invalid)
{
    gm_edges_dev e;
    EXPECT_EQ(gm_edges_dev_alloc(&e, 0, 5), GM_ERR_INVALID);
    EXPECT_EQ(gm_edges_dev_alloc(&e, 5, -1), GM_ERR_INVALID);
    EXPECT_EQ(gm_edges_dev_alloc(NULL, 5, 5), GM_ERR_INVALID);
    EXPECT_EQ(gm_edges_dev_alloc(&e, 65536, 65536), GM_ERR_INVALID); /* 2^32 pixels */
    gm_edges_dev_free(&e); /* zeroed by the failed alloc: a no-op */
    EXPECT_OK(gm_edges_dev_alloc(&e, 64, 32));
    uint8_t *d = NULL;
    CK_CUDA(cudaMalloc((void **)&d, 4096));
    EXPECT_EQ(gm_edges_cuda(NULL, 64, 64, 32, 100, &e, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_edges_cuda(d, 64, 64, 32, 100, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_edges_cuda(d, 64, 0, 32, 100, &e, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_edges_cuda(d, 64, 64, -1, 100, &e, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_edges_cuda(d, 63, 64, 32, 100, &e, 0), GM_ERR_INVALID); /* pitch < w */
    EXPECT_EQ(gm_edges_cuda(d, 65, 65, 32, 100, &e, 0), GM_ERR_INVALID); /* over capacity */
    gm_edges out;
    EXPECT_EQ(gm_edges_dev_to_host(&e, 0, &out), GM_ERR_INVALID);        /* nothing computed yet */
    CK_CUDA(cudaMemset(d, 7, 4096));
    EXPECT_OK(gm_edges_cuda(d, 32, 32, 64, 100, &e, 0)); /* 32 x 64 fits 64 x 32 */
    EXPECT_OK(gm_edges_dev_to_host(&e, 0, &out));
    EXPECT_EQ(out.w, 32);
    EXPECT_EQ(out.h, 64);
    EXPECT_EQ(out.threshold, 96 * 96);
    gm_edges_free(&out);
    gm_edges_dev_free(&e);
    EXPECT(e.d_gx == NULL && e.cap == 0);
    gm_edges_dev_free(&e); /* twice */
    CK_CUDA(cudaFree(d));
}
END_TEST

static Suite *sobel_cuda_suite(void)
{
    Suite *s = suite_create("sobel_cuda");
    TCase *tc = tcase_create("cuda_vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_random_sizes);
    tcase_add_test(tc, test_pitched);
    tcase_add_test(tc, test_real_images);
    tcase_add_test(tc, test_flat);
    tcase_add_test(tc, test_saturated);
    tcase_add_test(tc, test_max_edges);
    tcase_add_test(tc, test_threshold_ties);
    tcase_add_test(tc, test_reuse_stream);
    tcase_add_test(tc, test_invalid);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(sobel_cuda_suite); }
