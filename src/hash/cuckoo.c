/* cuckoo.c: the build core of the three cuckoo tables (phase 1 bucket
 * distribution, phase 2 lockstep parallel cuckoo hashing per bucket, reseeds
 * and restarts; see cuckoo_core.h for the exact rules the CUDA versions
 * share) and the basic table of cuckoo.h. */
#include "hash/cuckoo_core.h"

#include "common/common.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Phase 1 splits the input in chunks of at least this many items (one per
 * thread at most): below it a thread costs more than it saves. */
#define GM_PHASE1_MIN_CHUNK 32768u
/* Bulk lookups below this many keys run on one thread. */
#define GM_FIND_MIN_PARALLEL 8192u

enum { GM_BUCKET_OK = 0, GM_BUCKET_FAIL = 1, GM_BUCKET_DUP = 2 };

static int gm_max_threads(void) { return gm_threads(); }

static int gm_thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

void *gm_cuckoo_alloc(size_t count, size_t size)
{
    return gm_alloc_large(count, size);
}

size_t gm_cuckoo_num_slots(uint32_t nb)
{
#if SIZE_MAX / GM_CUCKOO_BUCKET_SLOTS < UINT32_MAX
    /* Only a 32-bit size_t can overflow here (a 64-bit one never does, and
     * a run-time test would be flagged "always false"). */
    if ((size_t)nb > SIZE_MAX / GM_CUCKOO_BUCKET_SLOTS)
        return 0;
#endif
    return (size_t)nb * GM_CUCKOO_BUCKET_SLOTS;
}

gm_status gm_cuckoo_table_begin(void *t, size_t size, int have_inputs, uint32_t n,
                                uint32_t unique_bound, uint32_t *nb, size_t *slots)
{
    if (!t)
        return GM_ERR_INVALID;
    memset(t, 0, size);
    if (n > 0 && !have_inputs)
        return GM_ERR_INVALID;
    uint32_t sized = (unique_bound == 0 || unique_bound > n) ? n : unique_bound;
    *nb = gm_cuckoo_num_buckets(sized);
    *slots = gm_cuckoo_num_slots(*nb);
    return *slots == 0 ? GM_ERR_NOMEM : GM_OK;
}

/* ---- phase 2: one bucket -------------------------------------------------- */

/* Collect the bucket's distinct keys into w (dkey, dcnt, dfirst, the set) and,
 * when item_key is not NULL, each item's distinct index.  GM_BUCKET_FAIL when
 * there are more than 576 (no table can hold them), GM_BUCKET_DUP on a
 * repeated key when reject_dups. */
static int gm_bucket_distinct(gm_cuckoo_bucket *w, const uint32_t *bk, uint32_t count,
                              int reject_dups, uint16_t *item_key)
{
    memset(w->set_key, 0xFF, sizeof w->set_key);
    uint32_t m = 0;
    for (uint32_t j = 0; j < count; j++) {
        uint32_t k = bk[j];
        uint32_t h = gm_cuckoo_set_hash(k);
        while (w->set_key[h] != GM_KEY_EMPTY && w->set_key[h] != k)
            h = (h + 1) & (GM_CUCKOO_SET_SIZE - 1);
        uint32_t i;
        if (w->set_key[h] == k) {
            if (reject_dups)
                return GM_BUCKET_DUP;
            i = w->set_idx[h];
            w->dcnt[i]++;
        } else {
            if (m == GM_CUCKOO_BUCKET_SLOTS)
                return GM_BUCKET_FAIL;
            i = m++;
            w->set_key[h] = k;
            w->set_idx[h] = (uint16_t)i;
            w->dkey[i] = k;
            w->dcnt[i] = 1;
            w->dfirst[i] = j;
        }
        if (item_key)
            item_key[j] = (uint16_t)i;
    }
    w->m = m;
    return GM_BUCKET_OK;
}

/* One attempt of lockstep parallel cuckoo hashing of w's distinct keys with
 * the constants k.  1 when every key is placed within GM_CUCKOO_MAX_ROUNDS
 * rounds (w->tab/own hold the table, w->rounds the rounds taken), else 0.
 * The loops are branch-free: whether a writer wins its slot is a coin flip
 * to the branch predictor; 409 random keys per bucket took 7.2 us a bucket
 * against 9.6 us with branches (2-core Xeon VM, gcc 12 -O2). */
static int gm_bucket_cuckoo(gm_cuckoo_bucket *w, const gm_cuckoo_consts *k)
{
    const uint32_t m = w->m;
    memset(w->tab, 0xFF, sizeof w->tab);
    memset(w->own, 0, sizeof w->own);  /* read (and discarded) for empty slots below */
    memset(w->claim, 0, sizeof w->claim);
    for (int t = 0; t < 3; t++)
        for (uint32_t i = 0; i < m; i++)
            w->dslot[t][i] = (uint8_t)gm_cuckoo_g(k, t, w->dkey[i]);
    uint16_t *cur = w->list[0], *nxt = w->list[1];
    for (uint32_t i = 0; i < m; i++)
        cur[i] = (uint16_t)i;
    uint32_t n_cur = m;
    if (n_cur == 0) {
        w->rounds = 0;
        return 1;
    }
    const uint32_t *dkey = w->dkey;
    uint64_t *claim = w->claim;
    for (uint32_t r = 0; r < GM_CUCKOO_MAX_ROUNDS; r++) {
        const int t = (int)(r % 3);
        const uint8_t *dslot = w->dslot[t];
        uint32_t *tab = w->tab[t];
        uint16_t *own = w->own[t];
        /* Claim: the largest key writing a slot wins (atomicMax on the GPU).
         * The round number above the key makes older claims lose, so the
         * claims need no clearing between rounds. */
        const uint64_t stamp = (uint64_t)(r + 1) << 32;
        for (uint32_t j = 0; j < n_cur; j++) {
            uint32_t i = cur[j];
            uint32_t s = dslot[i];
            uint64_t v = stamp | dkey[i], c = claim[s];
            claim[s] = v > c ? v : c;
        }
        /* Write: the winner replaces the occupant, which becomes unplaced;
         * losers stay unplaced.  A loser writes the slot back unchanged, so
         * the winner sees the occupant from before the round whatever the
         * order. */
        uint32_t n_nxt = 0;
        for (uint32_t j = 0; j < n_cur; j++) {
            uint32_t i = cur[j];
            uint32_t s = dslot[i];
            uint32_t key = dkey[i];
            int win = claim[s] == (stamp | key);
            uint32_t occ = tab[s];
            uint16_t o = own[s];
            nxt[n_nxt] = win ? o : (uint16_t)i;
            n_nxt += win ? (occ != GM_KEY_EMPTY) : 1u;
            tab[s] = win ? key : occ;
            own[s] = win ? (uint16_t)i : o;
        }
        uint16_t *tmp = cur;
        cur = nxt;
        nxt = tmp;
        n_cur = n_nxt;
        if (n_cur == 0) {
            w->rounds = r + 1;
            return 1;
        }
    }
    return 0;
}

/* Build bucket b of restart `restart`: distinct keys, then attempts until one
 * succeeds.  *bseed and *attempt: the seed and index of that attempt. */
static int gm_bucket_build(gm_cuckoo_bucket *w, const uint32_t *bk, uint32_t count,
                           uint64_t seed, uint32_t restart, uint32_t b, uint32_t force_reseeds,
                           int reject_dups, uint16_t *item_key, uint32_t *bseed, uint32_t *attempt)
{
    int st = gm_bucket_distinct(w, bk, count, reject_dups, item_key);
    if (st != GM_BUCKET_OK)
        return st;
    for (uint32_t a = force_reseeds; a < GM_CUCKOO_MAX_RESEEDS; a++) {
        uint32_t s = gm_cuckoo_bucket_seed(seed, restart, b, a);
        gm_cuckoo_consts k = gm_cuckoo_hash_consts(s);
        if (gm_bucket_cuckoo(w, &k)) {
            *bseed = s;
            *attempt = a;
            return GM_BUCKET_OK;
        }
    }
    return GM_BUCKET_FAIL;
}

/* ---- phase 1 -------------------------------------------------------------- */

/* a mod d without a division instruction, exact for every a < 2^32 and
 * 1 <= d < 2^32: the double quotient is within 2^-20 of a/d, so q is
 * floor(a/d) or one off, which the two corrections fix (checked against % for
 * all 2^32 a at six d).  Counting 3M keys into 7335 buckets: 3.7 ms against
 * 5.2 ms with % (2-core Xeon VM, gcc 12 -O2). */
typedef struct {
    uint32_t d;
    double inv;
} gm_divider;

static gm_divider gm_divider_make(uint32_t d)
{
    gm_divider v = {d, 1.0 / (double)d};
    return v;
}

static inline uint32_t gm_divider_mod(gm_divider v, uint32_t a)
{
    uint32_t q = (uint32_t)((double)a * v.inv);
    int64_t r = (int64_t)a - (int64_t)q * (int64_t)v.d;
    r += r < 0 ? (int64_t)v.d : 0;
    r -= r >= (int64_t)v.d ? (int64_t)v.d : 0;
    return (uint32_t)r;
}

/* Phase-1 bucket of key: gm_cuckoo_h with the division replaced. */
static inline uint32_t gm_phase1_bucket(gm_divider nb, uint32_t restart, uint32_t c0, uint32_t c1,
                                        uint32_t key)
{
    if (restart == 0)
        return gm_divider_mod(nb, key);
    uint64_t x = (uint64_t)c0 + (uint64_t)c1 * (uint64_t)key;
    return gm_divider_mod(nb, gm_cuckoo_mod_p(x));
}

typedef struct {
    uint32_t *hist;      /* [chunks*nb] per-chunk counts, then per-chunk write cursors */
    uint32_t *start;     /* [nb+1] bucket starts in skeys/svals */
    uint32_t *skeys;     /* [n] items grouped by bucket, input order kept inside a bucket */
    uint32_t *svals;     /* [n] or NULL */
    uint16_t *item_key;  /* [n] or NULL: distinct index of each item in its bucket (phase 2) */
    uint32_t chunks;
} gm_phase1;

enum { GM_PHASE1_OK = 0, GM_PHASE1_OVERFULL = 1, GM_PHASE1_BAD_KEY = 2 };

/* Count the items per bucket under the h of `restart` (chunk q of the input
 * into hist row q) and check the keys.  GM_PHASE1_BAD_KEY when a key is
 * GM_KEY_EMPTY, GM_PHASE1_OVERFULL when a bucket gets more than
 * c->max_items items, else GM_PHASE1_OK with start[b] = count of bucket b. */
static int gm_phase1_count(const gm_cuckoo_core *c, gm_phase1 *p, uint32_t restart, uint32_t h_c0,
                           uint32_t h_c1)
{
    const uint32_t n = c->n, nb = c->nb, chunks = p->chunks;
    const uint32_t *keys = c->keys;
    uint32_t *hist = p->hist;
    const gm_divider div = gm_divider_make(nb);
    int bad = 0;

#pragma omp parallel for num_threads(gm_threads()) schedule(static) reduction(| : bad) if (chunks > 1)
    for (int64_t q = 0; q < (int64_t)chunks; q++) {
        uint32_t lo = (uint32_t)((uint64_t)n * (uint64_t)q / chunks);
        uint32_t hi = (uint32_t)((uint64_t)n * (uint64_t)(q + 1) / chunks);
        uint32_t *hq = hist + (size_t)q * nb;
        memset(hq, 0, (size_t)nb * sizeof *hq);
        int empty = 0;
        for (uint32_t i = lo; i < hi; i++) {
            uint32_t k = keys[i];
            uint32_t b = gm_phase1_bucket(div, restart, h_c0, h_c1, k);
            empty |= k == GM_KEY_EMPTY;
            hq[b]++;
        }
        bad |= empty;
    }
    if (bad)
        return GM_PHASE1_BAD_KEY;

    uint32_t *start = p->start;
    int overfull = 0;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) reduction(| : overfull) if (nb > 4096)
    for (int64_t b = 0; b < (int64_t)nb; b++) {
        uint32_t total = 0;
        for (uint32_t q = 0; q < chunks; q++)
            total += hist[(size_t)q * nb + (size_t)b];
        start[b] = total;
        if (total > c->max_items)
            overfull = 1;
    }
    return overfull ? GM_PHASE1_OVERFULL : GM_PHASE1_OK;
}

/* After gm_phase1_count: the starts, then the stable scatter.  The input is
 * cut into `chunks` contiguous pieces with their own histograms, so the
 * scatter keeps input order inside a bucket and the result is the same for
 * any thread count. */
static void gm_phase1_scatter(const gm_cuckoo_core *c, gm_phase1 *p, uint32_t restart,
                              uint32_t h_c0, uint32_t h_c1)
{
    const uint32_t n = c->n, nb = c->nb, chunks = p->chunks;
    uint32_t *start = p->start, *hist = p->hist;
    const gm_divider div = gm_divider_make(nb);
    uint32_t run = 0;
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t cnt = start[b];
        start[b] = run;
        run += cnt;
    }
    start[nb] = run;

    /* Per-chunk cursors: chunk q writes bucket b after the chunks before it. */
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (nb > 4096 && chunks > 1)
    for (int64_t b = 0; b < (int64_t)nb; b++) {
        uint32_t pos = start[b];
        for (uint32_t q = 0; q < chunks; q++) {
            uint32_t *h = &hist[(size_t)q * nb + (size_t)b];
            uint32_t cnt = *h;
            *h = pos;
            pos += cnt;
        }
    }

    const uint32_t *keys = c->keys, *vals = c->vals;
    uint32_t *skeys = p->skeys, *svals = p->svals;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (chunks > 1)
    for (int64_t q = 0; q < (int64_t)chunks; q++) {
        uint32_t lo = (uint32_t)((uint64_t)n * (uint64_t)q / chunks);
        uint32_t hi = (uint32_t)((uint64_t)n * (uint64_t)(q + 1) / chunks);
        uint32_t *hq = hist + (size_t)q * nb;
        /* The bucket is computed again rather than stored by the count:
         * cheaper than writing and reading 4 bytes an item. */
        if (svals) {
            for (uint32_t i = lo; i < hi; i++) {
                uint32_t k = keys[i];
                uint32_t pos = hq[gm_phase1_bucket(div, restart, h_c0, h_c1, k)]++;
                skeys[pos] = k;
                svals[pos] = vals[i];
            }
        } else {
            for (uint32_t i = lo; i < hi; i++) {
                uint32_t k = keys[i];
                skeys[hq[gm_phase1_bucket(div, restart, h_c0, h_c1, k)]++] = k;
            }
        }
    }
}

static void gm_phase1_free(gm_phase1 *p)
{
    free(p->hist);
    free(p->start);
    free(p->skeys);
    free(p->svals);
    free(p->item_key);
    memset(p, 0, sizeof *p);
}

/* ---- the core -------------------------------------------------------------- */

/* Phase 2 of one restart.  GM_BUCKET_OK when every bucket built (seeds,
 * keys_out and the emitted data hold the table, *stats its numbers),
 * GM_BUCKET_FAIL when some bucket could not be built, GM_BUCKET_DUP when
 * some bucket repeats a key and c->reject_duplicates. */
static int gm_phase2_run(const gm_cuckoo_core *c, const gm_phase1 *p, gm_cuckoo_bucket *work,
                         int nthreads, uint32_t restart, uint32_t *seeds, uint32_t *keys_out,
                         gm_cuckoo_stats *stats)
{
    (void)nthreads;  /* used by the OpenMP pragma only */
    const uint32_t nb = c->nb;
    const uint32_t force_reseeds = c->dbg ? c->dbg->force_reseeds : 0;
    const uint32_t *skeys = p->skeys, *svals = p->svals, *start = p->start;
    uint16_t *item_key = p->item_key;
    /* A failed or duplicate bucket ends this restart: later buckets are
     * skipped (which ones depends on timing, but only the outcome "this
     * restart failed" is used, never their stats). */
    int failed = 0, dup = 0;
    uint32_t reseeds = 0, max_rounds = 0;
    uint64_t unique = 0;
#pragma omp parallel num_threads(nthreads) if (nb > 1)
    {
        gm_cuckoo_bucket *w = &work[gm_thread_num()];
#pragma omp for schedule(dynamic, 2) reduction(+ : reseeds, unique) reduction(max : max_rounds)
        for (int64_t bi = 0; bi < (int64_t)nb; bi++) {
            int stop;
#pragma omp atomic read
            stop = failed;
            if (stop)
                continue;
            uint32_t b = (uint32_t)bi;
            uint32_t lo = start[b], cnt = start[b + 1] - start[b];
            uint32_t bseed = 0, attempt = 0;
            int r = gm_bucket_build(w, skeys + lo, cnt, c->seed, restart, b, force_reseeds,
                                    c->reject_duplicates, item_key ? item_key + lo : NULL, &bseed,
                                    &attempt);
            if (r != GM_BUCKET_OK) {
                if (r == GM_BUCKET_DUP) {
#pragma omp atomic write
                    dup = 1;
                }
#pragma omp atomic write
                failed = 1;
                continue;
            }
            seeds[b] = bseed;
            for (int t = 0; t < 3; t++)
                memcpy(keys_out + (size_t)t * nb * GM_CUCKOO_SLOTS + (size_t)b * GM_CUCKOO_SLOTS,
                       w->tab[t], sizeof w->tab[t]);
            if (c->emit) {
                gm_cuckoo_emit_args a = {nb, b, lo, cnt, skeys + lo, svals ? svals + lo : NULL,
                                         item_key ? item_key + lo : NULL};
                c->emit(c->emit_ctx, w, &a);
            }
            reseeds += attempt;
            unique += w->m;
            if (w->rounds > max_rounds)
                max_rounds = w->rounds;
        }
    }
    if (dup)
        return GM_BUCKET_DUP;
    if (failed)
        return GM_BUCKET_FAIL;
    stats->reseeds = reseeds;
    stats->max_rounds = max_rounds;
    stats->unique_keys = (uint32_t)unique;
    return GM_BUCKET_OK;
}

void gm_cuckoo_core_init(gm_cuckoo_core *c, const uint32_t *keys, const uint32_t *vals, uint32_t n,
                         uint32_t nb, uint64_t seed, const gm_cuckoo_debug *dbg,
                         gm_cuckoo_emit_fn emit, void *emit_ctx)
{
    memset(c, 0, sizeof *c);
    c->keys = keys;
    c->vals = vals;
    c->n = n;
    c->nb = nb;
    c->seed = seed;
    c->dbg = dbg;
    c->max_items = GM_CUCKOO_NO_LIMIT;
    c->reject_duplicates = 0;
    c->want_item_key = 0;
    c->emit = emit;
    c->emit_ctx = emit_ctx;
}

gm_status gm_cuckoo_core_build(gm_cuckoo_core *c)
{
    c->seeds = NULL;
    c->keys_out = NULL;
    c->restart = c->h_c0 = c->h_c1 = 0;
    memset(&c->stats, 0, sizeof c->stats);
    if (c->nb == 0 || (c->n > 0 && !c->keys))
        return GM_ERR_INVALID;

    const uint32_t nb = c->nb, n = c->n;
    const uint32_t force_restarts = c->dbg ? c->dbg->force_restarts : 0;
    size_t slots = gm_cuckoo_num_slots(nb);
    int nthreads = gm_max_threads();
    if (nthreads < 1)
        nthreads = 1;

    gm_phase1 p;
    memset(&p, 0, sizeof p);
    p.chunks = n / GM_PHASE1_MIN_CHUNK;
    if (p.chunks > (uint32_t)nthreads)
        p.chunks = (uint32_t)nthreads;
    if (p.chunks < 1)
        p.chunks = 1;

    gm_status st = GM_ERR_NOMEM;
    gm_cuckoo_bucket *work = NULL;
    uint32_t *seeds = gm_cuckoo_alloc(nb, sizeof *seeds);
    uint32_t *keys_out = slots ? gm_cuckoo_alloc(slots, sizeof *keys_out) : NULL;
    p.hist = gm_cuckoo_alloc((size_t)p.chunks * nb, sizeof *p.hist);
    p.start = gm_cuckoo_alloc((size_t)nb + 1, sizeof *p.start);
    p.skeys = gm_cuckoo_alloc(n, sizeof *p.skeys);
    if (c->vals)
        p.svals = gm_cuckoo_alloc(n, sizeof *p.svals);
    if (c->want_item_key)
        p.item_key = gm_cuckoo_alloc(n, sizeof *p.item_key);
    work = gm_cuckoo_alloc((size_t)nthreads, sizeof *work);
    if (!seeds || !keys_out || !p.hist || !p.start || !p.skeys ||
        (c->vals && !p.svals) || (c->want_item_key && !p.item_key) || !work)
        goto fail;

    st = GM_ERR_HASH;
    for (uint32_t restart = 0; restart <= GM_CUCKOO_MAX_RESTARTS; restart++) {
        uint32_t h_c0, h_c1;
        gm_cuckoo_phase1_consts(c->seed, restart, &h_c0, &h_c1);
        /* A forced restart still counts (and checks the keys), then reports
         * an overfull bucket. */
        int r1 = gm_phase1_count(c, &p, restart, h_c0, h_c1);
        if (r1 == GM_PHASE1_BAD_KEY) {
            st = GM_ERR_INVALID;
            goto fail;
        }
        if (r1 == GM_PHASE1_OVERFULL || restart < force_restarts)
            continue;
        gm_phase1_scatter(c, &p, restart, h_c0, h_c1);
        int r2 = gm_phase2_run(c, &p, work, nthreads, restart, seeds, keys_out, &c->stats);
        if (r2 == GM_BUCKET_DUP) {
            st = GM_ERR_INVALID;
            goto fail;
        }
        if (r2 == GM_BUCKET_FAIL)
            continue;
        c->restart = restart;
        c->h_c0 = h_c0;
        c->h_c1 = h_c1;
        c->seeds = seeds;
        c->keys_out = keys_out;
        c->stats.restarts = restart;
        gm_phase1_free(&p);
        free(work);
        return GM_OK;
    }

fail:
    memset(&c->stats, 0, sizeof c->stats);
    free(seeds);
    free(keys_out);
    free(work);
    gm_phase1_free(&p);
    return st;
}

/* ---- basic table ----------------------------------------------------------- */

typedef struct {
    uint32_t *vals;  /* [3*nb*192] */
} gm_basic_emit_ctx;

static void gm_basic_emit(void *ctx, gm_cuckoo_bucket *w, const gm_cuckoo_emit_args *a)
{
    gm_basic_emit_ctx *e = ctx;
    for (int t = 0; t < 3; t++) {
        uint32_t *out = e->vals + (size_t)t * a->nb * GM_CUCKOO_SLOTS + (size_t)a->b * GM_CUCKOO_SLOTS;
        for (int s = 0; s < GM_CUCKOO_SLOTS; s++)
            out[s] = w->tab[t][s] == GM_KEY_EMPTY ? 0u : a->vals[w->dfirst[w->own[t][s]]];
    }
}

static int gm_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Error path only: does keys[] repeat a key?  1 yes, 0 no, -1 out of memory. */
static int gm_has_duplicate(const uint32_t *keys, uint32_t n)
{
    uint32_t *tmp = gm_cuckoo_alloc(n, sizeof *tmp);
    if (!tmp)
        return -1;
    memcpy(tmp, keys, (size_t)n * sizeof *tmp);
    qsort(tmp, n, sizeof *tmp, gm_cmp_u32);
    int dup = 0;
    for (uint32_t i = 1; i < n && !dup; i++)
        dup = tmp[i] == tmp[i - 1];
    free(tmp);
    return dup;
}

gm_status gm_cuckoo_build_cpu(gm_cuckoo *t, const uint32_t *keys, const uint32_t *vals,
                              uint32_t n, uint64_t seed, const gm_cuckoo_debug *dbg)
{
    uint32_t nb;
    size_t slots;
    gm_status st = gm_cuckoo_table_begin(t, sizeof *t, keys && vals, n, 0, &nb, &slots);
    if (st != GM_OK)
        return st;
    uint32_t *vals_out = gm_cuckoo_alloc(slots, sizeof *vals_out);
    if (!vals_out)
        return GM_ERR_NOMEM;

    gm_basic_emit_ctx e = {vals_out};
    gm_cuckoo_core c;
    gm_cuckoo_core_init(&c, keys, vals, n, nb, seed, dbg, gm_basic_emit, &e);
    c.max_items = GM_CUCKOO_BUCKET_MAX;
    c.reject_duplicates = 1;
    st = gm_cuckoo_core_build(&c);
    if (st == GM_ERR_HASH) {
        /* Many copies of one key overfill its bucket under every h, so
         * phase 2 never sees them: tell that apart from bad luck. */
        int d = gm_has_duplicate(keys, n);
        if (d > 0)
            st = GM_ERR_INVALID;
        else if (d < 0)
            st = GM_ERR_NOMEM;
    }
    if (st != GM_OK) {
        free(vals_out);
        return st;
    }
    GM_CUCKOO_CORE_TAKE(t, &c);
    t->vals = vals_out;
    return GM_OK;
}

uint32_t gm_cuckoo_find(const gm_cuckoo *t, uint32_t key)
{
    int64_t s = gm_cuckoo_slot(t->nb, t->restart, t->h_c0, t->h_c1, t->seeds, t->keys, key);
    return s < 0 ? GM_KEY_EMPTY : t->vals[s];
}

void gm_cuckoo_find_all_cpu(const gm_cuckoo *t, const uint32_t *keys, uint32_t n, uint32_t *out)
{
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (n >= GM_FIND_MIN_PARALLEL)
    for (int64_t i = 0; i < (int64_t)n; i++)
        out[i] = gm_cuckoo_find(t, keys[i]);
}

void gm_cuckoo_free(gm_cuckoo *t)
{
    if (!t)
        return;
    free(t->seeds);
    free(t->keys);
    free(t->vals);
    memset(t, 0, sizeof *t);
}
