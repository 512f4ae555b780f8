/* gmatch.h: find where a query image appears inside a reference image.
 *
 * Geometric hashing on the cuckoo hash tables of Alcantara et al.,
 * "Real-Time Parallel Hashing on the GPU" (SIGGRAPH Asia 2009), section 6.
 *
 * Usage:
 *
 *     gm_params p = gm_params_default();
 *     gm_image ref, qry;
 *     char err[256];
 *     if (gm_image_load("ref.jpg", p.max_pixels, &ref, err, sizeof err) != GM_OK) {
 *         fprintf(stderr, "ref.jpg: %s\n", err);
 *         ...
 *     }
 *     gm_ref *r;
 *     gm_ref_prepare(&p, gm_image_view(&ref), &r);      // once per reference
 *     gm_image_load("q.png", p.max_pixels, &qry, err, sizeof err);
 *     gm_result res;
 *     gm_match(r, gm_image_view(&qry), &res);            // once per query
 *     if (res.status == GM_MATCH_FOUND)
 *         printf("%g %g %g / %g %g %g\n", res.m[0], res.m[1], res.m[2],
 *                res.m[3], res.m[4], res.m[5]);
 *     gm_ref_free(r); gm_image_free(&ref); gm_image_free(&qry);
 *
 * Conventions: the matrix m = [a b c; d e f] maps query pixel (x, y) to
 * reference pixel (a*x + b*y + c, d*x + e*y + f); x right, y down, pixel
 * centres at integer coordinates (OpenCV's warpAffine convention).
 * The library never prints to stdout and never exits; errors come back as
 * gm_status with a message on the handle or in a caller's buffer.
 */
#ifndef GMATCH_H
#define GMATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "gmatch_version.h" /* GMATCH_VERSION, GMATCH_VERSION_MAJOR, ... */

/* What the library exports: it is built with hidden visibility, so the
 * functions marked GM_API are its whole interface (the shared library's
 * dynamic symbols are exactly these). */
#if defined(_WIN32) && defined(GMATCH_BUILDING)
#define GM_API __declspec(dllexport)
#elif defined(__GNUC__)
#define GM_API __attribute__((visibility("default")))
#else
#define GM_API
#endif

typedef enum {
    GM_OK = 0,
    GM_ERR_IO = -1,          /* cannot open / read a file */
    GM_ERR_FORMAT = -2,      /* not an image format we read */
    GM_ERR_CORRUPT = -3,     /* truncated or corrupt image data */
    GM_ERR_TOO_LARGE = -4,   /* over the pixel limit */
    GM_ERR_NOMEM = -5,       /* allocation failed */
    GM_ERR_INVALID = -6,     /* invalid argument */
    GM_ERR_EMPTY = -7,       /* zero-size image */
    GM_ERR_UNSUPPORTED = -8, /* a variant of a known format we do not read */
    GM_ERR_HASH = -9,        /* a hash table could not be built within its restart budget */
    GM_ERR_DEVICE = -10,     /* GPU unavailable or a CUDA call failed */
} gm_status;

GM_API const char *gm_status_str(gm_status s);
/* The library's version at run time, "MAJOR.MINOR.PATCH" (GMATCH_VERSION is
 * the headers'). */
GM_API const char *gm_version(void);

/* ---- images ------------------------------------------------------------ */

/* A borrowed 8-bit grayscale view; stride in BYTES (like AVFrame linesize). */
typedef struct {
    const uint8_t *data;
    int width, height;
    ptrdiff_t stride;
} gm_view;

/* An owned 8-bit grayscale image; free with gm_image_free. */
typedef struct {
    uint8_t *data;
    int width, height;
    ptrdiff_t stride;
} gm_image;

/* Default pixel limit (width*height) for decoding: 100 megapixels. */
#define GM_DEFAULT_MAX_PIXELS ((int64_t)100 * 1000 * 1000)

/* Decode a JPEG or PNG file (sniffed by content, not by name) to 8-bit gray.
 * max_pixels <= 0 means GM_DEFAULT_MAX_PIXELS; the limit is checked against
 * the header before any pixel buffer is allocated.  On failure *out is zeroed
 * and err (if non-NULL) holds a one-line message without the file name, such
 * as "truncated JPEG data" or "not a JPEG or PNG image".
 * The caller frees *out with gm_image_free. */
GM_API gm_status gm_image_load(const char *path, int64_t max_pixels, gm_image *out,
                               char *err, size_t errlen);
/* The same from memory (data is not retained). */
GM_API gm_status gm_image_load_mem(const uint8_t *data, size_t size, int64_t max_pixels,
                                   gm_image *out, char *err, size_t errlen);
GM_API void gm_image_free(gm_image *img);
GM_API gm_view gm_image_view(const gm_image *img);

/* ---- matching ---------------------------------------------------------- */

typedef enum { GM_DEVICE_AUTO = 0, GM_DEVICE_CPU = 1, GM_DEVICE_CUDA = 2 } gm_device;

/* The transform reported.  The search is for a similarity first; the
 * verified similarity is then refined to the chosen model on the edges.
 * With affine, homography and auto, when no similarity is confident,
 * three-point bases with affine-invariant keys search too (views with
 * perspective are locally affine), grown from their triangle to the model. */
typedef enum {
    GM_MODEL_SIMILARITY = 0, /* rotation, uniform scale, translation (4 dof) */
    GM_MODEL_AFFINE = 1,     /* 6 dof */
    GM_MODEL_HOMOGRAPHY = 2, /* 8 dof, for views with perspective */
    GM_MODEL_AUTO = 3,       /* the simplest of the three that the edges support: a
                                richer model only where it confirms clearly more of
                                the query (gm_result.model says which) */
} gm_model;

/* "similarity", "affine" or "homography" ("unknown" otherwise). */
GM_API const char *gm_model_name(gm_model m);

typedef struct {
    uint64_t seed;          /* same seed, same output, whatever the thread count */
    int threads;            /* OpenMP threads; 0 = all cores */
    gm_device device;
    gm_model model;
    double min_confidence;  /* below it the result is GM_MATCH_NONE */
    int64_t max_pixels;     /* decode limit, see gm_image_load */
    int max_side;           /* images are matched at a working size of at most this many pixels a side */
    int ref_points;         /* target edge points sampled from the reference */
    int query_points;       /* target edge points sampled from the query */
    int basis_points;       /* corner points that basis pairs are drawn from */
    double ref_basis_prob;  /* probability that a reference corner pair becomes a basis (paper: 1/5) */
    int query_bases;        /* number of query bases voted (m) */
    int top_k;              /* candidates kept from the vote matrix for verification */
} gm_params;

GM_API gm_params gm_params_default(void);

typedef struct gm_ref gm_ref; /* a prepared reference: edges, bases, hash tables */

/* Prepare a reference image once; reuse it for every query.  The view is
 * copied where needed and may be freed after the call.  Free with gm_ref_free. */
GM_API gm_status gm_ref_prepare(const gm_params *p, gm_view img, gm_ref **out);
GM_API void gm_ref_free(gm_ref *r);
/* The last error message of this reference (never NULL). */
GM_API const char *gm_ref_error(const gm_ref *r);
/* What matches against this reference, in words: "cpu, N threads" or
 * "cuda: <GPU>, ..."; under GM_DEVICE_AUTO without a usable GPU it says why. */
GM_API const char *gm_ref_device(const gm_ref *r);
/* Why the calling thread's last gm_ref_prepare could not use the GPU ("" when
 * it did or was not asked to); with GM_DEVICE_CUDA that call returned
 * GM_ERR_DEVICE. */
GM_API const char *gm_last_device_error(void);

typedef enum { GM_MATCH_NONE = 0, GM_MATCH_FOUND = 1 } gm_match_status;

/* Stage times of one call, in MILLISECONDS. */
typedef struct {
    double edges, bases, tables, vote, reduce, verify, total;
} gm_timing;

typedef struct {
    gm_match_status status;
    gm_model model;      /* the model of m / h */
    double m[6];         /* query -> reference, row-major [a b c; d e f]; valid when found;
                            for a homography the affine part of h (h / h[8], perspective dropped) */
    double h[9];         /* the full 3x3 matrix [m; 0 0 1], or the homography (h[8] = 1) */
    double scale;        /* reference pixels per query pixel */
    double angle_deg;    /* atan2(m[3], m[0]) in degrees: clockwise on screen (y down) is positive */
    int votes;           /* votes of the winning basis pair */
    double confidence;   /* 0..1, from verification of the transform against the edges */
    int inliers;         /* query edge points confirmed by the reference */
    gm_timing time;
} gm_result;

/* Match one query against a prepared reference.  Thread-safe for distinct
 * queries on the same reference.  GM_OK with status GM_MATCH_NONE is a
 * successful "no match". */
GM_API gm_status gm_match(const gm_ref *r, gm_view query, gm_result *out);

/* Reference preparation time, MILLISECONDS. */
GM_API double gm_ref_time_ms(const gm_ref *r);

#ifdef __cplusplus
}
#endif
#endif
