/* corners.cu: the corner stage of src/stages/corners.c on the device, with the same
 * points in the same order, x, y and w bit for bit.  The formulas are the
 * CPU's own (src/stages/corners_core.h); this file is compiled with --fmad=false so
 * that no multiply-add is contracted.
 *
 * On one stream, one synchronization at the end:
 *   k_row_sums      the products gx^2, gx gy, gy^2 of the five taps of a row
 *                   (clamped), summed in the CPU's order: three planes.
 *   k_resp          the column sums of the planes, the response, and the
 *                   image-wide best (warp and block max, one atomicMax a
 *                   block on the float's bits: responses >= 0 order as their
 *                   bits, and the CPU's best starts at 0).
 *   DeviceSelect    cub::DeviceSelect::If over the pixel indices with the
 *                   CPU's local-maximum test: candidates in raster order.
 *   k_keys          the candidates' responses as sort keys; the entries past
 *                   the count (unknown on the host) padded with -1.
 *   DeviceRadixSort cub SortPairsDescending (response, index) over the bound
 *                   on the count (one candidate per 2 x 2 block): stable, so
 *                   equal responses keep raster order, (y, x) ascending,
 *                   as the CPU's qsort comparator orders them.
 *   k_prep          per sorted candidate, in parallel: pixel, grid cell,
 *                   sub-pixel position, response and gradient, one record.
 *   k_suppress      one warp: the greedy suppression, exactly (below); the
 *                   grid in shared memory when it fits in 48 KiB (a frame of
 *                   about 1.6 Mpixels), else in global memory.
 *   one copy        count and kept corners (x, y, w, gx, gy) to pinned memory;
 *                   the angle is taken on the host with the C library's atan2f.
 *
 * The suppression is sequential on the CPU: candidate k is kept when none of
 * the corners in the grid cells around it (the last kept corner of each cell)
 * is within the radius.  The warp takes the sorted candidates 32 at a time.
 * Each lane tests its candidate against the grid as it was before the batch:
 * one mask bit per cell of its 5 x 5 whose corner suppresses it.  Then, in
 * order: the lowest undecided lane with an empty mask is kept (every
 * undecided lane below it has a non-empty final mask: suppressed); its
 * sub-pixel position goes into its cell of the grid, and every later lane
 * whose 5 x 5 holds that cell sets or clears that cell's bit by its distance
 * to the new corner, exactly as the CPU's grid slot is overwritten.  A batch
 * costs one grid test per lane and one step per kept corner.
 *
 * H100 (SXM), 1024 x 768, 1966 shapes on noise (test_corners_cuda,
 * GM_CORNERS_TIME=1), the whole synchronizing call by wall clock: target 50
 * 133 us, 400 219 us, all (976 kept) 555 us; gm_corners_cpu 5.4-8.9 ms.  The
 * walk is the bulk (one memory latency a batch of 32).  Measured and left out:
 * the walk reading idx, resp, gx, gy itself and the grid in global memory
 * (154 / 408 / 1034 us). */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <string.h>

#include "cuda/corners_cuda.h"
#include "cuda/cuda_check.cuh"

#include "stages/corners_core.h"

#define CN_THREADS 256

/* What k_suppress writes and the host reads: the count, then the corners. */
typedef struct {
    uint32_t n, pad[3];
} stage_head;
typedef struct {
    float x, y, w;
    int16_t gx, gy;
} stage_rec;

static size_t stage_bytes(uint32_t n) { return sizeof(stage_head) + (size_t)n * sizeof(stage_rec); }

/* ---- response ----------------------------------------------------------------------- */

static __global__ void __launch_bounds__(CN_THREADS)
    k_row_sums(const int16_t *__restrict__ gx, const int16_t *__restrict__ gy, int w, size_t n,
               float *__restrict__ sum, uint32_t *__restrict__ d_best)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *d_best = 0; /* k_resp's maximum, which it takes after */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int x = (int)(i % (size_t)w);
        const size_t row = i - (size_t)x;
        float sxx = 0, sxy = 0, syy = 0;
        for (int k = -GM_CORNER_WIN; k <= GM_CORNER_WIN; k++) {
            size_t j = row + (size_t)gm_corner_clamp(x + k, w);
            float xx, yy, xy;
            gm_corner_products(gx[j], gy[j], &xx, &yy, &xy);
            sxx += xx;
            sxy += xy;
            syy += yy;
        }
        sum[i] = sxx;
        sum[n + i] = sxy;
        sum[2 * n + i] = syy;
    }
}

static __global__ void __launch_bounds__(CN_THREADS)
    k_resp(const float *__restrict__ sum, int w, int h, size_t n, float *__restrict__ resp,
           uint32_t *__restrict__ d_best)
{
    __shared__ uint32_t s_max[CN_THREADS / 32];
    uint32_t best = 0; /* bits of 0.0f */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int x = (int)(i % (size_t)w), y = (int)(i / (size_t)w);
        float a = gm_corner_box(sum + x, y, h, (size_t)w);
        float b = gm_corner_box(sum + n + x, y, h, (size_t)w);
        float c = gm_corner_box(sum + 2 * n + x, y, h, (size_t)w);
        float r = gm_corner_response(a, b, c);
        resp[i] = r;
        if (r > 0.0f && __float_as_uint(r) > best)
            best = __float_as_uint(r);
    }
    best = __reduce_max_sync(0xffffffffu, best);
    if ((threadIdx.x & 31) == 0)
        s_max[threadIdx.x / 32] = best;
    __syncthreads();
    if (threadIdx.x < 32) {
        best = threadIdx.x < CN_THREADS / 32 ? s_max[threadIdx.x] : 0;
        best = __reduce_max_sync(0xffffffffu, best);
        if (threadIdx.x == 0 && best)
            atomicMax(d_best, best);
    }
}

/* ---- candidates ---------------------------------------------------------------------- */

/* The CPU's candidate test for pixel i, as a cub::DeviceSelect::If predicate. */
struct is_candidate {
    const float *resp;
    const uint32_t *best;
    int w, h;
    __device__ bool operator()(uint32_t i) const
    {
        const int x = (int)(i % (uint32_t)w), y = (int)(i / (uint32_t)w);
        if (x < GM_CORNER_MARGIN || x >= w - GM_CORNER_MARGIN || y < GM_CORNER_MARGIN ||
            y >= h - GM_CORNER_MARGIN)
            return false;
        return gm_corner_is_max(resp, i, w, gm_corner_floor(__uint_as_float(*best))) != 0;
    }
};

static __global__ void __launch_bounds__(CN_THREADS)
    k_keys(const float *__restrict__ resp, const uint32_t *__restrict__ d_nsel, uint32_t sort_n,
           float *__restrict__ key, uint32_t *__restrict__ idx)
{
    const uint32_t nc = *d_nsel;
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < sort_n; k += gridDim.x * blockDim.x) {
        if (k < nc) {
            key[k] = resp[idx[k]];
        } else {
            key[k] = -1.0f; /* below every candidate (r > 0): sorted last */
            idx[k] = 0;
        }
    }
}

/* ---- suppression ---------------------------------------------------------------------- */

#define FULL_MASK 0xffffffffu
#define SMEM_GRID_BYTES (48 * 1024) /* grids up to this size live in shared memory */

/* A sorted candidate with all the walk needs, made in parallel beforehand so
 * that the one-warp walk reads one coalesced record a lane and a batch. */
typedef struct __align__(16) {
    float px, py, w;    /* sub-pixel position, response */
    int16_t gx, gy;     /* gradient at the pixel, for the angle */
    int x, y, cx, cy;   /* pixel, grid cell */
} cand_rec;
static_assert(sizeof(cand_rec) == 32, "8 bytes a pixel at most: the records reuse d_sum");

static __global__ void __launch_bounds__(CN_THREADS)
    k_prep(const uint32_t *__restrict__ idx, const uint32_t *__restrict__ d_nsel, uint32_t sort_n,
           const float *__restrict__ resp, const int16_t *__restrict__ gx,
           const int16_t *__restrict__ gy, int w, cand_rec *__restrict__ rec)
{
    uint32_t nc = *d_nsel;
    if (nc > sort_n)
        nc = sort_n; /* not expected: sort_n bounds the count */
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < nc; k += gridDim.x * blockDim.x) {
        const uint32_t i = idx[k];
        cand_rec r;
        r.x = (int)(i % (uint32_t)w);
        r.y = (int)(i / (uint32_t)w);
        gm_corner_subpixel(resp, i, w, r.x, r.y, &r.px, &r.py);
        r.w = resp[i];
        r.gx = gx[i];
        r.gy = gy[i];
        r.cx = gm_corner_cell(r.x);
        r.cy = gm_corner_cell(r.y);
        rec[k] = r;
    }
}

/* One warp, the whole walk (see the top of the file).  The grid: 2 floats a
 * cell, NaN when empty (never within the radius); in shared memory when it
 * fits (smem_grid), else g_grid.  The next batch's records are loaded while
 * the current one is walked. */
static __global__ void __launch_bounds__(32)
    k_suppress(const cand_rec *__restrict__ rec, const uint32_t *__restrict__ d_nsel,
               uint32_t sort_n, int gw, int gh, float2 *g_grid, int smem_grid, uint32_t target,
               stage_head *head, stage_rec *out)
{
    extern __shared__ float2 s_grid[];
    float2 *grid = smem_grid ? s_grid : g_grid;
    const int lane = (int)threadIdx.x;
    const float nan = __int_as_float(0x7fffffff);
    for (int g = lane; g < gw * gh; g += 32)
        grid[g] = make_float2(nan, nan);
    __syncthreads(); /* the block is this one warp: every barrier below is uniform */
    uint32_t nc = *d_nsel;
    if (nc > sort_n)
        nc = sort_n;
    uint32_t kept = 0;
    cand_rec next;
    memset(&next, 0, sizeof next);
    bool next_valid = (uint32_t)lane < nc;
    if (next_valid)
        next = rec[lane];
    for (uint32_t base = 0; base < nc && kept < target; base += 32) {
        const cand_rec cur = next;
        const bool valid = next_valid;
        next_valid = base + 32 + (uint32_t)lane < nc;
        if (next_valid)
            next = rec[base + 32 + (uint32_t)lane];
        uint32_t mask = 0;
        if (valid)
            for (int q = 0; q < 25; q++) {
                int gx2 = cur.cx + q % 5 - 2, gy2 = cur.cy + q / 5 - 2;
                if (gx2 < 0 || gy2 < 0 || gx2 >= gw || gy2 >= gh)
                    continue;
                float2 p = grid[gy2 * gw + gx2];
                if (gm_corner_near(p.x, p.y, cur.x, cur.y))
                    mask |= 1u << q;
            }
        __syncthreads(); /* the grid reads before this batch's writes */
        uint32_t undecided = __ballot_sync(FULL_MASK, valid);
        /* each step decides at least one lane: at most 32 steps */
        while (undecided && kept < target) {
            const uint32_t open = __ballot_sync(FULL_MASK, mask == 0) & undecided;
            if (!open)
                break; /* every undecided lane is suppressed */
            const int f = __ffs((int)open) - 1;
            undecided &= ~((2u << f) - 1u); /* f kept, the lanes below it suppressed */
            if (lane == f) {
                grid[cur.cy * gw + cur.cx] = make_float2(cur.px, cur.py);
                stage_rec r = {cur.px, cur.py, cur.w, cur.gx, cur.gy};
                out[kept] = r;
            }
            __syncthreads(); /* a later kept corner may overwrite the cell */
            const float px = __shfl_sync(FULL_MASK, cur.px, f), py = __shfl_sync(FULL_MASK, cur.py, f);
            const int dx = __shfl_sync(FULL_MASK, cur.cx, f) - cur.cx;
            const int dy = __shfl_sync(FULL_MASK, cur.cy, f) - cur.cy;
            kept++;
            if (((undecided >> lane) & 1u) && dx >= -2 && dx <= 2 && dy >= -2 && dy <= 2) {
                const uint32_t bit = 1u << ((dy + 2) * 5 + dx + 2);
                mask = gm_corner_near(px, py, cur.x, cur.y) ? mask | bit : mask & ~bit;
            }
        }
        __syncthreads(); /* the grid writes before the next batch's reads */
    }
    if (lane == 0)
        head->n = kept;
}

/* ---- launcher --------------------------------------------------------------------------- */

static unsigned blocks_for(size_t n)
{
    size_t b = (n + CN_THREADS - 1) / CN_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b); /* grid-stride loops do the rest */
}

static gm_status launch_corners(const gm_edges_dev *e, uint32_t target, gm_corners_dev *c,
                                cudaStream_t stream)
{
    const int w = e->w, h = e->h;
    const size_t n = (size_t)w * (size_t)h;
    const size_t sort_n = gm_corner_max_candidates(w, h);
    const int gw = gm_corner_cell(w) + 1, gh = gm_corner_cell(h) + 1;
    stage_head *d_head = (stage_head *)c->d_stage;
    if (target == 0 || sort_n == 0) {
        GM_CUDA_CHECK(cudaMemsetAsync(d_head, 0, sizeof *d_head, stream));
        return GM_OK;
    }
    if (sort_n > c->cand_cap || (size_t)gw * (size_t)gh > c->grid_cap)
        return GM_ERR_INVALID; /* not expected: the alloc bounds every shape */

    k_row_sums<<<blocks_for(n), CN_THREADS, 0, stream>>>(e->d_gx, e->d_gy, w, n, c->d_sum,
                                                         c->d_best);
    GM_CUDA_CHECK_LAUNCH();
    k_resp<<<blocks_for(n), CN_THREADS, 0, stream>>>(c->d_sum, w, h, n, c->d_resp, c->d_best);
    GM_CUDA_CHECK_LAUNCH();

    is_candidate pred = {c->d_resp, c->d_best, w, h};
    thrust::counting_iterator<uint32_t> pix(0);
    size_t bytes = 0;
    GM_CUDA_CHECK(cub::DeviceSelect::If(NULL, bytes, pix, c->d_idx[0], c->d_nsel, (int64_t)n, pred,
                                        stream));
    if (bytes > c->temp_bytes)
        return GM_ERR_INVALID; /* not expected: sized for cap */
    GM_CUDA_CHECK(cub::DeviceSelect::If(c->d_temp, bytes, pix, c->d_idx[0], c->d_nsel, (int64_t)n,
                                        pred, stream));

    k_keys<<<blocks_for(sort_n), CN_THREADS, 0, stream>>>(c->d_resp, c->d_nsel, (uint32_t)sort_n,
                                                          c->d_key[0], c->d_idx[0]);
    GM_CUDA_CHECK_LAUNCH();
    bytes = 0;
    GM_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(NULL, bytes, c->d_key[0], c->d_key[1],
                                                            c->d_idx[0], c->d_idx[1], (int)sort_n,
                                                            0, 32, stream));
    if (bytes > c->temp_bytes)
        return GM_ERR_INVALID;
    GM_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(c->d_temp, bytes, c->d_key[0],
                                                            c->d_key[1], c->d_idx[0], c->d_idx[1],
                                                            (int)sort_n, 0, 32, stream));

    /* the row sums are spent: their buffer holds the records (8 of its 12
     * bytes a pixel) */
    cand_rec *d_rec = (cand_rec *)c->d_sum;
    k_prep<<<blocks_for(sort_n), CN_THREADS, 0, stream>>>(c->d_idx[1], c->d_nsel, (uint32_t)sort_n,
                                                          c->d_resp, e->d_gx, e->d_gy, w, d_rec);
    GM_CUDA_CHECK_LAUNCH();
    const size_t grid_bytes = (size_t)gw * (size_t)gh * sizeof(float2);
    const int smem = grid_bytes <= SMEM_GRID_BYTES;
    k_suppress<<<1, 32, smem ? grid_bytes : 0, stream>>>(d_rec, c->d_nsel, (uint32_t)sort_n, gw, gh,
                                                          (float2 *)c->d_grid, smem, target, d_head,
                                                          (stage_rec *)(d_head + 1));
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}

/* ---- entry points ----------------------------------------------------------------------- */

/* The buffers of c: n pixels, cand candidates, cells grid cells, temp bytes
 * of scratch, up to max_target corners (all 0: to free them). */
static int corners_bufs(gm_corners_dev *c, size_t n, size_t cand, size_t cells, size_t temp,
                        uint32_t max_target, gm_dev_buf *b)
{
    int k = 0;
    b[k++] = (gm_dev_buf){(void **)&c->d_sum, 3 * n * sizeof *c->d_sum, 0};
    b[k++] = (gm_dev_buf){(void **)&c->d_resp, n * sizeof *c->d_resp, 0};
    b[k++] = (gm_dev_buf){(void **)&c->d_best, sizeof *c->d_best, 0};
    b[k++] = (gm_dev_buf){(void **)&c->d_nsel, sizeof *c->d_nsel, 0};
    for (int i = 0; i < 2; i++) {
        b[k++] = (gm_dev_buf){(void **)&c->d_key[i], cand * sizeof *c->d_key[i], 0};
        b[k++] = (gm_dev_buf){(void **)&c->d_idx[i], cand * sizeof *c->d_idx[i], 0};
    }
    b[k++] = (gm_dev_buf){(void **)&c->d_grid, 2 * cells * sizeof *c->d_grid, 0};
    b[k++] = (gm_dev_buf){(void **)&c->d_temp, temp, 0};
    b[k++] = (gm_dev_buf){(void **)&c->d_stage, stage_bytes(max_target), 0};
    b[k++] = (gm_dev_buf){(void **)&c->h_stage, stage_bytes(max_target), 1};
    return k;
}

extern "C" gm_status gm_corners_dev_alloc_on(gm_corners_dev *c, int w, int h,
                                            uint32_t max_target, cudaStream_t stream)
{
    if (!c)
        return GM_ERR_INVALID;
    size_t n;
    if (w <= 0 || h <= 0 || !gm_mul_ok((size_t)w, (size_t)h, &n) || n > INT32_MAX)
        return GM_ERR_INVALID;
    /* any shape of n pixels with a part inside the margin has both sides
     * > 2 margins: at most n / 4 candidates (gm_corner_max_candidates), and
     * (w / p + 1)(h / p + 1) = n / p^2 + (w + h) / p + 1 grid cells with
     * w + h <= 9 + n / 9 */
    const size_t cand = n / 4 + 1;
    const double p = GM_CORNER_PITCH;
    const size_t cells = (size_t)((double)n / (p * p) + (9.0 + (double)n / 9.0) / p + 2.0);
    size_t sel_bytes = 0, sort_bytes = 0;
    cudaError_t err = cub::DeviceSelect::If(NULL, sel_bytes, thrust::counting_iterator<uint32_t>(0),
                                            (uint32_t *)NULL, (uint32_t *)NULL, (int64_t)n,
                                            is_candidate{NULL, NULL, w, h}, (cudaStream_t)0);
    if (err == cudaSuccess)
        err = cub::DeviceRadixSort::SortPairsDescending(NULL, sort_bytes, (const float *)NULL,
                                                        (float *)NULL, (const uint32_t *)NULL,
                                                        (uint32_t *)NULL, (int)cand, 0, 32,
                                                        (cudaStream_t)0);
    if (err != cudaSuccess) {
        gm_cuda_record_error(err, "cub size queries", __func__, __FILE__, __LINE__);
        return GM_ERR_DEVICE;
    }
    size_t bytes = sel_bytes > sort_bytes ? sel_bytes : sort_bytes;
    if (bytes == 0)
        bytes = 1;
    if (!c->d_resp || c->pool != stream) { /* not made, or made otherwise: anew */
        gm_corners_dev_free(c);
        c->pool = stream;
    }
    gm_dev_buf old[16], b[16];
    corners_bufs(c, c->cap, c->cand_cap, c->grid_cap, c->temp_bytes, c->max_target, old);
    gm_status st = gm_dev_bufs_resize_on(c->d_resp ? old : NULL, b,
                                         corners_bufs(c, n, cand, cells, bytes, max_target, b),
                                         stream);
    if (st != GM_OK) {
        memset(c, 0, sizeof *c);
        return st;
    }
    c->cap = n;
    c->max_target = max_target;
    c->cand_cap = cand;
    c->grid_cap = cells;
    c->temp_bytes = bytes;
    return GM_OK;
}

extern "C" gm_status gm_corners_dev_alloc(gm_corners_dev *c, int w, int h, uint32_t max_target)
{
    if (c)
        memset(c, 0, sizeof *c);
    return gm_corners_dev_alloc_on(c, w, h, max_target, NULL);
}

extern "C" void gm_corners_dev_free(gm_corners_dev *c)
{
    if (!c)
        return;
    gm_dev_buf b[16];
    gm_dev_bufs_free_on(b, corners_bufs(c, 0, 0, 0, 0, 0, b), c->pool);
    memset(c, 0, sizeof *c);
}

extern "C" gm_status gm_corners_cuda(const gm_edges_dev *e, uint32_t target, gm_corners_dev *c,
                                     gm_point *h_out, uint32_t *h_n, cudaStream_t stream)
{
    if (!e || !c || !h_n || !c->d_sum || !e->d_gx || !e->d_gy || e->w <= 0 || e->h <= 0 ||
        (target > 0 && !h_out) || target > c->max_target ||
        (size_t)e->w * (size_t)e->h > c->cap)
        return GM_ERR_INVALID;
    *h_n = 0;
    gm_status st = launch_corners(e, target, c, stream);
    if (st != GM_OK)
        return st;
    GM_CUDA_CHECK(cudaMemcpyAsync(c->h_stage, c->d_stage, stage_bytes(target),
                                  cudaMemcpyDeviceToHost, stream));
    GM_CUDA_CHECK(gm_cuda_stream_wait(stream));
    const stage_head *head = (const stage_head *)c->h_stage;
    const stage_rec *rec = (const stage_rec *)(head + 1);
    uint32_t n = head->n < target ? head->n : target;
    for (uint32_t k = 0; k < n; k++) {
        h_out[k].x = rec[k].x;
        h_out[k].y = rec[k].y;
        h_out[k].angle = gm_corner_angle(rec[k].gx, rec[k].gy);
        h_out[k].w = rec[k].w;
    }
    *h_n = n;
    return GM_OK;
}
