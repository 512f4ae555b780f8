/* chain.c: a chain of refinements (backend.h's gm_chain_step) run with a
 * backend's refine, a call a step and a call a round: the rule a backend's
 * own chain (the CUDA one queues every step and round on the device and
 * waits once) must match, and the CPU's way. */
#include <string.h>

#include "pipeline/backend.h"

/* Those of the n transforms with take[i] refined in one call (side by
 * side: they do not depend on each other), into h2 and v2 at the same i. */
static gm_status refine_taken(const gm_backend_ops *be, void *lane, const gm_points *q,
                              const gm_chain_step *s, const double *h, const uint8_t *take,
                              uint32_t n, double (*h2)[9], gm_verify_score *v2)
{
    double hb[GM_CHAIN_MAX][9];
    gm_verify_score vb[GM_CHAIN_MAX];
    uint32_t at[GM_CHAIN_MAX], nb = 0;
    for (uint32_t i = 0; i < n; i++)
        if (take[i]) {
            memcpy(hb[nb], h + 9 * (size_t)i, sizeof hb[nb]);
            at[nb++] = i;
        }
    if (nb == 0)
        return GM_OK;
    gm_status st = be->refine(lane, s->map, q, s->model, &hb[0][0], s->iters, nb, vb);
    for (uint32_t k = 0; k < nb && st == GM_OK; k++) {
        memcpy(h2[at[k]], hb[k], sizeof hb[k]);
        v2[at[k]] = vb[k];
    }
    return st;
}

gm_status gm_chain_host(const gm_backend_ops *be, void *lane, const gm_points *q,
                        const gm_chain_step *steps, int ns, double *h, gm_verify_score *v,
                        uint32_t n)
{
    if (n > GM_CHAIN_MAX || ns < 0 || ns > GM_CHAIN_STEPS)
        return GM_ERR_INVALID;
    gm_status st = GM_OK;
    for (int k = 0; k < ns && st == GM_OK; k++) {
        const gm_chain_step *s = &steps[k];
        if (s->from != s->to)
            for (uint32_t i = 0; i < n; i++)
                gm_h_rescale(h + 9 * (size_t)i, s->fq, s->from, s->to);
        uint8_t take[GM_CHAIN_MAX];
        for (uint32_t i = 0; i < n; i++)
            take[i] = s->take ? s->take[i] != 0 : 1;
        if (s->rounds == 0) {
            st = refine_taken(be, lane, q, s, h, take, n, (double(*)[9])h, v);
            continue;
        }
        for (int r = 0; r < s->rounds && st == GM_OK; r++) {
            double h2[GM_CHAIN_MAX][9];
            gm_verify_score v2[GM_CHAIN_MAX];
            int more = 0;
            if ((st = refine_taken(be, lane, q, s, h, take, n, h2, v2)) != GM_OK)
                break;
            for (uint32_t i = 0; i < n; i++) {
                if (!take[i])
                    continue;
                if (!gm_chain_better(&v2[i], &v[i])) {
                    take[i] = 0;
                    continue;
                }
                memcpy(h + 9 * (size_t)i, h2[i], sizeof h2[i]);
                v[i] = v2[i];
                more = 1;
            }
            if (!more)
                break;
        }
    }
    return st;
}

gm_status gm_chain_begin(gm_chain_job *j, const gm_backend_ops *be, void *lane,
                         const gm_points *q, const gm_chain_step *steps, int ns, double *h,
                         gm_verify_score *v, uint32_t n)
{
    *j = (gm_chain_job){be, lane, h, v, n, 0};
    if (!be->chain_queue || !be->chain_collect)
        return gm_chain_host(be, lane, q, steps, ns, h, v, n);
    gm_status st = be->chain_queue(lane, q, steps, ns, h, v, n);
    j->queued = st == GM_OK;
    return st;
}

gm_status gm_chain_end(gm_chain_job *j)
{
    if (!j->queued)
        return GM_OK;
    j->queued = 0;
    return j->be->chain_collect(j->lane, j->h, j->v, j->n);
}

gm_status gm_chain_run(const gm_backend_ops *be, void *lane, const gm_points *q,
                       const gm_chain_step *steps, int ns, double *h, gm_verify_score *v,
                       uint32_t n)
{
    gm_chain_job j;
    gm_status st = gm_chain_begin(&j, be, lane, q, steps, ns, h, v, n);
    return st == GM_OK ? gm_chain_end(&j) : st;
}
