/* chain_core.h: a chain of refinements, the matcher's rivals (matcher.c's
 * rival_whole), and the 3x3 formulas it carries transforms between levels
 * with, shared by the host and the GPU (src/cuda/chain.cu, which runs a
 * whole chain without coming back to the host in between).
 *
 * A chain refines n transforms side by side, step after step, each
 * transform as though alone:
 *
 *   step: (carried to another level's map) -> refined on that map
 *   rounds: refined again while that explains more (gm_chain_better), a
 *           transform leaving the rounds at its first that does not.
 *
 * The steps and their maps belong to the pipeline (backend.h's
 * gm_chain_step, pipeline/chain.c's host twin); what both sides must
 * compute alike is here: static inline GM_HD functions of + - * / alone
 * (the CUDA side with --fmad=false), so the numbers are the same. */
#ifndef GM_CHAIN_CORE_H
#define GM_CHAIN_CORE_H

#include "common/common.h"
#include "stages/verify.h"

/* Transforms a chain refines at most, and its steps at most. */
#define GM_CHAIN_MAX 32
#define GM_CHAIN_STEPS 12

/* 3x3 product c = a b. */
static inline GM_HD void gm_mat3_mul(const double a[9], const double b[9], double c[9])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            c[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}

/* S_f (working pixel X -> source pixel f X + (f-1)/2) or its inverse. */
static inline GM_HD void gm_scale_of(int f, int inverse, double s[9])
{
    double k = inverse ? 1.0 / f : f, o = inverse ? -(f - 1) / 2.0 / f : (f - 1) / 2.0;
    s[0] = k, s[1] = 0, s[2] = o;
    s[3] = 0, s[4] = k, s[5] = o;
    s[6] = 0, s[7] = 0, s[8] = 1;
}

/* out = A h B, normalized to out[8] = 1 (out[8] divided last, by itself). */
static inline GM_HD void gm_h_between(const double a[9], const double h[9], const double b[9],
                                      double out[9])
{
    double t[9];
    gm_mat3_mul(h, b, t);
    gm_mat3_mul(a, t, out);
    for (int i = 0; i < 9; i++)
        out[i] /= out[8];
}

/* A working-frame 3x3 transform (query factor fq, reference factor fr) to
 * source pixels: S_r h S_q^-1; and back: S_r^-1 h S_q. */
static inline GM_HD void gm_h_work_to_source(const double hw[9], int fq, int fr, double h[9])
{
    double sr[9], sqi[9];
    gm_scale_of(fr, 0, sr), gm_scale_of(fq, 1, sqi);
    gm_h_between(sr, hw, sqi, h);
}

static inline GM_HD void gm_h_source_to_work(const double h[9], int fq, int fr, double hw[9])
{
    double sri[9], sq[9];
    gm_scale_of(fr, 1, sri), gm_scale_of(fq, 0, sq);
    gm_h_between(sri, h, sq, hw);
}

/* h in working coordinates of (fq, from) carried to those of (fq, to), in
 * place: through source pixels, as the matcher moves a transform from one
 * reference level's map to another's. */
static inline GM_HD void gm_h_rescale(double h[9], int fq, int from, int to)
{
    double hs[9];
    gm_h_work_to_source(h, fq, from, hs);
    gm_h_source_to_work(hs, fq, to, h);
}

/* A round's refinement is kept where it explains more of the query than
 * the transform it started from (the share of the whole query's edges). */
static inline GM_HD int gm_chain_better(const gm_verify_score *now, const gm_verify_score *was)
{
    return now->whole > was->whole;
}

#endif
