/* cuckoo_phase2.cuh: phase 2 of the GPU build (src/cuda/cuckoo.cu includes it,
 * one translation unit): per bucket, lockstep cuckoo hashing in shared
 * memory, and the compacting table's dense indices. */
#ifndef GM_CUCKOO_PHASE2_CUH
#define GM_CUCKOO_PHASE2_CUH

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

/* One function, past the 120 lines that host code keeps to: its rounds'
 * barriers and the block/warp mode switch must be read together, since
 * every thread reaches every barrier only while the loop bounds stay
 * block-uniform; split into helpers, a barrier inside one would hide that
 * contract from the caller's loop. */
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
/* One kernel, past the 120 lines that host code keeps to: its steps share
 * the block's shared memory and are ordered by __syncthreads between them
 * (dedupe, attempts, the values' places, write out); separate kernels would carry the
 * bucket through global memory between launches. */
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

#endif
