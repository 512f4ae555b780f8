/* placement.c: where a reference lives and which copy answers a query.
 *
 * The one unit of the pipeline that knows devices by kind: what
 * gm_params.device asks for (cpu; an accelerator, cuda; auto: the CPU
 * first and the build's first accelerator once the work repays its start,
 * warm.c), the list of GPUs (gm_params.gpus) and a copy of the reference
 * on each (replicas, prepared side by side), the least busy copy for each
 * query (gm_ref_pick), and the CPU's twin that answers from the first
 * device failure on (gm_ref_failover).  The devices come from the backend
 * table (backend.h, gm_backends); the reference's levels are built by
 * reference.c (gm_ref_build) on whatever backend is chosen here; the
 * matcher (matcher.c, direction.c) runs on the copy it is handed and knows
 * no device. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/matcher.h"
#include "pipeline/placement.h"

int gm_gpus_parse(const char *gpus, int count, int *out, char *why, size_t len)
{
    if (!gpus || !*gpus) {
        out[0] = 0;
        return 1;
    }
    if (strcmp(gpus, "all") == 0) {
        int n = count < 0 ? 1 : count < GM_MAX_GPUS ? count : GM_MAX_GPUS;
        for (int i = 0; i < n; i++)
            out[i] = i;
        return n > 0 ? n : (snprintf(why, len, "no CUDA device"), -1);
    }
    int n = 0;
    for (const char *s = gpus;;) {
        char *end;
        long v = (*s >= '0' && *s <= '9') ? strtol(s, &end, 10) : -1;
        if (v < 0 || v > 1023 || (*end != ',' && *end != '\0') || n == GM_MAX_GPUS) {
            snprintf(why, len, "invalid parameter: gpus '%.60s' is not \"all\" or up to %d GPU "
                     "numbers like \"0,2\"", gpus, GM_MAX_GPUS);
            return -1;
        }
        if (count >= 0 && v >= count) {
            snprintf(why, len, "no CUDA device %ld (%d visible)", v, count);
            return -1;
        }
        out[n++] = (int)v;
        if (*end == '\0')
            return n;
        s = end + 1;
    }
}


/* The reference on backend be (opened here), its message on failure. */
static gm_status ref_on(gm_ref *r, const gm_backend_ops *be, gm_view img)
{
    char why[256] = "";
    r->ix.be = be;
    gm_status st = be->open(&r->ix.dev, r->pl.dev_index, why, sizeof why);
    if (st != GM_OK) {
        snprintf(r->err, sizeof r->err, "no usable %s device: %.200s", be->label, why);
        return st;
    }
    be->describe(r->ix.dev, r->device, sizeof r->device);
    st = gm_ref_build(r, img);
    if (st != GM_OK) {
        be->close(r->ix.dev);
        r->ix.dev = NULL;
    }
    return st;
}


const gm_ref *gm_ref_current(const gm_ref *r)
{
    return __atomic_load_n(&r->pl.failed, __ATOMIC_ACQUIRE) ? r->pl.cpu : r;
}

const gm_ref *gm_ref_failover(const gm_ref *rc, const char *dev_err)
{
    gm_ref *r = (gm_ref *)rc; /* the twin is made once, under the lock */
    if (!r->keep.data)
        return NULL;
    pthread_mutex_lock(&r->pl.fo_lock);
    if (!r->pl.failed) {
        gm_params p = r->ix.p;
        p.device = GM_DEVICE_CPU;
        gm_ref *cpu = NULL;
        if (gm_ref_prepare(&p, gm_image_view(&r->keep), &cpu) == GM_OK) {
            snprintf(r->pl.fo_why, sizeof r->pl.fo_why, "the GPU failed (%.200s): matching on the CPU",
                     dev_err && *dev_err ? dev_err : "device error");
            r->pl.cpu = cpu;
            __atomic_store_n(&r->pl.failed, 1, __ATOMIC_RELEASE);
        } else {
            gm_ref_free(cpu);
        }
    }
    pthread_mutex_unlock(&r->pl.fo_lock);
    return __atomic_load_n(&r->pl.failed, __ATOMIC_ACQUIRE) ? r->pl.cpu : NULL;
}

/* The reference's copies on the GPUs list[0..n) (gm_params.gpus), each a
 * reference of its own prepared on its GPU, on a thread each while the
 * first GPU's is prepared (replicas_start, then replicas_join): on two
 * H200s the copies cost the preparation's time once, not once a GPU. */
typedef struct {
    gm_params q;
    char one[16];
    gm_view img;
    gm_ref *c;
    gm_status st;
    pthread_t th;
    int started;
} replica_job;

static void *replica_main(void *arg)
{
    replica_job *j = arg;
    j->st = gm_ref_prepare(&j->q, j->img, &j->c);
    return NULL;
}

static replica_job *replicas_start(const gm_params *p, gm_device d, gm_view img, const int *list,
                                   int n)
{
    replica_job *jobs = calloc((size_t)n, sizeof *jobs);
    for (int k = 0; jobs && k < n; k++) {
        replica_job *j = &jobs[k];
        j->q = *p;
        snprintf(j->one, sizeof j->one, "%d", list[k]);
        j->q.gpus = j->one, j->q.device = d;
        j->img = img;
        j->started = pthread_create(&j->th, NULL, replica_main, j) == 0;
        if (!j->started) /* no thread: prepared here, one after the other */
            replica_main(j);
    }
    return jobs;
}

/* Waits for the copies; keeps them when use (the first GPU's is ready on
 * its GPU), else frees them.  GM_OK, or the first copy's failure (with
 * r->err saying which GPU). */
static gm_status replicas_join(gm_ref *r, replica_job *jobs, int n, int use)
{
    gm_status st = jobs ? GM_OK : GM_ERR_NOMEM;
    for (int k = 0; jobs && k < n; k++)
        if (jobs[k].started)
            pthread_join(jobs[k].th, NULL);
    if (st == GM_OK && use) {
        r->pl.rep = calloc((size_t)n, sizeof *r->pl.rep);
        r->pl.load = calloc((size_t)n + 1, sizeof *r->pl.load);
        r->pl.served = calloc((size_t)n + 1, sizeof *r->pl.served);
        if (!r->pl.rep || !r->pl.load || !r->pl.served)
            st = GM_ERR_NOMEM;
    }
    for (int k = 0; jobs && k < n; k++) {
        replica_job *j = &jobs[k];
        if (st == GM_OK && use && j->st == GM_OK && j->c->ix.be == &gm_backend_cpu) {
            snprintf(r->err, sizeof r->err, "GPU %s: %.200s", j->one, j->c->pl.fo_why);
            st = GM_ERR_DEVICE; /* the GPU failed while preparing */
        } else if (st == GM_OK && use && j->st != GM_OK) {
            snprintf(r->err, sizeof r->err, "GPU %s: %.200s", j->one, gm_ref_error(j->c));
            st = j->st;
        }
        if (st == GM_OK && use)
            r->pl.rep[r->pl.nrep++] = j->c;
        else
            gm_ref_free(j->c);
    }
    free(jobs);
    if (st != GM_OK) { /* none kept */
        for (int k = 0; k < r->pl.nrep; k++)
            gm_ref_free(r->pl.rep[k]);
        r->pl.nrep = 0;
        return st;
    }
    size_t k = strlen(r->device);
    for (int i = 0; i < r->pl.nrep && k < sizeof r->device; i++)
        k += (size_t)snprintf(r->device + k, sizeof r->device - k, "%s GPU %d",
                              i == 0 ? "; queries spread over it and" : ",", r->pl.rep[i]->pl.dev_index);
    return GM_OK;
}

const gm_ref *gm_ref_pick(const gm_ref *r, int *slot)
{
    *slot = -1;
    if (r->pl.nrep == 0)
        return r;
    int best = 0, low = __atomic_load_n(&r->pl.load[0], __ATOMIC_RELAXED);
    for (int k = 1; k <= r->pl.nrep; k++) {
        int l = __atomic_load_n(&r->pl.load[k], __ATOMIC_RELAXED);
        if (l < low)
            best = k, low = l;
    }
    __atomic_fetch_add(&r->pl.load[best], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->pl.served[best], 1, __ATOMIC_RELAXED);
    *slot = best;
    return best == 0 ? r : r->pl.rep[best - 1];
}

void gm_ref_unpick(const gm_ref *r, int slot)
{
    if (slot >= 0)
        __atomic_fetch_sub(&r->pl.load[slot], 1, __ATOMIC_RELAXED);
}

const gm_backend_ops *gm_backend_find(gm_device d)
{
    if (d == GM_DEVICE_AUTO || d == GM_DEVICE_CPU)
        return &gm_backend_cpu;
    for (int k = 0; gm_backends[k]; k++)
        if (gm_backends[k]->device == d)
            return gm_backends[k];
    return NULL;
}

const gm_backend_ops *gm_backend_accel(void)
{
    for (int k = 0; gm_backends[k]; k++)
        if (gm_backends[k] != &gm_backend_cpu)
            return gm_backends[k];
    return NULL;
}

/* The devices' names in gm_device's order: a new backend's device is one
 * more entry (and one in the registry's table). */
static const char *const k_device_names[] = {"auto", "cpu", "cuda"};
#define GM_DEVICES (int)(sizeof k_device_names / sizeof k_device_names[0])

const char *gm_device_name(gm_device d)
{
    return d >= 0 && (int)d < GM_DEVICES ? k_device_names[d] : "unknown";
}

gm_status gm_device_from_name(const char *name, gm_device *device, const char **gpus)
{
    if (!name || !device || !gpus)
        return GM_ERR_INVALID;
    const char *colon = strchr(name, ':');
    size_t len = colon ? (size_t)(colon - name) : strlen(name);
    for (int d = 0; d < GM_DEVICES; d++) {
        if (strlen(k_device_names[d]) != len || strncmp(name, k_device_names[d], len) != 0)
            continue;
        const char *list = colon ? colon + 1 : NULL;
        if (list && (d == GM_DEVICE_AUTO || d == GM_DEVICE_CPU))
            return GM_ERR_INVALID; /* one unit: no list */
        if (!gm_backend_find((gm_device)d)) {
            *device = (gm_device)d, *gpus = list;
            return GM_ERR_UNSUPPORTED;
        }
        int units[GM_MAX_GPUS];
        char why[200];
        *device = (gm_device)d, *gpus = list;
        return list && gm_gpus_parse(list, -1, units, why, sizeof why) < 0 ? GM_ERR_INVALID
                                                                             : GM_OK;
    }
    return GM_ERR_INVALID;
}

const char *gm_place_check(const gm_params *p, char *buf, size_t len)
{
    if (!(p->device >= GM_DEVICE_AUTO && (int)p->device < GM_DEVICES)) {
        snprintf(buf, len, "invalid parameter: device %g is outside %g..%g", (double)p->device,
                 (double)GM_DEVICE_AUTO, (double)(GM_DEVICES - 1));
        return buf;
    }
    int list[GM_MAX_GPUS];
    if (p->gpus && gm_gpus_parse(p->gpus, -1, list, buf, len) < 0)
        return buf;
    return NULL;
}

void gm_place_init(gm_placement *pl) { pthread_mutex_init(&pl->fo_lock, NULL); }

void gm_place_free(gm_placement *pl)
{
    gm_warm_free(pl->warm); /* waits for a start under way */
    gm_ref_free(pl->cpu);
    for (int k = 0; k < pl->nrep; k++)
        gm_ref_free(pl->rep[k]);
    free(pl->rep);
    free(pl->load);
    free(pl->served);
    pthread_mutex_destroy(&pl->fo_lock);
}

/* r on accelerator acc (p->device, or auto once the accelerator runs in
 * this process) and on each further GPU of p->gpus; under auto, or where
 * a device that opened fails while preparing, on the CPU instead. */
static gm_status place_accel(gm_ref *r, const gm_params *p, const gm_backend_ops *acc, gm_view img)
{
    int list[GM_MAX_GPUS], n = 1;
    char bad[200];
    list[0] = 0;
    if (p->gpus && *p->gpus) {
        int count = acc->count();
        n = count > 0 ? gm_gpus_parse(p->gpus, count, list, bad, sizeof bad) : 1;
        if (n < 0 && p->device != GM_DEVICE_AUTO) {
            snprintf(r->err, sizeof r->err, "no usable %s device: %s", acc->label, bad);
            return GM_ERR_DEVICE;
        }
        if (n < 0) /* auto: the CPU, below (device 0's failure names why) */
            list[0] = count, n = 1;
    }
    r->pl.dev_index = list[0];
    replica_job *reps = n > 1 ? replicas_start(&r->ix.p, acc->device, img, list + 1, n - 1) : NULL;
    gm_status st = ref_on(r, acc, img);
    /* under auto a device that cannot be opened, or fails or runs out of
     * memory while preparing, hands over to the CPU; under cuda a device
     * that opened and then failed does too (gm_ref_fallback says so) */
    int opened = r->device[0] != '\0' || st == GM_ERR_NOMEM; /* a device, failing */
    if ((p->device == GM_DEVICE_AUTO || opened) && (st == GM_ERR_DEVICE || st == GM_ERR_NOMEM)) {
        char why[sizeof r->err];
        snprintf(why, sizeof why, "%s", r->err);
        r->err[0] = '\0';
        st = ref_on(r, &gm_backend_cpu, img);
        snprintf(r->device, sizeof r->device, "cpu, %d threads (%s: %.200s)", gm_threads(),
                 p->device == GM_DEVICE_AUTO ? "auto" : "cuda failed", why);
        if (p->device != GM_DEVICE_AUTO && st == GM_OK)
            snprintf(r->pl.fo_why, sizeof r->pl.fo_why,
                     "the GPU failed while preparing the reference (%.200s): matching on the CPU",
                     why);
    }
    if (st == GM_OK && r->ix.be == acc)
        gm_warm_mark_up(acc);
    if (n > 1) {
        gm_status rs = replicas_join(r, reps, n - 1, st == GM_OK && r->ix.be != &gm_backend_cpu);
        if (st == GM_OK && r->ix.be != &gm_backend_cpu)
            st = rs;
    }
    return st;
}

gm_status gm_place_prepare(gm_ref *r, const gm_params *p, gm_view img)
{
    r->ix.p.gpus = NULL; /* read here only (gmatch.h): the caller's string need not outlive
                         this call, and the CPU's twin (gm_ref_failover) needs none */
    const gm_backend_ops *acc = p->device == GM_DEVICE_AUTO ? gm_backend_accel()
                                : p->device == GM_DEVICE_CPU ? NULL
                                                             : gm_backend_find(p->device);
    if (p->device != GM_DEVICE_CPU && p->device != GM_DEVICE_AUTO && !acc) {
        snprintf(r->err, sizeof r->err, "no usable %s device: this build has no %s backend",
                 gm_device_name(p->device), gm_device_name(p->device));
        return GM_ERR_DEVICE;
    }
    if (p->device == GM_DEVICE_CPU || !acc || (p->device == GM_DEVICE_AUTO && !gm_warm_up(acc))) {
        gm_status st = ref_on(r, &gm_backend_cpu, img);
        const char *down = acc ? gm_warm_down(acc) : NULL;
        if (st == GM_OK && p->device == GM_DEVICE_AUTO && (!acc || down))
            snprintf(r->device, sizeof r->device, "cpu, %d threads (auto: %.250s)", gm_threads(),
                     !acc ? "built without an accelerator" : down);
        /* auto: the CPU first, the accelerator when the work repays it */
        else if (st == GM_OK && p->device == GM_DEVICE_AUTO)
            st = gm_warm_init(r, acc, p);
        return st;
    }
    return place_accel(r, p, acc, img);
}

/* The query on the least busy copy of r; after a device error or an
 * exhausted device memory, again on the CPU's twin, which answers every
 * query after it. */
gm_status gm_place_match(const gm_ref *top, gm_model model, gm_view query, gm_result *out)
{
    const gm_ref *moved = gm_warm_ready(top->pl.warm);
    if (moved) /* auto: on the accelerator from here on */
        return gm_place_match(moved, model, query, out);
    double t0 = top->pl.warm ? gm_now_ms() : 0.0;
    int slot;
    const gm_ref *r = gm_ref_pick(top, &slot); /* several GPUs: the least busy copy */
    const gm_ref *use = gm_ref_current(r);
    uint64_t w0, w1;
    double wms0, wms1;
    use->ix.be->waits(&w0, &wms0);
    gm_status st = gm_match_dirs(use, model, query, out);
    use->ix.be->waits(&w1, &wms1);
    double wait = wms1 - wms0; /* this thread's, this query's */
    int waits = (int)(w1 - w0);
    const char *dev = st != GM_OK ? use->ix.be->error() : "";
    /* the device failed this query (an error, out of its memory): this
     * query and every one after it on the CPU's twin of the reference */
    if ((st == GM_ERR_DEVICE || st == GM_ERR_NOMEM) && use->ix.be != &gm_backend_cpu) {
        char why[256];
        snprintf(why, sizeof why, "%s%s%.200s", gm_status_str(st), *dev ? ": " : "", dev);
        const gm_ref *cpu = gm_ref_failover(r, why);
        if (cpu) {
            use = cpu;
            st = gm_match_dirs(use, model, query, out);
            dev = st != GM_OK ? use->ix.be->error() : "";
        }
    }
    out->time.wait = wait, out->time.waits = waits;
    gm_ref_unpick(top, slot);
    if (top->pl.warm && use == top) /* auto, on the CPU: whether the accelerator repays */
        gm_warm_account(top, gm_now_ms() - t0);
    if (st != GM_OK)
        snprintf(out->error, sizeof out->error, "%s%s%.200s", gm_status_str(st), *dev ? ": " : "",
                 dev);
    return st;
}

/* The reference that answers now, before a failover: r, or under auto the
 * accelerator's once it took over. */
static const gm_ref *placed(const gm_ref *r)
{
    const gm_ref *moved = gm_warm_ready(r->pl.warm);
    return moved ? moved : r;
}

const char *gm_ref_device(const gm_ref *r)
{
    if (!r)
        return "";
    const char *warm = gm_warm_device(r->pl.warm);
    return warm ? warm : gm_ref_current(placed(r))->device;
}
gm_device gm_ref_backend(const gm_ref *r)
{
    return r && r->status == GM_OK ? gm_ref_current(placed(r))->ix.be->device : GM_DEVICE_AUTO;
}
const char *gm_ref_fallback(const gm_ref *r)
{
    if (!r)
        return "";
    r = placed(r);
    /* on the CPU from the start ("" unless the GPU failed while preparing),
     * or the twin's reason once it answers (written before failed is set) */
    if (r->ix.be == &gm_backend_cpu || __atomic_load_n(&r->pl.failed, __ATOMIC_ACQUIRE))
        return r->pl.fo_why;
    for (int k = 0; k < r->pl.nrep; k++) /* a copy on another GPU that failed */
        if (*gm_ref_fallback(r->pl.rep[k]))
            return gm_ref_fallback(r->pl.rep[k]);
    return "";
}
int gm_ref_gpus(const gm_ref *r)
{
    if (!r || r->status != GM_OK)
        return 0;
    r = placed(r);
    return r->ix.be && r->ix.be != &gm_backend_cpu ? 1 + r->pl.nrep : 0;
}
int gm_ref_gpu(const gm_ref *r, int k)
{
    if (k < 0 || k >= gm_ref_gpus(r))
        return -1;
    r = placed(r);
    return k == 0 ? r->pl.dev_index : r->pl.rep[k - 1]->pl.dev_index;
}
int gm_backend_available(gm_device d) { return gm_backend_find(d) != NULL; }

gm_status gm_device_memory(gm_device d, int number, size_t *avail, size_t *total)
{
    if (!avail || !total || number < 0 || (int)d < 0 || (int)d >= GM_DEVICES)
        return GM_ERR_INVALID;
    const gm_backend_ops *be = d == GM_DEVICE_AUTO ? NULL : gm_backend_find(d);
    if (!be || !be->memory)
        return GM_ERR_UNSUPPORTED;
    if (number >= be->count())
        return GM_ERR_DEVICE;
    return be->memory(number, avail, total);
}

gm_status gm_device_start(gm_device d)
{
    const gm_backend_ops *be = gm_backend_find(d);
    if (!be)
        return (int)d >= 0 && (int)d < GM_DEVICES ? GM_ERR_UNSUPPORTED : GM_ERR_INVALID;
    return be->count() > 0 ? GM_OK : GM_ERR_DEVICE;
}
