/* corners_cuda.h: the corner stage on the GPU (src/cuda/corners.cu), C interface.
 *
 * The twin of gm_corners_cpu (src/stages/corners.c): the same points in the same
 * order, x, y and w bit for bit, the angle from the C library's atan2f on the
 * host (CUDA's atan2f differs from glibc's in the last bit).  The buffers
 * belong to the caller: allocated once for the largest frame and the largest
 * target, reused frame after frame (any shape of at most cap pixels); the
 * stage call allocates nothing. */
#ifndef GM_CORNERS_CUDA_H
#define GM_CORNERS_CUDA_H

#include "cuda/gm_cuda.h"
#include "stages/points.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t cap;           /* pixels per frame at most (w * h of gm_corners_dev_alloc) */
    uint32_t max_target;  /* corners per call at most */
    size_t cand_cap;      /* candidates at most: one per 2 x 2 block, cap / 4 + 1 */
    size_t grid_cap;      /* suppression grid cells at most, any shape of cap pixels */
    float *d_sum;         /* [3 * cap] row box sums of gx^2, gx gy, gy^2 (three planes) */
    float *d_resp;        /* [cap] response */
    uint32_t *d_best;     /* [1] bits of the largest response, at least 0.0f */
    uint32_t *d_nsel;     /* [1] candidates found (cub::DeviceSelect) */
    float *d_key[2];      /* [cand_cap] responses of the candidates: sort input, output */
    uint32_t *d_idx[2];   /* [cand_cap] their pixel indices: sort input, output */
    float *d_grid;        /* [2 * grid_cap] per cell the last kept corner's (x, y) */
    void *d_temp;         /* scratch of cub::DeviceSelect and cub::DeviceRadixSort */
    size_t temp_bytes;
    void *d_stage;        /* [16 + 16 * max_target] bytes: the count, then the kept corners */
    void *h_stage;        /* the same, pinned host memory */
    cudaStream_t pool;    /* gm_corners_dev_alloc_on's stream (NULL: cudaMalloc's buffers) */
} gm_corners_dev;

/* Device buffers for frames of up to w * h pixels (any shape) and up to
 * max_target corners a call; c is zeroed first.  Free with
 * gm_corners_dev_free (also safe on a zeroed or failed c).  GM_ERR_INVALID
 * for w, h <= 0 or w * h > INT32_MAX. */
gm_status gm_corners_dev_alloc(gm_corners_dev *c, int w, int h, uint32_t max_target);
/* Grown in place on stream, as gm_edges_dev_alloc_on (gm_cuda.h). */
gm_status gm_corners_dev_alloc_on(gm_corners_dev *c, int w, int h, uint32_t max_target,
                                  cudaStream_t stream);
void gm_corners_dev_free(gm_corners_dev *c);

/* gm_corners_cpu on the device for the edges last computed into e
 * (gm_edges_cuda, on this stream or synchronized before): at most target
 * points into h_out (host memory, capacity target) and their count into
 * *h_n.  Synchronizes stream once, at the end (also when there is nothing to
 * find).  GM_ERR_INVALID (nothing queued) for NULL arguments, a frame over
 * c->cap pixels or target > c->max_target. */
gm_status gm_corners_cuda(const gm_edges_dev *e, uint32_t target, gm_corners_dev *c,
                          gm_point *h_out, uint32_t *h_n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
