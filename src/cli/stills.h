/* stills.h: the command line's stills: one matched (still_match) and its
 * line (still_emit), and a batch's stills matched several at once by a
 * pool of threads (still_pool_run). */
#ifndef GM_CLI_STILLS_H
#define GM_CLI_STILLS_H

#include "gmatch.h"
#include "cli/cli.h"

/* On a GPU a batch matches a reference's stills several at a time, so that
 * its lanes (and the copies of cuda:all, gm_ref_pick) work at once, as a
 * video's workers do; the lines are written in manifest order by the main
 * thread, which also matches the videos in their turn.  On the CPU each
 * still takes every core already (OpenMP), so one at a time.  At most
 * STILL_WINDOW stills (4 a worker when that is more) are taken and not yet
 * written: the results held while an earlier, slower still is matched. */
#define STILL_WINDOW 64

/* A still to match: what a worker is given, and what it found. */
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

/* Match a still already decoded (img) as its job says: the model (the
 * reference's own, or another through gm_match_model), the picture of
 * --draw; the outcome in the job.  Thread-safe (the workers call it). */
void still_match(const gm_ref *ref, still_job *j, const gm_image *img);

/* A still job's line (an error line with the message on stderr when it
 * failed). */
void still_emit(run_ctx *rc, const cli_opts *o, const gm_ref *ref, const still_job *j,
                const char *q, double extra_ms);

/* Stills matched at once a GPU: as many as a GPU has lanes
 * (GM_GPU_MAX_LANES).  Each still's host stages take one core, so workers
 * hide each other's host time; the public stills as one batch of 5,070
 * pairs on an H200 machine's 16 cores (2026-11-28): 8 workers 1,206
 * similarity and 244 auto pairs/s, 16 workers 1,458 and 357; two H200s
 * (32 cores, cuda:all) 16 workers 1,995 and 393, 32 workers 2,206 and 608
 * (docs/speed.md). */
#define STILL_GPU_WORKERS 16

/* Matchers for a batch's stills: 1 on the CPU, STILL_GPU_WORKERS a GPU
 * (the cores permitting); GMATCH_WORKERS overrides (tests run the threaded
 * path on the CPU so). */
int still_workers(const gm_ref *ref);

/* A worker's job (run.c streams them through gm_stream_run, stream.h): on
 * one core, decode (a video, or a pair that has lines, is left to the main
 * thread: j->video), then still_match. */
void still_run(const gm_ref *ref, still_job *j);

#endif
