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

void gpu_sync(const cli_opts *o)
{
    if (o->params.device == GM_DEVICE_CPU || !gm_backend_available(GM_DEVICE_CUDA))
        return;
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
