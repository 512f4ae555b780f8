/* pair_core.h: what a pairing (a reference level against a query level,
 * matcher.c's run_pairing) does with its voted candidates, shared by the
 * host and the GPU (src/cuda/verify.cu, which does it without coming back
 * to the host in between):
 *
 *   votes -> each candidate's similarity (gm_pair_similarity)
 *         -> verified (verify_core.h)
 *         -> the best few not refined before picked (gm_pair_pick)
 *         -> refined.
 *
 * Static inline GM_HD functions of + - * / and sqrt alone (the CUDA side
 * with --fmad=false), so both sides compute the same numbers.  One thing
 * must still come from the host where it is in doubt: a similarity's
 * rotation, (float)atan2(m[3], m[0]), which the loose test reads (glibc's
 * atan2 and CUDA's differ by an ulp or two of a double); the GPU flags a
 * candidate whose double lies within GM_PAIR_ROT_ULPS of a float rounding
 * boundary, and the matcher then redoes the pairing's decisions the host's
 * way (gm_pair_rot_doubtful). */
#ifndef GM_PAIR_CORE_H
#define GM_PAIR_CORE_H

#include <math.h>
#include <stdint.h>

#include "common/common.h"
#include "stages/reduce.h"
#include "stages/verify.h"

/* Candidates refined per pairing (the best by verification). */
#define GM_PAIR_PICKS 3
/* Refined transforms a search remembers at most (matcher.c's GM_SEARCH_MAX
 * is checked against it). */
#define GM_PAIR_DONE_MAX 64
/* A pick repeats a transform refined before when its query corners lie
 * closer than this to that one's, on average (working pixels of level 0). */
#define GM_PAIR_DUP_PX 2.0

/* The scales of a pairing: the query level's factor fq, the reference
 * level's fr, the query's level 0 f0, the verifying map's fv, the
 * reference's level 0 fl0 (source pixel = f X + (f - 1) / 2). */
typedef struct {
    int fq, fr, f0, fv, fl0;
} gm_pair_scales;

/* What a pairing's decisions need besides the candidates: the scales, the
 * query's level 0 (w x h working pixels), gm_pair_pick's floor, the picks'
 * refinement iterations, and the similarities refined before (done, 6
 * numbers each, level-0 working coordinates; at most max_done <=
 * GM_PAIR_DONE_MAX kept). */
typedef struct {
    gm_pair_scales s;
    int w, h;
    double floor;
    int iters;
    const double *done; /* [6 ndone] */
    int ndone, max_done;
} gm_pair_in;

/* ...and what they are: the candidates, their loose scores (those looked
 * at marked taken), their level-0 similarities m0, the picks and their
 * refined transforms (3x3) with strict scores.  doubtful: only cands and
 * nc were filled (a backend's rotations in doubt, or no backend of its
 * own): the caller decides. */
typedef struct {
    gm_candidate cands[GM_MAX_TOP_K];
    uint32_t nc;
    gm_verify_score sc[GM_MAX_TOP_K];
    double m0[GM_MAX_TOP_K][6];
    int pick[GM_PAIR_PICKS], npick;
    double hr[GM_PAIR_PICKS][9];
    gm_verify_score vr[GM_PAIR_PICKS];
    int doubtful;
} gm_pair_out;

/* A similarity from working pixels of (fq, fr) to source pixels. */
static inline GM_HD void gm_work_to_source(const double mw[6], int fq, int fr, double m[6])
{
    double sq = 1.0 / fq, oq = -(fq - 1) / 2.0 / fq, orr = (fr - 1) / 2.0;
    m[0] = fr * mw[0] * sq;
    m[1] = fr * mw[1] * sq;
    m[2] = fr * (mw[0] * oq + mw[1] * oq + mw[2]) + orr;
    m[3] = fr * mw[3] * sq;
    m[4] = fr * mw[4] * sq;
    m[5] = fr * (mw[3] * oq + mw[4] * oq + mw[5]) + orr;
}

/* ...and back, to working pixels of (fq, fr): mw = S_r^-1 m S_q with
 * S_f(X) = f X + (f-1)/2 */
static inline GM_HD void gm_source_to_work(const double m[6], int fq, int fr, double mw[6])
{
    double oq = (fq - 1) / 2.0, orr = (fr - 1) / 2.0;
    mw[0] = m[0] * fq / fr;
    mw[1] = m[1] * fq / fr;
    mw[2] = (m[0] * oq + m[1] * oq + m[2] - orr) / fr;
    mw[3] = m[3] * fq / fr;
    mw[4] = m[4] * fq / fr;
    mw[5] = (m[3] * oq + m[4] * oq + m[5] - orr) / fr;
}

/* The similarity [a -b tx; b a ty] carrying q0 -> r0 and q1 -> r1 (as
 * complex numbers: z = (r1 - r0) / (q1 - q0), t = r0 - z q0). */
static inline GM_HD void gm_similarity_of_pairs(double qx0, double qy0, double qx1, double qy1,
                                                double rx0, double ry0, double rx1, double ry1,
                                                double m[6])
{
    double qdx = qx1 - qx0, qdy = qy1 - qy0, rdx = rx1 - rx0, rdy = ry1 - ry0;
    double d = qdx * qdx + qdy * qdy;
    double a = d > 0 ? (rdx * qdx + rdy * qdy) / d : 1.0;
    double b = d > 0 ? (rdy * qdx - rdx * qdy) / d : 0.0;
    m[0] = a;
    m[1] = -b;
    m[2] = rx0 - (a * qx0 - b * qy0);
    m[3] = b;
    m[4] = a;
    m[5] = ry0 - (b * qx0 + a * qy0);
}

/* A candidate's similarity from its query basis (qa, qb, query level
 * pixels) and reference basis (ra, rb, reference level pixels): ms in the
 * working coordinates of the query's level 0 and the verifying map, m0 in
 * those of level 0 and the reference's level 0. */
static inline GM_HD void gm_pair_similarity(float qax, float qay, float qbx, float qby, float rax,
                                            float ray, float rbx, float rby, gm_pair_scales s,
                                            double ms[6], double m0[6])
{
    double mw[6], msrc[6];
    gm_similarity_of_pairs(qax, qay, qbx, qby, rax, ray, rbx, rby, mw);
    gm_work_to_source(mw, s.fq, s.fr, msrc);
    gm_source_to_work(msrc, s.f0, s.fv, ms);
    gm_source_to_work(msrc, s.f0, s.fl0, m0);
}

/* Mean distance between the images of a w x h query's corners under two
 * similarities (sqrt of the squares: the same on both sides, where hypot
 * is not). */
static inline GM_HD double gm_pair_corner_dist(const double a[6], const double b[6], int w, int h)
{
    const double cx[4] = {0, w - 1.0, w - 1.0, 0}, cy[4] = {0, 0, h - 1.0, h - 1.0};
    double d = 0;
    for (int i = 0; i < 4; i++) {
        double dx = (a[0] * cx[i] + a[1] * cy[i] + a[2]) - (b[0] * cx[i] + b[1] * cy[i] + b[2]);
        double dy = (a[3] * cx[i] + a[4] * cy[i] + a[5]) - (b[3] * cx[i] + b[4] * cy[i] + b[5]);
        d += sqrt(dx * dx + dy * dy);
    }
    return d / 4;
}

/* A pick's m0 remembered in done[*ndone] while fewer than max_done are
 * there (gm_pair_pick's rule; the matcher's for a backend's picks). */
static inline GM_HD void gm_pair_remember(double (*done)[6], int *ndone, int max_done,
                                          const double m0[6])
{
    if (*ndone < max_done) {
        for (int i = 0; i < 6; i++)
            done[*ndone][i] = m0[i];
        (*ndone)++;
    }
}

/* The best few of nc verified candidates (sc; level-0 working similarities
 * m0) to refine: at most GM_PAIR_PICKS, taken by the share of the whole
 * query they explain (the first of equals), each with a loose confidence of
 * at least floor (the first below it ends the picking), none within
 * GM_PAIR_DUP_PX of a transform in done[0, *ndone) (each pick is appended
 * while fewer than max_done are there).  Every candidate looked at is
 * marked taken in sc (total UINT32_MAX, as are the unusable); the picks'
 * indices into pick, their count returned. */
static inline GM_HD int gm_pair_pick(gm_verify_score *sc, double (*m0)[6], uint32_t nc,
                                     int w, int h, double floor, double (*done)[6], int *ndone,
                                     int max_done, int pick[GM_PAIR_PICKS])
{
    int npick = 0;
    while (npick < GM_PAIR_PICKS) {
        int bi = -1;
        for (uint32_t c = 0; c < nc; c++)
            if (sc[c].total != UINT32_MAX && (bi < 0 || sc[c].whole > sc[bi].whole))
                bi = (int)c;
        if (bi < 0)
            break;
        sc[bi].total = UINT32_MAX;
        if (sc[bi].confidence < floor)
            break;
        int dup = 0;
        for (int d = 0; d < *ndone && !dup; d++)
            dup = gm_pair_corner_dist(m0[bi], done[d], w, h) < GM_PAIR_DUP_PX;
        if (dup)
            continue;
        gm_pair_remember(done, ndone, max_done, m0[bi]);
        pick[npick++] = bi;
    }
    return npick;
}

/* Within this many ulps of a double the GPU's atan2 and glibc's agree. */
#define GM_PAIR_ROT_ULPS 4.0

/* Is (float)d, for d an atan2 that another library may compute an ulp or
 * two away, possibly another float there?  True where d lies within
 * GM_PAIR_ROT_ULPS of a midpoint between two floats (or is not finite). */
static inline GM_HD int gm_pair_rot_doubtful(double d)
{
    if (!(fabs(d) < 4.0))
        return 1; /* atan2 is within pi; NaN */
    float f = (float)d;
    double tol = fmax(fabs(d), 1e-300) * (GM_PAIR_ROT_ULPS * 0x1p-52);
    double lo = 0.5 * ((double)f + (double)nextafterf(f, -INFINITY));
    double hi = 0.5 * ((double)f + (double)nextafterf(f, INFINITY));
    return fabs(d - lo) <= tol || fabs(d - hi) <= tol;
}

#endif
