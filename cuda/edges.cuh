/* edges.cuh: device twins of the small rules of src/sobel.c that both
 * cuda/sobel.cu and cuda/compact.cu (the sub-pixel points) need.
 *
 * The constants are private #defines of src/sobel.c; they are repeated here
 * and must stay equal to those (the parity tests test_sobel_cuda and
 * test_compact_cuda fail when they drift). */
#ifndef GM_EDGES_CUH
#define GM_EDGES_CUH

#include <stdint.h>

/* src/sobel.c: GM_EDGE_MARGIN, GM_MIN_MAG, GM_REL_MAG */
#define GM_DEV_EDGE_MARGIN 2
#define GM_DEV_MIN_MAG 96
#define GM_DEV_REL_MAG 0.06
/* src/sobel.c adaptive_threshold(): NBIN bins of 1 << SHIFT magnitude units */
#define GM_DEV_HIST_SHIFT 5

/* grad_dir() of src/sobel.c: 0 horizontal, 1 vertical, 2 diagonal
 * down-right, 3 diagonal down-left.  |g| <= 16320, so g * 1000 fits int. */
static __device__ __forceinline__ int gm_dev_edge_dir(int gx, int gy)
{
    int ax = gx < 0 ? -gx : gx, ay = gy < 0 ? -gy : gy;
    if (ay * 1000 <= ax * 414)
        return 0;
    if (ax * 1000 <= ay * 414)
        return 1;
    return ((gx > 0) == (gy > 0)) ? 2 : 3;
}

/* The neighbour offset along direction d in a packed image of width w. */
static __device__ __forceinline__ int gm_dev_dir_offset(int d, int w)
{
    return d == 0 ? 1 : d == 1 ? w : d == 2 ? w + 1 : w - 1;
}

/* (int)sqrtf((float)mag2) of the CPU, spelled with the IEEE round-to-nearest
 * intrinsics so that no compiler flag (-use_fast_math, -prec-sqrt=false) can
 * change it; truncation toward zero like the C cast. */
static __device__ __forceinline__ float gm_dev_sqrt_mag(int32_t mag2)
{
    return __fsqrt_rn(__int2float_rn(mag2));
}

#endif
