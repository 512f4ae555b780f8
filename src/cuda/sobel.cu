/* sobel.cu: the edge stage of src/stages/sobel.c on the device, with the same
 * results bit for bit: gx, gy, mag2, the thinned and thresholded edge flags
 * and the adaptive threshold.
 *
 * Four kernels on one stream, no host synchronization:
 *   k_smooth_sobel   a 32 x 32 output tile per block: the image tile with a
 *                    3-pixel halo, the horizontal then the vertical binomial
 *                    pass and the Sobel, all in shared memory; writes gx, gy,
 *                    mag2 (the smoothed image never reaches device memory).
 *   k_nms_hist       thinning along the quantized gradient direction, and the
 *                    two histograms of adaptive_threshold() (all pixels,
 *                    thinned pixels) over (int)sqrtf(mag2) >> 5, counted in
 *                    shared memory per block, then added to global bins.
 *   k_threshold      one block: the percentile and the max_edges limit of
 *                    adaptive_threshold(), as suffix sums over the bins.
 *   k_apply          edge &= mag2 >= threshold (threshold read on the device).
 *
 * Borders: the CPU clamps coordinates at every stage (smoothing of the image,
 * then Sobel of the smoothed image), so the smoothed halo of a tile holds s at
 * the CLAMPED coordinate, computed from image pixels at clamped coordinates
 * around it; clamping the image alone would differ at the two outer pixels.
 *
 * H100 (SXM, 1980 MHz), 1920 x 1080, a busy synthetic image: 58-60 us for
 * the whole call by events, 45 us on a flat image; the CPU twin 10-13 ms on
 * 16 threads.  ncu, with the __match_any_sync variant below: k_smooth_sobel
 * 20 us, k_nms_hist 35 us (17 us of it the histograms), k_threshold 5 us,
 * k_apply 7 us.  Measured and left out: aggregating a warp's shared
 * histogram atomics by bin (__match_any_sync: 5 us slower; a whole-warp
 * __all_sync test: 2 us slower; on the flat image, every pixel in bin 0, all
 * within 1 us); 32 or 128 rows per k_nms_hist block instead of 64 (+3 us,
 * +-1 us); unrolling its row loop (no change). */
#include <cub/block/block_scan.cuh>

#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.cuh"
#include "cuda/edges.cuh"
#include "cuda/gm_cuda.h"

#define NBIN GM_EDGES_HIST_BINS

/* ---- smoothing and Sobel ----------------------------------------------------- */

#define SS_TX 32 /* output tile */
#define SS_TY 32
#define SS_BX 32 /* block: 32 x 8 threads, four output rows each */
#define SS_BY 8

static __device__ __forceinline__ int clampi_dev(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static __global__ void __launch_bounds__(SS_BX *SS_BY)
    k_smooth_sobel(const uint8_t *__restrict__ img, size_t pitch, int w, int h,
                   int16_t *__restrict__ gx, int16_t *__restrict__ gy, int32_t *__restrict__ mag2,
                   uint32_t *__restrict__ hist)
{
    /* image at clamp(x0 - 3 + c), clamp(y0 - 3 + r) */
    __shared__ uint8_t s_img[SS_TY + 6][SS_TX + 6];
    /* horizontal pass at column clamp(x0 - 1 + j) of image row clamp(y0 - 3 + r):
     * at most 16 * 255 = 4080 */
    __shared__ uint16_t s_t[SS_TY + 6][SS_TX + 2];
    /* smoothed image s at (clamp(x0 - 1 + j), clamp(y0 - 1 + i)): at most 4080 */
    __shared__ uint16_t s_s[SS_TY + 2][SS_TX + 2];

    const int x0 = blockIdx.x * SS_TX, y0 = blockIdx.y * SS_TY;
    const int tid = threadIdx.y * SS_BX + threadIdx.x, nt = SS_BX * SS_BY;
    if (blockIdx.x == 0 && blockIdx.y == 0) /* k_nms_hist's histograms, which count after */
        for (int k = tid; k < 2 * NBIN; k += nt)
            hist[k] = 0;

    for (int k = tid; k < (SS_TY + 6) * (SS_TX + 6); k += nt) {
        int r = k / (SS_TX + 6), c = k % (SS_TX + 6);
        int yy = clampi_dev(y0 - 3 + r, 0, h - 1), xx = clampi_dev(x0 - 3 + c, 0, w - 1);
        s_img[r][c] = img[(size_t)yy * pitch + (size_t)xx];
    }
    __syncthreads();

    /* t at column c = clamp(x0 - 1 + j): taps c-2..c+2, which sit at tile
     * columns c - (x0 - 3) - 2 .. + 2, inside [0, SS_TX + 5] because the tile
     * starts inside the image (x0 <= w - 1) */
    for (int k = tid; k < (SS_TY + 6) * (SS_TX + 2); k += nt) {
        int r = k / (SS_TX + 2), j = k % (SS_TX + 2);
        int b = clampi_dev(x0 - 1 + j, 0, w - 1) - (x0 - 3);
        const uint8_t *row = s_img[r];
        s_t[r][j] = (uint16_t)(row[b - 2] + 4 * row[b - 1] + 6 * row[b] + 4 * row[b + 1] + row[b + 2]);
    }
    __syncthreads();

    for (int k = tid; k < (SS_TY + 2) * (SS_TX + 2); k += nt) {
        int i = k / (SS_TX + 2), j = k % (SS_TX + 2);
        int b = clampi_dev(y0 - 1 + i, 0, h - 1) - (y0 - 3);
        uint32_t v = (uint32_t)s_t[b - 2][j] + 4u * s_t[b - 1][j] + 6u * s_t[b][j] +
                     4u * s_t[b + 1][j] + s_t[b + 2][j];
        s_s[i][j] = (uint16_t)((v + 8) >> 4);
    }
    __syncthreads();

    /* output (x, y) = (x0 + lx, y0 + ly): s row ly holds clamp(y - 1), row
     * ly + 2 clamp(y + 1); likewise the columns */
    const int lx = threadIdx.x, x = x0 + lx;
    for (int ly = threadIdx.y; ly < SS_TY; ly += SS_BY) {
        int y = y0 + ly;
        if (x >= w || y >= h)
            continue;
        const uint16_t *a = s_s[ly], *bb = s_s[ly + 1], *c = s_s[ly + 2];
        int dx = (a[lx + 2] + 2 * bb[lx + 2] + c[lx + 2]) - (a[lx] + 2 * bb[lx] + c[lx]);
        int dy = (c[lx] + 2 * c[lx + 1] + c[lx + 2]) - (a[lx] + 2 * a[lx + 1] + a[lx + 2]);
        size_t i = (size_t)y * (size_t)w + (size_t)x;
        gx[i] = (int16_t)dx;
        gy[i] = (int16_t)dy;
        mag2[i] = dx * dx + dy * dy; /* <= 2 * 16320^2 < 2^31 */
    }
}

/* ---- thinning and histograms --------------------------------------------------- */

#define NMS_BX 32
#define NMS_BY 8
#define NMS_ROWS 64 /* rows per block: 2048 pixels share one pair of shared histograms */

static __global__ void __launch_bounds__(NMS_BX *NMS_BY)
    k_nms_hist(const int16_t *__restrict__ gx, const int16_t *__restrict__ gy,
               const int32_t *__restrict__ mag2, int w, int h, int32_t floor2,
               uint8_t *__restrict__ edge, uint32_t *__restrict__ hist)
{
    __shared__ uint32_t s_all[NBIN], s_thin[NBIN];
    const int tid = threadIdx.y * NMS_BX + threadIdx.x, nt = NMS_BX * NMS_BY;
    for (int b = tid; b < NBIN; b += nt) {
        s_all[b] = 0;
        s_thin[b] = 0;
    }
    __syncthreads();

    const int x = blockIdx.x * NMS_BX + threadIdx.x;
    for (int r = threadIdx.y; r < NMS_ROWS; r += NMS_BY) {
        const int y = blockIdx.y * NMS_ROWS + r;
        if (x >= w || y >= h)
            continue;
        const size_t i = (size_t)y * (size_t)w + (size_t)x;
        const int32_t m = mag2[i];
        int e = 0;
        if (y >= GM_EDGE_MARGIN && y < h - GM_EDGE_MARGIN && x >= GM_EDGE_MARGIN &&
            x < w - GM_EDGE_MARGIN && m >= floor2) {
            size_t o = (size_t)gm_dev_dir_offset(gm_edge_dir(gx[i], gy[i]), w);
            /* strictly above one neighbour, at least the other: plateaus keep one pixel */
            e = m > mag2[i - o] && m >= mag2[i + o];
        }
        edge[i] = (uint8_t)e;
        int bin = __float2int_rz(gm_dev_sqrt_mag(m)) >> GM_EDGE_HIST_SHIFT;
        if (bin >= NBIN)
            bin = NBIN - 1;
        atomicAdd(&s_all[bin], 1u);
        if (e)
            atomicAdd(&s_thin[bin], 1u);
    }
    __syncthreads();
    for (int b = tid; b < NBIN; b += nt) {
        if (s_all[b])
            atomicAdd(&hist[b], s_all[b]);
        if (s_thin[b])
            atomicAdd(&hist[NBIN + b], s_thin[b]);
    }
}

/* ---- the adaptive threshold ------------------------------------------------------ */

#define THR_THREADS NBIN /* one thread per bin */

/* adaptive_threshold() of src/stages/sobel.c.  The CPU walks the bins from the top
 * with a running sum and stops at the first bin meeting a condition; the
 * running sum at bin b is the inclusive suffix sum S(b), non-increasing in b,
 * so the bin it stops at is the largest b whose S(b) meets the condition:
 *   p99:  largest b with S_all(b) * 100 >= n
 *   cut:  largest b with S_thin(b) > (size_t)max_edges
 * The double arithmetic is the CPU's, operation for operation. */
static __global__ void __launch_bounds__(THR_THREADS)
    k_threshold(const uint32_t *__restrict__ hist, unsigned long long n,
                unsigned long long max_edges, int32_t *__restrict__ d_thr)
{
    typedef cub::BlockScan<unsigned long long, THR_THREADS> Scan;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ int s_p99, s_cut;
    const int b = NBIN - 1 - (int)threadIdx.x; /* thread 0 holds the top bin */
    if (threadIdx.x == 0) {
        s_p99 = -1;
        s_cut = -1;
    }
    unsigned long long sa, st;
    Scan(tmp).InclusiveSum((unsigned long long)hist[b], sa);
    __syncthreads(); /* tmp is reused */
    Scan(tmp).InclusiveSum((unsigned long long)hist[NBIN + b], st);
    __syncthreads(); /* s_p99, s_cut initialized */
    if (sa * 100 >= n)
        atomicMax(&s_p99, b);
    if (st > max_edges)
        atomicMax(&s_cut, b);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long p99 = s_p99 >= 0 ? (unsigned long long)s_p99 << GM_EDGE_HIST_SHIFT : 0;
        double t = __dmul_rn(GM_REL_MAG, (double)p99);
        if (t < GM_MIN_MAG)
            t = GM_MIN_MAG;
        if (s_cut >= 0) {
            double tb = (double)((s_cut + 1) << GM_EDGE_HIST_SHIFT);
            if (tb > t)
                t = tb;
        }
        *d_thr = (int32_t)__double2int_rz(__dmul_rn(t, t)); /* t <= 32768: fits */
    }
}

/* ---- the final threshold ----------------------------------------------------------- */

#define APPLY_THREADS 256

/* Four pixels a thread; mag2 is read only under a set flag (few are). */
static __global__ void __launch_bounds__(APPLY_THREADS)
    k_apply(const int32_t *__restrict__ mag2, size_t n, const int32_t *__restrict__ d_thr,
            uint8_t *__restrict__ edge)
{
    const int32_t thr = *d_thr;
    const size_t n4 = n / 4;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    uchar4 *e4 = (uchar4 *)edge; /* edge is the start of a cudaMalloc block */
    for (size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x; q < n4; q += stride) {
        uchar4 v = e4[q];
        if (v.x | v.y | v.z | v.w) {
            size_t i = 4 * q;
            v.x = (uint8_t)(v.x && mag2[i] >= thr);
            v.y = (uint8_t)(v.y && mag2[i + 1] >= thr);
            v.z = (uint8_t)(v.z && mag2[i + 2] >= thr);
            v.w = (uint8_t)(v.w && mag2[i + 3] >= thr);
            e4[q] = v;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) {
        size_t i = 4 * n4 + threadIdx.x;
        edge[i] = (uint8_t)(edge[i] && mag2[i] >= thr);
    }
}

/* ---- launcher ------------------------------------------------------------------------ */

static gm_status launch_edges(const uint8_t *d_img, size_t pitch, int w, int h, int max_edges,
                              gm_edges_dev *e, cudaStream_t stream)
{
    const size_t n = (size_t)w * (size_t)h;
    /* the histograms zeroed by k_smooth_sobel's first block (a memset the
     * fewer a side) */
    dim3 sb(SS_BX, SS_BY), sg((unsigned)((w + SS_TX - 1) / SS_TX), (unsigned)((h + SS_TY - 1) / SS_TY));
    k_smooth_sobel<<<sg, sb, 0, stream>>>(d_img, pitch, w, h, e->d_gx, e->d_gy, e->d_mag2,
                                          e->d_hist);
    GM_CUDA_CHECK_LAUNCH();

    dim3 nb(NMS_BX, NMS_BY),
        ng((unsigned)((w + NMS_BX - 1) / NMS_BX), (unsigned)((h + NMS_ROWS - 1) / NMS_ROWS));
    k_nms_hist<<<ng, nb, 0, stream>>>(e->d_gx, e->d_gy, e->d_mag2, w, h,
                                      GM_MIN_MAG * GM_MIN_MAG, e->d_edge, e->d_hist);
    GM_CUDA_CHECK_LAUNCH();

    /* (size_t)max_edges of the CPU: a negative limit is a huge one */
    k_threshold<<<1, THR_THREADS, 0, stream>>>(e->d_hist, (unsigned long long)n,
                                               (unsigned long long)(long long)max_edges,
                                               e->d_threshold);
    GM_CUDA_CHECK_LAUNCH();

    size_t blocks = (n / 4 + APPLY_THREADS - 1) / APPLY_THREADS;
    if (blocks < 1)
        blocks = 1; /* the tail (n % 4 pixels) is block 0's */
    if (blocks > 4096)
        blocks = 4096;
    k_apply<<<(unsigned)blocks, APPLY_THREADS, 0, stream>>>(e->d_mag2, n, e->d_threshold, e->d_edge);
    GM_CUDA_CHECK_LAUNCH();

    GM_CUDA_CHECK(cudaMemcpyAsync(e->h_threshold, e->d_threshold, sizeof *e->h_threshold,
                                  cudaMemcpyDeviceToHost, stream));
    return GM_OK;
}

/* ---- entry points -------------------------------------------------------------------- */

/* The buffers of e for n pixels (n 0: to free them). */
static int edges_bufs(gm_edges_dev *e, size_t n, gm_dev_buf *b)
{
    int k = 0;
    b[k++] = (gm_dev_buf){(void **)&e->d_gx, n * sizeof *e->d_gx, 0};
    b[k++] = (gm_dev_buf){(void **)&e->d_gy, n * sizeof *e->d_gy, 0};
    b[k++] = (gm_dev_buf){(void **)&e->d_mag2, n * sizeof *e->d_mag2, 0};
    b[k++] = (gm_dev_buf){(void **)&e->d_edge, n, 0};
    b[k++] = (gm_dev_buf){(void **)&e->d_hist, 2 * NBIN * sizeof *e->d_hist, 0};
    b[k++] = (gm_dev_buf){(void **)&e->d_threshold, sizeof *e->d_threshold, 0};
    b[k++] = (gm_dev_buf){(void **)&e->h_threshold, sizeof *e->h_threshold, 1};
    return k;
}

extern "C" gm_status gm_edges_dev_alloc_on(gm_edges_dev *e, int w, int h, cudaStream_t stream)
{
    if (!e)
        return GM_ERR_INVALID;
    size_t n;
    if (w <= 0 || h <= 0 || !gm_mul_ok((size_t)w, (size_t)h, &n) || n > UINT32_MAX)
        return GM_ERR_INVALID;
    if (!e->d_edge || e->pool != stream) { /* not made, or made otherwise: anew */
        gm_edges_dev_free(e);
        e->pool = stream;
    }
    gm_dev_buf old[8], b[8];
    edges_bufs(e, e->cap, old);
    gm_status st = gm_dev_bufs_resize_on(e->d_edge ? old : NULL, b, edges_bufs(e, n, b), stream);
    if (st != GM_OK) {
        memset(e, 0, sizeof *e);
        return st;
    }
    *e->h_threshold = 0;
    e->cap = n;
    return GM_OK;
}

extern "C" gm_status gm_edges_dev_alloc(gm_edges_dev *e, int w, int h)
{
    if (e)
        memset(e, 0, sizeof *e);
    return gm_edges_dev_alloc_on(e, w, h, NULL);
}

extern "C" void gm_edges_dev_free(gm_edges_dev *e)
{
    if (!e)
        return;
    gm_dev_buf b[8];
    gm_dev_bufs_free_on(b, edges_bufs(e, 0, b), e->pool);
    memset(e, 0, sizeof *e);
}

/* d_img is read by kernels on `stream`: the caller's upload of it must be
 * ordered before them on that stream (or synchronized).  A cudaMemcpy on the
 * legacy default stream is not ordered with a cudaStreamNonBlocking stream. */
extern "C" gm_status gm_edges_cuda(const uint8_t *d_img, size_t pitch, int w, int h,
                                   int max_edges, gm_edges_dev *e, cudaStream_t stream)
{
    size_t n;
    if (!e || !e->d_gx || !d_img || w <= 0 || h <= 0 || pitch < (size_t)w ||
        !gm_mul_ok((size_t)w, (size_t)h, &n) || n > e->cap)
        return GM_ERR_INVALID;
    /* grid y limit (65535 blocks of 32 rows) */
    if ((h + SS_TY - 1) / SS_TY > 65535)
        return GM_ERR_INVALID;
    e->w = w;
    e->h = h;
    return launch_edges(d_img, pitch, w, h, max_edges, e, stream);
}

extern "C" gm_status gm_edges_dev_to_host(const gm_edges_dev *e, cudaStream_t stream,
                                          gm_edges *out)
{
    if (!out)
        return GM_ERR_INVALID;
    memset(out, 0, sizeof *out);
    if (!e || !e->d_gx || e->w <= 0 || e->h <= 0)
        return GM_ERR_INVALID;
    size_t n = (size_t)e->w * (size_t)e->h;
    gm_edges r;
    memset(&r, 0, sizeof r);
    r.w = e->w;
    r.h = e->h;
    r.gx = (int16_t *)malloc(n * sizeof *r.gx);
    r.gy = (int16_t *)malloc(n * sizeof *r.gy);
    r.mag2 = (int32_t *)malloc(n * sizeof *r.mag2);
    r.edge = (uint8_t *)malloc(n);
    /* freed here, not with gm_edges_free: this library does not link the CPU one */
#define GM_FREE_R_() (free(r.gx), free(r.gy), free(r.mag2), free(r.edge))
    if (!r.gx || !r.gy || !r.mag2 || !r.edge) {
        GM_FREE_R_();
        return GM_ERR_NOMEM;
    }
    cudaError_t err = cudaMemcpyAsync(r.gx, e->d_gx, n * sizeof *r.gx, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(r.gy, e->d_gy, n * sizeof *r.gy, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(r.mag2, e->d_mag2, n * sizeof *r.mag2, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(r.edge, e->d_edge, n, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(&r.threshold, e->d_threshold, sizeof r.threshold,
                              cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
        err = gm_cuda_stream_wait(stream);
    if (err != cudaSuccess) {
        gm_cuda_record_error(err, "cudaMemcpyAsync / cudaStreamSynchronize", __func__, __FILE__,
                             __LINE__);
        GM_FREE_R_();
        return GM_ERR_DEVICE;
    }
#undef GM_FREE_R_
    *out = r;
    return GM_OK;
}
