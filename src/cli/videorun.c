/* videorun.c: a video query of the command line (videorun.h). */
#define _POSIX_C_SOURCE 200809L /* fileno */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/videorun.h"

#define MAX_FRAME_DIAGS 5 /* per video; the summary line counts the rest */

gm_video_opts video_opts(const cli_opts *o)
{
    gm_video_opts vo = gm_video_opts_default();
    vo.first = o->first, vo.last = o->last, vo.step = o->step;
    vo.max_pixels = o->params.max_pixels;
    vo.decode = o->decode == 2 ? GM_VIDEO_DECODE_NVDEC
                : o->decode == 1 ? GM_VIDEO_DECODE_CPU : GM_VIDEO_DECODE_AUTO;
    /* 0: the library's choice once the reference is placed (16 a GPU, the
     * cores permitting; the cores on the CPU: gm_video_match) */
    vo.workers = o->params.threads;
    /* the frames' pixels for --draw's pictures alone; without them a
     * frame's buffer is reused once matched (gm_video_opts.sink_pixels) */
    vo.sink_pixels = o->draw != NULL;
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
        c->stages.tables += t->tables;
        c->stages.reduce += t->reduce, c->stages.verify += t->verify, c->stages.total += t->total;
        c->stages.polish += t->polish, c->stages.decide += t->decide;
        c->stages.wait += t->wait, c->stages.waits += t->waits;
        c->timed++;
    }
    if (++c->results == 1)
        c->first_ms = since_main();
    else if (c->results == 10)
        c->tenth_ms = since_main();
    return 0;
}

int run_video(video_ctx *c, const gm_ref *ref, gm_video *v)
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
                      "the decoder waiting for room %.3f ms, converting to gray %.3f ms, "
                      "matching %.3f ms, workers waiting for a frame %.3f ms (summed over "
                      "threads)", vs.workers, vs.ring, vs.decode_ms / vs.items,
                      vs.decoder_wait_ms / vs.items, vs.convert_ms / vs.items,
                      vs.match_ms / vs.items, vs.worker_wait_ms / vs.items);
        if (c->timed > 0) {
            const gm_timing *t = &c->stages;
            double k = 1.0 / (double)c->timed;
            diag_file(c->q, "a frame's match: edges %.3f ms, bases %.3f, tables %.3f, vote "
                      "%.3f, reduce %.3f, verify %.3f, polish %.3f, decide %.3f, total %.3f (its "
                      "worker waiting for the device %.3f in %.1f waits; means over %" PRId64
                      " frames)",
                      t->edges * k, t->bases * k, t->tables * k, t->vote * k, t->reduce * k,
                      t->verify * k, t->polish * k, t->decide * k, t->total * k, t->wait * k,
                      (double)t->waits * k, c->timed);
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
