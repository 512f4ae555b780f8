/* bench_decode.c: video decoding alone, CPU against NVDEC, in frames per
 * second, through gmatch's own reader (gm_video_read: decode, NVDEC's copy
 * to host memory, gray conversion), so the figures are what the matcher
 * threads are fed; and a check that both decoders give the same frames.
 *
 * usage: bench_decode [-r REPS] [-t LIST] [-c] VIDEO...
 *   -r REPS  timed runs per decoder, the fastest kept (default 3)
 *   -t LIST  CPU decoder threads, comma separated, 0 = all cores (default
 *            "0"); fewer threads stand for cores busy matching
 *   -c       also compare: frame numbers, status, pts and gray pixels of
 *            --decode cpu against --decode nvdec, frame by frame
 * Columns: video, size, frames, decoder, fps (best of REPS, opening
 * excluded), open ms (opening: NVDEC's includes the CUDA device).  An
 * unavailable NVDEC prints its reason and exits 1 after the CPU rows.
 */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "io/video.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static gm_video *open_or_say(const char *path, gm_video_decode dec, int threads)
{
    gm_video_opts o = gm_video_opts_default();
    o.decode = dec, o.decode_threads = threads;
    gm_video *v;
    char err[256];
    if (gm_video_open(path, &o, &v, err, sizeof err) != GM_OK) {
        fprintf(stderr, "bench_decode: %s: %s\n", path, err);
        return NULL;
    }
    return v;
}

/* One run: every frame of path.  Returns frames read, -1 on failure; *fps
 * over the reading, *open_ms the opening. */
static int64_t run_once(const char *path, gm_video_decode dec, int threads, double *fps,
                        double *open_ms, char *decoder, size_t len)
{
    double t0 = now_ms();
    gm_video *v = open_or_say(path, dec, threads);
    if (!v)
        return -1;
    double t1 = now_ms();
    gm_video_frame f;
    memset(&f, 0, sizeof f);
    int64_t n = 0;
    int got = 1;
    while (got && gm_video_read(v, &f, &got) == GM_OK)
        n += got && f.status == GM_OK;
    double t2 = now_ms();
    *open_ms = t1 - t0;
    *fps = t2 > t1 ? (double)n * 1e3 / (t2 - t1) : 0.0;
    snprintf(decoder, len, "%s", gm_video_decoder(v));
    if (gm_video_lost(v))
        fprintf(stderr, "bench_decode: %s: %s\n", path, gm_video_error(v));
    gm_video_frame_free(&f);
    gm_video_close(v);
    return n;
}

/* Best of reps; one row.  Returns 0, or -1 when the decoder would not open. */
static int bench(const char *path, gm_video_decode dec, int threads, int reps)
{
    double best = 0, best_open = 1e30;
    int64_t n = -1;
    char decoder[256] = "";
    for (int r = 0; r < reps; r++) {
        double fps, open_ms;
        n = run_once(path, dec, threads, &fps, &open_ms, decoder, sizeof decoder);
        if (n < 0)
            return -1;
        best = fps > best ? fps : best;
        best_open = open_ms < best_open ? open_ms : best_open;
    }
    gm_video *v = open_or_say(path, GM_VIDEO_DECODE_CPU, 1);
    int w = 0, h = 0;
    double rate;
    if (v) {
        gm_video_info(v, &w, &h, &rate);
        gm_video_close(v);
    }
    const char *base = strrchr(path, '/');
    char label[32];
    if (dec == GM_VIDEO_DECODE_NVDEC)
        snprintf(label, sizeof label, "nvdec");
    else
        snprintf(label, sizeof label, "cpu x%d", threads > 0 ? threads : omp_get_num_procs());
    printf("%-16s %5dx%-5d %6" PRId64 "  %-9s %9.1f %9.1f  %s\n", base ? base + 1 : path, w, h, n,
           label, best, best_open, decoder);
    fflush(stdout);
    return 0;
}

/* Lockstep: the same items from both decoders?  Prints one line; 0 when
 * equal (numbers, status, pts; pixels: the largest difference is printed). */
static int compare(const char *path)
{
    gm_video *a = open_or_say(path, GM_VIDEO_DECODE_CPU, 0);
    gm_video *b = a ? open_or_say(path, GM_VIDEO_DECODE_NVDEC, 0) : NULL;
    if (!b) {
        gm_video_close(a);
        return -1;
    }
    gm_video_frame fa, fb;
    memset(&fa, 0, sizeof fa), memset(&fb, 0, sizeof fb);
    int64_t n = 0, bad = 0, pix_frames = 0;
    int maxdiff = 0;
    for (;;) {
        int ga = 0, gb = 0;
        if (gm_video_read(a, &fa, &ga) != GM_OK || gm_video_read(b, &fb, &gb) != GM_OK) {
            bad++;
            break;
        }
        if (ga != gb) {
            bad++;
            break;
        }
        if (!ga)
            break;
        n++;
        if (fa.frame != fb.frame || fa.status != fb.status || fa.has_pts != fb.has_pts ||
            (fa.has_pts && fa.pts_s != fb.pts_s)) {
            if (bad++ < 3)
                printf("  %s: item %" PRId64 ": cpu frame %" PRId64 " status %d pts %.6f, nvdec "
                       "frame %" PRId64 " status %d pts %.6f\n", path, n - 1, fa.frame, fa.status,
                       fa.pts_s, fb.frame, fb.status, fb.pts_s);
            continue;
        }
        if (fa.status != GM_OK)
            continue;
        if (fa.img.width != fb.img.width || fa.img.height != fb.img.height) {
            bad++;
            continue;
        }
        int m = 0;
        for (size_t i = 0; i < (size_t)fa.img.width * (size_t)fa.img.height; i++) {
            int d = abs((int)fa.img.data[i] - (int)fb.img.data[i]);
            m = d > m ? d : m;
        }
        pix_frames += m > 0;
        maxdiff = m > maxdiff ? m : maxdiff;
    }
    int lost_same = gm_video_lost(a) == gm_video_lost(b);
    printf("compare %s: %" PRId64 " items, %" PRId64 " differ in number/status/pts, "
           "%" PRId64 " differ in pixels (max %d levels), damage report %s [cpu '%s' nvdec '%s'] "
           "(nvdec: %s)\n", path, n, bad, pix_frames, maxdiff, lost_same ? "same" : "DIFFERS",
           gm_video_error(a), gm_video_error(b), gm_video_decoder(b));
    gm_video_frame_free(&fa), gm_video_frame_free(&fb);
    gm_video_close(a), gm_video_close(b);
    return bad || !lost_same ? 1 : 0;
}

int main(int argc, char **argv)
{
    int reps = 3, cmp = 0, c;
    const char *tlist = "0";
    while ((c = getopt(argc, argv, "r:t:c")) != -1) {
        if (c == 'r')
            reps = atoi(optarg) > 0 ? atoi(optarg) : 1;
        else if (c == 't')
            tlist = optarg;
        else if (c == 'c')
            cmp = 1;
        else
            return 2;
    }
    if (optind >= argc) {
        fprintf(stderr, "usage: bench_decode [-r REPS] [-t LIST] [-c] VIDEO...\n");
        return 2;
    }
    printf("%-16s %11s %6s  %-9s %9s %9s  %s\n", "video", "size", "frames", "decoder", "fps",
           "open ms", "(what ran)");
    int rc = 0;
    for (int i = optind; i < argc; i++) {
        char *list = strdup(tlist);
        for (char *t = strtok(list, ","); t; t = strtok(NULL, ","))
            if (bench(argv[i], GM_VIDEO_DECODE_CPU, atoi(t), reps) != 0)
                rc = 1;
        free(list);
        if (bench(argv[i], GM_VIDEO_DECODE_NVDEC, 0, reps) != 0)
            rc = 1;
        else if (cmp && compare(argv[i]) != 0)
            rc = 1;
    }
    return rc;
}
