/* progress.h: a one-line progress bar on stderr for the command line.
 *
 * Shown only when stderr is a terminal and the caller enables it (not -q);
 * redrawn at most 10 times a second, so it costs nothing per frame.  The
 * line is cleared before any diagnostic or result line is printed
 * (gm_progress_clear) and at the end; interrupted (SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT), the bar ends with a newline before the signal takes its course.
 *
 *     video.mp4  [#########.........]  120/300 frames  241.3 fps  0:00:01 left
 *     ref.jpg  [###...............]  412/3000 queries  38.5/s  0:01:07 left
 *
 * (the second: a run's stills or a batch's pairs, with a unit of its own).
 * Written here rather than taken from a library: Debian has no maintained C
 * progress-bar library (indicatif is Rust), and this is 80 lines.
 */
#ifndef GM_PROGRESS_H
#define GM_PROGRESS_H

#include <stdint.h>

typedef struct {
    int enabled;      /* 0: every call does nothing */
    volatile int shown; /* a bar is on the terminal now (read by the signal handler) */
    const char *name;
    const char *unit; /* what is counted: NULL "frames" (a rate in fps), else per second */
    int64_t done, total; /* total < 0: unknown */
    double t_start, t_drawn; /* MILLISECONDS, monotonic */
} gm_progress;

/* Start a bar for NAME with TOTAL items (-1 unknown) of UNIT (NULL:
 * frames); want = 0 disables it, 1 shows it when stderr is a terminal, 2
 * on any stderr (asked for). */
void gm_progress_start(gm_progress *p, int want, const char *name, const char *unit,
                       int64_t total);
/* One more item done; redraws when 100 ms have passed since the last draw. */
void gm_progress_step(gm_progress *p);
/* Erase the bar (before a diagnostic line, and at the end). */
void gm_progress_clear(gm_progress *p);

#endif
