/* main.c: the gmatch command line, a thin layer over the library (gmatch.h).
 *
 *     gmatch [options] REF QUERY [QUERY...]
 *
 * Loads and prepares REF once, then matches every QUERY against it and
 * prints one line per query (formats in output.h) as soon as it is done.
 * Exit status: 0 when every input was processed (match or no match), 1 when
 * some input failed or the output could not be written, 2 for usage errors.
 * Diagnostics go to stderr as one line "gmatch: FILE: cause".
 *
 * Options are parsed with getopt_long from glibc: long options, permuted
 * operands and "--" are all there, so no argument-parsing library is needed
 * (one fewer dependency to install on every machine).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime; getopt_long comes from <getopt.h> */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "gmatch.h"
#include "output.h"

#define PROG "gmatch"
#define MAX_THREADS 4096 /* a typo like --threads 1000000 should not start a million threads */

enum { EXIT_USAGE = 2 };

enum { VERBOSITY_QUIET = 0, VERBOSITY_NORMAL = 1, VERBOSITY_VERBOSE = 2 };

/* Long-only options get codes above any char. */
enum {
    OPT_FORMAT = 256,
    OPT_SEED,
    OPT_THREADS,
    OPT_DEVICE,
    OPT_MIN_CONFIDENCE,
    OPT_MODEL,
    OPT_MAX_PIXELS,
};

typedef struct {
    gm_params params;
    gm_output_format format;
    const char *output;       /* NULL: stdout */
    int threads_given;
    int verbosity;
} cli_opts;

static void usage(FILE *f)
{
    gm_params d = gm_params_default();
    fprintf(f,
            "usage: " PROG " [options] REF QUERY [QUERY...]\n"
            "Find where each QUERY image appears inside the REF image (JPEG or PNG) and\n"
            "print the similarity transform, one line per query.\n"
            "\n"
            "  -h, --help              show this help and exit\n"
            "  -V, --version           show the version and exit\n"
            "      --format FMT        text (default) or json (JSON lines)\n"
            "  -o, --output FILE       write the results to FILE instead of stdout\n"
            "      --seed N            random seed, unsigned 64-bit (default %" PRIu64 ");\n"
            "                          the same seed gives the same output\n"
            "      --threads N         CPU threads, 0 = all cores (default)\n"
            "      --device DEV        cpu, auto (default) or cuda\n"
            "      --model M           similarity (default), affine or homography: the\n"
            "                          verified similarity refined to this model\n"
            "      --min-confidence X  report no match below this confidence, 0..1 (default %g)\n"
            "      --max-pixels N      refuse images over N pixels (default %" PRId64 ")\n"
            "  -q, --quiet             print nothing on stderr but errors\n"
            "  -v, --verbose           print the device and the stage timings on stderr\n"
            "\n"
            "Text output: a '#' header line, then per query:\n"
            "  query frame status votes confidence a b c d e f scale angle_deg\n"
            "status is match, none or error; [a b c; d e f] maps query pixel (x, y) to\n"
            "reference pixel (a*x + b*y + c, d*x + e*y + f).\n"
            "Exit status: 0 all inputs processed, 1 some input failed, 2 usage error.\n",
            d.seed, d.min_confidence, d.max_pixels > 0 ? d.max_pixels : GM_DEFAULT_MAX_PIXELS);
}

/* A usage error: the message, a hint, exit 2. */
_Noreturn static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry '" PROG " --help' for more information.\n", stderr);
    exit(EXIT_USAGE);
}

/* "gmatch: NAME: message" with NAME quoted like the text output when it
 * holds odd characters, so a diagnostic is always one line. */
static void diag_file(const char *name, const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    gm_output_write_name(stderr, name);
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Exit after --help or --version: 0, or 1 when stdout could not be written
 * (gmatch --help > /dev/full). */
_Noreturn static void exit_after_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, PROG ": stdout: write error: %s\n", strerror(errno));
        exit(EXIT_FAILURE);
    }
    exit(EXIT_SUCCESS);
}

/* ---- numbers ------------------------------------------------------------- */

/* The whole string must be a number: no sign for unsigned values, no
 * leading or trailing junk, no overflow. */
static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_i64_range(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    if ((*s < '0' || *s > '9') && *s != '-' && *s != '+')
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int parse_unit_real(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0.0 || v > 1.0)
        return -1;
    *out = v;
    return 0;
}

/* ---- options ------------------------------------------------------------- */

static void parse_options(int argc, char **argv, cli_opts *o)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"output", required_argument, NULL, 'o'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"min-confidence", required_argument, NULL, OPT_MIN_CONFIDENCE},
        {"model", required_argument, NULL, OPT_MODEL},
        {"max-pixels", required_argument, NULL, OPT_MAX_PIXELS},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    int c;
    int64_t n;
    opterr = 0; /* our own messages, prefixed "gmatch:" whatever argv[0] is */
    while ((c = getopt_long(argc, argv, ":hVo:qv", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            usage(stdout);
            exit_after_stdout();
        case 'V':
            puts(PROG " " GMATCH_VERSION);
            exit_after_stdout();
        case OPT_FORMAT:
            if (gm_output_parse_format(optarg, &o->format) != 0)
                usage_error("--format: '%s' is not text or json", optarg);
            break;
        case 'o':
            o->output = optarg;
            break;
        case OPT_SEED:
            if (parse_u64(optarg, &o->params.seed) != 0)
                usage_error("--seed: '%s' is not an unsigned 64-bit integer", optarg);
            break;
        case OPT_THREADS:
            if (parse_i64_range(optarg, 0, MAX_THREADS, &n) != 0)
                usage_error("--threads: '%s' is not an integer from 0 to %d", optarg,
                            MAX_THREADS);
            o->params.threads = (int)n;
            o->threads_given = 1;
            break;
        case OPT_DEVICE:
            if (strcmp(optarg, "cpu") == 0) {
                o->params.device = GM_DEVICE_CPU;
            } else if (strcmp(optarg, "auto") == 0) {
                o->params.device = GM_DEVICE_AUTO;
            } else if (strcmp(optarg, "cuda") == 0) {
#ifndef GMATCH_WITH_CUDA
                fputs(PROG ": --device cuda: this gmatch was built without CUDA (no nvcc at build time)\n",
                      stderr);
                exit(EXIT_USAGE);
#else
                o->params.device = GM_DEVICE_CUDA;
#endif
            } else {
                usage_error("--device: '%s' is not cpu, auto or cuda", optarg);
            }
            break;
        case OPT_MODEL:
            if (strcmp(optarg, "similarity") == 0)
                o->params.model = GM_MODEL_SIMILARITY;
            else if (strcmp(optarg, "affine") == 0)
                o->params.model = GM_MODEL_AFFINE;
            else if (strcmp(optarg, "homography") == 0)
                o->params.model = GM_MODEL_HOMOGRAPHY;
            else
                usage_error("--model: '%s' is not similarity, affine or homography", optarg);
            break;
        case OPT_MIN_CONFIDENCE:
            if (parse_unit_real(optarg, &o->params.min_confidence) != 0)
                usage_error("--min-confidence: '%s' is not a number from 0 to 1", optarg);
            break;
        case OPT_MAX_PIXELS:
            if (parse_i64_range(optarg, 1, INT64_MAX, &o->params.max_pixels) != 0)
                usage_error("--max-pixels: '%s' is not a positive integer", optarg);
            break;
        case 'q':
            o->verbosity = VERBOSITY_QUIET;
            break;
        case 'v':
            o->verbosity = VERBOSITY_VERBOSE;
            break;
        case ':':
            usage_error("option '%s' requires an argument", argv[optind - 1]);
            break;
        default: /* '?' */
            if (optopt)
                usage_error("unknown option '-%c'", optopt);
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind < 1)
        usage_error("missing REF and QUERY");
    if (argc - optind < 2)
        usage_error("missing QUERY");
}

/* ---- matching ------------------------------------------------------------ */

/* Monotonic clock, MILLISECONDS. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Load and prepare the reference.  Returns NULL on failure with the cause
 * in err. */
static gm_ref *prepare_reference(const cli_opts *o, const char *path, char *err, size_t errlen)
{
    gm_image img;
    double t0 = now_ms();
    gm_status st = gm_image_load(path, o->params.max_pixels, &img, err, errlen);
    if (st != GM_OK)
        return NULL;
    double t1 = now_ms();
    gm_ref *r = NULL;
    st = gm_ref_prepare(&o->params, gm_image_view(&img), &r);
    double t2 = now_ms();
    if (st == GM_ERR_DEVICE) {
        snprintf(err, errlen, "no usable CUDA device: %s", gm_last_device_error());
        gm_image_free(&img);
        return NULL;
    }
    if (st != GM_OK) {
        snprintf(err, errlen, "%s", r ? gm_ref_error(r) : gm_status_str(st));
        if (r)
            gm_ref_free(r);
        gm_image_free(&img);
        return NULL;
    }
    if (o->verbosity >= VERBOSITY_VERBOSE)
        fprintf(stderr, PROG ": device: %s\n", gm_ref_device(r));
    if (o->verbosity >= VERBOSITY_VERBOSE)
        diag_file(path, "reference %dx%d: decode %.2f ms, prepare %.2f ms (library %.2f ms)",
                  img.width, img.height, t1 - t0, t2 - t1, gm_ref_time_ms(r));
    gm_image_free(&img);
    return r;
}

static void report_timing(const char *query, double decode_ms, const gm_result *res)
{
    const gm_timing *t = &res->time;
    diag_file(query,
              "decode %.2f ms, edges %.2f, bases %.2f, tables %.2f, vote %.2f, reduce %.2f, "
              "verify %.2f, match total %.2f ms; votes %d, inliers %d, confidence %.4f",
              decode_ms, t->edges, t->bases, t->tables, t->vote, t->reduce, t->verify, t->total,
              res->votes, res->inliers, res->confidence);
}

/* Write one record; on a write error say so and return -1. */
static int emit(FILE *out, const char *out_name, gm_output_format fmt, const gm_output_rec *rec)
{
    if (gm_output_record(out, fmt, rec) == 0)
        return 0;
    diag_file(out_name, "write error: %s", errno ? strerror(errno) : "out of memory");
    return -1;
}

int main(int argc, char **argv)
{
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.params = gm_params_default();
    o.format = GM_OUTPUT_TEXT;
    o.verbosity = VERBOSITY_NORMAL;
    parse_options(argc, argv, &o);
    if (o.threads_given)
        omp_set_num_threads(o.params.threads > 0 ? o.params.threads : omp_get_num_procs());

    const char *ref_path = argv[optind];
    char **queries = argv + optind + 1;
    int nq = argc - optind - 1;

    FILE *out = stdout;
    const char *out_name = "stdout";
    if (o.output) {
        out = fopen(o.output, "w");
        if (!out) {
            diag_file(o.output, "cannot open for writing: %s", strerror(errno));
            return EXIT_USAGE;
        }
        out_name = o.output;
    }
    int failed = 0, write_failed = 0;
    if (gm_output_header(out, o.format, o.params.model) != 0) {
        diag_file(out_name, "write error: %s", strerror(errno));
        write_failed = 1;
    }

    /* The first query's time includes loading and preparing the reference,
     * as the peer (bench/opencv_match.py) measures it. */
    double t_start = now_ms();
    char ref_err[512] = "";
    gm_ref *ref = write_failed ? NULL : prepare_reference(&o, ref_path, ref_err, sizeof ref_err);
    char ref_msg[1024] = "";
    if (!ref && !write_failed) {
        diag_file(ref_path, "%s", ref_err);
        snprintf(ref_msg, sizeof ref_msg, "reference %s: %s", ref_path, ref_err);
        failed = 1;
    }

    for (int i = 0; i < nq && !write_failed; i++) {
        const char *q = queries[i];
        double t0 = i == 0 ? t_start : now_ms();
        double t_decode = now_ms();
        char err[512] = "";
        gm_result res;
        memset(&res, 0, sizeof res);
        gm_output_rec rec = {.query = q, .frame = 0, .res = &res, .model = o.params.model};
        if (!ref) {
            rec.error = ref_msg;
        } else {
            gm_image img;
            gm_status st = gm_image_load(q, o.params.max_pixels, &img, err, sizeof err);
            double decode_ms = now_ms() - t_decode;
            if (st == GM_OK) {
                /* gm_match takes a const reference (thread-safe), so the
                 * status is all it can tell us. */
                st = gm_match(ref, gm_image_view(&img), &res);
                if (st != GM_OK)
                    snprintf(err, sizeof err, "matching failed: %s", gm_status_str(st));
                gm_image_free(&img);
            }
            if (st != GM_OK) {
                if (!err[0])
                    snprintf(err, sizeof err, "%s", gm_status_str(st));
                diag_file(q, "%s", err);
                rec.error = err;
                failed = 1;
            } else if (o.verbosity >= VERBOSITY_VERBOSE) {
                report_timing(q, decode_ms, &res);
            }
        }
        rec.time_ms = now_ms() - t0;
        if (emit(out, out_name, o.format, &rec) != 0)
            write_failed = 1;
    }
    if (ref)
        gm_ref_free(ref);

    /* Data may still sit in a buffer, and close can fail too (a full disk,
     * NFS): check both before claiming success. */
    if (out == stdout ? (fflush(out) != 0 || ferror(out)) : fclose(out) != 0) {
        if (!write_failed)
            diag_file(out_name, "write error: %s", strerror(errno));
        write_failed = 1;
    }
    return failed || write_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
