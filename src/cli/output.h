/* output.h: how the gmatch command line prints its results.
 *
 * One record per query (per frame, once video input exists), written and
 * flushed as soon as that query is done, so a reader of a pipe sees each
 * result as it comes.  Two formats:
 *
 * text (default): a header line, then one row of whitespace-separated
 * columns per query:
 *
 *     # query frame status votes confidence a b c d e f scale angle_deg
 *     q1.jpg 0 match 57 0.8125 1.057727 0.028525 90.173634 -0.028525 1.057727 178.792245 1.058112 -1.545
 *     q2.jpg 0 none 4 0.0310 - - - - - - - -
 *     "my photo.jpg" 0 error 0 0.0000 - - - - - - - -
 *
 *   status is match, none or error.  a..f is the matrix [a b c; d e f] that
 *   maps query pixel (x, y) to reference pixel (a*x + b*y + c, d*x + e*y + f),
 *   see gmatch.h.  Matrix and scale are printed with 6 decimals, angle_deg with
 *   3, confidence with 4.  Rows with status none or error print "-" in the
 *   matrix, scale and angle_deg columns; error rows print votes 0 and
 *   confidence 0.0000, and the error message goes to stderr, not here.
 *   A query name is printed as it is unless it is empty, starts with '#', or
 *   holds a space, a quote, a backslash, a control character, a Unicode space
 *   or invalid UTF-8: then it is printed in double quotes with C escapes
 *   (\" \\ \n \t \r, and three-digit octal \ooo for any other byte that needs
 *   it), so that columns split on whitespace stay aligned and a row never
 *   looks like the header.  Text rows carry neither pts_s nor time_ms.
 *
 * json (--format json): one object per line (JSON lines), keys exactly in
 * this order:
 *
 *     {"query":"q1.jpg","frame":0,"status":"match","model":"similarity","votes":57,"confidence":0.8125,
 *      "matrix":[[1.057727,0.028525,90.173634],[-0.028525,1.057727,178.792245]],
 *      "scale":1.058112,"angle_deg":-1.545,
 *      "corners":[[90.174,178.792],[224.503,175.17],[228.032,305.014],[93.703,308.636]],
 *      "residual_px":0.214,"inliers":431,"ref_size":[480,480],"query_size":[128,123],
 *      "time_ms":12.345}
 *     {"query":"q2.jpg","frame":0,"status":"none","model":"similarity","votes":4,"confidence":0.031,
 *      "inliers":12,"ref_size":[480,480],"query_size":[200,150],"time_ms":9.87}
 *     {"query":"x.jpg","frame":0,"status":"error","model":"similarity","votes":0,"confidence":0.0,
 *      "time_ms":0.05,
 *      "error":"cannot open file: No such file or directory"}
 *
 *   line, id, ref  --batch only, first on the line: the pair's line in the
 *               manifest (an integer, from 1), its id (a string: the
 *               manifest's, an integer's digits, the line number's when it
 *               gives none),
 *               the reference as the manifest names it (text rows: the
 *               columns line id ref before query)
 *   query       the name as given on the command line (a string)
 *   frame       frame number, 0 for a still image (an integer)
 *   pts_s       presentation time of the frame in SECONDS; only present for
 *               video frames (from the stream start, 6 decimals)
 *   status      "match", "none" or "error"
 *   model       "similarity", "affine" or "homography": the model of the
 *               matrix: the model asked for (--model similarity, affine or
 *               homography: a similarity is an affine and a homography
 *               too, so --model homography always gives a 3x3 matrix),
 *               under auto the one chosen; on every line (the model asked
 *               for when there is no matrix), so that a script picks
 *               warpAffine or warpPerspective without knowing the options
 *   votes       votes of the winning basis pair (0 for error)
 *   confidence  0..1 (0 for error), rounded to 6 decimals
 *   matrix      [[a,b,c],[d,e,f]] rounded to 6 decimals, match only; for
 *               model homography [[a,b,c],[d,e,f],[g,h,1]], the last row to
 *               10 decimals
 *   scale       reference pixels per query pixel, 6 decimals, match only
 *   angle_deg   rotation in degrees, clockwise on screen positive, 6
 *               decimals, match only
 *   corners     the query's corners (0, 0), (w-1, 0), (w-1, h-1), (0, h-1)
 *               mapped by the matrix: where its outline lies in reference
 *               pixels, 3 decimals, match only
 *   residual_px root mean square distance in reference pixels of the query's
 *               edge points, mapped, from the reference edges they landed on:
 *               the fit's accuracy, 3 decimals, match only
 *   inliers     query edge points the reference confirmed (match and none)
 *   ref_size    [width, height] of the reference, when it was read
 *   query_size  [width, height] of the query or frame, when it was read
 *   time_ms     MILLISECONDS from the start of this query's decode to its
 *               result, 3 decimals; the first query's time also includes
 *               loading and preparing the reference.  For a video frame:
 *               its decode plus its matching (queue waits excluded); the
 *               first frame of a video also carries the time before it
 *               (the reference when the video is the first query, opening)
 *   error       the error message, error only
 *
 *   Reals are printed with up to 15 significant digits in the shortest form
 *   C's %g gives, so a tiny value may come out in exponent form (-1.6e-5);
 *   any JSON reader takes it.
 *
 *   Strings are UTF-8.  A name that is not valid UTF-8 cannot be put in JSON
 *   as it is: every byte that is not part of a valid UTF-8 sequence is
 *   replaced by U+FFFD (the replacement character), so the line is still
 *   valid JSON but such a name does not round-trip.  A number that is not
 *   finite (never expected) is written as null.
 *
 * Why jansson and not hand-written escaping: it validates UTF-8, escapes
 * every control character correctly, keeps key order, and prints reals with
 * a chosen precision (JSON_REAL_PRECISION, so 1.057727 does not come out as
 * 1.0577270000000001); it is a small, well-kept Debian library
 * (libjansson-dev), already a dependency of the build.
 */
#ifndef GM_OUTPUT_H
#define GM_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "gmatch.h"

typedef enum { GM_OUTPUT_TEXT = 0, GM_OUTPUT_JSON = 1 } gm_output_format;

/* One result line.  Borrowed pointers; nothing here is freed by the output
 * functions. */
typedef struct {
    const char *query;     /* input name as given (any bytes) */
    int64_t frame;         /* 0 for a still image */
    int has_pts;           /* nonzero: pts_s holds the frame's timestamp */
    double pts_s;          /* presentation timestamp, SECONDS (video frames) */
    const char *error;     /* non-NULL: this input failed with this message, res is ignored */
    const gm_result *res;  /* the result when error is NULL */
    double time_ms;        /* MILLISECONDS, see time_ms above */
    gm_model model;        /* the run's model: a homography adds columns g h */
    int ref_w, ref_h;      /* the reference's size; 0 when unknown (it failed) */
    int q_w, q_h;          /* the query's or frame's size; 0 when unknown */
    /* --batch (batch.h): the pair's manifest line (0: not a batch), its id
     * (as text, a JSON string whether the manifest gave it or not), the
     * reference as the manifest names it; wide: text rows with the columns
     * g h whatever this pair's model (a batch mixing models) */
    int64_t line;
    const char *id;
    const char *ref;
    int wide;
} gm_output_rec;

/* "text" or "json" -> *out; returns 0, or -1 for any other string. */
int gm_output_parse_format(const char *s, gm_output_format *out);

/* Write the header line (text: the "# query ..." line, with the columns g h
 * for a homography; batch: the columns line id ref first; json: nothing) and
 * flush.  Returns 0, or -1 on a write error (errno set by stdio). */
int gm_output_header(FILE *f, gm_output_format fmt, gm_model model, int batch);

/* The model a found result is reported as: the one asked for (a
 * similarity or affine answer to --model homography is a homography
 * without perspective, to --model affine an affine), under auto the one
 * the library chose (res->model). */
gm_model gm_output_model(gm_model asked, const gm_result *res);

/* Write one record line and flush.  Returns 0, or -1 on a write error or
 * when the line cannot be built (out of memory). */
int gm_output_record(FILE *f, gm_output_format fmt, const gm_output_rec *rec);

/* Write a name the way the text format prints the query column: as it is, or
 * double-quoted with C escapes when it would not survive splitting on
 * whitespace (see above).  Also used for file names in diagnostics so that a
 * diagnostic stays one line.  Returns 0, or -1 on a write error. */
int gm_output_write_name(FILE *f, const char *name);

/* Copy s into a new string with every byte that is not part of a valid UTF-8
 * sequence replaced by U+FFFD.  Returns NULL when out of memory; the caller
 * frees the result with free(). */
char *gm_output_utf8_sanitize(const char *s);

#endif
