/* cuckoo.cu: the three cuckoo tables of cuckoo.h on the GPU, built the way of
 * Alcantara et al. 2009 (sections 3.3 and 4) with the exact rules of the CPU
 * build (src/hash/cuckoo_core.h lists them), so that a device table copied to the
 * host equals the CPU table slot for slot.
 *
 * This file: the build's host side (attempts, allocations, flags); the
 * kernels of phase 1 and phase 2 are in cuckoo_phase1.cuh and
 * cuckoo_phase2.cuh, retrieval and the copies to the host in cuckoo_find.cu.
 *
 * Build, per phase-1 attempt ("restart"):
 *   k_pa_hist, CUB ExclusiveSum, k_pa_scatter, k_pb_bucket
 *                   phase 1 as a two-level partition by bucket with
 *                   block-local counts (see "phase 1" below) instead of the
 *                   paper's global atomicAdd per item (Alg. 1 step 5): the
 *                   items grouped by bucket (key and value interleaved, one
 *                   8-byte item, paper 4.1), start[] of every bucket; raises
 *                   the BAD_KEY and OVERFULL (basic: a bucket over 512 items)
 *                   flags.
 *   k_p2_basic /
 *   k_p2_distinct   one block per bucket, everything in shared memory:
 *                   lockstep rounds, attempts, the write-out of T1|T2|T3
 *                   (basic: (key, value) slots interleaved, one 8-byte store
 *                   a slot, so that retrieval reads one 8-byte slot a probe;
 *                   paper 4.1).
 *   compact only    CUB ExclusiveSum over the occupancy of all slots in
 *                   global slot order (in place in the index array), then
 *                   k_compact_unique: unique[index] = key.
 * The kernels after k_pa_hist read the flag word and do nothing when the
 * attempt already failed, so an attempt costs ONE host round trip (the read
 * of the flags and stats at its end) instead of one per phase.
 *
 * Why the GPU result equals the CPU result although phase 1 orders a
 * bucket's items by atomics (not stably): a bucket's SET of keys does not
 * depend on order, the lockstep rounds depend only on that set (the largest
 * key wins a slot, which is what an atomicMax of key + 1 decides), and the
 * multi-value key blocks are laid out by a prefix over the bucket's slots in
 * slot order.  Only the order of the values within one key may differ.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "hash/cuckoo_core.h"
#include "cuda/cuda_check.cuh"
#include "cuda/gm_cuda.h"

/* ---- launch shapes ----------------------------------------------------------
 * Measured on an H100 (bench_hash, 5M random unique pairs, whole build):
 * phase 2 is issue-bound (ncu: 75% SM throughput), so fewer threads a
 * bucket, each with several keys, win: basic 512 threads x 1 key 0.61 ms,
 * 256 x 2 0.46 ms, 128 x 4 0.44 ms, 64 x 8 0.48 ms; multi-value (5M
 * items, 1 a key) 192 x 3 0.51 ms, 96 x 6 0.53 ms, 64 x 9 0.60 ms.
 * Phase 1: see its section. */
#define GM_P2_BASIC_KEYS 4
#define GM_P2_BASIC_THREADS (GM_CUCKOO_BUCKET_MAX / GM_P2_BASIC_KEYS)
#define GM_P2_DISTINCT_KEYS 3 /* must divide 576: the block scan is K slots a thread */
#define GM_P2_DISTINCT_THREADS (GM_CUCKOO_BUCKET_SLOTS / GM_P2_DISTINCT_KEYS)

/* Flag bits of gm_build_state.flags. */
#define GM_F_BAD_KEY 1u  /* a key == GM_KEY_EMPTY */
#define GM_F_OVERFULL 2u /* phase 1: a bucket over max_items */
#define GM_F_FAIL 4u     /* phase 2: a bucket failed every attempt, or > 576 distinct keys */
#define GM_F_DUP 8u      /* phase 2, basic table: a bucket repeats a key */

/* The per-attempt state on the device, read back once per attempt. */
typedef struct {
    uint32_t flags;
    uint32_t reseeds;    /* sum of the attempt index that succeeded */
    uint32_t max_rounds;
    uint32_t unique;     /* distinct keys, summed over buckets */
} gm_build_state;

/* Distinct-key set of the multi-value and compacting phase 2: 1024 entries
 * for at most 576 keys (more fail the bucket anyway), open addressing; half
 * the CPU's 2048, so that more blocks fit an SM's shared memory (multi
 * build 0.54 -> 0.51 ms). */
#define GM_SET_BITS 10
#define GM_SET_SIZE (1u << GM_SET_BITS)

enum { GM_TAB_BASIC = 0, GM_TAB_MULTI = 1, GM_TAB_COMPACT = 2 };

/* the kernels of the two phases */
#include "cuda/cuckoo_phase1.cuh"
#include "cuda/cuckoo_phase2.cuh"

/* ---- host side -------------------------------------------------------------- */

/* Everything one build allocates: outputs (handed to the table on success)
 * and work buffers (freed at the end).  Stream-ordered allocations from the
 * device's default memory pool: after the first build the pool serves them
 * without a driver call, if its release threshold keeps the memory (see
 * tools/bench/bench_hash.cu); cudaMalloc and cudaFree would synchronize the
 * device on every build. */
typedef struct {
    cudaStream_t stream;
    int kind;
    const uint32_t *d_in_keys, *d_in_vals;
    uint32_t n, nb;
    size_t slots;
    uint64_t seed;
    gm_cuckoo_debug dbg;
    /* outputs */
    uint32_t *seeds, *keys, *vals, *counts_out, *offsets, *values, *unique;
    uint2 *kv; /* basic: the interleaved (key, value) slots; keys, vals unused */
    /* work: one allocation (one pool call instead of six), carved below */
    uint8_t *work;
    uint32_t *hist;    /* [ns*ntiles] phase-1 counts per (super-bucket, tile), then places */
    uint32_t *start;   /* [nb+1] */
    uint2 *skv, *tkv;  /* [n] basic, multi: items by bucket; by super-bucket */
    uint32_t *sk, *tk; /* [n] compact: keys by bucket; by super-bucket */
    gm_build_state *state;
    uint8_t *temp;     /* CUB */
    size_t temp_bytes;
    /* result */
    uint32_t restart, h_c0, h_c1, u;
    gm_cuckoo_stats stats;
} gm_build;

static gm_status gm_dev_alloc(void **p, size_t count, size_t size, cudaStream_t stream)
{
    *p = NULL;
    if (size != 0 && count > SIZE_MAX / size)
        return GM_ERR_NOMEM;
    size_t bytes = count * size;
    GM_CUDA_CHECK(gm_cuda_malloc_async(p, bytes ? bytes : 1, stream));
    return GM_OK;
}

#define GM_ALLOC(ptr, count)                                                              \
    do {                                                                                  \
        gm_status a_st_ = gm_dev_alloc((void **)&(ptr), (count), sizeof *(ptr), c->stream); \
        if (a_st_ != GM_OK)                                                               \
            return a_st_;                                                                 \
    } while (0)

static void gm_dev_release(void **p, cudaStream_t stream)
{
    if (*p) {
        /* best effort on an error path: the first error is what counts */
        if (cudaFreeAsync(*p, stream) != cudaSuccess)
            (void)cudaGetLastError();
        *p = NULL;
    }
}

static void gm_build_free_work(gm_build *c)
{
    gm_dev_release((void **)&c->work, c->stream);
    c->hist = c->start = c->sk = c->tk = NULL;
    c->skv = c->tkv = NULL;
    c->state = NULL;
    c->temp = NULL;
}

/* Bytes rounded up to 256 (the alignment cudaMalloc gives). */
static size_t gm_align256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

static void gm_build_free_all(gm_build *c)
{
    gm_build_free_work(c);
    gm_dev_release((void **)&c->seeds, c->stream);
    gm_dev_release((void **)&c->kv, c->stream);
    gm_dev_release((void **)&c->keys, c->stream);
    gm_dev_release((void **)&c->vals, c->stream);
    gm_dev_release((void **)&c->counts_out, c->stream);
    gm_dev_release((void **)&c->offsets, c->stream);
    gm_dev_release((void **)&c->values, c->stream);
    gm_dev_release((void **)&c->unique, c->stream);
}

/* Phase 1's shape: super-buckets of 2^shift buckets, at most GM_PA_BINS
 * of them; tiles of GM_PA_TILE items. */
typedef struct {
    gm_p1_hash ph;
    uint32_t ns, ntiles;
    size_t nhist;     /* ns x ntiles counts */
    size_t pb_shared; /* phase 1b's shared memory, bytes */
} gm_build_shape;

/* The outputs and the work area of c (state | hist | start | items by
 * super-bucket | items by bucket | CUB temp, each part 256-aligned), and
 * phase 1's shape in *sh. */
static gm_status gm_build_alloc(gm_build *c, gm_build_shape *sh)
{
    const uint32_t n = c->n, nb = c->nb;
    const int kind = c->kind;
    cudaStream_t stream = c->stream;

    GM_ALLOC(c->seeds, nb);
    if (kind == GM_TAB_BASIC)
        GM_ALLOC(c->kv, c->slots);
    else
        GM_ALLOC(c->keys, c->slots);
    if (kind == GM_TAB_COMPACT)
        GM_ALLOC(c->vals, c->slots);
    if (kind == GM_TAB_MULTI) {
        GM_ALLOC(c->counts_out, c->slots);
        GM_ALLOC(c->offsets, c->slots);
        GM_ALLOC(c->values, n);
    }
    gm_p1_hash *ph = &sh->ph;
    ph->nb = nb;
    ph->shift = 0;
    while (((uint64_t)nb + (1u << ph->shift) - 1) >> ph->shift > GM_PA_BINS)
        ph->shift++; /* nb < 2^32: at most 23 steps */
    sh->ns = (uint32_t)(((uint64_t)nb + (1u << ph->shift) - 1) >> ph->shift);
    sh->ntiles = (uint32_t)(((uint64_t)n + GM_PA_TILE - 1) / GM_PA_TILE);
    sh->nhist = (size_t)sh->ns * sh->ntiles;
    sh->pb_shared = ((size_t)1 << ph->shift) * sizeof(uint32_t);
    if (sh->pb_shared > 48 * 1024) { /* only for some ten million buckets */
        static int done_t[GM_SMEM_DEVICES], done_f[GM_SMEM_DEVICES];
        int max_smem = 0;
        GM_CUDA_CHECK(gm_cuda_smem_optin(k_pb_bucket<true>, done_t, &max_smem));
        GM_CUDA_CHECK(gm_cuda_smem_optin(k_pb_bucket<false>, done_f, &max_smem));
    }
    /* Sizes: n, nb < 2^32, so no part overflows a 64-bit size_t. */
    size_t t1 = 0, t2 = 0;
    GM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, t1, (uint32_t *)NULL,
                                                sh->nhist ? sh->nhist : 1, stream));
    if (kind == GM_TAB_COMPACT)
        GM_CUDA_CHECK(
            cub::DeviceScan::ExclusiveSum(NULL, t2, (uint32_t *)NULL, c->slots, stream));
    c->temp_bytes = t1 > t2 ? t1 : t2;
    const size_t b_state = gm_align256(sizeof(gm_build_state));
    const size_t b_hist = gm_align256(sh->nhist * sizeof(uint32_t));
    const size_t b_start = gm_align256(((size_t)nb + 1) * sizeof(uint32_t));
    const size_t b_items = gm_align256((size_t)n * (kind == GM_TAB_COMPACT ? 4 : 8));
    const size_t b_temp = gm_align256(c->temp_bytes);
    GM_ALLOC(c->work, b_state + b_hist + b_start + 2 * b_items + b_temp);
    uint8_t *w = c->work;
    c->state = (gm_build_state *)w;
    c->hist = (uint32_t *)(w += b_state);
    c->start = (uint32_t *)(w += b_hist);
    w += b_start;
    if (kind == GM_TAB_COMPACT) {
        c->tk = (uint32_t *)w;
        c->sk = (uint32_t *)(w + b_items);
    } else {
        c->tkv = (uint2 *)w;
        c->skv = (uint2 *)(w + b_items);
    }
    c->temp = w + 2 * b_items;
    return GM_OK;
}

/* One attempt's launches on c's stream (no wait): phase 1 (count, scan,
 * scatter into buckets) and phase 2 (each bucket's cuckoo hashing), the
 * outcome in c->state.  forced: a restart the tests force, which still
 * counts (and checks the keys), then reports an overfull bucket, as on the
 * CPU. */
static gm_status gm_build_attempt(gm_build *c, const gm_build_shape *sh, uint32_t restart,
                                  bool forced)
{
    const uint32_t n = c->n, nb = c->nb;
    const int kind = c->kind;
    cudaStream_t stream = c->stream;
    const gm_p1_hash ph = sh->ph;
    const uint32_t ns = sh->ns, ntiles = sh->ntiles;
    const uint32_t max_items = kind == GM_TAB_BASIC ? GM_CUCKOO_BUCKET_MAX : GM_CUCKOO_NO_LIMIT;
    const uint32_t force_reseeds = c->dbg.force_reseeds;
    const uint32_t first_attempt =
        force_reseeds < GM_CUCKOO_MAX_RESEEDS ? force_reseeds : GM_CUCKOO_MAX_RESEEDS;
    GM_CUDA_CHECK(cudaMemsetAsync(c->state, 0, sizeof *c->state, stream));
    if (n > 0) {
        k_pa_hist<<<ntiles, GM_PA_THREADS, 0, stream>>>(c->d_in_keys, n, ph, ns, ntiles, c->hist,
                                                        c->state);
        GM_CUDA_CHECK_LAUNCH();
    }
    if (forced)
        return GM_OK;
    if (n == 0) {
        GM_CUDA_CHECK(cudaMemsetAsync(c->start, 0, ((size_t)nb + 1) * sizeof *c->start, stream));
    } else {
        GM_CUDA_CHECK(
            cub::DeviceScan::ExclusiveSum(c->temp, c->temp_bytes, c->hist, sh->nhist, stream));
        if (kind == GM_TAB_COMPACT) {
            k_pa_scatter<false><<<ntiles, GM_PA_THREADS, 0, stream>>>(
                c->d_in_keys, NULL, n, ph, ntiles, c->hist, c->state, c->tk);
            GM_CUDA_CHECK_LAUNCH();
            k_pb_bucket<false><<<ns, GM_PB_THREADS, sh->pb_shared, stream>>>(
                c->tk, n, ph, ns, ntiles, c->hist, max_items, c->state, c->start, c->sk);
        } else {
            k_pa_scatter<true><<<ntiles, GM_PA_THREADS, 0, stream>>>(
                c->d_in_keys, c->d_in_vals, n, ph, ntiles, c->hist, c->state, c->tkv);
            GM_CUDA_CHECK_LAUNCH();
            k_pb_bucket<true><<<ns, GM_PB_THREADS, sh->pb_shared, stream>>>(
                c->tkv, n, ph, ns, ntiles, c->hist, max_items, c->state, c->start, c->skv);
        }
        GM_CUDA_CHECK_LAUNCH();
    }
    if (kind == GM_TAB_BASIC)
        k_p2_basic<<<nb, GM_P2_BASIC_THREADS, 0, stream>>>(c->skv, c->start, nb, c->seed, restart,
                                                           first_attempt, c->state, c->seeds,
                                                           c->kv);
    else if (kind == GM_TAB_MULTI)
        k_p2_distinct<true><<<nb, GM_P2_DISTINCT_THREADS, 0, stream>>>(
            c->skv, NULL, c->start, nb, c->seed, restart, first_attempt, c->state, c->seeds,
            c->keys, c->counts_out, c->offsets, c->values, NULL);
    else
        k_p2_distinct<false><<<nb, GM_P2_DISTINCT_THREADS, 0, stream>>>(
            NULL, c->sk, c->start, nb, c->seed, restart, first_attempt, c->state, c->seeds,
            c->keys, NULL, NULL, NULL, c->vals);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}

/* The compacting table's dense indices: an exclusive scan of the occupancy
 * (in c->vals) over all slots in global slot order, in place, and the
 * unique keys in index order. */
static gm_status gm_build_compact(gm_build *c)
{
    cudaStream_t stream = c->stream;
    GM_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(c->temp, c->temp_bytes, c->vals, c->slots, stream));
    GM_ALLOC(c->unique, c->u);
    int dev = 0, sms = 0;
    GM_CUDA_CHECK(cudaGetDevice(&dev));
    GM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    size_t blocks = (c->slots + 255) / 256, cap = (size_t)sms * 16;
    k_compact_unique<<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, stream>>>(
        c->keys, c->vals, c->slots, c->unique);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}

/* The restart loop.  GM_OK with c's outputs filled, or an error (the caller
 * frees c). */
static gm_status gm_build_run(gm_build *c)
{
    gm_build_shape sh;
    gm_status st = gm_build_alloc(c, &sh);
    if (st != GM_OK)
        return st;
    for (uint32_t restart = 0; restart <= GM_CUCKOO_MAX_RESTARTS; restart++) {
        uint32_t h_c0, h_c1;
        gm_cuckoo_phase1_consts(c->seed, restart, &h_c0, &h_c1);
        sh.ph.restart = restart;
        sh.ph.c0 = h_c0;
        sh.ph.c1 = h_c1;
        const bool forced = restart < c->dbg.force_restarts;
        if ((st = gm_build_attempt(c, &sh, restart, forced)) != GM_OK)
            return st;
        gm_build_state hs;
        GM_CUDA_CHECK(
            cudaMemcpyAsync(&hs, c->state, sizeof hs, cudaMemcpyDeviceToHost, c->stream));
        GM_CUDA_CHECK(gm_cuda_stream_wait(c->stream));
        if (hs.flags & (GM_F_BAD_KEY | GM_F_DUP))
            return GM_ERR_INVALID;
        if (forced || (hs.flags & (GM_F_OVERFULL | GM_F_FAIL)))
            continue;
        c->restart = restart;
        c->h_c0 = h_c0;
        c->h_c1 = h_c1;
        c->stats.restarts = restart;
        c->stats.reseeds = hs.reseeds;
        c->stats.max_rounds = hs.max_rounds;
        c->stats.unique_keys = hs.unique;
        c->u = hs.unique;
        return c->kind == GM_TAB_COMPACT ? gm_build_compact(c) : GM_OK;
    }
    return GM_ERR_HASH;
}

/* Error path of the basic table only: does keys[] repeat a key?  (Many copies
 * of one key overfill its bucket under every h, so phase 2 never sees them:
 * GM_ERR_INVALID, not GM_ERR_HASH, as on the CPU.)  *dup = 1 yes, 0 no. */
static int gm_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static gm_status gm_dev_has_duplicate(const uint32_t *d_keys, uint32_t n, int *dup)
{
    *dup = 0;
    uint32_t *h = (uint32_t *)malloc(((size_t)n ? n : 1) * sizeof *h);
    if (!h)
        return GM_ERR_NOMEM;
    cudaError_t e = cudaMemcpy(h, d_keys, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        gm_cuda_record_error(e, "cudaMemcpy(keys)", __func__, __FILE__, __LINE__);
        free(h);
        return e == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE;
    }
    qsort(h, n, sizeof *h, gm_cmp_u32);
    for (uint32_t i = 1; i < n && !*dup; i++)
        *dup = h[i] == h[i - 1];
    free(h);
    return GM_OK;
}

/* The three builds in one: validates, runs, fills t or frees everything. */
static gm_status gm_build_table(int kind, gm_cuckoo_dev *t, const uint32_t *d_keys,
                                const uint32_t *d_vals, uint32_t n, uint32_t nb, uint64_t seed,
                                const gm_cuckoo_debug *dbg, cudaStream_t stream)
{
    gm_build c;
    memset(&c, 0, sizeof c);
    c.stream = stream;
    c.kind = kind;
    c.d_in_keys = d_keys;
    c.d_in_vals = d_vals;
    c.n = n;
    c.nb = nb;
    c.seed = seed;
    if (dbg)
        c.dbg = *dbg;
    c.slots = (size_t)nb * GM_CUCKOO_BUCKET_SLOTS; /* nb < 2^32 / 409: no overflow in 64 bits */

    gm_status st = gm_build_run(&c);
    if (st == GM_OK) {
        gm_build_free_work(&c);
        /* The build synchronizes before returning (gm_cuda.h): the basic and
         * multi tables were complete at the read of the flags, and only the
         * (stream-ordered) frees came after; the compacting build still has
         * its scan and unique[] to finish. */
        cudaError_t e = kind == GM_TAB_COMPACT ? gm_cuda_stream_wait(stream) : cudaSuccess;
        if (e != cudaSuccess) {
            gm_cuda_record_error(e, "gm_cuda_stream_wait(stream)", __func__, __FILE__,
                                 __LINE__);
            st = e == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE;
        }
    }
    if (st != GM_OK) {
        gm_build_free_all(&c);
        (void)gm_cuda_stream_wait(stream);
        (void)cudaGetLastError();
        if (st == GM_ERR_HASH && kind == GM_TAB_BASIC) {
            int dup = 0;
            gm_status d = gm_dev_has_duplicate(d_keys, n, &dup);
            st = d != GM_OK ? d : (dup ? GM_ERR_INVALID : GM_ERR_HASH);
        }
        return st;
    }
    t->nb = nb;
    t->restart = c.restart;
    t->h_c0 = c.h_c0;
    t->h_c1 = c.h_c1;
    t->n = n;
    t->d_seeds = c.seeds;
    t->d_slots = c.kv;
    t->d_keys = c.keys;
    t->d_vals = c.vals;
    t->d_counts = c.counts_out;
    t->d_offsets = c.offsets;
    t->d_values = c.values;
    t->d_unique = c.unique;
    t->u = kind == GM_TAB_COMPACT ? c.u : 0;
    t->stats = c.stats;
    return GM_OK;
}

extern "C" gm_status gm_cuckoo_build_cuda(gm_cuckoo_dev *t, const uint32_t *d_keys,
                                          const uint32_t *d_vals, uint32_t n, uint64_t seed,
                                          const gm_cuckoo_debug *dbg, cudaStream_t stream)
{
    if (!t)
        return GM_ERR_INVALID;
    memset(t, 0, sizeof *t);
    if (n > 0 && (!d_keys || !d_vals))
        return GM_ERR_INVALID;
    return gm_build_table(GM_TAB_BASIC, t, d_keys, d_vals, n, gm_cuckoo_num_buckets(n), seed,
                          dbg, stream);
}

extern "C" gm_status gm_multi_build_cuda(gm_cuckoo_dev *t, const uint32_t *d_keys,
                                         const uint32_t *d_vals, uint32_t n,
                                         uint32_t unique_bound, uint64_t seed,
                                         const gm_cuckoo_debug *dbg, cudaStream_t stream)
{
    if (!t)
        return GM_ERR_INVALID;
    memset(t, 0, sizeof *t);
    if (n > 0 && (!d_keys || !d_vals))
        return GM_ERR_INVALID;
    uint32_t sized = (unique_bound == 0 || unique_bound > n) ? n : unique_bound;
    return gm_build_table(GM_TAB_MULTI, t, d_keys, d_vals, n, gm_cuckoo_num_buckets(sized), seed,
                          dbg, stream);
}

extern "C" gm_status gm_compact_build_cuda(gm_cuckoo_dev *t, const uint32_t *d_keys, uint32_t n,
                                           uint32_t unique_bound, uint64_t seed,
                                           const gm_cuckoo_debug *dbg, cudaStream_t stream)
{
    if (!t)
        return GM_ERR_INVALID;
    memset(t, 0, sizeof *t);
    if (n > 0 && !d_keys)
        return GM_ERR_INVALID;
    uint32_t sized = (unique_bound == 0 || unique_bound > n) ? n : unique_bound;
    return gm_build_table(GM_TAB_COMPACT, t, d_keys, NULL, n, gm_cuckoo_num_buckets(sized), seed,
                          dbg, stream);
}
