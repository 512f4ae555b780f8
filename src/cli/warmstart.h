/* warmstart.h: the GPU's warm start, the command line's policy for --device
 * auto (and for cuda, CUDA's start beside the reading of the reference).
 * It is here, in the command line, until the library has a placement unit
 * of its own; it is meant to move there.
 *
 * The GPU's start, on a thread of its own (gpu_start_main).  It starts
 * CUDA (the driver and the device's context) and sets how this process's
 * threads wait for the GPU: spinning, measured the fastest
 * (gm_cuda_set_sync; GMATCH_CUDA_SYNC=auto, spin, yield or block chooses,
 * for measurements).
 *
 * Under --device cuda it starts with the process, while the reference is
 * read and decoded, and prepare_reference waits for it.
 *
 * Under --device auto the CPU begins: it prepares the reference and
 * matches the first still.  The GPU is started only for work that repays
 * its start: a video (which waits for it), or stills whose count, at the
 * first one's time on the CPU, would take longer than the start
 * (GPU_START_MS) and the reference's preparation (as long as the CPU's, at
 * most) together.  Then the thread also prepares the reference for the GPU
 * from its image (kept, not copied) while the CPU goes on, and the stills after that
 * go to the GPU (gpu_switch).  Both devices give the same results
 * (tests/cuda, docs/gpu.md), so where the switch falls does not show in
 * the output.  Starting CUDA beside the CPU's work is not free: on the H100
 * machine the CPU's preparation of a 512-pixel reference took 183 ms
 * instead of 20 and a one-still run 0.32-0.39 s instead of 0.05, because
 * the process cannot end while the driver starts (docs/speed.md).  A run
 * that ends before the GPU is ready does not wait for it (gpu_finish). */
#ifndef GM_CLI_WARMSTART_H
#define GM_CLI_WARMSTART_H

#include <pthread.h>
#include <stdatomic.h>

#include "gmatch.h"
#include "cli/cli.h"

typedef struct {
    pthread_t th;
    int started;
    int auto_mode;        /* --device auto: the CPU until the GPU's reference is ready */
    int have_img;         /* view is the reference's image (auto) */
    gm_view view;         /* it, for the GPU's reference: img or the pictures' */
    gm_image img;         /* owned when the pictures do not keep it */
    gm_params params;     /* the GPU's reference's */
    double prep_ms;       /* the CPU's preparation of the reference */
    double begin_ms, ready_ms; /* the thread's start and CUDA's readiness (since_main) */
    gm_ref *ref;          /* the GPU's reference, NULL until ready or when it failed */
    atomic_int done;      /* the thread has finished */
} gpu_state;
extern gpu_state g_gpu;

/* At the process's start: under cuda the thread starts; under auto the CPU
 * prepares the reference (o->params.device becomes cpu). */
void gpu_start(cli_opts *o);

/* Waits for the thread. */
void gpu_wait(void);

/* Under auto: the reference's image kept for the GPU's reference (taken
 * from *img, or only viewed when `shared`: the pictures keep it), and the
 * CPU's preparation time.  No copy: the image stays as long as the run. */
void gpu_keep(gm_image *img, int shared, double prep_ms);

/* Under auto: starts the GPU when `left` more stills at match_ms each on
 * the CPU would take longer than its start (video: left < 0, always). */
void gpu_consider(int left, double match_ms);

/* Under auto: the queries from here on to the GPU's reference once it is
 * ready (wait: for it, as a video does).  *ref is the CPU's, replaced. */
void gpu_switch(const cli_opts *o, gm_ref **ref, int wait, const char *before);

/* At the end: 1 when the thread is still starting a GPU that the run no
 * longer needs, and the process should end without waiting for it. */
int gpu_finish(void);

#endif
