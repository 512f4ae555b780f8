/* cli.h: what the command line's files share: its options (cli_opts), the
 * run's state on the terminal (the pictures of --draw, the two progress
 * bars, the tally of the lines written), -v's clock, and the diagnostics
 * and result lines that every part of a run writes (cli.c).  Part of the
 * gmatch executable, not of the library: the library prints nothing. */
#ifndef GM_CLI_CLI_H
#define GM_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gmatch.h"
#include "cli/output.h"
#include "cli/pictures.h"
#include "cli/progress.h"

#define PROG "gmatch"

enum { EXIT_USAGE = 2 };

enum { VERBOSITY_QUIET = 0, VERBOSITY_NORMAL = 1, VERBOSITY_VERBOSE = 2 };

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
extern gm_pictures g_pictures;

/* The progress bar of the video being matched; diagnostics erase it first. */
extern gm_progress g_progress;

/* A run of many queries (RUN_MANY or more) or a batch: a bar over its
 * queries (pairs) while no video's bar is shown, and a summary line at the
 * end, on a terminal (or with --progress); the result lines written,
 * counted by status (emit). */
#define RUN_MANY 10
extern gm_progress g_run;
struct cli_tally {
    int64_t match, none, error;
};
extern struct cli_tally g_tally;
extern int g_out_tty; /* the results go to a terminal: the bars are erased before a line */

/* Where a run writes, and what has gone wrong so far. */
typedef struct {
    FILE *out;
    const char *out_name;
    int failed, write_failed;
} run_ctx;

/* Monotonic clock, MILLISECONDS. */
double now_ms(void);

/* -v's timeline: milliseconds since main began (where a run's start goes) */
extern double g_main_ms;
/* A reference was left unfreed while the library prepared its GPU copy
 * (run.c): main ends the process without waiting for it. */
extern int g_abandon;
double since_main(void);

/* "gmatch: NAME: message" with NAME quoted like the text output when it
 * holds odd characters, so a diagnostic is always one line. */
void diag_file(const char *name, const char *fmt, ...);

/* One warning a run when the GPU failed and the reference went on on the
 * CPU (gm_ref_fallback): the results stay right, the speed does not. */
void warn_fallback(const gm_ref *ref, const char *name);

/* A picture's caption (--draw): the query as named, a batch pair's id, and
 * the frame (frame -1: a still, -2: a video's path). */
void picture_title(char *out, size_t len, const gm_output_rec *tmpl, const char *q,
                   int64_t frame);

/* -v's line of a still's decoding and stages on stderr. */
void report_timing(const char *query, double decode_ms, const gm_result *res);

/* Write one record; on a write error say so and return -1. */
int emit(FILE *out, const char *out_name, gm_output_format fmt, const gm_output_rec *rec);

#endif
