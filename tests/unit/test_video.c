/* test_video.c: video frames through FFmpeg (src/io/video.c): numbering,
 * timestamps, frame selection with and without a seek, the gray conversion
 * against libswscale, and files that are not videos.  Runs from the
 * repository root (data/video, see data/README.md). */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <omp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>

#include "test_util.h"
#include "io/video.h"

#define CLIP "data/video/clip.mp4" /* 320x180, 50 frames at 30 fps */

/* Read every selected item of path; the gray images are kept (the caller
 * frees items[i] with gm_video_frame_free and items with free). */
static int read_all(const char *path, gm_video_opts o, gm_video_frame **items)
{
    gm_video *v;
    char err[256];
    ck_assert_msg(gm_video_open(path, &o, &v, err, sizeof err) == GM_OK, "%s: %s", path, err);
    int n = 0, cap = 64;
    *items = xcalloc((size_t)cap, sizeof **items);
    for (;;) {
        int got;
        ck_assert_int_eq(gm_video_read(v, &(*items)[n], &got), GM_OK);
        if (!got)
            break;
        ck_assert_int_lt(++n, cap);
    }
    ck_assert_msg(!gm_video_lost(v), "%s", gm_video_error(v));
    gm_video_close(v);
    return n;
}

/* a and b the same size and pixels, row by row (strides may differ) */
static void expect_same_image(const gm_image *a, const gm_image *b)
{
    ck_assert_int_eq(a->width, b->width);
    ck_assert_int_eq(a->height, b->height);
    for (int y = 0; y < a->height; y++)
        ck_assert(memcmp(a->data + (size_t)y * a->stride, b->data + (size_t)y * b->stride,
                         (size_t)a->width) == 0);
}

static void free_items(gm_video_frame *items, int n)
{
    for (int i = 0; i <= n; i++)
        gm_video_frame_free(&items[i]);
    free(items);
}

START_TEST(test_numbers_and_pts)
{
    gm_video *v;
    char err[256];
    gm_video_opts o = gm_video_opts_default();
    ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
    int w, h;
    double fps;
    gm_video_info(v, &w, &h, &fps);
    ck_assert_int_eq(w, 320);
    ck_assert_int_eq(h, 180);
    ck_assert_double_eq_tol(fps, 30.0, 1e-9);
    ck_assert_int_eq(gm_video_frames_total(v), 50);
    gm_video_close(v);

    gm_video_frame *it;
    int n = read_all(CLIP, o, &it);
    ck_assert_int_eq(n, 50);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(it[i].frame, i);
        ck_assert_int_eq(it[i].status, GM_OK);
        ck_assert(it[i].has_pts);
        ck_assert_double_eq_tol(it[i].pts_s, i / 30.0, 1e-6);
        ck_assert_int_eq(it[i].img.width, 320);
        ck_assert_int_eq(it[i].img.height, 180);
    }
    free_items(it, n);
}
END_TEST

/* --frames 40:45 seeks (40 >= SEEK_MIN_FRAMES); 5:20 with step 5 decodes
 * and drops.  Both must give the frames a full read gives, pixel for pixel. */
START_TEST(test_selection)
{
    gm_video_opts o = gm_video_opts_default();
    gm_video_frame *all, *sel;
    int n = read_all(CLIP, o, &all);
    ck_assert_int_eq(n, 50);
    const int64_t cases[][3] = {{40, 45, 1}, {5, 20, 5}, {33, -1, 7}, {0, 3, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        o.first = cases[c][0], o.last = cases[c][1], o.step = cases[c][2];
        gm_video *v;
        char err[256];
        ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
        int64_t total = gm_video_frames_total(v);
        gm_video_close(v);
        int m = read_all(CLIP, o, &sel);
        int64_t hi = o.last < 0 ? 50 : o.last;
        ck_assert_int_eq(m, (hi - o.first + o.step - 1) / o.step);
        ck_assert_int_eq(total, m);
        for (int i = 0; i < m; i++) {
            const gm_video_frame *a = &all[sel[i].frame], *b = &sel[i];
            ck_assert_int_eq(b->frame, o.first + i * o.step);
            ck_assert_double_eq_tol(b->pts_s, a->pts_s, 1e-9);
            ck_assert_int_eq(b->img.width, a->img.width);
            ck_assert_int_eq(b->img.height, a->img.height);
            ck_assert_msg(memcmp(a->img.data, b->img.data, (size_t)a->img.width * a->img.height) == 0,
                          "frame %d differs after selection %zu", (int)b->frame, c);
        }
        free_items(sel, m);
    }
    free_items(all, n);
}
END_TEST

/* The luma plane with the limited-range table equals libswscale's GRAY8
 * within one level; full range is the plane as it is. */
START_TEST(test_gray_vs_swscale)
{
    const int w = 64, h = 8;
    AVFrame *fr = av_frame_alloc();
    fr->format = AV_PIX_FMT_YUV420P, fr->width = w, fr->height = h;
    ck_assert_int_eq(av_frame_get_buffer(fr, 0), 0);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            fr->data[0][y * fr->linesize[0] + x] = (uint8_t)((y * w + x) / 2); /* 0..255 */
    for (int p = 1; p < 3; p++)
        for (int y = 0; y < h / 2; y++)
            memset(fr->data[p] + y * fr->linesize[p], 128, (size_t)w / 2);
    struct SwsContext *sws = NULL;
    gm_video_frame a = {0}, b = {0};
    for (int range = 0; range < 2; range++) {
        fr->color_range = range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
        ck_assert_int_eq(gm_video_convert(fr, 0, &sws, &a), GM_OK);
        ck_assert_int_eq(gm_video_convert(fr, 1, &sws, &b), GM_OK);
        int worst = 0;
        for (int i = 0; i < w * h; i++) {
            int d = abs((int)a.img.data[i] - (int)b.img.data[i]);
            worst = d > worst ? d : worst;
            if (range)
                ck_assert_int_eq(a.img.data[i], fr->data[0][(i / w) * fr->linesize[0] + i % w]);
        }
        ck_assert_msg(worst <= 1, "range %d: luma and swscale differ by %d", range, worst);
    }
    /* limited range: 16 -> 0, 235 -> 255 */
    fr->color_range = AVCOL_RANGE_MPEG;
    ck_assert_int_eq(gm_video_convert(fr, 0, &sws, &a), GM_OK);
    ck_assert_int_eq(a.img.data[32], 0);
    ck_assert_int_eq(a.img.data[470], 255);
    gm_video_frame_free(&a);
    gm_video_frame_free(&b);
    sws_freeContext(sws);
    av_frame_free(&fr);
}
END_TEST

/* The decoder's threads: the asked count; libavcodec's own (0) up to
 * GM_VIDEO_AUTO_THREADS cores; the cores beyond, at most
 * GM_VIDEO_MAX_THREADS; and a decoder opened on this machine runs them. */
START_TEST(test_decode_threads)
{
    ck_assert_int_eq(gm_video_decode_threads(3, 64), 3);
    ck_assert_int_eq(gm_video_decode_threads(1, 1), 1);
    ck_assert_int_eq(gm_video_decode_threads(48, 2), 48);
    ck_assert_int_eq(gm_video_decode_threads(0, 1), 0);
    ck_assert_int_eq(gm_video_decode_threads(0, 2), 0);
    ck_assert_int_eq(gm_video_decode_threads(0, GM_VIDEO_AUTO_THREADS), 0);
    ck_assert_int_eq(gm_video_decode_threads(0, GM_VIDEO_AUTO_THREADS + 1),
                     GM_VIDEO_AUTO_THREADS + 1);
    ck_assert_int_eq(gm_video_decode_threads(-1, 24), 24);
    ck_assert_int_eq(gm_video_decode_threads(0, GM_VIDEO_MAX_THREADS), GM_VIDEO_MAX_THREADS);
    ck_assert_int_eq(gm_video_decode_threads(0, 128), GM_VIDEO_MAX_THREADS);
    /* the decoder opened here runs the chosen count, or libavcodec's own
     * (1 to 16) where the choice is 0 */
    for (int asked = 0; asked <= 5; asked += 5) {
        gm_video_opts o = gm_video_opts_default();
        o.decode_threads = asked;
        o.decode = GM_VIDEO_DECODE_CPU;
        gm_video *v;
        char err[256];
        ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
        const char *d = strstr(gm_video_decoder(v), "libavcodec, ");
        int n = 0;
        ck_assert_ptr_nonnull(d);
        ck_assert_int_eq(sscanf(d, "libavcodec, %d threads", &n), 1);
        int want = gm_video_decode_threads(asked, omp_get_num_procs());
        if (want > 0)
            ck_assert_int_eq(n, want);
        else
            ck_assert(n >= 1 && n <= GM_VIDEO_AUTO_THREADS);
        gm_video_close(v);
    }
}
END_TEST

/* The limited-range row as the table it replaced: every byte value to
 * round((i - 16) * 255 / 219) clamped, at every offset of a row long and
 * short (the vector loop's body and its tail), and through
 * gm_video_convert on an odd-width frame with padded rows. */
START_TEST(test_limited_row_every_value)
{
    uint8_t want[256];
    for (int i = 0; i < 256; i++) {
        long y = lround((i - 16) * 255.0 / 219.0);
        want[i] = (uint8_t)(y < 0 ? 0 : y > 255 ? 255 : y);
    }
    uint8_t src[600], dst[600];
    for (int start = 0; start < 40; start++)
        for (int w = 0; w + start <= 600; w += 37) {
            for (int x = 0; x < w; x++)
                src[start + x] = (uint8_t)(x * 7 + start);
            memset(dst, 0xA5, sizeof dst);
            gm_video_limited_row(src + start, dst + start, w);
            for (int x = 0; x < w; x++)
                ck_assert_int_eq(dst[start + x], want[src[start + x]]);
            for (int x = 0; x < start; x++) /* nothing before the row */
                ck_assert_int_eq(dst[x], 0xA5);
            if (start + w < 600)
                ck_assert_int_eq(dst[start + w], 0xA5); /* nor after */
        }
    AVFrame *fr = av_frame_alloc();
    fr->format = AV_PIX_FMT_YUV420P, fr->width = 257, fr->height = 3;
    fr->color_range = AVCOL_RANGE_MPEG;
    ck_assert_int_eq(av_frame_get_buffer(fr, 64), 0);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 257; x++)
            fr->data[0][y * fr->linesize[0] + x] = (uint8_t)(x + 3 * y);
    struct SwsContext *sws = NULL;
    gm_video_frame a = {0};
    ck_assert_int_eq(gm_video_convert(fr, 0, &sws, &a), GM_OK);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 257; x++)
            ck_assert_int_eq(a.img.data[y * 257 + x], want[(uint8_t)(x + 3 * y)]);
    gm_video_frame_free(&a);
    gm_video_sws_free(&sws);
    av_frame_free(&fr);
}
END_TEST

/* --decode cpu is the default decoder, item for item; --decode nvdec gives
 * the same items (numbers, pts, pixels: H.264 decoding is bit-exact) where a
 * GPU decodes, else GM_ERR_DEVICE with the one-line reason. */
static void check_same_items(const gm_video_frame *a, int n, const gm_video_frame *b, int m)
{
    ck_assert_int_eq(m, n);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(b[i].frame, a[i].frame);
        ck_assert_int_eq(b[i].status, a[i].status);
        ck_assert_double_eq_tol(b[i].pts_s, a[i].pts_s, 1e-9);
        ck_assert_int_eq(b[i].img.width, a[i].img.width);
        ck_assert_int_eq(b[i].img.height, a[i].img.height);
        ck_assert_msg(memcmp(a[i].img.data, b[i].img.data,
                             (size_t)a[i].img.width * a[i].img.height) == 0, "frame %d", i);
    }
}

START_TEST(test_decoders)
{
    gm_video_opts o = gm_video_opts_default();
    ck_assert_int_eq(o.decode, GM_VIDEO_DECODE_AUTO);
    gm_video_frame *def, *cpu, *nv;
    int n = read_all(CLIP, o, &def);
    o.decode = GM_VIDEO_DECODE_CPU;
    int m = read_all(CLIP, o, &cpu);
    check_same_items(def, n, cpu, m);
    free_items(cpu, m);

    gm_video *v = NULL;
    char err[256];
    o.decode = GM_VIDEO_DECODE_NVDEC;
    gm_status st = gm_video_open(CLIP, &o, &v, err, sizeof err);
    if (st == GM_OK) {
        ck_assert_msg(strncmp(gm_video_decoder(v), "nvdec", 5) == 0, "%s", gm_video_decoder(v));
        gm_video_close(v);
        m = read_all(CLIP, o, &nv);
        check_same_items(def, n, nv, m);
        free_items(nv, m);
        o.first = 40, o.last = 45; /* a seek */
        m = read_all(CLIP, o, &nv);
        check_same_items(def + 40, 5, nv, m);
        free_items(nv, m);
    } else {
        ck_assert_int_eq(st, GM_ERR_DEVICE);
        ck_assert_ptr_null(v);
        ck_assert_msg(strncmp(err, "hardware decoding unavailable: ", 31) == 0, "%s", err);
        ck_assert_ptr_null(strchr(err, '\n'));
    }
    free_items(def, n);
    o = gm_video_opts_default();
    o.decode = (gm_video_decode)7;
    ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_ERR_INVALID);
}
END_TEST

START_TEST(test_not_videos)
{
    gm_video *v = NULL;
    char err[256];
    gm_video_opts o = gm_video_opts_default();
    char txt[] = "/tmp/gm_test_video_XXXXXX";
    int fd = mkstemp(txt);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("this is not a video\n", f);
    fclose(f);
    ck_assert_int_eq(gm_video_open(txt, &o, &v, err, sizeof err), GM_ERR_FORMAT);
    ck_assert_ptr_null(v);
    ck_assert_str_eq(err, "not a JPEG or PNG image or a video");
    remove(txt);
    ck_assert_int_eq(gm_video_open("/nonexistent/x.mp4", &o, &v, err, sizeof err), GM_ERR_FORMAT);
    ck_assert_msg(strstr(err, "cannot open") != NULL, "%s", err);
    o.step = 0;
    ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_ERR_INVALID);
    o.step = 1, o.first = 10, o.last = 5;
    ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_ERR_INVALID);
}
END_TEST

/* Every video gives at least one item: a selection past the end is one
 * error item at the first frame asked for, saying how many frames there
 * are (with a seek: 400 >= SEEK_MIN_FRAMES; without: 60, 50); a video
 * with no frame is one error item at frame 0. */
START_TEST(test_empty_selection)
{
    const int64_t cases[][2] = {{400, 500}, {60, -1}, {50, 51}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gm_video_opts o = gm_video_opts_default();
        o.first = cases[c][0], o.last = cases[c][1];
        gm_video *v;
        char err[256];
        ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
        gm_video_frame f;
        memset(&f, 0, sizeof f);
        int got;
        ck_assert_int_eq(gm_video_read(v, &f, &got), GM_OK);
        ck_assert_int_eq(got, 1);
        ck_assert_int_eq(f.frame, o.first);
        ck_assert_int_eq(f.status, GM_ERR_INVALID);
        ck_assert_msg(strstr(f.error, "the video has 50 frames") != NULL, "%s", f.error);
        ck_assert_int_eq(gm_video_read(v, &f, &got), GM_OK);
        ck_assert_int_eq(got, 0);
        gm_video_frame_free(&f);
        gm_video_close(v);
    }
}
END_TEST

/* The sample clip's reference, prepared for model on the CPU. */
static gm_ref *clip_ref(gm_model model)
{
    gm_image refimg;
    char err[256];
    ck_assert_int_eq(gm_image_load("data/video/ref_clip.jpg", 0, &refimg, err, sizeof err), GM_OK);
    gm_params p = gm_params_default();
    p.model = model;
    p.device = GM_DEVICE_CPU;
    gm_ref *ref;
    ck_assert_int_eq(gm_ref_prepare(&p, gm_image_view(&refimg), &ref), GM_OK);
    gm_image_free(&refimg);
    return ref;
}

/* gm_video_match with a per-call model (gm_video_opts.model): on a
 * reference prepared for auto, the pipeline's results under similarity are
 * gm_match_model's on the same frames (read with gm_video_read), in frame
 * order; a model out of range is refused at open. */
typedef struct {
    int n;
    gm_result res[6];
    int64_t frame[6];
} collected;

static int collect_sink(void *user, const gm_video_result *r)
{
    collected *c = user;
    ck_assert_int_lt(c->n, 6);
    ck_assert_int_eq(r->item->status, GM_OK);
    ck_assert_int_eq(r->match, GM_OK);
    c->frame[c->n] = r->item->frame;
    c->res[c->n++] = *r->res;
    return 0;
}

START_TEST(test_match_model)
{
    char err[256];
    gm_ref *ref = clip_ref(GM_MODEL_AUTO);
    gm_video_opts o = gm_video_opts_default();
    o.last = 6;
    gm_video_frame *items;
    int n = read_all(CLIP, o, &items);
    ck_assert_int_eq(n, 6);
    /* the pipeline, similarity on an auto reference */
    o.model = GM_MODEL_SIMILARITY;
    o.workers = 2;
    o.queue = 5;
    gm_video *v;
    ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
    collected got = {0};
    ck_assert_int_eq(gm_video_match(v, ref, collect_sink, &got), GM_OK);
    /* where the time went: every item counted, the ring of workers + queue */
    gm_video_stats vs;
    gm_video_stats_get(v, &vs);
    ck_assert_int_eq(vs.items, 6);
    ck_assert_int_eq(vs.workers, 2);
    ck_assert_int_eq(vs.ring, 7);
    ck_assert(vs.decode_ms > 0 && vs.match_ms > 0 && vs.wall_ms > 0);
    ck_assert(vs.decoder_wait_ms >= 0 && vs.worker_wait_ms >= 0);
    gm_video_close(v);
    /* no workers asked for: on the CPU, the cores (on GPUs 16 a GPU at
     * most the cores: tests/cli/cli.sh on a GPU) */
    gm_video_opts o0 = o;
    o0.workers = 0, o0.last = 2;
    collected got0 = {0};
    ck_assert_int_eq(gm_video_open(CLIP, &o0, &v, err, sizeof err), GM_OK);
    ck_assert_int_eq(gm_video_match(v, ref, collect_sink, &got0), GM_OK);
    gm_video_stats_get(v, &vs);
    ck_assert_int_eq(vs.workers, omp_get_num_procs());
    ck_assert_int_eq(got0.n, 2);
    gm_video_close(v);
    ck_assert_int_eq(got.n, 6);
    for (int i = 0; i < n; i++) {
        gm_result want;
        ck_assert_int_eq(gm_match_model(ref, gm_image_view(&items[i].img), GM_MODEL_SIMILARITY,
                                        &want), GM_OK);
        ck_assert_int_eq(got.frame[i], items[i].frame);
        ck_assert_int_eq(got.res[i].status, want.status);
        ck_assert_int_eq(got.res[i].model, GM_MODEL_SIMILARITY);
        ck_assert(got.res[i].confidence == want.confidence);
        for (int k = 0; k < 9; k++)
            ck_assert(got.res[i].h[k] == want.h[k]);
    }
    free_items(items, n);
    o.model = 9;
    ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_ERR_INVALID);
    gm_ref_free(ref);
}
END_TEST

/* gm_video_match with and without the frames' pixels for the sink
 * (gm_video_opts.sink_pixels): three frame buffers for the whole clip, so
 * each buffer is reused many times; with pixels the sink sees each frame
 * as gm_video_read gives it, without them the size alone (data NULL); the
 * same results in frame order either way. */
typedef struct {
    int pixels, n;
    const gm_video_frame *items;
    int64_t frame[64];
    gm_result res[64];
} pixel_sink_ctx;

static int pixel_sink(void *user, const gm_video_result *r)
{
    pixel_sink_ctx *c = user;
    ck_assert_int_lt(c->n, 64);
    const gm_video_frame *want = &c->items[c->n];
    ck_assert_int_eq(r->item->frame, want->frame);
    ck_assert_int_eq(r->item->status, want->status);
    if (r->item->status == GM_OK) {
        if (c->pixels)
            expect_same_image(&r->item->img, &want->img);
        else
            ck_assert(r->item->img.data == NULL);
        ck_assert_int_eq(r->item->img.width, want->img.width);
        ck_assert_int_eq(r->item->img.height, want->img.height);
        ck_assert_int_eq(r->match, GM_OK);
        c->res[c->n] = *r->res;
    }
    c->frame[c->n++] = r->item->frame;
    return 0;
}

START_TEST(test_match_sink_pixels)
{
    char err[256];
    gm_ref *ref = clip_ref(GM_MODEL_SIMILARITY);
    gm_video_opts o = gm_video_opts_default();
    ck_assert_int_eq(o.sink_pixels, 1);
    gm_video_frame *items;
    int n = read_all(CLIP, o, &items);
    ck_assert_int_ge(n, 40);
    pixel_sink_ctx got[2];
    for (int pixels = 0; pixels < 2; pixels++) {
        o.sink_pixels = pixels;
        o.workers = 2;
        o.queue = 1;
        gm_video *v;
        ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
        pixel_sink_ctx *c = &got[pixels];
        memset(c, 0, sizeof *c);
        c->pixels = pixels, c->items = items;
        ck_assert_int_eq(gm_video_match(v, ref, pixel_sink, c), GM_OK);
        gm_video_stats vs;
        gm_video_stats_get(v, &vs);
        ck_assert_int_eq(vs.items, n);
        ck_assert_int_eq(vs.ring, 3); /* frames in flight: workers + queue */
        gm_video_close(v);
        ck_assert_int_eq(c->n, n);
    }
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(got[0].frame[i], got[1].frame[i]);
        ck_assert_int_eq(got[0].res[i].status, got[1].res[i].status);
        ck_assert(got[0].res[i].confidence == got[1].res[i].confidence);
        for (int k = 0; k < 9; k++)
            ck_assert(got[0].res[i].h[k] == got[1].res[i].h[k]);
    }
    free_items(items, n);
    gm_ref_free(ref);
}
END_TEST

/* Read ahead (gm_video_prefetch): the same items in the same order as
 * reading them one by one, whatever the read-ahead's length, also when it
 * reaches the end (and the end is then reported once); stopped by *stop. */
START_TEST(test_prefetch)
{
    gm_video_opts o = gm_video_opts_default();
    o.first = 2, o.last = 9;
    gm_video_frame *want;
    int n = read_all(CLIP, o, &want);
    ck_assert_int_eq(n, 7);
    char err[256];
    for (int ahead = 1; ahead <= n + 3; ahead += 3) {
        gm_video *v;
        ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
        ck_assert_int_eq(gm_video_prefetch(v, ahead, INT64_MAX, NULL), GM_OK);
        ck_assert_int_eq(gm_video_prefetch(v, ahead, INT64_MAX, NULL), GM_ERR_INVALID); /* once */
        gm_video_frame f;
        memset(&f, 0, sizeof f);
        for (int i = 0; i < n; i++) {
            int got = 0;
            ck_assert_int_eq(gm_video_read(v, &f, &got), GM_OK);
            ck_assert_int_eq(got, 1);
            ck_assert_int_eq(f.frame, want[i].frame);
            ck_assert_int_eq(f.status, want[i].status);
            ck_assert(f.pts_s == want[i].pts_s);
            expect_same_image(&f.img, &want[i].img);
        }
        int got = 1;
        ck_assert_int_eq(gm_video_read(v, &f, &got), GM_OK);
        ck_assert_int_eq(got, 0);
        ck_assert_int_eq(gm_video_read(v, &f, &got), GM_OK);
        ck_assert_int_eq(got, 0);
        gm_video_frame_free(&f);
        gm_video_close(v); /* frees what was read ahead and not taken */
    }
    /* a stop already set: nothing read ahead, every item still comes */
    int stop = 1;
    gm_video *v;
    ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
    ck_assert_int_eq(gm_video_prefetch(v, 4, INT64_MAX, &stop), GM_OK);
    gm_video_frame f;
    memset(&f, 0, sizeof f);
    int got = 0, k = 0;
    while (gm_video_read(v, &f, &got) == GM_OK && got)
        ck_assert_int_eq(f.frame, want[k++].frame);
    ck_assert_int_eq(k, n);
    gm_video_frame_free(&f);
    gm_video_close(v);
    free_items(want, n);
}
END_TEST

/* The items gm_video_read gives, read with the conversion left to the
 * caller (gm_video_read_raw, then gm_video_finish in reverse order, as
 * the pipeline's workers may), with and without frames read ahead; a frame
 * never converted is freed (gm_video_raw_free). */
START_TEST(test_read_raw)
{
    gm_video_opts o = gm_video_opts_default();
    o.first = 1, o.last = 12;
    gm_video_frame *want;
    int n = read_all(CLIP, o, &want);
    ck_assert_int_eq(n, 11);
    char err[256];
    for (int ahead = 0; ahead <= 3; ahead += 3) {
        gm_video *v;
        ck_assert_int_eq(gm_video_open(CLIP, &o, &v, err, sizeof err), GM_OK);
        if (ahead)
            ck_assert_int_eq(gm_video_prefetch(v, ahead, INT64_MAX, NULL), GM_OK);
        gm_video_frame *f = xcalloc((size_t)n + 1, sizeof *f);
        struct AVFrame **raw = xcalloc((size_t)n + 1, sizeof *raw);
        int unconverted = 0;
        for (int i = 0; i < n; i++) {
            int got = 0;
            ck_assert_int_eq(gm_video_read_raw(v, &f[i], &got, &raw[i]), GM_OK);
            ck_assert_int_eq(got, 1);
            ck_assert_int_eq(f[i].frame, want[i].frame);
            ck_assert(f[i].pts_s == want[i].pts_s);
            ck_assert_int_eq(f[i].status, GM_OK);
            unconverted += raw[i] != NULL;
        }
        ck_assert_int_eq(unconverted, n - ahead); /* the ones read ahead came converted */
        int got = 1;
        ck_assert_int_eq(gm_video_read_raw(v, &f[n], &got, &raw[n]), GM_OK);
        ck_assert_int_eq(got, 0);
        ck_assert_ptr_null(raw[n]);
        gm_video_close(v); /* the frames taken outlive their reader */
        struct SwsContext *sws = NULL;
        for (int i = n - 1; i >= 1; i--) {
            ck_assert_int_eq(gm_video_finish(&raw[i], &sws, &f[i]), GM_OK);
            ck_assert_ptr_null(raw[i]);
            expect_same_image(&f[i].img, &want[i].img);
        }
        gm_video_raw_free(&raw[0]);
        ck_assert_ptr_null(raw[0]);
        gm_video_sws_free(&sws);
        for (int i = 0; i <= n; i++)
            gm_video_frame_free(&f[i]);
        free(f), free(raw);
    }
    free_items(want, n);
}
END_TEST

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    uint8_t *d = xcalloc((size_t)n + 1, 1);
    ck_assert_int_eq(fread(d, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return d;
}

/* A file in memory (gm_video_open_mem, FFmpeg's reader over the bytes)
 * gives the items the file gives, a seek included. */
START_TEST(test_open_mem)
{
    const char *files[] = {CLIP, "data/video/clip_h264.ts", "data/video/clip_vp9.webm"};
    for (int k = 0; k < 3; k++) {
        gm_video_opts o = gm_video_opts_default();
        if (k == 0)
            o.first = 40, o.last = 47, o.step = 2; /* a seek, a step */
        gm_video_frame *a;
        int n = read_all(files[k], o, &a);
        ck_assert_int_gt(n, 0);
        size_t size;
        uint8_t *d = slurp(files[k], &size);
        gm_video *v = NULL;
        char err[256];
        ck_assert_msg(gm_video_open_mem(d, size, &o, &v, err, sizeof err) == GM_OK, "%s", err);
        gm_video_frame *b = xcalloc((size_t)n + 2, sizeof *b);
        int m = 0;
        for (int got = 1; m <= n;) {
            ck_assert_int_eq(gm_video_read(v, &b[m], &got), GM_OK);
            if (!got)
                break;
            m++;
        }
        ck_assert_msg(!gm_video_lost(v), "%s", gm_video_error(v));
        gm_video_close(v);
        check_same_items(a, n, b, m);
        free_items(a, n);
        free_items(b, m);
        /* cut after 16 bytes, and nothing at all */
        ck_assert_int_ne(gm_video_open_mem(d, 16, &o, &v, err, sizeof err), GM_OK);
        ck_assert_ptr_null(v);
        ck_assert_ptr_null(strchr(err, '\n'));
        ck_assert_int_ne(gm_video_open_mem(d, 0, &o, &v, err, sizeof err), GM_OK);
        ck_assert_ptr_null(v);
        ck_assert_ptr_null(strchr(err, '\n'));
        free(d);
    }
}
END_TEST

/* Frames over the pixel limit are refused before they are decoded: a
 * header of 16384x16384 (huge_16k.mkv: a 320x256 H.264 stream whose
 * Matroska header says 16384x16384) at open, from a file and from memory;
 * a stream whose frames grow past the limit mid-stream (sizes.ts: 6 frames
 * of 320x180, then 6 of 256x144; limit 50000 pixels) gives error items for
 * the large frames and pictures for the rest. */
START_TEST(test_max_pixels)
{
    gm_video_opts o = gm_video_opts_default();
    gm_video *v = NULL;
    char err[256];
    ck_assert_int_eq(gm_video_open("data/video/huge_16k.mkv", &o, &v, err, sizeof err),
                     GM_ERR_TOO_LARGE);
    ck_assert_ptr_null(v);
    ck_assert_str_eq(err, "video frames of 16384x16384 exceed --max-pixels 100000000");
    size_t size;
    uint8_t *d = slurp("data/video/huge_16k.mkv", &size);
    ck_assert_int_eq(gm_video_open_mem(d, size, &o, &v, err, sizeof err), GM_ERR_TOO_LARGE);
    ck_assert_ptr_null(v);
    free(d);

    o.max_pixels = 50000;
    ck_assert_msg(gm_video_open("data/video/sizes.ts", &o, &v, err, sizeof err) == GM_OK, "%s", err);
    gm_video_frame f;
    memset(&f, 0, sizeof f);
    int n = 0, pictures = 0;
    for (int got = 1; n < 40; n++) {
        ck_assert_int_eq(gm_video_read(v, &f, &got), GM_OK);
        if (!got)
            break;
        if (f.status == GM_OK) {
            pictures++;
            ck_assert_int_ge(f.frame, 6);
            ck_assert_int_le((int64_t)f.img.width * f.img.height, 50000);
        } else {
            ck_assert_int_lt(f.frame, 6);
            ck_assert_ptr_null(strchr(f.error, '\n'));
        }
    }
    ck_assert_int_eq(n, 12);
    ck_assert_int_eq(pictures, 6);
    gm_video_frame_free(&f);
    gm_video_close(v);
}
END_TEST

/* gm_image_load reads every still format the command line reads: each of
 * data/formats gives the picture FFmpeg's reader gives (JPEG and PNG by the
 * library's decoders, as ever); a video is "not a still image", for
 * gm_image_load_frame to read; an empty file is "empty file" everywhere. */
START_TEST(test_still_formats)
{
    static const char *files[] = {"data/formats/query.tif", "data/formats/query.webp",
                                  "data/formats/query.bmp", "data/formats/query.pgm",
                                  "data/formats/query_16.pgm", "data/formats/query_12bit_gray.tif",
                                  "data/query.tiff"};
    char err[256];
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        gm_image img;
        ck_assert_msg(gm_image_load(files[k], 0, &img, err, sizeof err) == GM_OK, "%s: %s",
                      files[k], err);
        ck_assert_str_eq(err, "");
        gm_video_frame *a;
        ck_assert_int_eq(read_all(files[k], gm_video_opts_default(), &a), 1);
        expect_same_image(&img, &a[0].img);
        free_items(a, 1);
        gm_image_free(&img);
        /* and over the pixel limit before decoding */
        ck_assert_int_ne(gm_image_load(files[k], 100, &img, err, sizeof err), GM_OK);
        ck_assert_ptr_null(img.data);
    }
    gm_image img;
    ck_assert_int_eq(gm_image_load(CLIP, 0, &img, err, sizeof err), GM_ERR_FORMAT);
    ck_assert_msg(strstr(err, "not a still image") != NULL, "%s", err);
    ck_assert_int_eq(gm_image_load_frame(CLIP, 0, 0, &img, err, sizeof err), GM_OK);
    gm_image_free(&img);

    char empty[] = "/tmp/gm_test_empty_XXXXXX";
    int fd = mkstemp(empty);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(gm_image_load(empty, 0, &img, err, sizeof err), GM_ERR_FORMAT);
    ck_assert_str_eq(err, "empty file");
    ck_assert_int_eq(gm_image_load_frame(empty, 0, 0, &img, err, sizeof err), GM_ERR_FORMAT);
    ck_assert_str_eq(err, "empty file");
    gm_video *v = NULL;
    gm_video_opts o = gm_video_opts_default();
    ck_assert_int_eq(gm_video_open(empty, &o, &v, err, sizeof err), GM_ERR_FORMAT);
    ck_assert_str_eq(err, "empty file");
    ck_assert_int_eq(gm_video_open_mem((const uint8_t *)"", 0, &o, &v, err, sizeof err),
                     GM_ERR_FORMAT);
    ck_assert_str_eq(err, "empty file");
    remove(empty);
}
END_TEST

static Suite *video_suite(void)
{
    Suite *s = suite_create("video");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, test_numbers_and_pts);
    tcase_add_test(tc, test_selection);
    tcase_add_test(tc, test_empty_selection);
    tcase_add_test(tc, test_gray_vs_swscale);
    tcase_add_test(tc, test_limited_row_every_value);
    tcase_add_test(tc, test_decode_threads);
    tcase_add_test(tc, test_not_videos);
    tcase_add_test(tc, test_decoders);
    tcase_add_test(tc, test_match_model);
    tcase_add_test(tc, test_match_sink_pixels);
    tcase_add_test(tc, test_prefetch);
    tcase_add_test(tc, test_read_raw);
    tcase_add_test(tc, test_open_mem);
    tcase_add_test(tc, test_max_pixels);
    tcase_add_test(tc, test_still_formats);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(video_suite());
}
