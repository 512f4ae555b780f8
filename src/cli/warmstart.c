/* warmstart.c: the GPU's early start (warmstart.h says why). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmatch.h"
#include "cli/warmstart.h"

gpu_state g_gpu;

static void *gpu_start_main(void *arg)
{
    (void)arg;
    /* no usable GPU: the reference says so when it is prepared */
    g_gpu.begin_ms = since_main();
    (void)gm_device_start(GM_DEVICE_CUDA);
    g_gpu.ready_ms = since_main();
    return NULL;
}

/* CUDA starts every GPU the process sees, some 0.2 s each (the two-H200
 * machine, persistence mode on, 2026-11-30: CUDA ready 270-326 ms after
 * main with one GPU visible, 442-545 ms with both), though a run on GPU 0
 * uses one.  A run whose GPUs are among 0 to m-1 (cuda, auto, cuda:N, a
 * list; not cuda:all) is shown the first m GPUs only, through
 * CUDA_VISIBLE_DEVICES: the first m entries of the user's own list, or 0
 * to m-1 where there is none.  The same GPUs under the same numbers, and
 * a number beyond the machine's is refused as before (CUDA stops its list
 * at the first GPU that is not there).  Before anything starts CUDA. */
static void gpu_visible(const cli_opts *o)
{
    const char *g = o->params.gpus;
    if (g && strcmp(g, "all") == 0)
        return;
    long m = 1; /* no list: GPU 0 */
    for (const char *s = g; s && *s;) {
        char *end;
        long v = strtol(s, &end, 10); /* a list gm_device_from_name accepted */
        if (end == s || v < 0 || v > 1023)
            return;
        if (v + 1 > m)
            m = v + 1;
        s = *end == ',' ? end + 1 : end;
    }
    char buf[4096];
    const char *have = getenv("CUDA_VISIBLE_DEVICES");
    if (!have) {
        size_t k = 0;
        for (long i = 0; i < m; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%ld", i ? "," : "", i);
    } else {
        /* the first m entries, where the list has that many */
        size_t len = strlen(have);
        long n = 1;
        for (const char *c = have; *c; c++)
            if (*c == ',' && n++ == m) {
                len = (size_t)(c - have);
                break;
            }
        if (n < m || len == 0 || len >= sizeof buf)
            return; /* fewer than m: left as the user gave it */
        snprintf(buf, sizeof buf, "%.*s", (int)len, have);
    }
    if (setenv("CUDA_VISIBLE_DEVICES", buf, 1) == 0 && o->verbosity >= VERBOSITY_VERBOSE)
        fprintf(stderr, PROG ": CUDA_VISIBLE_DEVICES=%s (the GPUs this run uses: CUDA starts "
                        "every GPU it sees)\n", buf);
}

void gpu_sync(const cli_opts *o)
{
    if (o->params.device == GM_DEVICE_CPU || !gm_backend_available(GM_DEVICE_CUDA))
        return;
    static int shown;
    if (!shown++)
        gpu_visible(o);
    const char *sync = getenv("GMATCH_CUDA_SYNC");
    gm_cuda_sync mode = GM_CUDA_SYNC_YIELD;
    if (sync && !strcmp(sync, "auto"))
        mode = GM_CUDA_SYNC_AUTO;
    else if (sync && !strcmp(sync, "spin"))
        mode = GM_CUDA_SYNC_SPIN;
    else if (sync && !strcmp(sync, "block"))
        mode = GM_CUDA_SYNC_BLOCK;
    (void)gm_cuda_set_sync(mode); /* kept until CUDA starts: no wait here */
}

void gpu_start(const cli_opts *o)
{
    gpu_sync(o);
    if (o->params.device == GM_DEVICE_CUDA) /* auto: the library starts it when repaid */
        g_gpu.started = pthread_create(&g_gpu.th, NULL, gpu_start_main, NULL) == 0;
}

void gpu_wait(void)
{
    if (g_gpu.started)
        pthread_join(g_gpu.th, NULL);
    g_gpu.started = 0;
}
