/* prefetch.c: the first video's read-ahead (prefetch.h). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmatch_video.h"
#include "cli/prefetch.h"
#include "cli/videorun.h"
#include "cli/warmstart.h"

/* Under --device cuda, the first query, when it is a video, is opened and
 * its first frames decoded on a thread while CUDA starts and the reference
 * is prepared (gm_video_prefetch), so that the workers find frames waiting:
 * the first result 0.02-0.14 s sooner on the H100 machine (docs/speed.md).  The frames are the ones the run would
 * read, in the same order.  On a list of GPUs too (cuda:N, cuda:all):
 * the video's workers are the library's choice once the reference is
 * placed (gm_video_match), so they follow its GPUs. */
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
    gm_video_opts vo = video_opts(g_pre.o);
    char err[512];
    gm_video *v = NULL;
    if (gm_video_open(g_pre.path, &vo, &v, err, sizeof err) != GM_OK)
        return NULL; /* the run opens it again and says why */
    g_pre.v = v;
    (void)gm_video_prefetch(v, PREFETCH_ITEMS, PREFETCH_BYTES, &g_pre.stop);
    return NULL;
}

int looks_still(const char *path)
{
    unsigned char m[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1;
    size_t n = fread(m, 1, sizeof m, f);
    fclose(f);
    return n < 4 || (m[0] == 0xFF && m[1] == 0xD8) || (m[0] == 0x89 && m[1] == 'P');
}

void prefetch_start(const cli_opts *o, const char *path)
{
    const char *off = getenv("GMATCH_PREFETCH"); /* 0: none, for measurements */
    /* under cuda only: under auto the CPU prepares the reference meanwhile
     * with every core, and the decoder's threads slowed it (one run of the
     * bench video: 0.72 s against 0.60) */
    if (!g_gpu.started || !strcmp(path, "-") || (off && !strcmp(off, "0")) || looks_still(path))
        return;
    g_pre.o = o, g_pre.path = path;
    g_pre.started = pthread_create(&g_pre.th, NULL, prefetch_main, NULL) == 0;
}

gm_video *prefetch_take(int use)
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
