/* still.c: one picture from a file of any format.  gm_image_load
 * (gmatch.h): the library's own decoders for JPEG and PNG (image.c), and
 * FFmpeg's for the other still formats (TIFF, BMP, WebP, PNM, ...: a file
 * libavformat reads as a single picture); gm_image_load_frame
 * (gmatch_video.h): those, or a frame of a video.  The FFmpeg part goes
 * through the video reader (io/video.h), so a build without FFmpeg compiles
 * this file too: there gm_image_load reads JPEG and PNG, and a video's
 * frame is the reader's "built without FFmpeg". */
#include <stdio.h>
#include <string.h>

#include "gmatch.h"
#include "gmatch_video.h"
#include "io/image.h"
#include "io/video.h"

/* Frame `frame` of what gm_video_open reads at path into *out (GM_OK), or a
 * status with the reason in verr. */
static gm_status ffmpeg_picture(const char *path, int64_t frame, int64_t max_pixels,
                                gm_image *out, char *verr, size_t verrlen)
{
    gm_video_opts o = gm_video_opts_default();
    o.first = frame;
    o.last = frame + 1;
    o.max_pixels = max_pixels;
    o.decode_threads = 1; /* one picture: threads cost more to start than they save */
    gm_video *v = NULL;
    gm_status st = gm_video_open(path, &o, &v, verr, verrlen);
    if (st != GM_OK)
        return st;
    gm_video_frame f;
    memset(&f, 0, sizeof f);
    int got = 0;
    st = gm_video_read(v, &f, &got);
    if (st == GM_OK && !got) {
        st = GM_ERR_CORRUPT;
        snprintf(verr, verrlen, "no frame decoded");
    } else if (st == GM_OK && f.status != GM_OK) {
        st = f.status;
        snprintf(verr, verrlen, "%s", f.error);
    } else if (st == GM_OK) {
        *out = f.img; /* taken over: f no longer owns it */
        memset(&f.img, 0, sizeof f.img);
    }
    gm_video_frame_free(&f);
    gm_video_close(v);
    return st;
}

gm_status gm_image_load(const char *path, int64_t max_pixels, gm_image *out, char *err,
                        size_t errlen)
{
    gm_status st = gm_image_load_jpeg_png(path, max_pixels, out, err, errlen);
    if (st != GM_ERR_FORMAT)
        return st;
    gm_probe kind = gm_video_probe(path);
    if (kind == GM_PROBE_NONE) /* the JPEG and PNG decoders' message */
        return st;
    if (kind == GM_PROBE_OTHER) {
        if (err && errlen)
            snprintf(err, errlen, "not a still image (a video or another container: "
                     "gm_image_load_frame reads a video's frames)");
        return GM_ERR_FORMAT;
    }
    char verr[384] = "";
    st = ffmpeg_picture(path, 0, max_pixels, out, verr, sizeof verr);
    if (err && errlen)
        snprintf(err, errlen, "%s", st == GM_OK ? "" : verr[0] ? verr : gm_status_str(st));
    return st;
}

gm_status gm_image_load_frame(const char *path, int64_t frame, int64_t max_pixels,
                              gm_image *out, char *err, size_t errlen)
{
    char first[256] = "";
    if (out)
        memset(out, 0, sizeof *out);
    if (!path || !out || frame < 0) {
        if (err && errlen)
            snprintf(err, errlen, "invalid argument");
        return GM_ERR_INVALID;
    }
    gm_status st = GM_ERR_FORMAT;
    if (frame == 0) { /* a still */
        st = gm_image_load(path, max_pixels, out, first, sizeof first);
        if (st != GM_ERR_FORMAT) {
            if (err && errlen)
                snprintf(err, errlen, "%s", first);
            return st;
        }
    }
    char verr[384] = "";
    st = ffmpeg_picture(path, frame, max_pixels, out, verr, sizeof verr);
    if (err && errlen) {
        if (st == GM_OK)
            err[0] = '\0';
        else if (st == GM_ERR_FORMAT && !verr[0]) /* neither reads it */
            snprintf(err, errlen, "%s", first[0] ? first : "not an image");
        else
            snprintf(err, errlen, "%s", verr[0] ? verr : gm_status_str(st));
    }
    return st;
}
