/* gm_cuda.h: the C interface of the CUDA backend (internal; C and CUDA).
 * Every function is declared extern "C" and returns gm_status where it can
 * fail; the message of the last failure is gm_cuda_last_error().
 * Device pointers are prefixed d_, host pointers h_ (CudaSift). */
#ifndef GM_CUDA_H
#define GM_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "hash/cuckoo.h"
#include "gmatch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when there is no device, no driver or an
 * old one (never an error: callers fall back to the CPU).  *why (if not
 * NULL) gets the reason when 0. */
int gm_cuda_device_count(char *why, size_t whylen);
/* One line: "<name>, compute capability X.Y, N SMs, M MiB", or the error. */
void gm_cuda_device_describe(int dev, char *buf, size_t len);
/* Device dev's memory that allocations can still have (*avail: free on the
 * device, plus what the library's pool holds unused) and its total; 0, or
 * -1 on a CUDA error (recorded). */
int gm_cuda_device_memory(int dev, size_t *avail, size_t *total);
/* The message of the last failing CUDA call of this thread ("" if none). */
const char *gm_cuda_last_error(void);
/* The calling thread's waits for streams and events so far, and their time
 * in ms (the CUDA backend's waits entry; gm_cuda_waits sums all threads). */
void gm_cuda_thread_waits(uint64_t *count, double *ms);
/* Fault injection, for the tests of the CPU fallback: spec "alloc:N" or
 * "launch:N" makes the N-th device allocation or kernel launch from now on
 * fail as a real failure would (out of memory, launch failure), "alloc:N-"
 * and "launch:N-" every one from the N-th on; NULL or "" none (the public
 * gm_cuda_fault_inject, gmatch.h).  Returns -1 for a spec it does not
 * read. */
enum { GM_CUDA_FAULT_ALLOC = 1, GM_CUDA_FAULT_LAUNCH = 2 };
int gm_cuda_fault_set(const char *spec);
/* failures injected since the spec was set */
long gm_cuda_fault_hits(void);
/* cudaSuccess, or the injected failure of this allocation or launch */
cudaError_t gm_cuda_fault(int kind);
/* The calling thread's CUDA context, kept while the library makes its own
 * device current (gm_cuda_device_enter) and given back after
 * (gm_cuda_device_leave): an application's thread finds the device it had,
 * and a thread that had none is given none (restoring "device 0" would
 * create device 0's context in a process that uses another GPU).  The
 * driver's cuCtxGetCurrent and cuCtxSetCurrent are reached through the
 * runtime (cudaGetDriverEntryPointByVersion), so the library does not link
 * libcuda; where they cannot be had the device stays set, as before. */
typedef struct {
    void *ctx; /* the thread's context before (a CUcontext, NULL: none) */
    int saved;
} gm_cuda_scope;
/* Saves the thread's context into *s and makes dev current: cudaSetDevice
 * the first time, then dev's primary context through cuCtxSetCurrent (or
 * nothing when it is current already). */
cudaError_t gm_cuda_device_enter(int dev, gm_cuda_scope *s);
/* Makes the context saved in *s current again (nothing when none was saved). */
void gm_cuda_device_leave(gm_cuda_scope *s);
/* After a kernel launch: cudaGetLastError(), or the injected failure */
cudaError_t gm_cuda_launched(void);
/* cudaMallocAsync from the library's own pool on device 0 (made on first
 * use; the application's default pool is left alone); free with
 * cudaFreeAsync. */
cudaError_t gm_cuda_malloc_async(void **p, size_t bytes, cudaStream_t stream);
/* The current device's stream for frees that no caller's stream orders:
 * made on first use, kept for the process (device.cu says why not the
 * calling thread's per-thread stream); cudaStreamPerThread if it cannot be
 * made. */
cudaStream_t gm_cuda_free_stream(void);
/* Frees pool memory (gm_cuda_malloc_async's) of the current device without
 * waiting: cudaFreeAsync on gm_cuda_free_stream().  For
 * memory no pending work uses any more (its users' streams were waited
 * for); cudaFree would wait for the whole device, every other thread's
 * queries included.  NULL: nothing. */
cudaError_t gm_cuda_free_async(void *p);

/* A stage's device and pinned host buffers, listed once and allocated and
 * freed together: each *_dev_alloc names its buffers in one list, and its
 * *_dev_free hands the same list back. */
typedef struct {
    void **p;     /* where the buffer's pointer lives */
    size_t bytes; /* its size (unused when freeing) */
    int host;     /* 1: pinned host memory (cudaMallocHost), 0: device */
} gm_dev_buf;
/* All of the n or none: on a failure the ones made are freed again, every
 * *p is NULL and the status says why (the message: gm_cuda_last_error). */
gm_status gm_dev_bufs_alloc(const gm_dev_buf *b, int n);
/* Frees every non-NULL *p and sets it to NULL; errors are dropped (there is
 * nothing left to do with them). */
void gm_dev_bufs_free(const gm_dev_buf *b, int n);
/* The same where stream is not NULL: the device buffers from the library's
 * pool, made on stream and handed back on it (cudaFreeAsync) without
 * waiting for the device, for a lane's buffers, which grow with the
 * queries it meets (cudaMalloc and cudaFree wait for the whole device:
 * with 16 lanes growing, a batch of stills spent 1.3 ms a cudaFree,
 * docs/speed.md); the pinned host buffers from the library's own cache of
 * pinned blocks (powers of two, kept for the process: cudaMallocHost and
 * cudaFreeHost, which waits for the whole device, only when it grows), a
 * block freed once stream has finished with it.  The free is for buffers
 * that only stream's work (or work ordered before it) uses.  NULL:
 * gm_dev_bufs_alloc and gm_dev_bufs_free. */
gm_status gm_dev_bufs_alloc_on(const gm_dev_buf *b, int n, cudaStream_t stream);
void gm_dev_bufs_free_on(const gm_dev_buf *b, int n, cudaStream_t stream);
/* b's buffers made anew at b's sizes where old (the same list at the sizes
 * they were made with; NULL: none) gives another size or *p is NULL, the
 * others kept with their content, as gm_dev_bufs_alloc_on(stream) makes
 * and frees them: a stage's buffers grown without remaking those whose size
 * does not depend on the growth.  On a failure all of them are freed. */
gm_status gm_dev_bufs_resize_on(const gm_dev_buf *old, const gm_dev_buf *b, int n,
                                cudaStream_t stream);
/* The same for device buffers (host 0) from the library's pool, made on
 * stream (gm_cuda_malloc_async) and handed back on stream without waiting
 * for the device: for buffers made and freed a query (cudaMalloc and
 * cudaFree would wait for the whole device, every other lane's queries
 * included).  The free is for buffers no pending work uses any more (their
 * users' streams were waited for, or stream is theirs: a failed alloc
 * frees on it); gm_cuda_free_stream() when the caller holds no stream. */
gm_status gm_dev_bufs_pool_alloc(const gm_dev_buf *b, int n, cudaStream_t stream);
void gm_dev_bufs_pool_free(const gm_dev_buf *b, int n, cudaStream_t stream);

/* ---- hash tables on the device (src/cuda/cuckoo.cu) ---------------------------
 * Built with the algorithm and layout of the CPU tables (src/hash/cuckoo_core.h
 * lists what must match), so a device table copied to the host equals the
 * CPU table built from the same keys and seed: same slot keys, same bucket
 * seeds, same values per key as a multiset (the order of values within a key
 * may differ: phase 1 on the GPU counts with atomics), same dense indices.
 * The build functions take DEVICE arrays and run on `stream`; they
 * synchronize the stream once per phase-1 attempt (to read the attempt's
 * flags and stats; the compacting build once more to size unique[]) and
 * before returning.  They allocate stream-ordered from the library's own
 * pool (gm_cuda_malloc_async), whose freed blocks stay for the next build
 * instead of going back to the driver.  Errors: GM_ERR_INVALID (NULL
 * arguments, a key == GM_KEY_EMPTY, a repeated key in the basic table),
 * GM_ERR_HASH (no phase-1 attempt within GM_CUCKOO_MAX_RESTARTS), GM_ERR_NOMEM,
 * GM_ERR_DEVICE; on error *t is zeroed and nothing stays allocated.  The
 * debug hooks (dbg, may be NULL) act as on the CPU. */
typedef struct {
    uint32_t nb, restart, h_c0, h_c1, n;
    uint32_t *d_seeds;   /* [nb] */
    uint2 *d_slots;      /* basic: [3*nb*192] (key, value) pairs interleaved, one 8-byte
                          * slot a probe (the paper's layout, sec. 4.1), T1 | T2 | T3 */
    uint32_t *d_keys;    /* multi, compact: [3*nb*192] (basic: NULL, keys in d_slots) */
    uint32_t *d_vals;    /* compact: [3*nb*192] dense indices (basic: NULL) */
    uint32_t *d_counts;  /* multi: [3*nb*192] */
    uint32_t *d_offsets; /* multi: [3*nb*192] */
    uint32_t *d_values;  /* multi: [n] values grouped by key */
    uint32_t *d_unique;  /* compact: [u] */
    uint32_t u;          /* compact: unique keys */
    gm_cuckoo_stats stats;
} gm_cuckoo_dev;

/* A by-value view for kernels (cuCollections' ref). */
typedef struct {
    uint32_t nb, restart, h_c0, h_c1;
    const uint32_t *seeds, *keys, *vals, *counts, *offsets, *values;
    const uint2 *slots; /* basic: (key, value) slots; keys and vals are NULL then */
} gm_cuckoo_view;

gm_status gm_cuckoo_build_cuda(gm_cuckoo_dev *t, const uint32_t *d_keys, const uint32_t *d_vals,
                               uint32_t n, uint64_t seed, const gm_cuckoo_debug *dbg,
                               cudaStream_t stream);
gm_status gm_multi_build_cuda(gm_cuckoo_dev *t, const uint32_t *d_keys, const uint32_t *d_vals,
                              uint32_t n, uint32_t unique_bound, uint64_t seed,
                              const gm_cuckoo_debug *dbg, cudaStream_t stream);
gm_status gm_compact_build_cuda(gm_cuckoo_dev *t, const uint32_t *d_keys, uint32_t n,
                                uint32_t unique_bound, uint64_t seed, const gm_cuckoo_debug *dbg,
                                cudaStream_t stream);
/* Bulk retrieval: basic d_out[i] = value or GM_KEY_EMPTY; compact: dense
 * index or GM_KEY_EMPTY; multi: d_out[i] = count and d_first[i] = offset
 * (d_first may be NULL).  Asynchronous on stream. */
gm_status gm_cuckoo_find_cuda(const gm_cuckoo_dev *t, const uint32_t *d_keys, uint32_t n,
                              uint32_t *d_out, cudaStream_t stream);
gm_status gm_compact_find_cuda(const gm_cuckoo_dev *t, const uint32_t *d_keys, uint32_t n,
                               uint32_t *d_out, cudaStream_t stream);
gm_status gm_multi_find_cuda(const gm_cuckoo_dev *t, const uint32_t *d_keys, uint32_t n,
                             uint32_t *d_count, uint32_t *d_first, cudaStream_t stream);
gm_cuckoo_view gm_cuckoo_dev_view(const gm_cuckoo_dev *t);
/* Copies to host tables of cuckoo.h (for the parity tests); the host table
 * is freed with gm_cuckoo_free / gm_multi_free / gm_compact_free. */
gm_status gm_cuckoo_dev_to_host(const gm_cuckoo_dev *t, gm_cuckoo *h);
gm_status gm_multi_dev_to_host(const gm_cuckoo_dev *t, gm_multi *h);
gm_status gm_compact_dev_to_host(const gm_cuckoo_dev *t, gm_compact *h);
/* Frees the table's device arrays without waiting (gm_cuda_free_async: the
 * streams that used it must have been waited for) and zeroes *t; safe on a
 * zeroed or failed table. */
void gm_cuckoo_dev_free(gm_cuckoo_dev *t);
/* The same, stream-ordered (cudaFreeAsync back to the pool, no device
 * synchronization): for tables built per query. */
void gm_cuckoo_dev_free_async(gm_cuckoo_dev *t, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

/* ---- edges, compaction and edge points (src/cuda/sobel.cu, src/cuda/compact.cu) ----
 * Twins of gm_edges_cpu, gm_compact_flags_cpu and gm_edge_points_cpu
 * (src/stages/) with the same results: gx, gy, mag2, edge flags, threshold and
 * indices bit for bit; points bit for bit in x, y and w (the float formulas
 * of the CPU with round-to-nearest intrinsics, no FMA contraction) and within
 * an ulp in angle.
 * The buffers belong to the caller: allocated once for the largest frame,
 * reused frame after frame; the stage calls allocate nothing, never
 * synchronize and are asynchronous on their stream (inputs read and outputs
 * written in stream order).  Only the *_alloc / *_free calls and
 * gm_edges_dev_to_host synchronize. */
#include <math.h> /* first: the stage headers include it, and C++'s may not sit in extern "C" */
#ifdef __cplusplus
extern "C" {
#endif
#include "stages/sobel.h"
#include "stages/points.h" /* gm_edges, gm_point */

#define GM_EDGES_HIST_BINS GM_EDGE_HIST_BINS /* adaptive_threshold()'s bins (stages/sobel.h) */

typedef struct {
    int w, h;             /* of the last gm_edges_cuda call */
    size_t cap;           /* pixels the buffers hold (w * h of gm_edges_dev_alloc) */
    int16_t *d_gx, *d_gy; /* [w*h] packed, row stride w: as gm_edges */
    int32_t *d_mag2;      /* [w*h] */
    uint8_t *d_edge;      /* [w*h] 1 where a thinned edge pixel is above threshold */
    int32_t *d_threshold; /* [1] on mag2, on the device */
    int32_t *h_threshold; /* [1] pinned host copy, valid once the stream has reached it */
    uint32_t *d_hist;     /* [2 * GM_EDGES_HIST_BINS] scratch: all pixels, thinned pixels */
    cudaStream_t pool;    /* gm_edges_dev_alloc_on's stream (NULL: cudaMalloc's buffers) */
} gm_edges_dev;

/* Device buffers for frames of up to w * h pixels (any shape); e is zeroed
 * first.  Free with gm_edges_dev_free (also safe on a zeroed or failed e). */
gm_status gm_edges_dev_alloc(gm_edges_dev *e, int w, int h);
/* The same grown in place on stream (gm_dev_bufs_resize_on): e zeroed, or
 * made by this call on the same stream (its content dropped, the
 * size-independent buffers kept); its device buffers from the library's
 * pool, handed back on stream by gm_edges_dev_free.  On a failure e is
 * zeroed, its buffers freed. */
gm_status gm_edges_dev_alloc_on(gm_edges_dev *e, int w, int h, cudaStream_t stream);
void gm_edges_dev_free(gm_edges_dev *e);
/* gm_edges_cpu on the device: d_img is a device 8-bit image, rows `pitch`
 * BYTES apart (pitch >= w; no alignment needed), w * h <= e->cap.  Fills
 * e->d_gx, d_gy, d_mag2, d_edge, d_threshold and e->w, e->h, and queues the
 * copy of the threshold to *e->h_threshold.  Four kernels, asynchronous on
 * stream.  GM_ERR_INVALID on bad arguments (nothing queued). */
gm_status gm_edges_cuda(const uint8_t *d_img, size_t pitch, int w, int h, int max_edges,
                        gm_edges_dev *e, cudaStream_t stream);
/* Copies the last result into host arrays (for the parity tests; the caller
 * frees *out with gm_edges_free).  Synchronizes stream. */
gm_status gm_edges_dev_to_host(const gm_edges_dev *e, cudaStream_t stream, gm_edges *out);

typedef struct {
    uint32_t cap;         /* flags per call at most (of gm_compact_flags_dev_alloc) */
    uint32_t max_blocks;  /* blocks of 4096 flags in cap */
    uint32_t *d_blk;      /* [2 * max_blocks] scratch: block counts, block offsets */
    void *d_temp;         /* scratch of cub::DeviceScan */
    size_t temp_bytes;
    uint32_t *d_count;    /* [1] flags set in the last call (may exceed out_cap) */
    uint32_t *h_count;    /* [1] pinned host copy, valid once the stream has reached it */
    cudaStream_t pool;    /* gm_compact_flags_dev_alloc_on's stream (NULL: cudaMalloc's) */
} gm_compact_flags_dev;

/* Scratch for compacting up to cap flags; c is zeroed first.  Free with
 * gm_compact_flags_dev_free (also safe on a zeroed or failed c). */
gm_status gm_compact_flags_dev_alloc(gm_compact_flags_dev *c, uint32_t cap);
/* Grown in place on stream, as gm_edges_dev_alloc_on. */
gm_status gm_compact_flags_dev_alloc_on(gm_compact_flags_dev *c, uint32_t cap, cudaStream_t stream);
void gm_compact_flags_dev_free(gm_compact_flags_dev *c);
/* gm_compact_flags_cpu on the device: the indices i < n with d_flags[i] != 0
 * in increasing order into d_out, at most out_cap of them (the first ones);
 * the full count goes to *c->d_count and is queued to *c->h_count, so
 * count > out_cap reports an overflow.  n <= c->cap.  Asynchronous on stream.
 * The edge flags of gm_edges_cuda(max_edges) are never more than max_edges
 * (for max_edges >= 0), so out_cap = max_edges cannot overflow. */
gm_status gm_compact_flags_cuda(gm_compact_flags_dev *c, const uint8_t *d_flags, uint32_t n,
                                uint32_t *d_out, uint32_t out_cap, cudaStream_t stream);
/* gm_edge_points_cpu on the device: d_pts[k] for k < min(*d_n, max_n) (d_n a
 * device count such as c->d_count, or NULL for max_n) from the indices d_idx
 * into the edges of e.  Indices must be pixels of e (as compacted from
 * e->d_edge); a stray one on the outer ring gets t = 0, one past the image a
 * zero point.  Asynchronous on stream; reads *d_n on the device. */
gm_status gm_edge_points_cuda(const gm_edges_dev *e, const uint32_t *d_idx, const uint32_t *d_n,
                              uint32_t max_n, gm_point *d_pts, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
