/* progress.c: the command line's progress bar, see progress.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fileno */

#include "cli/progress.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAR_WIDTH 24
#define REDRAW_MS 100.0

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The bar on the terminal now, for the signal handler: an interrupted run
 * leaves the terminal on a new line, not after the bar's text. */
static gm_progress *volatile g_active;

static void on_signal(int sig)
{
    gm_progress *p = g_active;
    if (p && p->shown) {
        ssize_t w = write(STDERR_FILENO, "\n", 1);
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        /* leave a signal the caller ignores (nohup) ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaction(sigs[i], &sa, NULL);
    }
}

void gm_progress_start(gm_progress *p, int want, const char *name, const char *unit,
                       int64_t total)
{
    memset(p, 0, sizeof *p);
    p->enabled = want > 1 || (want && isatty(fileno(stderr)));
    if (p->enabled)
        catch_signals();
    p->name = name;
    p->unit = unit;
    p->total = total;
    p->t_start = now_ms();
}

static void draw(gm_progress *p, double t)
{
    double secs = (t - p->t_start) / 1e3;
    double fps = secs > 0 ? (double)p->done / secs : 0.0;
    const char *unit = p->unit ? p->unit : "frames", *rate = p->unit ? "/s" : " fps";
    const char *base = strrchr(p->name, '/');
    base = base ? base + 1 : p->name;
    /* the whole bar in one write, and marked shown before it: a signal
     * that comes while it is written still ends the line (stderr is
     * unbuffered, so fprintf piece by piece was several writes, and a
     * Ctrl-C between them left the terminal after the bar's text) */
    char line[256];
    size_t k = (size_t)snprintf(line, sizeof line, "\r%.40s ", base);
    if (p->total > 0) {
        int64_t done = p->done < p->total ? p->done : p->total;
        int fill = (int)(done * BAR_WIDTH / p->total);
        char bar[BAR_WIDTH + 1];
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
        bar[BAR_WIDTH] = '\0';
        k += (size_t)snprintf(line + k, sizeof line - k, " [%s] %lld/%lld %s  %.1f%s", bar,
                              (long long)p->done, (long long)p->total, unit, fps, rate);
        if (fps > 0 && k < sizeof line) {
            long left = (long)((double)(p->total - done) / fps + 0.5);
            k += (size_t)snprintf(line + k, sizeof line - k, "  %ld:%02ld:%02ld left", left / 3600,
                                  left / 60 % 60, left % 60);
        }
    } else {
        k += (size_t)snprintf(line + k, sizeof line - k, " %lld %s  %.1f%s", (long long)p->done,
                              unit, fps, rate);
    }
    if (k < sizeof line)
        snprintf(line + k, sizeof line - k, "\033[K"); /* erase what a longer line left */
    p->shown = 1;
    g_active = p; /* the bar on the terminal now (a video's, or the run's) */
    fputs(line, stderr);
    fflush(stderr);
    p->t_drawn = t;
}

void gm_progress_step(gm_progress *p)
{
    p->done++;
    if (!p->enabled)
        return;
    double t = now_ms();
    if (t - p->t_drawn >= REDRAW_MS)
        draw(p, t);
}

void gm_progress_clear(gm_progress *p)
{
    if (!p->enabled || !p->shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
}
