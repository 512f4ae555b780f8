/* videorun.h: a video query of the command line: its frames matched
 * through gm_video_match, a result line a frame, its progress bar, its
 * pictures (--draw) and -v's report. */
#ifndef GM_CLI_VIDEORUN_H
#define GM_CLI_VIDEORUN_H

#include <stdint.h>
#include <stdio.h>

#include "gmatch.h"
#include "gmatch_video.h"
#include "cli/cli.h"

/* A video query while its frames are matched (video_sink's user). */
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

/* The options of gm_video_open for a run's options, wherever the
 * reference runs (the workers are the library's choice once it is placed);
 * GMATCH_FRAME_THREADS, GMATCH_WORKERS, GMATCH_DECODE_THREADS and
 * GMATCH_QUEUE override, for measurements. */
gm_video_opts video_opts(const cli_opts *o);

/* Match every selected frame of v; returns nonzero when anything was lost. */
int run_video(video_ctx *c, const gm_ref *ref, gm_video *v);

#endif
