/* matcher.c: the query side of the pipeline (gm_match).
 *
 *   the query's levels up to the bases (gm_side_build); m query bases in a
 *   two-way index; votes into the m x n matrix; top-k reduction; each
 *   candidate's transform verified on the reference's level-0 edges; the
 *   best few refined; the distinctiveness test; the final model.
 *
 * Scale: one (reference level, query level) pairing covers query scales of
 * about 0.7 to 1.4 (corners and basis lengths stay comparable).  Pairing
 * (0, 0) runs first; when it finds no confident match, (0, 1) covers the
 * query at twice the reference's scale (scale 0.35 to 0.7) and (1, 0) half
 * of it (1.4 to 2.8); the fine levels follow; last, the query at a quarter
 * against level 0 and the finest level (an enlarged view: scale 0.17 to
 * 0.35).  Whatever pairing proposes a transform, it is verified
 * and refined at full working resolution, so confidences are comparable.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/matcher.h"
#include "pipeline/placement.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/reduce.h"
#include "stages/affine.h"
#include "stages/transform.h"
#include "stages/verify.h"
#include "stages/pair_core.h"

/* IRLS iterations of a candidate's refinement, and of the final model's. */
#define GM_REFINE_ITERS 6
#define GM_MODEL_ITERS 10
/* Candidates refined per pairing (the best by verification). */
#define GM_REFINE_CANDS GM_PAIR_PICKS
/* ...of those whose loose confidence reaches this share of the reporting
 * threshold (0.1 at the default 0.3): over the public bench and the photo
 * tier (1662 picks, 2026-11-25), no pick below 0.1 was refined to a strict
 * confidence above 0.074, a quarter of the default threshold, and one that
 * low cannot lower a reported match's distinctiveness (below half of it).
 * At the default threshold skipping them changes no status and no match,
 * only the numbers of some "none" lines, and takes 4 to 10% off a query
 * (docs/photo.md); a lower threshold lowers the floor with it (0: every
 * pick refined, as before). */
#define GM_REFINE_MIN_LOOSE (1.0 / 3.0)
/* Refined transforms remembered over all pairings (3 on the working levels,
 * up to GM_FINE_LEVELS + 1 on the fine ones, 2 with the query at a quarter;
 * the triangles' on level 0 and the fine ones, with the query at two sizes). */
#define GM_SEARCH_MAX ((6 + GM_FINE_LEVELS + 2 * (1 + GM_FINE_LEVELS)) * GM_REFINE_CANDS)
_Static_assert(GM_SEARCH_MAX <= GM_PAIR_DONE_MAX, "pair_core.h's done list holds a search's");
/* Verified candidates kept past the refinement's picks, as rivals. */
#define GM_UNREF_KEEP 8
/* --model auto: a model with more freedom is reported only when its strict
 * confidence beats the simpler one's by this much (a share of the query's
 * edge points that only it explains), a step at a time. */
#define GM_AUTO_GAIN 0.03
/* A fine level's answer refined on the finest level is kept at this share
 * of its strict confidence or more (the finer map, 1-pixel test, counts a
 * little fewer hits on blurred photographs).  A working level's answer,
 * whose map has a reference pixel of 2 or more source pixels, is kept there
 * only when it verifies at least as well (GM_FINEST_KEEP_WORKING): at 0.8
 * the photo tier's crops moved to worse optima with it (TwoWings crop02
 * 0.69 -> 2.03 px at 0.80 -> 0.55), and 2 of 52 matches came out beyond
 * their uncertainty (score.py); at 1.0, none. */
#define GM_FINEST_KEEP 0.8
#define GM_FINEST_KEEP_WORKING 1.0
/* The corners' standard deviation (gm_corner_sigma_cpu, working pixels)
 * above which the confidence falls: correct answers on the public and
 * photo tiers measured 0.1 to 0.5 (clouds, sand), a crop of a flat-shaded
 * illustration matched along one arc at the wrong scale 46 (docs/photo.md). */
#define GM_SIGMA_MAX 2.0
/* A pairing whose refined best reaches this confidence ends the search. */
#define GM_EARLY_STOP 0.5

gm_points gm_stride_sample(const gm_points *all, uint32_t cap, gm_point *buf)
{
    gm_points out = {buf, 0};
    uint32_t step = all->n > cap ? (all->n + cap - 1) / cap : 1;
    for (uint32_t k = 0; k < all->n; k += step)
        buf[out.n++] = all->p[k];
    return out;
}

/* Working coordinates of factor f: X = (x - (f-1)/2) / f, x the source pixel
 * (gm_work_to_source and gm_source_to_work, pair_core.h, carry a similarity
 * between working frames and source pixels). */

/* The fine level of the smallest factor, NULL when there is none. */
static const ref_level *finest_level(const gm_index *r)
{
    const ref_level *f = NULL;
    for (int k = 0; k < GM_FINE_LEVELS; k++)
        if (r->lv[GM_LEVELS + k].ok)
            f = &r->lv[GM_LEVELS + k];
    return f;
}

/* The map a level's candidates are verified and refined on, and its
 * factor: a fine level's own, else level 0's (the working levels share it). */
static const gm_edge_map *level_map(const gm_index *r, const ref_level *rl, int *f)
{
    *f = rl->fine ? rl->f : r->lv[0].f;
    return rl->fine ? &rl->map : &r->map;
}

/* The same map as the backend's stages read it: the host copy and the
 * device's (the fine level's, or NULL for the reference's). */
static gm_map_at map_at(const gm_index *r, const ref_level *rl)
{
    int f;
    return (gm_map_at){level_map(r, rl, &f), rl->fine ? rl->dev : r->borrowed ? r->lv[0].dev : NULL};
}

/* The best transform found so far, in the working coordinates of the
 * reference level it was verified on (lvl: 0, or a fine level). */
typedef struct {
    double m[6];
    int lvl;
    gm_verify_score score;
    uint32_t votes;
    int found;
    /* refined transforms (level-0 working coordinates), to skip candidates
     * that repeat one */
    double done[GM_SEARCH_MAX][6];
    int n_done;
    /* every refined transform and its strict confidence, for the
     * distinctiveness test */
    double refined[GM_SEARCH_MAX][6];
    double rconf[GM_SEARCH_MAX];
    int n_refined;
    /* the best verified candidates that were not refined (level-0 working
     * coordinates, and their share of the whole query before refinement):
     * more rivals for the distinctiveness test (rivals_begin) */
    double unref[GM_UNREF_KEEP][6];
    double uconf[GM_UNREF_KEEP];
    int n_unref;
    uint64_t key; /* the query's draws (bases, triangles): gm_match_forward's */
    double m0[6]; /* the best in level-0 working coordinates */
    int has_h;    /* the best came from triangles: h is its final model, score strict */
    double h[9];
} search_state;

/* Distinctiveness: a second transform, more than GM_DISTINCT_PX away at the
 * query's corners, that verifies nearly as well as the best means the query
 * fits several places (a chessboard, a brick wall, a symmetric shape) and the
 * answer is a guess.  With rho = second / best, the confidence is scaled by
 * min(1, (1 - rho) / (1 - GM_DISTINCT_RATIO)): untouched up to
 * rho = GM_DISTINCT_RATIO, zero when the two tie (Lowe's ratio test, applied
 * to whole transforms). */
#define GM_DISTINCT_PX 4.0
#define GM_DISTINCT_RATIO 0.5

/* The ratio test's factor for a second that explains `second` of the whole
 * query where the best explains `whole`. */
static double distinct_of(double second, double whole)
{
    double rho = whole > 0 ? second / whole : 1.0;
    return fmin(1.0, fmax(0.0, (1.0 - rho) / (1.0 - GM_DISTINCT_RATIO)));
}

/* Mean distance, in pixels, between the images of a w x h query's corners
 * under two transforms. */
static double corner_dist(const double a[6], const double b[6], int w, int h)
{
    const double cx[4] = {0, w - 1.0, w - 1.0, 0}, cy[4] = {0, 0, h - 1.0, h - 1.0};
    double d = 0;
    for (int i = 0; i < 4; i++) {
        double ax, ay, bx, by;
        gm_transform_apply(a, cx[i], cy[i], &ax, &ay);
        gm_transform_apply(b, cx[i], cy[i], &bx, &by);
        d += hypot(ax - bx, ay - by);
    }
    return d / 4;
}

/* The distinctiveness test's second under the answer's model.  A view with
 * perspective fits a similarity only in part, so a second copy of the
 * query's shapes in the reference (repeated drips in an illustration)
 * explained 0.49 as a similarity where the answer's homography explained
 * 1.0: the similarities compared, the copy passed for distinct; under the
 * same model the two tie.  The rivals: GM_RIVALS of the refined
 * similarities more than GM_DISTINCT_PX from the best and from each other,
 * the most explaining first, from GM_RIVAL_FLOOR of what the best
 * explained (a tilted view's similarity explains half of its homography or
 * less), then GM_RIVALS more of the candidates verified but not refined
 * (ss->unref: a drip's twin among an illustration's repeated drips voted
 * for but was never refined); and the answers of the query's earlier
 * draws (lv->seen), which a later draw may not have met.  Each is refined as the answer was: up the
 * model ladder on level 0's map (the widest reach), again while that
 * explains more (GM_RIVAL_ROUNDS at most: a homography from a similarity
 * 50 source pixels off took three), then level by level to the answer's
 * map (bf).  Last, GM_PROBES probes: the answer with the query moved by
 * 1/4 and 3/4 of its diagonal either way along its edges' main direction
 * (the structure tensor of their normals), refined the same way: parallel
 * planks place a query anywhere along them, no candidate had voted for
 * those places, and answers came back 252 px (a wallpaper's planks) and 44
 * px (test_matcher's) along them at 0.80 and 0.56.  Where a rival is
 * plausible and still another placement, its share of the whole query may
 * be the second, judged by the same ratio.  Another placement: more than
 * GM_DISTINCT_PX from the answer at some corner and, for an affine or a
 * homography, more than GM_RIVAL_FAR of the query's diagonal on the
 * reference: with six or eight degrees of freedom a rival refined 40
 * working pixels off fits a part of a tilted view (0.48 where the answer,
 * right, explained 0.60: photo tier TwoWings). */
#define GM_RIVALS 2
#define GM_RIVAL_FLOOR 0.25
#define GM_RIVAL_ROUNDS 4
#define GM_RIVAL_FAR 0.5
#define GM_PROBES 4

/* A rival: h in the working coordinates of q0 and of level 0 (a
 * similarity when from_sim, else already of the answer's model); v its test
 * on the answer's map once refined, 0 when that map was not reached. */
typedef struct {
    double h[9];
    gm_verify_score v;
    int from_sim;
} rival;

/* Every rival (at most GM_RIVALS_MAX) and self-map rival of an answer. */
#define GM_RIVALS_MAX (2 * GM_RIVALS + GM_SEEN_MAX + GM_PROBES + 2 * GM_SELF_MAX)
_Static_assert(GM_RIVALS_MAX <= GM_CHAIN_MAX, "a chain refines every rival");
/* the ladder (three models), the rounds, the fine levels */
_Static_assert(3 + 1 + GM_FINE_LEVELS <= GM_CHAIN_STEPS, "a chain holds the rivals' steps");

/* The rivals of an answer being refined (rivals_begin, rivals_end). */
typedef struct {
    rival rv[GM_RIVALS_MAX];
    int n;
    double hw[9], far;
    int w, h;
    int off_map; /* the chain ended on a map other than the answer's: scores 0 */
    double ch[GM_RIVALS_MAX][9];
    gm_verify_score cv[GM_RIVALS_MAX];
    gm_chain_job job;
} rivals_job;

/* The rivals refined as the answer was (the ladder, the rounds, the levels
 * above), each as though alone, all of them a step at a time: a chain
 * (chain_core.h) that a GPU runs in one go, waiting once, where it waited
 * once a step (a public still's rivals: 3.5 waits) and before that once a
 * rival's refinement (22); begun here, its results in rivals_end. */
static gm_status rivals_refine(const gm_index *r, void *lane, const side *q0,
                               const gm_points *vq0, int bf, gm_model chosen, rivals_job *j)
{
    const ref_level *pl = &r->lv[0];
    gm_chain_step steps[GM_CHAIN_STEPS];
    uint8_t from_sim[GM_RIVALS_MAX];
    int ns = 0;
    for (int i = 0; i < j->n; i++) {
        from_sim[i] = (uint8_t)(j->rv[i].from_sim != 0);
        memcpy(j->ch[i], j->rv[i].h, sizeof j->ch[i]);
        memset(&j->cv[i], 0, sizeof j->cv[i]);
    }
    const gm_chain_step on0 = {map_at(r, pl), chosen, GM_MODEL_ITERS, 0, q0->f, pl->f, pl->f,
                               NULL};
    /* up the ladder: the similarities through each model, the others at
     * theirs */
    for (int m = GM_MODEL_SIMILARITY; m <= (int)chosen; m++) {
        steps[ns] = on0;
        steps[ns].model = (gm_model)m;
        steps[ns++].take = m == (int)chosen ? NULL : from_sim;
    }
    /* the rounds: a rival stops at its first round that explains no more */
    steps[ns] = on0;
    steps[ns++].rounds = GM_RIVAL_ROUNDS;
    /* level by level to the answer's map */
    for (int k = 0; k < GM_FINE_LEVELS && pl->f > bf; k++) {
        const ref_level *nl = &r->lv[GM_LEVELS + k];
        if (!nl->ok || nl->f < bf)
            break;
        steps[ns] = on0;
        steps[ns].map = map_at(r, nl);
        steps[ns].from = pl->f, steps[ns++].to = nl->f;
        pl = nl;
    }
    j->off_map = pl->f != bf;
    return gm_chain_begin(&j->job, r->be, lane, vq0, steps, ns, &j->ch[0][0], j->cv,
                          (uint32_t)j->n);
}

/* The rivals S h0 of the reference's self-maps S (selfmap.h; h0 the
 * answer in level 0's working coordinates): each scored as it stands on
 * level 0's map beside the answer; those that explain at least
 * GM_RIVAL_FLOOR of what the answer explains there join the rivals rv (from
 * *n on), to be refined and judged as the others. */
static gm_status self_rivals(const gm_index *r, void *lane, const gm_points *vq0,
                             gm_model chosen, const double h0[9], rival *rv, int *n)
{
    if (r->n_self == 0)
        return GM_OK;
    double hs[1 + 2 * GM_SELF_MAX][9];
    gm_verify_score vs[1 + 2 * GM_SELF_MAX];
    memcpy(hs[0], h0, sizeof hs[0]);
    for (int k = 0; k < r->n_self; k++) {
        gm_mat3_mul(r->self[k], h0, hs[1 + k]);
        for (int i = 0; i < 9; i++)
            hs[1 + k][i] /= hs[1 + k][8];
    }
    gm_status st = r->be->refine(lane, map_at(r, &r->lv[0]), vq0, chosen, &hs[0][0], 0,
                                 (uint32_t)(1 + r->n_self), vs);
    for (int k = 0; k < r->n_self && st == GM_OK; k++) {
        if (!(vs[1 + k].whole >= GM_RIVAL_FLOOR * vs[0].whole) || !(vs[1 + k].whole > 0))
            continue;
        memcpy(rv[*n].h, hs[1 + k], sizeof rv[*n].h);
        rv[(*n)++].from_sim = 0;
    }
    return st;
}

/* The rivals of the answer hw (the rivals of GM_RIVALS' comment) gathered and their
 * refinement begun: a GPU works on them while the host goes on until
 * rivals_end, which must follow when this returns GM_OK. */
static gm_status rivals_begin(const gm_index *r, void *lane, const search_state *ss,
                              const gm_query_levels *lv, const side *q0, const gm_points *vq0,
                              int bf, gm_model chosen, const double hw[9], rivals_job *jb)
{
    double best_sim = 0;
    for (int i = 0; i < ss->n_refined; i++)
        if (corner_dist(ss->refined[i], ss->m0, q0->w, q0->h) <= GM_DISTINCT_PX)
            best_sim = fmax(best_sim, ss->rconf[i]);
    /* another placement: every corner moved by more than half the query's
     * diagonal on the reference (the answer's map's pixels) */
    double diag = 0;
    {
        const double cx[4] = {0, q0->w - 1.0, q0->w - 1.0, 0}, cy[4] = {0, 0, q0->h - 1.0, q0->h - 1.0};
        double px[4], py[4];
        for (int i = 0; i < 4; i++)
            gm_h_apply(hw, cx[i], cy[i], &px[i], &py[i]);
        diag = fmax(hypot(px[2] - px[0], py[2] - py[0]), hypot(px[3] - px[1], py[3] - py[1]));
    }
    const double far = chosen == GM_MODEL_SIMILARITY
                           ? GM_DISTINCT_PX * r->lv[0].f / bf
                           : fmax(GM_RIVAL_FAR * diag, GM_DISTINCT_PX * r->lv[0].f / bf);
    /* the direction along the query's edges (the structure tensor of their
     * normals, a sample of GM_VERIFY_POINTS, q0's working pixels) */
    double sxx = 0, sxy = 0, syy = 0;
    uint32_t stride = q0->all.n / GM_VERIFY_POINTS + 1;
    for (uint32_t i = 0; i < q0->all.n; i += stride) {
        double c = cos(q0->all.p[i].angle), sn = sin(q0->all.p[i].angle);
        sxx += c * c, sxy += c * sn, syy += sn * sn;
    }
    double th = 0.5 * atan2(2 * sxy, sxx - syy) + GM_PI / 2; /* along the edges */
    double ux = cos(th), uy = sin(th), qd = hypot(q0->w, q0->h);
    double h0[9], hs0[9];
    gm_h_work_to_source(hw, q0->f, bf, hs0);
    gm_h_source_to_work(hs0, q0->f, r->lv[0].f, h0);
    const double(*taken[2 * GM_RIVALS])[6];
    int nt = 0;
    rival *rv = jb->rv;
    int n = 0;
    memcpy(jb->hw, hw, sizeof jb->hw);
    jb->far = far, jb->w = q0->w, jb->h = q0->h;
    const int n_sim = 2 * GM_RIVALS; /* GM_RIVALS refined, then GM_RIVALS not refined */
    for (int j = 0; j < n_sim + lv->n_seen + GM_PROBES; j++) {
        double *h = rv[n].h;
        int from_sim = j < n_sim;
        if (j >= n_sim + lv->n_seen) {
            static const double step[GM_PROBES] = {-0.75, -0.25, 0.25, 0.75};
            double d = step[j - n_sim - lv->n_seen] * qd, tx = d * ux, ty = d * uy;
            memcpy(h, h0, sizeof h0);
            for (int k = 0; k < 3; k++)
                h[3 * k + 2] += h0[3 * k] * tx + h0[3 * k + 1] * ty;
        } else if (from_sim) {
            /* from the refined (rconf) or the verified only (uconf) */
            const double(*list)[6] = j < GM_RIVALS ? ss->refined : ss->unref;
            const double *conf = j < GM_RIVALS ? ss->rconf : ss->uconf;
            int nl = j < GM_RIVALS ? ss->n_refined : ss->n_unref, bi = -1;
            for (int i = 0; i < nl; i++) {
                if (conf[i] < GM_RIVAL_FLOOR * best_sim ||
                    corner_dist(list[i], ss->m0, q0->w, q0->h) <= GM_DISTINCT_PX)
                    continue;
                int near = 0;
                for (int t = 0; t < nt && !near; t++)
                    near = corner_dist(list[i], *taken[t], q0->w, q0->h) <= GM_DISTINCT_PX;
                if (!near && (bi < 0 || conf[i] > conf[bi]))
                    bi = i;
            }
            if (bi < 0)
                continue;
            taken[nt++] = &list[bi];
            gm_h_from_m(list[bi], h);
        } else {
            gm_h_source_to_work(lv->seen[j - n_sim], q0->f, r->lv[0].f, h);
        }
        rv[n++].from_sim = from_sim;
    }
    gm_status st = self_rivals(r, lane, vq0, chosen, h0, rv, &n);
    jb->n = n;
    return st == GM_OK ? rivals_refine(r, lane, q0, vq0, bf, chosen, jb) : st;
}

/* The refined rivals, and the most any of them that is another placement
 * explains into *second (at least what it held). */
static gm_status rivals_end(rivals_job *jb, double *second)
{
    gm_status st = gm_chain_end(&jb->job);
    for (int i = 0; i < jb->n && st == GM_OK; i++) {
        rival *rv = &jb->rv[i];
        memcpy(rv->h, jb->ch[i], sizeof rv->h);
        rv->v = jb->cv[i];
        if (jb->off_map)
            memset(&rv->v, 0, sizeof rv->v);
        if (gm_h_plausible(rv->h, jb->w, jb->h) && gm_corner_move(jb->hw, rv->h, jb->w, jb->h) > jb->far)
            *second = fmax(*second, rv->v.whole);
    }
    return st;
}

/* The candidate that explains most of the query (gm_verify_score.whole) not yet taken (total UINT32_MAX marks
 * the taken and the unusable), marked taken; -1 when none is left. */
static int take_best(gm_verify_score *sc, uint32_t nc)
{
    int bi = -1;
    for (uint32_t c = 0; c < nc; c++)
        if (sc[c].total != UINT32_MAX && (bi < 0 || sc[c].whole > sc[bi].whole))
            bi = (int)c;
    if (bi >= 0)
        sc[bi].total = UINT32_MAX;
    return bi;
}

/* A refined answer (h: its model's 3x3 in the working coordinates of the
 * query's level 0 and the reference map of factor fv) into the search
 * state: the list for the distinctiveness test, and the best so far.
 * from_tris: h is the triangles' final model (else a similarity). */
static void ss_record(search_state *ss, const gm_index *r, const side *q0, const ref_level *rl,
                      int fv, const double h[9], gm_verify_score v, uint32_t votes, int from_tris)
{
    double hsrc[9], m0[6];
    gm_h_work_to_source(h, q0->f, fv, hsrc);
    gm_source_to_work(hsrc, q0->f, r->lv[0].f, m0); /* the affine part, for distances */
    if (ss->n_refined < GM_SEARCH_MAX) {
        memcpy(ss->refined[ss->n_refined], m0, sizeof m0);
        ss->rconf[ss->n_refined++] = v.whole;
    }
    /* ranked by the share of the whole query explained: a candidate that
     * carries part of the query off the reference is judged on the rest
     * (its confidence), but must not outrank one that explains more */
    if (!ss->found || v.whole > ss->score.whole) {
        ss->found = 1;
        ss->score = v;
        ss->votes = votes;
        ss->lvl = rl->fine ? (int)(rl - r->lv) : 0;
        ss->has_h = from_tris;
        memcpy(ss->h, h, sizeof ss->h);
        memcpy(ss->m, h, sizeof ss->m);
        memcpy(ss->m0, m0, sizeof m0);
    }
}

/* The ratio that carries a reference level's basis lengths (its pixels) to
 * the query level's: the query's band is the level's divided by it.
 * The forward search's working pairings take rl->f / qs->f, the pairing
 * the search was measured with (docs/scene.md, "The bands"; it is not the
 * ratio of the two levels' pixels at scale 1, qs->f / rl->f, and the photo
 * tier's crops of large references are found through it).  The reverse
 * search (a reference prepared from the query, r->borrowed) and the query
 * at a quarter take 1: the pairing looks for the query where its level's
 * pixels are the reference level's, the scale that the pyramid's pairing
 * stands for (the scene tier's posters: object 15 -> 22 of 32). */
static double band_ratio(const gm_index *r, const ref_level *rl, const side *qs, const side *q0)
{
    if (r->borrowed || qs->f >= 4 * q0->f)
        return 1.0;
    return (double)rl->f / qs->f;
}

/* The candidates not taken, the ones that explain most kept in ss->unref
 * (at most GM_UNREF_KEEP, sorted, the most explaining first) as rivals
 * for the distinctiveness test (rivals_begin). */
static void keep_unrefined(search_state *ss, const gm_verify_score *sc, double (*m0)[6],
                           uint32_t nc)
{
    for (uint32_t c = 0; c < nc; c++) {
        if (sc[c].total == UINT32_MAX || !(sc[c].whole > 0))
            continue;
        if (ss->n_unref == GM_UNREF_KEEP && !(sc[c].whole > ss->uconf[GM_UNREF_KEEP - 1]))
            continue; /* full, and no better than the last */
        int at = ss->n_unref < GM_UNREF_KEEP ? ss->n_unref++ : GM_UNREF_KEEP - 1;
        while (at > 0 && ss->uconf[at - 1] < sc[c].whole) {
            ss->uconf[at] = ss->uconf[at - 1];
            memcpy(ss->unref[at], ss->unref[at - 1], sizeof ss->unref[at]);
            at--;
        }
        ss->uconf[at] = sc[c].whole;
        memcpy(ss->unref[at], m0[c], sizeof ss->unref[at]);
    }
}

/* A pairing's voted candidates (po->cands[po->nc]) decided on the host,
 * pair_core.h's steps: each candidate's similarity, verified at level 0
 * (one region over the candidates: each candidate's loop is serial), the
 * best few not refined before picked (ss->done grows) and refined side by
 * side.  Fills the rest of po. */
static gm_status decide_pairing(const gm_index *r, void *lane, const ref_level *rl,
                                const side *qs, const gm_compact *qidx, const gm_points *vq0,
                                const gm_pair_in *in, search_state *ss, gm_pair_out *po)
{
    double(*ms)[6] = malloc(po->nc * sizeof *ms + 1);
    if (!ms)
        return GM_ERR_NOMEM;
    for (uint32_t c = 0; c < po->nc; c++) {
        uint32_t rk = rl->bases.unique[po->cands[c].ref_basis];
        uint32_t qk = qidx->unique[po->cands[c].query_basis];
        gm_point qa = qs->corners.p[qk >> 16], qb = qs->corners.p[qk & 0xFFFF];
        gm_point ra = rl->corners.p[rk >> 16], rb = rl->corners.p[rk & 0xFFFF];
        gm_pair_similarity(qa.x, qa.y, qb.x, qb.y, ra.x, ra.y, rb.x, rb.y, in->s, ms[c],
                           po->m0[c]);
    }
    gm_status st = r->be->verify(lane, map_at(r, rl), vq0, &ms[0][0], po->nc, po->sc);
    po->npick = 0;
    if (st == GM_OK) {
        po->npick = gm_pair_pick(po->sc, po->m0, po->nc, in->w, in->h, in->floor, ss->done,
                                 &ss->n_done, in->max_done, po->pick);
        for (int i = 0; i < po->npick; i++)
            gm_h_from_m(ms[po->pick[i]], po->hr[i]);
        st = r->be->refine(lane, map_at(r, rl), vq0, GM_MODEL_SIMILARITY, &po->hr[0][0],
                           in->iters, (uint32_t)po->npick, po->vr);
    }
    po->doubtful = 0;
    free(ms);
    return st;
}

/* One (reference level, query level) pairing: bases, votes, top-k, each
 * candidate verified at level 0 (q0: the query's level-0 points), the best
 * few refined.  Updates st->best. */
static gm_status run_pairing(const gm_index *r, void *lane, const ref_level *rl, const side *qs,
                             const side *q0, const gm_points *vq0, search_state *ss,
                             gm_result *out)
{
    const gm_params *p = &r->p;
    double t0 = gm_now_ms(), t1;
    gm_bases all_b = {0};
    gm_compact qidx;
    memset(&qidx, 0, sizeof qidx);
    gm_pair_out *po = NULL;
    uint32_t *sel = NULL;
    gm_status st;
    /* query basis lengths, in query working pixels: the reference level's
     * band carried over (band_ratio), narrowed so that scales from about 0.8
     * to 1.25 keep every query basis inside it */
    double ratio = band_ratio(r, rl, qs, q0);
    float qdiag = sqrtf((float)qs->w * qs->w + (float)qs->h * qs->h);
    float lmin = (float)(rl->lmin / ratio) * 1.25f;
    float lmax = fminf((float)(rl->lmax / ratio) * 0.8f, 0.8f * qdiag);
    if ((st = gm_bases_select_cpu(&qs->corners, lmin, lmax, 1.0, ss->key, &all_b)) != GM_OK)
        goto done;
    /* m of them at random (a hash of the draw's key and the pair: thread-independent) */
    sel = malloc((all_b.n ? all_b.n : 1) * sizeof *sel);
    if (!sel) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    uint32_t nsel = 0;
    {
        double prob = all_b.n > (uint32_t)p->query_bases ? (double)p->query_bases / all_b.n : 1.0;
        uint64_t thr = gm_prob_threshold(prob);
        for (uint32_t i = 0; i < all_b.n; i++)
            if (gm_mix64(ss->key ^ GM_SALT_QUERY_PICK ^ ((uint64_t)all_b.key[i] << 20)) <= thr)
                sel[nsel++] = all_b.key[i];
    }
    if ((st = r->be->index(lane, sel, nsel, r->p.seed ^ GM_SALT_QUERY_INDEX, &qidx)) != GM_OK)
        goto done;
    uint32_t n_q = qidx.u, n_ref = rl->bases.u;
    t1 = gm_now_ms();
    out->time.bases += t1 - t0;
    if (n_q == 0 || n_ref == 0 || qs->all.n < 8)
        goto done; /* nothing to vote with */
    uint32_t k = (uint32_t)(p->top_k > 0 ? p->top_k : 1);
    if (k > GM_MAX_TOP_K)
        k = GM_MAX_TOP_K;
    /* votes, each row's best and the k best rows (the CPU never writes the
     * whole matrix: a row at a time, reduced at once), then the candidates
     * decided: on a backend that does both in one go (pair), else here */
    double tv = 0, tr = 0, td = 0;
    gm_level_at lat = {&rl->table, rl->share, n_ref, rl->dev};
    /* a fine level is verified and refined on its own map, the working
     * levels on level 0's (map_at) */
    int fv; /* the verifying map's factor */
    level_map(r, rl, &fv);
    const gm_pair_in pin = {{qs->f, rl->f, q0->f, fv, r->lv[0].f},
                            q0->w,
                            q0->h,
                            GM_REFINE_MIN_LOOSE * p->min_confidence,
                            GM_REFINE_ITERS,
                            &ss->done[0][0],
                            ss->n_done,
                            GM_SEARCH_MAX};
    if (!(po = malloc(sizeof *po))) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    if (r->be->pair) {
        st = r->be->pair(lane, lat, map_at(r, rl), &qs->corners, qidx.unique, n_q, &qs->cloud, k,
                         &pin, po, &tv, &tr, &td);
    } else {
        po->doubtful = 1;
        st = r->be->vote(lane, lat, &qs->corners, qidx.unique, n_q, &qs->cloud, k, po->cands,
                         &po->nc, &tv, &tr);
    }
    if (st != GM_OK)
        goto done;
    out->time.vote += tv;
    out->time.reduce += tr;
    out->time.verify += td;
    t1 = gm_now_ms();
    if (po->doubtful) {
        if ((st = decide_pairing(r, lane, rl, qs, &qidx, vq0, &pin, ss, po)) != GM_OK)
            goto done;
    } else {
        for (int i = 0; i < po->npick; i++) /* what the backend's pick remembered */
            gm_pair_remember(ss->done, &ss->n_done, GM_SEARCH_MAX, po->m0[po->pick[i]]);
    }
    keep_unrefined(ss, po->sc, po->m0, po->nc); /* the candidates left, the best kept as rivals */
    /* the picks scored in order (thread-independent) */
    for (int i = 0; i < po->npick; i++) {
        double h[9];
        gm_h_from_m(po->hr[i], h); /* a similarity: [a b c; d e f; 0 0 1] */
        ss_record(ss, r, q0, rl, fv, h, po->vr[i], po->cands[po->pick[i]].votes, 0);
    }
    out->time.verify += gm_now_ms() - t1;
done:
    free(all_b.key);
    free(sel);
    gm_compact_free(&qidx);
    free(po);
    return st;
}

/* Past this spread of the corners (gm_corner_spread_cpu, working pixels)
 * the confidence falls. */
#define GM_H_SPREAD_PX 3.0
/* A forced similarity or affine further than this (working pixels, at the
 * query's corners) from the homography refined from it, where that explains
 * at least as much, loses confidence with the distance (gm_match_forward). */
#define GM_MODEL_MISS_PX 3.0
/* Under auto, a homography that explains at least as much as the simpler
 * model and whose corners lie further than this from it is taken. */
#define GM_AUTO_MISS_PX 1.0

/* How far a model's corners lie from another's (the query's corners
 * carried by each), in working pixels of the user's reference: the
 * reference level's, or in the reverse search, whose query is the user's
 * reference, the query's (the distance carried back by the answer's scale). */
static double model_miss(const gm_index *r, const double hw[9], const double hm[9], int w, int h)
{
    double miss = gm_corner_move(hw, hm, w, h);
    double det = fabs(hw[0] * hw[4] - hw[1] * hw[3]);
    if (r->borrowed && det > 0)
        miss /= sqrt(det);
    return miss;
}

/* A test that finds the answer less certain than its edge count scales
 * both of its shares: the confidence, and the share of the whole query that
 * the distinctiveness test compares. */
static void score_scale(gm_verify_score *s, double k)
{
    s->confidence *= k;
    s->whole *= k;
}

/* A query triangle in the query's level-0 working pixels: its centroid
 * (seed[0], seed[1]) and its longer side from vertex a (seed[2]). */
static void tri_seed(const side *qs, const side *q0, const gm_tri *qt, double seed[3])
{
    gm_point qa = qs->corners.p[qt->a], qb = qs->corners.p[qt->b], qc = qs->corners.p[qt->c];
    double kf = (double)qs->f / q0->f, o = ((qs->f - 1) - (q0->f - 1)) / 2.0 / q0->f;
    seed[0] = kf * (qa.x + qb.x + qc.x) / 3 + o;
    seed[1] = kf * (qa.y + qb.y + qc.y) / 3 + o;
    seed[2] = kf * fmax(hypot(qb.x - qa.x, qb.y - qa.y), hypot(qc.x - qa.x, qc.y - qa.y));
}

/* A reference level keeps the strongest corners of the whole image, level
 * 0's count per area: on a query's region it has far fewer than the query,
 * which keeps its own count on its area alone (200 on a 6% crop of a
 * 6000-pixel photograph: 3.6 times the level's density at the pairing's
 * scale).  A triangle votes only when its three corners are in both, so
 * the query's triangles are drawn from its strongest corners at the level's
 * density, with a margin for the pairing's scale range (a factor 2 each
 * way).  Measured on the photo tier's tilts (docs/photo.md): 16/24 with every
 * query corner, 19, 18, 18, 18 with margins 1, 1.5, 2, 3. */
#define GM_TRI_DENSITY 2.0
#define GM_TRI_MIN_CORNERS 12

/* Every triangle of query level ql's first qc->n corners (qc) with sides
 * in [lmin, lmax] (gm_tri_list): *list from lv's lists, made there when
 * new. */
static gm_status query_tris(gm_query_levels *lv, int ql, const gm_points *qc, float lmin,
                            float lmax, const gm_tris **list)
{
    for (int i = 0; i < lv->n_tris; i++) {
        const gm_tri_list *t = &lv->tris[i];
        if (t->level == ql && t->corners == qc->n && t->lmin == lmin && t->lmax == lmax) {
            *list = &t->all;
            return GM_OK;
        }
    }
    if (lv->n_tris == lv->cap_tris) {
        int cap = lv->cap_tris ? 2 * lv->cap_tris : 4;
        gm_tri_list *grown = realloc(lv->tris, (size_t)cap * sizeof *grown);
        if (!grown)
            return GM_ERR_NOMEM;
        lv->tris = grown, lv->cap_tris = cap;
    }
    gm_tris all = {0};
    gm_status st = gm_tris_select_cpu(qc, lmin, lmax, GM_TRI_MIN_SIN * 0.8f, 1.0, 0, &all);
    if (st != GM_OK)
        return st;
    gm_tri_list *t = &lv->tris[lv->n_tris++];
    *t = (gm_tri_list){ql, qc->n, lmin, lmax, all};
    *list = &t->all;
    return GM_OK;
}

/* One (reference level, query level) pairing with triangles: the query's
 * triangles vote in the level's affine table, the best rows' affine maps
 * are verified on the level's map, the best few grown to the model (each on
 * the device when there is one).
 * Updates ss when one beats the best so far. */
static gm_status run_affine_pairing(const gm_index *r, gm_model model, void *lane,
                                    const ref_level *rl, gm_query_levels *lv, int ql,
                                    const side *q0, const gm_points *vq0, search_state *ss,
                                    gm_result *out)
{
    const gm_params *p = &r->p;
    const side *qs = &lv->q[ql];
    double t0 = gm_now_ms();
    gm_tris picked = {0};
    const gm_tris *all = NULL;
    gm_candidate *cands = NULL;
    gm_status st = GM_OK;
    if (rl->tris.n == 0 || qs->all.n < 8)
        return GM_OK;
    double ratio = band_ratio(r, rl, qs, q0);
    /* a foreshortened view stretches one side against the other: a wider
     * band than the similarity's */
    float lmin = (float)(rl->tlmin / ratio) * 0.8f, lmax = (float)(rl->tlmax / ratio) * 1.25f;
    /* the query's corners at the level's density: the strongest first (the
     * order gm_corners_cpu keeps them in), as many as the level has on the
     * query's area at the pairing's scale, GM_TRI_DENSITY times over */
    gm_points qc = qs->corners;
    double want = GM_TRI_DENSITY * rl->corners.n / ((double)rl->w * rl->h) *
                  ((double)qs->w * qs->h) / (ratio * ratio);
    qc.n = gm_tri_corners_kept(qc.n, want, GM_TRI_MIN_CORNERS);
    if ((st = query_tris(lv, ql, &qc, lmin, lmax, &all)) != GM_OK)
        goto done;
    /* m of them at random (a hash of the draw's key and the triangle) */
    uint32_t nsel = 0, m = (uint32_t)p->query_bases;
    uint64_t thr = gm_prob_threshold(all->n > m ? (double)m / all->n : 1.0);
    if (!(picked.t = malloc((all->n ? all->n : 1) * sizeof *picked.t))) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    for (uint32_t i = 0; i < all->n; i++) {
        const gm_tri t = all->t[i];
        if (gm_mix64(ss->key ^ GM_SALT_QUERY_TRIS ^ ((uint64_t)t.a << 40 | (uint64_t)t.b << 20 | t.c)) <= thr)
            picked.t[nsel++] = t;
    }
    const gm_tri *sel = picked.t;
    uint32_t k = (uint32_t)(p->top_k > 0 ? p->top_k : 1);
    if (k > 256)
        k = 256;
    cands = malloc(k * sizeof *cands);
    if (!cands) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    double t1 = gm_now_ms();
    out->time.bases += t1 - t0;
    uint32_t nc = 0;
    double vote_ms = 0, reduce_ms = 0;
    gm_level_at tlv = {&rl->ttable, rl->tshare, rl->tris.n, rl->tdev};
    if ((st = r->be->tri_vote(lane, tlv, &qs->corners, sel, nsel, &qs->cloud, k, cands, &nc,
                              &vote_ms, &reduce_ms)) != GM_OK)
        goto done;
    double t2 = gm_now_ms();
    out->time.vote += t2 - t1;
    int fv;
    level_map(r, rl, &fv);
    double ms[256][6];
    gm_verify_score sc[256];
    for (uint32_t c = 0; c < nc; c++) {
        const gm_tri *qt = &sel[cands[c].query_basis], *rt = &rl->tris.t[cands[c].ref_basis];
        gm_point qv[3] = {qs->corners.p[qt->a], qs->corners.p[qt->b], qs->corners.p[qt->c]};
        gm_point rv[3] = {rl->corners.p[rt->a], rl->corners.p[rt->b], rl->corners.p[rt->c]};
        double mw[6], msrc[6];
        sc[c].total = 0;
        if (gm_affine_from_tris(qv, rv, mw) != 0) {
            sc[c].total = UINT32_MAX;
            continue;
        }
        gm_work_to_source(mw, qs->f, rl->f, msrc);
        gm_source_to_work(msrc, q0->f, fv, ms[c]);
    }
    { /* the candidates with a map, in one batch */
        double mv[256][6];
        gm_verify_score sv[256];
        uint32_t idx[256], nv = 0;
        for (uint32_t c = 0; c < nc; c++)
            if (sc[c].total != UINT32_MAX) {
                memcpy(mv[nv], ms[c], sizeof mv[nv]);
                idx[nv++] = c;
            }
        if ((st = r->be->verify(lane, map_at(r, rl), vq0, &mv[0][0], nv, sv)) != GM_OK)
            goto done;
        for (uint32_t i = 0; i < nv; i++)
            sc[idx[i]] = sv[i];
    }
    /* the best few grown side by side (a growth's refinements are serial:
     * fewer than GM_PAR_POINTS points), then recorded in order */
    const gm_model grow = model == GM_MODEL_AUTO ? GM_MODEL_HOMOGRAPHY : model;
    int pick[GM_REFINE_CANDS], npick = 0;
    while (npick < GM_REFINE_CANDS && (pick[npick] = take_best(sc, nc)) >= 0)
        npick++;
    double hg[GM_REFINE_CANDS][9], seeds[GM_REFINE_CANDS][3];
    gm_verify_score vg[GM_REFINE_CANDS];
    for (int i = 0; i < npick; i++) {
        tri_seed(qs, q0, &sel[cands[pick[i]].query_basis], seeds[i]);
        gm_h_from_m(ms[pick[i]], hg[i]);
    }
    if ((st = r->be->grow(lane, map_at(r, rl), vq0, grow, &hg[0][0], &seeds[0][0],
                          (uint32_t)npick, vg)) != GM_OK)
        goto done;
    for (int i = 0; i < npick; i++) {
        if (!gm_h_plausible(hg[i], q0->w, q0->h))
            vg[i].confidence = vg[i].whole = 0; /* a degenerate fit: no camera sees the plane so */
        ss_record(ss, r, q0, rl, fv, hg[i], vg[i], cands[pick[i]].votes, 1);
    }
    out->time.verify += gm_now_ms() - t2;
done:
    free(picked.t);
    free(cands);
    return st;
}

/* Query level ql (0: the working size, built by gm_match first; 1: half
 * of it; 2: a quarter), built on first use, whatever pairing asks, and
 * never twice.  1
 * when it is there to match with; 0 when not, with *st set when the build
 * failed for want of memory or device (a level too small is no failure). */
static int query_level(const gm_index *r, void *lane, gm_view query, int ql,
                       uint32_t corner_target, side *q, int *tried, gm_result *out,
                       gm_status *st)
{
    *st = GM_OK;
    if (!tried[ql]) {
        tried[ql] = 1;
        char err[128];
        double te = gm_now_ms();
        const gm_params *p = &r->p;
        gm_status s = gm_side_build(r->be, lane, p, query, 1 << ql, (uint32_t)p->query_points,
                                    corner_target, &q[ql], err, sizeof err);
        out->time.edges += gm_now_ms() - te;
        if (s == GM_ERR_DEVICE || s == GM_ERR_NOMEM) {
            *st = s;
            return 0;
        }
    }
    /* the working size matches whatever its size; a coarser level only
     * when it keeps enough pixels */
    return ql == 0 || (q[ql].w >= GM_MIN_LEVEL_SIDE && q[ql].h >= GM_MIN_LEVEL_SIDE);
}

/* Coarse-to-fine polish (matcher.h).  A refinement pairs each query point
 * with a reference edge within GM_VERIFY_RADIUS pixels of its map.  A fine level's answer comes
 * from two corners and a refinement on that level; when the far corners
 * start a few pixels off, the refinement locks onto the partners it can
 * reach and stops in a wrong optimum (a crop of a 6000-pixel photograph:
 * 3.4 pixels off at factor 2, strict 0.51, where the truth scores 0.78).
 * On level 0 the same error is a pixel or two, within reach, and each finer
 * map after it starts within a pixel of its optimum: the image pyramid of
 * coarse-to-fine registration.  The polished model replaces hw when it
 * verifies better on bl and its corners moved at most GM_POLISH_MOVE
 * level-0 pixels (a refinement that slides along one edge, or collapses the
 * query onto a point, moves much further).  A model grown from triangles
 * starts further off: the growth stops where its steps find no partners
 * within reach, and the perspective terms carry the far corners 10-30
 * pixels off (a tilted view of the photo tier, LadyBird tilt02 with one
 * grey level changed in 2% of its pixels: 0.36, 32 px off, where level 0
 * brings it to 0.81 within a pixel, its corners moving 2.5% of the
 * diagonal).  Its bound is GM_POLISH_GROWN_SHARE of the query's mapped
 * diagonal, for a polished view that keeps the scale (within
 * GM_POLISH_SCALE: a collapse does not) and a plausible camera
 * (gm_h_plausible). */
static double polish_bound(const double hw[9], const double hp[9], const side *q0,
                           gm_model model, const ref_level *l0, const ref_level *bl)
{
    double bound = GM_POLISH_MOVE * l0->f / bl->f; /* bl's pixels */
    if (model == GM_MODEL_SIMILARITY)
        return bound;
    double d0 = fabs(hw[0] * hw[4] - hw[1] * hw[3]), d1 = fabs(hp[0] * hp[4] - hp[1] * hp[3]);
    double k = d0 > 0 ? sqrt(d1 / d0) : 0;
    if (!(k >= 1 / GM_POLISH_SCALE && k <= GM_POLISH_SCALE) ||
        !gm_h_plausible(hp, q0->w, q0->h))
        return bound;
    double ax, ay, bx, by;
    gm_h_apply(hw, 0, 0, &ax, &ay);
    gm_h_apply(hw, q0->w - 1.0, q0->h - 1.0, &bx, &by);
    return fmax(bound, GM_POLISH_GROWN_SHARE * hypot(bx - ax, by - ay));
}

gm_status gm_polish_answer(const gm_index *r, void *lane, const side *q0, const gm_points *vq0,
                           const ref_level *bl, gm_model model, double hw[9],
                           gm_verify_score *score)
{
    const ref_level *l0 = &r->lv[0];
    if (!bl->fine || !l0->ok || l0->f <= bl->f)
        return GM_OK;
    double hp[9], hs[9];
    const ref_level *pl = l0; /* the level hp is in */
    gm_h_work_to_source(hw, q0->f, bl->f, hs);
    gm_h_source_to_work(hs, q0->f, l0->f, hp);
    gm_verify_score v = {0};
    for (int k = -1; k < GM_FINE_LEVELS; k++) {
        const ref_level *nl = k < 0 ? l0 : &r->lv[GM_LEVELS + k];
        if (!nl->ok || nl->f < bl->f)
            break;
        if (nl != pl) {
            gm_h_work_to_source(hp, q0->f, pl->f, hs);
            gm_h_source_to_work(hs, q0->f, nl->f, hp);
            pl = nl;
        }
        gm_status st = r->be->refine(lane, map_at(r, nl), vq0, model, hp, GM_MODEL_ITERS, 1, &v);
        if (st != GM_OK)
            return st;
    }
    if (pl != bl || !(v.confidence > score->confidence))
        return GM_OK;
    if (gm_corner_move(hw, hp, q0->w, q0->h) > polish_bound(hw, hp, q0, model, l0, bl))
        return GM_OK;
    memcpy(hw, hp, sizeof hp);
    *score = v;
    return GM_OK;
}

void gm_query_levels_free(gm_query_levels *lv)
{
    for (int l = 0; l < GM_QUERY_LEVELS; l++)
        gm_side_free(&lv->q[l]);
    for (int i = 0; i < lv->n_tris; i++)
        free(lv->tris[i].all.t);
    free(lv->tris);
    memset(lv, 0, sizeof *lv);
}

/* One query's search of r: what its two halves, the search (the pairings,
 * search_pairings) and the decision (the answer's polish, model and checks,
 * decide), share. */
typedef struct {
    const gm_index *r;
    gm_model model;
    void *lane;             /* the query's on the backend */
    gm_view query;
    uint32_t corner_target; /* corners a query level keeps */
    gm_query_levels *lv;    /* its levels, built on first use */
    const gm_points *vq0;   /* level 0's points the verification uses (on the lane's device) */
    search_state *ss;
    gm_result *out;
} query_run;

/* The search: every (reference level, query level) pairing, most likely
 * first, until one's refined best reaches GM_EARLY_STOP; then, for models
 * with more than a similarity's freedom, the triangles.  What it finds is
 * in qr->ss. */
static gm_status search_pairings(const query_run *qr)
{
    const gm_index *r = qr->r;
    side *q = qr->lv->q;
    int *tried = qr->lv->tried;
    search_state *ss = qr->ss;
    gm_status st = GM_OK;
    /* pairings (reference level, query level), most likely first: the
     * working levels, then each fine level coarse to fine with the query
     * at its working size, the finest also with the query at half; then
     * level 0 and the finest with the query at a quarter */
    int pair_r[3 + GM_FINE_LEVELS + 3] = {0, 0, 1}, pair_q[3 + GM_FINE_LEVELS + 3] = {0, 1, 0};
    int npair = 3, finest = -1;
    for (int k = 0; k < GM_FINE_LEVELS; k++)
        if (r->lv[GM_LEVELS + k].ok)
            pair_r[npair] = GM_LEVELS + k, pair_q[npair++] = 0, finest = GM_LEVELS + k;
    if (finest >= 0)
        pair_r[npair] = finest, pair_q[npair++] = 1;
    pair_r[npair] = 0, pair_q[npair++] = 2;
    if (finest >= 0)
        pair_r[npair] = finest, pair_q[npair++] = 2;
    for (int pi = 0; pi < npair; pi++) {
        const ref_level *rl = &r->lv[pair_r[pi]];
        if (!rl->ok)
            continue;
        int ql = pair_q[pi];
        if (!query_level(r, qr->lane, qr->query, ql, qr->corner_target, q, tried, qr->out, &st)) {
            if (st != GM_OK)
                return st;
            continue;
        }
        if ((st = run_pairing(r, qr->lane, rl, &q[ql], &q[0], qr->vq0, ss, qr->out)) != GM_OK)
            return st;
        if (ss->found && ss->score.confidence >= GM_EARLY_STOP)
            break;
    }
    /* views with perspective: triangles on level 0 and the fine levels, the
     * query at its working size and at half */
    for (int li = 0; li < GM_ALL_LEVELS && qr->model != GM_MODEL_SIMILARITY; li++) {
        const ref_level *rl = &r->lv[li];
        if (!rl->ok || rl->tris.n == 0)
            continue;
        if (ss->found && ss->score.confidence >= GM_EARLY_STOP)
            break;
        for (int ql = 0; ql < GM_LEVELS; ql++) {
            if (!query_level(r, qr->lane, qr->query, ql, qr->corner_target, q, tried, qr->out,
                             &st)) {
                if (st != GM_OK)
                    return st;
                continue;
            }
            if (q[ql].w < GM_MIN_LEVEL_SIDE || q[ql].h < GM_MIN_LEVEL_SIDE)
                continue; /* too few pixels for triangles */
            if ((st = run_affine_pairing(r, qr->model, qr->lane, rl, qr->lv, ql, &q[0], qr->vq0, ss,
                                         qr->out)) != GM_OK)
                return st;
        }
    }
    return GM_OK;
}

/* The answer as the decision shapes it: hw, its model in the working
 * coordinates of the query's level 0 and of level bl, with its strict test
 * and model; the simpler model that a richer one replaced (alt), in case
 * the checks set the richer one aside; under auto, the homography refined
 * from the answer and not taken (hh). */
typedef struct {
    double hw[9];
    gm_verify_score score;
    gm_model chosen;
    const ref_level *bl;
    double alt[9];
    gm_verify_score alt_score;
    gm_model alt_model;
    double hh[9];
    gm_verify_score hh_score;
    int has_hh;
} answer;

/* The search's best as an answer, polished: found on a fine level,
 * polished coarse to fine (gm_polish_answer), then refined again on the
 * finest, whose pixels are the reference's own (a level at factor 2 places
 * edges to 2 source pixels); kept when its strict test is not much worse.
 * An answer on a working level of a reference with finer levels too (a crop
 * or a tilted view of a large photograph that the working levels found):
 * the finest's test counts the hits that its coarse map blurs (data/large's
 * tilted view: 0.28 on level 0, 0.42 and within a pixel on the finest). */
static gm_status answer_start(const query_run *qr, answer *a)
{
    const gm_index *r = qr->r;
    const search_state *ss = qr->ss;
    const side *q0 = &qr->lv->q[0];
    gm_status st;
    a->bl = &r->lv[ss->lvl];
    gm_h_from_m(ss->m, a->hw);
    a->score = ss->score;
    /* the model of hw: the search's similarity, or the triangles' model */
    a->chosen = GM_MODEL_SIMILARITY;
    if (ss->has_h) {
        memcpy(a->hw, ss->h, sizeof a->hw);
        a->chosen = qr->model == GM_MODEL_AUTO ? GM_MODEL_HOMOGRAPHY : qr->model;
    }
    if ((st = gm_polish_answer(r, qr->lane, q0, qr->vq0, a->bl, a->chosen, a->hw, &a->score)) !=
        GM_OK)
        return st;
    const ref_level *fl = finest_level(r);
    if (fl && fl->f < a->bl->f) {
        double hs[9], hf[9];
        gm_h_work_to_source(a->hw, q0->f, a->bl->f, hs);
        gm_h_source_to_work(hs, q0->f, fl->f, hf);
        gm_verify_score vf;
        if ((st = r->be->refine(qr->lane, map_at(r, fl), qr->vq0, a->chosen, hf, GM_MODEL_ITERS,
                                1, &vf)) != GM_OK)
            return st;
        double keep = a->bl->fine || r->borrowed ? GM_FINEST_KEEP : GM_FINEST_KEEP_WORKING;
        if (vf.confidence >= keep * a->score.confidence) {
            memcpy(a->hw, hf, sizeof a->hw);
            a->score = vf;
            a->bl = fl;
        }
    }
    return GM_OK;
}

/* The richer models from hw, each kept when the strict test says so (auto:
 * only when clearly better, GM_AUTO_GAIN a step; the others: when not
 * worse).  A view with perspective fits a similarity only in part, so the
 * refinement starts below the reporting threshold and the model's own
 * confidence decides. */
static gm_status answer_models(const query_run *qr, answer *a)
{
    const gm_index *r = qr->r;
    const search_state *ss = qr->ss;
    const side *q0 = &qr->lv->q[0];
    const gm_model model = qr->model;
    memcpy(a->alt, a->hw, sizeof a->alt);
    a->alt_score = a->score;
    a->alt_model = ss->has_h ? GM_MODEL_HOMOGRAPHY : GM_MODEL_SIMILARITY;
    a->has_hh = 0;
    memset(&a->hh_score, 0, sizeof a->hh_score);
    static const gm_model steps[2] = {GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY};
    for (int k = 0; k < 2 && model != GM_MODEL_SIMILARITY; k++) {
        gm_model m = steps[k];
        if (model != GM_MODEL_AUTO && m != model)
            continue;
        /* from the triangles' homography only the affine is tried */
        if (ss->has_h ? m == a->chosen || m == GM_MODEL_HOMOGRAPHY
                      : a->score.confidence < 0.5 * r->p.min_confidence)
            continue;
        double hm[9];
        gm_verify_score v;
        memcpy(hm, a->hw, sizeof hm);
        gm_status st = r->be->refine(qr->lane, map_at(r, a->bl), qr->vq0, m, hm, GM_MODEL_ITERS, 1,
                                     &v);
        if (st != GM_OK)
            return st;
        if (!gm_h_plausible(hm, q0->w, q0->h))
            continue; /* folded onto a sliver, mirrored, or worse */
        double need = model != GM_MODEL_AUTO ? 0.0
                      : ss->has_h ? -GM_AUTO_GAIN /* the simpler, unless worse by the gain */
                                  : GM_AUTO_GAIN;
        if (v.confidence >= a->score.confidence + need) {
            memcpy(a->alt, a->hw, sizeof a->alt); /* the simpler one, in case */
            a->alt_score = a->score, a->alt_model = a->chosen;
            memcpy(a->hw, hm, sizeof hm);
            a->score = v;
            a->chosen = m;
        } else if (m != GM_MODEL_HOMOGRAPHY) {
            memcpy(a->alt, hm, sizeof a->alt);
            a->alt_score = v, a->alt_model = m;
        } else {
            memcpy(a->hh, hm, sizeof a->hh);
            a->hh_score = v, a->has_hh = 1;
        }
    }
    /* auto in the reverse search, the simpler model against the view:
     * a homography that
     * explains at least as much but less than GM_AUTO_GAIN more, and
     * whose corners lie more than GM_AUTO_MISS_PX from the simpler
     * model's, says the simpler one misstates the view (the object
     * video's poster at a quarter of its size in a tilted frame: the
     * similarity or affine 3-5 reference pixels off, the homography 1,
     * their confidences within 0.03, since at a quarter a reference
     * pixel is a fraction of the verification's radius; 3 px found 2 of
     * those 5 frames, 1 px all).  The homography is taken; the spread
     * test below still judges it, and falls back to the simpler model.
     * Not in the forward search, whose map has the user's reference's
     * own pixels: there the homography's few hundredths more moved
     * public stills from 0.1-0.3 px to 0.7-2.9 (docs/scene.md). */
    if (model == GM_MODEL_AUTO && r->borrowed && a->chosen != GM_MODEL_HOMOGRAPHY) {
        if (!a->has_hh && a->alt_model == GM_MODEL_HOMOGRAPHY) {
            /* the triangles' homography, which the simpler model replaced */
            memcpy(a->hh, a->alt, sizeof a->hh);
            a->hh_score = a->alt_score, a->has_hh = 1;
        }
        if (a->has_hh && a->hh_score.confidence >= a->score.confidence &&
            model_miss(r, a->hw, a->hh, q0->w, q0->h) > GM_AUTO_MISS_PX) {
            memcpy(a->alt, a->hw, sizeof a->alt);
            a->alt_score = a->score, a->alt_model = a->chosen;
            memcpy(a->hw, a->hh, sizeof a->hw);
            a->score = a->hh_score;
            a->chosen = GM_MODEL_HOMOGRAPHY;
        }
    }
    return GM_OK;
}

/* The checks of the answer's determinacy, each of which only lowers its
 * confidence.
 *
 * The model asked against the view: under a forced similarity or
 * affine, a homography refined from the answer.  Where it explains
 * at least as much (it stays in the answer's basin: on the scene
 * tier it gained 0.015 where the similarity was 15 px off, so auto's
 * GM_AUTO_GAIN would not see it) and its corners lie more than
 * GM_MODEL_MISS_PX working pixels from the answer's (the reference's;
 * the query's in the reverse search), the answer
 * misstates the view (a similarity fitted to part of a tilted
 * poster: 10-19 reference pixels off at confidence 0.46-0.54 on the
 * scene tier), and its confidence falls with the distance, as the
 * spread's does below: "none" rather than a wrong match.
 *
 * The corners' spread (gm_corner_spread_cpu): a model whose corners the
 * edges do not pin down.  A homography's perspective terms
 * extrapolate freely where a part of the view has no edges; under
 * auto the simpler model then stands, and passes the same test.  On
 * the public and photo tiers and the other photographs
 * (docs/calibration.md) no answer within 3 pixels of the truth moved
 * by more than 2.5 working pixels; answers 7 to 530 pixels off (a
 * similarity fitted to a tilted view, an affine on a negative) moved
 * by 3.5 to 42.  Past GM_H_SPREAD_PX the confidence falls with the
 * spread.  It only lowers the confidence, so a simpler model already
 * below the threshold is spared it (3.7 ms a public still
 * otherwise). */
static gm_status answer_checks(const query_run *qr, answer *a)
{
    const gm_index *r = qr->r;
    const side *q0 = &qr->lv->q[0];
    const gm_model model = qr->model;
    const double min_conf = r->p.min_confidence;
    gm_status st;
    /* the first spread (a->chosen at a->hw, which the check leaves alone)
     * computed beside the check's homography: a GPU waits once for both,
     * and the spread is not used where the check took the confidence
     * below the threshold */
    double spread0 = 0;
    int have0 = 0;
    if ((model == GM_MODEL_SIMILARITY || model == GM_MODEL_AFFINE) &&
        a->score.confidence >= min_conf) {
        double hm[9];
        gm_verify_score v;
        memcpy(hm, a->hw, sizeof hm);
        const gm_refine_beside check = {GM_MODEL_HOMOGRAPHY, GM_MODEL_ITERS, hm, &v};
        if ((st = r->be->spread(qr->lane, map_at(r, a->bl), qr->vq0, a->chosen, a->hw, q0->w,
                                q0->h, &spread0, &check)) != GM_OK)
            return st;
        have0 = 1;
        double miss = model_miss(r, a->hw, hm, q0->w, q0->h);
        if (gm_h_plausible(hm, q0->w, q0->h) && v.confidence >= a->score.confidence &&
            miss > GM_MODEL_MISS_PX) {
            score_scale(&a->score, GM_MODEL_MISS_PX / miss);
        }
    }
    double hsp[9], h_spread = 0; /* the homography that auto set aside */
    gm_verify_score h_sc = a->score;
    while (a->chosen == GM_MODEL_HOMOGRAPHY || a->score.confidence >= min_conf || h_spread > 0) {
        double spread = spread0;
        if (!have0 && (st = r->be->spread(qr->lane, map_at(r, a->bl), qr->vq0, a->chosen, a->hw,
                                          q0->w, q0->h, &spread, NULL)) != GM_OK)
            return st;
        have0 = 0;
        if (spread <= GM_H_SPREAD_PX)
            break;
        if (a->chosen == GM_MODEL_HOMOGRAPHY && model == GM_MODEL_AUTO &&
            a->alt_model != GM_MODEL_HOMOGRAPHY && h_spread == 0) {
            memcpy(hsp, a->hw, sizeof hsp);
            h_sc = a->score, h_spread = spread;
            memcpy(a->hw, a->alt, sizeof a->hw);
            a->score = a->alt_score;
            a->chosen = a->alt_model;
            continue;
        }
        /* the simpler model set aside by auto is no better pinned down:
         * the one of the two that keeps more confidence after the
         * spread's scaling (a poster whose homography spread 3.9 at
         * 0.82 and whose affine, 50 px off, 4.9 at 0.70) */
        if (h_spread > 0 && h_sc.confidence / h_spread > a->score.confidence / spread) {
            memcpy(a->hw, hsp, sizeof hsp);
            a->score = h_sc, spread = h_spread;
            a->chosen = GM_MODEL_HOMOGRAPHY;
        }
        score_scale(&a->score, GM_H_SPREAD_PX / spread);
        break;
    }
    return GM_OK;
}

/* The answer into the result: its distinctiveness against the search's
 * other refined transforms and its rivals, its corners' uncertainty, the
 * reason of a "none".  explained: what the edges explained before the
 * checks of answer_checks (a "none" below the threshold there is weak; one
 * that the checks took there, uncertain or ambiguous). */
/* The second of the search's other refined transforms (the most any of
 * them that is another placement than the search's best explains). */
static double search_second(const search_state *ss, const side *q0)
{
    double second = 0;
    for (int i = 0; i < ss->n_refined; i++)
        if (corner_dist(ss->refined[i], ss->m0, q0->w, q0->h) > GM_DISTINCT_PX &&
            ss->rconf[i] > second)
            second = ss->rconf[i];
    return second;
}

/* Whether the answer a, as it stands, has its rivals refined: it would be
 * reported were they to explain nothing. */
static int rivals_wanted(const query_run *qr, const answer *a)
{
    const double second = search_second(qr->ss, &qr->lv->q[0]);
    return a->score.confidence * distinct_of(second, a->score.whole) >= qr->r->p.min_confidence;
}

/* Rivals begun ahead of the answer's checks (decide: on a GPU, beside
 * them), with the answer they were begun for. */
typedef struct {
    rivals_job job;
    int begun;
    gm_model chosen;
    double hw[9];
} rivals_ahead;

static gm_status answer_report(const query_run *qr, answer *a, double explained,
                               rivals_ahead *ahead)
{
    const gm_index *r = qr->r;
    const search_state *ss = qr->ss;
    const side *q0 = &qr->lv->q[0];
    gm_query_levels *lv = qr->lv;
    gm_result *out = qr->out;
    const double min_conf = r->p.min_confidence;
    int bf;
    const gm_edge_map *bmap = level_map(r, a->bl, &bf);
    /* the host's pixels of the map, which a GPU's reference leaves unmade
     * until an answer needs them (its corners' uncertainty below) */
    gm_status st = gm_edge_map_pixels(bmap);
    if (st != GM_OK)
        return st;
    double h[9];
    gm_h_work_to_source(a->hw, q0->f, bf, h);
    out->model = a->chosen;
    memcpy(out->h, h, sizeof h);
    memcpy(out->m, h, sizeof out->m);
    const double second = search_second(ss, q0);
    /* against the final model's confidence: under shear or perspective
     * two similarities may each fit a part about equally, while the
     * refined model fits the whole */
    /* edges that leave the transform free to slide (a straight edge, one
     * smooth arc) or let the answer's model slide the query along
     * parallel edges (an affine shearing it along planks): the
     * uncertainty, under that model, of the corners of the region the
     * two share (gm_overlap_poly: a partial overlap's far corners are
     * the homography's extrapolation, uncertain and unused) scales the
     * confidence down past GM_SIGMA_MAX pixels */
    /* an answer that would be reported: its rivals under its model.  The
     * uncertainty below only lowers the confidence and what the answer
     * explains (so the distinctiveness too), so an answer that would not
     * be reported before it will not be after: the rivals are begun first,
     * on the GPU while the host computes the uncertainty, and set aside
     * where the uncertainty takes the answer below the threshold */
    rivals_job *rj = NULL;
    const int want = rivals_wanted(qr, a);
    if (ahead->begun) {
        /* begun ahead for the answer as it stood before the checks: kept
         * where it is still that answer and still wanted, else its results
         * set aside (the lane's chain buffers are then free again) */
        ahead->begun = 0;
        if (want && ahead->chosen == a->chosen && !memcmp(ahead->hw, a->hw, sizeof a->hw))
            rj = &ahead->job;
        else if ((st = gm_chain_end(&ahead->job.job)) != GM_OK)
            return st;
    }
    if (want && !rj) {
        rj = &ahead->job;
        if ((st = rivals_begin(r, qr->lane, ss, lv, q0, qr->vq0, bf, a->chosen, a->hw, rj)) !=
            GM_OK)
            return st;
    }
    double rms;
    double ex[16], ey[16];
    int ne = gm_overlap_poly(a->hw, q0->w, q0->h, bmap->w, bmap->h, ex, ey);
    double sigma = gm_corner_sigma_cpu(bmap, qr->vq0, a->chosen, a->hw, q0->w, q0->h, ex, ey, ne,
                                       &rms);
    if (sigma > GM_SIGMA_MAX)
        score_scale(&a->score, GM_SIGMA_MAX / sigma);
    /* the second against the best in the same units: the share of the
     * whole query each explains */
    double distinct = distinct_of(second, a->score.whole);
    if (rj) {
        double second_m = 0;
        if ((st = rivals_end(rj, &second_m)) != GM_OK)
            return st;
        if (a->score.confidence * distinct >= min_conf)
            distinct = fmin(distinct, distinct_of(second_m, a->score.whole));
    }
    out->votes = (int)ss->votes;
    out->confidence = a->score.confidence * distinct;
    out->uncertainty_px = gm_uncertainty_px(sigma) * bf;
    out->reason = out->confidence >= min_conf     ? GM_REASON_FOUND
                  : explained < min_conf          ? GM_REASON_WEAK
                  : a->score.confidence < min_conf ? GM_REASON_UNCERTAIN
                                                   : GM_REASON_AMBIGUOUS;
    if (lv->n_seen < GM_SEEN_MAX)
        memcpy(lv->seen[lv->n_seen++], h, sizeof h);
    out->inliers = (int)a->score.hits;
    out->residual_px = rms * bf; /* working pixels of the reference level to its own */
    out->scale = hypot(out->m[0], out->m[3]);
    out->angle_deg = atan2(out->m[3], out->m[0]) * 180.0 / GM_PI;
    int finite = 1;
    for (int i = 0; i < 9; i++)
        finite &= isfinite(h[i]);
    if (out->reason == GM_REASON_FOUND && !(finite && out->scale > 0))
        out->reason = GM_REASON_UNCERTAIN;
    if (out->reason == GM_REASON_FOUND)
        out->status = GM_MATCH_FOUND;
    return GM_OK;
}

/* The decision on the search's best (qr->ss->found): polished, the model
 * ladder, the checks, the result. */
static gm_status decide(const query_run *qr)
{
    answer a;
    gm_status st;
    double tp = gm_now_ms();
    st = answer_start(qr, &a);
    double tr = gm_now_ms();
    qr->out->time.polish += tr - tp;
    if (st != GM_OK || (st = answer_models(qr, &a)) != GM_OK)
        return st;
    /* what the edges explain before the checks of the answer's
     * determinacy (the reason of a "none": weak below the threshold
     * here, uncertain or ambiguous when the checks take it there) */
    const double explained = a.score.confidence;
    /* on a GPU (a backend with its own chain) the rivals of the answer as
     * it stands are begun before its checks, on the lane's side stream, so
     * the device refines both at once: the checks only lower the answer's
     * scores, unless auto sets the homography aside, so an answer that
     * would not have its rivals refined now would not after them either;
     * answer_report keeps them where the answer is still the same and
     * still wants them (a still's rivals and checks: 0.2 ms of a lone
     * still's 1.6, docs/speed.md) */
    rivals_ahead ahead;
    ahead.begun = 0;
    const gm_index *r = qr->r;
    const side *q0 = &qr->lv->q[0];
    if (r->be->chain_queue && rivals_wanted(qr, &a)) {
        int bf;
        (void)level_map(r, a.bl, &bf);
        st = rivals_begin(r, qr->lane, qr->ss, qr->lv, q0, qr->vq0, bf, a.chosen, a.hw, &ahead.job);
        if (st != GM_OK)
            return st;
        ahead.begun = 1;
        ahead.chosen = a.chosen;
        memcpy(ahead.hw, a.hw, sizeof ahead.hw);
    }
    if ((st = answer_checks(qr, &a)) == GM_OK)
        st = answer_report(qr, &a, explained, &ahead);
    if (ahead.begun) { /* an error on the way: the device's chain ended all the same */
        gm_status se = gm_chain_end(&ahead.job.job);
        st = st == GM_OK ? se : st;
    }
    qr->out->time.decide += gm_now_ms() - tr;
    return st;
}

gm_status gm_match_forward(const gm_index *r, gm_model model, gm_view query, uint64_t key,
                           gm_query_levels *levels, gm_result *out)
{
    memset(out, 0, sizeof *out);
    double t0 = gm_now_ms();
    const gm_params *p = &r->p;
    gm_query_levels own;
    memset(&own, 0, sizeof own);
    gm_query_levels *lv = levels ? levels : &own;
    side *q = lv->q;
    uint32_t corner_target = (uint32_t)p->basis_points / 2;
    gm_point *vbuf = NULL;
    search_state *ss = NULL;
    void *lane = r->be->acquire(r->dev); /* this query's on the backend */
    if (!lane)
        return GM_ERR_DEVICE;
    gm_status st = GM_OK;
    if (!lv->tried[0]) { /* level 0, and its outcome, kept for the next draw */
        char err[128];
        lv->tried[0] = 1;
        lv->st0 = gm_side_build(r->be, lane, p, query, 1, (uint32_t)p->query_points,
                                corner_target, &q[0], err, sizeof err);
        out->time.edges = gm_now_ms() - t0;
    }
    if ((st = lv->st0) != GM_OK)
        goto done;
    vbuf = malloc(GM_VERIFY_POINTS * sizeof *vbuf);
    ss = calloc(1, sizeof *ss);
    if (!vbuf || !ss) {
        st = GM_ERR_NOMEM;
        goto done;
    }
    ss->key = key;
    gm_points vq0 = gm_stride_sample(&q[0].all, GM_VERIFY_POINTS, vbuf);
    if ((st = r->be->points(lane, &vq0)) != GM_OK)
        goto done;
    out->reason = GM_REASON_NO_EDGES;
    if (r->map.pts.n == 0 || q[0].all.n < 8)
        goto done; /* nothing to match: a successful "no match" */
    out->reason = GM_REASON_NO_CANDIDATE;
    const query_run qr = {.r = r, .model = model, .lane = lane, .query = query,
                          .corner_target = corner_target, .lv = lv, .vq0 = &vq0, .ss = ss,
                          .out = out};
    if ((st = search_pairings(&qr)) != GM_OK)
        goto done;
    if (ss->found)
        st = decide(&qr);
done:
    r->be->release(r->dev, lane);
    free(vbuf);
    free(ss);
    gm_query_levels_free(&own);
    out->time.total = gm_now_ms() - t0;
    return st;
}

gm_status gm_match(const gm_ref *r, gm_view query, gm_result *out)
{
    return gm_match_model(r, query, r ? r->ix.p.model : GM_MODEL_SIMILARITY, out);
}

gm_status gm_match_model(const gm_ref *r, gm_view query, gm_model model, gm_result *out)
{
    if (!r || !out)
        return GM_ERR_INVALID;
    if (r->status != GM_OK) { /* a handle of a failed preparation */
        memset(out, 0, sizeof *out);
        snprintf(out->error, sizeof out->error, "the reference was not prepared: %.200s", r->err);
        return GM_ERR_INVALID;
    }
    if ((unsigned)model > GM_MODEL_AUTO ||
        (r->ix.p.model == GM_MODEL_SIMILARITY && model != GM_MODEL_SIMILARITY)) {
        memset(out, 0, sizeof *out);
        if ((unsigned)model > GM_MODEL_AUTO)
            snprintf(out->error, sizeof out->error, "no such model (%d)", (int)model);
        else
            snprintf(out->error, sizeof out->error,
                     "the reference was prepared for similarity only: prepare it with model "
                     "affine, homography or auto to match with %s",
                     model == GM_MODEL_AUTO ? "auto" : gm_model_name(model));
        return GM_ERR_INVALID;
    }
    int budget = gm_threads_enter(r->ix.p.threads);
    gm_status st = gm_place_match(r, model, query, out);
    gm_threads_leave(budget);
    return st;
}
