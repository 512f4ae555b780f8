/* verify.cu: verification and refinement of candidate transforms on the GPU:
 * a thread block a candidate to verify, several blocks (or a cluster of
 * them) a candidate to refine or grow.
 *
 * Loose verification (k_verify): the block's threads take the query points,
 * count hits and chance hits with the CPU's per-point rule
 * (gm_verify_point), and the block sums the counts; integer sums, so the
 * score equals gm_verify_cpu's whatever the order.
 *
 * Refinement (gm_refine_verify_cuda): each iteration is one launch.
 * k_refine_part spreads a candidate's points over blocks of
 * GM_REFINE_CHUNK, a point a thread: each finds its partner
 * (gm_refine_match) and its rows of the normal equations (upper triangle
 * and right-hand side, in double); each block sums its rows (warp shuffles,
 * then the warps in order) into its partial.  The candidate's last block
 * to finish sums its partials in block order (deterministic), solves
 * (gm_fit_finish) and publishes the new h, or stops the loop as the CPU's
 * `break` does.  On a device with thread block clusters (compute capability
 * 9.0 on) the whole refinement is one launch instead (k_refine_fused): a
 * cluster of blocks a candidate sums the same chunks the same way, its
 * first block's first warp solves (warp_normal_solve: gm_solve_n's
 * operations over the lanes), cluster barriers between the iterations; the same h
 * bit for bit, one launch where there were a memset, one an iteration and
 * the score's.  Then the strict score of the final h
 * (gm_verify_strict_point), exact for that h.  The sums run in another
 * order than the CPU's point order, so the refined h agrees with the CPU's
 * to rounding, not bit for bit.  Why split: one block a candidate kept a
 * single candidate's six dependent iterations on one SM, latency bound
 * (0.94 ms a launch under ncu on an H200, 94% of a public still's kernel
 * time, 2026-11-27).  The spread's four refits are four candidates of the
 * same refinement, each leaving out its quadrant.  The growth's radius
 * steps run in one launch too: across a cluster (k_grow_fused), or, on a
 * device without clusters, within one block a candidate (k_grow_verify,
 * refine_block).
 *
 * Exactness: the per-point functions are the CPU's (src/stages/verify_core.h,
 * src/stages/fit_core.h); this file is compiled with --fmad=false so no
 * multiply-add is contracted; lrint rounds half to even on both sides; the
 * angles' cosf/sinf and the similarity's atan2 come from the host. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cooperative_groups.h>

#include "cuda/cuda_check.cuh"
#include "cuda/gm_cuda.h"
#include "stages/points.h"
#include "stages/verify.h"
#include "cuda/verify_cuda.h"
#include "stages/verify_core.h"

#include "cuda/verify_block.cuh" /* GM_VERIFY_THREADS, map_view, block_sum_u32, verify_block */

/* Which candidates of a launch run: those below *live (a device count;
 * NULL: all) with take[c] set (a device flag a candidate; NULL: all).  The
 * others are left as they are, a whole block or cluster returning at once. */
struct refine_gate {
    const uint32_t *live;
    const uint8_t *take;
};

/* A model the refinements know. */
static bool model_known(gm_model m)
{
    return m == GM_MODEL_SIMILARITY || m == GM_MODEL_AFFINE || m == GM_MODEL_HOMOGRAPHY;
}

static __device__ __forceinline__ bool gate_off(const refine_gate &g, uint32_t c)
{
    return (g.live && c >= *g.live) || (g.take && !g.take[c]);
}

/* gm_refine_match (src/stages/verify_core.h) over the packed cells: the same
 * partner (the same scan order and comparisons) and the same corr, but the
 * window's cells are independent loads that the unrolled loop issues
 * together, where the CPU layout needs nearest -> dir -> pts in turn (the
 * refinement was latency bound: 0.9 ms for 3 candidates x 6 iterations). */
/* A point's place under h: (x, y), its pixel (ix, iy) and its carried
 * normal (ca, sa); 0 when the pixel is outside the map. */
struct refine_at {
    double x, y;
    long ix, iy;
    float ca, sa;
};

static __device__ __forceinline__ int refine_place(int w, int hgt, const double h[9], gm_point p,
                                                   float cp, float sp, refine_at *a)
{
    gm_h_apply(h, p.x, p.y, &a->x, &a->y);
    a->ix = lrint(a->x), a->iy = lrint(a->y);
    if (a->ix < 0 || a->iy < 0 || a->ix >= w || a->iy >= hgt)
        return 0;
    gm_h_normal(h, p.x, p.y, cp, sp, &a->ca, &a->sa);
    return 1;
}

/* The window's rows dy in [Y0, Y1] (within radius r) scanned in row-major
 * order for the nearest agreeing cell: its squared distance into *bestd and
 * the cell into *best where it beats *bestd strictly (so rows scanned
 * before keep their ties). */
template <int Y0, int Y1>
static __device__ __forceinline__ void refine_rows(const float4 *__restrict__ cells, int w,
                                                   int hgt, const refine_at &a, int r,
                                                   double *bestd, float4 *best)
{
#pragma unroll
    for (int dy = Y0; dy <= Y1; dy++) {
#pragma unroll
        for (int dx = -GM_REFINE_MAX_R; dx <= GM_REFINE_MAX_R; dx++) {
            const long yy = a.iy + dy, xx = a.ix + dx;
            if (dy < -r || dy > r || dx < -r || dx > r || yy < 0 || yy >= hgt || xx < 0 ||
                xx >= w)
                continue;
            const float4 e = __ldg(&cells[(size_t)yy * w + xx]);
            if (isnan(e.x))
                continue;
            if (e.z * a.ca + e.w * a.sa < GM_REFINE_COS)
                continue;
            double ddx = e.x - a.x, ddy = e.y - a.y, d = ddx * ddx + ddy * ddy;
            if (d < *bestd) {
                *bestd = d;
                *best = e;
            }
        }
    }
}

static __device__ __forceinline__ int refine_match_cells(const float4 *__restrict__ cells, int w,
                                                         int hgt, const double h[9], gm_point p,
                                                         float cp, float sp, int r, double huber,
                                                         gm_corr *c)
{
    refine_at a;
    if (!refine_place(w, hgt, h, p, cp, sp, &a))
        return 0;
    double bestd = 1e30;
    float4 best = make_float4(NAN, 0, 0, 0);
    refine_rows<-GM_REFINE_MAX_R, GM_REFINE_MAX_R>(cells, w, hgt, a, r, &bestd, &best);
    if (isnan(best.x))
        return 0;
    gm_corr_set(c, p, a.x, a.y, best.x, best.y, best.z, best.w, huber);
    return 1;
}

/* Block c: gm_verify_cpu of the similarity params[9c..9c+6) (rot[c] its
 * rotation) on the n points. */
static __global__ void __launch_bounds__(GM_VERIFY_THREADS)
    k_verify(gm_map_view map, const gm_point *pts, uint32_t n, const double *params,
             const float *rot, gm_verify_score *scores)
{
    __shared__ double s_m[6];
    const uint32_t c = blockIdx.x;
    if (threadIdx.x < 6)
        s_m[threadIdx.x] = params[9 * (size_t)c + threadIdx.x];
    __syncthreads();
    double m[6];
    for (int i = 0; i < 6; i++)
        m[i] = s_m[i];
    const gm_verify_score sc = verify_block(map, pts, n, m, rot[c]);
    if (threadIdx.x == 0)
        scores[c] = sc;
}

/* The largest gm_grow_d2 from seed of the points first, first + stride, ...
 * below n that the block's threads take, returned to every thread (max is
 * exact in any order); s_max: GM_VERIFY_WARPS doubles of shared memory. */
static __device__ double block_max_d2(const gm_point *pts, uint32_t n, const double seed[3],
                                      uint32_t first, uint32_t stride, double *s_max)
{
    double m2 = 0;
    for (uint32_t k = first; k < n; k += stride)
        m2 = fmax(m2, gm_grow_d2(pts[k], seed));
    for (int o = 16; o > 0; o >>= 1)
        m2 = fmax(m2, __shfl_xor_sync(0xFFFFFFFFu, m2, o));
    if ((threadIdx.x & 31) == 0)
        s_max[threadIdx.x >> 5] = m2;
    __syncthreads();
    double bm = 0;
    for (int wi = 0; wi < GM_VERIFY_WARPS; wi++)
        bm = fmax(bm, s_max[wi]);
    return bm;
}

/* Sums NV doubles per thread of the first GM_VERIFY_THREADS over the block
 * into s_out[NV] (valid after the trailing __syncthreads; a larger block's
 * other threads only meet the barriers); s_warp: GM_VERIFY_WARPS * NV
 * doubles.  Warps in order, so the result does not depend on scheduling. */
template <int NV>
static __device__ void block_sum_f64(double (&v)[NV], double *s_warp, double *s_out)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp < GM_VERIFY_WARPS)
#pragma unroll
        for (int i = 0; i < NV; i++)
            for (int off = 16; off > 0; off >>= 1)
                v[i] += __shfl_down_sync(0xFFFFFFFFu, v[i], off);
    if (lane == 0 && warp < GM_VERIFY_WARPS)
#pragma unroll
        for (int i = 0; i < NV; i++)
            s_warp[warp * NV + i] = v[i];
    __syncthreads();
    for (int i = threadIdx.x; i < NV; i += blockDim.x) {
        double s = 0;
        for (int w = 0; w < GM_VERIFY_WARPS; w++)
            s += s_warp[w * NV + i];
        s_out[i] = s;
    }
    __syncthreads();
}

/* The points a refinement of the block takes: within the disc (seed x, y;
 * squared radius r2: gm_grow_d2). */
struct refine_set {
    double seed[3], r2;
};

static __device__ __forceinline__ bool in_set(const refine_set &m, gm_point p)
{
    return gm_grow_d2(p, m.seed) <= m.r2;
}

/* The normal equations of a model with NP parameters as NV = NP (NP + 1) / 2
 * + NP + 1 doubles to sum: the upper triangle of A, b, the pair count
 * (exact: at most n < 2^53). */
template <int NP, int NV>
static __device__ __forceinline__ void normal_pack(const double (&A)[8][8], const double (&b)[8],
                                                   uint32_t cnt, double (&v)[NV])
{
    constexpr int NA = NP * (NP + 1) / 2;
    int i = 0;
#pragma unroll
    for (int j = 0; j < NP; j++)
#pragma unroll
        for (int k = j; k < NP; k++)
            v[i++] = A[j][k];
#pragma unroll
    for (int j = 0; j < NP; j++)
        v[NA + j] = b[j];
    v[NV - 1] = (double)cnt;
}

/* The summed equations solved (gm_fit_finish) from hn into hh: 0, or
 * nonzero for too few pairs or a degenerate solve (the CPU's break). */
template <int MODEL, int NP>
static __device__ int normal_solve(const double *sum, const double hn[9], double hh[9])
{
    constexpr int NA = NP * (NP + 1) / 2;
    double AA[8][8], bb[8];
    int e = 0;
    for (int j = 0; j < NP; j++)
        for (int k = j; k < NP; k++)
            AA[j][k] = AA[k][j] = sum[e++];
    for (int j = 0; j < NP; j++)
        bb[j] = sum[NA + j];
    const int used = (int)sum[NA + NP];
    return used < GM_REFINE_MIN_PAIRS || gm_fit_finish((gm_model)MODEL, used, AA, bb, hn, hh) != 0;
}

/* normal_solve by the 32 lanes of one warp, for the cluster's solve that
 * every other warp of the cluster waits for at a barrier (one thread's
 * solve in local memory was the growth's bound: under ncu, k_grow_fused's
 * warps stalled at barriers half of their cycles).  The same operations as
 * gm_solve_n and gm_fit_finish element by element, in shared memory: the
 * column equilibration a lane a column, the pivot search by every lane
 * alike, the row swap and each elimination step's updates spread over the
 * lanes (an element's updates in the same order of pivots), the back
 * substitution and the model's h on lane 0; so the same h bit for bit
 * (this file is built without contracted multiply-adds).  Returns (to
 * every lane) nonzero for too few pairs or a degenerate solve; hh on lane
 * 0. */
struct warp_solve_mem {
    double A[8][8], b[8], x[8], sc[8], f[8];
};

template <int MODEL, int NP>
static __device__ int warp_normal_solve(const double *sum, const double hn[9], double hh[9],
                                        warp_solve_mem *m)
{
    constexpr int NA = NP * (NP + 1) / 2;
    const int lane = threadIdx.x & 31;
    const int used = (int)sum[NA + NP];
    if (used < GM_REFINE_MIN_PAIRS || used < (MODEL == GM_MODEL_SIMILARITY ? 2 : NP))
        return 1;
    for (int e = lane; e < NA; e += 32) { /* the upper triangle's entry e, row by row */
        int j = 0, k = e;
        while (k >= NP - j)
            k -= NP - j, j++;
        k += j;
        m->A[j][k] = m->A[k][j] = sum[e];
    }
    if (lane < NP)
        m->b[lane] = sum[NA + lane];
    __syncwarp();
    if (lane < NP) {
        double mx = 0;
        for (int i = 0; i < NP; i++)
            mx = fmax(mx, fabs(m->A[i][lane]));
        const double sc = mx > 0 ? 1.0 / mx : 1.0;
        m->sc[lane] = sc;
        for (int i = 0; i < NP; i++)
            m->A[i][lane] *= sc;
    }
    __syncwarp();
    for (int c = 0; c < NP; c++) {
        int p = c;
        for (int r = c + 1; r < NP; r++)
            if (fabs(m->A[r][c]) > fabs(m->A[p][c]))
                p = r;
        if (fabs(m->A[p][c]) < 1e-12)
            return 1; /* every lane read the same column */
        __syncwarp();
        if (p != c) {
            if (lane < NP) {
                const double t = m->A[c][lane];
                m->A[c][lane] = m->A[p][lane];
                m->A[p][lane] = t;
            } else if (lane == NP) {
                const double t = m->b[c];
                m->b[c] = m->b[p];
                m->b[p] = t;
            }
            __syncwarp();
        }
        if (lane > c && lane < NP)
            m->f[lane] = m->A[lane][c] / m->A[c][c];
        __syncwarp();
        const int cols = NP - c + 1; /* columns c..NP-1, then b */
        for (int t = lane; t < (NP - c - 1) * cols; t += 32) {
            const int r = c + 1 + t / cols, k = c + t % cols;
            if (k < NP)
                m->A[r][k] -= m->f[r] * m->A[c][k];
            else
                m->b[r] -= m->f[r] * m->b[c];
        }
        __syncwarp();
    }
    int bad = 0;
    if (lane == 0) {
        double *x = m->x;
        for (int r = NP - 1; r >= 0; r--) {
            double sr = m->b[r];
            for (int k = r + 1; k < NP; k++)
                sr -= m->A[r][k] * x[k];
            x[r] = sr / m->A[r][r];
        }
        for (int j = 0; j < NP; j++) {
            x[j] *= m->sc[j];
            if (!isfinite(x[j]))
                bad = 1;
        }
        if (!bad && MODEL == GM_MODEL_SIMILARITY) {
            hh[0] = x[0], hh[1] = -x[1], hh[2] = x[2];
            hh[3] = x[1], hh[4] = x[0], hh[5] = x[3];
            hh[6] = hh[7] = 0, hh[8] = 1;
        } else if (!bad && MODEL == GM_MODEL_AFFINE) {
            for (int j = 0; j < 6; j++)
                hh[j] = x[j];
            hh[6] = hh[7] = 0, hh[8] = 1;
        } else if (!bad) {
            const double sn = hn[8] != 0 ? hn[8] : 1;
            for (int j = 0; j < 8; j++)
                hh[j] = hn[j] / sn + x[j];
            hh[8] = 1;
        }
    }
    return __shfl_sync(0xFFFFFFFFu, bad, 0);
}

/* A pair's rows of the normal equations (hn: gm_fit_prepare's) added to A
 * and b. */
template <int MODEL, int NP>
static __device__ __forceinline__ void refine_add(const gm_corr &q, const double hn[9],
                                                  double (&A)[8][8], double (&b)[8])
{
    double rows[3][8] = {{0}}, tgt[3], ws[3];
    gm_fit_rows((gm_model)MODEL, hn, q.qx, q.qy, q.rx, q.ry, q.nx, q.ny, q.w, rows, tgt, ws);
    gm_fit_accumulate(NP, rows, tgt, ws, 1, A, b);
}

/* Point k's rows of the normal equations under h (hn: gm_fit_prepare's)
 * added to A and b when it has a partner within radius r: 1, else 0. */
template <int MODEL, int NP>
static __device__ __forceinline__ uint32_t refine_point(const float4 *cells, int w, int hgt,
                                                        const gm_point *pts, const float *cs,
                                                        uint32_t k, const double h[9],
                                                        const double hn[9], int r, double huber,
                                                        double (&A)[8][8], double (&b)[8])
{
    gm_corr q;
    if (!refine_match_cells(cells, w, hgt, h, pts[k], cs[2 * k], cs[2 * k + 1], r, huber, &q))
        return 0;
    refine_add<MODEL, NP>(q, hn, A, b);
    return 1;
}

/* gm_refine_model_cpu(MODEL, iters) of the block's s_h on the points of set
 * among the n points, by the whole block; s_h keeps the result.  The CPU
 * refines those points as its own set: too few of them (n_in) leave h
 * alone, too few pairs or a degenerate solve end the iterations. */
template <int MODEL>
static __device__ void refine_block(const float4 *cells, int w, int hgt, const gm_point *pts,
                                    const float *cs, uint32_t n, uint32_t n_in,
                                    const refine_set &set, int iters, double *s_h, int *s_stop,
                                    double *s_warp, double *s_sum)
{
    constexpr int NP = MODEL == GM_MODEL_SIMILARITY ? 4 : MODEL == GM_MODEL_AFFINE ? 6 : 8;
    constexpr int NA = NP * (NP + 1) / 2; /* upper triangle of A, then b, then the pair count */
    constexpr int NV = NA + NP + 1;
    __syncthreads(); /* every thread is past the previous call's reads of s_stop */
    if (threadIdx.x == 0)
        *s_stop = n_in < GM_REFINE_MIN_PAIRS; /* the CPU leaves h alone */
    __syncthreads();
    for (int it = 0; it < iters && !*s_stop; it++) {
        double h[9], hn[9];
        for (int i = 0; i < 9; i++)
            h[i] = s_h[i];
        gm_fit_prepare(h, hn);
        const int r = gm_refine_radius(it);
        const double huber = gm_refine_huber(it);
        double A[8][8] = {{0}}, b[8] = {0};
        uint32_t cnt = 0;
        for (uint32_t k = threadIdx.x; k < n; k += blockDim.x) {
            if (in_set(set, pts[k]))
                cnt += refine_point<MODEL, NP>(cells, w, hgt, pts, cs, k, h, hn, r, huber, A, b);
        }
        double v[NV];
        normal_pack<NP, NV>(A, b, cnt, v);
        block_sum_f64<NV>(v, s_warp, s_sum);
        if (threadIdx.x == 0) {
            double hh[9];
            if (normal_solve<MODEL, NP>(s_sum, hn, hh)) {
                *s_stop = 1;
            } else {
                for (int j = 0; j < 9; j++)
                    s_h[j] = hh[j];
            }
        }
        __syncthreads();
    }
}

/* The strict score of the block's s_h into scores[c], s_h into params. */
static __device__ void strict_block(const gm_map_view &map, const gm_point *pts, const float *cs,
                                    uint32_t n, const double *s_h, uint32_t *s_hits,
                                    uint32_t *s_bg, uint32_t *s_in, double *params, gm_verify_score *scores,
                                    uint32_t c)
{
    double h[9];
    for (int i = 0; i < 9; i++)
        h[i] = s_h[i];
    uint32_t hits = 0, bg = 0, in = 0;
    for (uint32_t k = threadIdx.x; k < n; k += blockDim.x)
        hits += gm_verify_strict_point(&map, h, pts[k], cs[2 * k], cs[2 * k + 1], &bg, &in);
    hits = block_sum_u32(hits, s_hits);
    bg = block_sum_u32(bg, s_bg);
    in = block_sum_u32(in, s_in);
    if (threadIdx.x == 0) {
        scores[c] = gm_score_of(n, in, hits, bg);
        for (int j = 0; j < 9; j++)
            params[9 * (size_t)c + j] = h[j];
    }
}

#define GM_MAX_NV (36 + 8 + 1) /* NV of the homography */

/* The split refinement: a block's points, GM_REFINE_CHUNK of them (a
 * thread each), and the partial sums' stride. */
#define GM_REFINE_CHUNK GM_VERIFY_THREADS
/* Threads a point in the one-launch refinement of a similarity or an
 * affine (k_refine_fused): 2, a helper scanning half the partner window. */
#define GM_REFINE_HELP 2
/* A helper thread's partner for its point (chunk_partial with HELP 2). */
struct refine_help {
    double d;
    float4 e;
};
/* The blocks of a candidate's cluster in the one-launch refinement (8: the
 * portable cluster size) */
#define GM_REFINE_CLUSTER 8

/* Chunk b of candidate c's points (GM_REFINE_CHUNK of them, a thread a
 * point): their rows of the normal equations under h summed over the block
 * and written to part[(c nb + b) GM_MAX_NV ..).  A point takes part when it
 * is in set (NULL: every point) and, qw > 0, outside quadrant c of a qw x qh
 * query.  The split refinement (k_refine_part) and the cluster's
 * (cluster_refine) both sum a chunk here, so their partials are the same
 * bit for bit. */
template <int MODEL, int NP, int NV, int HELP>
static __device__ __forceinline__ void chunk_partial(const float4 *cells, int w, int hgt,
                                                     const gm_point *pts, const float *cs,
                                                     uint32_t n, uint32_t b, uint32_t c,
                                                     uint32_t nb, const refine_set *set, int qw,
                                                     int qh, int it, const double (&h)[9],
                                                     const double (&hn)[9], double *s_warp,
                                                     double *s_sum, double *part,
                                                     refine_help *s_help)
{
    double A[8][8] = {{0}}, rb[8] = {0};
    uint32_t cnt = 0;
    const uint32_t t = threadIdx.x % GM_REFINE_CHUNK, k = b * GM_REFINE_CHUNK + t;
    const bool take = k < n && (qw <= 0 || gm_quadrant(pts[k], qw, qh) != (int)c) &&
                      (!set || in_set(*set, pts[k]));
    if (HELP == 1) {
        if (take)
            cnt = refine_point<MODEL, NP>(cells, w, hgt, pts, cs, k, h, hn,
                                          gm_refine_radius(it), gm_refine_huber(it), A, rb);
    } else {
        /* a point, two threads: thread t scans the window's rows up to the
         * point's own, thread t + GM_REFINE_CHUNK the rows below, and t
         * keeps the helper's partner only where it is strictly nearer (the
         * first of equals in row-major order, as the whole scan's) */
        refine_at a;
        const int ok = take && refine_place(w, hgt, h, pts[k], cs[2 * k], cs[2 * k + 1], &a);
        const int r = gm_refine_radius(it);
        double bestd = 1e30;
        float4 best = make_float4(NAN, 0, 0, 0);
        if (threadIdx.x >= GM_REFINE_CHUNK) {
            if (ok)
                refine_rows<1, GM_REFINE_MAX_R>(cells, w, hgt, a, r, &bestd, &best);
            s_help[t].d = bestd;
            s_help[t].e = best;
        } else if (ok) {
            refine_rows<-GM_REFINE_MAX_R, 0>(cells, w, hgt, a, r, &bestd, &best);
        }
        __syncthreads();
        if (threadIdx.x < GM_REFINE_CHUNK && ok) {
            if (s_help[t].d < bestd)
                best = s_help[t].e;
            if (!isnan(best.x)) {
                gm_corr q;
                gm_corr_set(&q, pts[k], a.x, a.y, best.x, best.y, best.z, best.w,
                            gm_refine_huber(it));
                refine_add<MODEL, NP>(q, hn, A, rb);
                cnt = 1;
            }
        }
        __syncthreads(); /* s_help is read before the next chunk writes it */
    }
    double v[NV];
    normal_pack<NP, NV>(A, rb, cnt, v);
    block_sum_f64<NV>(v, s_warp, s_sum);
    if (part && threadIdx.x < NV)
        part[((size_t)c * nb + b) * GM_MAX_NV + threadIdx.x] = s_sum[threadIdx.x];
}

/* Candidate c's nb partials summed in chunk order into s_sum (read past L1:
 * other blocks wrote them); the same order in both refinements. */
template <int NV>
static __device__ __forceinline__ void partials_sum(const double *part, uint32_t c, uint32_t nb,
                                                    double *s_sum)
{
    for (int i = threadIdx.x; i < NV; i += blockDim.x) {
        double t = 0;
        for (uint32_t j = 0; j < nb; j++)
            t += __ldcg(&part[((size_t)c * nb + j) * GM_MAX_NV + i]);
        s_sum[i] = t;
    }
}

/* Block (b, c): the normal equations of candidate c's points
 * [b GM_REFINE_CHUNK, (b + 1) GM_REFINE_CHUNK) under params[9c..9c+9), for
 * iteration it, summed into part[(c nb + b) GM_MAX_NV ..]: the upper
 * triangle, the right-hand side, the pair count.  The candidate's last
 * block to finish (done[c] counts them, and is reset for the next
 * iteration) sums the nb partials in block order (deterministic, whichever
 * block is last), solves (gm_fit_finish) into params[9c..9c+9), or stops
 * the loop (stop[c]) as gm_refine_model_cpu's break: too few pairs, a
 * degenerate solve.  Nothing once stop[c].  qw > 0: candidate c leaves out
 * the points of quadrant c of a qw x qh query (gm_corner_spread_cpu's refit
 * c; too few points left: no solve, h stays, as the CPU's). */
template <int MODEL>
static __global__ void __launch_bounds__(GM_VERIFY_THREADS)
    k_refine_part(const float4 *cells, int w, int hgt, const gm_point *pts, const float *cs,
                  uint32_t n, int it, double *params, int *stop, unsigned *done, uint32_t nb,
                  double *part, int qw, int qh, refine_gate gate)
{
    constexpr int NP = MODEL == GM_MODEL_SIMILARITY ? 4 : MODEL == GM_MODEL_AFFINE ? 6 : 8;
    constexpr int NA = NP * (NP + 1) / 2;
    constexpr int NV = NA + NP + 1;
    __shared__ double s_warp[GM_VERIFY_WARPS * NV], s_sum[NV];
    __shared__ int s_last;
    const uint32_t b = blockIdx.x, c = blockIdx.y;
    if (stop[c] || gate_off(gate, c)) /* the whole block: the candidate's loop has ended */
        return;
    double h[9], hn[9];
    for (int i = 0; i < 9; i++)
        h[i] = params[9 * (size_t)c + i];
    gm_fit_prepare(h, hn);
    chunk_partial<MODEL, NP, NV, 1>(cells, w, hgt, pts, cs, n, b, c, nb, nullptr, qw, qh, it, h,
                                    hn, s_warp, s_sum, part, nullptr);
    __threadfence(); /* the partial is seen before the count says it is there */
    __syncthreads();
    if (threadIdx.x == 0)
        s_last = atomicAdd(&done[c], 1u) == nb - 1;
    __syncthreads();
    if (!s_last)
        return;
    partials_sum<NV>(part, c, nb, s_sum);
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    done[c] = 0;
    double hh[9];
    if (normal_solve<MODEL, NP>(s_sum, hn, hh))
        stop[c] = 1;
    else
        for (int j = 0; j < 9; j++)
            params[9 * (size_t)c + j] = hh[j];
}

/* The refinement in one launch, where the device has thread block clusters
 * (compute capability 9.0 on): candidate c is the cluster of blocks
 * (0..GM_REFINE_CLUSTER-1, c).  Each iteration, block r sums the chunks r,
 * r + GM_REFINE_CLUSTER, ... of GM_REFINE_CHUNK points exactly as
 * k_refine_part sums its chunk (the same thread a point, the same order)
 * into part[], and the cluster's block 0 sums the partials in chunk order
 * and solves, as k_refine_part's last block does: the same h, bit for bit,
 * with two cluster barriers an iteration instead of a launch.  Block 0's
 * shared h and stop flag are what the other blocks read (distributed
 * shared memory).  The growth (k_grow_fused) runs its radius steps the
 * same way. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define GM_CLUSTER_DIMS
#else
#define GM_CLUSTER_DIMS __cluster_dims__(GM_REFINE_CLUSTER, 1, 1)
#endif
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
/* partials_sum's twin for nb <= GM_REFINE_CLUSTER chunks, chunk b summed
 * by block b into its own sum[] (shared memory): block 0 reads them there,
 * in the same order, into its sum[] (each thread its own entries: block
 * 0's are read before they are written). */
template <int NV>
static __device__ __forceinline__ void partials_sum_cluster(
    cooperative_groups::cluster_group &cluster, double *sum, uint32_t nb)
{
    for (int i = threadIdx.x; i < NV; i += blockDim.x) {
        double v[GM_REFINE_CLUSTER];
#pragma unroll
        for (uint32_t r = 0; r < GM_REFINE_CLUSTER; r++) /* the loads issued together */
            v[r] = r < nb ? cluster.map_shared_rank(sum, r)[i] : 0.0;
        double t = 0;
#pragma unroll
        for (uint32_t r = 0; r < GM_REFINE_CLUSTER; r++)
            if (r < nb)
                t += v[r];
        sum[i] = t;
    }
}

/* A cluster's shared state: block 0's h and stop flag (read by every
 * block), each block's strict counts, the sums' scratch. */
struct cluster_state {
    double h[9];
    int stop;
    uint32_t cnt[3];
    /* a block of up to GM_REFINE_HELP x GM_VERIFY_THREADS threads */
    uint32_t hits[GM_REFINE_HELP * GM_VERIFY_WARPS], bg[GM_REFINE_HELP * GM_VERIFY_WARPS],
        in[GM_REFINE_HELP * GM_VERIFY_WARPS];
    double warp[GM_VERIFY_WARPS * GM_MAX_NV], sum[GM_MAX_NV];
    warp_solve_mem solve; /* block 0's */
    refine_help help[GM_REFINE_CHUNK];
};

/* gm_refine_model_cpu(MODEL, iters) of the cluster's h (block 0's) on the
 * points of set (and, qw > 0, outside quadrant c of a qw x qh query): too
 * few of them, or too few pairs, or a degenerate solve end it, h as it
 * was. */
template <int MODEL, int HELP>
static __device__ void cluster_refine(cooperative_groups::cluster_group &cluster,
                                      cluster_state *s, const cluster_state *s0,
                                      const float4 *cells, int w, int hgt, const gm_point *pts,
                                      const float *cs, uint32_t n, const refine_set &set, int qw,
                                      int qh, int iters, uint32_t nb, double *part)
{
    constexpr int NP = MODEL == GM_MODEL_SIMILARITY ? 4 : MODEL == GM_MODEL_AFFINE ? 6 : 8;
    constexpr int NA = NP * (NP + 1) / 2;
    constexpr int NV = NA + NP + 1;
    const uint32_t rank = cluster.block_rank(), c = blockIdx.y;
    cluster.sync(); /* every block has read the last call's flag */
    if (rank == 0 && threadIdx.x == 0)
        s->stop = 0;
    cluster.sync();
    for (int it = 0; it < iters; it++) {
        if (s0->stop)
            break; /* every block reads the same flag between the same barriers */
        double h[9], hn[9];
        for (int i = 0; i < 9; i++)
            h[i] = s0->h[i];
        gm_fit_prepare(h, hn);
        /* a chunk a block at most: each block's partial stays in its shared
         * memory (s->sum) and block 0 reads them there */
        const bool own = nb <= GM_REFINE_CLUSTER;
        for (uint32_t b = rank; b < nb; b += GM_REFINE_CLUSTER)
            chunk_partial<MODEL, NP, NV, HELP>(cells, w, hgt, pts, cs, n, b, c, nb, &set, qw, qh,
                                               it, h, hn, s->warp, s->sum, own ? nullptr : part,
                                               s->help);
        if (!own)
            __threadfence();
        cluster.sync(); /* the partials are written; block 0 sums them */
        if (rank == 0) {
            if (own)
                partials_sum_cluster<NV>(cluster, s->sum, nb);
            else
                partials_sum<NV>(part, c, nb, s->sum);
            __syncthreads();
            if (threadIdx.x < 32) {
                double hh[9];
                const int bad = warp_normal_solve<MODEL, NP>(s->sum, hn, hh, &s->solve);
                if (threadIdx.x == 0) {
                    if (bad)
                        s->stop = 1;
                    else
                        for (int j = 0; j < 9; j++)
                            s->h[j] = hh[j];
                }
            }
        }
        cluster.sync(); /* block 0's h and flag are published */
    }
}

/* The end of a cluster's work: when scores is not NULL, the strict score of
 * the final h (integer counts, summed over the cluster in any order:
 * exact) into scores[c]; the final h into params[9c..). */
static __device__ void cluster_finish(cooperative_groups::cluster_group &cluster,
                                      cluster_state *s, const cluster_state *s0,
                                      const gm_map_view &map, const gm_point *pts,
                                      const float *cs, uint32_t n, double *params,
                                      gm_verify_score *scores)
{
    const uint32_t rank = cluster.block_rank(), c = blockIdx.y;
    double h[9];
    for (int i = 0; i < 9; i++)
        h[i] = s0->h[i];
    if (scores) {
        uint32_t hits = 0, bg = 0, in = 0;
        for (uint32_t k = rank * blockDim.x + threadIdx.x; k < n;
             k += GM_REFINE_CLUSTER * blockDim.x)
            hits += gm_verify_strict_point(&map, h, pts[k], cs[2 * k], cs[2 * k + 1], &bg, &in);
        hits = block_sum_u32(hits, s->hits);
        bg = block_sum_u32(bg, s->bg);
        in = block_sum_u32(in, s->in);
        if (threadIdx.x == 0)
            s->cnt[0] = hits, s->cnt[1] = bg, s->cnt[2] = in;
    }
    cluster.sync(); /* every block has read block 0's h and written its counts */
    if (rank == 0 && threadIdx.x == 0) {
        if (scores) {
            uint32_t t[3] = {0, 0, 0};
            for (uint32_t r = 0; r < GM_REFINE_CLUSTER; r++) {
                const cluster_state *o = cluster.map_shared_rank(s, r);
                t[0] += o->cnt[0], t[1] += o->cnt[1], t[2] += o->cnt[2];
            }
            scores[c] = gm_score_of(n, t[2], t[0], t[1]);
        }
        for (int j = 0; j < 9; j++)
            params[9 * (size_t)c + j] = h[j];
    }
    cluster.sync(); /* block 0 has read the others' counts before they end */
}
#endif

/* The refinement of candidate c (params[9c..]) in one launch, then (scores
 * not NULL) its strict score; qw > 0: candidate c leaves out quadrant c
 * (the spread's refits), as k_refine_part. */
template <int MODEL, int HELP>
static __global__ void GM_CLUSTER_DIMS __launch_bounds__(GM_VERIFY_THREADS * HELP)
    k_refine_fused(gm_map_view map, const float4 *cells, const gm_point *pts, const float *cs,
                   uint32_t n, int iters, double *params, uint32_t nb, double *part, int qw,
                   int qh, gm_verify_score *scores, refine_gate gate)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    if (gate_off(gate, blockIdx.y))
        return; /* the whole cluster (its blocks share blockIdx.y): no barrier waits for it */
    __shared__ cluster_state s;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const cluster_state *s0 = cluster.map_shared_rank(&s, 0);
    if (cluster.block_rank() == 0 && threadIdx.x < 9)
        s.h[threadIdx.x] = params[9 * (size_t)blockIdx.y + threadIdx.x];
    const refine_set all = {{0, 0, 0}, INFINITY};
    cluster_refine<MODEL, HELP>(cluster, &s, s0, cells, map.w, map.h, pts, cs, n, all, qw, qh,
                                iters, nb, part);
    cluster_finish(cluster, &s, s0, map, pts, cs, n, params, scores);
#endif
}

/* gm_grow_model_cpu(MODEL) of candidate c from seeds[3c..3c+3) in one
 * launch: each radius step and the final refinement a cluster_refine (the
 * disc test gm_grow_d2's, the largest distance a max over the cluster:
 * exact in any order), then the strict score.  The sums are
 * k_refine_part's, chunk by chunk, where k_grow_verify sums each thread's
 * points in turn: the two agree to rounding (test_verify_cuda compares
 * both with the CPU). */
template <int MODEL>
static __global__ void GM_CLUSTER_DIMS __launch_bounds__(GM_VERIFY_THREADS)
    k_grow_fused(gm_map_view map, const float4 *cells, const gm_point *pts, const float *cs,
                 uint32_t n, const double *seeds, double *params, uint32_t nb, double *part,
                 gm_verify_score *scores)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    __shared__ cluster_state s;
    __shared__ double s_max[GM_VERIFY_WARPS], s_rmax2;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const cluster_state *s0 = cluster.map_shared_rank(&s, 0);
    const uint32_t rank = cluster.block_rank(), c = blockIdx.y;
    if (rank == 0 && threadIdx.x < 9)
        s.h[threadIdx.x] = params[9 * (size_t)c + threadIdx.x];
    const double seed[3] = {seeds[3 * (size_t)c], seeds[3 * (size_t)c + 1],
                            seeds[3 * (size_t)c + 2]};
    const double bm = block_max_d2(pts, n, seed, rank * blockDim.x + threadIdx.x,
                                   GM_REFINE_CLUSTER * blockDim.x, s_max);
    if (threadIdx.x == 0)
        s_rmax2 = bm;
    cluster.sync();
    double rmax2 = 0;
    for (uint32_t r = 0; r < GM_REFINE_CLUSTER; r++)
        rmax2 = fmax(rmax2, *cluster.map_shared_rank(&s_rmax2, r));
    for (double rad = fmax(GM_GROW_START * seed[2], GM_GROW_MIN_PX);; rad *= GM_GROW_STEP) {
        const refine_set disc = {{seed[0], seed[1], seed[2]}, rad * rad};
        cluster_refine<MODEL, 1>(cluster, &s, s0, cells, map.w, map.h, pts, cs, n, disc, 0, 0,
                              GM_GROW_STEP_ITERS, nb, part);
        if (rad * rad >= rmax2)
            break;
    }
    const refine_set all = {{0, 0, 0}, INFINITY};
    cluster_refine<MODEL, 1>(cluster, &s, s0, cells, map.w, map.h, pts, cs, n, all, 0, 0,
                          GM_GROW_FINAL_ITERS, nb, part);
    cluster_finish(cluster, &s, s0, map, pts, cs, n, params, scores);
#endif
}

/* Block c: the strict score of params[9c..9c+9) into scores[c]. */
static __global__ void __launch_bounds__(GM_VERIFY_THREADS)
    k_strict(gm_map_view map, const gm_point *pts, const float *cs, uint32_t n, double *params,
             gm_verify_score *scores, refine_gate gate)
{
    __shared__ double s_h[9];
    __shared__ uint32_t s_hits[GM_VERIFY_WARPS], s_bg[GM_VERIFY_WARPS], s_in[GM_VERIFY_WARPS];
    const uint32_t c = blockIdx.x;
    if (gate_off(gate, c))
        return;
    if (threadIdx.x < 9)
        s_h[threadIdx.x] = params[9 * (size_t)c + threadIdx.x];
    __syncthreads();
    strict_block(map, pts, cs, n, s_h, s_hits, s_bg, s_in, params, scores, c);
}

/* Block c: gm_grow_model_cpu(MODEL) of params[9c..9c+9) from the seed
 * seeds[3c..3c+3), then the strict score; the grown h goes back to params.
 * The radius steps, the disc counts and the largest distance are the CPU's
 * double operations (gm_grow_d2, the block's exact integer and max sums). */
template <int MODEL>
static __global__ void __launch_bounds__(GM_VERIFY_THREADS)
    k_grow_verify(gm_map_view map, const float4 *cells, const gm_point *pts, const float *cs,
                  uint32_t n, const double *seeds, double *params, gm_verify_score *scores)
{
    __shared__ double s_h[9];
    __shared__ int s_stop;
    __shared__ double s_warp[GM_VERIFY_WARPS * GM_MAX_NV], s_sum[GM_MAX_NV];
    __shared__ uint32_t s_hits[GM_VERIFY_WARPS], s_bg[GM_VERIFY_WARPS], s_in[GM_VERIFY_WARPS];
    __shared__ double s_max[GM_VERIFY_WARPS];
    const uint32_t c = blockIdx.x;
    if (threadIdx.x < 9)
        s_h[threadIdx.x] = params[9 * (size_t)c + threadIdx.x];
    const double seed[3] = {seeds[3 * (size_t)c], seeds[3 * (size_t)c + 1],
                            seeds[3 * (size_t)c + 2]};
    const double rmax2 = block_max_d2(pts, n, seed, threadIdx.x, blockDim.x, s_max);
    for (double rad = fmax(GM_GROW_START * seed[2], GM_GROW_MIN_PX);; rad *= GM_GROW_STEP) {
        uint32_t in = 0;
        for (uint32_t k = threadIdx.x; k < n; k += blockDim.x)
            in += gm_grow_d2(pts[k], seed) <= rad * rad;
        in = block_sum_u32(in, s_hits);
        const refine_set disc = {{seed[0], seed[1], seed[2]}, rad * rad};
        refine_block<MODEL>(cells, map.w, map.h, pts, cs, n, in, disc, GM_GROW_STEP_ITERS, s_h,
                            &s_stop, s_warp, s_sum);
        if (rad * rad >= rmax2)
            break;
    }
    const refine_set all = {{0, 0, 0}, INFINITY};
    refine_block<MODEL>(cells, map.w, map.h, pts, cs, n, n, all, GM_GROW_FINAL_ITERS, s_h,
                        &s_stop, s_warp, s_sum);
    strict_block(map, pts, cs, n, s_h, s_hits, s_bg, s_in, params, scores, c);
}

/* ---- the edge map ------------------------------------------------------------ */

/* The map's pixels from its points, as gm_edge_map_fill_cpu makes them:
 * each point's pixel (lrintf: round half to even, __float2int_rn here)
 * keeps the point of the highest index there (the CPU's last write), and
 * its direction's bit (gm_angle_bin) goes into `own`; then each pixel's
 * mask is the OR of `own` over its (2r+1)^2 window clipped to the image,
 * which is the CPU's scatter of each point's bit into its window. */
static __global__ void k_map_scatter(const gm_point *__restrict__ pts, uint32_t n, int w, int h,
                                     int32_t *__restrict__ nearest, uint32_t *__restrict__ own)
{
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    const gm_point p = pts[k];
    const int x = __float2int_rn(p.x), y = __float2int_rn(p.y);
    if (x < 0 || y < 0 || x >= w || y >= h)
        return;
    const size_t i = (size_t)y * w + x;
    atomicMax(&nearest[i], (int32_t)k);
    atomicOr(&own[i], 1u << gm_angle_bin(p.angle));
}

static __global__ void k_map_dilate(const uint32_t *__restrict__ own, int w, int h, int r,
                                    uint16_t *__restrict__ mask)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)w * h)
        return;
    const int x = (int)(i % (size_t)w), y = (int)(i / (size_t)w);
    const int x0 = max(x - r, 0), x1 = min(x + r, w - 1);
    const int y0 = max(y - r, 0), y1 = min(y + r, h - 1);
    uint32_t m = 0;
    for (int yy = y0; yy <= y1; yy++)
        for (int xx = x0; xx <= x1; xx++)
            m |= own[(size_t)yy * w + xx];
    mask[i] = (uint16_t)m;
}

/* Each pixel's nearest edge point as one cell (x, y, cos, sin), x NaN where
 * there is none. */
static __global__ void k_map_cells(const int32_t *__restrict__ nearest,
                                   const gm_point *__restrict__ pts, const float *__restrict__ dir,
                                   size_t px, float4 *__restrict__ cells)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= px)
        return;
    const int32_t j = nearest[i];
    cells[i] = j < 0 ? make_float4(NAN, 0.0f, 0.0f, 0.0f)
                     : make_float4(pts[j].x, pts[j].y, dir[2 * j], dir[2 * j + 1]);
}

/* The buffers of d: px pixels, np points (0, 0: to free them).  They come
 * from the library's pool on the upload's stream and go back to it without
 * waiting (gm_dev_bufs_pool_*): a batch or a video's cut-away frames make
 * and free maps a query. */
static int map_bufs(gm_edge_map_dev *d, size_t px, size_t np, gm_dev_buf *b)
{
    int k = 0;
    b[k++] = (gm_dev_buf){(void **)&d->d_mask, px * sizeof *d->d_mask, 0};
    b[k++] = (gm_dev_buf){(void **)&d->d_nearest, px * sizeof *d->d_nearest, 0};
    b[k++] = (gm_dev_buf){(void **)&d->d_pts, np * sizeof *d->d_pts, 0};
    b[k++] = (gm_dev_buf){(void **)&d->d_dir, 2 * np * sizeof *d->d_dir, 0};
    b[k++] = (gm_dev_buf){(void **)&d->d_cells, px * sizeof *d->d_cells, 0};
    return k;
}

extern "C" void gm_edge_map_dev_free(gm_edge_map_dev *d)
{
    if (!d)
        return;
    gm_dev_buf b[5];
    gm_dev_bufs_pool_free(b, map_bufs(d, 0, 0, b), gm_cuda_free_stream());
    memset(d, 0, sizeof *d);
}

static gm_status edge_map_upload(const gm_edge_map *map, gm_edge_map_dev *d, cudaStream_t stream)
{
    const size_t px = (size_t)map->w * (size_t)map->h, np = map->pts.n ? map->pts.n : 1;
    gm_dev_buf b[5];
    gm_status st = gm_dev_bufs_pool_alloc(b, map_bufs(d, px, np, b), stream);
    if (st != GM_OK)
        return st;
    d->w = map->w;
    d->h = map->h;
    d->n = map->pts.n;
    /* pageable sources: the copies are staged by the driver before the
     * calls return */
    if (map->pts.n) {
        GM_CUDA_CHECK(cudaMemcpyAsync(d->d_pts, map->pts.p, map->pts.n * sizeof *d->d_pts,
                                      cudaMemcpyHostToDevice, stream));
        GM_CUDA_CHECK(cudaMemcpyAsync(d->d_dir, map->dir, 2 * (size_t)map->pts.n * sizeof *d->d_dir,
                                      cudaMemcpyHostToDevice, stream));
    }
    /* the pixels: the cells' 16 bytes a pixel hold the points' bits (4)
     * until the cells are made from nearest */
    uint32_t *own = (uint32_t *)d->d_cells;
    GM_CUDA_CHECK(cudaMemsetAsync(d->d_nearest, 0xff, px * sizeof *d->d_nearest, stream)); /* -1 */
    GM_CUDA_CHECK(cudaMemsetAsync(own, 0, px * sizeof *own, stream));
    if (map->pts.n) {
        k_map_scatter<<<(unsigned)((map->pts.n + 255) / 256), 256, 0, stream>>>(
            d->d_pts, map->pts.n, map->w, map->h, d->d_nearest, own);
        GM_CUDA_CHECK_LAUNCH();
    }
    const size_t blocks = (px + 255) / 256;
    k_map_dilate<<<(unsigned)blocks, 256, 0, stream>>>(own, map->w, map->h, map->radius, d->d_mask);
    GM_CUDA_CHECK_LAUNCH();
    /* the packed cells, made here from the same arrays (the same floats) */
    k_map_cells<<<(unsigned)blocks, 256, 0, stream>>>(d->d_nearest, d->d_pts, d->d_dir, px,
                                                      d->d_cells);
    GM_CUDA_CHECK_LAUNCH();
    GM_CUDA_CHECK(gm_cuda_stream_wait(stream));
    return GM_OK;
}

extern "C" gm_status gm_edge_map_upload(const gm_edge_map *map, gm_edge_map_dev *d,
                                        cudaStream_t stream)
{
    if (!d)
        return GM_ERR_INVALID;
    memset(d, 0, sizeof *d);
    if (!map || map->w <= 0 || map->h <= 0 || map->radius < 0 ||
        (map->pts.n && (!map->pts.p || !map->dir)))
        return GM_ERR_INVALID;
    gm_status st = edge_map_upload(map, d, stream);
    if (st != GM_OK) { /* nothing pending may write into the arrays freed */
        (void)gm_cuda_stream_wait(stream);
        gm_edge_map_dev_free(d);
    }
    return st;
}

/* ---- the query points and the batch buffers ---------------------------------- */

#define GM_VERIFY_BUFS 18

/* The buffers of v: np points and nc candidates, each on the device and
 * staged on the host (0, 0: to free them). */
static int verify_bufs(gm_verify_dev *v, size_t np, size_t nc, gm_dev_buf *b)
{
    int k = 0;
    for (int host = 0; host < 2; host++) {
        b[k++] = (gm_dev_buf){host ? (void **)&v->h_pts : (void **)&v->d_pts,
                              np * sizeof *v->d_pts, host};
        b[k++] = (gm_dev_buf){host ? (void **)&v->h_cs : (void **)&v->d_cs,
                              2 * np * sizeof *v->d_cs, host};
        b[k++] = (gm_dev_buf){host ? (void **)&v->h_params : (void **)&v->d_params,
                              9 * nc * sizeof *v->d_params, host};
        b[k++] = (gm_dev_buf){host ? (void **)&v->h_seeds : (void **)&v->d_seeds,
                              3 * nc * sizeof *v->d_seeds, host};
        b[k++] = (gm_dev_buf){host ? (void **)&v->h_rot : (void **)&v->d_rot,
                              nc * sizeof *v->d_rot, host};
        b[k++] = (gm_dev_buf){host ? (void **)&v->h_scores : (void **)&v->d_scores,
                              nc * sizeof *v->d_scores, host};
    }
    /* the split refinement's partial sums and stop flags, on the device only */
    const size_t nb = (np + GM_REFINE_CHUNK - 1) / GM_REFINE_CHUNK;
    b[k++] = (gm_dev_buf){(void **)&v->d_part, nc * nb * GM_MAX_NV * sizeof *v->d_part, 0};
    b[k++] = (gm_dev_buf){(void **)&v->d_stop, 2 * nc * sizeof *v->d_stop, 0};
    /* a pairing's decisions (pair.cu), fixed in size */
    b[k++] = (gm_dev_buf){(void **)&v->d_pair, sizeof *v->d_pair, 0};
    b[k++] = (gm_dev_buf){(void **)&v->h_pair, sizeof *v->h_pair, 1};
    /* a chain's flags (chain.cu): a row a step, then the rounds' own */
    b[k++] = (gm_dev_buf){(void **)&v->d_take, (GM_CHAIN_STEPS + 1) * nc, 0};
    b[k++] = (gm_dev_buf){(void **)&v->h_take, (GM_CHAIN_STEPS + 1) * nc, 1};
    return k;
}

extern "C" void gm_verify_dev_free(gm_verify_dev *v)
{
    if (!v)
        return;
    gm_dev_buf b[GM_VERIFY_BUFS];
    gm_dev_bufs_free_on(b, verify_bufs(v, 0, 0, b), v->pool);
    if (v->staged)
        cudaEventDestroy(v->staged);
    (void)cudaGetLastError();
    memset(v, 0, sizeof *v);
}

extern "C" gm_status gm_verify_dev_alloc_on(gm_verify_dev *v, uint32_t max_points,
                                            uint32_t max_cands, cudaStream_t stream)
{
    if (!v)
        return GM_ERR_INVALID;
    if (max_cands == 0) {
        gm_verify_dev_free(v);
        return GM_ERR_INVALID;
    }
    if (!v->max_cands || v->pool != stream) { /* not made, or made otherwise: anew */
        gm_verify_dev_free(v);
        v->pool = stream;
    }
    gm_dev_buf old[GM_VERIFY_BUFS], b[GM_VERIFY_BUFS];
    verify_bufs(v, v->cap ? v->cap : 1, v->max_cands, old);
    const int had = v->max_cands != 0;
    gm_status st = gm_dev_bufs_resize_on(
        had ? old : NULL, b, verify_bufs(v, max_points ? max_points : 1, max_cands, b), stream);
    if (st == GM_OK && !v->staged &&
        cudaEventCreateWithFlags(&v->staged, cudaEventDisableTiming) != cudaSuccess) {
        gm_cuda_record_error(cudaGetLastError(), "cudaEventCreateWithFlags", __func__, __FILE__,
                             __LINE__);
        st = GM_ERR_DEVICE;
    }
    int dev = 0, cl = 0;
    if (st == GM_OK && !had &&
        (cudaGetDevice(&dev) != cudaSuccess ||
         cudaDeviceGetAttribute(&cl, cudaDevAttrClusterLaunch, dev) != cudaSuccess)) {
        gm_cuda_record_error(cudaGetLastError(), "cudaDeviceGetAttribute", __func__, __FILE__,
                             __LINE__);
        st = GM_ERR_DEVICE;
    }
    if (st == GM_OK && !had &&
        cudaMemsetAsync(&v->d_pair->arrived, 0, sizeof v->d_pair->arrived, stream) != cudaSuccess) {
        gm_cuda_record_error(cudaGetLastError(), "cudaMemsetAsync", __func__, __FILE__, __LINE__);
        st = GM_ERR_DEVICE;
    }
    if (st != GM_OK) {
        gm_verify_dev_free(v);
        return st;
    }
    if (!had)
        v->cluster = cl != 0;
    v->cap = max_points;
    v->max_cands = max_cands;
    return GM_OK;
}

extern "C" gm_status gm_verify_dev_alloc(gm_verify_dev *v, uint32_t max_points, uint32_t max_cands)
{
    if (!v)
        return GM_ERR_INVALID;
    memset(v, 0, sizeof *v);
    return gm_verify_dev_alloc_on(v, max_points, max_cands, NULL);
}

extern "C" gm_status gm_verify_points_upload(gm_verify_dev *v, const gm_points *q,
                                             cudaStream_t stream)
{
    if (!v || !q || q->n > v->cap || (q->n && !q->p))
        return GM_ERR_INVALID;
    /* the staging may still feed the previous upload's copies */
    GM_CUDA_CHECK(cudaEventSynchronize(v->staged));
    if (q->n)
        memcpy(v->h_pts, q->p, q->n * sizeof *v->h_pts);
    gm_points_cs(q, v->h_cs); /* glibc's, as the CPU's verification */
    v->n = q->n;
    if (q->n) {
        GM_CUDA_CHECK(cudaMemcpyAsync(v->d_pts, v->h_pts, q->n * sizeof *v->d_pts,
                                      cudaMemcpyHostToDevice, stream));
        GM_CUDA_CHECK(cudaMemcpyAsync(v->d_cs, v->h_cs, 2 * (size_t)q->n * sizeof *v->d_cs,
                                      cudaMemcpyHostToDevice, stream));
    }
    GM_CUDA_CHECK(cudaEventRecord(v->staged, stream));
    return GM_OK;
}

/* ---- the batches ----------------------------------------------------------- */

/* Copies v->h_params[0, 9 nc) and, when rot, v->h_rot up; after the kernel
 * (queued by the caller in between) the scores and, when back, the params
 * down; synchronizes; copies the scores out. */
/* kernel<model> launched on grid blocks (model: one of the three, checked
 * by the caller). */
#define LAUNCH_MODEL(kernel, model, grid, stream, ...)                                        \
    do {                                                                                       \
        if ((model) == GM_MODEL_SIMILARITY)                                                    \
            kernel<GM_MODEL_SIMILARITY><<<(grid), GM_VERIFY_THREADS, 0, (stream)>>>(__VA_ARGS__); \
        else if ((model) == GM_MODEL_AFFINE)                                                   \
            kernel<GM_MODEL_AFFINE><<<(grid), GM_VERIFY_THREADS, 0, (stream)>>>(__VA_ARGS__);     \
        else                                                                                   \
            kernel<GM_MODEL_HOMOGRAPHY><<<(grid), GM_VERIFY_THREADS, 0, (stream)>>>(__VA_ARGS__); \
    } while (0)

static gm_status batch_upload(gm_verify_dev *v, uint32_t nc, int rot, cudaStream_t stream)
{
    GM_CUDA_CHECK(cudaMemcpyAsync(v->d_params, v->h_params, 9 * (size_t)nc * sizeof *v->d_params,
                                  cudaMemcpyHostToDevice, stream));
    if (rot)
        GM_CUDA_CHECK(cudaMemcpyAsync(v->d_rot, v->h_rot, nc * sizeof *v->d_rot,
                                      cudaMemcpyHostToDevice, stream));
    return GM_OK;
}

static gm_status batch_download(gm_verify_dev *v, uint32_t nc, int back, gm_verify_score *scores,
                                cudaStream_t stream)
{
    GM_CUDA_CHECK(cudaMemcpyAsync(v->h_scores, v->d_scores, nc * sizeof *v->h_scores,
                                  cudaMemcpyDeviceToHost, stream));
    if (back)
        GM_CUDA_CHECK(cudaMemcpyAsync(v->h_params, v->d_params,
                                      9 * (size_t)nc * sizeof *v->h_params,
                                      cudaMemcpyDeviceToHost, stream));
    GM_CUDA_CHECK(gm_cuda_stream_wait(stream));
    memcpy(scores, v->h_scores, nc * sizeof *scores);
    return GM_OK;
}

extern "C" gm_status gm_verify_batch_cuda(const gm_edge_map_dev *map, gm_verify_dev *v,
                                          const double *m, uint32_t nc, gm_verify_score *scores,
                                          cudaStream_t stream)
{
    if (!map || !v || nc > v->max_cands || (nc && (!m || !scores)))
        return GM_ERR_INVALID;
    if (nc == 0)
        return GM_OK;
    for (uint32_t c = 0; c < nc; c++) {
        memcpy(v->h_params + 9 * (size_t)c, m + 6 * (size_t)c, 6 * sizeof *m);
        v->h_rot[c] = (float)atan2(m[6 * (size_t)c + 3], m[6 * (size_t)c]);
    }
    gm_status st = batch_upload(v, nc, 1, stream);
    if (st != GM_OK)
        return st;
    k_verify<<<nc, GM_VERIFY_THREADS, 0, stream>>>(map_view(map), v->d_pts, v->n, v->d_params,
                                                   v->d_rot, v->d_scores);
    GM_CUDA_CHECK_LAUNCH();
    return batch_download(v, nc, 0, scores, stream);
}

extern "C" gm_status gm_grow_verify_cuda(const gm_edge_map_dev *map, gm_verify_dev *v,
                                         gm_model model, double *h, const double *seeds,
                                         uint32_t nc, gm_verify_score *scores, cudaStream_t stream)
{
    if (!map || !v || nc > v->max_cands || (nc && (!h || !seeds || !scores)) ||
        (model != GM_MODEL_AFFINE && model != GM_MODEL_HOMOGRAPHY))
        return GM_ERR_INVALID;
    if (nc == 0)
        return GM_OK;
    memcpy(v->h_params, h, 9 * (size_t)nc * sizeof *h);
    memcpy(v->h_seeds, seeds, 3 * (size_t)nc * sizeof *seeds);
    gm_status st = batch_upload(v, nc, 0, stream);
    if (st != GM_OK)
        return st;
    GM_CUDA_CHECK(cudaMemcpyAsync(v->d_seeds, v->h_seeds, 3 * (size_t)nc * sizeof *seeds,
                                  cudaMemcpyHostToDevice, stream));
    const gm_map_view mv = map_view(map);
    const double *d_seeds = v->d_seeds;
    if (v->cluster) {
        const uint32_t nb = (v->n + GM_REFINE_CHUNK - 1) / GM_REFINE_CHUNK;
        const dim3 grid(GM_REFINE_CLUSTER, nc);
        LAUNCH_MODEL(k_grow_fused, model, grid, stream, mv, map->d_cells, v->d_pts, v->d_cs,
                     v->n, d_seeds, v->d_params, nb, v->d_part, v->d_scores);
    } else {
        LAUNCH_MODEL(k_grow_verify, model, nc, stream, mv, map->d_cells, v->d_pts, v->d_cs,
                     v->n, d_seeds, v->d_params, v->d_scores);
    }
    GM_CUDA_CHECK_LAUNCH();
    if ((st = batch_download(v, nc, 1, scores, stream)) != GM_OK)
        return st;
    memcpy(h, v->h_params, 9 * (size_t)nc * sizeof *h);
    return GM_OK;
}

/* A refinement of the nc candidates params[9c..] (device; v->d_params or a
 * part of it) queued without a wait (qw > 0: the spread's refits, no
 * score): on a device with clusters one launch (k_refine_fused), else a
 * launch an iteration (k_refine_part) and k_strict.  Too few points: h
 * stays, as on the CPU.  scores (device, may be NULL): the strict scores
 * there.  gate: the candidates refined (the others left as they are). */
static gm_status refine_launch(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                               int iters, uint32_t nc, int qw, int qh, double *params,
                               gm_verify_score *scores, refine_gate gate, cudaStream_t stream)
{
    const uint32_t nb = (v->n + GM_REFINE_CHUNK - 1) / GM_REFINE_CHUNK;
    if (v->n < GM_REFINE_MIN_PAIRS || iters < 0)
        iters = 0;
    if (v->cluster) {
        /* v->wide: a similarity's or an affine's refinement with a helper
         * thread a point (their 128 registers allow blocks of twice the
         * threads), the partner search in half the time; the homography's
         * 252 do not */
        const dim3 grid(GM_REFINE_CLUSTER, nc);
        const gm_map_view mv = map_view(map);
        const int wide = v->wide ? GM_REFINE_HELP : 1;
#define GM_FUSED(M, H)                                                                        \
    k_refine_fused<M, H><<<grid, (H)*GM_VERIFY_THREADS, 0, stream>>>(                          \
        mv, map->d_cells, v->d_pts, v->d_cs, v->n, iters, params, nb, v->d_part, qw, qh, scores, \
        gate)
        if (model == GM_MODEL_SIMILARITY && wide > 1)
            GM_FUSED(GM_MODEL_SIMILARITY, GM_REFINE_HELP);
        else if (model == GM_MODEL_SIMILARITY)
            GM_FUSED(GM_MODEL_SIMILARITY, 1);
        else if (model == GM_MODEL_AFFINE && wide > 1)
            GM_FUSED(GM_MODEL_AFFINE, GM_REFINE_HELP);
        else if (model == GM_MODEL_AFFINE)
            GM_FUSED(GM_MODEL_AFFINE, 1);
        else
            GM_FUSED(GM_MODEL_HOMOGRAPHY, 1);
#undef GM_FUSED
        GM_CUDA_CHECK_LAUNCH();
        return GM_OK;
    }
    if (iters > 0) {
        GM_CUDA_CHECK(cudaMemsetAsync(v->d_stop, 0, 2 * nc * sizeof *v->d_stop, stream));
        const dim3 grid(nb, nc);
        unsigned *done = (unsigned *)(v->d_stop + nc);
        for (int it = 0; it < iters; it++) {
            LAUNCH_MODEL(k_refine_part, model, grid, stream, map->d_cells, map->w, map->h,
                         v->d_pts, v->d_cs, v->n, it, params, v->d_stop, done, nb, v->d_part,
                         qw, qh, gate);
            GM_CUDA_CHECK_LAUNCH();
        }
    }
    if (scores) {
        k_strict<<<nc, GM_VERIFY_THREADS, 0, stream>>>(map_view(map), v->d_pts, v->d_cs, v->n,
                                                       params, scores, gate);
        GM_CUDA_CHECK_LAUNCH();
    }
    return GM_OK;
}

/* gm_refine_queue_at's and gm_refine_queue_into's checks and launch. */
static gm_status refine_queue(const gm_edge_map_dev *map, gm_verify_dev *v, gm_model model,
                              int iters, uint32_t nc, double *params, gm_verify_score *scores,
                              refine_gate gate, cudaStream_t stream)
{
    if (!map || nc > v->max_cands || iters < 0 || !model_known(model) ||
        (nc && (!params || !scores)))
        return GM_ERR_INVALID;
    if (nc == 0)
        return GM_OK;
    return refine_launch(map, v, model, iters, nc, 0, 0, params, scores, gate, stream);
}

extern "C" gm_status gm_refine_queue_at(const gm_edge_map_dev *map, gm_verify_dev *v,
                                        gm_model model, int iters, uint32_t first, uint32_t nc,
                                        const uint32_t *live, const uint8_t *take,
                                        cudaStream_t stream)
{
    if (!v || first > v->max_cands || nc > v->max_cands - first)
        return GM_ERR_INVALID;
    return refine_queue(map, v, model, iters, nc, v->d_params + 9 * (size_t)first,
                        v->d_scores + first, refine_gate{live, take}, stream);
}

extern "C" gm_status gm_refine_queue_into(const gm_edge_map_dev *map, gm_verify_dev *v,
                                          gm_model model, int iters, uint32_t nc, double *params,
                                          gm_verify_score *scores, const uint32_t *live,
                                          cudaStream_t stream)
{
    if (!v)
        return GM_ERR_INVALID;
    return refine_queue(map, v, model, iters, nc, params, scores, refine_gate{live, NULL}, stream);
}

/* gm_corner_spread_cpu: the four refits as four candidates of one split
 * refinement, each leaving out its quadrant. */
extern "C" gm_status gm_spread_cuda(const gm_edge_map_dev *map, gm_verify_dev *v,
                                    gm_model model, const double h[9], int w, int hgt,
                                    double *spread, cudaStream_t stream)
{
    return gm_spread_refine_cuda(map, v, model, h, w, hgt, spread, GM_MODEL_SIMILARITY, 0, NULL,
                                 NULL, stream);
}

/* The four refits at d_params[0, 36), the transform beside them at
 * d_params[36, 45) with its score at d_scores[4]. */
extern "C" gm_status gm_spread_refine_cuda(const gm_edge_map_dev *map, gm_verify_dev *v,
                                           gm_model model, const double h[9], int w, int hgt,
                                           double *spread, gm_model rmodel, int riters,
                                           double *rh, gm_verify_score *rscore,
                                           cudaStream_t stream)
{
    const uint32_t nc = rh ? 5 : 4;
    if (!map || !v || !h || !spread || v->max_cands < nc || w <= 0 || hgt <= 0 ||
        !model_known(model) || (rh && (!rscore || riters < 0 || !model_known(rmodel))))
        return GM_ERR_INVALID;
    for (int quad = 0; quad < 4; quad++)
        memcpy(v->h_params + 9 * quad, h, 9 * sizeof *h);
    if (rh)
        memcpy(v->h_params + 36, rh, 9 * sizeof *rh);
    gm_status st = batch_upload(v, nc, 0, stream);
    if (st == GM_OK)
        st = refine_launch(map, v, model, GM_SPREAD_ITERS, 4, w, hgt, v->d_params, NULL,
                           refine_gate{NULL, NULL}, stream);
    if (st == GM_OK && rh)
        st = gm_refine_queue_at(map, v, rmodel, riters, 4, 1, NULL, NULL, stream);
    if (st != GM_OK)
        return st;
    GM_CUDA_CHECK(cudaMemcpyAsync(v->h_params, v->d_params, 9 * nc * sizeof *v->h_params,
                                  cudaMemcpyDeviceToHost, stream));
    if (rh)
        GM_CUDA_CHECK(cudaMemcpyAsync(v->h_scores + 4, v->d_scores + 4, sizeof *v->h_scores,
                                      cudaMemcpyDeviceToHost, stream));
    GM_CUDA_CHECK(gm_cuda_stream_wait(stream));
    double hq[4][9];
    memcpy(hq, v->h_params, sizeof hq);
    *spread = gm_corner_moves(h, (const double(*)[9])hq, w, hgt);
    if (rh) {
        memcpy(rh, v->h_params + 36, 9 * sizeof *rh);
        *rscore = v->h_scores[4];
    }
    return GM_OK;
}

extern "C" gm_status gm_refine_verify_cuda(const gm_edge_map_dev *map, gm_verify_dev *v,
                                           gm_model model, double *h, int iters, uint32_t nc,
                                           gm_verify_score *scores, cudaStream_t stream)
{
    if (!map || !v || nc > v->max_cands || iters < 0 || (nc && (!h || !scores)) ||
        !model_known(model))
        return GM_ERR_INVALID;
    if (nc == 0)
        return GM_OK;
    memcpy(v->h_params, h, 9 * (size_t)nc * sizeof *h);
    gm_status st = batch_upload(v, nc, 0, stream);
    if (st != GM_OK)
        return st;
    if ((st = refine_launch(map, v, model, iters, nc, 0, 0, v->d_params, v->d_scores,
                            refine_gate{NULL, NULL}, stream)) != GM_OK)
        return st;
    if ((st = batch_download(v, nc, 1, scores, stream)) != GM_OK)
        return st;
    memcpy(h, v->h_params, 9 * (size_t)nc * sizeof *h);
    return GM_OK;
}
