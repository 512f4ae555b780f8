/* test_image.c: JPEG and PNG decoding (src/io/image.c).
 *
 * Every image is made here with libpng's and libjpeg's encoders, so the
 * expected gray is known: exactly for PNG, within a few levels for JPEG on
 * flat colours.  Each image is decoded from memory and from a file in a
 * temporary directory, and both must give the same status, message and pixels.
 * Run from the repository root.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, pipe */

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include "gmatch.h"

static char g_dir[64]; /* temporary directory, made and removed by main */

/* ---- byte buffers ------------------------------------------------------------ */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} buf_t;

static void buf_put(buf_t *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->data = realloc(b->data, b->cap);
        ck_assert_ptr_nonnull(b->data);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static buf_t buf_copy(const uint8_t *p, size_t n)
{
    buf_t b = {NULL, 0, 0};
    buf_put(&b, p, n);
    return b;
}

static void buf_free(buf_t *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A deterministic pseudo-random sample for pixel (x, y), channel c. */
static unsigned sample(int x, int y, int c)
{
    uint32_t h = (uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u ^ (uint32_t)(c + 1) * 83492791u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return h;
}

/* The conversion the decoder promises: libjpeg's integer BT.601. */
static int gray601(int r, int g, int b)
{
    return (19595 * r + 38470 * g + 7471 * b + 32768) >> 16;
}

/* ---- decoding through both entry points --------------------------------------- */

static int g_file_no;

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    if (n)
        ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static int is_zeroed(const gm_image *img)
{
    return img->data == NULL && img->width == 0 && img->height == 0 && img->stride == 0;
}

/* Decode p from memory and from a file; both must agree.  Returns the status;
 * *img holds the memory result (caller frees), err its message. */
static gm_status load_both(const uint8_t *p, size_t n, int64_t max_pixels, gm_image *img,
                           char *err, size_t errlen)
{
    gm_image a, f;
    char ea[256], ef[256];
    char path[128];
    memset(&a, 0xAB, sizeof a); /* failures must zero *out */
    memset(&f, 0xAB, sizeof f);
    gm_status sa = gm_image_load_mem(p, n, max_pixels, &a, ea, sizeof ea);
    snprintf(path, sizeof path, "%s/img_%d.bin", g_dir, g_file_no++);
    write_file(path, p, n);
    gm_status sf = gm_image_load(path, max_pixels, &f, ef, sizeof ef);
    unlink(path);

    ck_assert_int_eq(sa, sf);
    if (sa == GM_OK) {
        ck_assert_str_eq(ea, "");
        ck_assert_int_gt(a.width, 0);
        ck_assert_int_gt(a.height, 0);
        ck_assert_int_eq(a.stride, a.width);
        ck_assert_int_eq(f.width, a.width);
        ck_assert_int_eq(f.height, a.height);
        ck_assert_mem_eq(a.data, f.data, (size_t)a.width * (size_t)a.height);
        gm_image_free(&f);
    } else {
        ck_assert_msg(is_zeroed(&a) && is_zeroed(&f), "failure left *out set");
        ck_assert_str_eq(ea, ef);
        ck_assert_msg(ea[0] != '\0', "empty message");
        ck_assert_msg(strchr(ea, '\n') == NULL, "message not one line: %s", ea);
        ck_assert_msg(strstr(ea, "img_") == NULL && strstr(ea, g_dir) == NULL,
                      "message names the file: %s", ea);
    }
    *img = a;
    if (err)
        snprintf(err, errlen, "%s", ea);
    return sa;
}

static gm_status load_buf(const buf_t *b, int64_t max_pixels, gm_image *img, char *err,
                          size_t errlen)
{
    return load_both(b->data, b->len, max_pixels, img, err, errlen);
}

/* Memory only: for loops over thousands of variants. */
static gm_status load_mem_check(const uint8_t *p, size_t n, gm_image *img, char *err,
                                size_t errlen)
{
    memset(img, 0xAB, sizeof *img);
    gm_status s = gm_image_load_mem(p, n, 0, img, err, errlen);
    if (s != GM_OK) {
        ck_assert_msg(is_zeroed(img), "failure left *out set");
        ck_assert_msg(err[0] != '\0' && strchr(err, '\n') == NULL, "bad message '%s'", err);
    } else {
        ck_assert_ptr_nonnull(img->data);
        ck_assert_int_gt(img->width, 0);
        ck_assert_int_gt(img->height, 0);
    }
    return s;
}

/* ---- PNG encoding ------------------------------------------------------------- */

static void png_write_cb(png_structp png, png_bytep p, size_t n)
{
    buf_put(png_get_io_ptr(png), p, n);
}

static void png_flush_cb(png_structp png)
{
    (void)png;
}

typedef struct {
    int w, h, ctype, depth, interlace;
    int trns;  /* palette: add a tRNS chunk; gray/RGB: a tRNS colour */
    int npal;  /* palette entries used */
} png_spec;

static int png_channels(int ctype)
{
    switch (ctype) {
    case PNG_COLOR_TYPE_GRAY: return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    default: return 1; /* palette */
    }
}

static png_color palette_entry(int i)
{
    png_color c;
    c.red = (png_byte)sample(i, 0, 7);
    c.green = (png_byte)sample(i, 1, 7);
    c.blue = (png_byte)sample(i, 2, 7);
    return c;
}

/* Encodes a pseudo-random image of the given type; *expect gets the gray the
 * decoder must produce (caller frees). */
static buf_t png_make(const png_spec *s, uint8_t **expect)
{
    const int ch = png_channels(s->ctype);
    const unsigned maxv = (1u << s->depth) - 1;
    const int npal = s->npal ? s->npal : 1 << s->depth;
    const size_t rowbytes = ((size_t)s->w * (size_t)ch * (size_t)s->depth + 7) / 8;
    uint8_t *pix = calloc((size_t)s->h, rowbytes);
    uint8_t *exp = malloc((size_t)s->w * (size_t)s->h);
    ck_assert(pix && exp);

    for (int y = 0; y < s->h; y++) {
        uint8_t *row = pix + (size_t)y * rowbytes;
        for (int x = 0; x < s->w; x++) {
            unsigned v[4];
            for (int c = 0; c < ch; c++) {
                v[c] = s->ctype == PNG_COLOR_TYPE_PALETTE ? sample(x, y, c) % (unsigned)npal
                                                          : sample(x, y, c) & maxv;
                /* corners black and white: the ends of every range */
                if (x == 0 && y == 0)
                    v[c] = 0;
                if (x == s->w - 1 && y == s->h - 1 && s->ctype != PNG_COLOR_TYPE_PALETTE)
                    v[c] = maxv;
                size_t bit = ((size_t)x * (size_t)ch + (size_t)c) * (size_t)s->depth;
                if (s->depth == 16) {
                    row[bit / 8] = (uint8_t)(v[c] >> 8);
                    row[bit / 8 + 1] = (uint8_t)v[c];
                } else {
                    row[bit / 8] |= (uint8_t)(v[c] << (8 - s->depth - (int)(bit % 8)));
                }
            }
            int g;
            if (s->ctype == PNG_COLOR_TYPE_PALETTE) {
                png_color c = palette_entry((int)v[0]);
                g = gray601(c.red, c.green, c.blue);
            } else if (s->depth == 16) {
                /* gray in 16 bits, then by the range of the samples: the
                 * last pixel's samples are 65535, so 255 / 65535, rounded */
                uint64_t g16 = ch >= 3 ? (19595ull * v[0] + 38470ull * v[1] + 7471ull * v[2] +
                                          32768ull) >> 16
                                       : v[0];
                g = (int)((g16 * 255 + 32767) / 65535);
            } else {
                int e[3];
                for (int c = 0; c < (ch >= 3 ? 3 : 1); c++)
                    e[c] = s->depth == 8 ? (int)v[c] : (int)(v[c] * 255 / maxv);
                g = ch >= 3 ? gray601(e[0], e[1], e[2]) : e[0];
            }
            exp[(size_t)y * (size_t)s->w + (size_t)x] = (uint8_t)g;
        }
    }

    buf_t b = {NULL, 0, 0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_bytep *rows = malloc((size_t)s->h * sizeof *rows);
    ck_assert(png && info && rows);
    if (setjmp(png_jmpbuf(png)))
        ck_abort_msg("PNG encoding failed");
    png_set_write_fn(png, &b, png_write_cb, png_flush_cb);
    png_set_IHDR(png, info, (png_uint_32)s->w, (png_uint_32)s->h, s->depth, s->ctype,
                 s->interlace, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_color pal[256];
    png_byte alpha[256];
    if (s->ctype == PNG_COLOR_TYPE_PALETTE) {
        for (int i = 0; i < npal; i++) {
            pal[i] = palette_entry(i);
            alpha[i] = (png_byte)(i * 37);
        }
        png_set_PLTE(png, info, pal, npal);
        if (s->trns)
            png_set_tRNS(png, info, alpha, npal, NULL);
    } else if (s->trns) {
        png_color_16 tc;
        memset(&tc, 0, sizeof tc);
        tc.gray = tc.red = tc.green = tc.blue = (png_uint_16)(sample(1, 1, 0) & maxv);
        png_set_tRNS(png, info, NULL, 0, &tc);
    }
    png_write_info(png, info);
    for (int y = 0; y < s->h; y++)
        rows[y] = pix + (size_t)y * rowbytes;
    png_write_image(png, rows); /* does the Adam7 passes itself */
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    free(pix);
    *expect = exp;
    return b;
}

/* Decodes every size in a list for one PNG type and compares exactly. */
static void check_png_type(int ctype, int depth, int interlace, int trns)
{
    static const int sizes[][2] = {{1, 1}, {2, 3}, {5, 5}, {8, 8}, {9, 17}, {33, 20}, {64, 3}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        png_spec s = {sizes[k][0], sizes[k][1], ctype, depth, interlace, trns, 0};
        if (ctype == PNG_COLOR_TYPE_PALETTE && depth == 8)
            s.npal = 200; /* a partial palette */
        uint8_t *exp;
        buf_t b = png_make(&s, &exp);
        gm_image img;
        char err[256];
        gm_status st = load_buf(&b, 0, &img, err, sizeof err);
        ck_assert_msg(st == GM_OK, "type %d depth %d %dx%d: %s", ctype, depth, s.w, s.h, err);
        ck_assert_int_eq(img.width, s.w);
        ck_assert_int_eq(img.height, s.h);
        for (int i = 0; i < s.w * s.h; i++)
            ck_assert_msg(img.data[i] == exp[i], "type %d depth %d %dx%d pixel (%d,%d): %d != %d",
                          ctype, depth, s.w, s.h, i % s.w, i / s.w, img.data[i], exp[i]);
        gm_image_free(&img);
        free(exp);
        buf_free(&b);
    }
}

/* A small valid PNG, its expected gray in *exp if exp is non-NULL. */
static buf_t png_small(int w, int h, int ctype, int depth, uint8_t **exp)
{
    png_spec s = {w, h, ctype, depth, PNG_INTERLACE_NONE, 0, 0};
    uint8_t *e;
    buf_t b = png_make(&s, &e);
    if (exp)
        *exp = e;
    else
        free(e);
    return b;
}

/* Offset of the first chunk of this type (its length field), or -1. */
static long png_find_chunk(const buf_t *b, const char *type)
{
    size_t i = 8;
    while (i + 12 <= b->len) {
        uint32_t len = get_be32(b->data + i);
        if (memcmp(b->data + i + 4, type, 4) == 0)
            return (long)i;
        i += 12 + (size_t)len;
    }
    return -1;
}

static void png_fix_crc(buf_t *b, size_t chunk)
{
    uint32_t len = get_be32(b->data + chunk);
    uLong c = crc32(0L, b->data + chunk + 4, (uInt)len + 4);
    put_be32(b->data + chunk + 8 + len, (uint32_t)c);
}

/* Recompute every chunk's CRC, so that a mutation reaches libpng's parsers
 * and zlib instead of stopping at the CRC check. */
static void png_fix_all_crcs(buf_t *b)
{
    size_t i = 8;
    while (i + 12 <= b->len) {
        uint32_t len = get_be32(b->data + i);
        if (len > b->len - i - 12)
            break;
        png_fix_crc(b, i);
        i += 12 + (size_t)len;
    }
}

/* ---- JPEG encoding ------------------------------------------------------------- */

typedef struct {
    int w, h;
    J_COLOR_SPACE in_cs;
    int in_comp;
    J_COLOR_SPACE jpeg_cs; /* JCS_UNKNOWN: libjpeg's default for in_cs */
    int progressive;
    int adobe;             /* -1: libjpeg's default, 0: no Adobe marker, 1: one */
    int arith;
    int quality;
    const jpeg_scan_info *scans;
    int nscans;
} jpeg_spec;

static buf_t jpeg_encode(const jpeg_spec *s, uint8_t *pixels)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned char *out = NULL;
    unsigned long outlen = 0;
    c.err = jpeg_std_error(&e); /* exits on error: the test fails */
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, &outlen);
    c.image_width = (JDIMENSION)s->w;
    c.image_height = (JDIMENSION)s->h;
    c.input_components = s->in_comp;
    c.in_color_space = s->in_cs;
    jpeg_set_defaults(&c);
    if (s->jpeg_cs != JCS_UNKNOWN)
        jpeg_set_colorspace(&c, s->jpeg_cs);
    jpeg_set_quality(&c, s->quality ? s->quality : 90, TRUE);
    if (s->progressive)
        jpeg_simple_progression(&c);
    if (s->scans) {
        c.scan_info = s->scans;
        c.num_scans = s->nscans;
    }
    if (s->adobe >= 0)
        c.write_Adobe_marker = (boolean)s->adobe;
    c.arith_code = (boolean)s->arith;
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = pixels + (size_t)c.next_scanline * (size_t)s->w * (size_t)s->in_comp;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    buf_t b = buf_copy(out, outlen);
    free(out);
    return b;
}

/* A w x h image of one colour (in_comp samples). */
static buf_t jpeg_flat(const jpeg_spec *s, const uint8_t *colour)
{
    size_t n = (size_t)s->w * (size_t)s->h;
    uint8_t *pix = malloc(n * (size_t)s->in_comp);
    ck_assert_ptr_nonnull(pix);
    for (size_t i = 0; i < n; i++)
        memcpy(pix + i * (size_t)s->in_comp, colour, (size_t)s->in_comp);
    buf_t b = jpeg_encode(s, pix);
    free(pix);
    return b;
}

/* A textured image: smooth gradients plus a few edges, so that the
 * entropy-coded data is long enough to cut and damage. */
static buf_t jpeg_textured(const jpeg_spec *s)
{
    size_t n = (size_t)s->w * (size_t)s->h;
    uint8_t *pix = malloc(n * (size_t)s->in_comp);
    ck_assert_ptr_nonnull(pix);
    for (int y = 0; y < s->h; y++)
        for (int x = 0; x < s->w; x++)
            for (int c = 0; c < s->in_comp; c++)
                pix[((size_t)y * (size_t)s->w + (size_t)x) * (size_t)s->in_comp + (size_t)c] =
                    (uint8_t)((x * (3 + c) + y * 2 + ((x / 8 + y / 8) % 2) * 60) & 255);
    buf_t b = jpeg_encode(s, pix);
    free(pix);
    return b;
}

static void check_flat(const buf_t *b, int w, int h, int expect, int tol)
{
    gm_image img;
    char err[256];
    gm_status st = load_buf(b, 0, &img, err, sizeof err);
    ck_assert_msg(st == GM_OK, "%s", err);
    ck_assert_int_eq(img.width, w);
    ck_assert_int_eq(img.height, h);
    for (int i = 0; i < w * h; i++)
        ck_assert_msg(abs(img.data[i] - expect) <= tol, "pixel %d: %d, expected %d +- %d", i,
                      img.data[i], expect, tol);
    gm_image_free(&img);
}

/* Offset of the first marker segment FF m (before the first scan's data), or -1. */
static long jpeg_find_marker(const buf_t *b, uint8_t m)
{
    size_t i = 2;
    while (i + 4 <= b->len && b->data[i] == 0xFF) {
        uint8_t t = b->data[i + 1];
        if (t == m)
            return (long)i;
        if (t == 0xDA || t == 0xD9)
            return -1;
        i += 2 + ((size_t)b->data[i + 2] << 8 | b->data[i + 3]);
    }
    return -1;
}

/* Offset of the first byte of entropy-coded data of the first scan. */
static size_t jpeg_scan_start(const buf_t *b)
{
    long sos = jpeg_find_marker(b, 0xDA);
    ck_assert_int_ge(sos, 0);
    return (size_t)sos + 2 + ((size_t)b->data[sos + 2] << 8 | b->data[sos + 3]);
}

/* Offset of the SOF0/SOF2 marker. */
static size_t jpeg_sof(const buf_t *b)
{
    long sof = jpeg_find_marker(b, 0xC0);
    if (sof < 0)
        sof = jpeg_find_marker(b, 0xC2);
    ck_assert_int_ge(sof, 0);
    return (size_t)sof;
}

/* 16x16 baseline at quality 90, libjpeg's colour space for the input */
static const jpeg_spec jpeg_gray_spec = {16, 16, JCS_GRAYSCALE, 1, JCS_UNKNOWN, 0, -1, 0, 90,
                                         NULL, 0};
static const jpeg_spec jpeg_rgb_spec = {16, 16, JCS_RGB, 3, JCS_UNKNOWN, 0, -1, 0, 90, NULL, 0};

/* Gray of a CMYK ink colour (0 = no ink): what every CMYK JPEG of it decodes to. */
static int cmyk_gray(const uint8_t ink[4])
{
    double k = (255 - ink[3]) / 255.0;
    double r = (255 - ink[0]) * k, g = (255 - ink[1]) * k, b = (255 - ink[2]) * k;
    return (int)(0.299 * r + 0.587 * g + 0.114 * b + 0.5);
}

/* =================================================================================
 * PNG: every colour type and bit depth, exact
 * ================================================================================= */

START_TEST(test_png_gray8)
{
    check_png_type(PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, 0);
}
END_TEST

START_TEST(test_png_gray16)
{
    check_png_type(PNG_COLOR_TYPE_GRAY, 16, PNG_INTERLACE_NONE, 0);
}
END_TEST

/* A 16-bit PNG holding 10-bit data (samples 0..1023, as cameras write
 * them): full range, not the nearly black high byte (0..3). */
START_TEST(test_png_10bit_in_16)
{
    enum { W = 6, H = 2 };
    uint8_t rows[H][W * 2];
    const unsigned v[W] = {0, 1, 100, 512, 1000, 1023};
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            rows[y][2 * x] = (uint8_t)(v[x] >> 8), rows[y][2 * x + 1] = (uint8_t)v[x];
    buf_t b = {NULL, 0, 0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    ck_assert(png && info);
    if (setjmp(png_jmpbuf(png)))
        ck_abort_msg("PNG encoding failed");
    png_set_write_fn(png, &b, png_write_cb, png_flush_cb);
    png_set_IHDR(png, info, W, H, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < H; y++)
        png_write_row(png, rows[y]);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    gm_image im;
    char err[128];
    ck_assert_int_eq(gm_image_load_mem(b.data, b.len, 0, &im, err, sizeof err), GM_OK);
    static const uint8_t want[W] = {0, 0, 25, 128, 249, 255}; /* round(v * 255 / 1023) */
    for (int x = 0; x < W; x++)
        ck_assert_int_eq(im.data[im.stride + x], want[x]);
    gm_image_free(&im);
    free(b.data);
}
END_TEST

START_TEST(test_png_gray_low_bits)
{
    check_png_type(PNG_COLOR_TYPE_GRAY, 1, PNG_INTERLACE_NONE, 0);
    check_png_type(PNG_COLOR_TYPE_GRAY, 2, PNG_INTERLACE_NONE, 0);
    check_png_type(PNG_COLOR_TYPE_GRAY, 4, PNG_INTERLACE_NONE, 0);
}
END_TEST

START_TEST(test_png_rgb8)
{
    check_png_type(PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, 0);
}
END_TEST

START_TEST(test_png_rgb16)
{
    check_png_type(PNG_COLOR_TYPE_RGB, 16, PNG_INTERLACE_NONE, 0);
}
END_TEST

START_TEST(test_png_rgba)
{
    check_png_type(PNG_COLOR_TYPE_RGB_ALPHA, 8, PNG_INTERLACE_NONE, 0);
    check_png_type(PNG_COLOR_TYPE_RGB_ALPHA, 16, PNG_INTERLACE_NONE, 0);
}
END_TEST

START_TEST(test_png_gray_alpha)
{
    check_png_type(PNG_COLOR_TYPE_GRAY_ALPHA, 8, PNG_INTERLACE_NONE, 0);
    check_png_type(PNG_COLOR_TYPE_GRAY_ALPHA, 16, PNG_INTERLACE_NONE, 0);
}
END_TEST

START_TEST(test_png_palette)
{
    for (int d = 1; d <= 8; d *= 2)
        check_png_type(PNG_COLOR_TYPE_PALETTE, d, PNG_INTERLACE_NONE, 0);
}
END_TEST

START_TEST(test_png_palette_trns)
{
    for (int d = 1; d <= 8; d *= 2)
        check_png_type(PNG_COLOR_TYPE_PALETTE, d, PNG_INTERLACE_NONE, 1);
}
END_TEST

START_TEST(test_png_trns_colour)
{
    /* tRNS on gray and RGB images is ignored like alpha */
    check_png_type(PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, 1);
    check_png_type(PNG_COLOR_TYPE_GRAY, 2, PNG_INTERLACE_NONE, 1);
    check_png_type(PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, 1);
}
END_TEST

START_TEST(test_png_interlaced)
{
    /* Adam7 on odd sizes (empty passes included) and every kind of row */
    check_png_type(PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_ADAM7, 0);
    check_png_type(PNG_COLOR_TYPE_GRAY, 1, PNG_INTERLACE_ADAM7, 0);
    check_png_type(PNG_COLOR_TYPE_GRAY, 16, PNG_INTERLACE_ADAM7, 0);
    check_png_type(PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_ADAM7, 0);
    check_png_type(PNG_COLOR_TYPE_RGB_ALPHA, 16, PNG_INTERLACE_ADAM7, 0);
    check_png_type(PNG_COLOR_TYPE_GRAY_ALPHA, 8, PNG_INTERLACE_ADAM7, 0);
    check_png_type(PNG_COLOR_TYPE_PALETTE, 4, PNG_INTERLACE_ADAM7, 1);
}
END_TEST

START_TEST(test_png_1x1)
{
    uint8_t *exp;
    buf_t b = png_small(1, 1, PNG_COLOR_TYPE_RGB, 8, &exp);
    gm_image img;
    char err[256];
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_OK);
    ck_assert_int_eq(img.width, 1);
    ck_assert_int_eq(img.height, 1);
    ck_assert_int_eq(img.data[0], exp[0]);
    gm_image_free(&img);
    free(exp);
    buf_free(&b);
}
END_TEST

START_TEST(test_png_trailing_garbage)
{
    uint8_t *exp;
    buf_t b = png_small(7, 5, PNG_COLOR_TYPE_GRAY, 8, &exp);
    buf_put(&b, "trailing bytes", 14);
    gm_image img;
    char err[256];
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_OK);
    ck_assert_mem_eq(img.data, exp, 35);
    gm_image_free(&img);
    free(exp);
    buf_free(&b);
}
END_TEST

/* =================================================================================
 * JPEG
 * ================================================================================= */

START_TEST(test_jpeg_gray)
{
    static const uint8_t levels[] = {0, 1, 77, 128, 254, 255};
    for (size_t i = 0; i < sizeof levels; i++) {
        buf_t b = jpeg_flat(&jpeg_gray_spec, &levels[i]);
        check_flat(&b, 16, 16, levels[i], 1);
        buf_free(&b);
    }
}
END_TEST

START_TEST(test_jpeg_ycbcr)
{
    static const uint8_t colours[][3] = {{200, 120, 40}, {0, 0, 0}, {255, 255, 255},
                                         {255, 0, 0},    {0, 255, 0}, {0, 0, 255}, {30, 90, 210}};
    for (size_t i = 0; i < sizeof colours / sizeof colours[0]; i++) {
        const uint8_t *c = colours[i];
        jpeg_spec s = jpeg_rgb_spec;
        s.w = 24; /* not a multiple of the 16-pixel MCU */
        s.h = 10;
        buf_t b = jpeg_flat(&s, c);
        check_flat(&b, 24, 10, gray601(c[0], c[1], c[2]), 2);
        buf_free(&b);
    }
}
END_TEST

START_TEST(test_jpeg_rgb_colourspace)
{
    /* RGB stored without the YCbCr transform (Adobe transform 0) */
    static const uint8_t c[3] = {40, 180, 220};
    jpeg_spec s = jpeg_rgb_spec;
    s.jpeg_cs = JCS_RGB;
    buf_t b = jpeg_flat(&s, c);
    check_flat(&b, 16, 16, gray601(c[0], c[1], c[2]), 2);
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_progressive)
{
    static const uint8_t c[3] = {200, 120, 40}, g = 99;
    jpeg_spec s = jpeg_rgb_spec;
    s.progressive = 1;
    buf_t b = jpeg_flat(&s, c);
    check_flat(&b, 16, 16, gray601(c[0], c[1], c[2]), 2);
    buf_free(&b);
    s = jpeg_gray_spec;
    s.progressive = 1;
    b = jpeg_flat(&s, &g);
    check_flat(&b, 16, 16, g, 1);
    buf_free(&b);

    /* Progressive coding rearranges the same quantized coefficients: a
     * textured image decodes exactly as its baseline twin does. */
    for (int colour = 0; colour < 2; colour++) {
        jpeg_spec base = colour ? jpeg_rgb_spec : jpeg_gray_spec, prog;
        base.w = 45;
        base.h = 37;
        prog = base;
        prog.progressive = 1;
        buf_t bb = jpeg_textured(&base), bp = jpeg_textured(&prog);
        ck_assert(jpeg_find_marker(&bp, 0xC2) >= 0);
        gm_image ib, ip;
        char err[256];
        ck_assert_int_eq(load_buf(&bb, 0, &ib, err, sizeof err), GM_OK);
        ck_assert_int_eq(load_buf(&bp, 0, &ip, err, sizeof err), GM_OK);
        ck_assert_int_eq(ip.width, 45);
        ck_assert_int_eq(ip.height, 37);
        ck_assert_mem_eq(ib.data, ip.data, 45 * 37);
        gm_image_free(&ib);
        gm_image_free(&ip);
        buf_free(&bb);
        buf_free(&bp);
    }
}
END_TEST

START_TEST(test_jpeg_arithmetic)
{
    static const uint8_t c[3] = {10, 200, 100};
    jpeg_spec s = jpeg_rgb_spec;
    s.arith = 1;
    buf_t b = jpeg_flat(&s, c);
    check_flat(&b, 16, 16, gray601(c[0], c[1], c[2]), 2);
    buf_free(&b);
}
END_TEST

static const uint8_t cmyk_inks[][4] = {{30, 200, 90, 40}, {0, 0, 0, 0}, {0, 0, 0, 255},
                                       {255, 0, 0, 0},    {0, 128, 255, 60}};

START_TEST(test_jpeg_cmyk_adobe)
{
    /* Photoshop's convention: samples stored inverted, Adobe marker present */
    for (size_t i = 0; i < sizeof cmyk_inks / sizeof cmyk_inks[0]; i++) {
        uint8_t stored[4];
        for (int c = 0; c < 4; c++)
            stored[c] = (uint8_t)(255 - cmyk_inks[i][c]);
        jpeg_spec s = {16, 16, JCS_CMYK, 4, JCS_CMYK, 0, 1, 0, 95, NULL, 0};
        buf_t b = jpeg_flat(&s, stored);
        ck_assert(jpeg_find_marker(&b, 0xEE) >= 0);
        check_flat(&b, 16, 16, cmyk_gray(cmyk_inks[i]), 3);
        buf_free(&b);
    }
}
END_TEST

START_TEST(test_jpeg_cmyk_plain)
{
    /* No Adobe marker: samples are ink amounts as they are */
    for (size_t i = 0; i < sizeof cmyk_inks / sizeof cmyk_inks[0]; i++) {
        jpeg_spec s = {16, 16, JCS_CMYK, 4, JCS_CMYK, 0, 0, 0, 95, NULL, 0};
        buf_t b = jpeg_flat(&s, cmyk_inks[i]);
        ck_assert(jpeg_find_marker(&b, 0xEE) < 0);
        check_flat(&b, 16, 16, cmyk_gray(cmyk_inks[i]), 3);
        buf_free(&b);
    }
}
END_TEST

START_TEST(test_jpeg_ycck)
{
    for (size_t i = 0; i < sizeof cmyk_inks / sizeof cmyk_inks[0]; i++) {
        uint8_t stored[4];
        for (int c = 0; c < 4; c++)
            stored[c] = (uint8_t)(255 - cmyk_inks[i][c]);
        jpeg_spec s = {16, 16, JCS_CMYK, 4, JCS_YCCK, 0, -1, 0, 95, NULL, 0};
        buf_t b = jpeg_flat(&s, stored);
        check_flat(&b, 16, 16, cmyk_gray(cmyk_inks[i]), 3);
        buf_free(&b);
    }
    /* and progressive */
    uint8_t stored[4] = {200, 100, 50, 220};
    uint8_t ink[4] = {55, 155, 205, 35};
    jpeg_spec s = {16, 16, JCS_CMYK, 4, JCS_YCCK, 1, -1, 0, 95, NULL, 0};
    buf_t b = jpeg_flat(&s, stored);
    check_flat(&b, 16, 16, cmyk_gray(ink), 3);
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_1x1)
{
    static const uint8_t c[3] = {250, 10, 128};
    jpeg_spec s = jpeg_rgb_spec;
    s.w = s.h = 1;
    buf_t b = jpeg_flat(&s, c);
    check_flat(&b, 1, 1, gray601(c[0], c[1], c[2]), 3);
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_trailing_bytes)
{
    static const uint8_t g = 60;
    buf_t b = jpeg_flat(&jpeg_gray_spec, &g);
    buf_put(&b, "after EOI", 9);
    check_flat(&b, 16, 16, g, 1);
    buf_free(&b);

    /* padding before EOI (common in camera files) is harmless */
    b = jpeg_flat(&jpeg_gray_spec, &g);
    ck_assert_int_eq(b.data[b.len - 2], 0xFF);
    ck_assert_int_eq(b.data[b.len - 1], 0xD9);
    b.len -= 2;
    static const uint8_t pad[64] = {0};
    buf_put(&b, pad, sizeof pad); /* more than libjpeg's bit buffer reads ahead */
    buf_put(&b, "\xFF\xD9", 2);
    check_flat(&b, 16, 16, g, 1);
    buf_free(&b);
}
END_TEST

/* A progressive script of 1 + 11 * ncoef scans: every AC coefficient alone,
 * sent in 11 successive-approximation steps. */
static int many_scans(jpeg_scan_info *sc, int ncoef)
{
    int n = 0;
    memset(sc, 0, sizeof(jpeg_scan_info) * (size_t)(1 + 11 * ncoef));
    sc[n].comps_in_scan = 1;
    n++; /* DC */
    for (int k = 1; k <= ncoef; k++) {
        sc[n].comps_in_scan = 1;
        sc[n].Ss = sc[n].Se = k;
        sc[n].Al = 10;
        n++;
        for (int a = 10; a >= 1; a--) {
            sc[n].comps_in_scan = 1;
            sc[n].Ss = sc[n].Se = k;
            sc[n].Ah = a;
            sc[n].Al = a - 1;
            n++;
        }
    }
    return n;
}

START_TEST(test_jpeg_scan_limit)
{
    static jpeg_scan_info sc[1 + 11 * 63];
    jpeg_spec s = jpeg_gray_spec;
    s.scans = sc;
    gm_image img;
    char err[256];

    s.nscans = many_scans(sc, 45); /* 496 scans: allowed */
    ck_assert_int_eq(s.nscans, 496);
    buf_t b = jpeg_textured(&s);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_OK);
    gm_image_free(&img);
    buf_free(&b);

    s.nscans = many_scans(sc, 63); /* 694 scans: refused */
    b = jpeg_textured(&s);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_msg(strstr(err, "scans") != NULL, "%s", err);
    buf_free(&b);
}
END_TEST

/* =================================================================================
 * Bad input
 * ================================================================================= */

START_TEST(test_missing_file)
{
    gm_image img;
    char err[256], path[128];
    snprintf(path, sizeof path, "%s/no_such_file.png", g_dir);
    memset(&img, 0xAB, sizeof img);
    ck_assert_int_eq(gm_image_load(path, 0, &img, err, sizeof err), GM_ERR_IO);
    ck_assert(is_zeroed(&img));
    ck_assert_str_eq(err, strerror(ENOENT));
}
END_TEST

START_TEST(test_directory)
{
    gm_image img;
    char err[256];
    memset(&img, 0xAB, sizeof img);
    ck_assert_int_eq(gm_image_load(g_dir, 0, &img, err, sizeof err), GM_ERR_IO);
    ck_assert(is_zeroed(&img));
    ck_assert_str_eq(err, "is a directory");
}
END_TEST

START_TEST(test_empty)
{
    gm_image img;
    char err[256];
    ck_assert_int_eq(load_both((const uint8_t *)"", 0, 0, &img, err, sizeof err), GM_ERR_FORMAT);
    ck_assert_str_eq(err, "empty file");
    ck_assert_int_eq(gm_image_load_mem(NULL, 0, 0, &img, err, sizeof err), GM_ERR_FORMAT);
}
END_TEST

START_TEST(test_not_an_image)
{
    /* (a PGM, TIFF, ... file is gm_image_load's through FFmpeg: test_video.c) */
    static const char text[] = "this is text, not an image\n";
    gm_image img;
    char err[256];
    ck_assert_int_eq(load_both((const uint8_t *)text, sizeof text - 1, 0, &img, err, sizeof err),
                     GM_ERR_FORMAT);
    ck_assert_str_eq(err, "not a JPEG or PNG image");

    uint8_t rnd[1000];
    for (size_t i = 0; i < sizeof rnd; i++)
        rnd[i] = (uint8_t)sample((int)i, 5, 5);
    rnd[0] = 0x42;
    ck_assert_int_eq(load_both(rnd, sizeof rnd, 0, &img, err, sizeof err), GM_ERR_FORMAT);

    /* the start of a signature is not enough */
    ck_assert_int_eq(load_both((const uint8_t *)"\xFF\xD8", 2, 0, &img, err, sizeof err),
                     GM_ERR_FORMAT);
    ck_assert_int_eq(load_both((const uint8_t *)"\x89PNG\r\n\x1a", 7, 0, &img, err, sizeof err),
                     GM_ERR_FORMAT);
    /* a name says nothing: a PNG called .jpg still decodes (load_both's files are .bin) */
}
END_TEST

START_TEST(test_png_signature_only)
{
    gm_image img;
    char err[256];
    ck_assert_int_eq(load_both((const uint8_t *)"\x89PNG\r\n\x1a\n", 8, 0, &img, err, sizeof err),
                     GM_ERR_CORRUPT);
    ck_assert_str_eq(err, "truncated PNG data");
}
END_TEST

START_TEST(test_jpeg_soi_only)
{
    gm_image img;
    char err[256];
    ck_assert_int_ne(load_both((const uint8_t *)"\xFF\xD8\xFF\xD9", 4, 0, &img, err, sizeof err),
                     GM_OK);
    ck_assert_int_ne(load_both((const uint8_t *)"\xFF\xD8\xFF", 3, 0, &img, err, sizeof err),
                     GM_OK);
}
END_TEST

/* Every prefix of a valid file must fail cleanly (the decoders read on to the
 * end marker, so even a cut after the last pixel row is an error). */
static void check_truncations(const buf_t *b, size_t min_corrupt)
{
    for (size_t n = 0; n < b->len; n++) {
        gm_image img;
        char err[256];
        gm_status st = load_both(b->data, n, 0, &img, err, sizeof err);
        ck_assert_msg(st != GM_OK, "cut at %zu of %zu bytes decoded", n, b->len);
        if (n >= min_corrupt)
            ck_assert_msg(st == GM_ERR_CORRUPT, "cut at %zu: status %d (%s)", n, st, err);
        else
            ck_assert_msg(st == GM_ERR_FORMAT, "cut at %zu: status %d (%s)", n, st, err);
    }
}

START_TEST(test_png_truncated)
{
    buf_t b = png_small(16, 9, PNG_COLOR_TYPE_RGB, 8, NULL);
    check_truncations(&b, 8);
    buf_free(&b);
    png_spec s = {13, 11, PNG_COLOR_TYPE_PALETTE, 4, PNG_INTERLACE_ADAM7, 1, 0};
    uint8_t *exp;
    b = png_make(&s, &exp);
    free(exp);
    check_truncations(&b, 8);
    buf_free(&b);
}
END_TEST

START_TEST(test_png_truncated_message)
{
    buf_t b = png_small(40, 30, PNG_COLOR_TYPE_RGB, 8, NULL);
    long idat = png_find_chunk(&b, "IDAT");
    ck_assert_int_gt(idat, 0);
    gm_image img;
    char err[256];
    /* cut in the middle of the pixel data */
    size_t cut = (size_t)idat + 8 + get_be32(b.data + idat) / 2;
    ck_assert_int_eq(load_both(b.data, cut, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_str_eq(err, "truncated PNG data");
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_truncated)
{
    jpeg_spec s = jpeg_rgb_spec;
    s.w = 24;
    s.h = 20;
    buf_t b = jpeg_textured(&s);
    check_truncations(&b, 3);
    buf_free(&b);
    s.progressive = 1;
    b = jpeg_textured(&s);
    check_truncations(&b, 3);
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_truncated_message)
{
    jpeg_spec s = jpeg_rgb_spec;
    s.w = s.h = 64;
    buf_t b = jpeg_textured(&s);
    size_t start = jpeg_scan_start(&b);
    gm_image img;
    char err[256];
    ck_assert_int_eq(load_both(b.data, (start + b.len) / 2, 0, &img, err, sizeof err),
                     GM_ERR_CORRUPT);
    ck_assert_str_eq(err, "truncated JPEG data");
    buf_free(&b);
}
END_TEST

START_TEST(test_png_bad_crc)
{
    buf_t orig = png_small(20, 20, PNG_COLOR_TYPE_GRAY, 8, NULL);
    long idat = png_find_chunk(&orig, "IDAT");
    size_t len = get_be32(orig.data + idat);
    gm_image img;
    char err[256];

    /* the CRC itself damaged */
    buf_t b = buf_copy(orig.data, orig.len);
    b.data[idat + 8 + (long)len] ^= 0x01;
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_str_eq(err, "IDAT: CRC error");
    buf_free(&b);

    /* a byte in the middle of the data: zlib or the CRC check notices */
    b = buf_copy(orig.data, orig.len);
    b.data[idat + 8 + (long)len / 2] ^= 0x55;
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    buf_free(&b);
    buf_free(&orig);
}
END_TEST

START_TEST(test_png_bad_zlib)
{
    uint8_t *exp;
    buf_t orig = png_small(20, 20, PNG_COLOR_TYPE_RGB, 8, &exp);
    long idat = png_find_chunk(&orig, "IDAT");
    size_t data = (size_t)idat + 8, len = get_be32(orig.data + idat);
    gm_image img;
    char err[256];

    /* a broken zlib header, CRC made right */
    buf_t b = buf_copy(orig.data, orig.len);
    b.data[data] = 0;
    png_fix_crc(&b, (size_t)idat);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    buf_free(&b);

    /* a wrong ADLER32 at the end of the stream */
    b = buf_copy(orig.data, orig.len);
    b.data[data + len - 1] ^= 1;
    png_fix_crc(&b, (size_t)idat);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_msg(strstr(err, "IDAT") != NULL, "%s", err);
    buf_free(&b);

    /* the same with the ADLER32 in an IDAT of its own: zlib meets it only
     * after the last pixel row, where libpng merely warns */
    b = buf_copy(orig.data, data + len - 4);
    put_be32(b.data + idat, (uint32_t)len - 4);
    buf_put(&b, "\0\0\0\0", 4); /* CRC, fixed below */
    size_t idat2 = b.len;
    uint8_t hdr[8] = {0, 0, 0, 4, 'I', 'D', 'A', 'T'};
    buf_put(&b, hdr, 8);
    buf_put(&b, orig.data + data + len - 4, 4);
    buf_put(&b, "\0\0\0\0", 4);
    buf_put(&b, orig.data + data + len + 4, orig.len - (data + len + 4)); /* IEND */
    png_fix_crc(&b, (size_t)idat);
    png_fix_crc(&b, idat2);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_OK); /* the split is valid */
    gm_image_free(&img);
    b.data[idat2 + 8 + 3] ^= 1;
    png_fix_crc(&b, idat2);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_str_eq(err, "IDAT: incorrect data check");
    buf_free(&b);

    /* every byte of the deflate data flipped: an error, or the right pixels */
    int errors = 0;
    for (size_t i = 0; i < len; i++) {
        b = buf_copy(orig.data, orig.len);
        b.data[data + i] ^= 0xFF;
        png_fix_crc(&b, (size_t)idat);
        gm_status st = load_mem_check(b.data, b.len, &img, err, sizeof err);
        if (st == GM_OK) {
            ck_assert_msg(memcmp(img.data, exp, 400) == 0, "byte %zu flipped: wrong pixels", i);
            gm_image_free(&img);
        } else {
            ck_assert_int_eq(st, GM_ERR_CORRUPT);
            errors++;
        }
        buf_free(&b);
    }
    ck_assert_int_gt(errors, (int)len / 2);
    free(exp);
    buf_free(&orig);
}
END_TEST

START_TEST(test_png_extra_zlib_data)
{
    /* bytes after the end of the deflate stream, inside the IDAT: buggy
     * encoders write them, every pixel is still right */
    uint8_t *exp;
    buf_t orig = png_small(9, 9, PNG_COLOR_TYPE_GRAY, 8, &exp);
    long idat = png_find_chunk(&orig, "IDAT");
    size_t end = (size_t)idat + 8 + get_be32(orig.data + idat);
    buf_t b = buf_copy(orig.data, end);
    buf_put(&b, "xyz", 3);
    put_be32(b.data + idat, get_be32(b.data + idat) + 3);
    buf_put(&b, orig.data + end, orig.len - end);
    png_fix_crc(&b, (size_t)idat);
    gm_image img;
    char err[256];
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_OK);
    ck_assert_mem_eq(img.data, exp, 81);
    gm_image_free(&img);
    free(exp);
    buf_free(&b);
    buf_free(&orig);
}
END_TEST

START_TEST(test_png_mutations)
{
    /* a small fuzz: random bytes changed anywhere, CRCs recomputed so that
     * the damage reaches libpng's chunk parsers and zlib */
    png_spec s = {11, 7, PNG_COLOR_TYPE_PALETTE, 4, PNG_INTERLACE_ADAM7, 1, 0};
    uint8_t *exp;
    buf_t orig = png_make(&s, &exp);
    free(exp);
    uint32_t r = 12345;
    for (int iter = 0; iter < 3000; iter++) {
        buf_t b = buf_copy(orig.data, orig.len);
        int nflips = 1 + iter % 4;
        for (int k = 0; k < nflips; k++) {
            r = r * 1103515245u + 12345u;
            size_t pos = 8 + (r >> 8) % (b.len - 8);
            r = r * 1103515245u + 12345u;
            b.data[pos] = (uint8_t)(r >> 16);
        }
        if (iter % 2)
            png_fix_all_crcs(&b);
        gm_image img;
        char err[256];
        if (load_mem_check(b.data, b.len, &img, err, sizeof err) == GM_OK)
            gm_image_free(&img);
        buf_free(&b);
    }
    buf_free(&orig);
}
END_TEST

START_TEST(test_jpeg_damaged)
{
    jpeg_spec s = jpeg_rgb_spec;
    s.w = s.h = 64;
    buf_t orig = jpeg_textured(&s);
    size_t start = jpeg_scan_start(&orig), end = orig.len - 2;
    gm_image img;
    char err[256];

    /* a marker in the middle of the entropy-coded data: rows are missing */
    buf_t b = buf_copy(orig.data, orig.len);
    size_t mid = (start + end) / 2;
    b.data[mid] = 0xFF;
    b.data[mid + 1] = 0xD9;
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_msg(strstr(err, "Corrupt JPEG data") != NULL, "%s", err);
    buf_free(&b);

    /* garbage before a marker other than EOI */
    long sos = jpeg_find_marker(&orig, 0xDA);
    b = buf_copy(orig.data, (size_t)sos);
    buf_put(&b, "\0\0", 2);
    buf_put(&b, orig.data + sos, orig.len - (size_t)sos);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_msg(strstr(err, "extraneous") != NULL, "%s", err);
    buf_free(&b);

    /* every byte of the scan flipped in turn: JPEG has no checksum, so some
     * flips decode to other pixels, but none may crash and most are caught */
    int errors = 0, n = 0;
    for (size_t i = start; i < end; i++, n++) {
        b = buf_copy(orig.data, orig.len);
        b.data[i] ^= 0xFF;
        gm_status st = load_mem_check(b.data, b.len, &img, err, sizeof err);
        if (st == GM_OK) {
            ck_assert_int_eq(img.width, 64);
            gm_image_free(&img);
        } else {
            errors++;
        }
        buf_free(&b);
    }
    ck_assert_int_gt(errors, 0);
    buf_free(&orig);
}
END_TEST

START_TEST(test_jpeg_mutations)
{
    jpeg_spec s = jpeg_rgb_spec;
    s.w = 20;
    s.h = 12;
    s.progressive = 1;
    buf_t orig = jpeg_textured(&s);
    uint32_t r = 777;
    for (int iter = 0; iter < 3000; iter++) {
        buf_t b = buf_copy(orig.data, orig.len);
        int nflips = 1 + iter % 3;
        for (int k = 0; k < nflips; k++) {
            r = r * 1103515245u + 12345u;
            size_t pos = 3 + (r >> 8) % (b.len - 3);
            r = r * 1103515245u + 12345u;
            b.data[pos] = (uint8_t)(r >> 16);
        }
        gm_image img;
        char err[256];
        if (load_mem_check(b.data, b.len, &img, err, sizeof err) == GM_OK)
            gm_image_free(&img);
        buf_free(&b);
    }
    buf_free(&orig);
}
END_TEST

/* Patch the IHDR's width and height, CRC made right. */
static void png_set_size(buf_t *b, uint32_t w, uint32_t h)
{
    ck_assert_int_eq(memcmp(b->data + 12, "IHDR", 4), 0);
    put_be32(b->data + 16, w);
    put_be32(b->data + 20, h);
    png_fix_crc(b, 8);
}

START_TEST(test_png_zero_size)
{
    gm_image img;
    char err[256];
    buf_t b = png_small(4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL);
    png_set_size(&b, 0, 4);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_EMPTY);
    png_set_size(&b, 4, 0);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_EMPTY);
    buf_free(&b);
}
END_TEST

START_TEST(test_png_bad_ihdr)
{
    gm_image img;
    char err[256];
    buf_t b = png_small(4, 4, PNG_COLOR_TYPE_GRAY, 8, NULL);
    b.data[24] = 3; /* bit depth 3 */
    png_fix_crc(&b, 8);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_CORRUPT);
    ck_assert_msg(strstr(err, "IHDR") != NULL && strstr(err, "depth") != NULL, "%s", err);
    buf_free(&b);
}
END_TEST

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

START_TEST(test_png_huge)
{
    gm_image img;
    char err[256];
    buf_t b = png_small(4, 4, PNG_COLOR_TYPE_RGB, 8, NULL);
    png_set_size(&b, 100000, 100000);
    double t0 = now_s();
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_TOO_LARGE);
    ck_assert_str_eq(err,
                     "image is 100000x100000 pixels, over the limit of 100000000 (--max-pixels)");
    /* also a file that ends right after its IHDR */
    ck_assert_int_eq(load_both(b.data, 33, 0, &img, err, sizeof err), GM_ERR_TOO_LARGE);
    /* wide and flat: over libpng's default 1,000,000 limit a side, within ours */
    png_set_size(&b, 2000000, 100000);
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_TOO_LARGE);
    ck_assert_msg(now_s() - t0 < 2.0, "the size check must come before any decoding");
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_zero_height)
{
    static const uint8_t g = 10;
    gm_image img;
    char err[256];
    buf_t b = jpeg_flat(&jpeg_gray_spec, &g);
    size_t sof = jpeg_sof(&b);
    b.data[sof + 5] = 0; /* height */
    b.data[sof + 6] = 0;
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_EMPTY);
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_huge)
{
    static const uint8_t c[3] = {1, 2, 3};
    gm_image img;
    char err[256];
    buf_t b = jpeg_flat(&jpeg_rgb_spec, c);
    size_t sof = jpeg_sof(&b);
    b.data[sof + 5] = 60000 >> 8; /* 60000 x 60000 */
    b.data[sof + 6] = 60000 & 255;
    b.data[sof + 7] = 60000 >> 8;
    b.data[sof + 8] = 60000 & 255;
    double t0 = now_s();
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_TOO_LARGE);
    ck_assert_msg(now_s() - t0 < 2.0, "the size check must come before any decoding");
    ck_assert_msg(strstr(err, "60000x60000") != NULL, "%s", err);
    buf_free(&b);
}
END_TEST

START_TEST(test_jpeg_12bit)
{
    static const uint8_t g = 10;
    gm_image img;
    char err[256];
    buf_t b = jpeg_flat(&jpeg_gray_spec, &g);
    b.data[jpeg_sof(&b) + 4] = 12; /* sample precision */
    ck_assert_int_eq(load_buf(&b, 0, &img, err, sizeof err), GM_ERR_UNSUPPORTED);
    buf_free(&b);
}
END_TEST

START_TEST(test_max_pixels)
{
    static const uint8_t g = 10;
    buf_t bufs[2];
    bufs[0] = png_small(10, 10, PNG_COLOR_TYPE_GRAY, 8, NULL);
    jpeg_spec s = jpeg_gray_spec;
    s.w = s.h = 10;
    bufs[1] = jpeg_flat(&s, &g);
    for (int i = 0; i < 2; i++) {
        gm_image img;
        char err[256];
        ck_assert_int_eq(load_buf(&bufs[i], 99, &img, err, sizeof err), GM_ERR_TOO_LARGE);
        ck_assert_str_eq(err, "image is 10x10 pixels, over the limit of 99 (--max-pixels)");
        ck_assert_int_eq(load_buf(&bufs[i], 100, &img, err, sizeof err), GM_OK);
        gm_image_free(&img);
        ck_assert_int_eq(load_buf(&bufs[i], 0, &img, err, sizeof err), GM_OK); /* default */
        gm_image_free(&img);
        ck_assert_int_eq(load_buf(&bufs[i], -1, &img, err, sizeof err), GM_OK);
        gm_image_free(&img);
        buf_free(&bufs[i]);
    }
}
END_TEST

START_TEST(test_pipe)
{
    /* streams: the sniffed bytes are replayed, nothing seeks */
    struct stat sb;
    if (stat("/dev/fd", &sb) != 0)
        return;
    static const uint8_t c[3] = {90, 30, 200};
    buf_t bufs[2];
    bufs[0] = png_small(30, 20, PNG_COLOR_TYPE_RGB, 8, NULL);
    bufs[1] = jpeg_flat(&jpeg_rgb_spec, c);
    for (int i = 0; i < 2; i++) {
        int fd[2];
        ck_assert_int_eq(pipe(fd), 0);
        ck_assert_int_eq(write(fd[1], bufs[i].data, bufs[i].len), (ssize_t)bufs[i].len);
        close(fd[1]);
        char path[32], err[256];
        snprintf(path, sizeof path, "/dev/fd/%d", fd[0]);
        gm_image a, b;
        ck_assert_int_eq(gm_image_load(path, 0, &a, err, sizeof err), GM_OK);
        close(fd[0]);
        ck_assert_int_eq(gm_image_load_mem(bufs[i].data, bufs[i].len, 0, &b, err, sizeof err),
                         GM_OK);
        ck_assert_int_eq(a.width, b.width);
        ck_assert_mem_eq(a.data, b.data, (size_t)a.width * (size_t)a.height);
        gm_image_free(&a);
        gm_image_free(&b);
        buf_free(&bufs[i]);
    }
}
END_TEST

START_TEST(test_invalid_args)
{
    gm_image img;
    char err[256];
    ck_assert_int_eq(gm_image_load(NULL, 0, &img, err, sizeof err), GM_ERR_INVALID);
    ck_assert(is_zeroed(&img));
    ck_assert_int_eq(gm_image_load("x", 0, NULL, err, sizeof err), GM_ERR_INVALID);
    ck_assert_int_eq(gm_image_load_mem(NULL, 5, 0, &img, err, sizeof err), GM_ERR_INVALID);
    ck_assert_int_eq(gm_image_load_mem((const uint8_t *)"x", 1, 0, NULL, NULL, 0),
                     GM_ERR_INVALID);
}
END_TEST

START_TEST(test_err_buffer)
{
    gm_image img;
    char err[8];
    /* no buffer, an empty one, a short one */
    ck_assert_int_eq(gm_image_load_mem((const uint8_t *)"abc", 3, 0, &img, NULL, 0),
                     GM_ERR_FORMAT);
    memset(err, 'z', sizeof err);
    ck_assert_int_eq(gm_image_load_mem((const uint8_t *)"abc", 3, 0, &img, err, 0),
                     GM_ERR_FORMAT);
    ck_assert_int_eq(err[0], 'z');
    ck_assert_int_eq(gm_image_load_mem((const uint8_t *)"abc", 3, 0, &img, err, 4),
                     GM_ERR_FORMAT);
    ck_assert_str_eq(err, "not");
    /* success clears it */
    buf_t b = png_small(2, 2, PNG_COLOR_TYPE_GRAY, 8, NULL);
    ck_assert_int_eq(gm_image_load_mem(b.data, b.len, 0, &img, err, sizeof err), GM_OK);
    ck_assert_str_eq(err, "");
    gm_image_free(&img);
    buf_free(&b);
}
END_TEST

START_TEST(test_view_and_free)
{
    uint8_t *exp;
    buf_t b = png_small(5, 3, PNG_COLOR_TYPE_GRAY, 8, &exp);
    gm_image img;
    ck_assert_int_eq(gm_image_load_mem(b.data, b.len, 0, &img, NULL, 0), GM_OK);
    gm_view v = gm_image_view(&img);
    ck_assert_ptr_eq(v.data, img.data);
    ck_assert_int_eq(v.width, 5);
    ck_assert_int_eq(v.height, 3);
    ck_assert_int_eq(v.stride, 5);
    ck_assert_mem_eq(v.data, exp, 15);
    gm_image_free(&img);
    ck_assert(is_zeroed(&img));
    gm_image_free(&img); /* twice is harmless */
    gm_image_free(NULL);
    v = gm_image_view(NULL);
    ck_assert_ptr_null(v.data);
    free(exp);
    buf_free(&b);
}
END_TEST

/* ---- runner ----------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ---- gm_image_from_pixels ------------------------------------------------- */

/* An H x W x 3 BGR array and the same pixels as RGB, as a transposed view
 * (column-major) and as a slice with a step: the same gray everywhere, and
 * the gray the decoders give (white 255, the weights of gm_gray_from_rgb). */
START_TEST(test_pixels_layouts)
{
    enum { W = 7, H = 5 };
    uint8_t bgr[H][W][3], rgb_t[W][H][3], gray[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t b = (uint8_t)(30 * x), g = (uint8_t)(50 * y), r = (uint8_t)(255 - 20 * x);
            bgr[y][x][0] = b, bgr[y][x][1] = g, bgr[y][x][2] = r;
            rgb_t[x][y][0] = r, rgb_t[x][y][1] = g, rgb_t[x][y][2] = b;
            gray[y][x] = (uint8_t)((19595u * r + 38470u * g + 7471u * b + 32768u) >> 16);
        }
    gm_image a, b, c;
    char err[128];
    gm_pixels pa = {bgr, W, H, 3, 1, 1, W * 3, 3, 1};
    ck_assert_int_eq(gm_image_from_pixels(&pa, 0, &a, err, sizeof err), GM_OK);
    gm_pixels pb = {rgb_t, W, H, 3, 1, 0, 3, H * 3, 1}; /* transposed storage */
    ck_assert_int_eq(gm_image_from_pixels(&pb, 0, &b, err, sizeof err), GM_OK);
    /* every other column of a 2W-wide gray image, bottom-up (negative row stride) */
    uint8_t wide[H][2 * W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            wide[H - 1 - y][2 * x] = gray[y][x], wide[H - 1 - y][2 * x + 1] = 0;
    gm_pixels pc = {&wide[H - 1][0], W, H, 1, 1, 0, -2 * W, 2, 0};
    ck_assert_int_eq(gm_image_from_pixels(&pc, 0, &c, err, sizeof err), GM_OK);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            ck_assert_int_eq(a.data[y * a.stride + x], gray[y][x]);
            ck_assert_int_eq(b.data[y * b.stride + x], gray[y][x]);
            ck_assert_int_eq(c.data[y * c.stride + x], gray[y][x]);
        }
    uint8_t white[4] = {255, 255, 255, 0}; /* BGRA: alpha 0 is ignored */
    gm_pixels pw = {white, 1, 1, 4, 1, 1, 4, 4, 1};
    gm_image wi;
    ck_assert_int_eq(gm_image_from_pixels(&pw, 0, &wi, err, sizeof err), GM_OK);
    ck_assert_int_eq(wi.data[0], 255);
    gm_image_free(&a), gm_image_free(&b), gm_image_free(&c), gm_image_free(&wi);
}
END_TEST

/* 16-bit samples by their actual range: 10-bit data (0..1023) spans 0..255,
 * full 16-bit data too, and samples that never pass 255 stay as they are. */
START_TEST(test_pixels_16bit)
{
    uint16_t ten[4] = {0, 512, 1023, 100}, full[3] = {0, 32768, 65535}, low[2] = {7, 255};
    gm_image im;
    char err[128];
    gm_pixels p10 = {ten, 4, 1, 1, 2, 0, 8, 2, 0};
    ck_assert_int_eq(gm_image_from_pixels(&p10, 0, &im, err, sizeof err), GM_OK);
    ck_assert_int_eq(im.data[0], 0);
    ck_assert_int_eq(im.data[1], 128); /* 512 * 255 / 1023 = 127.6 */
    ck_assert_int_eq(im.data[2], 255);
    ck_assert_int_eq(im.data[3], 25);  /* 24.9 */
    gm_image_free(&im);
    gm_pixels pf = {full, 3, 1, 1, 2, 0, 6, 2, 0};
    ck_assert_int_eq(gm_image_from_pixels(&pf, 0, &im, err, sizeof err), GM_OK);
    ck_assert_int_eq(im.data[1], 128);
    ck_assert_int_eq(im.data[2], 255);
    gm_image_free(&im);
    gm_pixels pl = {low, 2, 1, 1, 2, 0, 4, 2, 0};
    ck_assert_int_eq(gm_image_from_pixels(&pl, 0, &im, err, sizeof err), GM_OK);
    ck_assert_int_eq(im.data[0], 7);
    ck_assert_int_eq(im.data[1], 255);
    gm_image_free(&im);
    /* 12-bit colour: white (4095, 4095, 4095) is 255 */
    uint16_t c12[3] = {4095, 4095, 4095};
    gm_pixels pc = {c12, 1, 1, 3, 2, 1, 6, 6, 2};
    ck_assert_int_eq(gm_image_from_pixels(&pc, 0, &im, err, sizeof err), GM_OK);
    ck_assert_int_eq(im.data[0], 255);
    gm_image_free(&im);
}
END_TEST

/* Refusals, each with its status and a message; *out zeroed. */
START_TEST(test_pixels_errors)
{
    uint8_t px[16] = {0};
    gm_image im;
    char err[128];
    gm_pixels two = {px, 2, 2, 2, 1, 0, 4, 2, 1};
    ck_assert_int_eq(gm_image_from_pixels(&two, 0, &im, err, sizeof err), GM_ERR_INVALID);
    ck_assert(strstr(err, "2 channels") != NULL);
    ck_assert(im.data == NULL);
    gm_pixels four = {px, 2, 2, 1, 4, 0, 8, 4, 0};
    ck_assert_int_eq(gm_image_from_pixels(&four, 0, &im, err, sizeof err), GM_ERR_INVALID);
    gm_pixels empty = {px, 0, 2, 1, 1, 0, 0, 1, 0};
    ck_assert_int_eq(gm_image_from_pixels(&empty, 0, &im, err, sizeof err), GM_ERR_EMPTY);
    gm_pixels big = {px, 4, 4, 1, 1, 0, 4, 1, 0};
    ck_assert_int_eq(gm_image_from_pixels(&big, 15, &im, err, sizeof err), GM_ERR_TOO_LARGE);
    ck_assert(strstr(err, "4x4") != NULL);
    /* the largest dimensions an int holds: the count is taken in 64 bits
     * (2^62 pixels, not a wrapped product), refused before any allocation */
    gm_pixels widest = {px, INT_MAX, INT_MAX, 1, 1, 0, 0, 0, 0};
    ck_assert_int_eq(gm_image_from_pixels(&widest, 0, &im, err, sizeof err), GM_ERR_TOO_LARGE);
    ck_assert(strstr(err, "2147483647x2147483647") != NULL);
    ck_assert(im.data == NULL);
    gm_pixels none = {NULL, 2, 2, 1, 1, 0, 2, 1, 0};
    ck_assert_int_eq(gm_image_from_pixels(&none, 0, &im, err, sizeof err), GM_ERR_INVALID);
    ck_assert_int_eq(gm_image_from_pixels(NULL, 0, &im, err, sizeof err), GM_ERR_INVALID);
}
END_TEST

static Suite *image_suite(void)
{
    Suite *s = suite_create("image");
    TCase *png = tcase_create("png");
    tcase_add_test(png, test_png_gray8);
    tcase_add_test(png, test_png_gray16);
    tcase_add_test(png, test_png_10bit_in_16);
    tcase_add_test(png, test_png_gray_low_bits);
    tcase_add_test(png, test_png_rgb8);
    tcase_add_test(png, test_png_rgb16);
    tcase_add_test(png, test_png_rgba);
    tcase_add_test(png, test_png_gray_alpha);
    tcase_add_test(png, test_png_palette);
    tcase_add_test(png, test_png_palette_trns);
    tcase_add_test(png, test_png_trns_colour);
    tcase_add_test(png, test_png_interlaced);
    tcase_add_test(png, test_png_1x1);
    tcase_add_test(png, test_png_trailing_garbage);
    suite_add_tcase(s, png);

    TCase *jpeg = tcase_create("jpeg");
    tcase_add_test(jpeg, test_jpeg_gray);
    tcase_add_test(jpeg, test_jpeg_ycbcr);
    tcase_add_test(jpeg, test_jpeg_rgb_colourspace);
    tcase_add_test(jpeg, test_jpeg_progressive);
    tcase_add_test(jpeg, test_jpeg_arithmetic);
    tcase_add_test(jpeg, test_jpeg_cmyk_adobe);
    tcase_add_test(jpeg, test_jpeg_cmyk_plain);
    tcase_add_test(jpeg, test_jpeg_ycck);
    tcase_add_test(jpeg, test_jpeg_1x1);
    tcase_add_test(jpeg, test_jpeg_trailing_bytes);
    tcase_add_test(jpeg, test_jpeg_scan_limit);
    suite_add_tcase(s, jpeg);

    TCase *bad = tcase_create("bad_input");
    tcase_set_timeout(bad, 60);
    tcase_add_test(bad, test_missing_file);
    tcase_add_test(bad, test_directory);
    tcase_add_test(bad, test_empty);
    tcase_add_test(bad, test_not_an_image);
    tcase_add_test(bad, test_png_signature_only);
    tcase_add_test(bad, test_jpeg_soi_only);
    tcase_add_test(bad, test_png_truncated);
    tcase_add_test(bad, test_png_truncated_message);
    tcase_add_test(bad, test_jpeg_truncated);
    tcase_add_test(bad, test_jpeg_truncated_message);
    tcase_add_test(bad, test_png_bad_crc);
    tcase_add_test(bad, test_png_bad_zlib);
    tcase_add_test(bad, test_png_extra_zlib_data);
    tcase_add_test(bad, test_png_mutations);
    tcase_add_test(bad, test_jpeg_damaged);
    tcase_add_test(bad, test_jpeg_mutations);
    tcase_add_test(bad, test_png_zero_size);
    tcase_add_test(bad, test_png_bad_ihdr);
    tcase_add_test(bad, test_png_huge);
    tcase_add_test(bad, test_jpeg_zero_height);
    tcase_add_test(bad, test_jpeg_huge);
    tcase_add_test(bad, test_jpeg_12bit);
    suite_add_tcase(s, bad);

    TCase *api = tcase_create("api");
    tcase_add_test(api, test_max_pixels);
    tcase_add_test(api, test_pipe);
    tcase_add_test(api, test_invalid_args);
    tcase_add_test(api, test_err_buffer);
    tcase_add_test(api, test_view_and_free);
    tcase_add_test(api, test_pixels_layouts);
    tcase_add_test(api, test_pixels_16bit);
    tcase_add_test(api, test_pixels_errors);
    suite_add_tcase(s, api);
    return s;
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/gm_test_image_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(image_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
