/* video_none.c: the video API of a library built without FFmpeg
 * (gmatch_video.h): no file is a video, so gm_video_open says why and every
 * other call has nothing to act on.  CMake compiles this file or video.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/video.h"

int gm_video_available(void) { return 0; }

gm_video_opts gm_video_opts_default(void)
{
    gm_video_opts o = {.first = 0, .last = -1, .step = 1, .decode_threads = 0, .workers = 0,
                       .frame_threads = 1, .max_pixels = 0, .decode = GM_VIDEO_DECODE_AUTO,
                       .model = GM_MODEL_REFERENCE};
    return o;
}

void gm_video_log(int verbose) { (void)verbose; }

void gm_video_frame_free(gm_video_frame *f)
{
    if (!f)
        return;
    free(f->img.data);
    memset(f, 0, sizeof *f);
}

gm_status gm_video_open(const char *path, const gm_video_opts *o, gm_video **out, char *err,
                        size_t errlen)
{
    (void)o;
    *out = NULL;
    struct stat sb;
    int empty = path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0;
    if (err && errlen)
        snprintf(err, errlen, "%s", empty ? "empty file" : "not a JPEG or PNG image (this gmatch "
                 "reads no video: built without FFmpeg)");
    return GM_ERR_FORMAT;
}

gm_probe gm_video_probe(const char *path) { return (void)path, GM_PROBE_NONE; }

gm_status gm_video_open_mem(const uint8_t *data, size_t size, const gm_video_opts *o,
                            gm_video **out, char *err, size_t errlen)
{
    (void)data;
    if (size == 0) {
        *out = NULL;
        if (err && errlen)
            snprintf(err, errlen, "empty file");
        return GM_ERR_FORMAT;
    }
    return gm_video_open("", o, out, err, errlen);
}

void gm_video_close(gm_video *v) { (void)v; }
int64_t gm_video_frames_total(const gm_video *v) { return (void)v, -1; }
const char *gm_video_decoder(const gm_video *v) { return (void)v, "none"; }

void gm_video_info(const gm_video *v, int *width, int *height, double *fps)
{
    (void)v;
    *width = *height = 0;
    *fps = 0;
}

gm_status gm_video_read(gm_video *v, gm_video_frame *f, int *got)
{
    (void)v, (void)f;
    *got = 0;
    return GM_ERR_INVALID;
}

gm_status gm_video_read_raw(gm_video *v, gm_video_frame *f, int *got, struct AVFrame **raw)
{
    *raw = NULL;
    return gm_video_read(v, f, got);
}

gm_status gm_video_finish(struct AVFrame **raw, struct SwsContext **sws, gm_video_frame *f)
{
    (void)raw, (void)sws;
    return f->status;
}

void gm_video_sws_free(struct SwsContext **sws) { *sws = NULL; }
void gm_video_raw_free(struct AVFrame **raw) { *raw = NULL; }

int gm_video_lost(const gm_video *v) { return (void)v, 0; }
const char *gm_video_error(const gm_video *v) { return (void)v, ""; }

const gm_video_opts *gm_video_options(const gm_video *v) { return (void)v, NULL; }
gm_video_stats *gm_video_stats_of(gm_video *v) { return (void)v, NULL; }

void gm_video_stats_get(const gm_video *v, gm_video_stats *s)
{
    (void)v;
    memset(s, 0, sizeof *s);
}

gm_status gm_video_prefetch(gm_video *v, int max_items, int64_t max_bytes, const int *stop)
{
    (void)v, (void)max_items, (void)max_bytes, (void)stop;
    return GM_ERR_INVALID;
}
