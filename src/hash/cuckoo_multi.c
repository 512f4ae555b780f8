/* cuckoo_multi.c: the multi-value table of cuckoo.h (paper section 4.2) on
 * the shared build core of cuckoo_core.h.  Phase 1 buckets the items; phase 2
 * cuckoo hashes each bucket's distinct keys; then each key's values get a
 * contiguous block: blocks in the bucket's slot order (T1, T2, T3) from the
 * bucket's phase-1 start, values in the bucket's stable item order. */
#include "hash/cuckoo_core.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t *counts;   /* [3*nb*192] */
    uint32_t *offsets;  /* [3*nb*192] */
    uint32_t *values;   /* [n] */
} gm_multi_emit_ctx;

static void gm_multi_emit(void *ctx, gm_cuckoo_bucket *w, const gm_cuckoo_emit_args *a)
{
    gm_multi_emit_ctx *e = ctx;
    /* Key blocks: an exclusive prefix sum of the counts over the bucket's
     * occupied slots in slot order, from the bucket's start. */
    uint32_t run = a->start;
    for (int t = 0; t < 3; t++) {
        size_t base = (size_t)t * a->nb * GM_CUCKOO_SLOTS + (size_t)a->b * GM_CUCKOO_SLOTS;
        uint32_t *cnt = e->counts + base, *off = e->offsets + base;
        for (int s = 0; s < GM_CUCKOO_SLOTS; s++) {
            if (w->tab[t][s] == GM_KEY_EMPTY) {
                cnt[s] = 0;
                off[s] = 0;
                continue;
            }
            uint32_t i = w->own[t][s];
            cnt[s] = w->dcnt[i];
            off[s] = run;
            w->cursor[i] = run;
            run += w->dcnt[i];
        }
    }
    /* Values in item order, so each key's values keep their input order. */
    uint32_t *values = e->values, *cursor = w->cursor;
    const uint32_t *bvals = a->vals;
    const uint16_t *item_key = a->item_key;
    for (uint32_t j = 0; j < a->count; j++)
        values[cursor[item_key[j]]++] = bvals[j];
}

gm_status gm_multi_build_cpu(gm_multi *t, const uint32_t *keys, const uint32_t *vals,
                             uint32_t n, uint32_t unique_bound, uint64_t seed,
                             const gm_cuckoo_debug *dbg)
{
    uint32_t nb;
    size_t slots;
    gm_status st = gm_cuckoo_table_begin(t, sizeof *t, keys && vals, n, unique_bound, &nb, &slots);
    if (st != GM_OK)
        return st;
    gm_multi_emit_ctx e;
    e.counts = gm_cuckoo_alloc(slots, sizeof *e.counts);
    e.offsets = gm_cuckoo_alloc(slots, sizeof *e.offsets);
    e.values = gm_cuckoo_alloc(n, sizeof *e.values);
    st = GM_ERR_NOMEM;
    gm_cuckoo_core c;
    if (!e.counts || !e.offsets || !e.values)
        goto fail;

    gm_cuckoo_core_init(&c, keys, vals, n, nb, seed, dbg, gm_multi_emit, &e);
    c.want_item_key = 1;
    st = gm_cuckoo_core_build(&c);
    if (st != GM_OK)
        goto fail;

    GM_CUCKOO_CORE_TAKE(t, &c);
    t->counts = e.counts;
    t->offsets = e.offsets;
    t->values = e.values;
    return GM_OK;

fail:
    free(e.counts);
    free(e.offsets);
    free(e.values);
    return st;
}

void gm_multi_free(gm_multi *t)
{
    if (!t)
        return;
    free(t->seeds);
    free(t->keys);
    free(t->counts);
    free(t->offsets);
    free(t->values);
    memset(t, 0, sizeof *t);
}
