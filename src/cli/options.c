/* options.c: the command line's options (options.h). */
#define _POSIX_C_SOURCE 200809L /* getopt_long comes from <getopt.h> */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmatch.h"
#include "cli/batch.h"
#include "cli/options.h"

#define MAX_THREADS 4096 /* a typo like --threads 1000000 should not start a million threads */

/* Long-only options get codes above any char. */
enum {
    OPT_FORMAT = 256,
    OPT_SEED,
    OPT_THREADS,
    OPT_DEVICE,
    OPT_MIN_CONFIDENCE,
    OPT_MAX_UNCERTAINTY,
    OPT_MODEL,
    OPT_DIRECTION,
    OPT_MAX_PIXELS,
    OPT_FRAMES,
    OPT_STEP,
    OPT_DECODE,
    OPT_REF_FRAME,
    OPT_DRAW,
    OPT_DRAW_EVERY,
    OPT_BATCH,
    OPT_SHARD,
    OPT_RESUME,
    OPT_PROGRESS,
};

static void usage(FILE *f)
{
    gm_params d = gm_params_default();
    fprintf(f,
            "usage: " PROG " [options] REF QUERY [QUERY...]\n"
            "       " PROG " [options] --batch MANIFEST [--shard I/N] [--resume FILE]\n"
            "Find where each QUERY image appears inside the REF image and print the\n"
            "transform that carries it there (a similarity unless --model says\n"
            "otherwise), one line per query; a QUERY that is a video gives one line per\n"
            "frame.  Images: JPEG, PNG, and whatever else FFmpeg decodes (TIFF, BMP,\n"
            "WebP, PNM, ...); '-' is standard input (for one of REF and the QUERYs).\n"
            "\n"
            "  -h, --help              show this help and exit\n"
            "  -V, --version           show the version and exit\n"
            "      --format FMT        text (default) or json (JSON lines)\n"
            "  -o, --output FILE       write the results to FILE instead of stdout ('-':\n"
            "                          stdout)\n"
            "      --seed N            the hash tables' functions, unsigned 64-bit\n"
            "                          (default %" PRIu64 "); every seed gives the same output\n"
            "      --threads N         CPU threads, 0 = all cores (default: OpenMP's,\n"
            "                          all cores unless OMP_NUM_THREADS says otherwise)\n"
            "      --device DEV        cpu, auto (default) or cuda; auto: the CPU, and the\n"
            "                          GPU for work that repays its start; cuda:all or\n"
            "                          cuda:0,2: queries and frames spread over those GPUs\n"
            "      --model M           auto (default), similarity, affine or homography:\n"
            "                          the transform reported; auto: the simplest of the\n"
            "                          three that the edges support (JSON: \"model\");\n"
            "                          similarity: the fastest, for views without tilt\n"
            "      --direction D       auto (default): the query inside the reference, and\n"
            "                          where that finds nothing the reference inside the\n"
            "                          query; forward or reverse: one way only (faster)\n"
            "      --min-confidence X  report no match below this confidence, 0..1 (default %g)\n"
            "      --max-uncertainty P report no match whose uncertainty_px exceeds P\n"
            "                          reference pixels, 'inf' for no bound (default %g)\n"
            "      --max-pixels N      refuse images over N pixels (default %" PRId64 ")\n"
            "      --frames A:B        video frames A to B-1 (from 0; A: or :B open-ended)\n"
            "      --step N            every N-th of those frames (default 1)\n"
            "      --decode DEC        video decoder: auto (default: the CPU, measured\n"
            "                          faster), cpu or nvdec (the GPU's decoder)\n"
            "      --ref-frame N       REF is a video: its frame N (from 0) is the reference\n"
            "      --draw DIR          write a picture of each result into DIR (PNG): the\n"
            "                          query's outline and its overlay on the reference\n"
            "      --draw-every N      for a video, a picture every N-th frame (default 30)\n"
            "                          and one of the outline's path\n"
            "      --batch MANIFEST    match the (ref, query) pairs of MANIFEST (JSON lines\n"
            "                          or CSV: ref, query, id, model, frames), each\n"
            "                          reference prepared once; lines carry line, id, ref\n"
            "                          (JSON lines unless --format text)\n"
            "      --shard I/N         with --batch: shard I of N (from 0), a deterministic\n"
            "                          share of the references\n"
            "      --resume FILE       with --batch: skip what FILE holds already, append\n"
            "      --progress          the progress bar and the summary line of a batch or\n"
            "                          of %d or more queries also when stderr is not a\n"
            "                          terminal (on a terminal they are shown anyway)\n"
            "  -q, --quiet             print nothing on stderr but errors (no progress bar)\n"
            "  -v, --verbose           print the device and the stage timings on stderr\n"
            "\n"
            "Text output: a '#' header line, then per query:\n"
            "  query frame status votes confidence a b c d e f scale angle_deg uncertainty_px|reason\n"
            "status is match, none or error; [a b c; d e f] maps query pixel (x, y) to\n"
            "reference pixel (a*x + b*y + c, d*x + e*y + f); the last column: a match's\n"
            "uncertainty in reference pixels, why not for none (no_edges, no_candidate,\n"
            "weak, ambiguous, uncertain, small_overlap, horizon).\n"
            "Exit status: 0 all inputs processed, 1 some input failed, 2 usage error.\n",
            d.seed, d.min_confidence, d.max_uncertainty, d.max_pixels > 0 ? d.max_pixels : GM_DEFAULT_MAX_PIXELS,
            RUN_MANY);
}

_Noreturn void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry '" PROG " --help' for more information.\n", stderr);
    exit(EXIT_USAGE);
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

/* A number in [lo, hi] ("inf" where hi is INFINITY; never NaN). */
static int parse_real(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* ---- options ------------------------------------------------------------- */

/* One option of the matching (gm_params): 1 when c is one, else 0. */
static int match_option(int c, cli_opts *o)
{
    int64_t n;
    switch (c) {
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
    case OPT_DEVICE: {
        /* auto, cpu, cuda, cuda:all, cuda:1, cuda:0,2 (gm_device_from_name) */
        gm_device d = GM_DEVICE_AUTO;
        const char *gpus = NULL;
        gm_status st = gm_device_from_name(optarg, &d, &gpus);
        if (st == GM_ERR_UNSUPPORTED) {
            fprintf(stderr, PROG ": --device %s: this gmatch was built without CUDA (no nvcc "
                    "at build time)\n", optarg);
            exit(EXIT_USAGE);
        }
        if (st != GM_OK && gpus) /* a device's word with a list it refuses */
            usage_error("--device: '%s' is not cuda, cuda:all or cuda:N[,N...]", optarg);
        if (st != GM_OK)
            usage_error("--device: '%s' is not cpu, auto, cuda, cuda:all or cuda:N[,N...]", optarg);
        o->params.device = d;
        o->params.gpus = gpus;
        break;
    }
    case OPT_MODEL:
        if (gm_model_from_name(optarg, &o->params.model) != GM_OK)
            usage_error("--model: '%s' is not similarity, affine, homography or auto", optarg);
        break;
    case OPT_DIRECTION:
        if (strcmp(optarg, "auto") == 0)
            o->params.direction = GM_DIRECTION_AUTO;
        else if (strcmp(optarg, "forward") == 0)
            o->params.direction = GM_DIRECTION_FORWARD;
        else if (strcmp(optarg, "reverse") == 0)
            o->params.direction = GM_DIRECTION_REVERSE;
        else
            usage_error("--direction: '%s' is not auto, forward or reverse", optarg);
        break;
    case OPT_MIN_CONFIDENCE:
        if (parse_real(optarg, 0.0, 1.0, &o->params.min_confidence) != 0)
            usage_error("--min-confidence: '%s' is not a number from 0 to 1", optarg);
        break;
    case OPT_MAX_UNCERTAINTY:
        if (parse_real(optarg, 0.0, INFINITY, &o->params.max_uncertainty) != 0 ||
            !(o->params.max_uncertainty > 0))
            usage_error("--max-uncertainty: '%s' is not a positive number of pixels", optarg);
        break;
    case OPT_MAX_PIXELS:
        if (parse_i64_range(optarg, 1, INT64_MAX, &o->params.max_pixels) != 0)
            usage_error("--max-pixels: '%s' is not a positive integer", optarg);
        break;
    default:
        return 0;
    }
    return 1;
}

/* One option of videos and pictures: 1 when c is one, else 0. */
static int video_option(int c, cli_opts *o)
{
    switch (c) {
    case OPT_FRAMES:
        if (gm_parse_frames(optarg, &o->first, &o->last) != 0)
            usage_error("--frames: '%s' is not A:B, A: or :B with 0 <= A < B", optarg);
        break;
    case OPT_STEP:
        if (parse_i64_range(optarg, 1, INT64_MAX, &o->step) != 0)
            usage_error("--step: '%s' is not a positive integer", optarg);
        break;
    case OPT_DECODE:
        if (strcmp(optarg, "auto") == 0)
            o->decode = 0;
        else if (strcmp(optarg, "cpu") == 0)
            o->decode = 1;
        else if (strcmp(optarg, "nvdec") == 0)
            o->decode = 2;
        else
            usage_error("--decode: '%s' is not auto, cpu or nvdec", optarg);
        break;
    case OPT_DRAW:
        o->draw = optarg;
        break;
    case OPT_DRAW_EVERY:
        if (parse_i64_range(optarg, 1, INT64_MAX, &o->draw_every) != 0)
            usage_error("--draw-every: '%s' is not a positive integer", optarg);
        break;
    case OPT_REF_FRAME:
        if (parse_i64_range(optarg, 0, INT64_MAX - 1, &o->ref_frame) != 0)
            usage_error("--ref-frame: '%s' is not an integer from 0", optarg);
        break;
    default:
        return 0;
    }
    return 1;
}

/* One option (getopt_long's c): the run's own here, the others through
 * match_option and video_option. */
static void parse_option(int c, char **argv, cli_opts *o)
{
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
        o->format_given = 1;
        break;
    case OPT_BATCH:
        o->batch = optarg;
        break;
    case OPT_SHARD: {
        char *slash = strchr(optarg, '/');
        int64_t si = -1, sn = 0;
        if (slash) {
            *slash = '\0';
            if (parse_i64_range(optarg, 0, 1 << 20, &si) != 0 ||
                parse_i64_range(slash + 1, 1, 1 << 20, &sn) != 0)
                si = -1;
            *slash = '/';
        }
        if (si < 0 || si >= sn)
            usage_error("--shard: '%s' is not I/N with 0 <= I < N", optarg);
        o->shard = (int)si, o->shards = (int)sn;
        break;
    }
    case OPT_RESUME:
        o->resume = optarg;
        break;
    case OPT_PROGRESS:
        o->progress = 1;
        break;
    case 'o':
        o->output = strcmp(optarg, "-") == 0 ? NULL : optarg;
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
    default:
        if (match_option(c, o) || video_option(c, o))
            break;
        /* '?' */
        if (optopt)
            usage_error("unknown option '-%c'", optopt);
        usage_error("unknown option '%s'", argv[optind - 1]);
    }
}

void parse_options(int argc, char **argv, cli_opts *o)
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
        {"max-uncertainty", required_argument, NULL, OPT_MAX_UNCERTAINTY},
        {"model", required_argument, NULL, OPT_MODEL},
        {"direction", required_argument, NULL, OPT_DIRECTION},
        {"max-pixels", required_argument, NULL, OPT_MAX_PIXELS},
        {"frames", required_argument, NULL, OPT_FRAMES},
        {"step", required_argument, NULL, OPT_STEP},
        {"decode", required_argument, NULL, OPT_DECODE},
        {"ref-frame", required_argument, NULL, OPT_REF_FRAME},
        {"draw", required_argument, NULL, OPT_DRAW},
        {"draw-every", required_argument, NULL, OPT_DRAW_EVERY},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"shard", required_argument, NULL, OPT_SHARD},
        {"resume", required_argument, NULL, OPT_RESUME},
        {"progress", no_argument, NULL, OPT_PROGRESS},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0; /* our own messages, prefixed "gmatch:" whatever argv[0] is */
    while ((c = getopt_long(argc, argv, ":hVo:qv", longopts, NULL)) != -1)
        parse_option(c, argv, o);
    if (o->batch) {
        if (argc > optind)
            usage_error("--batch takes its pairs from the manifest, not '%s'", argv[optind]);
        if (!o->format_given) /* a batch is for scripts: JSON lines */
            o->format = GM_OUTPUT_JSON;
        return;
    }
    if (o->shards > 0 || o->resume)
        usage_error("%s needs --batch", o->resume ? "--resume" : "--shard");
    if (argc - optind < 1)
        usage_error("missing REF and QUERY");
    if (argc - optind < 2)
        usage_error("missing QUERY");
}
