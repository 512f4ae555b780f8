/* image.c: JPEG and PNG decoding to packed 8-bit gray (stride == width).
 *
 * The format is sniffed from the first bytes, never from the file name.
 * Files are streamed through libjpeg / libpng; the bytes read for sniffing are
 * replayed to the decoder, so a pipe works and a huge file is never slurped.
 * Both libraries report errors through setjmp/longjmp into handlers here: they
 * never print and never exit.  The header's dimensions are checked against
 * max_pixels before any pixel buffer is allocated.
 *
 * Gray conversion, the same for both formats so that a PNG and a JPEG of the
 * same colours give the same gray:
 *   RGB   -> (19595 R + 38470 G + 7471 B + 32768) >> 16, libjpeg's integer
 *            BT.601 weights (the weights sum to 65536, so white stays 255);
 *   alpha and tRNS are ignored, gAMA and iCCP are ignored: OpenCV's
 *   IMREAD_GRAYSCALE does the same;
 *   16-bit PNG samples are scaled by their actual range (io/gray.h: the
 *   bits of the largest sample), not cut to their high byte: a 10- or
 *   12-bit image in a 16-bit container comes out full range, not nearly
 *   black (OpenCV keeps the high byte);
 *   CMYK  -> RGB = (255 - ink) * (255 - K) / 255, then the weights above.
 */
#define _POSIX_C_SOURCE 200809L /* fileno, fstat, strerror_r under -std=c11 */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "common/common.h"
#include "io/gray.h"
#include "io/image.h"

#if defined(__GNUC__)
#define GM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GM_PRINTF(f, a)
#endif

/* Bytes read before choosing a decoder: the PNG signature (8) and the IHDR
 * chunk up to its height field (16), so that the size is checked even for a
 * file that ends right after its IHDR. */
#define GM_HEAD_BYTES 24

/* A real progressive JPEG has about 10 scans (libjpeg's default script has
 * 10).  Crafted files with thousands of tiny scans cost a full pass over the
 * coefficients each; libjpeg-turbo's djpeg -maxscans exists for this. */
#define GM_JPEG_MAX_SCANS 500

/* libjpeg reads files in chunks of this many BYTES (jpeg_stdio_src: 4096). */
#define GM_JPEG_READ_BYTES 16384

/* Largest single ancillary chunk libpng may allocate, in BYTES (libpng's
 * default is 8 MB): large enough for any real iCCP or text chunk, small
 * enough that a forged chunk length cannot allocate gigabytes. */
#define GM_PNG_CHUNK_MAX ((png_alloc_size_t)16 * 1024 * 1024)

static const uint8_t gm_png_signature[8] = {137, 80, 78, 71, 13, 10, 26, 10};

/* ---- input: a FILE* or a memory block, with the sniffed head replayed ---- */

typedef struct {
    FILE *f;                     /* file input, or NULL for memory input */
    const uint8_t *mem;          /* memory input */
    size_t size;                 /* memory input: its size in bytes */
    size_t pos;                  /* bytes handed to the decoder so far */
    uint8_t head[GM_HEAD_BYTES]; /* the first bytes, for sniffing */
    size_t head_len;
    int read_errno;              /* errno of a failed read, 0 if none */
} gm_input;

/* Up to n bytes into buf; fewer only at the end of the input or on a read
 * error (then read_errno is set). */
static size_t gm_input_read(gm_input *in, uint8_t *buf, size_t n)
{
    size_t k = 0;
    if (!in->f) {
        k = in->size - in->pos < n ? in->size - in->pos : n;
        if (k)
            memcpy(buf, in->mem + in->pos, k);
        in->pos += k;
        return k;
    }
    if (in->pos < in->head_len) {
        k = in->head_len - in->pos < n ? in->head_len - in->pos : n;
        memcpy(buf, in->head + in->pos, k);
        in->pos += k;
    }
    if (k < n && !in->read_errno) {
        errno = 0;
        size_t r = fread(buf + k, 1, n - k, in->f);
        if (r < n - k && ferror(in->f))
            in->read_errno = errno ? errno : EIO;
        k += r;
        in->pos += r;
    }
    return k;
}

/* ---- decoding state shared by both formats -------------------------------- */

typedef struct {
    gm_input in;
    int64_t max_pixels;
    gm_image img;       /* the result being built; freed on failure */
    uint8_t *scratch;   /* one decoded PNG row; freed at the end */
    uint16_t *gray16;   /* a 16-bit PNG's gray before its range is known; freed at the end */
    gm_status status;
    char msg[256];      /* one line, no file name */
    char warning[128];  /* libpng's last warning: detail for "Invalid IHDR data" */
    int png_in_rows;    /* set while PNG pixel rows are read */
    char row_warning[128]; /* the first libpng warning about the pixel data */
} gm_dec;

GM_PRINTF(3, 4)
static gm_status gm_dec_fail(gm_dec *d, gm_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    d->status = st;
    return st;
}

/* GM_ERR_IO with strerror's text (thread-safe strerror_r). */
static gm_status gm_dec_fail_errno(gm_dec *d, int e, const char *prefix)
{
    char buf[128];
    if (e == EISDIR)
        return gm_dec_fail(d, GM_ERR_IO, "is a directory");
    if (strerror_r(e, buf, sizeof buf) != 0)
        snprintf(buf, sizeof buf, "error %d", e);
    return gm_dec_fail(d, GM_ERR_IO, "%s%s", prefix, buf);
}

/* The header's dimensions against the limit; called before any pixel buffer
 * exists, so a forged header costs nothing. */
static gm_status gm_dec_check_size(gm_dec *d, uint64_t w, uint64_t h)
{
    size_t n;
    if (w == 0 || h == 0)
        return gm_dec_fail(d, GM_ERR_EMPTY, "image has zero width or height");
    /* w, h < 2^32 (both formats store 32 bits at most): no overflow. */
    if (w * h > (uint64_t)d->max_pixels)
        return gm_dec_fail(d, GM_ERR_TOO_LARGE,
                           "image is %llux%llu pixels, over the limit of %lld (--max-pixels)",
                           (unsigned long long)w, (unsigned long long)h,
                           (long long)d->max_pixels);
    if (w > INT_MAX || h > INT_MAX || !gm_mul_ok((size_t)w, (size_t)h, &n))
        return gm_dec_fail(d, GM_ERR_TOO_LARGE,
                           "image is %llux%llu pixels, too large to address",
                           (unsigned long long)w, (unsigned long long)h);
    return GM_OK;
}

/* The w x h output, packed; after gm_dec_check_size, so w*h cannot overflow. */
static gm_status gm_dec_alloc(gm_dec *d, int w, int h)
{
    d->img.data = malloc((size_t)w * (size_t)h);
    if (!d->img.data)
        return gm_dec_fail(d, GM_ERR_NOMEM, "out of memory for a %dx%d image", w, h);
    d->img.width = w;
    d->img.height = h;
    d->img.stride = w;
    return GM_OK;
}

/* round(a * b / 255) for a, b in 0..255, exactly, without a division. */
static inline unsigned gm_mul_div255(unsigned a, unsigned b)
{
    unsigned t = a * b + 128u;
    return (t + (t >> 8)) >> 8;
}

/* ---- JPEG ------------------------------------------------------------------ */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    gm_dec *d;
} gm_jpeg_err;

typedef struct {
    struct jpeg_source_mgr pub;
    gm_input *in;
    JOCTET buf[GM_JPEG_READ_BYTES];
} gm_jpeg_src;

typedef struct {
    struct jpeg_decompress_struct cinfo;
    gm_jpeg_err err;
    struct jpeg_progress_mgr progress;
} gm_jpeg;

/* Record the failure and leave libjpeg through the setjmp in gm_jpeg_decode_run. */
_Noreturn static void gm_jpeg_fail(j_common_ptr cinfo, gm_status st, const char *msg)
{
    gm_jpeg_err *e = (gm_jpeg_err *)cinfo->err;
    gm_dec_fail(e->d, st, "%s", msg);
    longjmp(e->jb, 1);
}

static void gm_jpeg_error_exit(j_common_ptr cinfo)
{
    char buf[JMSG_LENGTH_MAX];
    gm_status st = GM_ERR_CORRUPT;
    (*cinfo->err->format_message)(cinfo, buf);
    switch (cinfo->err->msg_code) {
    case JERR_OUT_OF_MEMORY:
        st = GM_ERR_NOMEM;
        break;
    case JERR_NO_BACKING_STORE: /* over max_memory_to_use (jmemnobs has no temp files) */
        gm_jpeg_fail(cinfo, GM_ERR_NOMEM, "JPEG decoder memory limit exceeded");
        break;
    case JERR_EMPTY_IMAGE:
        gm_jpeg_fail(cinfo, GM_ERR_EMPTY, "image has zero width or height");
        break;
    case JERR_BAD_PRECISION:   /* 12- and 16-bit JPEGs */
    case JERR_SOF_UNSUPPORTED: /* lossless, hierarchical */
    case JERR_NOT_COMPILED:
    case JERR_CONVERSION_NOTIMPL:
        st = GM_ERR_UNSUPPORTED;
        break;
    default:
        break;
    }
    gm_jpeg_fail(cinfo, st, buf);
}

/* libjpeg recovers from corrupt data with a warning and fills the rest of the
 * image with gray; a half-gray image would be a silent wrong answer, so the
 * warnings that mean missing or damaged pixels are errors here. */
static void gm_jpeg_emit_message(j_common_ptr cinfo, int level)
{
    char buf[JMSG_LENGTH_MAX];
    if (level >= 0)
        return; /* trace messages */
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
        gm_jpeg_fail(cinfo, GM_ERR_CORRUPT, "truncated JPEG data");
        break;
    case JWRN_EXTRANEOUS_DATA:
        /* Padding before EOI is common in camera files and harmless: every
         * pixel was decoded.  Before any other marker it means a damaged
         * entropy-coded segment. */
        if (cinfo->err->msg_parm.i[1] == JPEG_EOI)
            return;
        break;
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_BOGUS_PROGRESSION:
        break;
    default:
        return; /* JFIF version, Adobe transform code, ...: the pixels are right */
    }
    (*cinfo->err->format_message)(cinfo, buf);
    gm_jpeg_fail(cinfo, GM_ERR_CORRUPT, buf);
}

static void gm_jpeg_output_message(j_common_ptr cinfo)
{
    (void)cinfo; /* the library never prints */
}

static void gm_jpeg_progress(j_common_ptr cinfo)
{
    j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
    if (dinfo->input_scan_number > GM_JPEG_MAX_SCANS) {
        char buf[64];
        snprintf(buf, sizeof buf, "JPEG has more than %d scans", GM_JPEG_MAX_SCANS);
        gm_jpeg_fail(cinfo, GM_ERR_CORRUPT, buf);
    }
}

/* A FILE* source like jpeg_stdio_src, but it first replays the sniffed head
 * (so pipes work without seeking) and reports read errors as GM_ERR_IO. */
static void gm_jpeg_src_init(j_decompress_ptr cinfo)
{
    (void)cinfo;
}

static boolean gm_jpeg_src_fill(j_decompress_ptr cinfo)
{
    gm_jpeg_src *s = (gm_jpeg_src *)cinfo->src;
    size_t n = gm_input_read(s->in, s->buf, sizeof s->buf);
    if (n == 0) {
        if (s->in->read_errno) {
            gm_dec *d = ((gm_jpeg_err *)cinfo->err)->d;
            gm_dec_fail_errno(d, s->in->read_errno, "read error: ");
            longjmp(((gm_jpeg_err *)cinfo->err)->jb, 1);
        }
        /* As jpeg_stdio_src: warn (an error in our handler), and should the
         * handler return, end the data with a fake EOI. */
        WARNMS(cinfo, JWRN_JPEG_EOF);
        s->buf[0] = 0xFF;
        s->buf[1] = JPEG_EOI;
        n = 2;
    }
    s->pub.next_input_byte = s->buf;
    s->pub.bytes_in_buffer = n;
    return TRUE;
}

static void gm_jpeg_src_skip(j_decompress_ptr cinfo, long num_bytes)
{
    struct jpeg_source_mgr *src = cinfo->src;
    if (num_bytes <= 0)
        return;
    while (num_bytes > (long)src->bytes_in_buffer) {
        num_bytes -= (long)src->bytes_in_buffer;
        (void)(*src->fill_input_buffer)(cinfo);
    }
    src->next_input_byte += num_bytes;
    src->bytes_in_buffer -= (size_t)num_bytes;
}

static void gm_jpeg_src_term(j_decompress_ptr cinfo)
{
    (void)cinfo;
}

/* One CMYK scanline to gray.  Adobe (Photoshop) JPEGs store the samples
 * inverted (255 = no ink), and libjpeg hands them over as stored. */
static void gm_cmyk_row_to_gray(const JSAMPLE *src, uint8_t *dst, size_t n, int inverted)
{
    for (size_t i = 0; i < n; i++, src += 4) {
        unsigned c = src[0], m = src[1], y = src[2], k = src[3];
        if (!inverted) {
            c = 255 - c;
            m = 255 - m;
            y = 255 - y;
            k = 255 - k;
        }
        dst[i] = gm_gray_from_rgb(gm_mul_div255(c, k), gm_mul_div255(m, k), gm_mul_div255(y, k));
    }
}

/* Called from gm_jpeg_decode only: d and j point into the caller's frame and
 * are never modified here, so they are valid after longjmp (C11 7.13.2.1). */
static gm_status gm_jpeg_decode_run(gm_dec *d, gm_jpeg *j)
{
    struct jpeg_decompress_struct *ci = &j->cinfo;
    ci->err = jpeg_std_error(&j->err.pub);
    j->err.pub.error_exit = gm_jpeg_error_exit;
    j->err.pub.emit_message = gm_jpeg_emit_message;
    j->err.pub.output_message = gm_jpeg_output_message;
    j->err.d = d;
    if (setjmp(j->err.jb))
        return d->status != GM_OK ? d->status : GM_ERR_CORRUPT;

    jpeg_create_decompress(ci);
    j->progress.progress_monitor = gm_jpeg_progress;
    ci->progress = &j->progress;
    /* Progressive JPEGs hold every DCT coefficient: 2 bytes a sample, up to 4
     * full-resolution components, so 8 bytes a pixel plus working buffers.
     * Past that libjpeg fails instead of growing without bound. */
    {
        const int64_t slack = (int64_t)64 << 20;
        int64_t lim = d->max_pixels > (INT64_MAX - slack) / 8 ? INT64_MAX
                                                              : d->max_pixels * 8 + slack;
        ci->mem->max_memory_to_use = lim > LONG_MAX ? LONG_MAX : (long)lim;
    }

    if (d->in.f) {
        gm_jpeg_src *s = (gm_jpeg_src *)(*ci->mem->alloc_small)((j_common_ptr)ci,
                                                                JPOOL_PERMANENT, sizeof *s);
        s->pub.init_source = gm_jpeg_src_init;
        s->pub.fill_input_buffer = gm_jpeg_src_fill;
        s->pub.skip_input_data = gm_jpeg_src_skip;
        s->pub.resync_to_restart = jpeg_resync_to_restart;
        s->pub.term_source = gm_jpeg_src_term;
        s->pub.next_input_byte = NULL;
        s->pub.bytes_in_buffer = 0;
        s->in = &d->in;
        ci->src = &s->pub;
    } else {
#if SIZE_MAX > ULONG_MAX
        if (d->in.size > ULONG_MAX)
            gm_jpeg_fail((j_common_ptr)ci, GM_ERR_TOO_LARGE, "JPEG data too large");
#endif
        jpeg_mem_src(ci, d->in.mem, (unsigned long)d->in.size);
    }

    jpeg_read_header(ci, TRUE);
    if (gm_dec_check_size(d, ci->image_width, ci->image_height) != GM_OK)
        longjmp(j->err.jb, 1);

    int cmyk = 0;
    switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB: /* libjpeg-turbo converts RGB to gray with the same weights */
        ci->out_color_space = JCS_GRAYSCALE;
        break;
    case JCS_CMYK:
    case JCS_YCCK: /* libjpeg turns YCCK into CMYK; gray is ours */
        ci->out_color_space = JCS_CMYK;
        cmyk = 1;
        break;
    default: {
        char buf[80];
        snprintf(buf, sizeof buf, "unsupported JPEG colour space (%d components)",
                 ci->num_components);
        gm_jpeg_fail((j_common_ptr)ci, GM_ERR_UNSUPPORTED, buf);
    }
    }

    jpeg_start_decompress(ci);
    if (ci->output_width != ci->image_width || ci->output_height != ci->image_height ||
        ci->output_components != (cmyk ? 4 : 1))
        gm_jpeg_fail((j_common_ptr)ci, GM_ERR_UNSUPPORTED, "unexpected JPEG decoder output");
    int w = (int)ci->output_width, h = (int)ci->output_height;
    if (gm_dec_alloc(d, w, h) != GM_OK)
        longjmp(j->err.jb, 1);

    if (cmyk) {
        /* From libjpeg's pool: freed by jpeg_destroy_decompress, even on error. */
        JSAMPARRAY row = (*ci->mem->alloc_sarray)((j_common_ptr)ci, JPOOL_IMAGE,
                                                  ci->output_width * 4, 1);
        while (ci->output_scanline < ci->output_height) {
            size_t y = ci->output_scanline;
            if (jpeg_read_scanlines(ci, row, 1) != 1)
                gm_jpeg_fail((j_common_ptr)ci, GM_ERR_CORRUPT, "JPEG decoder returned no rows");
            gm_cmyk_row_to_gray(row[0], d->img.data + y * (size_t)w, (size_t)w,
                                ci->saw_Adobe_marker);
        }
    } else {
        /* Straight into the image, several rows a call (fewer calls into
         * libjpeg's row machinery). */
        while (ci->output_scanline < ci->output_height) {
            JSAMPROW rows[16];
            JDIMENSION y = ci->output_scanline, n = ci->output_height - y;
            if (n > 16)
                n = 16;
            for (JDIMENSION i = 0; i < n; i++)
                rows[i] = d->img.data + (size_t)(y + i) * (size_t)w;
            if (jpeg_read_scanlines(ci, rows, n) == 0)
                gm_jpeg_fail((j_common_ptr)ci, GM_ERR_CORRUPT, "JPEG decoder returned no rows");
        }
    }
    /* Reads on to EOI: a file cut short after the last row is still an error,
     * as it is for PNG. */
    jpeg_finish_decompress(ci);
    return GM_OK;
}

static gm_status gm_jpeg_decode(gm_dec *d)
{
    gm_jpeg j;
    memset(&j, 0, sizeof j);
    gm_status st = gm_jpeg_decode_run(d, &j);
    /* Safe after any failure: a struct whose creation failed has mem == NULL. */
    jpeg_destroy_decompress(&j.cinfo);
    return st;
}

/* ---- PNG -------------------------------------------------------------------- */

typedef struct {
    png_structp png;
    png_infop info;
} gm_png;

static void gm_png_error(png_structp png, png_const_charp msg)
{
    gm_dec *d = png_get_error_ptr(png);
    if (d->status == GM_OK) { /* else gm_png_read already said why */
        gm_status st = GM_ERR_CORRUPT;
        if (strstr(msg, "ut of memory") || strstr(msg, "nsufficient memory"))
            st = GM_ERR_NOMEM;
        /* libpng explains a bad IHDR in a warning just before this error. */
        if (strcmp(msg, "Invalid IHDR data") == 0 && d->warning[0])
            gm_dec_fail(d, st, "%s: %s", msg, d->warning);
        else
            gm_dec_fail(d, st, "%s", msg);
    }
    png_longjmp(png, 1);
}

/* libpng only warns about zlib errors it meets after the last row, the
 * ADLER32 check among them; for us they mean damaged pixels, and they are
 * turned into errors after the rows.  Data past the end of the image ("Extra
 * compressed data", "Too much image data") leaves every pixel right and stays
 * a warning: buggy encoders write it and every viewer shows such files. */
static void gm_png_warning(png_structp png, png_const_charp msg)
{
    gm_dec *d = png_get_error_ptr(png);
    snprintf(d->warning, sizeof d->warning, "%s", msg);
    if (d->png_in_rows && !d->row_warning[0] && !strstr(msg, "Extra compressed data") &&
        !strstr(msg, "Too much image data"))
        snprintf(d->row_warning, sizeof d->row_warning, "%s", msg);
}

static void gm_png_read(png_structp png, png_bytep buf, size_t n)
{
    gm_dec *d = png_get_io_ptr(png);
    if (gm_input_read(&d->in, buf, n) == n)
        return;
    if (d->in.read_errno)
        gm_dec_fail_errno(d, d->in.read_errno, "read error: ");
    else
        gm_dec_fail(d, GM_ERR_CORRUPT, "truncated PNG data");
    png_error(png, d->msg);
}

/* n pixels of ch interleaved 8-bit channels (gray, gray+alpha, RGB, RGBA) to
 * gray, written every `step` bytes of dst (step > 1 for Adam7 passes). */
static void gm_png_row_to_gray(const uint8_t *src, int ch, size_t n, uint8_t *dst, size_t step)
{
    if (ch <= 2) {
        for (size_t i = 0; i < n; i++)
            dst[i * step] = src[i * (size_t)ch];
    } else {
        for (size_t i = 0; i < n; i++, src += ch)
            dst[i * step] = gm_gray_from_rgb(src[0], src[1], src[2]);
    }
}

/* The same for 16-bit samples (native order) into 16-bit gray, raising
 * *top to the largest sample seen. */
static void gm_png_row_to_gray16(const uint16_t *src, int ch, size_t n, uint16_t *dst, size_t step,
                                 uint32_t *top)
{
    uint32_t t = *top;
    if (ch <= 2) {
        for (size_t i = 0; i < n; i++) {
            uint32_t v = src[i * (size_t)ch];
            t = v > t ? v : t;
            dst[i * step] = (uint16_t)v;
        }
    } else {
        for (size_t i = 0; i < n; i++, src += ch) {
            uint32_t m = src[0] > src[1] ? src[0] : src[1];
            m = src[2] > m ? src[2] : m;
            t = m > t ? m : t;
            dst[i * step] = (uint16_t)gm_gray16_from_rgb(src[0], src[1], src[2]);
        }
    }
    *top = t;
}

/* One decoded row (or Adam7 pass row) into the gray image at y, columns
 * x0, x0 + step, ...: 8-bit rows to the image, 16-bit rows to d->gray16. */
static void gm_png_put_row(gm_dec *d, int ch, int depth16, size_t n, size_t y, size_t x0,
                           size_t step, uint32_t *top)
{
    size_t at = y * (size_t)d->img.width + x0;
    if (depth16)
        gm_png_row_to_gray16((const uint16_t *)d->scratch, ch, n, d->gray16 + at, step, top);
    else
        gm_png_row_to_gray(d->scratch, ch, n, d->img.data + at, step);
}

/* Same setjmp discipline as gm_jpeg_decode_run. */
static gm_status gm_png_decode_run(gm_dec *d, gm_png *p)
{
    p->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, gm_png_error, gm_png_warning);
    if (!p->png)
        return gm_dec_fail(d, GM_ERR_NOMEM, "out of memory");
    p->info = png_create_info_struct(p->png);
    if (!p->info)
        return gm_dec_fail(d, GM_ERR_NOMEM, "out of memory");
    if (setjmp(png_jmpbuf(p->png)))
        return d->status != GM_OK ? d->status : GM_ERR_CORRUPT;

    /* libpng's own 1,000,000-pixel-a-side limit would turn a large image into
     * "corrupt"; max_pixels is the limit, checked below. */
    png_set_user_limits(p->png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
    png_set_chunk_malloc_max(p->png, GM_PNG_CHUNK_MAX);
    png_set_read_fn(p->png, d, gm_png_read);
    /* Every ancillary chunk but tRNS is skipped unread (only the pixels are
     * used, converted here, not by libpng's gamma-aware transforms): no
     * chunk handler meets a forged length.  A fuzz finding: an 87-byte file
     * whose sPLT chunk claimed 1.6 GB spent 12-18 s in libpng's handler. */
    png_set_keep_unknown_chunks(p->png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
    png_read_info(p->png, p->info);

    png_uint_32 w, h;
    int depth, ctype, interlace;
    png_get_IHDR(p->png, p->info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    if (gm_dec_check_size(d, w, h) != GM_OK)
        return d->status;

    /* To 8-bit gray, gray+alpha, RGB or RGBA; gray from RGB is ours below
     * (png_set_rgb_to_gray has gamma quirks and other weights). */
    const int depth16 = depth == 16;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (depth16)
        png_set_swap(p->png); /* PNG stores 16-bit samples big-endian */
#endif
    if (ctype == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(p->png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(p->png);
    png_set_strip_alpha(p->png);
    /* No png_set_interlace_handling: Adam7 pass rows are scattered into the
     * gray image directly, so no full-size RGB image is ever held. */
    png_read_update_info(p->png, p->info);

    int ch = png_get_channels(p->png, p->info);
    size_t rowbytes = png_get_rowbytes(p->png, p->info);
    if (png_get_bit_depth(p->png, p->info) != (depth16 ? 16 : 8) || ch < 1 || ch > 4 ||
        rowbytes / (size_t)ch / (depth16 ? 2 : 1) < w)
        return gm_dec_fail(d, GM_ERR_UNSUPPORTED, "unexpected PNG decoder output");
    if (gm_dec_alloc(d, (int)w, (int)h) != GM_OK)
        return d->status;
    d->scratch = malloc(rowbytes);
    if (!d->scratch)
        return gm_dec_fail(d, GM_ERR_NOMEM, "out of memory");
    if (depth16 && !(d->gray16 = malloc((size_t)w * h * sizeof *d->gray16)))
        return gm_dec_fail(d, GM_ERR_NOMEM, "out of memory for a %ux%u 16-bit image",
                           (unsigned)w, (unsigned)h);
    uint32_t top = 0;

    d->png_in_rows = 1;
    if (interlace == PNG_INTERLACE_NONE) {
        for (png_uint_32 y = 0; y < h; y++) {
            png_read_row(p->png, d->scratch, NULL);
            gm_png_put_row(d, ch, depth16, w, y, 0, 1, &top);
        }
    } else {
        for (int pass = 0; pass < 7; pass++) {
            png_uint_32 pw = PNG_PASS_COLS(w, pass), ph = PNG_PASS_ROWS(h, pass);
            if (pw == 0 || ph == 0)
                continue; /* libpng skips empty passes too */
            for (png_uint_32 r = 0; r < ph; r++) {
                png_read_row(p->png, d->scratch, NULL);
                gm_png_put_row(d, ch, depth16, pw, PNG_ROW_FROM_PASS_ROW(r, pass),
                               PNG_PASS_START_COL(pass), (size_t)PNG_PASS_COL_OFFSET(pass), &top);
            }
        }
    }
    d->png_in_rows = 0;
    if (d->row_warning[0])
        return gm_dec_fail(d, GM_ERR_CORRUPT, "%s", d->row_warning);
    /* Reads on to IEND: a file cut short after the last row is an error. */
    png_read_end(p->png, NULL);
    if (depth16)
        gm_gray16_to_8(d->gray16, (size_t)w * h, top, d->img.data);
    return GM_OK;
}

static gm_status gm_png_decode(gm_dec *d)
{
    gm_png p = {NULL, NULL};
    gm_status st = gm_png_decode_run(d, &p);
    png_destroy_read_struct(&p.png, &p.info, NULL);
    return st;
}

static uint32_t gm_be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* The size in the IHDR, checked from the head before libpng starts: libpng
 * itself rejects a zero width as "Invalid IHDR data" (we want GM_ERR_EMPTY),
 * and a file cut after its IHDR should still say it is too large. */
static gm_status gm_png_check_head(gm_dec *d)
{
    const uint8_t *b = d->in.head;
    if (d->in.head_len < 24 || gm_be32(b + 8) != 13 || memcmp(b + 12, "IHDR", 4) != 0)
        return GM_OK; /* libpng will say what is wrong */
    uint32_t w = gm_be32(b + 16), h = gm_be32(b + 20);
    if (w > PNG_UINT_31_MAX || h > PNG_UINT_31_MAX)
        return GM_OK;
    return gm_dec_check_size(d, w, h);
}

/* ---- entry points ------------------------------------------------------------ */

static void gm_dec_init(gm_dec *d, int64_t max_pixels)
{
    memset(d, 0, sizeof *d);
    d->max_pixels = max_pixels > 0 ? max_pixels : GM_DEFAULT_MAX_PIXELS;
}

/* Sniff the head and decode. */
static gm_status gm_dec_run(gm_dec *d)
{
    const uint8_t *b = d->in.head;
    size_t n = d->in.head_len;
    if (n == 0)
        return gm_dec_fail(d, GM_ERR_FORMAT, "empty file");
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return gm_jpeg_decode(d);
    if (n >= 8 && memcmp(b, gm_png_signature, 8) == 0) {
        if (gm_png_check_head(d) != GM_OK)
            return d->status;
        return gm_png_decode(d);
    }
    return gm_dec_fail(d, GM_ERR_FORMAT, "not a JPEG or PNG image");
}

/* Hand the image or the message to the caller; frees everything else. */
static gm_status gm_dec_finish(gm_dec *d, gm_status st, gm_image *out, char *err, size_t errlen)
{
    free(d->scratch);
    d->scratch = NULL;
    free(d->gray16);
    d->gray16 = NULL;
    if (st == GM_OK) {
        *out = d->img;
        if (err && errlen)
            err[0] = '\0';
        return GM_OK;
    }
    free(d->img.data);
    if (out)
        memset(out, 0, sizeof *out);
    if (err && errlen)
        snprintf(err, errlen, "%s", d->msg[0] ? d->msg : gm_status_str(st));
    return st;
}

gm_status gm_image_load_jpeg_png(const char *path, int64_t max_pixels, gm_image *out, char *err,
                                 size_t errlen)
{
    gm_dec d;
    gm_dec_init(&d, max_pixels);
    if (!path || !out)
        return gm_dec_finish(&d, gm_dec_fail(&d, GM_ERR_INVALID, "invalid argument"), out, err,
                          errlen);
    memset(out, 0, sizeof *out);

    FILE *f = fopen(path, "rb");
    if (!f)
        return gm_dec_finish(&d, gm_dec_fail_errno(&d, errno, ""), out, err, errlen);
    gm_status st;
    struct stat sb;
    /* fopen succeeds on a directory; reading it fails later with EISDIR. */
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        st = gm_dec_fail(&d, GM_ERR_IO, "is a directory");
    } else {
        d.in.f = f;
        errno = 0;
        d.in.head_len = fread(d.in.head, 1, sizeof d.in.head, f);
        if (d.in.head_len < sizeof d.in.head && ferror(f))
            st = gm_dec_fail_errno(&d, errno ? errno : EIO, "read error: ");
        else
            st = gm_dec_run(&d);
    }
    fclose(f);
    return gm_dec_finish(&d, st, out, err, errlen);
}

gm_status gm_image_load_mem(const uint8_t *data, size_t size, int64_t max_pixels,
                            gm_image *out, char *err, size_t errlen)
{
    gm_dec d;
    gm_dec_init(&d, max_pixels);
    if (!out || (!data && size))
        return gm_dec_finish(&d, gm_dec_fail(&d, GM_ERR_INVALID, "invalid argument"), out, err,
                          errlen);
    memset(out, 0, sizeof *out);
    d.in.mem = data;
    d.in.size = size;
    d.in.head_len = size < GM_HEAD_BYTES ? size : GM_HEAD_BYTES;
    if (d.in.head_len)
        memcpy(d.in.head, data, d.in.head_len);
    return gm_dec_finish(&d, gm_dec_run(&d), out, err, errlen);
}

void gm_image_free(gm_image *img)
{
    if (!img)
        return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

gm_view gm_image_view(const gm_image *img)
{
    gm_view v = {NULL, 0, 0, 0};
    if (img) {
        v.data = img->data;
        v.width = img->width;
        v.height = img->height;
        v.stride = img->stride;
    }
    return v;
}
