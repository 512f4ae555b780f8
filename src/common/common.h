/* common.h: what every layer below the public API shares: GM_HD (a function
 * compiled for the host and, from CUDA code, the device), the one source of
 * randomness (splitmix64), checked size arithmetic, large arrays on huge
 * pages (gm_alloc_large) and the thresholds below which a loop stays on one
 * thread. */
#ifndef GM_COMMON_H
#define GM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "gmatch.h"

#ifndef __CUDACC__
#include <omp.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GM_PI 3.14159265358979323846

/* Loops over fewer pixels than this run on one thread: every OpenMP region
 * ends in a barrier, and on a machine whose other cores are busy a barrier
 * waits for a descheduled thread (measured: a query set 4x slower with one
 * core taken by another process).  Queries are mostly below it. */
#define GM_PAR_PIXELS (1 << 17)
/* The same for loops over points. */
#define GM_PAR_POINTS 20000

/* Functions that kernels share with the CPU code. */
#ifndef GM_HD
#ifdef __CUDACC__
#define GM_HD __host__ __device__
#else
#define GM_HD
#endif
#endif

/* Overflow-checked size arithmetic (stb's stbi__mul2sizes_valid). */
static inline int gm_mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

/* Memory for a large array that is written whole soon after it is made
 * (the tables' items, buckets and slots; the edges', corners' and edge
 * map's per-pixel arrays): malloc's count * size bytes
 * (overflow checked; NULL when it overflows or there is no memory), freed
 * with free().  From GM_LARGE_BYTES on, its whole pages are advised as huge
 * pages (madvise MADV_HUGEPAGE, where the system has it: Linux's
 * transparent huge pages in their "madvise" mode, Debian's default), so
 * that fresh memory faults once a 2 MiB page instead of once each 4 KiB,
 * while memory malloc reuses stays as it is: on the 2-core development VM
 * a 480 x 480 reference's tables took 124-129 ms, 65-80 ms so
 * (docs/speed.md, "Huge pages for the tables"). */
#define GM_LARGE_BYTES ((size_t)2 << 20)
void *gm_alloc_large(size_t count, size_t size);

#ifndef __CUDACC__
/* The threads of the library's parallel regions (each has a
 * num_threads(gm_threads()) clause): the budget of the call in progress on
 * this thread, set by its entry point for the length of the call
 * (gm_ref_prepare and gm_match: the parameters' threads; a video worker:
 * its frame threads), or OpenMP's default when none is set.  The library
 * never calls omp_set_num_threads, so an application's OpenMP settings stay
 * as it left them. */
extern _Thread_local int gm_thread_budget;
static inline int gm_threads(void)
{
    return gm_thread_budget > 0 ? gm_thread_budget : omp_get_max_threads();
}
/* For an entry point: sets the budget to n (> 0) unless a caller up the
 * stack has set one; returns what to hand gm_threads_leave. */
static inline int gm_threads_enter(int n)
{
    int old = gm_thread_budget;
    if (old <= 0 && n > 0)
        gm_thread_budget = n;
    return old;
}
static inline void gm_threads_leave(int old) { gm_thread_budget = old; }
/* Wall time in MILLISECONDS, for the stage timings. */
static inline double gm_now_ms(void) { return omp_get_wtime() * 1000.0; }
#endif

/* splitmix64: the one source of randomness; pure function of its input, so
 * results are independent of thread count and order. */
static inline GM_HD uint64_t gm_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A hash threshold that keeps a share prob of uniform 64-bit hashes. */
static inline uint64_t gm_prob_threshold(double prob)
{
    return prob >= 1.0 ? UINT64_MAX : (uint64_t)(prob * 18446744073709551616.0);
}

#ifdef __cplusplus
}
#endif

#endif
