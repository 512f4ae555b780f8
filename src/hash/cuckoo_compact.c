/* cuckoo_compact.c: the compacting table / two-way index of cuckoo.h (paper
 * section 4.3) on the shared build core of cuckoo_core.h: the multi-value
 * build without values, then occupied slot -> 1, empty -> 0 and an exclusive
 * prefix sum over all slots in global slot order (T1 of all buckets, T2, T3)
 * gives each key its dense index; unique[index] = key. */
#include "hash/cuckoo_core.h"

#include <stdlib.h>
#include <string.h>

/* Segments (one bucket's part of one sub-table, 192 slots) below this many
 * are scanned on one thread. */
#define GM_COMPACT_MIN_PARALLEL 4096u

typedef struct {
    uint32_t *occupied;  /* [3*nb] occupied slots of segment t*nb + b */
} gm_compact_emit_ctx;

static void gm_compact_emit(void *ctx, gm_cuckoo_bucket *w, const gm_cuckoo_emit_args *a)
{
    gm_compact_emit_ctx *e = ctx;
    for (int t = 0; t < 3; t++) {
        uint32_t occ = 0;
        for (int s = 0; s < GM_CUCKOO_SLOTS; s++)
            occ += w->tab[t][s] != GM_KEY_EMPTY;
        e->occupied[(size_t)t * a->nb + a->b] = occ;
    }
}

gm_status gm_compact_build_cpu(gm_compact *t, const uint32_t *keys, uint32_t n,
                               uint32_t unique_bound, uint64_t seed, const gm_cuckoo_debug *dbg)
{
    uint32_t nb;
    size_t slots;
    gm_status st = gm_cuckoo_table_begin(t, sizeof *t, keys != NULL, n, unique_bound, &nb, &slots);
    if (st != GM_OK)
        return st;
    size_t segs = (size_t)3 * nb;  /* cannot overflow: slots did not */
    gm_compact_emit_ctx e;
    e.occupied = gm_cuckoo_alloc(segs, sizeof *e.occupied);
    uint32_t *index = gm_cuckoo_alloc(slots, sizeof *index);
    uint32_t *unique = NULL;
    gm_cuckoo_core c;
    st = GM_ERR_NOMEM;
    if (!e.occupied || !index)
        goto fail;

    gm_cuckoo_core_init(&c, keys, NULL, n, nb, seed, dbg, gm_compact_emit, &e);
    st = gm_cuckoo_core_build(&c);
    if (st != GM_OK)
        goto fail;

    uint32_t u = c.stats.unique_keys;
    unique = gm_cuckoo_alloc(u, sizeof *unique);
    if (!unique) {
        st = GM_ERR_NOMEM;
        free(c.seeds);
        free(c.keys_out);
        goto fail;
    }
    /* Exclusive scan of the segment counts (3*nb numbers), then every segment
     * writes its slots' indices and its keys in parallel. */
    uint32_t run = 0;
    for (size_t g = 0; g < segs; g++) {
        uint32_t occ = e.occupied[g];
        e.occupied[g] = run;
        run += occ;
    }
    const uint32_t *skeys = c.keys_out;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (segs >= GM_COMPACT_MIN_PARALLEL)
    for (int64_t g = 0; g < (int64_t)segs; g++) {
        uint32_t idx = e.occupied[g];
        size_t base = (size_t)g * GM_CUCKOO_SLOTS;
        for (size_t s = base; s < base + GM_CUCKOO_SLOTS; s++) {
            index[s] = idx;
            if (skeys[s] != GM_KEY_EMPTY)
                unique[idx++] = skeys[s];
        }
    }
    free(e.occupied);

    GM_CUCKOO_CORE_TAKE(t, &c);
    t->index = index;
    t->unique = unique;
    t->u = u;
    return GM_OK;

fail:
    free(e.occupied);
    free(index);
    free(unique);
    return st;
}

void gm_compact_free(gm_compact *t)
{
    if (!t)
        return;
    free(t->seeds);
    free(t->keys);
    free(t->index);
    free(t->unique);
    memset(t, 0, sizeof *t);
}
