/* placement.h: where a reference lives and which copy answers a query
 * (placement.c).  Outside this unit, the backends and their registry, no
 * file of src/pipeline/ names a kind of device. */
#ifndef GM_PLACEMENT_H
#define GM_PLACEMENT_H

#include <pthread.h>

#include "gmatch.h"

struct gm_ref;

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

#endif
