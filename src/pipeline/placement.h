/* placement.h: where a reference lives and which copy answers a query
 * (placement.c).  Outside this unit, the backends and their registry, no
 * file of src/pipeline/ names a kind of device. */
#ifndef GM_PLACEMENT_H
#define GM_PLACEMENT_H

#include <pthread.h>

#include "gmatch.h"

struct gm_ref;
struct gm_backend_ops;
typedef struct gm_warm gm_warm; /* auto's move to an accelerator (warm.c) */

/* A reference's placement, a part of gm_ref (matcher.h).  The CPU's twin
 * after a device failure (gm_ref_failover): prepared once, under fo_lock,
 * from the kept image on the first query the device fails, and every query
 * after that (failed set) runs on it.  Several devices (gm_params.gpus):
 * the reference is prepared on device dev_index of its backend, its copies
 * rep[0..nrep) on the others; load[0] counts the queries in flight on it,
 * load[1 + k] on rep[k] (gm_ref_pick). */
typedef struct {
    struct gm_ref *cpu;
    int failed;        /* atomic: cpu is ready and answers every query */
    char fo_why[320];  /* why, for gm_ref_fallback ("" none) */
    pthread_mutex_t fo_lock;
    int dev_index;
    int nrep;
    struct gm_ref **rep;
    int *load;
    long *served;      /* queries each copy took so far (tests/cuda/test_gpus_cuda.c) */
    gm_warm *warm;     /* auto, prepared on the CPU: the accelerator's start, NULL none */
} gm_placement;

/* A placement with its lock, on a zeroed one; gm_place_free frees what it
 * holds (the twin, the copies) and the lock. */
void gm_place_init(gm_placement *pl);
void gm_place_free(gm_placement *pl);

/* The GPUs that gpus names (gmatch.h): NULL or "" -> 0; "all" -> 0 to
 * count - 1; "1" or "0,2" -> those.  count < 0: the syntax only (no GPU
 * asked).  Their number (at most GM_MAX_GPUS, into out), or -1 with the
 * cause in why. */
int gm_gpus_parse(const char *gpus, int count, int *out, char *why, size_t len);

/* The placement's parameters (gm_params.device, gm_params.gpus' syntax):
 * NULL when both are valid, else what is wrong, written into buf. */
const char *gm_place_check(const gm_params *p, char *buf, size_t len);

/* Reference r (its parameters r->p checked and set) placed as p->device and
 * p->gpus ask, and its levels built there (gm_ref_build): on the CPU, on
 * the GPU backend with a copy on each further GPU, or, where a device
 * cannot be opened or fails while preparing, on the CPU with r->device
 * (and under cuda gm_ref_fallback) saying why.  GM_OK, or the failure with
 * r->err set. */
gm_status gm_place_prepare(gm_ref *r, const gm_params *p, gm_view img);

/* A query's match (gm_match_dirs) on the least busy copy of r, and after a
 * device failure on the CPU's twin (gm_ref_failover); out->error set when
 * it fails. */
gm_status gm_place_match(const gm_ref *r, gm_model model, gm_view query, gm_result *out);

/* The copy of r (itself or one on another GPU) with the fewest queries in
 * flight, counted in until gm_ref_unpick(r, *slot). */
const gm_ref *gm_ref_pick(const gm_ref *r, int *slot);
void gm_ref_unpick(const gm_ref *r, int slot);

/* The reference that answers queries now: r, or its CPU twin after a
 * device failure. */
const gm_ref *gm_ref_current(const gm_ref *r);
/* After the device failed a query (dev_err: its message): prepares the
 * CPU twin once (from the kept image) and returns it, or NULL when it
 * cannot be made (then the failure stands). */
const gm_ref *gm_ref_failover(const gm_ref *r, const char *dev_err);

/* ---- GM_DEVICE_AUTO's warm start (warm.c)
 *
 * Under auto the reference is prepared on the CPU and matches there until
 * the work repays the accelerator's start (the build's first, be->start_ms
 * for the driver and context, and the reference's preparation on it, taken
 * to cost what the CPU's did): when the queries matched so far cost the
 * CPU that much (a ski rental: never more than twice the better choice's
 * time), or sooner when the caller says how many are coming
 * (gm_ref_expect) and they would.  The accelerator's copy is then
 * prepared on a thread of its own while the CPU goes on, and answers every
 * query from the one after it is ready (gm_place_match).  Both give the
 * same answers (tests/cuda), so where the move falls does not show.  Once
 * an accelerator runs in the process (a reference was prepared on it), auto
 * prepares there directly: the start is paid. */

/* r, prepared on the CPU under auto, gets its warm start toward acc
 * (p: the reference's parameters; p->gpus copied).  GM_OK or GM_ERR_NOMEM. */
gm_status gm_warm_init(struct gm_ref *r, const struct gm_backend_ops *acc, const gm_params *p);
/* Waits for a start under way (it reads the reference's kept image, so
 * before that is freed), frees the accelerator's copy. */
void gm_warm_free(gm_warm *w);
/* The accelerator's copy once it is ready, else NULL (w NULL too). */
const struct gm_ref *gm_warm_ready(const gm_warm *w);
/* After a query r matched on the CPU in ms: the accelerator started when
 * the work repays it. */
void gm_warm_account(const struct gm_ref *r, double ms);
/* What gm_ref_device says while the CPU answers (the warm start's state),
 * NULL once the accelerator does or with no warm start. */
const char *gm_warm_device(const gm_warm *w);
/* Whether accelerator acc has started in this process (a reference was
 * prepared on it), and its marking. */
int gm_warm_up(const struct gm_backend_ops *acc);
/* Why accelerator acc has no device in this process (a start found none),
 * or NULL. */
const char *gm_warm_down(const struct gm_backend_ops *acc);
void gm_warm_mark_up(const struct gm_backend_ops *acc);

#endif
