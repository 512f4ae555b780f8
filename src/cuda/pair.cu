/* pair.cu: a pairing's voted candidates decided on the device (matcher.c's
 * run_pairing after the vote, pair_core.h's steps), so that a pairing
 * waits for the device once instead of three times (the vote's candidates,
 * their scores, the picks' refinement):
 *
 *   k_pair_decide  a block a candidate: its similarity (gm_pair_similarity),
 *                  rotation and m0, its loose score (verify_block, as
 *                  verify.cu's k_verify); the last block to finish then
 *                  gm_pair_pick over the scores (one thread, on copies in
 *                  shared memory), the picks' 3x3 into gm_pair_dev's hr;
 *   the refinement (verify.cu, gm_refine_queue_into) of GM_PAIR_PICKS
 *                  candidates in hr, their scores in vr, those past the
 *                  device's pick count idle;
 *
 * then one copy back, the refined picks in it: two launches and a copy a
 * pairing (three launches and three copies until 2026-11-30, six before
 * the decisions came to the device).  Compiled with --fmad=false (CMakeLists.txt): the
 * similarities and the pick's distances are the host's numbers.  The
 * rotation is CUDA's atan2 where the host's is glibc's: a candidate whose
 * double is within GM_PAIR_ROT_ULPS of a float midpoint is flagged, and
 * the host then decides the pairing as it would without this file. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cuda/cuda_check.cuh"
#include "cuda/gm_cuda.h"
#include "cuda/verify_block.cuh"
#include "cuda/verify_cuda.h"
#include "stages/pair_core.h"

#define GM_PAIR_THREADS GM_VERIFY_THREADS /* a candidate a block; the last block's pick a
                                            candidate a thread */
static_assert(GM_PAIR_THREADS >= GM_MAX_TOP_K && GM_PAIR_THREADS >= 9 * GM_PAIR_PICKS,
              "the pick takes a candidate a thread");

/* A score another block wrote, read from L2 (ld.global.cg), word by word. */
static __device__ gm_verify_score load_cg(const gm_verify_score *p)
{
    static_assert(sizeof(gm_verify_score) % sizeof(unsigned long long) == 0, "8-byte words");
    gm_verify_score r;
    const unsigned long long *src = (const unsigned long long *)p;
    unsigned long long *dst = (unsigned long long *)&r;
    for (size_t i = 0; i < sizeof r / sizeof *dst; i++)
        dst[i] = __ldcg(src + i);
    return r;
}

/* Block c: candidate c's similarity (gm_pair_similarity) and rotation, its
 * loose score (gm_verify_cpu's, verify_block) into scores[c], ms, m0 and
 * the candidate into pd; then the last block to finish (a counter in pd,
 * after a fence: every other block's writes seen) makes the decisions: the
 * rotation doubt of any candidate, the scores kept, the picks (gm_pair_pick
 * by one thread, on copies in shared memory: its loads wait for shared
 * memory, not for L2) and their 3x3 similarities into hr, the refinement's
 * parameters.  One launch where three were (the candidates' parameters, the
 * scores, the pick). */
static __global__ void __launch_bounds__(GM_PAIR_THREADS)
    k_pair_decide(const gm_candidate *cands, uint32_t nc, const gm_vote_basis *qb,
                  const float4 *rends, gm_pair_scales s, gm_map_view map, const gm_point *pts,
                  uint32_t n, gm_verify_score *scores, int w, int h, double floor, int ndone,
                  int max_done, gm_pair_dev *pd)
{
    __shared__ double s_ms[6];
    __shared__ float s_rot;
    __shared__ int s_last;
    const uint32_t c = blockIdx.x, t = threadIdx.x;
    if (t == 0) {
        const gm_candidate cd = cands[c];
        const gm_vote_basis q = qb[cd.query_basis];
        const float4 r = rends[cd.ref_basis];
        double ms[6], m0[6];
        gm_pair_similarity(q.a.x, q.a.y, q.b.x, q.b.y, r.x, r.y, r.z, r.w, s, ms, m0);
        for (int i = 0; i < 6; i++) {
            s_ms[i] = ms[i];
            pd->ms[c][i] = ms[i];
            pd->m0[c][i] = m0[i];
        }
        const double a = atan2(ms[3], ms[0]);
        s_rot = (float)a;
        pd->doubt[c] = gm_pair_rot_doubtful(a) ? 1u : 0u;
        pd->cands[c] = cd;
    }
    __syncthreads();
    double m[6];
    for (int i = 0; i < 6; i++)
        m[i] = s_ms[i];
    const gm_verify_score sc = verify_block(map, pts, n, m, s_rot);
    if (t == 0) {
        scores[c] = sc;
        __threadfence(); /* this block's writes seen before its arrival is */
        s_last = atomicAdd(&pd->arrived, 1u) == nc - 1;
    }
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    __shared__ gm_verify_score s_sc[GM_MAX_TOP_K];
    __shared__ double s_m0[GM_MAX_TOP_K][6];
    __shared__ double s_done[GM_PAIR_DONE_MAX][6];
    __shared__ int s_pick[GM_PAIR_PICKS], s_np;
    __shared__ unsigned s_doubt;
    if (t == 0)
        s_doubt = 0;
    __syncthreads();
    if (t < nc) { /* the other blocks' writes: from L2 */
        s_sc[t] = load_cg(&scores[t]);
        for (int i = 0; i < 6; i++)
            s_m0[t][i] = __ldcg(&pd->m0[t][i]);
        if (__ldcg(&pd->doubt[t]))
            atomicOr(&s_doubt, 1u);
    }
    for (int d = (int)t; d < ndone; d += blockDim.x)
        for (int i = 0; i < 6; i++)
            s_done[d][i] = pd->done[d][i];
    __syncthreads();
    if (t == 0) { /* the remembered list grows here only (the host keeps its own) */
        s_np = gm_pair_pick(s_sc, s_m0, nc, w, h, floor, s_done, &ndone, max_done, s_pick);
        pd->nc = nc;
        pd->doubtful = s_doubt;
        pd->arrived = 0; /* for the next pairing */
    }
    __syncthreads();
    const int np = s_np;
    if (t < nc)
        pd->sc[t] = s_sc[t];
    if (t < (uint32_t)np * 9) { /* gm_h_from_m of each pick */
        const uint32_t i = t / 9, j = t % 9;
        pd->hr[i][j] = j < 6 ? __ldcg(&pd->ms[s_pick[i]][j]) : j == 8 ? 1.0 : 0.0;
    }
    if (t < (uint32_t)np)
        pd->pick[t] = s_pick[t];
    if (t == 0)
        pd->npick = (uint32_t)np;
}

extern "C" gm_status gm_pair_queue_cuda(const gm_edge_map_dev *map, gm_verify_dev *v,
                                        const gm_candidate *d_cands, uint32_t nc,
                                        const gm_vote_basis *d_qbases, const float4 *d_rends,
                                        const gm_pair_in *in, cudaStream_t stream)
{
    if (!map || !v || !in || nc > v->max_cands || nc > GM_MAX_TOP_K ||
        v->max_cands < GM_PAIR_PICKS || in->ndone < 0 || in->max_done > GM_PAIR_DONE_MAX ||
        in->ndone > in->max_done || (nc && (!d_cands || !d_qbases || !d_rends)))
        return GM_ERR_INVALID;
    gm_pair_dev *hp = v->h_pair, *dp = v->d_pair;
    if (nc == 0)
        return GM_OK;
    if (in->ndone) { /* the previous call's copy back was waited for: the staging is free */
        memcpy(hp->done, in->done, (size_t)in->ndone * sizeof hp->done[0]); /* 6 doubles each */
        GM_CUDA_CHECK(cudaMemcpyAsync(dp->done, hp->done, (size_t)in->ndone * sizeof hp->done[0],
                                      cudaMemcpyHostToDevice, stream));
    }
    k_pair_decide<<<nc, GM_PAIR_THREADS, 0, stream>>>(
        d_cands, nc, d_qbases, d_rends, in->s, map_view(map), v->d_pts, v->n, v->d_scores, in->w,
        in->h, in->floor, in->ndone, in->max_done, dp);
    GM_CUDA_CHECK_LAUNCH();
    gm_status st;
    if ((st = gm_refine_queue_into(map, v, GM_MODEL_SIMILARITY, in->iters, GM_PAIR_PICKS,
                                   &dp->hr[0][0], dp->vr, &dp->npick, stream)) != GM_OK)
        return st;
    GM_CUDA_CHECK(cudaMemcpyAsync(hp, dp, offsetof(gm_pair_dev, ms), cudaMemcpyDeviceToHost,
                                  stream));
    return GM_OK;
}

extern "C" gm_status gm_pair_collect_cuda(gm_verify_dev *v, uint32_t nc, gm_pair_out *out,
                                          cudaStream_t stream)
{
    const gm_pair_dev *hp = v->h_pair;
    out->nc = nc;
    out->npick = 0;
    out->doubtful = 0;
    if (nc == 0)
        return GM_OK;
    GM_CUDA_CHECK(gm_cuda_stream_wait(stream));
    if (hp->nc != nc || hp->npick > GM_PAIR_PICKS)
        return GM_ERR_DEVICE; /* not what was queued: never read further */
    memcpy(out->cands, hp->cands, nc * sizeof *out->cands);
    if (hp->doubtful) {
        out->doubtful = 1;
        return GM_OK;
    }
    memcpy(out->sc, hp->sc, nc * sizeof *out->sc);
    memcpy(out->m0, hp->m0, nc * sizeof *out->m0);
    out->npick = (int)hp->npick;
    for (int i = 0; i < out->npick; i++) {
        if (hp->pick[i] < 0 || (uint32_t)hp->pick[i] >= nc)
            return GM_ERR_DEVICE;
        out->pick[i] = hp->pick[i];
        memcpy(out->hr[i], hp->hr[i], sizeof out->hr[i]);
        out->vr[i] = hp->vr[i];
    }
    return GM_OK;
}

static __global__ void k_pair_ends(const gm_vote_basis *frames, uint32_t n, float4 *ends)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        ends[i] = make_float4(frames[i].a.x, frames[i].a.y, frames[i].b.x, frames[i].b.y);
}

extern "C" gm_status gm_pair_ends_cuda(const gm_vote_basis *d_frames, uint32_t n, float4 *d_ends,
                                       cudaStream_t stream)
{
    if (n == 0)
        return GM_OK;
    if (!d_frames || !d_ends)
        return GM_ERR_INVALID;
    k_pair_ends<<<(n + 255) / 256, 256, 0, stream>>>(d_frames, n, d_ends);
    GM_CUDA_CHECK_LAUNCH();
    return GM_OK;
}
