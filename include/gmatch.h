/* gmatch.h: find where a query image appears inside a reference image.
 *
 * Geometric hashing on the cuckoo hash tables of Alcantara et al.,
 * "Real-Time Parallel Hashing on the GPU" (SIGGRAPH Asia 2009), section 6.
 *
 * Usage (tests/install/example.c: the same as a whole program):
 *
 *     gm_params p = gm_params_default();          // every field: below
 *     gm_image ref, qry;
 *     char err[256];
 *     if (gm_image_load("ref.jpg", p.max_pixels, &ref, err, sizeof err) != GM_OK) {
 *         fprintf(stderr, "ref.jpg: %s\n", err);   // e.g. "truncated JPEG data"
 *         return 1;
 *     }
 *     gm_ref *r;
 *     if (gm_ref_prepare(&p, gm_image_view(&ref), &r) != GM_OK) {  // once per reference
 *         fprintf(stderr, "ref.jpg: %s\n", r ? gm_ref_error(r) : "out of memory");
 *         gm_ref_free(r);
 *         return 1;
 *     }
 *     gm_image_free(&ref);                         // r keeps what it needs
 *     if (gm_image_load("q.png", p.max_pixels, &qry, err, sizeof err) == GM_OK) {
 *         gm_result res;
 *         if (gm_match(r, gm_image_view(&qry), &res) != GM_OK)  // once per query
 *             fprintf(stderr, "q.png: %s\n", res.error);
 *         else if (res.status == GM_MATCH_FOUND)
 *             printf("%s [%g %g %g; %g %g %g] %.2f, within %.1f px\n",
 *                    gm_model_name(res.model), res.m[0], res.m[1], res.m[2], res.m[3],
 *                    res.m[4], res.m[5], res.confidence, res.uncertainty_px);
 *         else
 *             printf("none: %s\n", gm_reason_name(res.reason));  // e.g. "ambiguous"
 *         gm_image_free(&qry);
 *     }
 *     gm_ref_free(r);
 *
 * Build: cc app.c $(pkg-config --cflags --libs gmatch), or in CMake
 * find_package(gmatch) and target_link_libraries(app gmatch::gmatch).
 * Videos: gmatch_video.h.
 *
 * Threads: gm_match may run on many threads at once against one reference
 * (each with its own gm_result); everything else acts on the handle it is
 * given and is not to be called on that handle from two threads at once.
 * The library keeps no global state of its own but a CUDA memory pool and
 * each GPU's idle lanes (a stream and its stages' buffers, up to 16 a GPU,
 * left by a freed reference for the next one on that GPU: both kept for
 * the process), and changes none of the process's settings (OpenMP's
 * threads, FFmpeg's log level, CUDA's scheduling) unless the application
 * calls the functions that say so.  OpenMP's idle threads spin before they
 * sleep (GNU libgomp: some 300,000 rounds), milliseconds of a core that
 * other work may need: a program whose cores are shared may set
 * GOMP_SPINCOUNT=30000 or OMP_WAIT_POLICY=passive in its environment
 * before it starts (read as libgomp loads); the gmatch command and the
 * Python module set GOMP_SPINCOUNT=30000 where neither is set.
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

/* Sizes: a width or height is an int, as in OpenCV, FFmpeg and libpng (at
 * most INT_MAX; a decoder refuses more); a count of pixels is an int64_t
 * (max_pixels, taken as width * height in 64 bits before any allocation);
 * a count of bytes is a size_t; a stride is a ptrdiff_t (any sign).  No
 * product of two of them is taken in int. */

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

/* Decode a still image file (sniffed by content, not by name) to 8-bit gray:
 * JPEG and PNG by the library's own decoders; in a library built with FFmpeg
 * (gm_video_available()) also every format libavformat reads as a single
 * picture (TIFF, BMP, WebP, PNM, ...), as the command line does.  A video,
 * an animated GIF or another container is GM_ERR_FORMAT ("not a still
 * image": gm_image_load_frame in gmatch_video.h reads their frames).
 * max_pixels <= 0 means GM_DEFAULT_MAX_PIXELS; the limit is checked against
 * the header before any pixel buffer is allocated.  On failure *out is zeroed
 * and err (if non-NULL) holds a one-line message without the file name, such
 * as "truncated JPEG data", "empty file" or "not a JPEG or PNG image".
 * The caller frees *out with gm_image_free. */
GM_API gm_status gm_image_load(const char *path, int64_t max_pixels, gm_image *out,
                               char *err, size_t errlen);
/* The same from memory (data is not retained), JPEG and PNG only. */
GM_API gm_status gm_image_load_mem(const uint8_t *data, size_t size, int64_t max_pixels,
                                   gm_image *out, char *err, size_t errlen);
GM_API void gm_image_free(gm_image *img);
GM_API gm_view gm_image_view(const gm_image *img);

/* Pixels already in memory, in any layout: a numpy array (H x W gray or
 * H x W x 3 BGR as OpenCV loads it, sliced or transposed), an OpenCV Mat,
 * another library's frame.  Sample c of pixel (x, y) is at
 * data + y * row_stride + x * col_stride + c * chan_stride (BYTES, any
 * sign); a sample is `bytes` bytes, native byte order. */
typedef struct {
    const void *data;
    int width, height;
    int channels;             /* 1 gray, 3 colour, 4 colour + alpha (alpha ignored) */
    int bytes;                /* 1 (8-bit) or 2 (16-bit) */
    int bgr;                  /* colour order: nonzero B, G, R (OpenCV's), 0 R, G, B */
    ptrdiff_t row_stride, col_stride, chan_stride;
} gm_pixels;

/* To an owned 8-bit gray image (free with gm_image_free).  Colour becomes
 * gray by the weights gm_image_load uses, (19595 R + 38470 G + 7471 B +
 * 32768) >> 16.  16-bit samples are scaled by their actual range: with b
 * the bits of the largest sample (8 at least), v * 255 / (2^b - 1) rounded,
 * so 10- or 12-bit data in a 16-bit container comes out full range.
 * GM_ERR_EMPTY for a zero size, GM_ERR_TOO_LARGE over max_pixels (<= 0:
 * GM_DEFAULT_MAX_PIXELS), GM_ERR_INVALID for another channel count or
 * sample size; err (if non-NULL) gets a one-line message. */
GM_API gm_status gm_image_from_pixels(const gm_pixels *px, int64_t max_pixels, gm_image *out,
                                      char *err, size_t errlen);

/* ---- matching ---------------------------------------------------------- */

/* Which image is looked for inside which.  Forward: the query inside the
 * reference (a crop, a frame of the reference's scene; the query is the
 * smaller view or the two are alike), the search of docs/design.md.
 * Reverse: the reference inside the query (a poster in a photo, a logo in
 * each frame): the query is indexed as a reference and the reference's
 * image votes in it.  Two images that share part of their area are found
 * either way.  Auto: forward, and reverse when forward finds nothing. */
typedef enum {
    GM_DIRECTION_AUTO = 0,
    GM_DIRECTION_FORWARD = 1,
    GM_DIRECTION_REVERSE = 2,
} gm_direction;

typedef enum { GM_DEVICE_AUTO = 0, GM_DEVICE_CPU = 1, GM_DEVICE_CUDA = 2 } gm_device;
/* "auto", "cpu" or "cuda" ("unknown" otherwise). */
GM_API const char *gm_device_name(gm_device d);
/* A device as the command line's --device and Python's device= name it:
 * gm_device_name's word, and for a device of several units (cuda) also
 * the word, ':' and gm_params.gpus' list ("cuda:all", "cuda:1",
 * "cuda:0,2").  GM_OK with *device and *gpus set (*gpus: NULL, or the
 * list's first character inside name, living as long as name);
 * GM_ERR_UNSUPPORTED, both set too, for a device this library was built
 * without; GM_ERR_INVALID for anything else: an unknown word or NULL (both
 * untouched), or a device's word with a list that gm_ref_prepare would
 * refuse (both set, *gpus to that list, so that a caller can say which). */
GM_API gm_status gm_device_from_name(const char *name, gm_device *device, const char **gpus);

/* The transform reported.  The search is for a similarity first; the
 * verified similarity is then refined to the chosen model on the edges.
 * With affine, homography and auto, when no similarity is confident,
 * three-point bases with affine-invariant keys search too (views with
 * perspective are locally affine), grown from their triangle to the model. */
typedef enum {
    GM_MODEL_REFERENCE = -1, /* where a model may be left to the reference: the one it
                                was prepared for (gm_video_opts.model's default) */
    GM_MODEL_SIMILARITY = 0, /* rotation, uniform scale, translation (4 dof) */
    GM_MODEL_AFFINE = 1,     /* 6 dof */
    GM_MODEL_HOMOGRAPHY = 2, /* 8 dof, for views with perspective */
    GM_MODEL_AUTO = 3,       /* the simplest of the three that the edges support: a
                                richer model only where it confirms clearly more of
                                the query (gm_result.model says which) */
} gm_model;

/* "similarity", "affine", "homography" or "auto" ("unknown" otherwise). */
GM_API const char *gm_model_name(gm_model m);
/* The model that gm_model_name calls name, in *out: GM_OK, or
 * GM_ERR_INVALID for any other word (NULL included; *out untouched).  The
 * command line, its batch files and Python read model names through it. */
GM_API gm_status gm_model_from_name(const char *name, gm_model *out);

/* The parameters of a reference, fixed when it is prepared.  Start from
 * gm_params_default() and change what you need; gm_ref_prepare answers
 * GM_ERR_INVALID, with the field and its range in gm_ref_error, for a value
 * outside the range given here.  The defaults are the measured choices
 * (docs/benchmarks.md, docs/); the last seven shape the search and are for experiments. */
typedef struct {
    uint64_t seed;          /* default 1, any value: salts the hash tables' functions (where
                               an entry lies, never which entries there are); the search's
                               draws are a fixed function of the images, so every seed
                               gives the same output, whatever the thread count and the
                               device */
    int threads;            /* default 0: CPU threads of this reference's calls, 0 = OpenMP's
                               default (all cores unless OMP_NUM_THREADS says otherwise);
                               0..GM_MAX_THREADS.  Set for each call through num_threads
                               clauses: the application's OpenMP settings are left alone */
    gm_device device;       /* default GM_DEVICE_AUTO: the CPU first, the GPU once the
                               work repays its start (gm_ref_expect says how; at once when
                               a reference of this process runs on it already); the same
                               answers either way, gm_ref_device says which and why;
                               GM_DEVICE_CUDA: the GPU or GM_ERR_DEVICE */
    gm_model model;         /* default GM_MODEL_AUTO: the transform reported (the
                               simplest model the edges support; GM_MODEL_SIMILARITY is
                               the fastest, for views without tilt) */
    double min_confidence;  /* default 0.3, 0..1: below it the result is GM_MATCH_NONE
                               (docs/calibration.md) */
    int64_t max_pixels;     /* default GM_DEFAULT_MAX_PIXELS: a decode limit for the
                               caller's gm_image_load; <= 0 means the default */
    int max_side;           /* default 1024, GM_MIN_MAX_SIDE..GM_MAX_MAX_SIDE: images are
                               matched at a working size of at most this many pixels a side
                               (a larger reference also gets finer levels, docs/photo.md) */
    int ref_points;         /* default 600, GM_MIN_POINTS..GM_MAX_POINTS: edge points sampled
                               from the reference's working size into the hash table */
    int query_points;       /* default 500, GM_MIN_POINTS..GM_MAX_POINTS: edge points of the
                               query that vote */
    int basis_points;       /* default 400, GM_MIN_BASIS_POINTS..GM_MAX_BASIS_POINTS: corners
                               that basis pairs are drawn from */
    double ref_basis_prob;  /* default 0.2 (the paper's 1/5), above 0 up to 1: the share of
                               the reference's corner pairs that become bases */
    int query_bases;        /* default 400, 1..GM_MAX_QUERY_BASES: query bases that vote (m) */
    int top_k;              /* default 32, 1..GM_MAX_TOP_K: candidates verified */
    const char *gpus;       /* default NULL (= "0"): the GPUs of GM_DEVICE_CUDA and AUTO:
                               "all" (every visible one), a number "1", or a list "0,2"
                               (at most GM_MAX_GPUS; repeats allowed: "0,0" is two copies
                               on one GPU).  The reference is prepared on each, and
                               gm_match sends each query to the copy with the fewest
                               queries in flight, so threads matching at once (a video's
                               workers) spread over the GPUs; the results are the same
                               on any of them.  A GPU that is not there is GM_ERR_DEVICE
                               under cuda and the CPU under auto.  Read during
                               gm_ref_prepare only */
    gm_direction direction; /* default GM_DIRECTION_AUTO: which image may hold the other
                               (gm_direction); the others search one way only, faster */
    double max_uncertainty; /* default GM_DEFAULT_MAX_UNCERTAINTY, reference pixels, 0
                               meaning the default and INFINITY no bound: a match whose
                               uncertainty_px exceeds it is GM_MATCH_NONE with
                               GM_REASON_UNCERTAIN (docs/calibration.md) */
} gm_params;

/* The default max_uncertainty, reference pixels: above the largest bound of
 * a right answer (within 3 px) on the calibration sets, 14.5 px (a tilted
 * view of a 3840-pixel illustration; 10.6 on the public photo tier), so
 * that the default withholds only answers looser than any right one seen
 * (docs/calibration.md, "Uncertainty").  A caller who needs a tighter
 * placement sets a smaller bound. */
#define GM_DEFAULT_MAX_UNCERTAINTY 20.0

#define GM_MAX_THREADS 4096
#define GM_MIN_MAX_SIDE 64
#define GM_MAX_MAX_SIDE 16384
#define GM_MIN_POINTS 16
#define GM_MAX_POINTS 1000000
#define GM_MIN_BASIS_POINTS 8
#define GM_MAX_BASIS_POINTS 60000 /* a basis names its two corners in 16 bits each */
#define GM_MAX_QUERY_BASES 100000
#define GM_MAX_TOP_K 256
#define GM_MAX_GPUS 16

GM_API gm_params gm_params_default(void);

typedef struct gm_ref gm_ref; /* a prepared reference: edges, bases, hash tables */

/* Prepare a reference image once; reuse it for every query.  The view is
 * copied where needed and may be freed after the call.  *out is a handle
 * whatever the outcome (NULL only for p NULL, GM_ERR_INVALID, or when even
 * the handle could not be allocated, GM_ERR_NOMEM): on failure gm_ref_error(*out) says why in one
 * line (a parameter out of range, "no usable cuda device: ..." for
 * GM_ERR_DEVICE under GM_DEVICE_CUDA, an empty image, ...) and gm_match on
 * it answers GM_ERR_INVALID.  Free it with gm_ref_free in every case. */
GM_API gm_status gm_ref_prepare(const gm_params *p, gm_view img, gm_ref **out);
GM_API void gm_ref_free(gm_ref *r);
/* Why the preparation failed, or "" (never NULL). */
GM_API const char *gm_ref_error(const gm_ref *r);
/* What matches against this reference, in words: "cpu, N threads" or
 * "cuda: <GPU>, ..."; under GM_DEVICE_AUTO without a usable GPU it says why. */
GM_API const char *gm_ref_device(const gm_ref *r);
/* The device the reference runs on: GM_DEVICE_CPU or GM_DEVICE_CUDA
 * (GM_DEVICE_AUTO for a failed preparation). */
GM_API gm_device gm_ref_backend(const gm_ref *r);
/* "" while the reference runs where it was prepared; after the GPU failed
 * (a device error or its memory exhausted, in a query or, under
 * GM_DEVICE_CUDA, while preparing) one line saying so and why.  A query the
 * GPU fails is matched again on the CPU, which answers it and every later
 * query of this reference (the same results as a reference prepared on the
 * CPU: the CPU path is the GPU's reference); the reference keeps a copy of
 * its image while on a GPU for this.  An application prints it once, as
 * the command line does. */
GM_API const char *gm_ref_fallback(const gm_ref *r);
/* Under GM_DEVICE_AUTO a reference is prepared on the CPU and matches
 * there until its work repays the GPU's start (CUDA's driver and context,
 * about a quarter of a second, and the reference's preparation on it):
 * after its queries have cost the CPU that much (never more than twice the
 * better choice's time), or sooner when the caller says what is coming.
 * The GPU's copy is then prepared on a thread of the library's while the
 * CPU goes on, and answers the queries from the one after it is ready; the
 * answers are the same.  Once a reference of the process runs on the GPU,
 * the next ones under auto are prepared there directly.
 *
 * gm_ref_expect tells r how many more queries are coming (queries < 0: no
 * end known, a video; gm_video_match says so itself): the GPU starts now
 * when they would repay it at the CPU's time per query so far; wait
 * nonzero returns once its copy is ready or has failed (a run that wants
 * the GPU from its first query on).  Without a call the ski rental above
 * decides.  Nothing for a reference not under auto or on the GPU already;
 * GM_OK, GM_ERR_INVALID for r NULL.  gm_ref_starting: 1 while the GPU's
 * copy is being prepared; gm_ref_free waits for it (the command line ends
 * without freeing instead). */
GM_API gm_status gm_ref_expect(const gm_ref *r, int64_t queries, int wait);
GM_API int gm_ref_starting(const gm_ref *r);
/* How many GPUs the queries of this reference spread over (gm_params.gpus:
 * the copies prepared); 0 when it runs on the CPU. */
GM_API int gm_ref_gpus(const gm_ref *r);
/* The number of the GPU that holds copy k of r (0 <= k < gm_ref_gpus(r), in
 * gm_params.gpus' order, so that "all" on two GPUs gives 0 and 1), as
 * gm_params.gpus names it; -1 for any other k or r.  A caller with many
 * references of few queries each (a batch) can prepare each on one of them
 * (gm_params.gpus = that number) rather than on every one: a copy costs a
 * preparation on its GPU. */
GM_API int gm_ref_gpu(const gm_ref *r, int k);
/* The CPU threads that the library's calls made from the calling thread
 * use from now on, whatever the reference's parameters say (n >= 1), or
 * each reference's own again (n = 0); returns the previous setting.  For an
 * application that matches on several threads at once (a query a thread, as
 * the command line's --batch does on a GPU): one each keeps the threads from
 * multiplying (threads x cores).  Per thread, like OpenMP's own setting; the
 * results do not depend on it. */
GM_API int gm_set_thread_budget(int n);
/* Whether this library has the backend of device d: 1 for GM_DEVICE_CPU
 * and GM_DEVICE_AUTO; for GM_DEVICE_CUDA when built with CUDA (whether a
 * GPU is usable is known when a reference is prepared on it). */
GM_API int gm_backend_available(gm_device d);
/* Device `number` of kind d (the number gm_params.gpus and gm_ref_gpu
 * give): in *avail the memory that allocations can still have (free on the
 * device, plus what the library's own pool holds unused), in *total all of
 * it, in bytes.  For an application that prepares references ahead of
 * their queries, as the command line's batch does: it loads no more than
 * the next reference ahead while less than a quarter is available.  GM_OK;
 * GM_ERR_UNSUPPORTED for GM_DEVICE_CPU, GM_DEVICE_AUTO and a device this
 * build lacks; GM_ERR_DEVICE for a number that is not there or a device
 * error; GM_ERR_INVALID for NULL pointers or a negative number.  Starts
 * the device's runtime if it has not started (gm_device_start). */
GM_API gm_status gm_device_memory(gm_device d, int number, size_t *avail, size_t *total);

/* How a host thread waits for the GPU (CUDA's scheduling flag).  The flag
 * belongs to the process's CUDA context, so the library never sets it by
 * itself: an application that wants it calls this once, before any CUDA
 * work of its own.  Asked before the library has started CUDA, it is kept
 * and applied when the library does (gm_device_start, or the first
 * reference on a GPU, on whichever thread that is), so this call never
 * waits for the driver.  Measured on an H100 with 8 video lanes
 * (docs/gpu.md): SPIN 1094 fps at 1280x720, AUTO 822, BLOCK 558; on an
 * H200 with 16 workers on 16 cores, where the decoder's threads share the
 * cores (docs/speed.md), YIELD 6-8% faster than SPIN at 640x360 and on a
 * batch of stills under similarity, the same under auto; the gmatch
 * command line asks for YIELD.  GM_OK; GM_ERR_DEVICE once CUDA has
 * started, without a usable GPU or where the context exists already;
 * GM_ERR_UNSUPPORTED in a library built without CUDA. */
typedef enum {
    GM_CUDA_SYNC_AUTO = 0, /* CUDA's own choice (its default) */
    GM_CUDA_SYNC_SPIN = 1,
    GM_CUDA_SYNC_YIELD = 2,
    GM_CUDA_SYNC_BLOCK = 3,
} gm_cuda_sync;
GM_API gm_status gm_cuda_set_sync(gm_cuda_sync mode);
/* Starts device d's runtime now (CUDA: its driver, and the flag above), so
 * that the first reference prepared on it does not wait for that.  It
 * blocks meanwhile (0.2-0.25 s for CUDA on the H100 machine): call it on a
 * thread of your own while the reference is read, as the command line does
 * under --device cuda.  CUDA starts every GPU the process sees, some 0.2 s
 * each even in persistence mode: an application that uses GPUs 0 to m-1
 * only may show CUDA those alone (CUDA_VISIBLE_DEVICES, set before its
 * first CUDA call), as the command line does; the library leaves the
 * variable alone.  GM_OK (at once for the CPU and auto); GM_ERR_DEVICE
 * without a usable device; GM_ERR_UNSUPPORTED for a device this build
 * lacks. */
GM_API gm_status gm_device_start(gm_device d);
/* For measurements: how many times this process's threads have waited for
 * a GPU stream so far, and the milliseconds they spent waiting (summed
 * over threads).  GM_OK; GM_ERR_UNSUPPORTED without CUDA. */
GM_API gm_status gm_cuda_waits(uint64_t *count, double *ms);
/* For tests of the fallback to the CPU, never needed otherwise: makes the
 * N-th device allocation or kernel launch from this call on fail as a real
 * failure would (out of memory, a launch failure), counted over the
 * process: spec "alloc:N" or "launch:N", "alloc:N-" or "launch:N-" for
 * every one from the N-th on (a device that died), NULL or "" for none.
 * The library reads no environment variable for it; the command line
 * passes GMATCH_CUDA_FAULT here.  GM_OK; GM_ERR_INVALID for a spec it does
 * not read; GM_ERR_UNSUPPORTED in a library built without CUDA. */
GM_API gm_status gm_cuda_fault_inject(const char *spec);

typedef enum { GM_MATCH_NONE = 0, GM_MATCH_FOUND = 1 } gm_match_status;

/* Why a result is GM_MATCH_NONE (GM_REASON_FOUND for a match).  A hopeless
 * pair reads no_edges or no_candidate; a near miss weak, ambiguous,
 * uncertain, small_overlap or horizon (gm_reason_name). */
typedef enum {
    GM_REASON_FOUND = 0,      /* a match */
    GM_REASON_NO_EDGES,       /* the query (or the reference) has too few edges to vote */
    GM_REASON_NO_CANDIDATE,   /* no placement of the query was confirmed by the edges */
    GM_REASON_WEAK,           /* the best placement explains too little of the query's
                                 edges (its confidence before the checks below is under
                                 min_confidence) */
    GM_REASON_AMBIGUOUS,      /* a second placement, its corners far from the best's,
                                 explains the edges nearly as well (stripes, repeats, a
                                 reference symmetric under a turn) */
    GM_REASON_UNCERTAIN,      /* the edges leave the transform free to slide (parallel
                                 edges, one arc, a part without edges): its spread or
                                 uncertainty_px exceeds the bound */
    GM_REASON_SMALL_OVERLAP,  /* the images share too small a part (or at too unequal
                                 a scale) */
    GM_REASON_HORIZON,        /* the transform carries part of the query to infinity (a
                                 plane so tilted that its horizon is in view) */
} gm_reason;
/* "found", "no_edges", "no_candidate", "weak", "ambiguous", "uncertain",
 * "small_overlap", "horizon" (one word each, for the text output's column);
 * NULL for a value not listed. */
GM_API const char *gm_reason_name(gm_reason r);

/* Where one call's time went, in MILLISECONDS (summed over the search's
 * draws and directions).  The stages: the query's edges and corners, its
 * bases and triangles, the tables of a reverse search's query, the votes,
 * their reduction, the pairings' verification and growth, the best
 * answer's polish on the reference's finer levels, and the decision (the
 * model ladder, the checks, the report); total is the whole call.  Of the
 * total, wait is the time the calling thread was blocked on the device (a
 * GPU: waiting for its streams, waits times; the CPU: 0): total - wait is
 * the host's share, and wait bounds the device's busy time from above
 * while the host waits for every result (docs/speed.md). */
typedef struct {
    double edges, bases, tables, vote, reduce, verify, total;
    double polish, decide;
    double wait;
    int waits;
} gm_timing;

typedef struct {
    gm_match_status status;
    gm_model model;      /* the model of m / h: under GM_MODEL_AUTO the one chosen; under
                            affine or homography at most the one asked, simpler where the
                            edges did not support more (the command line and Python report
                            such an answer as the model asked: a similarity is an affine and
                            a homography without perspective, h holds it as 3x3) */
    double m[6];         /* query -> reference, row-major [a b c; d e f]; valid when found;
                            for a homography the affine part of h (h / h[8], perspective dropped) */
    double h[9];         /* the full 3x3 matrix [m; 0 0 1], or the homography (h[8] = 1) */
    double scale;        /* reference pixels per query pixel */
    double angle_deg;    /* atan2(m[3], m[0]) in degrees: clockwise on screen (y down) is positive */
    int votes;           /* votes of the winning basis pair */
    double confidence;   /* 0..1, from verification of the transform against the edges */
    int inliers;         /* query edge points confirmed by the reference */
    double residual_px;  /* root mean square distance, in reference pixels, of the query's
                            edge points mapped by the result from the reference edges they
                            landed on (within a working pixel): the fit's accuracy */
    double overlap[2];   /* the shared region (when found): [0] the share of the query's
                            area that lies on the reference, [1] the share of the
                            reference's area that the query covers */
    gm_direction direction; /* the search that answered: GM_DIRECTION_FORWARD or
                               GM_DIRECTION_REVERSE (when found) */
    double uncertainty_px;  /* when found: a bound, in reference pixels, on the mean
                               distance between the corners of the shared region where
                               this result puts them and where they truly lie, which held
                               for at least 95% of the matches of calibration sets
                               (docs/calibration.md): the covariance of the refinement's
                               point-to-edge fit carried to those corners, scaled by
                               the fit's residual, with a floor for what the fit cannot
                               see (resampling, blur) */
    gm_reason reason;       /* GM_REASON_FOUND for a match; why not otherwise */
    gm_timing time;
    char error[256];     /* why gm_match failed, one line ("" on GM_OK) */
} gm_result;

/* Match one query against a prepared reference.  Thread-safe: any number
 * of threads may match queries against one reference at once (each its own
 * gm_result); preparing and freeing a reference are not safe against calls
 * on that same reference.  GM_OK with status GM_MATCH_NONE is a successful
 * "no match"; an error (a device failure, out of memory) leaves the
 * reference usable for the next query. */
GM_API gm_status gm_match(const gm_ref *r, gm_view query, gm_result *out);
/* gm_match with another model than the reference's parameters name, for
 * this call: a reference prepared for affine, homography or auto (which
 * builds the three-point bases' tables) answers any of the four; one
 * prepared for similarity answers similarity only (GM_ERR_INVALID
 * otherwise, with out->error saying so).  The same result as a reference
 * prepared with that model. */
GM_API gm_status gm_match_model(const gm_ref *r, gm_view query, gm_model model, gm_result *out);

/* The corners (0, 0), (qw-1, 0), (qw-1, qh-1), (0, qh-1) of a qw x qh query
 * mapped by a found result's h: where its outline lies in reference pixels,
 * xy = x0 y0 x1 y1 x2 y2 x3 y3 (the JSON "corners", what gm_draw_path takes). */
GM_API void gm_result_corners(const gm_result *r, int qw, int qh, double xy[8]);

/* ---- pictures ---------------------------------------------------------- */

/* An owned 8-bit RGB picture (3 bytes a pixel, R G B); free with gm_rgb_free. */
typedef struct {
    uint8_t *data;
    int width, height;
    ptrdiff_t stride; /* BYTES */
} gm_rgb;

GM_API void gm_rgb_free(gm_rgb *img);

/* A picture of a result, to look at before trusting the numbers.  A match:
 * the reference scaled to at most max_width pixels wide (<= 0: its own
 * size), in gray and dimmed outside the query; inside, the query warped
 * into the reference's frame in false colour (red and blue the reference,
 * green the query: aligned edges look gray, a misalignment shows green and
 * magenta fringes); the query's outline in red; a caption bar with the
 * model, confidence, scale, angle and residual.  No match: the reference
 * and the query side by side with "NO MATCH".  ref and query are the
 * images that were matched (gm_image_load's gray). */
GM_API gm_status gm_draw_result(gm_view ref, gm_view query, const gm_result *res, int max_width,
                                gm_rgb *out);
/* The outlines of n results on the reference (a video's path): corners[8 i
 * .. 8 i + 7] are result i's query corners (x0 y0 ... x3 y3, in reference
 * pixels; NAN for a frame without a match), drawn from blue (first) to red
 * (last), their centres joined in yellow. */
GM_API gm_status gm_draw_path(gm_view ref, const double *corners, int n, int max_width,
                              gm_rgb *out);
/* A copy of pic with one more caption bar below it, in the same font as
 * the results' (letters in upper case, A-Z 0-9 . - : = / % _, other
 * characters as spaces; a text too long for the width keeps its end, after
 * "..."): which file and frame a picture shows, say.  Free *out with
 * gm_rgb_free. */
GM_API gm_status gm_draw_caption(const gm_rgb *pic, const char *text, gm_rgb *out);
/* Write a picture as a PNG file; err gets a one-line message. */
GM_API gm_status gm_rgb_write_png(const gm_rgb *img, const char *path, char *err, size_t errlen);

/* Reference preparation time, MILLISECONDS. */
GM_API double gm_ref_time_ms(const gm_ref *r);
/* Where a reference's preparation went, MILLISECONDS of wall time on the
 * thread that prepared it: sides, each level's edges, points and corners
 * (on the reference's device where the level fits it) and their spread;
 * maps, the verification's edge maps' points and directions (on the
 * host); map_pixels, their pixels, made by the reference's device (and the
 * level's host buffers freed); bases, the bases drawn on the host; tables, the paper's tables
 * (the basis index and the multi-value table, on the device);
 * tri_draw and tri_tables, the triangles drawn on the host and their table
 * (models other than a similarity); selfmaps, where the image repeats
 * itself; total, the whole build (less than gm_ref_time_ms by the device's
 * opening and the image's copy).  All 0 for a failed preparation. */
typedef struct {
    double sides, maps, map_pixels, bases, tables, tri_draw, tri_tables, selfmaps, total;
} gm_prep_timing;
GM_API void gm_ref_prep_timing(const gm_ref *r, gm_prep_timing *t);

#ifdef __cplusplus
}
#endif
#endif
