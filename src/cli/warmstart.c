/* warmstart.c: the GPU's warm start (warmstart.h says the policy). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmatch.h"
#include "cli/warmstart.h"

/* CUDA's start on the H100 machine: 0.21-0.25 s (docs/gpu.md) */
#define GPU_START_MS 250.0
gpu_state g_gpu;

static void *gpu_start_main(void *arg)
{
    (void)arg;
    const char *sync = getenv("GMATCH_CUDA_SYNC");
    gm_cuda_sync mode = GM_CUDA_SYNC_SPIN;
    if (sync && !strcmp(sync, "auto"))
        mode = GM_CUDA_SYNC_AUTO;
    else if (sync && !strcmp(sync, "yield"))
        mode = GM_CUDA_SYNC_YIELD;
    else if (sync && !strcmp(sync, "block"))
        mode = GM_CUDA_SYNC_BLOCK;
    /* no usable GPU: under cuda the reference says so, under auto the CPU goes on */
    g_gpu.begin_ms = since_main();
    gm_status st = gm_cuda_set_sync(mode);
    g_gpu.ready_ms = since_main();
    gm_ref *r = NULL;
    if (g_gpu.auto_mode && st == GM_OK &&
        gm_ref_prepare(&g_gpu.params, g_gpu.view, &r) == GM_OK &&
        gm_ref_backend(r) == GM_DEVICE_CUDA)
        g_gpu.ref = r;
    else
        gm_ref_free(r);
    atomic_store(&g_gpu.done, 1);
    return NULL;
}

void gpu_start(cli_opts *o)
{
    if (o->params.device == GM_DEVICE_CPU || !gm_backend_available(GM_DEVICE_CUDA))
        return;
    if (o->params.device == GM_DEVICE_AUTO) {
        g_gpu.auto_mode = 1;
        g_gpu.params = o->params;
        g_gpu.params.device = GM_DEVICE_CUDA;
        o->params.device = GM_DEVICE_CPU;
        return;
    }
    g_gpu.started = pthread_create(&g_gpu.th, NULL, gpu_start_main, NULL) == 0;
}

void gpu_wait(void)
{
    if (g_gpu.started)
        pthread_join(g_gpu.th, NULL);
    g_gpu.started = 0;
}

void gpu_keep(gm_image *img, int shared, double prep_ms)
{
    if (!g_gpu.auto_mode || g_gpu.have_img)
        return;
    g_gpu.view = gm_image_view(img);
    if (!shared) {
        g_gpu.img = *img;
        memset(img, 0, sizeof *img);
    }
    g_gpu.have_img = 1;
    g_gpu.prep_ms = prep_ms;
}

void gpu_consider(int left, double match_ms)
{
    if (!g_gpu.auto_mode || !g_gpu.have_img || g_gpu.started || atomic_load(&g_gpu.done))
        return;
    if (left >= 0 && left * match_ms <= GPU_START_MS + g_gpu.prep_ms)
        return;
    g_gpu.started = pthread_create(&g_gpu.th, NULL, gpu_start_main, NULL) == 0;
}

void gpu_switch(const cli_opts *o, gm_ref **ref, int wait, const char *before)
{
    if (!g_gpu.started || !g_gpu.auto_mode || !*ref)
        return;
    if (!wait && !atomic_load(&g_gpu.done))
        return;
    gpu_wait();
    if (!g_gpu.ref)
        return; /* no usable GPU, or its reference failed: the CPU's stays */
    gm_ref_free(*ref);
    *ref = g_gpu.ref;
    g_gpu.ref = NULL;
    if (o->verbosity >= VERBOSITY_VERBOSE)
        fprintf(stderr, PROG ": device: %s from %s on (CUDA started %.1f to %.1f ms, now %.1f ms "
                "after main began)\n", gm_ref_device(*ref), before, g_gpu.begin_ms, g_gpu.ready_ms,
                since_main());
}

int gpu_finish(void)
{
    if (g_gpu.started && !atomic_load(&g_gpu.done))
        return 1;
    gpu_wait();
    gm_ref_free(g_gpu.ref);
    g_gpu.ref = NULL;
    gm_image_free(&g_gpu.img);
    return 0;
}
