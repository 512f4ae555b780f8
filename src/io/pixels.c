/* pixels.c: an image in memory of any layout to the library's 8-bit gray
 * (gmatch.h, gm_image_from_pixels): a numpy array as OpenCV loads it (H x W
 * gray, H x W x 3 BGR, sliced or transposed), an OpenCV Mat, another
 * library's frame.  One pass, strides in bytes of any sign, no copy of the
 * source.
 *
 * 16-bit samples are scaled by their actual range, not by 65535: a camera's
 * 10- or 12-bit data in a 16-bit container would otherwise come out almost
 * black (its high byte is 0..15) and match nothing.  With b the number of
 * bits of the largest sample (at least 8), a gray value v becomes
 * round(v * 255 / (2^b - 1)): 12-bit data spans 0..255, 16-bit data too,
 * and 16-bit samples that never pass 255 are kept as they are. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "io/gray.h"

static gm_status fail(gm_status st, char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return st;
}

static inline uint32_t sample(const uint8_t *p, int bytes)
{
    if (bytes == 1)
        return *p;
    uint16_t v;
    memcpy(&v, p, sizeof v); /* any alignment: a sliced array need not be aligned */
    return v;
}

/* The gray value of the pixel at p, in the samples' own range. */
static inline uint32_t gray_at(const gm_pixels *px, const uint8_t *p)
{
    if (px->channels == 1)
        return sample(p, px->bytes);
    uint32_t c0 = sample(p, px->bytes), c1 = sample(p + px->chan_stride, px->bytes),
             c2 = sample(p + 2 * px->chan_stride, px->bytes);
    return px->bgr ? gm_gray16_from_rgb(c2, c1, c0) : gm_gray16_from_rgb(c0, c1, c2);
}

gm_status gm_image_from_pixels(const gm_pixels *px, int64_t max_pixels, gm_image *out,
                               char *err, size_t errlen)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    if (!px || !out)
        return fail(GM_ERR_INVALID, err, errlen, "invalid argument");
    if (px->channels != 1 && px->channels != 3 && px->channels != 4) {
        char m[96];
        snprintf(m, sizeof m, "%d channels: 1 (gray), 3 (colour) or 4 (colour and alpha) are read",
                 px->channels);
        return fail(GM_ERR_INVALID, err, errlen, m);
    }
    if (px->bytes != 1 && px->bytes != 2)
        return fail(GM_ERR_INVALID, err, errlen, "samples of 1 or 2 bytes (8 or 16 bits) are read");
    if (px->width < 0 || px->height < 0)
        return fail(GM_ERR_INVALID, err, errlen, "negative width or height");
    if (px->width == 0 || px->height == 0)
        return fail(GM_ERR_EMPTY, err, errlen, "image has zero width or height");
    if (!px->data)
        return fail(GM_ERR_INVALID, err, errlen, "no pixel data");
    int64_t lim = max_pixels > 0 ? max_pixels : GM_DEFAULT_MAX_PIXELS;
    if ((int64_t)px->width * px->height > lim) {
        char m[160];
        snprintf(m, sizeof m, "image is %dx%d pixels, over the limit of %lld", px->width,
                 px->height, (long long)lim);
        return fail(GM_ERR_TOO_LARGE, err, errlen, m);
    }
    const int w = px->width, h = px->height;
    uint8_t *dst = malloc((size_t)w * (size_t)h);
    if (!dst)
        return fail(GM_ERR_NOMEM, err, errlen, "out of memory");
    const uint8_t *base = px->data;
    uint32_t scale_num = 1, scale_den = 1; /* 8-bit: as they are */
    if (px->bytes == 2) {
        uint32_t top = 0;
        for (int y = 0; y < h; y++) {
            const uint8_t *row = base + (ptrdiff_t)y * px->row_stride;
            for (int x = 0; x < w; x++)
                for (int c = 0; c < (px->channels == 1 ? 1 : 3); c++) {
                    uint32_t v = sample(row + (ptrdiff_t)x * px->col_stride +
                                            (ptrdiff_t)c * px->chan_stride, 2);
                    top = v > top ? v : top;
                }
        }
        scale_num = 255;
        scale_den = (1u << gm_range_bits(top)) - 1;
    }
    for (int y = 0; y < h; y++) {
        const uint8_t *row = base + (ptrdiff_t)y * px->row_stride;
        uint8_t *o = dst + (size_t)y * w;
        if (px->bytes == 1 && px->channels == 1 && px->col_stride == 1) {
            memcpy(o, row, (size_t)w);
            continue;
        }
        for (int x = 0; x < w; x++) {
            uint32_t v = gray_at(px, row + (ptrdiff_t)x * px->col_stride);
            o[x] = (uint8_t)(px->bytes == 1 ? v : (v * scale_num + scale_den / 2) / scale_den);
        }
    }
    out->data = dst;
    out->width = w;
    out->height = h;
    out->stride = w;
    return GM_OK;
}
