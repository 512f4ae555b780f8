/* cuckoo_find.cu: retrieval from the GPU tables of src/cuda/cuckoo.cu (bulk
 * queries, at most three probes each), their kernel views, the copies back
 * to the host tables of cuckoo.h (for the parity tests) and freeing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash/cuckoo_core.h"
#include "cuda/cuda_check.cuh"
#include "cuda/gm_cuda.h"

#define GM_FIND_THREADS 256

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

/* The table remembers no stream: freed on the device's free stream
 * (gm_cuda_free_stream), not by cudaFree, which would wait for the whole
 * device.  Its users' streams must have been waited for. */
extern "C" void gm_cuckoo_dev_free(gm_cuckoo_dev *t)
{
    gm_cuckoo_dev_free_async(t, gm_cuda_free_stream());
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
