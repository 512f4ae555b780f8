/* keys.cuh: the key of a cloud point in a query or reference basis's frame,
 * as the vote (vote.cu) and the items (items.cu) compute it on the device:
 * a functor per kind of basis, so that one kernel serves both.  keys(d, k)
 * is the key of cloud point k in basis d's frame, or GM_KEY_EMPTY.
 *
 *   pair_keys  two-point bases (bases.h): gm_frame_key, the points near an
 *              endpoint left out; frames from gm_frame_of on the host.
 *   tri_keys   triangles (affine_core.h): gm_aframe_key_cs on the host's
 *              cosines and sines of the points' angles, the points near a
 *              vertex left out; frames from gm_tri_frame_of on the host.
 *
 * Files that include it are compiled with --fmad=false (CMakeLists.txt), so
 * every key equals the CPU's. */
#ifndef GM_KEYS_CUH
#define GM_KEYS_CUH

#include <stdint.h>

#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/affine_core.h"

struct pair_keys {
    const gm_vote_basis *qb;
    const gm_point *cloud;
    __device__ uint32_t operator()(uint32_t d, uint32_t k) const
    {
        const gm_vote_basis &b = qb[d];
        const gm_point p = cloud[k];
        return gm_near_endpoint(b.a, b.b, p) ? GM_KEY_EMPTY : gm_frame_key(&b.f, p);
    }
};

struct tri_keys {
    const gm_tri_frame *qt;
    const gm_point *cloud;
    const float *cs; /* [2 n_cloud] cosine, sine */
    __device__ uint32_t operator()(uint32_t d, uint32_t k) const
    {
        const gm_tri_frame &t = qt[d];
        const gm_point p = cloud[k];
        if (gm_near_vertex(t.f.ax, t.f.ay, t.bx, t.by, t.cx, t.cy, p))
            return GM_KEY_EMPTY;
        return gm_aframe_key_cs(&t.f, p, cs[2 * k], cs[2 * k + 1]);
    }
};

#endif
