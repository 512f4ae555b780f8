/* chain.cu: a chain of refinements (chain_core.h; the matcher's rivals) on
 * the device, every step and round queued and one copy back: what
 * pipeline/chain.c's gm_chain_host does with a refinement call (and a
 * wait) a step and a round.
 *
 *   upload h, scores, the steps' flags
 *   a step:  k_chain_rescale (carried to the step's level), then the
 *            refinement of the flagged (verify.cu's, gated by the flags)
 *   rounds:  k_chain_round (copies of the transforms still in the rounds),
 *            the copies refined, k_chain_accept (kept where better, else
 *            out of the rounds): GM rounds times, the later ones doing
 *            nothing once every transform has left
 *   download h, scores
 *
 * Compiled with --fmad=false: the rescale's products and quotients are the
 * host's (gm_h_rescale), so the refinements start from the same numbers and
 * the chain's results equal gm_chain_host's over gm_refine_verify_cuda bit
 * for bit (test_verify_cuda's test_chain). */
#include <string.h>

#include "cuda/cuda_check.cuh"
#include "cuda/verify_cuda.h"
#include "stages/chain_core.h"

/* Every transform carried from the working coordinates of (fq, from) to
 * those of (fq, to). */
static __global__ void k_chain_rescale(double *params, uint32_t n, int fq, int from, int to)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        gm_h_rescale(params + 9 * (size_t)i, fq, from, to);
}

/* The rounds begin: in[i] (NULL: all) says which transforms take part
 * (rtake); each one's copy beside the transforms (params[9 (n + i)]), which
 * the rounds refine. */
static __global__ void k_chain_round(double *params, uint32_t n, const uint8_t *in,
                                     uint8_t *rtake)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    rtake[i] = in ? in[i] != 0 : 1;
    if (rtake[i])
        for (int k = 0; k < 9; k++)
            params[9 * (size_t)(n + i) + k] = params[9 * (size_t)i + k];
}

/* A round's end: each copy refined that explains more than its transform
 * (gm_chain_better) replaces it and stays in the rounds, its copy already
 * the transform; the others leave the rounds. */
static __global__ void k_chain_accept(double *params, gm_verify_score *scores, uint32_t n,
                                      uint8_t *rtake)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !rtake[i])
        return;
    if (!gm_chain_better(&scores[n + i], &scores[i])) {
        rtake[i] = 0;
        return;
    }
    for (int k = 0; k < 9; k++)
        params[9 * (size_t)i + k] = params[9 * (size_t)(n + i) + k];
    scores[i] = scores[n + i];
}

extern "C" gm_status gm_chain_queue_cuda(gm_verify_dev *v, const gm_chain_dev_step *steps,
                                         int ns, const double *h, const gm_verify_score *v_sc,
                                         uint32_t n, cudaStream_t stream)
{
    if (!v || ns < 0 || ns > GM_CHAIN_STEPS || n > GM_CHAIN_MAX || 2 * n > v->max_cands ||
        (ns && !steps) || (n && (!h || !v_sc)))
        return GM_ERR_INVALID;
    for (int k = 0; k < ns; k++)
        if (!steps[k].map || steps[k].rounds < 0)
            return GM_ERR_INVALID;
    /* the staging holds what gm_chain_collect_cuda gives back: with no
     * step, the transforms as they came */
    if (n) {
        memcpy(v->h_params, h, 9 * (size_t)n * sizeof *h);
        memcpy(v->h_scores, v_sc, n * sizeof *v_sc);
    }
    if (n == 0 || ns == 0)
        return GM_OK;
    const size_t row = v->max_cands;
    uint8_t *rtake = v->d_take + GM_CHAIN_STEPS * row;
    for (int k = 0; k < ns; k++)
        if (steps[k].take)
            memcpy(v->h_take + k * row, steps[k].take, n);
    GM_CUDA_CHECK(cudaMemcpyAsync(v->d_params, v->h_params, 9 * (size_t)n * sizeof *h,
                                  cudaMemcpyHostToDevice, stream));
    GM_CUDA_CHECK(cudaMemcpyAsync(v->d_scores, v->h_scores, n * sizeof *v_sc,
                                  cudaMemcpyHostToDevice, stream));
    GM_CUDA_CHECK(cudaMemcpyAsync(v->d_take, v->h_take, ns * row, cudaMemcpyHostToDevice,
                                  stream));
    const unsigned tb = 32, nbk = (n + tb - 1) / tb;
    gm_status st = GM_OK;
    for (int k = 0; k < ns && st == GM_OK; k++) {
        const gm_chain_dev_step *s = &steps[k];
        const uint8_t *take = s->take ? v->d_take + k * row : NULL;
        if (s->from != s->to) {
            k_chain_rescale<<<nbk, tb, 0, stream>>>(v->d_params, n, s->fq, s->from, s->to);
            GM_CUDA_CHECK_LAUNCH();
        }
        if (s->rounds == 0) {
            st = gm_refine_queue_at(s->map, v, s->model, s->iters, 0, n, NULL, take, stream);
            continue;
        }
        k_chain_round<<<nbk, tb, 0, stream>>>(v->d_params, n, take, rtake);
        GM_CUDA_CHECK_LAUNCH();
        for (int r = 0; r < s->rounds && st == GM_OK; r++) {
            st = gm_refine_queue_at(s->map, v, s->model, s->iters, n, n, NULL, rtake, stream);
            if (st != GM_OK)
                break;
            k_chain_accept<<<nbk, tb, 0, stream>>>(v->d_params, v->d_scores, n, rtake);
            GM_CUDA_CHECK_LAUNCH();
        }
    }
    if (st != GM_OK)
        return st;
    GM_CUDA_CHECK(cudaMemcpyAsync(v->h_params, v->d_params, 9 * (size_t)n * sizeof *h,
                                  cudaMemcpyDeviceToHost, stream));
    GM_CUDA_CHECK(cudaMemcpyAsync(v->h_scores, v->d_scores, n * sizeof *v_sc,
                                  cudaMemcpyDeviceToHost, stream));
    return GM_OK;
}

extern "C" gm_status gm_chain_collect_cuda(gm_verify_dev *v, double *h, gm_verify_score *v_sc,
                                           uint32_t n, cudaStream_t stream)
{
    if (!v || n > GM_CHAIN_MAX || 2 * n > v->max_cands || (n && (!h || !v_sc)))
        return GM_ERR_INVALID;
    GM_CUDA_CHECK(gm_cuda_stream_wait(stream));
    if (n == 0)
        return GM_OK;
    memcpy(h, v->h_params, 9 * (size_t)n * sizeof *h);
    memcpy(v_sc, v->h_scores, n * sizeof *v_sc);
    return GM_OK;
}

extern "C" gm_status gm_chain_cuda(gm_verify_dev *v, const gm_chain_dev_step *steps, int ns,
                                   double *h, gm_verify_score *v_sc, uint32_t n,
                                   cudaStream_t stream)
{
    gm_status st = gm_chain_queue_cuda(v, steps, ns, h, v_sc, n, stream);
    return st == GM_OK ? gm_chain_collect_cuda(v, h, v_sc, n, stream) : st;
}
