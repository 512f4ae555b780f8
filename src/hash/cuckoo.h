/* cuckoo.h: the three hash tables of Alcantara et al. 2009, section 4,
 * built on the CPU with the layout and algorithm of the CUDA versions, so that
 * a GPU table can be checked against the CPU table slot for slot.
 *
 * Build (all three tables):
 *   phase 1  items go to buckets by h(k): first attempt h(k) = k mod nb, a
 *            restart r >= 1 uses h(k) = ((c0 + c1*k) mod p) mod nb, p = GM_CUCKOO_PRIME.
 *            Counts per bucket, prefix sum, scatter (stable: input order is
 *            kept inside a bucket).  A bucket over GM_CUCKOO_BUCKET_MAX items
 *            (basic table) restarts phase 1 with the next h.
 *   phase 2  per bucket, parallel cuckoo hashing in lockstep rounds into three
 *            sub-tables of GM_CUCKOO_SLOTS slots: in round r every unplaced item
 *            writes into sub-table t = r mod 3 at slot g_t(k); when several write
 *            the same slot in one round the LARGEST key wins (an atomicMax claim
 *            on the GPU, so the outcome is deterministic), evicting the occupant;
 *            then every placed item checks its slot and becomes unplaced if its
 *            key is gone.  Equal keys (multi-value, compacting) win together.
 *            g_t(k) = ((c_t0 + c_t1*k) mod p) mod 192.
 *            After GM_CUCKOO_MAX_ROUNDS rounds the bucket is reseeded (next
 *            attempt); after GM_CUCKOO_MAX_RESEEDS attempts phase 1 restarts.
 *            After GM_CUCKOO_MAX_RESTARTS restarts the build fails (GM_ERR_HASH).
 *   layout   slot index = t*nb*192 + b*192 + s: T1 of all buckets, then T2, T3.
 *
 * Every random constant is a pure function of (table seed, restart, bucket,
 * attempt): gm_cuckoo_bucket_seed / gm_cuckoo_hash_consts.  Results do not
 * depend on thread count or item order.
 *
 * Keys are uint32 below GM_KEY_EMPTY (0xFFFFFFFF, the empty-slot sentinel).
 */
#ifndef GM_CUCKOO_H
#define GM_CUCKOO_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The inline hash and probe helpers below are GM_HD (common/common.h):
 * compiled for the device too when included from CUDA code, so the kernels
 * of src/cuda/cuckoo.cu use exactly the functions of the CPU tables. */

#define GM_KEY_EMPTY 0xFFFFFFFFu    /* empty slot / not found */
/* p = 2^32 - 5, the largest 32-bit prime, not the paper's 1900813: every g_t
 * and the seeded h depend on k only through k mod p, so with p = 1900813 keys
 * equal mod p share h, g1, g2, g3 under every seed; 300000 random 32-bit keys
 * hold 40 groups of 4 such keys, which no reseed or restart can place (4 keys,
 * 3 slots), so every phase-1 restart failed.  With p > every key only the
 * keys 0..3 and 2^32-5..2^32-2 pair up (groups of 2, always placeable).
 * c0 + c1*k <= (p-1)(2^32-1) < 2^64: no overflow. */
#define GM_CUCKOO_PRIME 4294967291u
#define GM_CUCKOO_SLOTS 192         /* slots per sub-table per bucket */
#define GM_CUCKOO_BUCKET_MAX 512    /* unique keys a bucket may hold */
#define GM_CUCKOO_BUCKET_AVG 409    /* phase 1 aims at 409 per bucket (80% of 512) */
#define GM_CUCKOO_MAX_ROUNDS 75     /* 25 passes over the three sub-tables */
#define GM_CUCKOO_MAX_RESEEDS 16
#define GM_CUCKOO_MAX_RESTARTS 16

/* The six constants of g1..g3 for one bucket: c[t][0] + c[t][1]*k.
 * c[t][1] is never 0.  Derived by XORing seed with fixed numbers (paper 4.1). */
typedef struct { uint32_t c[3][2]; } gm_cuckoo_consts;

static inline GM_HD gm_cuckoo_consts gm_cuckoo_hash_consts(uint32_t seed)
{
    static const uint32_t fx[6] = {0x2545F491u, 0x9E3779B9u, 0x85EBCA6Bu,
                                   0xC2B2AE35u, 0x27D4EB2Fu, 0x165667B1u};
    gm_cuckoo_consts k;
    for (int t = 0; t < 3; t++) {
        k.c[t][0] = (seed ^ fx[2 * t]) % GM_CUCKOO_PRIME;
        k.c[t][1] = 1u + (seed ^ fx[2 * t + 1]) % (GM_CUCKOO_PRIME - 1u);
    }
    return k;
}

/* x mod GM_CUCKOO_PRIME for any 64-bit x, the same as x % GM_CUCKOO_PRIME but
 * with no 64-bit division: 2^32 = 5 (mod p), so fold the high word twice. */
static inline GM_HD uint32_t gm_cuckoo_mod_p(uint64_t x)
{
    x = (x >> 32) * 5u + (x & 0xFFFFFFFFu);  /* < 6 * 2^32 */
    x = (x >> 32) * 5u + (x & 0xFFFFFFFFu);  /* < 2^32 + 30 */
    return (uint32_t)(x >= GM_CUCKOO_PRIME ? x - GM_CUCKOO_PRIME : x);
}

static inline GM_HD uint32_t gm_cuckoo_g(const gm_cuckoo_consts *k, int t, uint32_t key)
{
    uint64_t x = (uint64_t)k->c[t][0] + (uint64_t)k->c[t][1] * (uint64_t)key;
    return gm_cuckoo_mod_p(x) % GM_CUCKOO_SLOTS;
}

/* 32-bit mix of (table seed, restart, bucket, attempt): the bucket seed. */
static inline GM_HD uint32_t gm_cuckoo_bucket_seed(uint64_t seed, uint32_t restart,
                                                   uint32_t bucket, uint32_t attempt)
{
    return (uint32_t)gm_mix64(seed ^ ((uint64_t)restart << 48) ^ ((uint64_t)attempt << 32) ^ bucket);
}

/* Phase 1 bucket function: restart 0 is k mod nb; later restarts use seeded
 * constants (c0, c1) = derived from gm_cuckoo_bucket_seed(seed, restart, 0xFFFFFFFF, 0). */
static inline GM_HD uint32_t gm_cuckoo_h(uint32_t c0, uint32_t c1, uint32_t restart,
                                         uint32_t nb, uint32_t key)
{
    if (restart == 0)
        return key % nb;
    uint64_t x = (uint64_t)c0 + (uint64_t)c1 * (uint64_t)key;
    return gm_cuckoo_mod_p(x) % nb;
}

/* Build statistics, for tests and benchmarks. */
typedef struct {
    uint32_t restarts;     /* phase-1 restarts taken */
    uint32_t reseeds;      /* bucket reseeds taken, summed over buckets */
    uint32_t max_rounds;   /* most rounds any bucket needed */
    uint32_t unique_keys;
} gm_cuckoo_stats;

/* Test hooks: force failures so the reseed and restart paths are exercised.
 * force_reseeds: every bucket's first N attempts fail; force_restarts: the
 * first N phase-1 attempts report an overfull bucket. */
typedef struct {
    uint32_t force_reseeds;
    uint32_t force_restarts;
} gm_cuckoo_debug;

/* ---- basic table: unique keys -> one value each ---------------------------- */
typedef struct {
    uint32_t nb;          /* buckets */
    uint32_t restart;     /* phase-1 attempt that succeeded (selects h) */
    uint32_t h_c0, h_c1;  /* phase-1 constants for restart > 0 */
    uint32_t *seeds;      /* [nb] bucket seeds (gm_cuckoo_hash_consts input) */
    uint32_t *keys;       /* [3*nb*192] slot keys, GM_KEY_EMPTY when empty */
    uint32_t *vals;       /* [3*nb*192] slot values */
    uint32_t n;           /* items inserted */
    gm_cuckoo_stats stats;
} gm_cuckoo;

/* keys must be unique and != GM_KEY_EMPTY (a duplicate key gives GM_ERR_INVALID).
 * dbg may be NULL.  The caller frees the table with gm_cuckoo_free. */
gm_status gm_cuckoo_build_cpu(gm_cuckoo *t, const uint32_t *keys, const uint32_t *vals,
                                     uint32_t n, uint64_t seed, const gm_cuckoo_debug *dbg);
/* GM_KEY_EMPTY when absent.  At most three probes. */
uint32_t gm_cuckoo_find(const gm_cuckoo *t, uint32_t key);
/* Bulk retrieval, all cores: out[i] = gm_cuckoo_find(t, keys[i]). */
void gm_cuckoo_find_all_cpu(const gm_cuckoo *t, const uint32_t *keys, uint32_t n,
                                   uint32_t *out);
void gm_cuckoo_free(gm_cuckoo *t);

/* ---- multi-value table: key -> (count, offset) into a values array ----------- */
typedef struct {
    uint32_t nb, restart, h_c0, h_c1;
    uint32_t *seeds;      /* [nb] */
    uint32_t *keys;       /* [3*nb*192] */
    uint32_t *counts;     /* [3*nb*192] values of the slot's key */
    uint32_t *offsets;    /* [3*nb*192] first value in values[] */
    uint32_t *values;     /* [n] grouped by key, contiguous per key */
    uint32_t n;
    gm_cuckoo_stats stats;
} gm_multi;

/* Any number of values per key.  unique_bound: an upper bound on the number
 * of distinct keys known to the caller (0 = unknown, n is used); phase 1 sizes
 * nb = ceil(min(n, unique_bound) / 409), which keeps a table of few distinct
 * keys and many values small (the paper sizes by n, its section 7 names the
 * sparse tables that gives).  A bucket that cannot be built restarts phase 1.
 * Values of one key are contiguous; the key's block starts at the bucket's
 * start plus a prefix sum over the bucket's slots in slot order. */
gm_status gm_multi_build_cpu(gm_multi *t, const uint32_t *keys, const uint32_t *vals,
                                    uint32_t n, uint32_t unique_bound, uint64_t seed,
                                    const gm_cuckoo_debug *dbg);
/* Count of values for key (0 when absent); *first points at them. */
static inline uint32_t gm_multi_find(const gm_multi *t, uint32_t key, const uint32_t **first);
void gm_multi_free(gm_multi *t);

/* ---- compacting table: keys (duplicates allowed) -> dense index 0..u-1 ------ */
typedef struct {
    uint32_t nb, restart, h_c0, h_c1;
    uint32_t *seeds;      /* [nb] */
    uint32_t *keys;       /* [3*nb*192] */
    uint32_t *index;      /* [3*nb*192] dense index of the slot's key (exclusive prefix sum of occupancy in slot order) */
    uint32_t *unique;     /* [u] unique[index] = key: the two-way index */
    uint32_t u;           /* unique keys */
    uint32_t n;
    gm_cuckoo_stats stats;
} gm_compact;

gm_status gm_compact_build_cpu(gm_compact *t, const uint32_t *keys, uint32_t n,
                                      uint32_t unique_bound, uint64_t seed,
                                      const gm_cuckoo_debug *dbg);
/* Dense index of key, GM_KEY_EMPTY when absent. */
static inline uint32_t gm_compact_find(const gm_compact *t, uint32_t key);
void gm_compact_free(gm_compact *t);

/* ---- retrieval, inline: read the bucket seed, probe at most three slots ---- */

/* Slot of key in a table of nb buckets, or -1.  Shared by the three tables. */
static inline GM_HD int64_t gm_cuckoo_slot(uint32_t nb, uint32_t restart, uint32_t h_c0,
                                           uint32_t h_c1, const uint32_t *seeds,
                                           const uint32_t *keys, uint32_t key)
{
    if (nb == 0 || key == GM_KEY_EMPTY)
        return -1;
    uint32_t b = gm_cuckoo_h(h_c0, h_c1, restart, nb, key);
    gm_cuckoo_consts k = gm_cuckoo_hash_consts(seeds[b]);
    for (int t = 0; t < 3; t++) {
        int64_t s = (int64_t)t * nb * GM_CUCKOO_SLOTS + (int64_t)b * GM_CUCKOO_SLOTS +
                    gm_cuckoo_g(&k, t, key);
        if (keys[s] == key)
            return s;
    }
    return -1;
}

static inline uint32_t gm_multi_find(const gm_multi *t, uint32_t key, const uint32_t **first)
{
    int64_t s = gm_cuckoo_slot(t->nb, t->restart, t->h_c0, t->h_c1, t->seeds, t->keys, key);
    if (s < 0) {
        *first = NULL;
        return 0;
    }
    *first = t->values + t->offsets[s];
    return t->counts[s];
}

static inline uint32_t gm_compact_find(const gm_compact *t, uint32_t key)
{
    int64_t s = gm_cuckoo_slot(t->nb, t->restart, t->h_c0, t->h_c1, t->seeds, t->keys, key);
    return s < 0 ? GM_KEY_EMPTY : t->index[s];
}

#ifdef __cplusplus
}
#endif
#endif
