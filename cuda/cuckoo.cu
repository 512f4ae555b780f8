/* cuckoo.cu: the three cuckoo tables of cuckoo.h on the GPU, built the way of
 * Alcantara et al. 2009 (sections 3.3 and 4) with the exact rules of the CPU
 * build (src/cuckoo_core.h lists them), so that a device table copied to the
 * host equals the CPU table slot for slot.
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

#include "cuckoo_core.h"
#include "cuda_check.cuh"
#include "gm_cuda.h"

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
#define GM_FIND_THREADS 256

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

/* ---- phase 1: a two-level partition by bucket -------------------------------
 *
 * The paper's phase 1 (a global atomicAdd per item on its bucket's counter,
 * then a scatter of every item to start[b] + its offset) cost 92 us of
 * L2 atomics and 150 us of random 8-byte writes for 5M items on an H100.
 * Here the buckets are grouped into at most GM_PA_BINS "super-buckets" of
 * G = 2^shift consecutive buckets (G the smallest power of two that gives
 * no more than GM_PA_BINS of them), and the items move twice, both times
 * with block-local (shared-memory) counting, as a radix sort's pass does:
 *   k_pa_hist      a tile of GM_PA_TILE items a block: the tile's count per
 *                  super-bucket in shared memory, written to
 *                  hist[sb * ntiles + tile] (every entry, zeros too).  Raises
 *                  BAD_KEY.
 *   CUB ExclusiveSum over hist (in place): the place of (super-bucket, tile)
 *                  in the super-bucket order.
 *   k_pa_scatter   the same tile again: ranks by shared atomics, the tile
 *                  sorted by super-bucket in shared memory, then written out
 *                  run by run (consecutive threads, consecutive addresses).
 *   k_pb_bucket    one block per super-bucket (its items are contiguous, at
 *                  most a few hundred KB, L2-resident): counts per bucket in
 *                  shared memory, start[b] by a block scan (OVERFULL: a
 *                  bucket over max_items), then every item to its bucket's
 *                  area by a shared atomicAdd.
 * Items of a bucket end in an arbitrary order (as with the paper's atomics;
 * phase 2's result does not depend on it).
 * H100, 5M random pairs (ncu, one build): k_pa_hist 16 us, scan 9 us,
 * k_pa_scatter 47 us, k_pb_bucket 78 us (shared-atomic and scattered-store
 * bound: G = 32 counters a block), against the paper's k_p1_count 94 us +
 * scan 7 us + k_p1_scatter 152 us. */
#define GM_PA_THREADS 256
#define GM_PA_ITEMS 16
#define GM_PA_TILE (GM_PA_THREADS * GM_PA_ITEMS)
#define GM_PA_BINS 512 /* most super-buckets */
#define GM_PB_THREADS 512
#define GM_PB_ITEMS 8

/* The super-bucket of bucket b is b >> shift.  The bucket of a key, as
 * gm_cuckoo_h, with its constants bundled. */
typedef struct {
    uint32_t nb, restart, c0, c1, shift;
} gm_p1_hash;

static __device__ __forceinline__ uint32_t gm_p1_bucket(const gm_p1_hash &h, uint32_t k)
{
    return gm_cuckoo_h(h.c0, h.c1, h.restart, h.nb, k);
}

/* The start of a tile's kernel: the block's bin counters zeroed (barrier
 * included); returns the thread's first item. */
static __device__ __forceinline__ size_t gm_pa_begin(uint32_t *s_cnt)
{
    for (uint32_t j = threadIdx.x; j < GM_PA_BINS; j += GM_PA_THREADS)
        s_cnt[j] = 0u;
    __syncthreads();
    return (size_t)blockIdx.x * GM_PA_TILE + threadIdx.x;
}

static __global__ void __launch_bounds__(GM_PA_THREADS)
    k_pa_hist(const uint32_t *__restrict__ keys, uint32_t n, gm_p1_hash h, uint32_t ns,
              uint32_t ntiles, uint32_t *__restrict__ hist, gm_build_state *__restrict__ st)
{
    __shared__ uint32_t s_cnt[GM_PA_BINS];
    const uint32_t tid = threadIdx.x, tile = blockIdx.x;
    const size_t base = gm_pa_begin(s_cnt);
    uint32_t k[GM_PA_ITEMS];
#pragma unroll
    for (int q = 0; q < GM_PA_ITEMS; q++) {
        const size_t i = base + (size_t)q * GM_PA_THREADS;
        k[q] = i < n ? keys[i] : 0u;
    }
    bool bad = false;
#pragma unroll
    for (int q = 0; q < GM_PA_ITEMS; q++) {
        if (base + (size_t)q * GM_PA_THREADS < n) {
            bad |= k[q] == GM_KEY_EMPTY;
            atomicAdd(&s_cnt[gm_p1_bucket(h, k[q]) >> h.shift], 1u);
        }
    }
    __syncthreads();
    for (uint32_t j = tid; j < ns; j += GM_PA_THREADS)
        hist[(size_t)j * ntiles + tile] = s_cnt[j];
    if (bad)
        atomicOr(&st->flags, GM_F_BAD_KEY);
}

/* An item of phase 1: (key, value) or the key alone. */
template <bool VALS> struct gm_p1_item {
    typedef uint32_t type;
};
template <> struct gm_p1_item<true> {
    typedef uint2 type;
};

static __device__ __forceinline__ uint32_t gm_item_key(uint32_t it) { return it; }
static __device__ __forceinline__ uint32_t gm_item_key(uint2 it) { return it.x; }

template <bool VALS>
static __global__ void __launch_bounds__(GM_PA_THREADS)
    k_pa_scatter(const uint32_t *__restrict__ keys, const uint32_t *__restrict__ vals, uint32_t n,
                 gm_p1_hash h, uint32_t ntiles, const uint32_t *__restrict__ hist,
                 const gm_build_state *__restrict__ st,
                 typename gm_p1_item<VALS>::type *__restrict__ out)
{
    typedef typename gm_p1_item<VALS>::type item_t;
    constexpr int BPT = GM_PA_BINS / GM_PA_THREADS; /* bins a thread in the scan */
    static_assert(BPT * GM_PA_THREADS == GM_PA_BINS, "bins: a multiple of the threads");
    typedef cub::BlockScan<uint32_t, GM_PA_THREADS> scan_t;
    __shared__ item_t s_item[GM_PA_TILE];
    __shared__ uint16_t s_bin[GM_PA_TILE];
    __shared__ uint32_t s_cnt[GM_PA_BINS]; /* counts, then the tile's start a bin */
    __shared__ uint32_t s_base[GM_PA_BINS]; /* global place - tile place, a bin */
    __shared__ typename scan_t::TempStorage s_scan;
    if (st->flags & GM_F_BAD_KEY)
        return; /* set by k_pa_hist, block-uniform */
    const uint32_t tid = threadIdx.x, tile = blockIdx.x;
    const size_t base = gm_pa_begin(s_cnt);
    item_t it[GM_PA_ITEMS];
    uint32_t bin[GM_PA_ITEMS], rank[GM_PA_ITEMS];
#pragma unroll
    for (int q = 0; q < GM_PA_ITEMS; q++) {
        const size_t i = base + (size_t)q * GM_PA_THREADS;
        if constexpr (VALS)
            it[q] = i < n ? make_uint2(keys[i], vals[i]) : make_uint2(0u, 0u);
        else
            it[q] = i < n ? keys[i] : 0u;
    }
#pragma unroll
    for (int q = 0; q < GM_PA_ITEMS; q++) {
        if (base + (size_t)q * GM_PA_THREADS < n) {
            bin[q] = gm_p1_bucket(h, gm_item_key(it[q])) >> h.shift;
            rank[q] = atomicAdd(&s_cnt[bin[q]], 1u);
        }
    }
    __syncthreads();
    uint32_t c[BPT], ex[BPT];
#pragma unroll
    for (int x = 0; x < BPT; x++)
        c[x] = s_cnt[tid * BPT + x];
    scan_t(s_scan).ExclusiveSum(c, ex);
#pragma unroll
    for (int x = 0; x < BPT; x++) {
        const uint32_t j = tid * BPT + x;
        /* the bins past ns have no items: their base is never read */
        s_base[j] = c[x] ? hist[(size_t)j * ntiles + tile] - ex[x] : 0u;
        s_cnt[j] = ex[x]; /* this thread read it above */
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < GM_PA_ITEMS; q++) {
        if (base + (size_t)q * GM_PA_THREADS < n) {
            const uint32_t p = s_cnt[bin[q]] + rank[q];
            s_item[p] = it[q];
            s_bin[p] = (uint16_t)bin[q];
        }
    }
    __syncthreads();
    const size_t t0 = (size_t)tile * GM_PA_TILE;
    const uint32_t m = n - t0 < GM_PA_TILE ? (uint32_t)(n - t0) : GM_PA_TILE;
    for (uint32_t j = tid; j < m; j += GM_PA_THREADS)
        out[s_base[s_bin[j]] + j] = s_item[j];
}

/* One block per super-bucket sb: items in[lo..hi) (lo = hist[sb * ntiles],
 * hi the next super-bucket's lo or n), buckets b0 = sb << shift .. b0 + g.
 * Dynamic shared memory: G counters. */
template <bool VALS>
static __global__ void __launch_bounds__(GM_PB_THREADS)
    k_pb_bucket(const typename gm_p1_item<VALS>::type *__restrict__ in, uint32_t n, gm_p1_hash h,
                uint32_t ns, uint32_t ntiles, const uint32_t *__restrict__ hist,
                uint32_t max_items, gm_build_state *__restrict__ st, uint32_t *__restrict__ start,
                typename gm_p1_item<VALS>::type *__restrict__ out)
{
    typedef typename gm_p1_item<VALS>::type item_t;
    typedef cub::BlockScan<uint32_t, GM_PB_THREADS> scan_t;
    extern __shared__ uint32_t s_cur[]; /* [G] counts, then cursors */
    __shared__ typename scan_t::TempStorage s_scan;
    if (st->flags & GM_F_BAD_KEY)
        return; /* block-uniform, see k_pa_scatter */
    const uint32_t tid = threadIdx.x, sb = blockIdx.x;
    const uint32_t lo = hist[(size_t)sb * ntiles];
    const uint32_t hi = sb + 1 < ns ? hist[(size_t)(sb + 1) * ntiles] : n;
    const uint32_t b0 = sb << h.shift;
    const uint32_t g = min(1u << h.shift, h.nb - b0);
    for (uint32_t j = tid; j < g; j += GM_PB_THREADS)
        s_cur[j] = 0u;
    __syncthreads();
    /* GM_PB_ITEMS loads in flight a thread before their use (5M: 83 -> 78
     * us).  A warp-aggregated rank (__match_any_sync, one shared atomicAdd
     * per bucket and warp, as the paper's phase 1 had) was slower: 122 us. */
    for (size_t j0 = lo + tid; j0 < hi; j0 += GM_PB_THREADS * GM_PB_ITEMS) {
        uint32_t k[GM_PB_ITEMS];
#pragma unroll
        for (int u = 0; u < GM_PB_ITEMS; u++) {
            const size_t j = j0 + (size_t)u * GM_PB_THREADS;
            k[u] = j < hi ? gm_item_key(in[j]) : 0u;
        }
#pragma unroll
        for (int u = 0; u < GM_PB_ITEMS; u++)
            if (j0 + (size_t)u * GM_PB_THREADS < hi)
                atomicAdd(&s_cur[gm_p1_bucket(h, k[u]) - b0], 1u);
    }
    __syncthreads();
    /* start[b0 + x] = lo + the exclusive sum, GM_PB_THREADS buckets a step */
    uint32_t run = lo;
    bool over = false;
    for (uint32_t c0 = 0; c0 < g; c0 += GM_PB_THREADS) {
        const uint32_t j = c0 + tid;
        const uint32_t c = j < g ? s_cur[j] : 0u;
        uint32_t ex, total;
        scan_t(s_scan).ExclusiveSum(c, ex, total);
        over |= c > max_items;
        if (j < g) {
            start[b0 + j] = run + ex;
            s_cur[j] = run + ex; /* this thread read it above */
        }
        run += total;
        __syncthreads(); /* s_scan is used again */
    }
    if (sb + 1 == ns && tid == 0)
        start[h.nb] = n;
    if (over)
        atomicOr(&st->flags, GM_F_OVERFULL);
    for (size_t j0 = lo + tid; j0 < hi; j0 += GM_PB_THREADS * GM_PB_ITEMS) {
        item_t it[GM_PB_ITEMS];
#pragma unroll
        for (int u = 0; u < GM_PB_ITEMS; u++) {
            const size_t j = j0 + (size_t)u * GM_PB_THREADS;
            if (j < hi)
                it[u] = in[j];
        }
#pragma unroll
        for (int u = 0; u < GM_PB_ITEMS; u++)
            if (j0 + (size_t)u * GM_PB_THREADS < hi)
                out[atomicAdd(&s_cur[gm_p1_bucket(h, gm_item_key(it[u])) - b0], 1u)] = it[u];
    }
}

/* ---- phase 2: one attempt of lockstep parallel cuckoo hashing ---------------
 *
 * The CPU's round: in round r every unplaced key writes sub-table
 * t = r mod 3 at g_t(k); per slot the largest key wins (an atomicMax of
 * key + 1 in a claim array; 0 = no claim); the winner replaces whatever
 * occupies the slot; losers and evicted occupants are the unplaced keys of
 * round r + 1.
 *
 * A key is "held" by a thread while it is unplaced.  A winner takes the
 * occupant it evicts (read from s_own, the slot -> key index table, in the
 * same step it writes its own index there), a loser keeps its key, so a
 * thread never holds more keys than it started with and no placed key has
 * to re-check its slot (the CPU core's formulation; the paper's, where
 * every key re-reads its slot after each write step, has the same outcome).  The number
 * of unplaced keys never grows, so the rounds run at three levels:
 *   block   while more than GM_WARP_ITEMS keys may be held:
 *             B(r)    a held key whose claim won writes its index to
 *                     T_t[g_t(k)]; the thread now holds the evicted occupant
 *                     (or nothing); the claim array of round r+1 (the other
 *                     of two) is cleared
 *             --- barrier
 *             A(r+1)  every held key claims its slot of round r+1
 *             --- barrier (__syncthreads_count: threads still holding)
 *   warp    the held keys move to warp 0 (a few a lane), which repeats B and
 *           A with __syncwarp for barriers while more than 32 are held,
 *   lanes   then with one key a lane: the lanes writing one slot are found
 *           with __match_any_sync and their largest key with
 *           __reduce_max_sync, no shared claims at all.
 * Most of the up to 75 rounds have a handful of keys (5M random keys: 16
 * rounds a bucket on average, 7 of them with more than 32 keys), and they
 * cost no block barriers.  H100, 5M random pairs, whole build: 0.84 ms for
 * the first version (a thread per key re-checking its slot every round, 3
 * barriers a round, 512 threads), 0.47 ms with held keys and warp mode,
 * 0.43 ms as it is now.
 * Hazards: claim[r mod 2] is cleared in B(r-1), claimed in A(r), read in
 * B(r), cleared again in B(r+1): each step separated by a barrier (a
 * __syncwarp in warp mode, where only warp 0 touches them); s_own[t][s] is
 * read and written in B(r) by the one winner of that slot only; s_own and
 * the hand-over list are ordered by __syncwarp between rounds.  Every
 * barrier is reached by every thread: loop bounds and exits are
 * block-uniform (values from a barrier's count or from shared memory read
 * after a barrier).  Checked by compute-sanitizer racecheck on the tests.
 * Returns the rounds taken (0: no key), or -1 after GM_CUCKOO_MAX_ROUNDS.
 *
 * Keys must be distinct (the callers dedupe): equal keys would both win a
 * slot. */
#define GM_OWN_EMPTY 0xFFFFu
/* Block mode ends when at most this many keys may be held (a multiple of
 * 32): warp 0 then runs the rounds alone, several keys a lane.  32, 64,
 * 128, 256: within 2% of each other (basic build 0.43-0.44 ms). */
#define GM_WARP_ITEMS 64

typedef struct {
    uint16_t own[GM_CUCKOO_BUCKET_SLOTS];         /* slot (t*192 + s) -> key index */
    uint8_t g[3][GM_CUCKOO_BUCKET_SLOTS];         /* key index -> slot in T_t */
    uint32_t claim[2][GM_CUCKOO_SLOTS];           /* round r uses claim[r & 1] */
    uint32_t list[GM_WARP_ITEMS];                 /* keys handed to warp 0 */
    uint32_t nlist;
    int result;
} gm_p2_shared;

template <int T, int K>
static __device__ int gm_p2_attempt(uint32_t m, const gm_cuckoo_consts &c,
                                    const uint32_t *s_key, gm_p2_shared &sh)
{
    const int tid = (int)threadIdx.x;
    for (int j = tid; j < GM_CUCKOO_BUCKET_SLOTS; j += T)
        sh.own[j] = GM_OWN_EMPTY;
    for (int j = tid; j < 2 * GM_CUCKOO_SLOTS; j += T)
        (&sh.claim[0][0])[j] = 0u;
    for (uint32_t i = (uint32_t)tid; i < m; i += T) {
        const uint32_t k = s_key[i];
        for (int t = 0; t < 3; t++)
            sh.g[t][i] = (uint8_t)gm_cuckoo_g(&c, t, k);
    }
    if (tid == 0)
        sh.nlist = 0u;
    __syncthreads(); /* also before the caller reads the (empty) table */
    if (m == 0)
        return 0; /* block-uniform */

    int item[K]; /* held key index, -1 none */
    bool any = false;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const uint32_t i = (uint32_t)tid + (uint32_t)k * T;
        item[k] = i < m ? (int)i : -1;
        if (item[k] >= 0) {
            atomicMax(&sh.claim[0][sh.g[0][i]], s_key[i] + 1u); /* A(0) */
            any = true;
        }
    }
    int holders = __syncthreads_count(any);
    int t = 0, r = 0;
    /* Block mode while more than GM_WARP_ITEMS keys may be held. */
    for (; r < GM_CUCKOO_MAX_ROUNDS && holders * K > GM_WARP_ITEMS; r++) {
        const uint32_t *claim = sh.claim[r & 1];
        uint32_t *nclaim = sh.claim[(r + 1) & 1];
        uint16_t *own = sh.own + t * GM_CUCKOO_SLOTS;
        const int tn = t == 2 ? 0 : t + 1;
        /* B(r) */
#pragma unroll
        for (int k = 0; k < K; k++) {
            if (item[k] >= 0) {
                const uint32_t s = sh.g[t][item[k]];
                if (claim[s] == s_key[item[k]] + 1u) {
                    const uint32_t occ = own[s];
                    own[s] = (uint16_t)item[k];
                    item[k] = occ == GM_OWN_EMPTY ? -1 : (int)occ;
                }
            }
        }
        for (int j = tid; j < GM_CUCKOO_SLOTS; j += T)
            nclaim[j] = 0u;
        __syncthreads();
        /* A(r+1) */
        any = false;
#pragma unroll
        for (int k = 0; k < K; k++)
            if (item[k] >= 0) {
                atomicMax(&nclaim[sh.g[tn][item[k]]], s_key[item[k]] + 1u);
                any = true;
            }
        holders = __syncthreads_count(any);
        t = tn;
        if (holders == 0)
            return r + 1;
    }
    if (r == GM_CUCKOO_MAX_ROUNDS)
        return -1;

    /* Warp 0 alone from B(r) on (the claims A(r) are made): the at most
     * GM_WARP_ITEMS held keys go to its lanes, GM_WARP_ITEMS / 32 a lane. */
#pragma unroll
    for (int k = 0; k < K; k++)
        if (item[k] >= 0)
            sh.list[atomicAdd(&sh.nlist, 1u)] = (uint32_t)item[k];
    __syncthreads();
    if (tid < 32) {
        constexpr int KW = GM_WARP_ITEMS / 32;
        const int nl = (int)sh.nlist;
        int it[KW];
#pragma unroll
        for (int w = 0; w < KW; w++)
            it[w] = tid + 32 * w < nl ? (int)sh.list[tid + 32 * w] : -1;
        int total = nl, res = -1;
        bool done = false;
        /* Shared claims as in block mode, __syncwarp for barriers, while
         * more than 32 keys are held. */
        while (r < GM_CUCKOO_MAX_ROUNDS && total > 32) {
            const uint32_t *claim = sh.claim[r & 1];
            uint32_t *nclaim = sh.claim[(r + 1) & 1];
            uint16_t *own = sh.own + t * GM_CUCKOO_SLOTS;
            const int tn = t == 2 ? 0 : t + 1;
#pragma unroll
            for (int w = 0; w < KW; w++) {
                if (it[w] >= 0) {
                    const uint32_t s = sh.g[t][it[w]];
                    if (claim[s] == s_key[it[w]] + 1u) {
                        const uint32_t occ = own[s];
                        own[s] = (uint16_t)it[w];
                        it[w] = occ == GM_OWN_EMPTY ? -1 : (int)occ;
                    }
                }
            }
            for (int j = tid; j < GM_CUCKOO_SLOTS; j += 32)
                nclaim[j] = 0u;
            __syncwarp();
            int held = 0;
#pragma unroll
            for (int w = 0; w < KW; w++)
                if (it[w] >= 0) {
                    atomicMax(&nclaim[sh.g[tn][it[w]]], s_key[it[w]] + 1u);
                    held++;
                }
            total = (int)__reduce_add_sync(0xFFFFFFFFu, (unsigned)held);
            __syncwarp();
            t = tn;
            r++;
            if (total == 0) {
                res = r;
                done = true;
                break;
            }
        }
        if (!done && r < GM_CUCKOO_MAX_ROUNDS) {
            /* At most 32 keys: one a lane (a warp prefix sum of the lanes'
             * counts places them), and from B(r) on the winner of a slot is
             * found with __match_any_sync (the lanes writing the same slot)
             * and __reduce_max_sync (their largest key): no shared claims,
             * only a __syncwarp a round to order s_own. */
            int held = 0;
#pragma unroll
            for (int w = 0; w < KW; w++)
                held += it[w] >= 0;
            int pos = held;
            for (int d = 1; d < 32; d <<= 1) {
                const int x = __shfl_up_sync(0xFFFFFFFFu, pos, d);
                if (tid >= d)
                    pos += x;
            }
            pos -= held; /* exclusive */
            __syncwarp(); /* the list's readers above are done */
#pragma unroll
            for (int w = 0; w < KW; w++)
                if (it[w] >= 0)
                    sh.list[pos++] = (uint32_t)it[w];
            __syncwarp();
            int one = tid < total ? (int)sh.list[tid] : -1;
            uint32_t key = 0, g0 = 0, g1 = 0, g2 = 0;
            if (one >= 0) {
                key = s_key[one];
                g0 = sh.g[0][one];
                g1 = sh.g[1][one];
                g2 = sh.g[2][one];
            }
            unsigned active = __ballot_sync(0xFFFFFFFFu, one >= 0);
            for (; r < GM_CUCKOO_MAX_ROUNDS; r++) {
                if (one >= 0) {
                    uint16_t *own = sh.own + t * GM_CUCKOO_SLOTS;
                    const uint32_t s = t == 0 ? g0 : (t == 1 ? g1 : g2);
                    /* every lane of `active` is here */
                    const unsigned peers = __match_any_sync(active, s);
                    if (__reduce_max_sync(peers, key) == key) {
                        const uint32_t occ = own[s];
                        own[s] = (uint16_t)one;
                        one = occ == GM_OWN_EMPTY ? -1 : (int)occ;
                        if (one >= 0) {
                            key = s_key[one];
                            g0 = sh.g[0][one];
                            g1 = sh.g[1][one];
                            g2 = sh.g[2][one];
                        }
                    }
                }
                __syncwarp(); /* orders the s_own writes before the next round's reads */
                active = __ballot_sync(0xFFFFFFFFu, one >= 0);
                t = t == 2 ? 0 : t + 1;
                if (!active) {
                    res = r + 1;
                    break;
                }
            }
        }
        if (tid == 0)
            sh.result = res;
    }
    __syncthreads();
    return sh.result;
}

/* Attempts a = first .. GM_CUCKOO_MAX_RESEEDS-1 with the seeds of the CPU.
 * Returns the attempt that succeeded (its seed and rounds in *bseed,
 * *rounds) or -1.  Block-uniform.  The next attempt's initialisation writes
 * what this attempt read: all reads ended before the barrier that ended the
 * attempt. */
template <int T, int K>
static __device__ int gm_p2_attempts(uint32_t m, const uint32_t *s_key, gm_p2_shared &sh,
                                     uint64_t seed, uint32_t restart, uint32_t b, uint32_t first,
                                     uint32_t *bseed, int *rounds)
{
    for (uint32_t a = first; a < GM_CUCKOO_MAX_RESEEDS; a++) {
        uint32_t s = gm_cuckoo_bucket_seed(seed, restart, b, a);
        gm_cuckoo_consts c = gm_cuckoo_hash_consts(s);
        int r = gm_p2_attempt<T, K>(m, c, s_key, sh);
        if (r >= 0) {
            *bseed = s;
            *rounds = r;
            return (int)a;
        }
        __syncthreads(); /* the failed attempt's last reads before the next init */
    }
    return -1;
}

/* Slot j (0..575) of bucket b in the global layout T1 | T2 | T3. */
static __device__ __forceinline__ size_t gm_global_slot(uint32_t nb, uint32_t b, int j)
{
    int t = j / GM_CUCKOO_SLOTS, s = j - t * GM_CUCKOO_SLOTS;
    return ((size_t)t * nb + b) * GM_CUCKOO_SLOTS + (size_t)s;
}

static __device__ void gm_p2_stats(gm_build_state *st, uint32_t a, int rounds, uint32_t unique)
{
    if (a)
        atomicAdd(&st->reseeds, a);
    if (rounds > 0)
        atomicMax(&st->max_rounds, (uint32_t)rounds);
    if (unique)
        atomicAdd(&st->unique, unique);
}

/* Probe hash of the distinct-key sets (murmur3 fmix32, top `bits` bits).
 * Any hash would do: the sets only find equal keys. */
static __device__ __forceinline__ uint32_t gm_set_hash(uint32_t k, int bits)
{
    k ^= k >> 16;
    k *= 0x85EBCA6Bu;
    k ^= k >> 13;
    k *= 0xC2B2AE35u;
    k ^= k >> 16;
    return k >> (32 - bits);
}

/* Basic table: the items are the keys (at most 512 a bucket after phase 1).
 * A shared set of 1024 entries finds a repeated key first (GM_F_DUP): the
 * cuckoo rounds need distinct keys. */
#define GM_DUP_SET_BITS 10
static __global__ void __launch_bounds__(GM_P2_BASIC_THREADS)
    k_p2_basic(const uint2 *__restrict__ skv, const uint32_t *__restrict__ start, uint32_t nb,
               uint64_t seed, uint32_t restart, uint32_t first_attempt,
               gm_build_state *__restrict__ st, uint32_t *__restrict__ seeds,
               uint2 *__restrict__ slots_out)
{
    constexpr int T = GM_P2_BASIC_THREADS, K = GM_P2_BASIC_KEYS;
    constexpr uint32_t SET = 1u << GM_DUP_SET_BITS;
    static_assert(T * K >= GM_CUCKOO_BUCKET_MAX, "a thread per K items");
    __shared__ uint32_t s_key[GM_CUCKOO_BUCKET_MAX], s_val[GM_CUCKOO_BUCKET_MAX];
    __shared__ uint32_t s_set[SET];
    __shared__ gm_p2_shared sh;
    __shared__ uint32_t s_dup;
    /* BAD_KEY and OVERFULL were set by phase 1 and do not change during
     * this kernel: the test is block-uniform. */
    if (st->flags & (GM_F_BAD_KEY | GM_F_OVERFULL))
        return;
    const uint32_t b = blockIdx.x, tid = threadIdx.x;
    const uint32_t lo = start[b], cnt = start[b + 1] - lo; /* cnt <= 512 */
    for (uint32_t h = tid; h < SET; h += T)
        s_set[h] = GM_KEY_EMPTY;
    if (tid == 0)
        s_dup = 0u;
    __syncthreads();
    for (uint32_t j = tid; j < cnt; j += T) {
        const uint2 it = skv[lo + j];
        s_key[j] = it.x;
        s_val[j] = it.y;
        uint32_t h = gm_set_hash(it.x, GM_DUP_SET_BITS);
        for (uint32_t p = 0; p < SET; p++) { /* <= 512 keys in 1024 entries */
            const uint32_t old = atomicCAS(&s_set[h], GM_KEY_EMPTY, it.x);
            if (old == GM_KEY_EMPTY)
                break;
            if (old == it.x) {
                atomicOr(&s_dup, 1u);
                break;
            }
            h = (h + 1u) & (SET - 1u);
        }
    }
    __syncthreads();
    if (s_dup) {
        if (tid == 0)
            atomicOr(&st->flags, GM_F_DUP);
        return; /* block-uniform: read after the barrier */
    }

    uint32_t bseed = 0;
    int rounds = 0;
    int a = gm_p2_attempts<T, K>(cnt, s_key, sh, seed, restart, b, first_attempt, &bseed,
                                 &rounds);
    if (a < 0) {
        if (tid == 0)
            atomicOr(&st->flags, GM_F_FAIL);
        return; /* block-uniform */
    }
    for (int j = (int)tid; j < GM_CUCKOO_BUCKET_SLOTS; j += T) {
        const size_t gs = gm_global_slot(nb, b, j);
        const uint32_t o = sh.own[j];
        slots_out[gs] = o == GM_OWN_EMPTY ? make_uint2(GM_KEY_EMPTY, 0u)
                                          : make_uint2(s_key[o], s_val[o]);
    }
    if (tid == 0) {
        seeds[b] = bseed;
        gm_p2_stats(st, (uint32_t)a, rounds, cnt);
    }
}

/* Multi-value (VALS) and compacting table: a bucket has any number of items
 * and at most 576 distinct keys.  The items are deduplicated into a shared
 * set first (the CPU cuckoos the distinct keys as well: equal keys must win
 * together), then the distinct keys run the attempts.
 *   multi    per-slot counts, offsets = the bucket's start + an exclusive
 *            block scan of the counts over the bucket's slots in slot order
 *            (the CPU's layout), then every item takes a place in its key's
 *            block with a shared atomicAdd (paper Figure 2), so the order of
 *            values within a key is arbitrary.
 *   compact  the slot's occupancy (0/1) goes to occ_out, which the host
 *            scans over all slots afterwards. */
template <bool VALS>
static __global__ void __launch_bounds__(GM_P2_DISTINCT_THREADS)
    k_p2_distinct(const uint2 *__restrict__ skv, const uint32_t *__restrict__ sk,
                  const uint32_t *__restrict__ start, uint32_t nb, uint64_t seed, uint32_t restart,
                  uint32_t first_attempt, gm_build_state *__restrict__ st,
                  uint32_t *__restrict__ seeds, uint32_t *__restrict__ keys_out,
                  uint32_t *__restrict__ counts_out, uint32_t *__restrict__ offsets_out,
                  uint32_t *__restrict__ values_out, uint32_t *__restrict__ occ_out)
{
    constexpr int T = GM_P2_DISTINCT_THREADS, K = GM_P2_DISTINCT_KEYS;
    static_assert(T * K == GM_CUCKOO_BUCKET_SLOTS, "a thread per K slots and K keys");
    typedef cub::BlockScan<uint32_t, T> gm_block_scan;
    __shared__ uint32_t s_set_key[GM_SET_SIZE];
    __shared__ uint32_t s_set_cnt[VALS ? GM_SET_SIZE : 1]; /* item count, then distinct index */
    __shared__ uint32_t s_dkey[GM_CUCKOO_BUCKET_SLOTS];
    __shared__ uint32_t s_dcnt[VALS ? GM_CUCKOO_BUCKET_SLOTS : 1]; /* count, then cursor */
    __shared__ gm_p2_shared sh;
    __shared__ uint32_t s_m, s_fail;
    __shared__ typename gm_block_scan::TempStorage s_scan;

    if (st->flags & (GM_F_BAD_KEY | GM_F_OVERFULL))
        return; /* block-uniform, see k_p2_basic */
    const uint32_t b = blockIdx.x, tid = threadIdx.x;
    const uint32_t lo = start[b], cnt = start[b + 1] - lo;

    for (int h = (int)tid; h < (int)GM_SET_SIZE; h += T) {
        s_set_key[h] = GM_KEY_EMPTY;
        if constexpr (VALS)
            s_set_cnt[h] = 0u;
    }
    if (tid == 0) {
        s_m = 0u;
        s_fail = 0u;
    }
    __syncthreads();

    /* Distinct keys: insert every item's key (CAS claims an empty entry; an
     * equal key finds its entry), counting items per entry.  At most
     * GM_SET_SIZE probes: more than GM_SET_SIZE distinct keys fill the set,
     * which fails the bucket (the limit is 576 anyway). */
    for (uint32_t j = tid; j < cnt; j += T) {
        uint32_t k;
        if constexpr (VALS)
            k = skv[lo + j].x;
        else
            k = sk[lo + j];
        uint32_t h = gm_set_hash(k, GM_SET_BITS);
        bool in = false;
        for (uint32_t p = 0; p < GM_SET_SIZE; p++) {
            uint32_t old = atomicCAS(&s_set_key[h], GM_KEY_EMPTY, k);
            if (old == GM_KEY_EMPTY || old == k) {
                if constexpr (VALS)
                    atomicAdd(&s_set_cnt[h], 1u);
                in = true;
                break;
            }
            h = (h + 1u) & (GM_SET_SIZE - 1u);
        }
        if (!in)
            atomicOr(&s_fail, 1u);
    }
    __syncthreads();
    /* Number the distinct keys (the numbering order does not matter: the
     * cuckoo outcome depends on the set of keys only). */
    for (int h = (int)tid; h < (int)GM_SET_SIZE; h += T) {
        uint32_t k = s_set_key[h];
        if (k != GM_KEY_EMPTY) {
            uint32_t i = atomicAdd(&s_m, 1u);
            if (i < GM_CUCKOO_BUCKET_SLOTS) {
                s_dkey[i] = k;
                if constexpr (VALS)
                    s_dcnt[i] = s_set_cnt[h];
            }
            if constexpr (VALS)
                s_set_cnt[h] = i; /* the same thread read it just above */
        }
    }
    __syncthreads();
    const uint32_t m = s_m;
    if (s_fail || m > GM_CUCKOO_BUCKET_SLOTS) {
        if (tid == 0)
            atomicOr(&st->flags, GM_F_FAIL);
        return; /* block-uniform: both read after the barrier, written before */
    }

    uint32_t bseed = 0;
    int rounds = 0;
    int a = gm_p2_attempts<T, K>(m, s_dkey, sh, seed, restart, b, first_attempt, &bseed,
                                 &rounds);
    if (a < 0) {
        if (tid == 0)
            atomicOr(&st->flags, GM_F_FAIL);
        return; /* block-uniform */
    }

    /* Thread tid owns slots tid*K .. tid*K+K-1 (blocked: slot order is
     * thread order, as the block scan needs). */
    uint32_t own[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int j = (int)tid * K + k;
        own[k] = sh.own[j];
        keys_out[gm_global_slot(nb, b, j)] = own[k] == GM_OWN_EMPTY ? GM_KEY_EMPTY : s_dkey[own[k]];
    }
    if constexpr (VALS) {
        uint32_t c[K], ex[K];
#pragma unroll
        for (int k = 0; k < K; k++)
            c[k] = own[k] == GM_OWN_EMPTY ? 0u : s_dcnt[own[k]];
        gm_block_scan(s_scan).ExclusiveSum(c, ex);
#pragma unroll
        for (int k = 0; k < K; k++) {
            const size_t gs = gm_global_slot(nb, b, (int)tid * K + k);
            counts_out[gs] = c[k];
            offsets_out[gs] = own[k] == GM_OWN_EMPTY ? 0u : lo + ex[k];
            /* s_dcnt[i] is read above and written here by the one thread
             * whose slot holds key i: no other thread touches it before the
             * barrier. */
            if (own[k] != GM_OWN_EMPTY)
                s_dcnt[own[k]] = lo + ex[k];
        }
        __syncthreads();
        for (uint32_t j = tid; j < cnt; j += T) {
            uint2 kv = skv[lo + j];
            uint32_t h = gm_set_hash(kv.x, GM_SET_BITS);
            /* the key is in the set: found within GM_SET_SIZE probes */
            for (uint32_t p = 0; p < GM_SET_SIZE && s_set_key[h] != kv.x; p++)
                h = (h + 1u) & (GM_SET_SIZE - 1u);
            uint32_t pos = atomicAdd(&s_dcnt[s_set_cnt[h]], 1u);
            values_out[pos] = kv.y;
        }
    } else {
#pragma unroll
        for (int k = 0; k < K; k++)
            occ_out[gm_global_slot(nb, b, (int)tid * K + k)] = own[k] != GM_OWN_EMPTY;
    }
    if (tid == 0) {
        seeds[b] = bseed;
        gm_p2_stats(st, (uint32_t)a, rounds, m);
    }
}

/* unique[index[s]] = keys[s] for every occupied slot. */
static __global__ void k_compact_unique(const uint32_t *__restrict__ keys,
                                        const uint32_t *__restrict__ index, size_t slots,
                                        uint32_t *__restrict__ unique)
{
    for (size_t s = (size_t)blockIdx.x * blockDim.x + threadIdx.x; s < slots;
         s += (size_t)gridDim.x * blockDim.x) {
        uint32_t k = keys[s];
        if (k != GM_KEY_EMPTY)
            unique[index[s]] = k;
    }
}

/* ---- retrieval: one thread per query, gm_cuckoo_slot of cuckoo.h ------------
 * The queries, the results and the compacting table's index read pass the
 * L2 as "evict first" (streaming loads and stores), so that the slot keys
 * stay there longer: 5M random queries, H100, 0.237 ms -> 0.210 ms (basic
 * table, when its keys and values were separate arrays).  (Keys loaded with
 * an "evict last" policy gained nothing more.)  The multi table's counts
 * and offsets load normally: a key is often asked many times (one query per
 * value), and streaming them cost 25% there.
 * The basic table reads one interleaved (key, value) slot a probe: a hit
 * costs one scattered 8-byte read instead of a key read and a value read. */
static __global__ void __launch_bounds__(GM_FIND_THREADS)
    k_find_basic(gm_cuckoo_view v, const uint32_t *__restrict__ q, uint32_t n,
                 uint32_t *__restrict__ out)
{
    size_t i = (size_t)blockIdx.x * GM_FIND_THREADS + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t key = __ldcs(q + i);
    uint32_t r = GM_KEY_EMPTY;
    if (v.nb != 0 && key != GM_KEY_EMPTY) {
        const uint32_t b = gm_cuckoo_h(v.h_c0, v.h_c1, v.restart, v.nb, key);
        const gm_cuckoo_consts c = gm_cuckoo_hash_consts(v.seeds[b]);
#pragma unroll
        for (int t = 0; t < 3; t++) {
            const size_t s = ((size_t)t * v.nb + b) * GM_CUCKOO_SLOTS + gm_cuckoo_g(&c, t, key);
            const uint2 kv = v.slots[s];
            if (kv.x == key) {
                r = kv.y;
                break;
            }
        }
    }
    __stcs(out + i, r);
}

static __global__ void __launch_bounds__(GM_FIND_THREADS)
    k_find_value(gm_cuckoo_view v, const uint32_t *__restrict__ q, uint32_t n,
                 uint32_t *__restrict__ out)
{
    size_t i = (size_t)blockIdx.x * GM_FIND_THREADS + threadIdx.x;
    if (i >= n)
        return;
    int64_t s = gm_cuckoo_slot(v.nb, v.restart, v.h_c0, v.h_c1, v.seeds, v.keys, __ldcs(q + i));
    __stcs(out + i, s < 0 ? GM_KEY_EMPTY : __ldcs(v.vals + s));
}

static __global__ void __launch_bounds__(GM_FIND_THREADS)
    k_find_multi(gm_cuckoo_view v, const uint32_t *__restrict__ q, uint32_t n,
                 uint32_t *__restrict__ count, uint32_t *__restrict__ first)
{
    size_t i = (size_t)blockIdx.x * GM_FIND_THREADS + threadIdx.x;
    if (i >= n)
        return;
    int64_t s = gm_cuckoo_slot(v.nb, v.restart, v.h_c0, v.h_c1, v.seeds, v.keys, __ldcs(q + i));
    __stcs(count + i, s < 0 ? 0u : v.counts[s]);
    if (first)
        __stcs(first + i, s < 0 ? 0u : v.offsets[s]);
}

/* ---- host side -------------------------------------------------------------- */

/* Everything one build allocates: outputs (handed to the table on success)
 * and work buffers (freed at the end).  Stream-ordered allocations from the
 * device's default memory pool: after the first build the pool serves them
 * without a driver call, if its release threshold keeps the memory (see
 * tools/bench_hash.cu); cudaMalloc and cudaFree would synchronize the
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
    GM_CUDA_CHECK(cudaMallocAsync(p, bytes ? bytes : 1, stream));
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

/* The restart loop.  GM_OK with c's outputs filled, or an error (the caller
 * frees c). */
static gm_status gm_build_run(gm_build *c)
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
    /* Phase 1's shape: super-buckets of 2^shift buckets, at most GM_PA_BINS
     * of them; tiles of GM_PA_TILE items. */
    gm_p1_hash ph;
    ph.nb = nb;
    ph.shift = 0;
    while (((uint64_t)nb + (1u << ph.shift) - 1) >> ph.shift > GM_PA_BINS)
        ph.shift++; /* nb < 2^32: at most 23 steps */
    const uint32_t ns = (uint32_t)(((uint64_t)nb + (1u << ph.shift) - 1) >> ph.shift);
    const uint32_t ntiles = (uint32_t)(((uint64_t)n + GM_PA_TILE - 1) / GM_PA_TILE);
    const size_t nhist = (size_t)ns * ntiles;
    const size_t pb_shared = ((size_t)1 << ph.shift) * sizeof(uint32_t);
    if (pb_shared > 48 * 1024) { /* only for some ten million buckets */
        GM_CUDA_CHECK(cudaFuncSetAttribute(k_pb_bucket<true>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)pb_shared));
        GM_CUDA_CHECK(cudaFuncSetAttribute(k_pb_bucket<false>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)pb_shared));
    }
    /* Work: state | hist | start | items by super-bucket | items by bucket |
     * CUB temp, each part 256-aligned.  Sizes: n, nb < 2^32, so no part
     * overflows a 64-bit size_t. */
    size_t t1 = 0, t2 = 0;
    GM_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(NULL, t1, (uint32_t *)NULL, nhist ? nhist : 1, stream));
    if (kind == GM_TAB_COMPACT)
        GM_CUDA_CHECK(
            cub::DeviceScan::ExclusiveSum(NULL, t2, (uint32_t *)NULL, c->slots, stream));
    c->temp_bytes = t1 > t2 ? t1 : t2;
    const size_t b_state = gm_align256(sizeof(gm_build_state));
    const size_t b_hist = gm_align256(nhist * sizeof(uint32_t));
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

    const uint32_t max_items = kind == GM_TAB_BASIC ? GM_CUCKOO_BUCKET_MAX : GM_CUCKOO_NO_LIMIT;
    const uint32_t force_reseeds = c->dbg.force_reseeds;
    const uint32_t first_attempt =
        force_reseeds < GM_CUCKOO_MAX_RESEEDS ? force_reseeds : GM_CUCKOO_MAX_RESEEDS;

    for (uint32_t restart = 0; restart <= GM_CUCKOO_MAX_RESTARTS; restart++) {
        uint32_t h_c0, h_c1;
        gm_cuckoo_phase1_consts(c->seed, restart, &h_c0, &h_c1);
        ph.restart = restart;
        ph.c0 = h_c0;
        ph.c1 = h_c1;
        GM_CUDA_CHECK(cudaMemsetAsync(c->state, 0, sizeof *c->state, stream));
        if (n > 0) {
            k_pa_hist<<<ntiles, GM_PA_THREADS, 0, stream>>>(c->d_in_keys, n, ph, ns, ntiles,
                                                            c->hist, c->state);
            GM_CUDA_CHECK_LAUNCH();
        }
        /* A forced restart still counts (and checks the keys), then reports
         * an overfull bucket, as on the CPU. */
        const bool forced = restart < c->dbg.force_restarts;
        if (!forced) {
            if (n == 0) {
                GM_CUDA_CHECK(cudaMemsetAsync(c->start, 0, ((size_t)nb + 1) * sizeof *c->start,
                                              stream));
            } else {
                GM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(c->temp, c->temp_bytes, c->hist,
                                                            nhist, stream));
                if (kind == GM_TAB_COMPACT) {
                    k_pa_scatter<false><<<ntiles, GM_PA_THREADS, 0, stream>>>(
                        c->d_in_keys, NULL, n, ph, ntiles, c->hist, c->state, c->tk);
                    GM_CUDA_CHECK_LAUNCH();
                    k_pb_bucket<false><<<ns, GM_PB_THREADS, pb_shared, stream>>>(
                        c->tk, n, ph, ns, ntiles, c->hist, max_items, c->state, c->start,
                        c->sk);
                } else {
                    k_pa_scatter<true><<<ntiles, GM_PA_THREADS, 0, stream>>>(
                        c->d_in_keys, c->d_in_vals, n, ph, ntiles, c->hist, c->state, c->tkv);
                    GM_CUDA_CHECK_LAUNCH();
                    k_pb_bucket<true><<<ns, GM_PB_THREADS, pb_shared, stream>>>(
                        c->tkv, n, ph, ns, ntiles, c->hist, max_items, c->state, c->start,
                        c->skv);
                }
                GM_CUDA_CHECK_LAUNCH();
            }
            if (kind == GM_TAB_BASIC)
                k_p2_basic<<<nb, GM_P2_BASIC_THREADS, 0, stream>>>(
                    c->skv, c->start, nb, c->seed, restart, first_attempt, c->state, c->seeds,
                    c->kv);
            else if (kind == GM_TAB_MULTI)
                k_p2_distinct<true><<<nb, GM_P2_DISTINCT_THREADS, 0, stream>>>(
                    c->skv, NULL, c->start, nb, c->seed, restart, first_attempt, c->state,
                    c->seeds, c->keys, c->counts_out, c->offsets, c->values, NULL);
            else
                k_p2_distinct<false><<<nb, GM_P2_DISTINCT_THREADS, 0, stream>>>(
                    NULL, c->sk, c->start, nb, c->seed, restart, first_attempt, c->state,
                    c->seeds, c->keys, NULL, NULL, NULL, c->vals);
            GM_CUDA_CHECK_LAUNCH();
        }
        gm_build_state hs;
        GM_CUDA_CHECK(cudaMemcpyAsync(&hs, c->state, sizeof hs, cudaMemcpyDeviceToHost, stream));
        GM_CUDA_CHECK(cudaStreamSynchronize(stream));
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
        if (kind == GM_TAB_COMPACT) {
            /* index = exclusive scan of the occupancy (in c->vals) over all
             * slots in global slot order, in place */
            GM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(c->temp, c->temp_bytes, c->vals,
                                                        c->slots, stream));
            GM_ALLOC(c->unique, c->u);
            int dev = 0, sms = 0;
            GM_CUDA_CHECK(cudaGetDevice(&dev));
            GM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
            size_t blocks = (c->slots + 255) / 256, cap = (size_t)sms * 16;
            k_compact_unique<<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, stream>>>(
                c->keys, c->vals, c->slots, c->unique);
            GM_CUDA_CHECK_LAUNCH();
        }
        return GM_OK;
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
        cudaError_t e = kind == GM_TAB_COMPACT ? cudaStreamSynchronize(stream) : cudaSuccess;
        if (e != cudaSuccess) {
            gm_cuda_record_error(e, "cudaStreamSynchronize(stream)", __func__, __FILE__,
                                 __LINE__);
            st = e == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE;
        }
    }
    if (st != GM_OK) {
        gm_build_free_all(&c);
        (void)cudaStreamSynchronize(stream);
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

extern "C" gm_cuckoo_view gm_cuckoo_dev_view(const gm_cuckoo_dev *t)
{
    gm_cuckoo_view v;
    v.nb = t->nb;
    v.restart = t->restart;
    v.h_c0 = t->h_c0;
    v.h_c1 = t->h_c1;
    v.seeds = t->d_seeds;
    v.slots = t->d_slots;
    v.keys = t->d_keys;
    v.vals = t->d_vals;
    v.counts = t->d_counts;
    v.offsets = t->d_offsets;
    v.values = t->d_values;
    return v;
}

static unsigned gm_grid_find(uint32_t n)
{
    return (unsigned)(((uint64_t)n + GM_FIND_THREADS - 1) / GM_FIND_THREADS);
}

static gm_status gm_find_values(const gm_cuckoo_dev *t, const uint32_t *vals,
                                const uint32_t *d_keys, uint32_t n, uint32_t *d_out,
                                cudaStream_t stream)
{
    if (!t || !t->d_keys || !t->d_seeds || !vals || (n > 0 && (!d_keys || !d_out)))
        return GM_ERR_INVALID;
    if (n == 0)
        return GM_OK;
    gm_cuckoo_view v = gm_cuckoo_dev_view(t);
    k_find_value<<<gm_grid_find(n), GM_FIND_THREADS, 0, stream>>>(v, d_keys, n, d_out);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}

extern "C" gm_status gm_cuckoo_find_cuda(const gm_cuckoo_dev *t, const uint32_t *d_keys,
                                         uint32_t n, uint32_t *d_out, cudaStream_t stream)
{
    if (!t || !t->d_slots || !t->d_seeds || (n > 0 && (!d_keys || !d_out)))
        return GM_ERR_INVALID;
    if (n == 0)
        return GM_OK;
    gm_cuckoo_view v = gm_cuckoo_dev_view(t);
    k_find_basic<<<gm_grid_find(n), GM_FIND_THREADS, 0, stream>>>(v, d_keys, n, d_out);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}

extern "C" gm_status gm_compact_find_cuda(const gm_cuckoo_dev *t, const uint32_t *d_keys,
                                          uint32_t n, uint32_t *d_out, cudaStream_t stream)
{
    return gm_find_values(t, t ? t->d_vals : NULL, d_keys, n, d_out, stream);
}

extern "C" gm_status gm_multi_find_cuda(const gm_cuckoo_dev *t, const uint32_t *d_keys,
                                        uint32_t n, uint32_t *d_count, uint32_t *d_first,
                                        cudaStream_t stream)
{
    if (!t || !t->d_keys || !t->d_seeds || !t->d_counts || !t->d_offsets ||
        (n > 0 && (!d_keys || !d_count)))
        return GM_ERR_INVALID;
    if (n == 0)
        return GM_OK;
    gm_cuckoo_view v = gm_cuckoo_dev_view(t);
    k_find_multi<<<gm_grid_find(n), GM_FIND_THREADS, 0, stream>>>(v, d_keys, n, d_count,
                                                                    d_first);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}

/* ---- copies to the host tables of cuckoo.h ---------------------------------- */

static gm_status gm_copy_out(uint32_t **h, const uint32_t *d, size_t count)
{
    *h = (uint32_t *)malloc((count ? count : 1) * sizeof **h);
    if (!*h)
        return GM_ERR_NOMEM;
    if (count)
        GM_CUDA_CHECK(cudaMemcpy(*h, d, count * sizeof **h, cudaMemcpyDeviceToHost));
    return GM_OK;
}

/* Copies the fields common to the three tables; the caller frees what was
 * allocated (free() of NULL is a no-op). */
/* The fields every host table of cuckoo.h shares, from the device table. */
template <class H> static void gm_take_header(H *h, const gm_cuckoo_dev *t)
{
    h->nb = t->nb;
    h->restart = t->restart;
    h->h_c0 = t->h_c0;
    h->h_c1 = t->h_c1;
    h->n = t->n;
    h->stats = t->stats;
}

static gm_status gm_copy_common(const gm_cuckoo_dev *t, uint32_t **seeds, uint32_t **keys)
{
    gm_status st = gm_copy_out(seeds, t->d_seeds, t->nb);
    if (st != GM_OK)
        return st;
    return gm_copy_out(keys, t->d_keys, (size_t)t->nb * GM_CUCKOO_BUCKET_SLOTS);
}

extern "C" gm_status gm_cuckoo_dev_to_host(const gm_cuckoo_dev *t, gm_cuckoo *h)
{
    if (!h)
        return GM_ERR_INVALID;
    memset(h, 0, sizeof *h);
    if (!t || !t->d_slots || !t->d_seeds)
        return GM_ERR_INVALID;
    size_t slots = (size_t)t->nb * GM_CUCKOO_BUCKET_SLOTS;
    gm_status st = gm_copy_out(&h->seeds, t->d_seeds, t->nb);
    uint2 *kv = NULL;
    if (st == GM_OK) {
        /* de-interleave the (key, value) slots into keys[] and vals[] */
        kv = (uint2 *)malloc((slots ? slots : 1) * sizeof *kv);
        h->keys = (uint32_t *)malloc((slots ? slots : 1) * sizeof *h->keys);
        h->vals = (uint32_t *)malloc((slots ? slots : 1) * sizeof *h->vals);
        if (!kv || !h->keys || !h->vals)
            st = GM_ERR_NOMEM;
    }
    if (st == GM_OK && slots) {
        cudaError_t e = cudaMemcpy(kv, t->d_slots, slots * sizeof *kv, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) {
            gm_cuda_record_error(e, "cudaMemcpy(slots)", __func__, __FILE__, __LINE__);
            st = e == cudaErrorMemoryAllocation ? GM_ERR_NOMEM : GM_ERR_DEVICE;
        }
    }
    if (st == GM_OK)
        for (size_t i = 0; i < slots; i++) {
            h->keys[i] = kv[i].x;
            h->vals[i] = kv[i].y;
        }
    free(kv);
    if (st != GM_OK) {
        free(h->seeds);
        free(h->keys);
        free(h->vals);
        memset(h, 0, sizeof *h);
        return st;
    }
    gm_take_header(h, t);
    return GM_OK;
}

extern "C" gm_status gm_multi_dev_to_host(const gm_cuckoo_dev *t, gm_multi *h)
{
    if (!h)
        return GM_ERR_INVALID;
    memset(h, 0, sizeof *h);
    if (!t || !t->d_keys || !t->d_counts || !t->d_offsets || !t->d_values)
        return GM_ERR_INVALID;
    size_t slots = (size_t)t->nb * GM_CUCKOO_BUCKET_SLOTS;
    gm_status st = gm_copy_common(t, &h->seeds, &h->keys);
    if (st == GM_OK)
        st = gm_copy_out(&h->counts, t->d_counts, slots);
    if (st == GM_OK)
        st = gm_copy_out(&h->offsets, t->d_offsets, slots);
    if (st == GM_OK)
        st = gm_copy_out(&h->values, t->d_values, t->n);
    if (st != GM_OK) {
        free(h->seeds);
        free(h->keys);
        free(h->counts);
        free(h->offsets);
        free(h->values);
        memset(h, 0, sizeof *h);
        return st;
    }
    gm_take_header(h, t);
    return GM_OK;
}

extern "C" gm_status gm_compact_dev_to_host(const gm_cuckoo_dev *t, gm_compact *h)
{
    if (!h)
        return GM_ERR_INVALID;
    memset(h, 0, sizeof *h);
    if (!t || !t->d_keys || !t->d_vals || !t->d_unique)
        return GM_ERR_INVALID;
    size_t slots = (size_t)t->nb * GM_CUCKOO_BUCKET_SLOTS;
    gm_status st = gm_copy_common(t, &h->seeds, &h->keys);
    if (st == GM_OK)
        st = gm_copy_out(&h->index, t->d_vals, slots);
    if (st == GM_OK)
        st = gm_copy_out(&h->unique, t->d_unique, t->u);
    if (st != GM_OK) {
        free(h->seeds);
        free(h->keys);
        free(h->index);
        free(h->unique);
        memset(h, 0, sizeof *h);
        return st;
    }
    h->u = t->u;
    gm_take_header(h, t);
    return GM_OK;
}

/* cudaFree, not cudaFreeAsync: the table does not remember a stream, and
 * cudaFree of stream-ordered memory is allowed (it synchronizes). */
extern "C" void gm_cuckoo_dev_free(gm_cuckoo_dev *t)
{
    if (!t)
        return;
    void *p[] = {t->d_seeds,   t->d_slots,  t->d_keys,   t->d_vals,
                 t->d_counts,  t->d_offsets, t->d_values, t->d_unique};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i] && cudaFree(p[i]) != cudaSuccess)
            (void)cudaGetLastError();
    memset(t, 0, sizeof *t);
}

extern "C" void gm_cuckoo_dev_free_async(gm_cuckoo_dev *t, cudaStream_t stream)
{
    if (!t)
        return;
    void *p[] = {t->d_seeds,   t->d_slots,  t->d_keys,   t->d_vals,
                 t->d_counts,  t->d_offsets, t->d_values, t->d_unique};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i] && cudaFreeAsync(p[i], stream) != cudaSuccess)
            (void)cudaGetLastError();
    memset(t, 0, sizeof *t);
}
