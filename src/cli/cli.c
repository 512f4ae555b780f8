/* cli.c: the command line's shared state and the lines every part of a
 * run writes (cli.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

gm_pictures g_pictures;
gm_progress g_progress;
gm_progress g_run;
struct cli_tally g_tally;
int g_out_tty;
double g_main_ms;
int g_abandon;

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

double since_main(void)
{
    return now_ms() - g_main_ms;
}

void diag_file(const char *name, const char *fmt, ...)
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

void warn_fallback(const gm_ref *ref, const char *name)
{
    static int warned;
    const char *why = ref ? gm_ref_fallback(ref) : "";
    if (!warned && *why) {
        warned = 1;
        diag_file(name, "warning: %s", why);
    }
}

void picture_title(char *out, size_t len, const gm_output_rec *tmpl, const char *q,
                   int64_t frame)
{
    char id[160] = "", fr[48] = "";
    if (tmpl->line)
        snprintf(id, sizeof id, "  ID %.100s", tmpl->id);
    if (frame >= 0)
        snprintf(fr, sizeof fr, "  FRAME %" PRId64, frame);
    snprintf(out, len, "QUERY %s%s%s", q, id, frame == -2 ? "  PATH OF ITS FRAMES" : fr);
}

void report_timing(const char *query, double decode_ms, const gm_result *res)
{
    const gm_timing *t = &res->time;
    diag_file(query,
              "decode %.2f ms, edges %.2f, bases %.2f, tables %.2f, vote %.2f, reduce %.2f, "
              "verify %.2f, polish %.2f, decide %.2f, match total %.2f ms (host %.2f, waiting "
              "for the device %.2f in %d waits); votes %d, inliers %d, confidence %.4f",
              decode_ms, t->edges, t->bases, t->tables, t->vote, t->reduce, t->verify, t->polish,
              t->decide, t->total, t->total - t->wait, t->wait, t->waits, res->votes,
              res->inliers, res->confidence);
}

int emit(FILE *out, const char *out_name, gm_output_format fmt, const gm_output_rec *rec)
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
