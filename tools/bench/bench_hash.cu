/* bench_hash.cu: the comparison of Alcantara et al. 2009, section 5, on this
 * GPU.  Usage: bench_hash [out.csv]
 *
 *   basic table   1M, 5M, 16M random unique 32-bit key-value pairs:
 *                 cuckoo build (gm_cuckoo_build_cuda) against CUB
 *                 DeviceRadixSort::SortPairs of the same pairs; retrieval of
 *                 every key in shuffled order with the cuckoo find kernel
 *                 against a binary search in the sorted pairs.
 *   multi-value   5M items with 1, 4, 16, 64 values per key: build
 *                 (gm_multi_build_cuda) against sort + run-length encoding
 *                 (cub::DeviceRunLengthEncode) + a scan of the run lengths;
 *                 retrieval of every item's key (one query per value, as the
 *                 paper) against a binary search in the unique keys.
 *
 * Timing: CUDA events on the stream around the call, median of 21 runs
 * after 3 warm-ups; inputs rotate among 3 sets (tables, sorted arrays and
 * query orders too) so that a run does not find the previous run's data in
 * the 50 MB L2.  The cuckoo build allocates its outputs and work buffers
 * (stream-ordered, from the device's default pool, whose release threshold
 * is raised here so that the pool keeps its memory between builds); the
 * baselines get their buffers allocated up front, outside the timing.
 * Every result is checked once against the expected values.
 * bench_hash --profile runs a few builds for a profiler instead. */
#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/gm_cuda.h"

#define CK(call)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                   \
                    cudaGetErrorString(e_));                                                \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)
#define GMK(call)                                                                           \
    do {                                                                                    \
        gm_status s_ = (call);                                                              \
        if (s_ != GM_OK) {                                                                  \
            fprintf(stderr, "%s:%d: %s: status %d: %s\n", __FILE__, __LINE__, #call, (int)s_, \
                    gm_cuda_last_error());                                                  \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

enum { SETS = 3, WARM = 3, REPS = 21 };

static uint32_t mix32(uint32_t k)
{
    k ^= k >> 16;
    k *= 0x85EBCA6Bu;
    k ^= k >> 13;
    k *= 0xC2B2AE35u;
    k ^= k >> 16;
    return k;
}

static uint64_t g_rng = 12345;
static uint32_t rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static void shuffle(std::vector<uint32_t> &v)
{
    for (size_t i = v.size(); i > 1; i--)
        std::swap(v[i - 1], v[rnd() % i]);
}

/* Distinct key j of a set (mix32 is a bijection; GM_KEY_EMPTY swapped for a
 * key outside 0..n-1). */
static uint32_t key_of(uint32_t j, uint32_t salt, uint32_t n)
{
    uint32_t k = mix32(j + salt);
    return k == GM_KEY_EMPTY ? mix32(n + salt) : k;
}

static uint32_t *to_dev(const std::vector<uint32_t> &h)
{
    uint32_t *d = NULL;
    CK(cudaMalloc(&d, (h.size() ? h.size() : 1) * sizeof *d));
    CK(cudaMemcpy(d, h.data(), h.size() * sizeof *d, cudaMemcpyHostToDevice));
    return d;
}

static uint32_t *dev_buf(size_t n)
{
    uint32_t *d = NULL;
    CK(cudaMalloc(&d, (n ? n : 1) * sizeof *d));
    return d;
}

static std::vector<uint32_t> to_host(const uint32_t *d, size_t n)
{
    std::vector<uint32_t> h(n);
    CK(cudaMemcpy(h.data(), d, n * sizeof *d, cudaMemcpyDeviceToHost));
    return h;
}

/* Median of REPS timed calls of run(i) (i rotates the input set), after WARM
 * untimed ones; after(i) runs untimed after each call (frees). */
template <class Run, class After>
static float median_ms(cudaStream_t s, Run run, After after)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int i = 0; i < WARM + REPS; i++) {
        CK(cudaStreamSynchronize(s));
        CK(cudaEventRecord(a, s));
        run(i % SETS);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        after(i % SETS);
        if (i >= WARM)
            t.push_back(ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* Binary search of each query in sorted keys: value (basic) or the run's
 * count and first value (multi, over unique keys). */
static __global__ void k_bsearch(const uint32_t *__restrict__ keys,
                                 const uint32_t *__restrict__ vals, uint32_t n,
                                 const uint32_t *__restrict__ q, uint32_t nq,
                                 uint32_t *__restrict__ out)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nq)
        return;
    uint32_t k = q[i], lo = 0, hi = n;
    while (lo < hi) { /* at most 33 iterations */
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    out[i] = lo < n && keys[lo] == k ? vals[lo] : GM_KEY_EMPTY;
}

static __global__ void k_bsearch_runs(const uint32_t *__restrict__ ukeys,
                                      const uint32_t *__restrict__ counts,
                                      const uint32_t *__restrict__ offsets,
                                      const uint32_t *__restrict__ d_runs,
                                      const uint32_t *__restrict__ q, uint32_t nq,
                                      uint32_t *__restrict__ count, uint32_t *__restrict__ first)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nq)
        return;
    uint32_t n = *d_runs, k = q[i], lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ukeys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool hit = lo < n && ukeys[lo] == k;
    count[i] = hit ? counts[lo] : 0u;
    first[i] = hit ? offsets[lo] : 0u;
}

static unsigned blocks_for(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

typedef struct {
    const char *table, *method;
    uint32_t n, per_key;
    double build_ms, find_ms, load;
    uint32_t restarts;
} row;

static std::vector<row> g_rows;

static void add_row(const char *table, const char *method, uint32_t n, uint32_t per_key,
                    double build_ms, double find_ms, double load, uint32_t restarts)
{
    row r = {table, method, n, per_key, build_ms, find_ms, load, restarts};
    g_rows.push_back(r);
    printf("%-6s %-22s %9u %5u  build %8.3f ms %8.0f Mkeys/s  find %8.3f ms %8.0f Mkeys/s  load %.3f  restarts %u\n",
           table, method, n, per_key, build_ms, n / build_ms / 1e3, find_ms, n / find_ms / 1e3,
           load, restarts);
    fflush(stdout);
}

/* ---- basic table ------------------------------------------------------------- */

static void bench_basic(uint32_t n, cudaStream_t s)
{
    uint32_t *dk[SETS], *dv[SETS], *dq[SETS];
    std::vector<uint32_t> hk[SETS], hv[SETS], hq[SETS];
    for (int i = 0; i < SETS; i++) {
        uint32_t salt = 0x1000193u * (uint32_t)(i + 1) + n;
        hk[i].resize(n);
        hv[i].resize(n);
        for (uint32_t j = 0; j < n; j++) {
            hk[i][j] = key_of(j, salt, n);
            hv[i][j] = rnd();
        }
        hq[i] = hk[i];
        shuffle(hq[i]);
        dk[i] = to_dev(hk[i]);
        dv[i] = to_dev(hv[i]);
        dq[i] = to_dev(hq[i]);
    }
    uint32_t *out = dev_buf(n);

    /* cuckoo build */
    gm_cuckoo_dev t[SETS];
    memset(t, 0, sizeof t);
    float build = median_ms(
        s, [&](int i) { GMK(gm_cuckoo_build_cuda(&t[i], dk[i], dv[i], n, 7, NULL, s)); },
        [&](int i) { gm_cuckoo_dev_free(&t[i]); });
    for (int i = 0; i < SETS; i++)
        GMK(gm_cuckoo_build_cuda(&t[i], dk[i], dv[i], n, 7, NULL, s));
    double load = (double)n / ((double)t[0].nb * (3.0 * GM_CUCKOO_SLOTS));
    uint32_t restarts = t[0].stats.restarts;

    /* cuckoo retrieval, checked once */
    float find = median_ms(
        s, [&](int i) { GMK(gm_cuckoo_find_cuda(&t[i], dq[i], n, out, s)); }, [](int) {});
    for (int i = 0; i < SETS; i++) {
        GMK(gm_cuckoo_find_cuda(&t[i], dk[i], n, out, s));
        std::vector<uint32_t> got = to_host(out, n);
        if (got != hv[i]) {
            fprintf(stderr, "cuckoo retrieval wrong (n %u, set %d)\n", n, i);
            exit(1);
        }
    }
    add_row("basic", "cuckoo", n, 1, build, find, load, restarts);
    printf("       buckets %u, reseeds %u, max rounds %u\n", t[0].nb, t[0].stats.reseeds,
           t[0].stats.max_rounds);
    for (int i = 0; i < SETS; i++)
        gm_cuckoo_dev_free(&t[i]);

    /* radix sort of the pairs, then binary search */
    uint32_t *sk[SETS], *sv[SETS];
    for (int i = 0; i < SETS; i++) {
        sk[i] = dev_buf(n);
        sv[i] = dev_buf(n);
    }
    size_t temp_bytes = 0;
    CK(cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, dk[0], sk[0], dv[0], sv[0], n, 0, 32, s));
    void *temp = NULL;
    CK(cudaMalloc(&temp, temp_bytes));
    float sort = median_ms(
        s,
        [&](int i) {
            CK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, dk[i], sk[i], dv[i], sv[i], n, 0,
                                               32, s));
        },
        [](int) {});
    for (int i = 0; i < SETS; i++)
        CK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, dk[i], sk[i], dv[i], sv[i], n, 0, 32,
                                           s));
    float bs = median_ms(
        s,
        [&](int i) {
            k_bsearch<<<blocks_for(n, 256), 256, 0, s>>>(sk[i], sv[i], n, dq[i], n, out);
            CK(cudaGetLastError());
        },
        [](int) {});
    k_bsearch<<<blocks_for(n, 256), 256, 0, s>>>(sk[0], sv[0], n, dk[0], n, out);
    CK(cudaGetLastError());
    if (to_host(out, n) != hv[0]) {
        fprintf(stderr, "binary search wrong (n %u)\n", n);
        exit(1);
    }
    add_row("basic", "radix sort + bsearch", n, 1, sort, bs, 1.0, 0);
    printf("       build cuckoo/sort %.2f   find cuckoo/bsearch %.2f\n", build / sort, find / bs);

    CK(cudaFree(temp));
    for (int i = 0; i < SETS; i++) {
        CK(cudaFree(dk[i]));
        CK(cudaFree(dv[i]));
        CK(cudaFree(dq[i]));
        CK(cudaFree(sk[i]));
        CK(cudaFree(sv[i]));
    }
    CK(cudaFree(out));
}

/* ---- multi-value table ------------------------------------------------------- */

static void bench_multi(uint32_t n, uint32_t per_key, cudaStream_t s)
{
    uint32_t d = (n + per_key - 1) / per_key;
    uint32_t *dk[SETS], *dv[SETS], *dq[SETS];
    std::vector<uint32_t> hk[SETS];
    for (int i = 0; i < SETS; i++) {
        uint32_t salt = 0x2545F491u * (uint32_t)(i + 1) + per_key;
        std::vector<uint32_t> v(n);
        hk[i].resize(n);
        for (uint32_t j = 0; j < n; j++) {
            hk[i][j] = key_of(j / per_key, salt, d);
            v[j] = j;
        }
        /* shuffle the pairs together */
        for (size_t x = n; x > 1; x--) {
            size_t y = rnd() % x;
            std::swap(hk[i][x - 1], hk[i][y]);
            std::swap(v[x - 1], v[y]);
        }
        std::vector<uint32_t> q = hk[i];
        shuffle(q);
        dk[i] = to_dev(hk[i]);
        dv[i] = to_dev(v);
        dq[i] = to_dev(q);
    }
    uint32_t *count = dev_buf(n), *first = dev_buf(n);

    gm_cuckoo_dev t[SETS];
    memset(t, 0, sizeof t);
    float build = median_ms(
        s, [&](int i) { GMK(gm_multi_build_cuda(&t[i], dk[i], dv[i], n, 0, 7, NULL, s)); },
        [&](int i) { gm_cuckoo_dev_free(&t[i]); });
    for (int i = 0; i < SETS; i++)
        GMK(gm_multi_build_cuda(&t[i], dk[i], dv[i], n, 0, 7, NULL, s));
    double load = (double)d / ((double)t[0].nb * (3.0 * GM_CUCKOO_SLOTS));
    uint32_t restarts = t[0].stats.restarts;
    float find = median_ms(
        s, [&](int i) { GMK(gm_multi_find_cuda(&t[i], dq[i], n, count, first, s)); },
        [](int) {});
    /* check: every item's key has per_key values, one of them the item's */
    {
        GMK(gm_multi_find_cuda(&t[0], dk[0], n, count, first, s));
        std::vector<uint32_t> c = to_host(count, n), f = to_host(first, n);
        std::vector<uint32_t> vals = to_host(t[0].d_values, n);
        const uint32_t salt0 = 0x2545F491u + per_key;
        for (uint32_t j = 0; j < n; j++) {
            /* values are the items' indices before the shuffle, index v has
             * key key_of(v / per_key): every value of the block must have
             * the queried key, and the block is per_key long */
            bool ok = c[j] == per_key && (uint64_t)f[j] + c[j] <= n;
            for (uint32_t x = 0; x < c[j] && ok; x++)
                ok = key_of(vals[f[j] + x] / per_key, salt0, d) == hk[0][j];
            if (!ok) {
                fprintf(stderr, "multi retrieval wrong (per_key %u, item %u)\n", per_key, j);
                exit(1);
            }
        }
    }
    add_row("multi", "cuckoo", n, per_key, build, find, load, restarts);
    printf("       buckets %u, reseeds %u, max rounds %u\n", t[0].nb, t[0].stats.reseeds,
           t[0].stats.max_rounds);
    for (int i = 0; i < SETS; i++)
        gm_cuckoo_dev_free(&t[i]);

    /* sort + run-length encode + scan, then binary search in the unique keys */
    uint32_t *sk[SETS], *sv[SETS], *uk[SETS], *uc[SETS], *uo[SETS], *runs[SETS];
    for (int i = 0; i < SETS; i++) {
        sk[i] = dev_buf(n);
        sv[i] = dev_buf(n);
        uk[i] = dev_buf(n);
        uc[i] = dev_buf(n);
        uo[i] = dev_buf(n);
        runs[i] = dev_buf(1);
    }
    size_t b1 = 0, b2 = 0, b3 = 0;
    CK(cub::DeviceRadixSort::SortPairs(NULL, b1, dk[0], sk[0], dv[0], sv[0], n, 0, 32, s));
    CK(cub::DeviceRunLengthEncode::Encode(NULL, b2, sk[0], uk[0], uc[0], runs[0], n, s));
    CK(cub::DeviceScan::ExclusiveSum(NULL, b3, uc[0], uo[0], n, s));
    size_t temp_bytes = std::max(b1, std::max(b2, b3));
    void *temp = NULL;
    CK(cudaMalloc(&temp, temp_bytes));
    uint32_t h_runs = 0;
    auto baseline = [&](int i) {
        CK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, dk[i], sk[i], dv[i], sv[i], n, 0, 32,
                                           s));
        CK(cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, sk[i], uk[i], uc[i], runs[i], n,
                                              s));
        /* the number of runs is needed on the host (as the cuckoo build
         * reads its flags): one round trip */
        CK(cudaMemcpyAsync(&h_runs, runs[i], sizeof h_runs, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        CK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, uc[i], uo[i], h_runs, s));
    };
    float sort = median_ms(s, baseline, [](int) {});
    for (int i = 0; i < SETS; i++)
        baseline(i);
    float bs = median_ms(
        s,
        [&](int i) {
            k_bsearch_runs<<<blocks_for(n, 256), 256, 0, s>>>(uk[i], uc[i], uo[i], runs[i], dq[i],
                                                              n, count, first);
            CK(cudaGetLastError());
        },
        [](int) {});
    add_row("multi", "sort + rle + bsearch", n, per_key, sort, bs, 1.0, 0);
    printf("       build cuckoo/sort %.2f   find cuckoo/bsearch %.2f\n", build / sort, find / bs);

    CK(cudaFree(temp));
    for (int i = 0; i < SETS; i++) {
        CK(cudaFree(dk[i]));
        CK(cudaFree(dv[i]));
        CK(cudaFree(dq[i]));
        CK(cudaFree(sk[i]));
        CK(cudaFree(sv[i]));
        CK(cudaFree(uk[i]));
        CK(cudaFree(uc[i]));
        CK(cudaFree(uo[i]));
        CK(cudaFree(runs[i]));
    }
    CK(cudaFree(count));
    CK(cudaFree(first));
}

/* --profile: a few builds and retrievals for a profiler (ncu), and the
 * fixed cost of a build (n = 0: allocations, launches, one round trip). */
static void profile(cudaStream_t s)
{
    gm_cuckoo_dev t;
    uint32_t n = 5000000;
    std::vector<uint32_t> hk(n), hv(n);
    for (uint32_t j = 0; j < n; j++) {
        hk[j] = key_of(j, 99, n);
        hv[j] = j;
    }
    uint32_t *dk = to_dev(hk), *dv = to_dev(hv), *out = dev_buf(n), *first = dev_buf(n);
    for (int r = 0; r < 2; r++) {
        GMK(gm_cuckoo_build_cuda(&t, dk, dv, n, 7, NULL, s));
        GMK(gm_cuckoo_find_cuda(&t, dk, n, out, s));
        CK(cudaStreamSynchronize(s));
        gm_cuckoo_dev_free(&t);
    }
    for (uint32_t j = 0; j < n; j++)
        hk[j] = key_of(j / 16, 99, n);
    CK(cudaMemcpy(dk, hk.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    GMK(gm_multi_build_cuda(&t, dk, dv, n, 0, 7, NULL, s));
    GMK(gm_multi_find_cuda(&t, dk, n, out, first, s));
    CK(cudaStreamSynchronize(s));
    gm_cuckoo_dev_free(&t);
    GMK(gm_compact_build_cuda(&t, dk, n, 0, 7, NULL, s));
    gm_cuckoo_dev_free(&t);
    CK(cudaFree(dk));
    CK(cudaFree(dv));
    CK(cudaFree(out));
    CK(cudaFree(first));
    float fixed = median_ms(
        s, [&](int) { GMK(gm_cuckoo_build_cuda(&t, NULL, NULL, 0, 7, NULL, s)); },
        [&](int) { gm_cuckoo_dev_free(&t); });
    printf("fixed cost of a build (n = 0): %.3f ms\n", fixed);
}

int main(int argc, char **argv)
{
    char why[256] = "";
    if (gm_cuda_device_count(why, sizeof why) == 0) {
        fprintf(stderr, "no CUDA device: %s\n", why);
        return 77;
    }
    char desc[256];
    gm_cuda_device_describe(0, desc, sizeof desc);
    printf("device: %s\n", desc);

    /* keep freed stream-ordered memory in the pool between builds */
    cudaMemPool_t pool;
    CK(cudaDeviceGetDefaultMemPool(&pool, 0));
    uint64_t threshold = UINT64_MAX;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (argc > 1 && strcmp(argv[1], "--profile") == 0) {
        profile(s);
        CK(cudaStreamDestroy(s));
        return 0;
    }

    static const uint32_t sizes[] = {1000000, 5000000, 16000000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        bench_basic(sizes[i], s);
    static const uint32_t per_key[] = {1, 4, 16, 64};
    for (size_t i = 0; i < sizeof per_key / sizeof per_key[0]; i++)
        bench_multi(5000000, per_key[i], s);

    if (argc > 1) {
        FILE *f = fopen(argv[1], "w");
        if (!f) {
            perror(argv[1]);
            return 1;
        }
        fprintf(f, "table,method,n,values_per_key,build_ms,find_ms,build_keys_per_s,"
                   "find_keys_per_s,load_factor,restarts\n");
        for (size_t i = 0; i < g_rows.size(); i++) {
            const row &r = g_rows[i];
            fprintf(f, "%s,%s,%u,%u,%.4f,%.4f,%.4g,%.4g,%.4f,%u\n", r.table, r.method, r.n,
                    r.per_key, r.build_ms, r.find_ms, r.n / r.build_ms * 1e3,
                    r.n / r.find_ms * 1e3, r.load, r.restarts);
        }
        fclose(f);
    }
    CK(cudaStreamDestroy(s));
    return 0;
}
