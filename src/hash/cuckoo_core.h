/* cuckoo_core.h: internal.  The build core shared by the three tables of
 * cuckoo.h (basic, multi-value, compacting); cuckoo.c implements it.
 *
 * The core runs phase 1 (bucket distribution) and phase 2 (lockstep parallel
 * cuckoo hashing per bucket) with its reseeds and restarts, writes the slot
 * keys and bucket seeds, and hands every finished bucket to a per-table
 * "emit" callback that writes the table's own per-slot data (values, counts
 * and offsets, occupancy).  The CUDA versions must reproduce exactly:
 *
 *   phase-1 constants  gm_cuckoo_phase1_consts() below (restart >= 1).
 *   phase 1 order      stable: inside a bucket items keep their input order.
 *   round r            every unplaced key writes sub-table t = r mod 3 at
 *                      g_t(k); per slot the largest writing key wins (claim =
 *                      max(key + 1), 0 = no claim, so key 0 can claim); the
 *                      winner replaces the occupant whatever the occupant's
 *                      key; losers and evicted occupants are unplaced in round
 *                      r + 1.  Equal keys (multi, compact) win together, which
 *                      is why the CPU may cuckoo the bucket's distinct keys only.
 *   success            no key unplaced after round r (r < GM_CUCKOO_MAX_ROUNDS);
 *                      the bucket needed r + 1 rounds (0 for an empty bucket).
 *   attempts           a = 0 .. GM_CUCKOO_MAX_RESEEDS-1, bucket seed
 *                      gm_cuckoo_bucket_seed(seed, restart, b, a); seeds[b] is
 *                      the seed of the attempt that succeeded.
 *   restarts           restart = 0 .. GM_CUCKOO_MAX_RESTARTS (so at most
 *                      GM_CUCKOO_MAX_RESTARTS restarts are taken), then
 *                      GM_ERR_HASH.
 *   empty slots        key GM_KEY_EMPTY; value (basic), count and offset
 *                      (multi) 0; compact index = the exclusive prefix sum,
 *                      as a scan over the occupancy flags leaves it.
 *   stats              restarts = restart that succeeded; reseeds = sum over
 *                      buckets of the attempt index that succeeded (forced
 *                      failures included); max_rounds over buckets; all of the
 *                      successful phase-1 attempt only.
 */
#ifndef GM_CUCKOO_CORE_H
#define GM_CUCKOO_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "hash/cuckoo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GM_CUCKOO_BUCKET_SLOTS (3 * GM_CUCKOO_SLOTS) /* 576: most distinct keys a bucket can hold */
#define GM_CUCKOO_SET_BITS 11                          /* distinct-key set: 2048 entries, <= 28% full */
#define GM_CUCKOO_SET_SIZE (1u << GM_CUCKOO_SET_BITS)
#define GM_CUCKOO_NO_LIMIT 0xFFFFFFFFu

/* Phase-1 constants for restart >= 1: the first pair of the hash constants of
 * the seed gm_cuckoo_bucket_seed(seed, restart, 0xFFFFFFFF, 0), so c1 != 0. */
static inline void gm_cuckoo_phase1_consts(uint64_t seed, uint32_t restart, uint32_t *c0,
                                           uint32_t *c1)
{
    if (restart == 0) {
        *c0 = 0;
        *c1 = 0;
        return;
    }
    gm_cuckoo_consts k = gm_cuckoo_hash_consts(gm_cuckoo_bucket_seed(seed, restart, 0xFFFFFFFFu, 0));
    *c0 = k.c[0][0];
    *c1 = k.c[0][1];
}

/* Number of buckets for `items` items (or distinct keys): ceil(items / 409),
 * at least 1 so that an empty table still has a (all-empty) bucket. */
static inline uint32_t gm_cuckoo_num_buckets(uint32_t items)
{
    uint32_t nb = (uint32_t)(((uint64_t)items + GM_CUCKOO_BUCKET_AVG - 1) / GM_CUCKOO_BUCKET_AVG);
    return nb ? nb : 1;
}

/* Per-thread work area of phase 2, about 30 KB, allocated once per build (not
 * per bucket).  Distinct keys are numbered 0..m-1 in order of first
 * appearance in the bucket's (stable) item order. */
typedef struct {
    uint32_t m;                                         /* distinct keys in the bucket */
    uint32_t rounds;                                    /* rounds the successful attempt took */
    uint32_t tab[3][GM_CUCKOO_SLOTS];                   /* slot keys, GM_KEY_EMPTY when empty */
    uint16_t own[3][GM_CUCKOO_SLOTS];                   /* distinct index of the slot's key */
    uint64_t claim[GM_CUCKOO_SLOTS];                    /* (round + 1) << 32 | largest key, this round */
    uint32_t dkey[GM_CUCKOO_BUCKET_SLOTS];              /* distinct keys */
    uint32_t dcnt[GM_CUCKOO_BUCKET_SLOTS];              /* items per distinct key */
    uint32_t dfirst[GM_CUCKOO_BUCKET_SLOTS];            /* first item (bucket-relative) of the key */
    uint32_t cursor[GM_CUCKOO_BUCKET_SLOTS];            /* scratch for the emit callback */
    uint8_t dslot[3][GM_CUCKOO_BUCKET_SLOTS];           /* g_t(key), 0..191 */
    uint16_t list[2][GM_CUCKOO_BUCKET_SLOTS + 1];       /* unplaced keys, this round and next (+1: the
                                                           branch-free append writes one past the end) */
    uint32_t set_key[GM_CUCKOO_SET_SIZE];               /* key -> distinct index, open addressing */
    uint16_t set_idx[GM_CUCKOO_SET_SIZE];
} gm_cuckoo_bucket;

static inline uint32_t gm_cuckoo_set_hash(uint32_t k)
{
    /* murmur3 fmix32: the keys of one bucket are often an arithmetic
     * progression (k mod nb equal), which a plain multiplicative hash can
     * cluster for unlucky nb. */
    k ^= k >> 16;
    k *= 0x85EBCA6Bu;
    k ^= k >> 13;
    k *= 0xC2B2AE35u;
    k ^= k >> 16;
    return k >> (32 - GM_CUCKOO_SET_BITS);
}

/* One finished bucket, as handed to the emit callback. */
typedef struct {
    uint32_t nb, b;
    uint32_t start;            /* first item of the bucket in the phase-1 buffer */
    uint32_t count;            /* items in the bucket */
    const uint32_t *keys;      /* [count] the bucket's items in stable (input) order */
    const uint32_t *vals;      /* [count], NULL for a build without values */
    const uint16_t *item_key;  /* [count] distinct index of each item, NULL unless
                                  gm_cuckoo_core.want_item_key */
} gm_cuckoo_emit_args;

/* Called for each bucket that built, from inside the parallel loop (so it
 * must only write data of bucket b).  w->tab/own/dkey/dcnt/dfirst describe
 * the finished bucket; w->cursor is free scratch.  May be called again for
 * the same bucket by a later restart, which must overwrite everything the
 * earlier call wrote. */
typedef void (*gm_cuckoo_emit_fn)(void *ctx, gm_cuckoo_bucket *w, const gm_cuckoo_emit_args *a);

typedef struct {
    /* in */
    const uint32_t *keys;     /* [n], all != GM_KEY_EMPTY (checked) */
    const uint32_t *vals;     /* [n] or NULL */
    uint32_t n;
    uint32_t nb;              /* buckets, >= 1 */
    uint64_t seed;
    const gm_cuckoo_debug *dbg;  /* may be NULL */
    uint32_t max_items;       /* phase 1: items a bucket may take (basic 512), GM_CUCKOO_NO_LIMIT */
    int reject_duplicates;    /* a repeated key gives GM_ERR_INVALID */
    int want_item_key;        /* fill gm_cuckoo_emit_args.item_key (2 bytes an item) */
    gm_cuckoo_emit_fn emit;   /* may be NULL */
    void *emit_ctx;
    /* out, on GM_OK; the caller owns seeds and keys_out (free()) */
    uint32_t restart, h_c0, h_c1;
    uint32_t *seeds;          /* [nb] */
    uint32_t *keys_out;       /* [3*nb*192] */
    gm_cuckoo_stats stats;
} gm_cuckoo_core;

/* Runs phases 1 and 2.  GM_OK, GM_ERR_INVALID (a key == GM_KEY_EMPTY, or a
 * duplicate with reject_duplicates), GM_ERR_NOMEM, GM_ERR_HASH.  On error
 * nothing stays allocated. */
gm_status gm_cuckoo_core_build(gm_cuckoo_core *c);

/* The build's input fields, the rest of c zeroed: keys, vals, n, nb, seed,
 * dbg, emit and emit_ctx; no phase-1 limit (max_items GM_CUCKOO_NO_LIMIT),
 * duplicates allowed, no item keys.  The table changes what differs. */
void gm_cuckoo_core_init(gm_cuckoo_core *c, const uint32_t *keys, const uint32_t *vals, uint32_t n,
                         uint32_t nb, uint64_t seed, const gm_cuckoo_debug *dbg,
                         gm_cuckoo_emit_fn emit, void *emit_ctx);

/* The fields the three tables of cuckoo.h share, from a core that built:
 * t (gm_cuckoo, gm_multi or gm_compact) takes over c's seeds and keys_out. */
#define GM_CUCKOO_CORE_TAKE(t, c)        \
    do {                                 \
        (t)->nb = (c)->nb;               \
        (t)->restart = (c)->restart;     \
        (t)->h_c0 = (c)->h_c0;           \
        (t)->h_c1 = (c)->h_c1;           \
        (t)->seeds = (c)->seeds;         \
        (t)->keys = (c)->keys_out;       \
        (t)->n = (c)->n;                 \
        (t)->stats = (c)->stats;         \
    } while (0)

/* The start of every table build: GM_ERR_INVALID when t is NULL; else the
 * table (t, size bytes) zeroed, then GM_ERR_INVALID when n > 0 and the
 * input arrays are missing (have_inputs 0); else the sizing of n items of
 * which at most unique_bound are distinct (0 = unknown: n is used):
 * *nb = gm_cuckoo_num_buckets(min(n, bound)), *slots = 3 * nb * 192, and
 * GM_ERR_NOMEM when the slots overflow size_t. */
gm_status gm_cuckoo_table_begin(void *t, size_t size, int have_inputs, uint32_t n,
                                uint32_t unique_bound, uint32_t *nb, size_t *slots);

/* count*size bytes, or NULL when that overflows size_t or malloc fails.
 * count == 0 allocates 1 byte so that NULL always means failure.  free().
 * Large ones as huge pages where the system allows (gm_alloc_large). */
void *gm_cuckoo_alloc(size_t count, size_t size);

/* 3 * nb * 192 slots, 0 when that overflows size_t. */
size_t gm_cuckoo_num_slots(uint32_t nb);

#ifdef __cplusplus
}
#endif
#endif
