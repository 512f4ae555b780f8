/* compact.cu: compaction of flagged pixels into an index array (the twin of
 * src/stages/compact.c), and the sub-pixel edge points of those indices (the twin of
 * gm_edge_points_cpu in src/stages/points.c).
 *
 * Compaction, the blocked scan of compact.c with 4096 flags a block:
 *   k_count     per block: the number of non-zero flags (coalesced loads
 *               through cub::BlockLoad's warp transpose, a block reduction);
 *   ExclusiveSum over the block counts (cub::DeviceScan, scratch preallocated);
 *   k_scatter   per block: the flags again, a block scan of the per-thread
 *               counts, each thread writes its indices at its offset.
 * Order is preserved, so the indices equal the CPU's.  Writes stop at the
 * caller's capacity (the first `out_cap` indices are written), and the true
 * total goes to d_count, so an overflow is seen on the host (CudaSift's
 * d_PointCounter pattern) and never writes out of bounds.
 *
 * Points: the CPU formulas operation for operation, with the IEEE
 * round-to-nearest intrinsics (__fadd_rn, __fmul_rn, ...) so that nvcc cannot
 * contract a multiply and an add into an FMA: x, y and w come out bit for bit
 * as on an x86-64 build without -mfma.  The angle is atan2 in double rounded
 * to float (within an ulp of the C library's atan2f; the tests allow 1e-6
 * rad).
 *
 * H100, 1920 x 1080 flags, 199k set: compaction 24 us by events (k_count 5,
 * the scan 7 in two launches, k_scatter 7 by ncu), points 11 us. */
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <string.h>

#include "cuda/cuda_check.cuh"
#include "cuda/edges.cuh"
#include "cuda/gm_cuda.h"

#define CP_THREADS 256
#define CP_ITEMS 16
#define CP_CHUNK (CP_THREADS * CP_ITEMS)

typedef cub::BlockLoad<uint8_t, CP_THREADS, CP_ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE> FlagLoad;

static uint32_t compact_blocks(uint32_t n) { return (uint32_t)(((uint64_t)n + CP_CHUNK - 1) / CP_CHUNK); }

/* The flags of block blockIdx.x in blocked order (thread t holds flags
 * base + t*CP_ITEMS + j), zero past n; returns how many are set. */
static __device__ __forceinline__ uint32_t load_flags(const uint8_t *__restrict__ flags, uint32_t n,
                                                      typename FlagLoad::TempStorage &tmp,
                                                      uint8_t (&f)[CP_ITEMS])
{
    size_t base = (size_t)blockIdx.x * CP_CHUNK;
    size_t left = (size_t)n - base;
    int valid = left < CP_CHUNK ? (int)left : CP_CHUNK;
    FlagLoad(tmp).Load(flags + base, f, valid, (uint8_t)0);
    uint32_t c = 0;
#pragma unroll
    for (int j = 0; j < CP_ITEMS; j++)
        c += f[j] != 0;
    return c;
}

static __global__ void __launch_bounds__(CP_THREADS)
    k_count(const uint8_t *__restrict__ flags, uint32_t n, uint32_t *__restrict__ blk_count)
{
    typedef cub::BlockReduce<uint32_t, CP_THREADS> Reduce;
    __shared__ union {
        typename FlagLoad::TempStorage load;
        typename Reduce::TempStorage reduce;
    } tmp;
    uint8_t f[CP_ITEMS];
    uint32_t c = load_flags(flags, n, tmp.load, f);
    __syncthreads(); /* tmp is reused */
    uint32_t total = Reduce(tmp.reduce).Sum(c);
    if (threadIdx.x == 0)
        blk_count[blockIdx.x] = total;
}

static __global__ void __launch_bounds__(CP_THREADS)
    k_scatter(const uint8_t *__restrict__ flags, uint32_t n, const uint32_t *__restrict__ blk_offset,
              uint32_t *__restrict__ out, uint32_t out_cap, uint32_t *__restrict__ d_count)
{
    typedef cub::BlockScan<uint32_t, CP_THREADS> Scan;
    __shared__ union {
        typename FlagLoad::TempStorage load;
        typename Scan::TempStorage scan;
    } tmp;
    uint8_t f[CP_ITEMS];
    uint32_t c = load_flags(flags, n, tmp.load, f);
    __syncthreads(); /* tmp is reused */
    uint32_t off, total;
    Scan(tmp.scan).ExclusiveSum(c, off, total);
    const uint32_t blk = blk_offset[blockIdx.x];
    uint32_t o = blk + off;
    const uint32_t first = blockIdx.x * (uint32_t)CP_CHUNK + threadIdx.x * CP_ITEMS;
#pragma unroll
    for (int j = 0; j < CP_ITEMS; j++)
        if (f[j]) {
            if (o < out_cap)
                out[o] = first + (uint32_t)j;
            o++;
        }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
        *d_count = blk + total;
}

static gm_status launch_compact(gm_compact_flags_dev *c, const uint8_t *d_flags, uint32_t n,
                                uint32_t *d_out, uint32_t out_cap, cudaStream_t stream)
{
    uint32_t nblk = compact_blocks(n);
    if (nblk == 0) {
        GM_CUDA_CHECK(cudaMemsetAsync(c->d_count, 0, sizeof *c->d_count, stream));
    } else {
        uint32_t *d_cnt = c->d_blk, *d_off = c->d_blk + c->max_blocks;
        k_count<<<nblk, CP_THREADS, 0, stream>>>(d_flags, n, d_cnt);
        GM_CUDA_CHECK_LAUNCH();
        size_t bytes = 0;
        GM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, bytes, d_cnt, d_off, (int)nblk, stream));
        if (bytes > c->temp_bytes)
            return GM_ERR_INVALID; /* not expected: the scratch was sized for max_blocks */
        GM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(c->d_temp, bytes, d_cnt, d_off, (int)nblk, stream));
        k_scatter<<<nblk, CP_THREADS, 0, stream>>>(d_flags, n, d_off, d_out, out_cap, c->d_count);
        GM_CUDA_CHECK_LAUNCH();
    }
    GM_CUDA_CHECK(cudaMemcpyAsync(c->h_count, c->d_count, sizeof *c->h_count,
                                  cudaMemcpyDeviceToHost, stream));
    return GM_OK;
}

/* The buffers of c for nblk blocks and a scan of temp bytes (0: to free). */
static int flags_bufs(gm_compact_flags_dev *c, size_t nblk, size_t temp, gm_dev_buf *b)
{
    int k = 0;
    b[k++] = (gm_dev_buf){(void **)&c->d_blk, 2 * nblk * sizeof *c->d_blk, 0};
    b[k++] = (gm_dev_buf){(void **)&c->d_temp, temp, 0};
    b[k++] = (gm_dev_buf){(void **)&c->d_count, sizeof *c->d_count, 0};
    b[k++] = (gm_dev_buf){(void **)&c->h_count, sizeof *c->h_count, 1};
    return k;
}

extern "C" gm_status gm_compact_flags_dev_alloc_on(gm_compact_flags_dev *c, uint32_t cap,
                                                   cudaStream_t stream)
{
    if (!c)
        return GM_ERR_INVALID;
    uint32_t nblk = compact_blocks(cap);
    if (nblk == 0)
        nblk = 1;
    size_t bytes = 0;
    cudaError_t err = cub::DeviceScan::ExclusiveSum(NULL, bytes, (const uint32_t *)NULL,
                                                    (uint32_t *)NULL, (int)nblk, (cudaStream_t)0);
    if (err != cudaSuccess) {
        gm_cuda_record_error(err, "cub::DeviceScan::ExclusiveSum (size query)", __func__, __FILE__,
                             __LINE__);
        return GM_ERR_DEVICE;
    }
    if (bytes == 0)
        bytes = 1;
    if (!c->d_count || c->pool != stream) { /* not made, or made otherwise: anew */
        gm_compact_flags_dev_free(c);
        c->pool = stream;
    }
    gm_dev_buf old[4], b[4];
    flags_bufs(c, c->max_blocks, c->temp_bytes, old);
    gm_status st =
        gm_dev_bufs_resize_on(c->d_count ? old : NULL, b, flags_bufs(c, nblk, bytes, b), stream);
    if (st != GM_OK) {
        memset(c, 0, sizeof *c);
        return st;
    }
    *c->h_count = 0;
    c->cap = cap;
    c->max_blocks = nblk;
    c->temp_bytes = bytes;
    return GM_OK;
}

extern "C" gm_status gm_compact_flags_dev_alloc(gm_compact_flags_dev *c, uint32_t cap)
{
    if (c)
        memset(c, 0, sizeof *c);
    return gm_compact_flags_dev_alloc_on(c, cap, NULL);
}

extern "C" void gm_compact_flags_dev_free(gm_compact_flags_dev *c)
{
    if (!c)
        return;
    gm_dev_buf b[4];
    gm_dev_bufs_free_on(b, flags_bufs(c, 0, 0, b), c->pool);
    memset(c, 0, sizeof *c);
}

extern "C" gm_status gm_compact_flags_cuda(gm_compact_flags_dev *c, const uint8_t *d_flags, uint32_t n,
                                           uint32_t *d_out, uint32_t out_cap, cudaStream_t stream)
{
    if (!c || !c->d_blk || n > c->cap || (n > 0 && !d_flags) || (out_cap > 0 && !d_out))
        return GM_ERR_INVALID;
    return launch_compact(c, d_flags, n, d_out, out_cap, stream);
}

/* ---- sub-pixel edge points -------------------------------------------------------- */

#define PT_THREADS 256

static __global__ void __launch_bounds__(PT_THREADS)
    k_edge_points(const int16_t *__restrict__ gx, const int16_t *__restrict__ gy,
                  const int32_t *__restrict__ mag2, int w, int h, const uint32_t *__restrict__ idx,
                  const uint32_t *__restrict__ d_n, uint32_t max_n, gm_point *__restrict__ pts)
{
    uint32_t n = max_n;
    if (d_n && *d_n < n)
        n = *d_n;
    const size_t npix = (size_t)w * (size_t)h;
    const uint32_t uw = (uint32_t)w, uh = (uint32_t)h;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x) {
        uint32_t i = idx[k];
        gm_point p;
        if ((size_t)i >= npix) { /* not a pixel: outside the CPU's contract */
            p.x = p.y = p.angle = p.w = 0.0f;
            pts[k] = p;
            continue;
        }
        int gxv = gx[i], gyv = gy[i];
        int d = gm_edge_dir(gxv, gyv);
        uint32_t xi = i % uw, yi = i / uw;
        float m0 = gm_dev_sqrt_mag(mag2[i]);
        float t = 0.0f;
        /* edge pixels sit 2 px inside the border; the test keeps a stray
         * index on the outer ring from reading outside the image (t = 0) */
        if (xi >= 1 && xi + 1 < uw && yi >= 1 && yi + 1 < uh) {
            size_t o = (size_t)gm_dev_dir_offset(d, w);
            float mm = gm_dev_sqrt_mag(mag2[i - o]), mp = gm_dev_sqrt_mag(mag2[i + o]);
            float den = __fadd_rn(__fsub_rn(mm, __fmul_rn(2.0f, m0)), mp);
            if (den < 0.0f) {
                t = __fdiv_rn(__fmul_rn(0.5f, __fsub_rn(mm, mp)), den);
                t = t < -0.5f ? -0.5f : t > 0.5f ? 0.5f : t;
            }
        }
        const float stepx = d == 0 ? 1.0f : d == 1 ? 0.0f : d == 2 ? 1.0f : -1.0f;
        const float stepy = d == 0 ? 0.0f : 1.0f;
        p.x = __fadd_rn(__uint2float_rn(xi), __fmul_rn(t, stepx));
        p.y = __fadd_rn(__uint2float_rn(yi), __fmul_rn(t, stepy));
        p.angle = (float)atan2((double)gyv, (double)gxv);
        p.w = m0;
        pts[k] = p;
    }
}

static gm_status launch_edge_points(const gm_edges_dev *e, const uint32_t *d_idx,
                                    const uint32_t *d_n, uint32_t max_n, gm_point *d_pts,
                                    cudaStream_t stream)
{
    if (max_n == 0)
        return GM_OK;
    uint32_t blocks = (max_n + PT_THREADS - 1) / PT_THREADS;
    if (blocks > 65535u)
        blocks = 65535u; /* a grid-stride loop does the rest */
    k_edge_points<<<blocks, PT_THREADS, 0, stream>>>(e->d_gx, e->d_gy, e->d_mag2, e->w, e->h, d_idx,
                                                     d_n, max_n, d_pts);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}

extern "C" gm_status gm_edge_points_cuda(const gm_edges_dev *e, const uint32_t *d_idx,
                                         const uint32_t *d_n, uint32_t max_n, gm_point *d_pts,
                                         cudaStream_t stream)
{
    if (!e || !e->d_gx || e->w <= 0 || e->h <= 0 || (max_n > 0 && (!d_idx || !d_pts)))
        return GM_ERR_INVALID;
    return launch_edge_points(e, d_idx, d_n, max_n, d_pts, stream);
}
