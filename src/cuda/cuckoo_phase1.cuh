/* cuckoo_phase1.cuh: phase 1 of the GPU build (src/cuda/cuckoo.cu includes it,
 * one translation unit): the items partitioned by bucket. */
#ifndef GM_CUCKOO_PHASE1_CUH
#define GM_CUCKOO_PHASE1_CUH

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

#endif
