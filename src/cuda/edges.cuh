/* edges.cuh: device twins of the small rules of src/stages/sobel.c that both
 * src/cuda/sobel.cu and src/cuda/compact.cu (the sub-pixel points) need.
 *
 * The constants and gm_edge_dir() themselves live in src/stages/sobel.h, shared
 * with the CPU stage. */
#ifndef GM_EDGES_CUH
#define GM_EDGES_CUH

#include <stdint.h>



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
