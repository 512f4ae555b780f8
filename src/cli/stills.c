/* stills.c: the command line's stills (stills.h). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "cli/stills.h"
#include "cli/videorun.h"

void still_match(const gm_ref *ref, still_job *j, const gm_image *img)
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

/* still_run's job on the thread's budget of cores. */
static void still_work(const gm_ref *ref, still_job *j)
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

void still_run(const gm_ref *ref, still_job *j)
{
    /* a thread a still: its host stages on one core (threads x cores
     * oversubscribed the host: 240 pairs/s on two H200s, GPUs 15% busy) */
    int old = gm_set_thread_budget(1);
    still_work(ref, j);
    gm_set_thread_budget(old);
}

void still_emit(run_ctx *rc, const cli_opts *o, const gm_ref *ref, const still_job *j,
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

int still_workers(const gm_ref *ref)
{
    const char *wk = getenv("GMATCH_WORKERS");
    int n = wk ? atoi(wk) : 0;
    if (n <= 0) {
        int gpus = ref ? gm_ref_gpus(ref) : 0;
        n = gpus > 0 ? STILL_GPU_WORKERS * gpus : 1;
        if (n > omp_get_num_procs())
            n = omp_get_num_procs();
    }
    return n < 1 ? 1 : n > 256 ? 256 : n;
}
