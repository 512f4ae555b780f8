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
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fileno; getopt_long comes from <getopt.h> */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "gmatch.h"
#include "gmatch_video.h"
#include "cli/batch.h"
#include "cli/output.h"
#include "cli/pictures.h"
#include "cli/progress.h"

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

typedef struct {
    gm_params params;
    gm_output_format format;
    const char *output;       /* NULL: stdout */
    int threads_given;
    int verbosity;
    int64_t first, last, step; /* video frames [first, last) every step-th; last -1: to the end */
    int decode;                /* 0 auto, 1 cpu, 2 nvdec (gm_video_decode's order) */
    int64_t ref_frame;         /* the reference is this frame of a video (0: a still) */
    const char *draw;          /* --draw DIR, NULL: no pictures */
    int64_t draw_every;        /* a video's picture every this many selected frames */
    const char *batch;         /* --batch MANIFEST (batch.h), NULL: REF QUERY... */
    int shard, shards;         /* --shard I/N: this process's share (0/1: all) */
    const char *resume;        /* --resume FILE: results already written */
    int progress;              /* --progress: the run's bar and summary on any stderr */
    int format_given;
} cli_opts;

/* --draw's state: the reference kept for drawing, a video's outlines. */
static gm_pictures g_pictures;

/* The progress bar of the video being matched; diagnostics erase it first. */
static gm_progress g_progress;

/* A run of many queries (RUN_MANY or more) or a batch: a bar over its
 * queries (pairs) while no video's bar is shown, and a summary line at the
 * end, on a terminal (or with --progress); the result lines written,
 * counted by status (emit). */
#define RUN_MANY 10
static gm_progress g_run;
static struct {
    int64_t match, none, error;
} g_tally;
static int g_out_tty; /* the results go to a terminal: the bars are erased before a line */

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
    gm_progress_clear(&g_progress);
    gm_progress_clear(&g_run);
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
            } else if (strcmp(optarg, "cuda") == 0 || strncmp(optarg, "cuda:", 5) == 0) {
                if (!gm_backend_available(GM_DEVICE_CUDA)) {
                    fprintf(stderr, PROG ": --device %s: this gmatch was built without CUDA (no nvcc "
                            "at build time)\n", optarg);
                    exit(EXIT_USAGE);
                }
                o->params.device = GM_DEVICE_CUDA;
                /* cuda:all, cuda:1, cuda:0,2: the GPUs (gm_params.gpus) */
                o->params.gpus = optarg[4] == ':' ? optarg + 5 : NULL;
                gm_ref *probe = NULL;
                gm_params check = gm_params_default();
                check.device = GM_DEVICE_CPU, check.gpus = o->params.gpus;
                gm_view none = {0};
                if (o->params.gpus && gm_ref_prepare(&check, none, &probe) == GM_ERR_INVALID &&
                    strstr(gm_ref_error(probe), "gpus")) {
                    gm_ref_free(probe);
                    usage_error("--device: '%s' is not cuda, cuda:all or cuda:N[,N...]", optarg);
                }
                gm_ref_free(probe);
            } else {
                usage_error("--device: '%s' is not cpu, auto, cuda, cuda:all or cuda:N[,N...]", optarg);
            }
            break;
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

/* ---- matching ------------------------------------------------------------ */

/* Monotonic clock, MILLISECONDS. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* -v's timeline: milliseconds since main began (where a run's start goes) */
static double g_main_ms;
static double since_main(void)
{
    return now_ms() - g_main_ms;
}

/* '-' (standard input): read once, whole, into a temporary file that the
 * decoders then read like any other (FFmpeg needs to seek in most
 * containers); the name printed stays '-'.  g_stdin_path is that file, ""
 * when '-' was not given or could not be read (g_stdin_err says why). */
static char g_stdin_path[64] = "";
static char g_stdin_err[256] = "";

static void stdin_remove(void)
{
    if (g_stdin_path[0])
        unlink(g_stdin_path);
}

static void stdin_to_file(void)
{
    if (isatty(STDIN_FILENO)) {
        snprintf(g_stdin_err, sizeof g_stdin_err, "standard input is a terminal, not an image");
        return;
    }
    const char *dir = getenv("TMPDIR");
    char path[sizeof g_stdin_path];
    if (snprintf(path, sizeof path, "%s/gmatch-stdin-XXXXXX", dir && *dir ? dir : "/tmp") >=
        (int)sizeof path)
        snprintf(path, sizeof path, "/tmp/gmatch-stdin-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(g_stdin_err, sizeof g_stdin_err, "cannot make a temporary file for it: %s",
                 strerror(errno));
        return;
    }
    snprintf(g_stdin_path, sizeof g_stdin_path, "%s", path);
    atexit(stdin_remove);
    char buf[1 << 16];
    size_t total = 0;
    for (;;) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(g_stdin_err, sizeof g_stdin_err, "read error: %s", strerror(errno));
            break;
        }
        for (ssize_t k = 0; k < n;) {
            ssize_t w = write(fd, buf + k, (size_t)(n - k));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                snprintf(g_stdin_err, sizeof g_stdin_err, "cannot keep it in %s: %s", path,
                         strerror(errno));
                break;
            }
            k += w;
        }
        if (g_stdin_err[0])
            break;
        total += (size_t)n;
    }
    if (close(fd) != 0 && !g_stdin_err[0])
        snprintf(g_stdin_err, sizeof g_stdin_err, "cannot keep it in %s: %s", path,
                 strerror(errno));
    if (!g_stdin_err[0] && total == 0)
        snprintf(g_stdin_err, sizeof g_stdin_err, "empty file");
}

/* The file to read for an input name: the temporary copy for '-'; NULL with
 * the cause in err when standard input could not be read. */
static const char *source_of(const char *name, char *err, size_t errlen)
{
    if (strcmp(name, "-") != 0)
        return name;
    if (g_stdin_err[0]) {
        snprintf(err, errlen, "%s", g_stdin_err);
        return NULL;
    }
    return g_stdin_path;
}

/* The GPU's start, on a thread of its own (gpu_start_main).  It starts
 * CUDA (the driver and the device's context) and sets how this process's
 * threads wait for the GPU: spinning, measured the fastest
 * (gm_cuda_set_sync; GMATCH_CUDA_SYNC=auto, spin, yield or block chooses,
 * for measurements).
 *
 * Under --device cuda it starts with the process, while the reference is
 * read and decoded, and prepare_reference waits for it.
 *
 * Under --device auto the CPU begins: it prepares the reference and
 * matches the first still.  The GPU is started only for work that repays
 * its start: a video (which waits for it), or stills whose count, at the
 * first one's time on the CPU, would take longer than the start
 * (GPU_START_MS) and the reference's preparation (as long as the CPU's, at
 * most) together.  Then the thread also prepares the reference for the GPU
 * from its image (kept, not copied) while the CPU goes on, and the stills after that
 * go to the GPU (gpu_switch).  Both devices give the same results
 * (tests/cuda, docs/gpu.md), so where the switch falls does not show in
 * the output.  Starting CUDA beside the CPU's work is not free: on the H100
 * machine the CPU's preparation of a 512-pixel reference took 183 ms
 * instead of 20 and a one-still run 0.32-0.39 s instead of 0.05, because
 * the process cannot end while the driver starts (docs/speed.md).  A run
 * that ends before the GPU is ready does not wait for it (gpu_finish). */
/* CUDA's start on the H100 machine: 0.21-0.25 s (docs/gpu.md) */
#define GPU_START_MS 250.0
static struct {
    pthread_t th;
    int started;
    int auto_mode;        /* --device auto: the CPU until the GPU's reference is ready */
    int have_img;         /* view is the reference's image (auto) */
    gm_view view;         /* it, for the GPU's reference: img or the pictures' */
    gm_image img;         /* owned when the pictures do not keep it */
    gm_params params;     /* the GPU's reference's */
    double prep_ms;       /* the CPU's preparation of the reference */
    double begin_ms, ready_ms; /* the thread's start and CUDA's readiness (since_main) */
    gm_ref *ref;          /* the GPU's reference, NULL until ready or when it failed */
    atomic_int done;      /* the thread has finished */
} g_gpu;

static void *gpu_start_main(void *arg)
{
    (void)arg;
    const char *sync = getenv("GMATCH_CUDA_SYNC");
    gm_cuda_sync mode = GM_CUDA_SYNC_SPIN;
    if (sync && !strcmp(sync, "auto"))
        mode = GM_CUDA_SYNC_AUTO;
    else if (sync && !strcmp(sync, "yield"))
        mode = GM_CUDA_SYNC_YIELD;
    else if (sync && !strcmp(sync, "block"))
        mode = GM_CUDA_SYNC_BLOCK;
    /* no usable GPU: under cuda the reference says so, under auto the CPU goes on */
    g_gpu.begin_ms = since_main();
    gm_status st = gm_cuda_set_sync(mode);
    g_gpu.ready_ms = since_main();
    gm_ref *r = NULL;
    if (g_gpu.auto_mode && st == GM_OK &&
        gm_ref_prepare(&g_gpu.params, g_gpu.view, &r) == GM_OK &&
        gm_ref_backend(r) == GM_DEVICE_CUDA)
        g_gpu.ref = r;
    else
        gm_ref_free(r);
    atomic_store(&g_gpu.done, 1);
    return NULL;
}

/* At the process's start: under cuda the thread starts; under auto the CPU
 * prepares the reference (o->params.device becomes cpu). */
static void gpu_start(cli_opts *o)
{
    if (o->params.device == GM_DEVICE_CPU || !gm_backend_available(GM_DEVICE_CUDA))
        return;
    if (o->params.device == GM_DEVICE_AUTO) {
        g_gpu.auto_mode = 1;
        g_gpu.params = o->params;
        g_gpu.params.device = GM_DEVICE_CUDA;
        o->params.device = GM_DEVICE_CPU;
        return;
    }
    g_gpu.started = pthread_create(&g_gpu.th, NULL, gpu_start_main, NULL) == 0;
}

/* Waits for the thread. */
static void gpu_wait(void)
{
    if (g_gpu.started)
        pthread_join(g_gpu.th, NULL);
    g_gpu.started = 0;
}

/* Under auto: the reference's image kept for the GPU's reference (taken
 * from *img, or only viewed when `shared`: the pictures keep it), and the
 * CPU's preparation time.  No copy: the image stays as long as the run. */
static void gpu_keep(gm_image *img, int shared, double prep_ms)
{
    if (!g_gpu.auto_mode || g_gpu.have_img)
        return;
    g_gpu.view = gm_image_view(img);
    if (!shared) {
        g_gpu.img = *img;
        memset(img, 0, sizeof *img);
    }
    g_gpu.have_img = 1;
    g_gpu.prep_ms = prep_ms;
}

/* Under auto: starts the GPU when `left` more stills at match_ms each on
 * the CPU would take longer than its start (video: left < 0, always). */
static void gpu_consider(int left, double match_ms)
{
    if (!g_gpu.auto_mode || !g_gpu.have_img || g_gpu.started || atomic_load(&g_gpu.done))
        return;
    if (left >= 0 && left * match_ms <= GPU_START_MS + g_gpu.prep_ms)
        return;
    g_gpu.started = pthread_create(&g_gpu.th, NULL, gpu_start_main, NULL) == 0;
}

/* Under auto: the queries from here on to the GPU's reference once it is
 * ready (wait: for it, as a video does).  *ref is the CPU's, replaced. */
static void gpu_switch(const cli_opts *o, gm_ref **ref, int wait, const char *before)
{
    if (!g_gpu.started || !g_gpu.auto_mode || !*ref)
        return;
    if (!wait && !atomic_load(&g_gpu.done))
        return;
    gpu_wait();
    if (!g_gpu.ref)
        return; /* no usable GPU, or its reference failed: the CPU's stays */
    gm_ref_free(*ref);
    *ref = g_gpu.ref;
    g_gpu.ref = NULL;
    if (o->verbosity >= VERBOSITY_VERBOSE)
        fprintf(stderr, PROG ": device: %s from %s on (CUDA started %.1f to %.1f ms, now %.1f ms "
                "after main began)\n", gm_ref_device(*ref), before, g_gpu.begin_ms, g_gpu.ready_ms,
                since_main());
}

/* At the end: 1 when the thread is still starting a GPU that the run no
 * longer needs, and the process should end without waiting for it. */
static int gpu_finish(void)
{
    if (g_gpu.started && !atomic_load(&g_gpu.done))
        return 1;
    gpu_wait();
    gm_ref_free(g_gpu.ref);
    g_gpu.ref = NULL;
    gm_image_free(&g_gpu.img);
    return 0;
}

/* One warning a run when the GPU failed and the reference went on on the
 * CPU (gm_ref_fallback): the results stay right, the speed does not. */
static void warn_fallback(const gm_ref *ref, const char *name)
{
    static int warned;
    const char *why = ref ? gm_ref_fallback(ref) : "";
    if (!warned && *why) {
        warned = 1;
        diag_file(name, "warning: %s", why);
    }
}

/* Load and prepare the reference.  Returns NULL on failure with the cause
 * in err. */
static gm_ref *prepare_reference(const cli_opts *o, const char *name, int *w, int *h, char *err,
                                 size_t errlen)
{
    gm_image img;
    double t0 = now_ms();
    const char *path = source_of(name, err, errlen);
    if (!path)
        return NULL;
    gm_status st = gm_image_load_frame(path, o->ref_frame, o->params.max_pixels, &img, err,
                                       errlen);
    double t1 = now_ms();
    gpu_wait(); /* under cuda: what it did not hide counts in "prepare" */
    if (st != GM_OK)
        return NULL;
    gm_ref *r = NULL;
    st = gm_ref_prepare(&o->params, gm_image_view(&img), &r);
    double t2 = now_ms();
    if (st != GM_OK) {
        snprintf(err, errlen, "%s", r && *gm_ref_error(r) ? gm_ref_error(r) : gm_status_str(st));
        gm_ref_free(r);
        gm_image_free(&img);
        return NULL;
    }
    warn_fallback(r, name);
    if (o->verbosity >= VERBOSITY_VERBOSE)
        fprintf(stderr, PROG ": device: %s%s\n", gm_ref_device(r),
                g_gpu.auto_mode ? " (auto: the GPU starts for work that repays it)" : "");
    if (o->verbosity >= VERBOSITY_VERBOSE && g_gpu.ready_ms > 0 && !g_gpu.auto_mode)
        fprintf(stderr, PROG ": timeline: CUDA started %.1f to %.1f ms after main began\n",
                g_gpu.begin_ms, g_gpu.ready_ms);
    if (o->verbosity >= VERBOSITY_VERBOSE)
        diag_file(name, "reference %dx%d: decode %.2f ms, prepare %.2f ms (library %.2f ms), "
                  "ready %.1f ms after main began",
                  img.width, img.height, t1 - t0, t2 - t1, gm_ref_time_ms(r), since_main());
    *w = img.width, *h = img.height;
    if (o->draw)
        g_pictures.ref = img; /* kept for the pictures */
    gpu_keep(o->draw ? &g_pictures.ref : &img, o->draw != NULL, t2 - t1);
    if (!o->draw)
        gm_image_free(&img); /* unless gpu_keep took it */
    return r;
}

/* A picture's caption (--draw): the query as named, a batch pair's id, and
 * the frame (frame -1: a still, -2: a video's path). */
static void picture_title(char *out, size_t len, const gm_output_rec *tmpl, const char *q,
                          int64_t frame)
{
    char id[160] = "", fr[48] = "";
    if (tmpl->line)
        snprintf(id, sizeof id, "  ID %.100s", tmpl->id);
    if (frame >= 0)
        snprintf(fr, sizeof fr, "  FRAME %" PRId64, frame);
    snprintf(out, len, "QUERY %s%s%s", q, id, frame == -2 ? "  PATH OF ITS FRAMES" : fr);
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
    if (g_out_tty)
        gm_progress_clear(&g_run);
    if (gm_output_record(out, fmt, rec) == 0) {
        if (rec->error || !rec->res)
            g_tally.error++;
        else if (rec->res->status == GM_MATCH_FOUND)
            g_tally.match++;
        else
            g_tally.none++;
        return 0;
    }
    diag_file(out_name, "write error: %s", errno ? strerror(errno) : "out of memory");
    return -1;
}

/* ---- videos -------------------------------------------------------------- */

#define MAX_FRAME_DIAGS 5 /* per video; the summary line counts the rest */

typedef struct {
    FILE *out;
    const char *out_name;
    const cli_opts *o;
    const char *q;
    double extra_ms;    /* added to the first frame's time_ms: reference and open */
    int out_tty;        /* results and the bar share the terminal */
    int ref_w, ref_h;   /* the reference's size, for the records */
    const gm_ref *ref;  /* for the warning of a fallback to the CPU */
    int64_t drawn;      /* frames seen by --draw-every */
    int failed, write_failed, diags;
    int64_t results;     /* lines written */
    gm_timing stages;    /* summed over the matched frames, for -v */
    int64_t timed;
    double open_ms, first_ms, tenth_ms; /* -v's timeline (since_main) */
    const gm_output_rec *tmpl; /* the pair's fields of every line (batch) and its model */
    int resumed;        /* --resume: the pair has lines; a report of an empty selection
                           (no frame from the next one on) is not written again */
} video_ctx;

/* Matcher threads for a video on the GPU when --threads does not say: each
 * drives one lane (stream) of the reference; measured on an H100 with 16
 * cores (docs/gpu.md, video): 8 lanes kept the GPU as busy as 16 and left
 * the cores to the decoder. */
#define GPU_VIDEO_WORKERS 8

static gm_video_opts video_opts(const cli_opts *o, int gpus)
{
    gm_video_opts vo = gm_video_opts_default();
    vo.first = o->first, vo.last = o->last, vo.step = o->step;
    vo.max_pixels = o->params.max_pixels;
    vo.decode = o->decode == 2 ? GM_VIDEO_DECODE_NVDEC
                : o->decode == 1 ? GM_VIDEO_DECODE_CPU : GM_VIDEO_DECODE_AUTO;
    vo.workers = o->params.threads; /* 0: all cores */
    /* on GPUs: GPU_VIDEO_WORKERS lanes a GPU, the cores permitting */
    if (vo.workers == 0 && gpus > 0)
        vo.workers = omp_get_num_procs() < GPU_VIDEO_WORKERS * gpus ? omp_get_num_procs()
                                                                    : GPU_VIDEO_WORKERS * gpus;
    const char *ft = getenv("GMATCH_FRAME_THREADS");
    if (ft)
        vo.frame_threads = atoi(ft);
    const char *wk = getenv("GMATCH_WORKERS");
    if (wk)
        vo.workers = atoi(wk);
    const char *dt = getenv("GMATCH_DECODE_THREADS");
    if (dt)
        vo.decode_threads = atoi(dt);
    const char *qu = getenv("GMATCH_QUEUE");
    if (qu)
        vo.queue = atoi(qu);
    return vo;
}

/* Under --device cuda, the first query, when it is a video, is opened and
 * its first frames decoded on a thread while CUDA starts and the reference
 * is prepared (gm_video_prefetch), so that the workers find frames waiting:
 * the first result 0.02-0.14 s sooner on the H100 machine (docs/speed.md).  The frames are the ones the run would
 * read, in the same order. */
#define PREFETCH_ITEMS 48
#define PREFETCH_BYTES ((int64_t)128 << 20)
static struct {
    pthread_t th;
    int started;
    int stop;             /* set (atomically) when the run needs the video */
    const cli_opts *o;
    const char *path;
    gm_video *v;          /* opened, or NULL */
} g_pre;

static void *prefetch_main(void *arg)
{
    (void)arg;
    gm_video_opts vo = video_opts(g_pre.o, 1);
    char err[512];
    gm_video *v = NULL;
    if (gm_video_open(g_pre.path, &vo, &v, err, sizeof err) != GM_OK)
        return NULL; /* the run opens it again and says why */
    g_pre.v = v;
    (void)gm_video_prefetch(v, PREFETCH_ITEMS, PREFETCH_BYTES, &g_pre.stop);
    return NULL;
}

/* A file whose first bytes say JPEG or PNG is a still: not prefetched. */
static int looks_still(const char *path)
{
    unsigned char m[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1;
    size_t n = fread(m, 1, sizeof m, f);
    fclose(f);
    return n < 4 || (m[0] == 0xFF && m[1] == 0xD8) || (m[0] == 0x89 && m[1] == 'P');
}

static void prefetch_start(const cli_opts *o, const char *path)
{
    const char *off = getenv("GMATCH_PREFETCH"); /* 0: none, for measurements */
    /* under cuda only: under auto the CPU prepares the reference meanwhile
     * with every core, and the decoder's threads slowed it (one run of the
     * bench video: 0.72 s against 0.60) */
    if (!g_gpu.started || g_gpu.auto_mode || !strcmp(path, "-") || (off && !strcmp(off, "0")) ||
        o->params.gpus || looks_still(path)) /* cuda:LIST: its workers follow its GPUs */
        return;
    g_pre.o = o, g_pre.path = path;
    g_pre.started = pthread_create(&g_pre.th, NULL, prefetch_main, NULL) == 0;
}

/* Ends the read-ahead; returns the video when the run is to use it (the
 * first query, a video, on the GPU's thread layout), else closes it. */
static gm_video *prefetch_take(int use)
{
    if (!g_pre.started)
        return NULL;
    __atomic_store_n(&g_pre.stop, 1, __ATOMIC_RELEASE);
    pthread_join(g_pre.th, NULL);
    g_pre.started = 0;
    gm_video *v = g_pre.v;
    g_pre.v = NULL;
    if (!use) {
        gm_video_close(v);
        v = NULL;
    }
    return v;
}

/* One result line per frame, in frame order, on the main thread. */
static int video_sink(void *user, const gm_video_result *r)
{
    video_ctx *c = user;
    const gm_video_frame *f = r->item;
    char err[256] = "";
    if (c->resumed && !f->has_pts) /* "no frame selected" past the lines already written */
        return 0;
    gm_output_rec rec = *c->tmpl;
    rec.frame = f->frame, rec.has_pts = f->has_pts, rec.pts_s = f->pts_s, rec.res = r->res;
    rec.time_ms = r->time_ms + c->extra_ms;
    if (f->status == GM_OK)
        rec.q_w = f->img.width, rec.q_h = f->img.height;
    warn_fallback(c->ref, c->q);
    if (c->o->draw) {
        const gm_result *ok = f->status == GM_OK && r->match == GM_OK ? r->res : NULL;
        char pic[4096] = "", perr[256] = "out of memory";
        if (gm_picture_add(&g_pictures, ok, f->img.width, f->img.height) != 0) {
            diag_file(c->q, "--draw: %s", perr);
            c->failed = 1;
        }
        if (ok && (c->drawn++ % c->o->draw_every) == 0) {
            char suffix[32], title[4200];
            snprintf(suffix, sizeof suffix, "_%" PRId64, f->frame);
            picture_title(title, sizeof title, c->tmpl, c->q, f->frame);
            if (gm_picture_path(&g_pictures, c->tmpl->line ? c->tmpl->id : c->q, suffix, pic,
                                sizeof pic) != 0 ||
                gm_picture_result(&g_pictures, gm_image_view(&f->img), ok, c->tmpl->model, title,
                                  pic, perr, sizeof perr) != 0) {
                diag_file(pic[0] ? pic : c->o->draw, "%s", perr);
                c->failed = 1;
            }
        }
    }
    c->extra_ms = 0;
    if (f->status != GM_OK)
        rec.error = f->error;
    else if (r->match != GM_OK)
        snprintf(err, sizeof err, "matching failed: %.200s",
                 r->res && r->res->error[0] ? r->res->error : gm_status_str(r->match)),
            rec.error = err;
    if (rec.error) {
        c->failed = 1;
        if (c->diags++ < MAX_FRAME_DIAGS)
            diag_file(c->q, "frame %" PRId64 ": %s", f->frame, rec.error);
    }
    /* both on the terminal: the bar is erased, the line written, and the
     * bar drawn again below it (never the line after the bar's text) */
    if (c->out_tty)
        gm_progress_clear(&g_progress);
    if (emit(c->out, c->out_name, c->o->format, &rec) != 0) {
        c->write_failed = 1;
        return 1;
    }
    if (c->out_tty)
        fflush(c->out);
    gm_progress_step(&g_progress);
    if (r->res && f->status == GM_OK && r->match == GM_OK) {
        const gm_timing *t = &r->res->time;
        c->stages.edges += t->edges, c->stages.bases += t->bases, c->stages.vote += t->vote;
        c->stages.reduce += t->reduce, c->stages.verify += t->verify, c->stages.total += t->total;
        c->timed++;
    }
    if (++c->results == 1)
        c->first_ms = since_main();
    else if (c->results == 10)
        c->tenth_ms = since_main();
    return 0;
}

/* Match every selected frame of v; returns nonzero when anything was lost. */
static int run_video(video_ctx *c, const gm_ref *ref, gm_video *v)
{
    c->ref = ref;
    c->out_tty = isatty(fileno(c->out));
    const char *decoder = gm_video_decoder(v);
    if (c->o->verbosity >= VERBOSITY_VERBOSE) {
        diag_file(c->q, "decoder: %s", decoder);
        int w, h;
        double fps;
        gm_video_info(v, &w, &h, &fps);
        diag_file(c->q, "video %dx%d, %.3f fps, %" PRId64 " frames selected%s", w, h, fps,
                  gm_video_frames_total(v), gm_video_frames_total(v) < 0 ? " (unknown)" : "");
    }
    gm_progress_clear(&g_run); /* the video's own bar meanwhile */
    gm_progress_start(&g_progress, c->o->verbosity >= VERBOSITY_NORMAL, c->q, NULL,
                      gm_video_frames_total(v));
    double t0 = now_ms();
    gm_status st = gm_video_match(v, ref, video_sink, c);
    double secs = (now_ms() - t0) / 1e3;
    gm_progress_clear(&g_progress);
    int64_t n = g_progress.done;
    g_progress.enabled = 0;
    if (st != GM_OK) {
        diag_file(c->q, "video matching stopped: %s", gm_status_str(st));
        c->failed = 1;
    }
    if (c->diags > MAX_FRAME_DIAGS)
        diag_file(c->q, "%d more frames failed (not shown)", c->diags - MAX_FRAME_DIAGS);
    if (c->o->draw) {
        char pic[4096] = "", perr[256] = "the picture's path is too long", title[4200];
        picture_title(title, sizeof title, c->tmpl, c->q, -2);
        if (gm_picture_path(&g_pictures, c->tmpl->line ? c->tmpl->id : c->q, "_path", pic,
                            sizeof pic) != 0 ||
            gm_picture_path_write(&g_pictures, title, pic, perr, sizeof perr) != 0) {
            diag_file(pic[0] ? pic : c->o->draw, "%s", perr);
            c->failed = 1;
        }
    }
    if (gm_video_lost(v)) {
        diag_file(c->q, "%s", gm_video_error(v));
        c->failed = 1;
    }
    if (c->o->verbosity >= VERBOSITY_VERBOSE) {
        if (gm_video_decoder(v) != decoder) /* NVDEC refused the stream on the way */
            diag_file(c->q, "decoder: %s", gm_video_decoder(v));
        diag_file(c->q, "%" PRId64 " frames in %.2f s, %.1f fps", n, secs,
                  secs > 0 ? (double)n / secs : 0.0);
        diag_file(c->q, "timeline: opened %.1f ms, first result %.1f ms, tenth %.1f ms, "
                  "last %.1f ms after main began", c->open_ms, c->first_ms, c->tenth_ms,
                  since_main());
        gm_video_stats vs;
        gm_video_stats_get(v, &vs);
        if (vs.items > 0)
            diag_file(c->q, "pipeline: %d workers, a ring of %d frames; a frame: decoding %.3f ms, "
                      "the decoder waiting for room %.3f ms, matching %.3f ms, workers waiting "
                      "for a frame %.3f ms (summed over threads)", vs.workers, vs.ring,
                      vs.decode_ms / vs.items, vs.decoder_wait_ms / vs.items,
                      vs.match_ms / vs.items, vs.worker_wait_ms / vs.items);
        if (c->timed > 0) {
            const gm_timing *t = &c->stages;
            double k = 1.0 / (double)c->timed;
            diag_file(c->q, "a frame's match: edges %.3f ms, bases %.3f, vote %.3f, reduce %.3f, "
                      "verify %.3f, total %.3f (means over %" PRId64 " frames)", t->edges * k,
                      t->bases * k, t->vote * k, t->reduce * k, t->verify * k, t->total * k,
                      c->timed);
        }
        uint64_t waits;
        double wait_ms;
        if (gm_ref_backend(ref) == GM_DEVICE_CUDA && gm_cuda_waits(&waits, &wait_ms) == GM_OK &&
            n > 0)
            diag_file(c->q, "GPU: %.1f stream waits a frame, %.3f ms waiting a frame (all "
                      "threads, the reference's preparation included)",
                      (double)waits / (double)n, wait_ms / (double)n);
    }
    return c->failed;
}

/* ---- the run ------------------------------------------------------------- */

/* Where a run writes, and what has gone wrong so far. */
typedef struct {
    FILE *out;
    const char *out_name;
    int failed, write_failed;
} run_ctx;

/* ---- a batch's stills, several at once ----------------------------------- */

/* On a GPU a batch matches a reference's stills several at a time, so that
 * its lanes (and the copies of cuda:all, gm_ref_pick) work at once, as a
 * video's workers do; the lines are written in manifest order by the main
 * thread, which also matches the videos in their turn.  On the CPU each
 * still takes every core already (OpenMP), so one at a time. */
#define STILL_WINDOW 64

typedef struct {
    const cli_opts *o;    /* its frames and the reference's model */
    const gm_output_rec *tmpl;
    const char *path;
    int resumed;
    /* what the worker found */
    int video;            /* not a still: the main thread's, in its turn */
    gm_status st;
    char err[512];
    gm_result res;
    int q_w, q_h;
    double begin_ms, ms, decode_ms;
} still_job;

typedef struct {
    const gm_ref *ref;
    still_job *jobs;
    int n;
    int next;             /* atomic: the next job to take */
} still_pool;

/* Match a still already decoded (img) as its job says: the model (the
 * reference's own, or another through gm_match_model), the picture of
 * --draw; the outcome in the job.  Thread-safe (the workers call it). */
static void still_match(const gm_ref *ref, still_job *j, const gm_image *img)
{
    gm_model model = j->tmpl->model;
    j->q_w = img->width, j->q_h = img->height;
    j->st = model == j->o->params.model ? gm_match(ref, gm_image_view(img), &j->res)
                                       : gm_match_model(ref, gm_image_view(img), model, &j->res);
    if (j->st != GM_OK)
        snprintf(j->err, sizeof j->err, "matching failed: %.200s",
                 j->res.error[0] ? j->res.error : gm_status_str(j->st));
    if (j->st == GM_OK && j->o->draw) {
        char pic[4096] = "", perr[256] = "the picture's path is too long", title[4200];
        const char *name = j->tmpl->line ? j->tmpl->id : j->tmpl->query;
        picture_title(title, sizeof title, j->tmpl, j->tmpl->query, -1);
        if (gm_picture_path(&g_pictures, name, "", pic, sizeof pic) != 0 ||
            gm_picture_result(&g_pictures, gm_image_view(img), &j->res, model, title, pic, perr,
                              sizeof perr) != 0)
            snprintf(j->err, sizeof j->err, "--draw: %.200s: %.200s", pic[0] ? pic : j->o->draw,
                     perr);
    }
}

/* A worker's job: decode (a video, or a pair that has lines, goes back to
 * the main thread), then still_match. */
static void still_run(const gm_ref *ref, still_job *j)
{
    j->begin_ms = now_ms();
    if (j->resumed) { /* a still with lines is never a job: a video's next frames */
        j->video = 1;
        return;
    }
    gm_image img;
    memset(&img, 0, sizeof img);
    j->st = gm_image_load(j->path, j->o->params.max_pixels, &img, j->err, sizeof j->err);
    j->decode_ms = now_ms() - j->begin_ms;
    if (j->st == GM_ERR_FORMAT) {
        j->video = 1;
        return;
    }
    if (j->st == GM_OK)
        still_match(ref, j, &img);
    if (j->st != GM_OK && !j->err[0])
        snprintf(j->err, sizeof j->err, "%s", gm_status_str(j->st));
    gm_image_free(&img);
    j->ms = now_ms() - j->begin_ms;
}

/* A still job's line (an error line with the message on stderr when it
 * failed). */
static void still_emit(run_ctx *rc, const cli_opts *o, const gm_ref *ref, const still_job *j,
                       const char *q, double extra_ms)
{
    gm_output_rec rec = *j->tmpl;
    rec.res = &j->res;
    rec.q_w = j->q_w, rec.q_h = j->q_h;
    warn_fallback(ref, q);
    if (j->st != GM_OK) {
        diag_file(q, "%s", j->err);
        rec.error = j->err;
        rc->failed = 1;
    } else {
        if (j->err[0]) { /* a picture that could not be written */
            diag_file(q, "%s", j->err);
            rc->failed = 1;
        }
        if (o->verbosity >= VERBOSITY_VERBOSE)
            report_timing(q, j->decode_ms, &j->res);
    }
    rec.time_ms = j->ms + extra_ms;
    if (emit(rc->out, rc->out_name, o->format, &rec) != 0)
        rc->write_failed = 1;
}

/* One query against the reference *ref (NULL: it failed, ref_msg says
 * why): one line for a still or an error, a line a frame for a video.
 * tmpl holds the pair's fields (batch) and model; o the frames asked for;
 * left: queries after this one (auto's choice of the GPU); t0: when this
 * query's time began; resumed: --resume found lines of this pair. */
static void run_query(run_ctx *rc, const cli_opts *o, gm_ref **ref, const char *ref_msg,
                      const gm_output_rec *tmpl, const char *q, const char *path, int first,
                      int left, double t0, int resumed)
{
    if (!*ref) { /* the reference failed: its message on the query's line */
        if (resumed) /* written already */
            return;
        gm_output_rec rec = *tmpl;
        rec.error = ref_msg;
        rec.time_ms = now_ms() - t0;
        rc->failed = 1;
        if (emit(rc->out, rc->out_name, o->format, &rec) != 0)
            rc->write_failed = 1;
        return;
    }
    double t_decode = now_ms();
    char err[512] = "";
    gm_image img;
    memset(&img, 0, sizeof img);
    const char *src = source_of(path, err, sizeof err);
    gm_status st = src ? gm_image_load(src, o->params.max_pixels, &img, err, sizeof err)
                       : GM_ERR_IO;
    double decode_ms = now_ms() - t_decode;
    gm_video *v = NULL;
    if (st == GM_ERR_FORMAT) { /* a video waits for the GPU */
        gpu_consider(-1, 0);
        gpu_switch(o, ref, 1, q);
    }
    if (first) /* the read-ahead's video, when this is one on the GPU */
        v = prefetch_take(st == GM_ERR_FORMAT && gm_ref_backend(*ref) == GM_DEVICE_CUDA);
    if (st == GM_ERR_FORMAT) {
        gm_video_opts vo = video_opts(o, gm_ref_gpus(*ref));
        vo.model = tmpl->model == o->params.model ? -1 : (int)tmpl->model;
        if (v || (st = gm_video_open(src, &vo, &v, err, sizeof err)) == GM_OK) {
            video_ctx c = {.out = rc->out, .out_name = rc->out_name, .o = o, .q = q,
                           .extra_ms = now_ms() - t0, .ref_w = tmpl->ref_w,
                           .ref_h = tmpl->ref_h, .open_ms = since_main(), .tmpl = tmpl,
                           .resumed = resumed};
            if (run_video(&c, *ref, v) != 0)
                rc->failed = 1;
            rc->write_failed |= c.write_failed;
            gm_video_close(v);
            return;
        }
    }
    if (resumed) { /* the pair's line is written already: not an error line again */
        gm_image_free(&img);
        return;
    }
    still_job j = {.o = o, .tmpl = tmpl, .path = path, .st = st, .decode_ms = decode_ms};
    if (st == GM_OK) {
        /* gm_match takes a const reference (thread-safe), so the status is
         * all it can tell us. */
        gpu_switch(o, ref, 0, q);
        still_match(*ref, &j, &img);
        if (j.st == GM_OK)
            gpu_consider(left, j.res.time.total);
    } else {
        snprintf(j.err, sizeof j.err, "%s", err[0] ? err : gm_status_str(st));
    }
    gm_image_free(&img);
    j.ms = now_ms() - t0;
    still_emit(rc, o, *ref, &j, q, 0.0);
}

/* A JPEG or PNG by its first bytes (a still: its one line says it is done). */
static int starts_still(const char *path)
{
    return strcmp(path, "-") != 0 && looks_still(path) && access(path, R_OK) == 0;
}

static void *still_main(void *arg)
{
    still_pool *p = arg;
    /* a thread a still: its host stages on one core (threads x cores
     * oversubscribed the host: 240 pairs/s on two H200s, GPUs 15% busy) */
    int old = gm_set_thread_budget(1);
    for (;;) {
        int i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= p->n) {
            gm_set_thread_budget(old);
            return NULL;
        }
        still_run(p->ref, &p->jobs[i]);
    }
}

/* Matchers for a batch's stills: 1 on the CPU, GPU_VIDEO_WORKERS a GPU
 * (the cores permitting); GMATCH_WORKERS overrides (tests run the threaded
 * path on the CPU so). */
static int still_workers(const gm_ref *ref)
{
    const char *wk = getenv("GMATCH_WORKERS");
    int n = wk ? atoi(wk) : 0;
    if (n <= 0) {
        int gpus = ref ? gm_ref_gpus(ref) : 0;
        n = gpus > 0 ? GPU_VIDEO_WORKERS * gpus : 1;
        if (n > omp_get_num_procs())
            n = omp_get_num_procs();
    }
    return n < 1 ? 1 : n > 256 ? 256 : n;
}

/* Jobs [0, n) on `workers` threads (the calling one among them). */
static void still_pool_run(const gm_ref *ref, still_job *jobs, int n, int workers)
{
    still_pool pool = {.ref = ref, .jobs = jobs, .n = n};
    pthread_t th[256];
    int started = 0;
    for (int k = 1; k < workers && k < n; k++)
        started += pthread_create(&th[started], NULL, still_main, &pool) == 0;
    still_main(&pool);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
}

/* A query to match against the current reference: its options (frames,
 * the model through the reference's), its line's fields, names. */
typedef struct {
    cli_opts o;
    gm_output_rec tmpl;
    const char *q;      /* the name the lines and messages give */
    const char *path;   /* the file (a batch's resolved path, stdin's copy) */
    int resumed;        /* --resume: the pair has lines already */
} run_item;

/* Every item's lines, in order.  On a GPU (still_workers > 1) in windows:
 * the stills matched at once by the workers, then every line written in
 * order by this thread, a video matched in its turn; else one at a time,
 * as the command line always did (plain: the first may be the read-ahead's
 * video, and auto's choice of the GPU sees how many are left). */
static void run_items(run_ctx *rc, const cli_opts *o, gm_ref **ref, const char *ref_msg,
                      run_item *items, int n, double t_start, int plain)
{
    int workers = *ref && !g_gpu.auto_mode ? still_workers(*ref) : 1;
    still_job *jobs = workers > 1 ? calloc(STILL_WINDOW, sizeof *jobs) : NULL;
    if (!jobs)
        workers = 1;
    int done = 0;
    for (int k = 0; k < n && !rc->write_failed;) {
        if (workers == 1) {
            run_item *it = &items[k];
            run_query(rc, &it->o, ref, ref_msg, &it->tmpl, it->q, it->path, plain && k == 0,
                      n - k - 1, done++ == 0 ? t_start : now_ms(), it->resumed);
            gm_progress_step(&g_run);
            k++;
            continue;
        }
        int w = 0, first = k;
        for (; k < n && w < STILL_WINDOW; k++, w++)
            jobs[w] = (still_job){.o = &items[k].o, .tmpl = &items[k].tmpl,
                                  .path = items[k].path, .resumed = items[k].resumed};
        double t_window = now_ms();
        still_pool_run(*ref, jobs, w, workers);
        for (int i = 0; i < w && !rc->write_failed; i++) {
            run_item *it = &items[first + i];
            double extra = done++ == 0 ? t_window - t_start : 0.0;
            if (jobs[i].video) /* a video (or a pair with lines: a video's next frames) */
                run_query(rc, &it->o, ref, ref_msg, &it->tmpl, it->q, it->path,
                          plain && first + i == 0, 0, now_ms() - extra, it->resumed);
            else
                still_emit(rc, o, *ref, &jobs[i], it->q, extra);
            gm_progress_step(&g_run);
        }
    }
    free(jobs);
}

/* prepare_reference for a run: NULL when it failed, with the message each
 * of its queries' lines carries in ref_msg ("reference NAME: why"). */
static gm_ref *open_reference(run_ctx *rc, const cli_opts *o, const char *path,
                              const char *name, int *w, int *h, char *ref_msg, size_t len)
{
    char err[512] = "";
    *w = *h = 0;
    gm_ref *ref = prepare_reference(o, path, w, h, err, sizeof err);
    if (!ref) {
        diag_file(path, "%s", err);
        snprintf(ref_msg, len, "reference %s: %s", name, err);
        rc->failed = 1;
    }
    return ref;
}

/* gmatch REF QUERY...: the reference once, then every query. */
static void run_plain(run_ctx *rc, const cli_opts *o, const char *ref_path, char **queries,
                      int nq)
{
    /* The first query's time includes loading and preparing the reference,
     * as the peer (bench/opencv_match.py) measures it. */
    double t_start = now_ms();
    char ref_msg[1024] = "";
    int ref_w, ref_h;
    gm_ref *ref = open_reference(rc, o, ref_path, ref_path, &ref_w, &ref_h, ref_msg,
                                 sizeof ref_msg);
    run_item *items = calloc((size_t)(nq > 0 ? nq : 1), sizeof *items);
    if (!items) {
        diag_file(ref_path, "out of memory");
        rc->failed = 1;
    }
    for (int i = 0; items && i < nq; i++) {
        char err[256];
        const char *src = source_of(queries[i], err, sizeof err);
        items[i] = (run_item){.o = *o, .q = queries[i], .path = src ? src : queries[i]};
        items[i].tmpl = (gm_output_rec){.query = queries[i], .model = o->params.model,
                                        .ref_w = ref_w, .ref_h = ref_h};
    }
    if (items)
        run_items(rc, o, &ref, ref_msg, items, nq, t_start, 1);
    free(items);
    if (ref)
        gm_ref_free(ref);
}

/* gmatch --batch MANIFEST: this shard's pairs, a reference at a time. */
static void run_batch(run_ctx *rc, cli_opts *o, gm_batch *b, int appending)
{
    gm_model run_model = o->params.model;
    int wide = run_model == GM_MODEL_HOMOGRAPHY || run_model == GM_MODEL_AUTO;
    for (int i = 0; i < b->n; i++)
        wide |= b->pairs[i].model == GM_MODEL_HOMOGRAPHY || b->pairs[i].model == GM_MODEL_AUTO;
    if (!appending && gm_output_header(rc->out, o->format, wide ? GM_MODEL_HOMOGRAPHY
                                                                 : GM_MODEL_SIMILARITY, 1) != 0) {
        diag_file(rc->out_name, "write error: %s", strerror(errno));
        rc->write_failed = 1;
        return;
    }
    int n = o->shards > 0 ? o->shards : 1;
    /* the bad lines of this shard first: one error line each */
    for (int i = 0; i < b->n && !rc->write_failed; i++) {
        gm_batch_pair *p = &b->pairs[i];
        if (!p->error || gm_batch_pair_shard(b, i, n) != o->shard || p->written > 0)
            continue;
        char msg[600];
        snprintf(msg, sizeof msg, "line %" PRId64 ": %s", p->line, p->error);
        diag_file(o->batch, "%s", msg);
        gm_output_rec rec = {.line = p->line, .id = p->id,
                             .ref = p->ref ? p->ref : "", .query = p->query ? p->query : "",
                             .model = p->model >= 0 ? (gm_model)p->model : run_model,
                             .wide = wide, .error = msg};
        rc->failed = 1;
        if (emit(rc->out, rc->out_name, o->format, &rec) != 0)
            rc->write_failed = 1;
        gm_progress_step(&g_run);
    }
    for (int g = 0; g < b->ng && !rc->write_failed; g++) {
        gm_batch_group *gr = &b->groups[g];
        if (gr->shard != o->shard)
            continue;
        /* what is left: pairs without lines, and videos (their next
         * frames), with their options (frames, the frame to go on from)
         * and their lines' fields */
        run_item *items = calloc((size_t)gr->n, sizeof *items);
        if (!items) {
            diag_file(gr->ref_path, "out of memory");
            rc->failed = 1;
            continue;
        }
        int ni = 0, mixed = 0;
        for (int k = 0; k < gr->n; k++) {
            gm_batch_pair *p = &b->pairs[gr->pairs[k]];
            if (p->written > 0 && starts_still(p->query_path))
                continue;
            run_item *it = &items[ni];
            it->o = *o;
            if (p->has_frames)
                it->o.first = p->first, it->o.last = p->last;
            if (p->written > 0) { /* on from the frame after the last one written */
                int64_t next = p->last_frame + it->o.step;
                it->o.first = next > it->o.first ? next : it->o.first;
                if (it->o.last >= 0 && it->o.first >= it->o.last)
                    continue;
            }
            it->tmpl = (gm_output_rec){.line = p->line, .id = p->id,
                                       .ref = p->ref, .query = p->query,
                                       .model = p->model >= 0 ? (gm_model)p->model : run_model,
                                       .wide = wide};
            it->q = p->query, it->path = p->query_path, it->resumed = p->written > 0;
            mixed |= it->tmpl.model != run_model;
            ni++;
        }
        if (ni == 0) {
            free(items);
            continue;
        }
        /* a reference asked for several models is prepared for auto,
         * which answers each (the same results as one prepared for it);
         * the items' options carry the reference's model, so that
         * gm_match_model answers the others */
        cli_opts go = *o;
        if (mixed && run_model == GM_MODEL_SIMILARITY)
            go.params.model = GM_MODEL_AUTO;
        double t_start = now_ms();
        char ref_msg[1024] = "";
        int ref_w, ref_h;
        gm_image_free(&g_pictures.ref);
        gm_ref *ref = open_reference(rc, &go, gr->ref_path, gr->ref, &ref_w, &ref_h, ref_msg,
                                     sizeof ref_msg);
        for (int k = 0; k < ni; k++) {
            items[k].o.params.model = go.params.model;
            items[k].tmpl.ref_w = ref_w, items[k].tmpl.ref_h = ref_h;
        }
        run_items(rc, o, &ref, ref_msg, items, ni, t_start, 0);
        free(items);
        if (ref)
            gm_ref_free(ref);
    }
}

/* The run's bar (g_run) over its queries or this shard's pairs (those
 * without lines yet, and videos to go on with), for a batch or RUN_MANY
 * queries or more; returns whether a summary is due at the end. */
static int run_progress_start(const cli_opts *o, const gm_batch *b, const char *ref, int nq)
{
    int64_t total = nq;
    if (o->batch) {
        total = 0;
        for (int i = 0; i < b->n; i++)
            total += gm_batch_pair_shard(b, i, o->shards > 0 ? o->shards : 1) == o->shard &&
                     (b->pairs[i].written == 0 ||
                      (!b->pairs[i].error && !starts_still(b->pairs[i].query_path)));
    }
    int want = o->verbosity < VERBOSITY_NORMAL || !(o->batch || nq >= RUN_MANY) ? 0
               : o->progress                                                    ? 2
                                                                                : 1;
    gm_progress_start(&g_run, want, o->batch ? o->batch : ref, o->batch ? "pairs" : "queries",
                      total);
    return g_run.enabled;
}

/* The summary line of a run with a bar: its lines by status, its time. */
static void run_summary(void)
{
    gm_progress_clear(&g_run);
    fprintf(stderr, PROG ": %" PRId64 " lines: %" PRId64 " matched, %" PRId64 " none, %" PRId64
            " error%s, %.1f s\n", g_tally.match + g_tally.none + g_tally.error, g_tally.match,
            g_tally.none, g_tally.error, g_tally.error == 1 ? "" : "s", since_main() / 1e3);
}

int main(int argc, char **argv)
{
    g_main_ms = now_ms();
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.params = gm_params_default();
    o.format = GM_OUTPUT_TEXT;
    o.verbosity = VERBOSITY_NORMAL;
    o.last = -1, o.step = 1, o.draw_every = 30;
    parse_options(argc, argv, &o);
    g_pictures.dir = o.draw;
    if (o.draw) { /* the folder first: a run that cannot write its pictures stops at once */
        struct stat sb;
        if (mkdir(o.draw, 0777) != 0 && !(errno == EEXIST && stat(o.draw, &sb) == 0 &&
                                           S_ISDIR(sb.st_mode))) {
            diag_file(o.draw, "--draw: cannot make the folder: %s",
                      errno == EEXIST ? "a file of that name exists" : strerror(errno));
            return EXIT_USAGE;
        }
    }
    gm_video_log(o.verbosity >= VERBOSITY_VERBOSE);
    if (o.threads_given && o.params.threads <= 0) /* --threads 0: every core */
        o.params.threads = omp_get_num_procs();

    gm_batch batch;
    memset(&batch, 0, sizeof batch);
    const char *ref_path = NULL;
    char **queries = NULL;
    int nq = 0;
    if (o.batch) {
        char err[512] = "";
        if (gm_batch_load(o.batch, &batch, err, sizeof err) != 0) {
            diag_file(o.batch, "%s", err);
            return EXIT_USAGE;
        }
        gm_batch_shard(&batch, o.shards > 0 ? o.shards : 1);
        if (o.resume && gm_batch_resume(&batch, o.resume, o.format,
                                        o.output && strcmp(o.output, o.resume) == 0, err,
                                        sizeof err) != 0) {
            diag_file(o.resume, "%s", err);
            gm_batch_free(&batch);
            return EXIT_USAGE;
        }
        /* a long run: the GPU's start repays itself, so the library's own
         * choice (auto: the GPU when usable) from the first reference on */
        if (o.params.device != GM_DEVICE_CPU && gm_backend_available(GM_DEVICE_CUDA))
            (void)gm_cuda_set_sync(GM_CUDA_SYNC_SPIN);
    } else {
        ref_path = argv[optind];
        queries = argv + optind + 1;
        nq = argc - optind - 1;
        int dashes = 0;
        for (int i = optind; i < argc; i++)
            dashes += strcmp(argv[i], "-") == 0;
        if (dashes > 1)
            usage_error("'-' (standard input) is read once: give it for one input only");
        if (dashes)
            stdin_to_file();
        /* the GPU starts on a thread of its own (gpu_start_main): under cuda
         * prepare_reference waits for it before the reference meets the GPU,
         * under auto the CPU begins */
        gpu_start(&o);
        if (nq > 0)
            prefetch_start(&o, queries[0]);
    }

    run_ctx rc = {.out = stdout, .out_name = "stdout"};
    int appending = 0;
    if (o.output) {
        struct stat sb;
        appending = o.resume != NULL && stat(o.output, &sb) == 0 && sb.st_size > 0;
        rc.out = fopen(o.output, o.resume ? "a" : "w");
        if (!rc.out) {
            diag_file(o.output, "cannot open for writing: %s", strerror(errno));
            gpu_wait();
            gm_batch_free(&batch);
            return EXIT_USAGE;
        }
        rc.out_name = o.output;
    }
    g_out_tty = isatty(fileno(rc.out));
    int summary = run_progress_start(&o, &batch, ref_path, nq);
    if (o.batch) {
        run_batch(&rc, &o, &batch, appending);
    } else if (gm_output_header(rc.out, o.format, o.params.model, 0) != 0) {
        diag_file(rc.out_name, "write error: %s", strerror(errno));
        rc.write_failed = 1;
    } else {
        run_plain(&rc, &o, ref_path, queries, nq);
    }
    gm_video_close(prefetch_take(0)); /* a run that never reached it */
    /* under auto, a GPU still starting is not waited for (it may still
     * read the reference's image, which the pictures may hold) */
    int abandon = gpu_finish();
    if (!abandon)
        gm_pictures_free(&g_pictures);

    /* Data may still sit in a buffer, and close can fail too (a full disk,
     * NFS): check both before claiming success. */
    FILE *out = rc.out;
    if (out == stdout ? (fflush(out) != 0 || ferror(out)) : fclose(out) != 0) {
        if (!rc.write_failed)
            diag_file(rc.out_name, "write error: %s", strerror(errno));
        rc.write_failed = 1;
    }
    /* a batch's file in the manifest's order, once complete */
    if (o.batch && o.output && !rc.write_failed) {
        char err[512] = "";
        if (gm_batch_sort_file(o.output, o.format, err, sizeof err) != 0) {
            diag_file(o.output, "%s", err);
            rc.write_failed = 1;
        }
    }
    gm_batch_free(&batch);
    if (summary)
        run_summary();
    int code = rc.failed || rc.write_failed ? EXIT_FAILURE : EXIT_SUCCESS;
    if (o.verbosity >= VERBOSITY_VERBOSE)
        fprintf(stderr, PROG ": timeline: main ends %.1f ms after it began\n", since_main());
    if (abandon) {
        fflush(stderr);
        _exit(code);
    }
    return code;
}
