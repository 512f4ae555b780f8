/* png_write.c: an RGB picture to a PNG file (gmatch.h, gm_rgb_write_png),
 * through libpng, errors through setjmp into a one-line message. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <png.h>

#include "gmatch.h"

typedef struct {
    jmp_buf jb;
    char msg[160];
} png_err;

static void on_error(png_structp png, png_const_charp msg)
{
    png_err *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    longjmp(e->jb, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg;
}

gm_status gm_rgb_write_png(const gm_rgb *img, const char *path, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!img || !img->data || img->width <= 0 || img->height <= 0 || !path) {
        if (err && errlen)
            snprintf(err, errlen, "invalid argument");
        return GM_ERR_INVALID;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "cannot open for writing: %s", strerror(errno));
        return GM_ERR_IO;
    }
    png_err e = {.msg = ""};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    gm_status st = GM_OK;
    if (!png || !info) {
        st = GM_ERR_NOMEM;
        snprintf(e.msg, sizeof e.msg, "out of memory");
    } else if (setjmp(e.jb)) {
        st = GM_ERR_IO;
    } else {
        png_init_io(png, f);
        png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
                     PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        png_set_compression_level(png, 6);
        png_write_info(png, info);
        for (int y = 0; y < img->height; y++)
            png_write_row(png, img->data + (ptrdiff_t)y * img->stride);
        png_write_end(png, NULL);
    }
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    /* a full disk shows at the flush and the close */
    if (fflush(f) != 0 || ferror(f)) {
        if (st == GM_OK)
            snprintf(e.msg, sizeof e.msg, "write error: %s", strerror(errno));
        st = GM_ERR_IO;
    }
    if (fclose(f) != 0 && st == GM_OK) {
        snprintf(e.msg, sizeof e.msg, "write error: %s", strerror(errno));
        st = GM_ERR_IO;
    }
    if (st != GM_OK && err && errlen)
        snprintf(err, errlen, "%s", e.msg[0] ? e.msg : gm_status_str(st));
    return st;
}
