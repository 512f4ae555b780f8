/* warmstart.h: the GPU's early start in the command line.
 *
 * What --device auto means (the CPU first, the GPU once the work repays
 * its start) is the library's (GM_DEVICE_AUTO, src/pipeline/warm.c); the
 * command line only tells it what is coming (gm_ref_expect: the queries
 * left, a video) and, under both auto and cuda, how this process's threads
 * wait for the GPU: spinning that yields the core to any other thread that
 * is ready (the decoder's, a batch's reader), measured the fastest with
 * 16 workers on 16 cores (docs/speed.md; gm_cuda_set_sync, kept by the
 * library until CUDA starts; GMATCH_CUDA_SYNC=auto, spin, yield or block
 * chooses, for measurements).
 *
 * Under --device cuda CUDA starts on a thread of its own with the process
 * (gm_device_start), while the reference is read and decoded, and
 * prepare_reference waits for it (gpu_wait). */
#ifndef GM_CLI_WARMSTART_H
#define GM_CLI_WARMSTART_H

#include <pthread.h>

#include "gmatch.h"
#include "cli/cli.h"

typedef struct {
    pthread_t th;
    int started;               /* under cuda: the thread starting CUDA */
    double begin_ms, ready_ms; /* its start and CUDA's readiness (since_main) */
} gpu_state;
extern gpu_state g_gpu;

/* How this process's threads wait for a GPU (GMATCH_CUDA_SYNC, default
 * yield), asked of the library unless the run is on the CPU or the build has
 * no CUDA. */
void gpu_sync(const cli_opts *o);

/* At the process's start: gpu_sync; under cuda the thread. */
void gpu_start(const cli_opts *o);

/* Waits for the thread. */
void gpu_wait(void);

#endif
