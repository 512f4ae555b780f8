/* still.c: one picture from a file of any format (gmatch_video.h,
 * gm_image_load_frame): the library's own decoders for JPEG and PNG, and
 * FFmpeg's for the rest (TIFF, BMP, WebP, PNM, GIF, ...) and for a frame of
 * a video.  Written on the public video reader alone, so a build without
 * FFmpeg compiles it too and answers with the reader's "built without
 * FFmpeg". */
#include <stdio.h>
#include <string.h>

#include "gmatch.h"
#include "gmatch_video.h"

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
    if (frame == 0) {
        st = gm_image_load(path, max_pixels, out, first, sizeof first);
        if (st != GM_ERR_FORMAT) {
            if (err && errlen)
                snprintf(err, errlen, "%s", first);
            return st;
        }
    }
    char verr[384] = "";
    gm_video_opts o = gm_video_opts_default();
    o.first = frame;
    o.last = frame + 1;
    o.max_pixels = max_pixels;
    o.decode_threads = 1; /* one picture: threads cost more to start than they save */
    gm_video *v = NULL;
    st = gm_video_open(path, &o, &v, verr, sizeof verr);
    if (st == GM_OK) {
        gm_video_frame f;
        memset(&f, 0, sizeof f);
        int got = 0;
        st = gm_video_read(v, &f, &got);
        if (st == GM_OK && !got) {
            st = GM_ERR_CORRUPT;
            snprintf(verr, sizeof verr, "no frame decoded");
        } else if (st == GM_OK && f.status != GM_OK) {
            st = f.status;
            snprintf(verr, sizeof verr, "%s", f.error);
        } else if (st == GM_OK) {
            *out = f.img; /* taken over: f no longer owns it */
            memset(&f.img, 0, sizeof f.img);
        }
        gm_video_frame_free(&f);
        gm_video_close(v);
    }
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
