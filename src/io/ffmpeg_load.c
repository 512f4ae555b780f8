/* ffmpeg_load.c: FFmpeg's libraries opened on first use (ffmpeg_load.h). */
#define GM_FF_LOADER
#include "io/ffmpeg_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

gm_ff_api gm_ff;

#define GM_FF_SO(lib, major) "lib" lib ".so." AV_STRINGIFY(major)

/* libavformat brings libavcodec and libavutil (its dependencies, which
 * dlsym on its handle searches too); libswscale is apart */
static const char *const libs[] = {GM_FF_SO("avformat", LIBAVFORMAT_VERSION_MAJOR),
                                   GM_FF_SO("swscale", LIBSWSCALE_VERSION_MAJOR)};
#define NLIBS ((int)(sizeof libs / sizeof libs[0]))

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t level_mu = PTHREAD_MUTEX_INITIALIZER;
static int loaded;            /* 1 after a successful load */
static int level_set, level;  /* gm_ff_log_level's, before the load */
static char why[320];         /* the failed load's reason */

static void load(void)
{
    void *h[NLIBS] = {0};
    for (int i = 0; i < NLIBS; i++) {
        /* RTLD_LOCAL: FFmpeg's symbols stay out of the global scope, where
         * a program's own copy of another FFmpeg could meet them */
        if (!(h[i] = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL))) {
            const char *e = dlerror();
            snprintf(why, sizeof why, "cannot load FFmpeg: %s", e ? e : libs[i]);
            goto fail;
        }
    }
    /* every function from the first library whose handle has it */
#define GM_FF_FIND(name)                                                                   \
    for (int i = 0; i < NLIBS && !gm_ff.name; i++)                                         \
        *(void **)&gm_ff.name = dlsym(h[i], #name);                                        \
    if (!gm_ff.name) {                                                                     \
        snprintf(why, sizeof why, "FFmpeg's libraries (%s, %s) lack %s", libs[0], libs[1], \
                 #name);                                                                   \
        goto fail;                                                                         \
    }
    GM_FF_FUNCS(GM_FF_FIND)
#undef GM_FF_FIND
    pthread_mutex_lock(&level_mu);
    loaded = 1;
    if (level_set)
        gm_ff.av_log_set_level(level);
    pthread_mutex_unlock(&level_mu);
    return; /* the handles stay open for the process's life */
fail:
    memset(&gm_ff, 0, sizeof gm_ff);
    for (int i = 0; i < NLIBS; i++)
        if (h[i])
            dlclose(h[i]);
}

int gm_ff_load(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (loaded)
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s", why);
    return -1;
}

void gm_ff_log_level(int l)
{
    pthread_mutex_lock(&level_mu);
    level_set = 1, level = l;
    if (loaded)
        gm_ff.av_log_set_level(l);
    pthread_mutex_unlock(&level_mu);
}
