/* warm.c: GM_DEVICE_AUTO's warm start, part of the placement unit
 * (placement.h says the policy).
 *
 * Why here and not in the command line, where it began (src/cli/ until
 * issue 31): what auto means is the library's, so C and Python callers get
 * the same choice as `gmatch --device auto`.  Why a thread of its own: the
 * accelerator's start (CUDA: 0.21-0.25 s of driver and context on the H100
 * machine) and the reference's preparation on it run beside the CPU's
 * matching, which goes on meanwhile; the CPU's answers and the
 * accelerator's are the same (tests/cuda), so the queries before the move
 * lose nothing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "pipeline/matcher.h"
#include "pipeline/placement.h"

enum { WARM_IDLE = 0, WARM_STARTING, WARM_READY, WARM_FAILED };

struct gm_warm {
    const gm_backend_ops *acc; /* the accelerator */
    gm_params p;               /* the accelerator's reference's parameters */
    char gpus[128];            /* p.gpus' copy */
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* the state left STARTING */
    int state;                 /* atomic: WARM_* */
    int started;               /* the thread th was created (joined in gm_warm_free) */
    pthread_t th;
    gm_view img;               /* the reference's kept image (r->keep), which the thread
                                  reads: gm_ref_free joins it before freeing that */
    gm_ref *ref;               /* the accelerator's copy, once READY */
    char line[320];            /* gm_ref_device while the CPU answers (set once, at init) */
    char failed[320];          /* and after a failed start (written before FAILED is set) */
    /* the CPU's work so far, under mu */
    double cpu_ms;
    long cpu_n;
    int hinted;                /* gm_ref_expect was called: ahead counts */
    int64_t ahead;             /* queries still to come (< 0: without end) */
};

/* Whether each accelerator (by gm_device) runs in this process (up), or
 * has none of its devices (down: no device, no driver; why says so, written
 * before down is set), found by a start that failed. */
static int g_up[8], g_down[8];
static char g_down_why[8][256];

const char *gm_warm_down(const gm_backend_ops *acc)
{
    return (unsigned)acc->device < 8 && __atomic_load_n(&g_down[acc->device], __ATOMIC_ACQUIRE)
               ? g_down_why[acc->device]
               : NULL;
}

int gm_warm_up(const gm_backend_ops *acc)
{
    return (unsigned)acc->device < 8 && __atomic_load_n(&g_up[acc->device], __ATOMIC_ACQUIRE);
}

void gm_warm_mark_up(const gm_backend_ops *acc)
{
    if ((unsigned)acc->device < 8)
        __atomic_store_n(&g_up[acc->device], 1, __ATOMIC_RELEASE);
}

gm_status gm_warm_init(gm_ref *r, const gm_backend_ops *acc, const gm_params *p)
{
    gm_warm *w = calloc(1, sizeof *w);
    if (!w)
        return GM_ERR_NOMEM;
    w->acc = acc;
    w->p = *p;
    w->p.device = acc->device;
    if (p->gpus) { /* checked by gm_place_check: a short list */
        snprintf(w->gpus, sizeof w->gpus, "%s", p->gpus);
        w->p.gpus = w->gpus;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    snprintf(w->line, sizeof w->line, "cpu, %d threads (auto: %s once the work repays its start)",
             gm_threads(), acc->label);
    r->pl.warm = w;
    return GM_OK;
}

static void *warm_main(void *arg)
{
    gm_warm *w = arg;
    gm_ref *g = NULL;
    gm_status st = gm_ref_prepare(&w->p, w->img, &g);
    pthread_mutex_lock(&w->mu);
    if (st == GM_OK && gm_ref_backend(g) == w->acc->device) {
        w->ref = g;
        gm_warm_mark_up(w->acc);
        __atomic_store_n(&w->state, WARM_READY, __ATOMIC_RELEASE);
    } else { /* no usable device, or it failed while preparing: the CPU stays */
        const char *why = st != GM_OK ? gm_ref_error(g) : gm_ref_fallback(g);
        snprintf(w->failed, sizeof w->failed, "cpu, %d threads (auto: %.250s)", gm_threads(),
                 why && *why ? why : gm_status_str(st));
        /* none of its devices: the next references under auto stay on the
         * CPU without trying again */
        unsigned d = (unsigned)w->acc->device;
        if (st == GM_ERR_DEVICE && d < 8 && w->acc->count() <= 0 &&
            !__atomic_load_n(&g_down[d], __ATOMIC_ACQUIRE)) {
            snprintf(g_down_why[d], sizeof g_down_why[d], "%.250s", why && *why ? why : "");
            __atomic_store_n(&g_down[d], 1, __ATOMIC_RELEASE);
        }
        gm_ref_free(g);
        __atomic_store_n(&w->state, WARM_FAILED, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Starts the accelerator, once (w->mu held): its thread prepares the
 * reference from r's kept image. */
static void warm_start(const gm_ref *r, gm_warm *w)
{
    if (w->state != WARM_IDLE)
        return;
    w->img = gm_image_view(&r->keep);
    __atomic_store_n(&w->state, WARM_STARTING, __ATOMIC_RELEASE);
    w->started = pthread_create(&w->th, NULL, warm_main, w) == 0;
    if (!w->started) { /* no thread: the CPU stays, and says why */
        snprintf(w->failed, sizeof w->failed, "cpu, %d threads (auto: %s not started: no "
                 "thread)", gm_threads(), w->acc->label);
        __atomic_store_n(&w->state, WARM_FAILED, __ATOMIC_RELEASE);
    }
}

/* Whether the work known so far repays the start (w->mu held): the
 * accelerator's start unless it runs already, and the reference's
 * preparation, taken to cost the CPU's (prep_ms). */
static int warm_repays(const gm_warm *w, double prep_ms)
{
    double cost = (gm_warm_up(w->acc) ? 0.0 : w->acc->start_ms) + prep_ms;
    if (w->hinted && w->ahead < 0)
        return 1; /* without end: a video */
    if (w->hinted) /* what is coming, at the CPU's mean so far */
        return w->cpu_n > 0 && (double)w->ahead * (w->cpu_ms / (double)w->cpu_n) > cost;
    return w->cpu_ms >= cost; /* nothing said: the ski rental */
}

void gm_warm_account(const gm_ref *r, double ms)
{
    gm_warm *w = r->pl.warm;
    if (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) != WARM_IDLE)
        return; /* started, or failed: nothing left to weigh */
    pthread_mutex_lock(&w->mu);
    w->cpu_ms += ms;
    w->cpu_n++;
    if (w->hinted && w->ahead > 0)
        w->ahead--;
    if (warm_repays(w, r->prep_ms))
        warm_start(r, w);
    pthread_mutex_unlock(&w->mu);
}

const gm_ref *gm_warm_ready(const gm_warm *w)
{
    return w && __atomic_load_n(&w->state, __ATOMIC_ACQUIRE) == WARM_READY ? w->ref : NULL;
}

const char *gm_warm_device(const gm_warm *w)
{
    if (!w)
        return NULL;
    int s = __atomic_load_n(&w->state, __ATOMIC_ACQUIRE);
    return s == WARM_READY ? NULL : s == WARM_FAILED ? w->failed : w->line;
}

void gm_warm_free(gm_warm *w)
{
    if (!w)
        return;
    if (w->started)
        pthread_join(w->th, NULL);
    gm_ref_free(w->ref);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

gm_status gm_ref_expect(const gm_ref *r, int64_t queries, int wait)
{
    if (!r)
        return GM_ERR_INVALID;
    gm_warm *w = r->pl.warm;
    if (r->status != GM_OK || !w)
        return GM_OK; /* not auto, or the accelerator answers already */
    pthread_mutex_lock(&w->mu);
    w->hinted = 1;
    w->ahead = queries < 0 ? -1 : queries;
    if (warm_repays(w, r->prep_ms))
        warm_start(r, w);
    while (wait && w->state == WARM_STARTING)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return GM_OK;
}

int gm_ref_starting(const gm_ref *r)
{
    return r && r->pl.warm && __atomic_load_n(&r->pl.warm->state, __ATOMIC_ACQUIRE) == WARM_STARTING;
}
