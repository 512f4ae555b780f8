/* test_matcher.c: end to end through the public API (gm_ref_prepare,
 * gm_match) on images rendered here: a procedural 400 x 400 pattern of
 * random anti-aliased ellipses, polygons and thick lines over smooth
 * gradients (fixed seed); queries are crops of it warped (bilinear) by known
 * transforms.  No image decoder is involved.
 *
 * Checked: the found transform maps the query's corners within 1 px of the
 * truth at rotations 0, 90, 180, -35 degrees and scales 0.8, 1, 1.25, at
 * scales 0.5 and 2 (the pyramid pairings), with downscaled working sizes
 * (max_side), and with the affine and homography models; flat, noise,
 * unrelated and tiny queries give GM_OK with GM_MATCH_NONE; references
 * without edges prepare and match nothing; empty images are refused; the
 * result does not depend on the thread count.
 *
 * Some tests reproduce defects found while writing them (now fixed). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gmatch.h"
#include "test_util.h"

#define PI 3.14159265358979323846

static double rng_range(double lo, double hi) { return lo + (hi - lo) * rng_unit(); }

/* ---- the procedural pattern ------------------------------------------------ */

enum { ELLIPSE, POLYGON, LINE };

typedef struct {
    int kind;
    double cx, cy, a, b, rot;  /* ellipse: centre, half axes, rotation */
    double px[6], py[6];       /* polygon (convex, counter-clockwise), n vertices */
    int n;
    double x0, y0, x1, y1, hw; /* line: ends, half width */
    double v, gx, gy;          /* grey at the centre and its gradient */
    double c, sn;              /* cos, sin of rot */
    double bx0, by0, bx1, by1; /* bounding box */
} shape;

typedef struct {
    shape s[64];
    int n;
    double bg, bgx, bgy, bgw; /* background: bg + bgx x + bgy y + a slow wave */
} pattern;

static pattern make_pattern(uint64_t seed, int nshapes, double w, double h)
{
    pattern P;
    rng_state = seed;
    P.n = nshapes;
    P.bg = rng_range(60, 190);
    P.bgx = rng_range(-0.15, 0.15);
    P.bgy = rng_range(-0.15, 0.15);
    P.bgw = rng_range(0.01, 0.03);
    for (int i = 0; i < nshapes; i++) {
        shape *s = &P.s[i];
        memset(s, 0, sizeof *s);
        s->kind = (int)(rng_next() % 3);
        s->cx = rng_range(0, w);
        s->cy = rng_range(0, h);
        s->v = rng_range(10, 245);
        s->gx = rng_range(-0.8, 0.8);
        s->gy = rng_range(-0.8, 0.8);
        if (s->kind == ELLIPSE) {
            s->a = rng_range(8, 45);
            s->b = rng_range(6, 35);
            s->rot = rng_range(0, PI);
        } else if (s->kind == POLYGON) {
            s->n = 3 + (int)(rng_next() % 4);
            double r = rng_range(12, 50), a0 = rng_range(0, 2 * PI);
            for (int k = 0; k < s->n; k++) { /* angles increasing: convex, ccw in y-down */
                double a = a0 + 2 * PI * (k + rng_range(-0.3, 0.3)) / s->n;
                double rr = r * rng_range(0.7, 1.0);
                s->px[k] = s->cx + rr * cos(a);
                s->py[k] = s->cy + rr * sin(a);
            }
        } else {
            double len = rng_range(30, 140), a = rng_range(0, PI);
            s->x0 = s->cx - len / 2 * cos(a);
            s->y0 = s->cy - len / 2 * sin(a);
            s->x1 = s->cx + len / 2 * cos(a);
            s->y1 = s->cy + len / 2 * sin(a);
            s->hw = rng_range(1.5, 5);
        }
        s->c = cos(s->rot);
        s->sn = sin(s->rot);
        double r = s->kind == ELLIPSE ? fmax(s->a, s->b) : s->kind == POLYGON ? 50 : 0;
        s->bx0 = s->cx - r;
        s->bx1 = s->cx + r;
        s->by0 = s->cy - r;
        s->by1 = s->cy + r;
        if (s->kind == LINE) {
            s->bx0 = fmin(s->x0, s->x1) - s->hw;
            s->bx1 = fmax(s->x0, s->x1) + s->hw;
            s->by0 = fmin(s->y0, s->y1) - s->hw;
            s->by1 = fmax(s->y0, s->y1) + s->hw;
        }
    }
    return P;
}

static int inside(const shape *s, double x, double y)
{
    if (x < s->bx0 || x > s->bx1 || y < s->by0 || y > s->by1)
        return 0;
    if (s->kind == ELLIPSE) {
        double dx = x - s->cx, dy = y - s->cy, c = s->c, sn = s->sn;
        double u = (c * dx + sn * dy) / s->a, v = (-sn * dx + c * dy) / s->b;
        return u * u + v * v < 1;
    }
    if (s->kind == POLYGON) {
        for (int k = 0; k < s->n; k++) {
            int j = (k + 1) % s->n;
            if ((s->px[j] - s->px[k]) * (y - s->py[k]) - (s->py[j] - s->py[k]) * (x - s->px[k]) < 0)
                return 0;
        }
        return 1;
    }
    double dx = s->x1 - s->x0, dy = s->y1 - s->y0, l2 = dx * dx + dy * dy;
    double t = ((x - s->x0) * dx + (y - s->y0) * dy) / l2;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return hypot(x - s->x0 - t * dx, y - s->y0 - t * dy) < s->hw;
}

static double pattern_at(const pattern *P, double x, double y)
{
    double v = P->bg + P->bgx * x + P->bgy * y + 25 * sin(P->bgw * x) * cos(P->bgw * 1.3 * y);
    for (int i = 0; i < P->n; i++) /* later shapes on top */
        if (inside(&P->s[i], x, y))
            v = P->s[i].v + P->s[i].gx * (x - P->s[i].cx) + P->s[i].gy * (y - P->s[i].cy);
    return v;
}

static uint8_t clamp8(double v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lrint(v)); }

/* w x h, 3 x 3 supersampled. */
static uint8_t *render_pattern(const pattern *P, int w, int h)
{
    uint8_t *im = xmalloc((size_t)w * h, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double acc = 0;
            for (int j = -1; j <= 1; j++)
                for (int i = -1; i <= 1; i++)
                    acc += pattern_at(P, x + i / 3.0, y + j / 3.0);
            im[(size_t)y * w + x] = clamp8(acc / 9);
        }
    return im;
}

/* ---- warping --------------------------------------------------------------- */

/* T maps query (x, y) to reference (T0 x + T1 y + T2, T3 x + T4 y + T5). */
static void make_T(double deg, double scale_q_per_r, double qw, double qh, double rcx, double rcy,
                   double T[6])
{
    /* the query's centre lands on (rcx, rcy); one query pixel is 1/scale
     * reference pixels, turned by deg */
    double k = 1.0 / scale_q_per_r, c = k * cos(deg * PI / 180), s = k * sin(deg * PI / 180);
    double qcx = (qw - 1) / 2.0, qcy = (qh - 1) / 2.0;
    T[0] = c;
    T[1] = -s;
    T[3] = s;
    T[4] = c;
    T[2] = rcx - (c * qcx - s * qcy);
    T[5] = rcy - (s * qcx + c * qcy);
}

/* Bilinear sample of a w x h image at (x, y), replicated borders. */
static double bilinear(const uint8_t *im, int w, int h, double x, double y)
{
    x = x < 0 ? 0 : x > w - 1 ? w - 1 : x;
    y = y < 0 ? 0 : y > h - 1 ? h - 1 : y;
    int x0 = (int)floor(x), y0 = (int)floor(y);
    int x1 = x0 + 1 < w ? x0 + 1 : x0, y1 = y0 + 1 < h ? y0 + 1 : y0;
    double fx = x - x0, fy = y - y0;
    double a = im[y0 * w + x0] * (1 - fx) + im[y0 * w + x1] * fx;
    double b = im[y1 * w + x0] * (1 - fx) + im[y1 * w + x1] * fx;
    return a * (1 - fy) + b * fy;
}

/* The query: pixel (x, y) = reference at H(x, y) (3x3, row-major),
 * bilinear; when the query is smaller than the reference (H enlarges) the
 * reference is averaged over 2 x 2 samples per query pixel so the warp does
 * not alias. */
static uint8_t *warp_h(const uint8_t *ref, int rw, int rh, const double H[9], int qw, int qh)
{
    uint8_t *q = xmalloc((size_t)qw * qh, 1);
    double k = sqrt(fabs(H[0] * H[4] - H[1] * H[3]));
    int ss = k > 1.01 ? 2 : 1;
    for (int y = 0; y < qh; y++)
        for (int x = 0; x < qw; x++) {
            double acc = 0;
            for (int j = 0; j < ss; j++)
                for (int i = 0; i < ss; i++) {
                    double px = x + (ss == 1 ? 0 : (i - 0.5) / ss), py = y + (ss == 1 ? 0 : (j - 0.5) / ss);
                    double w = H[6] * px + H[7] * py + H[8];
                    acc += bilinear(ref, rw, rh, (H[0] * px + H[1] * py + H[2]) / w,
                                    (H[3] * px + H[4] * py + H[5]) / w);
                }
            q[(size_t)y * qw + x] = clamp8(acc / (ss * ss));
        }
    return q;
}

static uint8_t *warp(const uint8_t *ref, int rw, int rh, const double T[6], int qw, int qh)
{
    const double H[9] = {T[0], T[1], T[2], T[3], T[4], T[5], 0, 0, 1};
    return warp_h(ref, rw, rh, H, qw, qh);
}

static double corner_error(const double m[6], const double T[6], int qw, int qh)
{
    static const double cx[4] = {0, 1, 1, 0}, cy[4] = {0, 0, 1, 1};
    double e = 0;
    for (int i = 0; i < 4; i++) {
        double x = cx[i] * (qw - 1), y = cy[i] * (qh - 1);
        double dx = (m[0] - T[0]) * x + (m[1] - T[1]) * y + (m[2] - T[2]);
        double dy = (m[3] - T[3]) * x + (m[4] - T[4]) * y + (m[5] - T[5]);
        e = fmax(e, hypot(dx, dy));
    }
    return e;
}

/* ---- the shared reference ----------------------------------------------------- */

#define RW 400
#define RH 400
#define SEED_PATTERN 0x6D617463ull

/* The pattern is rendered once, in the parent process (an unchecked
 * fixture: no OpenMP there, since GNU libgomp's thread pool does not survive
 * Check's fork); the reference is prepared in the test's own process, on
 * first use. */
static uint8_t *g_ref;
static gm_ref *g_prep; /* prepared with the default parameters */

static void render_ref(void)
{
    pattern P = make_pattern(SEED_PATTERN, 45, RW, RH);
    g_ref = render_pattern(&P, RW, RH);
}

static void free_ref(void)
{
    free(g_ref);
    g_ref = NULL;
}

static const gm_ref *prepared(void)
{
    if (!g_prep) {
        gm_params p = gm_params_default();
        ck_assert_int_eq(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &g_prep), GM_OK);
        ck_assert_ptr_nonnull(g_prep);
    }
    return g_prep;
}

static void unprepare_ref(void)
{
    gm_ref_free(g_prep);
    g_prep = NULL;
}

static const double ROTS[4] = {0, 90, 180, -35};
static const double SCALES[3] = {0.8, 1.0, 1.25};

/* One (rotation, scale) case: a 180 x 160 query (150 x 130 at -35 degrees,
 * to stay inside the reference at scale 0.8) centred on (205, 195). */
static void match_case(int ri, int si)
{
    double deg = ROTS[ri], sc = SCALES[si], T[6];
    int qw = deg == -35 ? 150 : 180, qh = deg == -35 ? 130 : 160;
    make_T(deg, sc, qw, qh, 205, 195, T);
    uint8_t *q = warp(g_ref, RW, RH, T, qw, qh);
    gm_result res;
    EXPECT_EQ(gm_match(prepared(), (gm_view){q, qw, qh, qw}, &res), GM_OK);
    if (res.status != GM_MATCH_FOUND)
        ck_abort_msg("rotation %g scale %g: no match (confidence %.3f, votes %d)", deg, sc,
                     res.confidence, res.votes);
    double e = corner_error(res.m, T, qw, qh);
    if (!(e < 1.0))
        ck_abort_msg("rotation %g scale %g: corner error %.3f px (confidence %.3f, scale %.4f, "
                     "angle %.3f)",
                     deg, sc, e, res.confidence, res.scale, res.angle_deg);
    /* the derived fields agree with the matrix and the truth */
    EXPECT(fabs(res.scale - 1.0 / sc) < 0.01);
    double da = fmod(fabs(res.angle_deg - deg) + 360, 360);
    EXPECT(fmin(da, 360 - da) < 0.5);
    EXPECT(fabs(res.scale - hypot(res.m[0], res.m[3])) < 1e-9);
    EXPECT(res.confidence >= gm_params_default().min_confidence && res.confidence <= 1);
    EXPECT(res.votes > 0 && res.inliers > 0);
    EXPECT(res.time.total >= 0);
    /* a similarity: h is [m; 0 0 1] */
    EXPECT_EQ(res.model, GM_MODEL_SIMILARITY);
    for (int i = 0; i < 6; i++)
        EXPECT(res.h[i] == res.m[i]);
    EXPECT(res.h[6] == 0 && res.h[7] == 0 && res.h[8] == 1);
    EXPECT(fabs(res.m[0] - res.m[4]) < 1e-9 && fabs(res.m[1] + res.m[3]) < 1e-9);
    free(q);
}

START_TEST(test_match_similarity)
{
    /* _i runs 0..3: the rotation; every scale */
    for (int si = 0; si < 3; si++)
        match_case(_i, si);
}
END_TEST

/* Scales outside one pairing's range: a query at twice the reference's
 * resolution (scale 2: the pyramid pairing query level 1 / reference level
 * 0) and at half of it (0.5: query level 0 / reference level 1). */
START_TEST(test_match_pyramid)
{
    static const struct {
        double deg, scale;
        int qw, qh;
    } cases[] = {{0, 2.0, 200, 180}, {120, 2.0, 180, 180}, {0, 0.5, 170, 150}, {25, 0.5, 130, 120}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double T[6];
        make_T(cases[c].deg, cases[c].scale, cases[c].qw, cases[c].qh, 200, 200, T);
        uint8_t *q = warp(g_ref, RW, RH, T, cases[c].qw, cases[c].qh);
        gm_result res;
        EXPECT_EQ(gm_match(prepared(), (gm_view){q, cases[c].qw, cases[c].qh, cases[c].qw}, &res), GM_OK);
        if (res.status != GM_MATCH_FOUND)
            ck_abort_msg("rotation %g scale %g: no match (confidence %.3f)", cases[c].deg,
                         cases[c].scale, res.confidence);
        double e = corner_error(res.m, T, cases[c].qw, cases[c].qh);
        if (!(e < 1.0))
            ck_abort_msg("rotation %g scale %g: corner error %.3f px", cases[c].deg, cases[c].scale, e);
        free(q);
    }
}
END_TEST

/* A crop taken straight out of the reference's memory (stride 400, no
 * resampling): an integer translation. */
START_TEST(test_match_crop_view)
{
    int x0 = 137, y0 = 91, qw = 170, qh = 150;
    gm_view v = {g_ref + (size_t)y0 * RW + x0, qw, qh, RW};
    gm_result res;
    EXPECT_EQ(gm_match(prepared(), v, &res), GM_OK);
    EXPECT_EQ(res.status, GM_MATCH_FOUND);
    const double T[6] = {1, 0, x0, 0, 1, y0};
    double e = corner_error(res.m, T, qw, qh);
    if (!(e < 0.5))
        ck_abort_msg("crop: corner error %.3f px", e);
}
END_TEST

/* Working sizes below the source sizes (max_side 200): the reference is
 * worked at half size (factor 2), the query at full size (a query at half
 * the reference's resolution) or at a third (factor 3, 320 x 280 at the
 * reference's resolution); the result is in source pixels of both, within
 * half a source pixel (measured: under 0.05). */
START_TEST(test_match_downscaled)
{
    gm_params p = gm_params_default();
    p.max_side = 200;
    gm_ref *r;
    EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
    static const struct {
        double deg, scale;
        int qw, qh;
    } cases[] = {{30, 0.5, 160, 140}, {-20, 1.0, 320, 280}, {180, 0.9, 250, 240}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        double T[6];
        make_T(cases[c].deg, cases[c].scale, cases[c].qw, cases[c].qh, 200, 200, T);
        uint8_t *q = warp(g_ref, RW, RH, T, cases[c].qw, cases[c].qh);
        gm_result res;
        EXPECT_EQ(gm_match(r, (gm_view){q, cases[c].qw, cases[c].qh, cases[c].qw}, &res), GM_OK);
        if (res.status != GM_MATCH_FOUND)
            ck_abort_msg("downscaled case %zu: no match (confidence %.3f)", c, res.confidence);
        double e = corner_error(res.m, T, cases[c].qw, cases[c].qh);
        if (!(e < 0.5))
            ck_abort_msg("downscaled case %zu: corner error %.3f px", c, e);
        free(q);
    }
    gm_ref_free(r);
}
END_TEST

/* The other models: a query under an affine map with shear and unequal
 * scales, and one under a mild perspective; with the matching model the
 * reported h maps the query's corners within 1 px of the truth (the search
 * itself is for a similarity, refined to the model at the end; as a
 * similarity these are 8 and 14 px off). */
START_TEST(test_match_models)
{
    static const struct {
        gm_model model;
        double H[9];
    } cases[] = {
        {GM_MODEL_AFFINE, {1.03, 0.04, 90, -0.02, 0.97, 110, 0, 0, 1}},
        {GM_MODEL_HOMOGRAPHY, {0.95, -0.1, 120, 0.12, 1.0, 80, 2e-4, -1.5e-4, 1}},
    };
    const int qw = 180, qh = 160;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        gm_params p = gm_params_default();
        p.model = cases[c].model;
        gm_ref *r;
        EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
        uint8_t *q = warp_h(g_ref, RW, RH, cases[c].H, qw, qh);
        gm_result res;
        EXPECT_EQ(gm_match(r, (gm_view){q, qw, qh, qw}, &res), GM_OK);
        if (res.status != GM_MATCH_FOUND)
            ck_abort_msg("model %d: no match (confidence %.3f)", (int)cases[c].model, res.confidence);
        EXPECT_EQ(res.model, cases[c].model);
        EXPECT(res.confidence > 0.8); /* measured: 0.99, 0.97 */
        EXPECT(fabs(res.h[8] - 1) < 1e-12);
        double e = h_corner_gap(res.h, cases[c].H, qw, qh);
        if (!(e < 1.0))
            ck_abort_msg("model %d: corner error %.3f px", (int)cases[c].model, e);
        if (cases[c].model == GM_MODEL_AFFINE)
            EXPECT(res.h[6] == 0 && res.h[7] == 0);
        for (int i = 0; i < 6; i++) /* m: the affine part of h */
            EXPECT(res.m[i] == res.h[i]);
        free(q);
        gm_ref_free(r);
    }
}
END_TEST

/* A stronger affine (shear 0.12, scales 1.08 / 0.93): the affine refinement
 * lands within 0.02 px (strict confidence 0.99), but gm_match scales that
 * confidence by a distinctiveness ratio taken from the similarity stage
 * (best 0.37, a second similarity 0.32 elsewhere: factor 0.27), reports
 * 0.27 and GM_MATCH_NONE. */
START_TEST(test_match_affine_strong)
{
    const double H[9] = {1.08, 0.12, 90, -0.05, 0.93, 110, 0, 0, 1};
    gm_params p = gm_params_default();
    p.model = GM_MODEL_AFFINE;
    gm_ref *r;
    EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
    uint8_t *q = warp_h(g_ref, RW, RH, H, 180, 160);
    gm_result res;
    EXPECT_EQ(gm_match(r, (gm_view){q, 180, 160, 180}, &res), GM_OK);
    double e = h_corner_gap(res.h, H, 180, 160);
    if (res.status != GM_MATCH_FOUND)
        ck_abort_msg("no match: confidence %.3f, h %.3f px from the truth", res.confidence, e);
    EXPECT(e < 1.0);
    free(q);
    gm_ref_free(r);
}
END_TEST

/* A tilted view (the far side at 0.62 of the near one's scale): no
 * similarity describes it within 3 px.  Under every model the answer is
 * right within 3 px or "none", never off; under homography and auto it must
 * be found.  (At a far side of 0.53, g = 0.0035, this 400-pixel scene gives
 * "none" under homography: the limit this test sits below.) */
START_TEST(test_match_strong_tilt)
{
    /* query (x, y) -> reference: a rotation by 20 degrees about (200, 200)
     * after a perspective that shrinks the rows as y grows */
    const double c = cos(0.349066), s = sin(0.349066), g = 0.003; /* 20 degrees */
    const double H[9] = {c, -s, 80 + 60 * s, s, c, 60, 0, g, 1};
    const int qw = 240, qh = 200;
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_HOMOGRAPHY, GM_MODEL_AUTO};
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        gm_params p = gm_params_default();
        p.model = models[k];
        gm_ref *r;
        EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
        uint8_t *q = warp_h(g_ref, RW, RH, H, qw, qh);
        gm_result res;
        EXPECT_EQ(gm_match(r, (gm_view){q, qw, qh, qw}, &res), GM_OK);
        double e = h_corner_gap(res.h, H, qw, qh);
        if (res.status == GM_MATCH_FOUND && !(e < 3.0))
            ck_abort_msg("model %d: a match %.1f px off (confidence %.3f)", (int)models[k], e,
                         res.confidence);
        if (models[k] != GM_MODEL_SIMILARITY && res.status != GM_MATCH_FOUND)
            ck_abort_msg("model %d: no match (confidence %.3f, %.1f px off)", (int)models[k],
                         res.confidence, e);
        free(q);
        gm_ref_free(r);
    }
}
END_TEST

/* gm_match_model: one reference prepared for auto answers each model as a
 * reference prepared for that model does (the same status, model, matrix,
 * votes and confidence: the preparation differs only by the triangles'
 * tables, which every model but similarity builds); a reference prepared
 * for similarity refuses the others with a message. */
START_TEST(test_match_per_call_model)
{
    const double c = cos(0.349066), s = sin(0.349066), g = 0.003;
    const double H[9] = {c, -s, 80 + 60 * s, s, c, 60, 0, g, 1};
    const int qw = 240, qh = 200;
    uint8_t *q = warp_h(g_ref, RW, RH, H, qw, qh);
    gm_view qv = {q, qw, qh, qw};
    gm_params pa = gm_params_default();
    pa.model = GM_MODEL_AUTO;
    gm_ref *ra;
    EXPECT_EQ(gm_ref_prepare(&pa, (gm_view){g_ref, RW, RH, RW}, &ra), GM_OK);
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY,
                                      GM_MODEL_AUTO};
    int found = 0;
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        gm_params p = gm_params_default();
        p.model = models[k];
        gm_ref *r;
        EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
        gm_result want, got;
        EXPECT_EQ(gm_match(r, qv, &want), GM_OK);
        EXPECT_EQ(gm_match_model(ra, qv, models[k], &got), GM_OK);
        EXPECT_EQ(got.status, want.status);
        EXPECT_EQ(got.model, want.model);
        EXPECT_EQ(got.votes, want.votes);
        EXPECT(got.confidence == want.confidence);
        for (int i = 0; i < 9; i++)
            EXPECT(got.h[i] == want.h[i]);
        found += got.status == GM_MATCH_FOUND;
        gm_ref_free(r);
    }
    EXPECT(found >= 2); /* homography and auto find this view */
    gm_params ps = gm_params_default();
    ps.model = GM_MODEL_SIMILARITY; /* prepared without triangles */
    gm_ref *rs;
    EXPECT_EQ(gm_ref_prepare(&ps, (gm_view){g_ref, RW, RH, RW}, &rs), GM_OK);
    gm_result res;
    EXPECT_EQ(gm_match_model(rs, qv, GM_MODEL_HOMOGRAPHY, &res), GM_ERR_INVALID);
    EXPECT(strstr(res.error, "similarity only") != NULL);
    EXPECT_EQ(gm_match_model(rs, qv, (gm_model)7, &res), GM_ERR_INVALID);
    EXPECT_EQ(gm_match_model(rs, qv, GM_MODEL_SIMILARITY, &res), GM_OK);
    gm_ref_free(rs);
    gm_ref_free(ra);
    free(q);
}
END_TEST

/* ---- no match ---------------------------------------------------------------- */

static void expect_none(gm_view v, const char *what)
{
    gm_result res;
    memset(&res, 0x55, sizeof res);
    gm_status st = gm_match(prepared(), v, &res);
    if (st != GM_OK)
        ck_abort_msg("%s: status %d (%s)", what, st, gm_status_str(st));
    if (res.status != GM_MATCH_NONE)
        ck_abort_msg("%s: a match (confidence %.3f)", what, res.confidence);
    EXPECT(res.confidence < gm_params_default().min_confidence);
    EXPECT(res.confidence >= 0);
}

START_TEST(test_flat_query)
{
    uint8_t *q = xmalloc(200 * 180, 1);
    memset(q, 128, 200 * 180);
    expect_none((gm_view){q, 200, 180, 200}, "flat");
    memset(q, 0, 200 * 180);
    expect_none((gm_view){q, 200, 180, 200}, "black");
    free(q);
}
END_TEST

/* Another pattern (other seed): nothing of it is in the reference. */
START_TEST(test_unrelated_query)
{
    for (uint64_t s = 1; s <= 2; s++) {
        pattern P = make_pattern(SEED_PATTERN ^ (s * 0x1234567ull), 25, 180, 160);
        uint8_t *q = render_pattern(&P, 180, 160);
        expect_none((gm_view){q, 180, 160, 180}, "unrelated pattern");
        free(q);
    }
    /* noise */
    rng_state = 0x401;
    uint8_t *q = xmalloc(160 * 160, 1);
    for (int i = 0; i < 160 * 160; i++)
        q[i] = (uint8_t)rng_next();
    expect_none((gm_view){q, 160, 160, 160}, "noise");
    free(q);
}
END_TEST

/* A chessboard: a crop of it fits every square alike, so the answer would
 * be a guess; the distinctiveness test must turn it into "none" while the
 * undamaged similarity score of the best placement is near 1. */
START_TEST(test_periodic_ambiguous)
{
    const int rw = 360, rh = 360, sq = 30;
    uint8_t *ref = xmalloc((size_t)rw * rh, 1);
    for (int y = 0; y < rh; y++)
        for (int x = 0; x < rw; x++)
            ref[y * rw + x] = ((x / sq + y / sq) & 1) ? 200 : 50;
    gm_params p = gm_params_default();
    gm_ref *r = NULL;
    EXPECT_EQ(gm_ref_prepare(&p, (gm_view){ref, rw, rh, rw}, &r), GM_OK);
    /* a crop with a few squares in it, offset from the square grid */
    const int qw = 140, qh = 120, ox = 97, oy = 71;
    uint8_t *q = xmalloc((size_t)qw * qh, 1);
    for (int y = 0; y < qh; y++)
        memcpy(q + (size_t)y * qw, ref + (size_t)(y + oy) * rw + ox, (size_t)qw);
    gm_result res;
    EXPECT_EQ(gm_match(r, (gm_view){q, qw, qh, qw}, &res), GM_OK);
    if (res.status != GM_MATCH_NONE)
        ck_abort_msg("chessboard crop: a match at confidence %.3f", res.confidence);
    gm_ref_free(r);
    free(q);
    free(ref);
}
END_TEST

/* ref prepared for model and q matched in it, the handle freed. */
static gm_result match_as(const uint8_t *ref, int rw, int rh, const uint8_t *q, int qw, int qh,
                          gm_model model)
{
    gm_params p = gm_params_default();
    p.model = model;
    gm_ref *r = NULL;
    gm_result res;
    EXPECT_EQ(gm_ref_prepare(&p, (gm_view){ref, rw, rh, rw}, &r), GM_OK);
    EXPECT_EQ(gm_match(r, (gm_view){q, qw, qh, qw}, &res), GM_OK);
    gm_ref_free(r);
    return res;
}

/* Two copies of one drawing side by side (the second a little brighter),
 * and a tilted view of the first: both places explain the query's edges
 * alike, so any answer would be a guess and must be "none" under every
 * model.  Under auto and homography the copy's similarity explains half of
 * what the answer's homography does, so the distinctiveness test must
 * compare the copy refined under the answer's model (a tilted view of an
 * illustration's repeated shapes came back 2,500 px off at 1.0). */
START_TEST(test_repeat_tilted_ambiguous)
{
    const int tw = 220, rw = 480, rh = 240;
    pattern P = make_pattern(29, 40, tw, tw);
    uint8_t *tile = render_pattern(&P, tw, tw);
    uint8_t *ref = xmalloc((size_t)rw * rh, 1);
    for (int y = 0; y < rh; y++)
        for (int x = 0; x < rw; x++) {
            int tx = x < rw / 2 ? x - 10 : x - rw / 2 - 10, ty = y - 10;
            double v = tx >= 0 && tx < tw && ty >= 0 && ty < tw ? tile[ty * tw + tx] : 128;
            ref[(size_t)y * rw + x] = clamp8(x < rw / 2 ? v : 12 + 0.95 * v);
        }
    /* turned 15 degrees, the far rows shrunk to 74% (found by the old test at
     * 0.986 under homography; at 58% nothing finds it) */
    const double c = cos(0.261799), s = sin(0.261799), g = 0.003;
    const double H[9] = {c, -s, 90, s, c, 30, 0, g, 1};
    const int qw = 140, qh = 120;
    uint8_t *q = warp_h(ref, rw, rh, H, qw, qh);
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_HOMOGRAPHY, GM_MODEL_AUTO};
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        gm_result res = match_as(ref, rw, rh, q, qw, qh, models[k]);
        if (res.status != GM_MATCH_NONE)
            ck_abort_msg("model %d: a match %.1f px from the first copy at confidence %.3f",
                         (int)models[k], h_corner_gap(res.h, H, qw, qh), res.confidence);
        /* and it says why: the second copy (a similarity fits the tilted
         * view only in part: weak) */
        ck_assert_msg(res.reason == (models[k] == GM_MODEL_SIMILARITY ? GM_REASON_WEAK
                                                                      : GM_REASON_AMBIGUOUS),
                      "model %d: none, reason %s", (int)models[k], gm_reason_name(res.reason));
    }
    free(q);
    free(ref);
    free(tile);
}
END_TEST

/* Planks: vertical stripes of random widths and greys with a grain drawn
 * out along them (noise blurred 1.5 px across, 40 px along), and a noisy
 * crop.  The stripes' edges pin the query across the planks and not along
 * them; only the faint grain does, and an affine that slides and shears the
 * query along the planks explains nearly as much (it came back 15-30 px off
 * at 0.55-0.86 under auto).  Under every model: within 3 px or "none". */
static void blur_1d(const float *in, float *out, int n, int step, double sigma)
{
    int r = (int)ceil(3 * sigma);
    for (int i = 0; i < n; i++) {
        double acc = 0, wsum = 0;
        for (int k = -r; k <= r; k++) {
            int j = i + k < 0 ? 0 : i + k >= n ? n - 1 : i + k;
            double wk = exp(-0.5 * k * k / (sigma * sigma));
            acc += wk * in[(size_t)j * step], wsum += wk;
        }
        out[(size_t)i * step] = (float)(acc / wsum);
    }
}

START_TEST(test_planks_slide)
{
    const int rw = 640, rh = 960, qw = 220, qh = 220, ox = 200, oy = 300;
    for (uint64_t seed = 5; seed <= 7; seed++) {
        rng_state = seed;
        float *grain = xmalloc((size_t)rw * rh, sizeof *grain), *tmp = xmalloc((size_t)rw * rh, sizeof *tmp);
        for (size_t i = 0; i < (size_t)rw * rh; i++) /* roughly normal: a sum of four uniforms */
            grain[i] = (float)((rng_unit() + rng_unit() + rng_unit() + rng_unit() - 2.0) * 1.73);
        for (int y = 0; y < rh; y++)
            blur_1d(grain + (size_t)y * rw, tmp + (size_t)y * rw, rw, 1, 1.5);
        for (int x = 0; x < rw; x++)
            blur_1d(tmp + x, grain + x, rh, rw, 40.0);
        double plank[640];
        for (int x = 0; x < rw;) {
            int wdt = 20 + (int)(rng_next() % 41);
            double v = rng_range(60, 200);
            for (int k = 0; k < wdt && x < rw; k++)
                plank[x++] = v;
        }
        uint8_t *ref = xmalloc((size_t)rw * rh, 1), *q = xmalloc((size_t)qw * qh, 1);
        for (int y = 0; y < rh; y++)
            for (int x = 0; x < rw; x++)
                ref[(size_t)y * rw + x] = clamp8(plank[x] + 300 * grain[(size_t)y * rw + x]);
        for (int y = 0; y < qh; y++)
            for (int x = 0; x < qw; x++)
                q[(size_t)y * qw + x] = clamp8(ref[(size_t)(y + oy) * rw + x + ox] +
                                               4 * 1.73 * (rng_unit() + rng_unit() + rng_unit() + rng_unit() - 2.0));
        const double H[9] = {1, 0, ox, 0, 1, oy, 0, 0, 1};
        static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY,
                                          GM_MODEL_AUTO};
        for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
            gm_result res = match_as(ref, rw, rh, q, qw, qh, models[k]);
            double e = h_corner_gap(res.h, H, qw, qh);
            if (res.status == GM_MATCH_FOUND && !(e < 3.0))
                ck_abort_msg("seed %d model %d: a match %.1f px off at confidence %.3f", (int)seed,
                             (int)models[k], e, res.confidence);
            /* a match within its bound; a none for the planks' slide or
             * what the noise leaves, not for want of a candidate */
            if (res.status == GM_MATCH_FOUND && !(e <= res.uncertainty_px))
                ck_abort_msg("seed %d model %d: %.2f px off, beyond its uncertainty %.2f px",
                             (int)seed, (int)models[k], e, res.uncertainty_px);
            if (res.status == GM_MATCH_NONE && res.reason != GM_REASON_AMBIGUOUS &&
                res.reason != GM_REASON_UNCERTAIN && res.reason != GM_REASON_WEAK)
                ck_abort_msg("seed %d model %d: none, reason %s", (int)seed, (int)models[k],
                             gm_reason_name(res.reason));
        }
        free(grain);
        free(tmp);
        free(ref);
        free(q);
    }
}
END_TEST

START_TEST(test_tiny_queries)
{
    uint8_t px[1] = {200};
    expect_none((gm_view){px, 1, 1, 1}, "1x1");
    uint8_t five[25];
    for (int i = 0; i < 25; i++)
        five[i] = (uint8_t)(i % 2 ? 255 : 0);
    expect_none((gm_view){five, 5, 5, 5}, "5x5");
    /* a 5 x 5 crop of the reference itself */
    expect_none((gm_view){g_ref + 200 * RW + 200, 5, 5, RW}, "5x5 crop");
    /* one row, one column */
    expect_none((gm_view){g_ref + 100 * RW, RW, 1, RW}, "1 row");
    expect_none((gm_view){g_ref + 100, 1, RH, RW}, "1 column");
}
END_TEST

START_TEST(test_empty_query)
{
    gm_result res;
    uint8_t px[4] = {0};
    EXPECT_EQ(gm_match(prepared(), (gm_view){px, 0, 5, 5}, &res), GM_ERR_EMPTY);
    EXPECT_EQ(res.status, GM_MATCH_NONE);
    EXPECT_EQ(gm_match(prepared(), (gm_view){px, 5, 0, 5}, &res), GM_ERR_EMPTY);
    EXPECT_EQ(gm_match(prepared(), (gm_view){NULL, 5, 5, 5}, &res), GM_ERR_EMPTY);
    EXPECT_EQ(res.status, GM_MATCH_NONE);
}
END_TEST

/* Where a preparation's time went (gm_ref_prep_timing): every part at
 * least 0, the parts within the build's total, the total within the
 * preparation's time, the stages every reference runs above 0; a failed
 * preparation's all 0. */
START_TEST(test_prep_timing)
{
    gm_prep_timing t;
    gm_ref_prep_timing(prepared(), &t);
    const double parts[] = {t.sides, t.maps, t.map_pixels, t.bases, t.tables, t.tri_draw,
                            t.tri_tables, t.selfmaps};
    double sum = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        EXPECT(parts[i] >= 0);
        sum += parts[i];
    }
    EXPECT(t.sides > 0 && t.maps > 0 && t.map_pixels > 0 && t.tables > 0);
    EXPECT(t.tri_tables > 0); /* the default model, auto, tables triangles */
    EXPECT(sum <= t.total * 1.0001 + 1e-3);
    EXPECT(t.total <= gm_ref_time_ms(prepared()) * 1.0001 + 1e-3);
    gm_params p = gm_params_default();
    p.max_side = 1; /* out of range */
    gm_ref *r = NULL;
    EXPECT(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r) != GM_OK);
    memset(&t, 0xff, sizeof t);
    gm_ref_prep_timing(r, &t);
    EXPECT(t.sides == 0 && t.tables == 0 && t.total == 0);
    gm_ref_free(r);
    gm_ref_prep_timing(NULL, &t);
    EXPECT(t.total == 0);
}
END_TEST

/* References without anything to match: flat, tiny, empty. */
START_TEST(test_degenerate_references)
{
    gm_params p = gm_params_default();
    uint8_t *flat = xmalloc(300 * 300, 1);
    memset(flat, 77, 300 * 300);
    gm_ref *r = NULL;
    gm_status st = gm_ref_prepare(&p, (gm_view){flat, 300, 300, 300}, &r);
    /* a flat reference prepares (nothing to hash) and matches nothing */
    EXPECT_EQ(st, GM_OK);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_nonnull(gm_ref_error(r));
    EXPECT(gm_ref_time_ms(r) >= 0);
    gm_result res;
    double T[6];
    make_T(0, 1, 150, 150, 200, 200, T);
    uint8_t *q = warp(g_ref, RW, RH, T, 150, 150);
    EXPECT_EQ(gm_match(r, (gm_view){q, 150, 150, 150}, &res), GM_OK);
    EXPECT_EQ(res.status, GM_MATCH_NONE);
    EXPECT_EQ(gm_match(r, (gm_view){flat, 150, 150, 300}, &res), GM_OK);
    EXPECT_EQ(res.status, GM_MATCH_NONE);
    gm_ref_free(r);
    /* 1 x 1 and 5 x 5 references */
    for (int s = 1; s <= 5; s += 4) {
        r = NULL;
        EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref + 50 * RW + 50, s, s, RW}, &r), GM_OK);
        ck_assert_ptr_nonnull(r);
        EXPECT_EQ(gm_match(r, (gm_view){q, 150, 150, 150}, &res), GM_OK);
        EXPECT_EQ(res.status, GM_MATCH_NONE);
        gm_ref_free(r);
    }
    /* empty: refused; the handle says why, matches nothing, and is freed */
    gm_view empty[2] = {{flat, 0, 0, 0}, {NULL, 10, 10, 10}};
    for (int k = 0; k < 2; k++) {
        r = (gm_ref *)&p; /* garbage that must be overwritten */
        EXPECT_EQ(gm_ref_prepare(&p, empty[k], &r), GM_ERR_EMPTY);
        ck_assert_ptr_nonnull(r);
        ck_assert_str_eq(gm_ref_error(r), "empty image");
        EXPECT_EQ(gm_match(r, (gm_view){q, 150, 150, 150}, &res), GM_ERR_INVALID);
        EXPECT_EQ(res.status, GM_MATCH_NONE);
        ck_assert_str_eq(res.error, "the reference was not prepared: empty image");
        EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_AUTO);
        gm_ref_free(r);
    }
    gm_ref_free(NULL); /* harmless */
    ck_assert_ptr_nonnull(gm_ref_error(NULL));
    free(q);
    free(flat);
}
END_TEST

/* ---- determinism ------------------------------------------------------------ */

static void result_fields_equal(const gm_result *a, const gm_result *b)
{
    EXPECT_EQ(a->status, b->status);
    EXPECT(memcmp(a->m, b->m, sizeof a->m) == 0);
    EXPECT(memcmp(&a->scale, &b->scale, sizeof a->scale) == 0);
    EXPECT(memcmp(&a->angle_deg, &b->angle_deg, sizeof a->angle_deg) == 0);
    EXPECT(memcmp(&a->confidence, &b->confidence, sizeof a->confidence) == 0);
    EXPECT_EQ(a->votes, b->votes);
    EXPECT_EQ(a->inliers, b->inliers);
}

/* Same seed, same result with 1 and with 2 threads, bit for bit; the
 * same call twice gives the same result too. */
START_TEST(test_threads_deterministic)
{
    double T[6];
    make_T(-35, 1.0, 150, 130, 205, 195, T);
    uint8_t *q = warp(g_ref, RW, RH, T, 150, 130);
    gm_view qv = {q, 150, 130, 150};
    gm_result r1, r2, r3, r4;
    for (uint64_t seed = 3; seed <= 4; seed++) {
        gm_params p = gm_params_default();
        p.seed = seed;
        p.threads = 1;
        gm_ref *a, *b;
        EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &a), GM_OK);
        EXPECT_EQ(gm_match(a, qv, &r1), GM_OK);
        EXPECT_EQ(gm_match(a, qv, &r3), GM_OK);
        p.threads = 2;
        EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &b), GM_OK);
        EXPECT_EQ(gm_match(b, qv, &r2), GM_OK);
        /* the first reference again, after the second's preparation: each
         * keeps its own thread count */
        EXPECT_EQ(gm_match(a, qv, &r4), GM_OK);
        EXPECT_EQ(r1.status, GM_MATCH_FOUND);
        result_fields_equal(&r1, &r2);
        result_fields_equal(&r1, &r3);
        result_fields_equal(&r1, &r4);
        gm_ref_free(a);
        gm_ref_free(b);
    }
#ifdef _OPENMP
    omp_set_num_threads(omp_get_num_procs());
#endif
    free(q);
}
END_TEST

/* The library leaves the application's OpenMP settings as it found them:
 * the parameters' threads hold for the length of a call (num_threads
 * clauses), never through omp_set_num_threads. */
START_TEST(test_threads_leave_caller_alone)
{
#ifdef _OPENMP
    omp_set_num_threads(3);
    double T[6];
    make_T(20, 1.0, 150, 130, 205, 195, T);
    uint8_t *q = warp(g_ref, RW, RH, T, 150, 130);
    gm_view qv = {q, 150, 130, 150};
    for (int threads = 0; threads <= 2; threads++) {
        gm_params p = gm_params_default();
        p.device = GM_DEVICE_CPU;
        p.threads = threads;
        gm_ref *a;
        gm_result r;
        EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &a), GM_OK);
        EXPECT_EQ(omp_get_max_threads(), 3);
        EXPECT_EQ(gm_match(a, qv, &r), GM_OK);
        EXPECT_EQ(r.status, GM_MATCH_FOUND);
        EXPECT_EQ(omp_get_max_threads(), 3);
        char want[64];
        snprintf(want, sizeof want, "cpu, %d threads", threads > 0 ? threads : 3);
        if (strcmp(gm_ref_device(a), want) != 0)
            ck_abort_msg("device '%s', expected '%s'", gm_ref_device(a), want);
        gm_ref_free(a);
    }
    omp_set_num_threads(omp_get_num_procs());
    free(q);
#endif
}
END_TEST

/* gm_set_thread_budget: the calling thread's calls use that many threads
 * (the reference's description says so), the previous setting comes back,
 * 0 gives each reference its own again, and the results do not change. */
START_TEST(test_thread_budget)
{
    double T[6];
    make_T(35, 1.1, 150, 130, 205, 195, T);
    uint8_t *q = warp(g_ref, RW, RH, T, 150, 130);
    gm_view qv = {q, 150, 130, 150};
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CPU;
    p.threads = 2;
    gm_ref *a;
    gm_result free_run, one;
    EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &a), GM_OK);
    EXPECT_EQ(gm_match(a, qv, &free_run), GM_OK);
    EXPECT_EQ(gm_set_thread_budget(1), 0);
    EXPECT_EQ(gm_match(a, qv, &one), GM_OK);
    EXPECT_EQ(gm_set_thread_budget(0), 1);
    EXPECT_EQ(free_run.status, GM_MATCH_FOUND);
    EXPECT_EQ(one.status, free_run.status);
    EXPECT_EQ(one.votes, free_run.votes);
    EXPECT(memcmp(one.h, free_run.h, sizeof one.h) == 0);
    EXPECT(one.confidence == free_run.confidence);
    gm_ref_free(a);
    EXPECT_EQ(gm_set_thread_budget(3), 0);
    EXPECT_EQ(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &a), GM_OK);
    if (strcmp(gm_ref_device(a), "cpu, 3 threads") != 0) /* the budget, not p.threads */
        ck_abort_msg("device '%s' under a budget of 3", gm_ref_device(a));
    EXPECT_EQ(gm_set_thread_budget(0), 3);
    gm_ref_free(a);
    free(q);
}
END_TEST

/* Every parameter outside its range (gmatch.h) is refused with its name in
 * the message, before anything is prepared; the edges of a range pass. */
START_TEST(test_params_ranges)
{
    gm_params base = gm_params_default();
    base.device = GM_DEVICE_CPU;
    struct {
        const char *name;
        gm_params p;
    } bad[24];
    int n = 0;
#define BAD(field, value)                                                        \
    do {                                                                         \
        bad[n].name = #field;                                                    \
        bad[n].p = base;                                                         \
        bad[n].p.field = value;                                                  \
        n++;                                                                     \
    } while (0)
    BAD(threads, -1);
    BAD(threads, GM_MAX_THREADS + 1);
    BAD(device, (gm_device)7);
    BAD(model, (gm_model)-1);
    BAD(min_confidence, -0.01);
    BAD(min_confidence, 1.5);
    BAD(min_confidence, NAN);
    BAD(max_side, GM_MIN_MAX_SIDE - 1);
    BAD(max_side, GM_MAX_MAX_SIDE + 1);
    BAD(ref_points, 0);
    BAD(query_points, GM_MAX_POINTS + 1);
    BAD(basis_points, GM_MAX_BASIS_POINTS + 1);
    BAD(basis_points, 2);
    BAD(ref_basis_prob, 0.0);
    BAD(ref_basis_prob, 1.01);
    BAD(query_bases, 0);
    BAD(top_k, 0);
    BAD(top_k, GM_MAX_TOP_K + 1);
#undef BAD
    for (int i = 0; i < n; i++) {
        gm_ref *r = NULL;
        EXPECT_EQ(gm_ref_prepare(&bad[i].p, (gm_view){g_ref, RW, RH, RW}, &r), GM_ERR_INVALID);
        ck_assert_ptr_nonnull(r);
        if (!strstr(gm_ref_error(r), bad[i].name))
            ck_abort_msg("%s: message '%s'", bad[i].name, gm_ref_error(r));
        gm_ref_free(r);
    }
    /* the edges of the ranges are accepted */
    gm_params edge = base;
    edge.min_confidence = 1.0;
    edge.top_k = GM_MAX_TOP_K;
    edge.ref_basis_prob = 1.0;
    edge.max_side = GM_MIN_MAX_SIDE;
    gm_ref *r = NULL;
    EXPECT_EQ(gm_ref_prepare(&edge, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU);
    EXPECT(gm_backend_available(GM_DEVICE_CPU) && gm_backend_available(GM_DEVICE_AUTO));
    gm_ref_free(r);
}
END_TEST

/* GM_DEVICE_AUTO begins on the CPU and says so; gm_ref_expect moves it to
 * an accelerator when the build has one and a device works (the GPU
 * machine), else leaves it on the CPU saying why (a CUDA build without a
 * GPU) or does nothing (a build with the CPU alone); the answers stay. */
START_TEST(test_auto_warm)
{
    gm_params p = gm_params_default();
    ck_assert_int_eq(p.device, GM_DEVICE_AUTO);
    gm_ref *r = NULL;
    ck_assert_int_eq(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
    if (gm_ref_backend(r) != GM_DEVICE_CPU) { /* an accelerator runs in this process already
                                                 (an earlier test's reference moved): auto
                                                 prepares there at once */
        EXPECT(!gm_ref_starting(r) && gm_ref_gpus(r) == 1);
        gm_ref_free(r);
        return;
    }
    EXPECT_EQ(gm_ref_gpus(r), 0);
    EXPECT_EQ(gm_ref_gpu(r, 0), -1);
    EXPECT_EQ(gm_ref_gpu(NULL, 0), -1);
    size_t avail = 1, total = 1;
    EXPECT_EQ(gm_device_memory(GM_DEVICE_CPU, 0, &avail, &total), GM_ERR_UNSUPPORTED);
    EXPECT_EQ(gm_device_memory(GM_DEVICE_AUTO, 0, &avail, &total), GM_ERR_UNSUPPORTED);
    EXPECT_EQ(gm_device_memory(GM_DEVICE_CUDA, -1, &avail, &total), GM_ERR_INVALID);
    EXPECT_EQ(gm_device_memory(GM_DEVICE_CUDA, 0, NULL, &total), GM_ERR_INVALID);
    EXPECT_EQ(gm_device_memory((gm_device)7, 0, &avail, &total), GM_ERR_INVALID);
    EXPECT(!gm_ref_starting(r));
    if (!strstr(gm_ref_device(r), "auto"))
        ck_abort_msg("device under auto: %s", gm_ref_device(r));
    double T[6];
    make_T(90, 1.0, 180, 160, 205, 195, T);
    uint8_t *q = warp(g_ref, RW, RH, T, 180, 160);
    gm_result a, b;
    EXPECT_EQ(gm_match(r, (gm_view){q, 180, 160, 180}, &a), GM_OK);
    EXPECT_EQ(a.status, GM_MATCH_FOUND);
    EXPECT_EQ(gm_ref_expect(r, 0, 0), GM_OK); /* nothing coming: no start */
    EXPECT(!gm_ref_starting(r));
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU);
    EXPECT_EQ(gm_ref_expect(r, -1, 1), GM_OK); /* a video's: start, and wait */
    EXPECT(!gm_ref_starting(r));
    gm_device d = gm_ref_backend(r);
    if (d == GM_DEVICE_CPU) {
        if (!strstr(gm_ref_device(r), "auto") || strstr(gm_ref_device(r), "once the work"))
            ck_abort_msg("device after a failed start: %s", gm_ref_device(r));
    } else {
        EXPECT(gm_backend_available(d) && gm_ref_gpus(r) == 1);
        EXPECT(strncmp(gm_ref_device(r), gm_device_name(d), strlen(gm_device_name(d))) == 0);
    }
    EXPECT_EQ(gm_match(r, (gm_view){q, 180, 160, 180}, &b), GM_OK);
    EXPECT_EQ(b.status, GM_MATCH_FOUND);
    for (int k = 0; k < 9; k++)
        EXPECT(fabs(a.h[k] - b.h[k]) < 1e-6 * (1 + fabs(a.h[k])));
    EXPECT_EQ(gm_ref_expect(NULL, 1, 0), GM_ERR_INVALID);
    EXPECT(!gm_ref_starting(NULL));
    gm_ref_free(r);
    if (d != GM_DEVICE_CPU) { /* the accelerator runs: the next reference goes there at once */
        ck_assert_int_eq(gm_ref_prepare(&p, (gm_view){g_ref, RW, RH, RW}, &r), GM_OK);
        EXPECT_EQ(gm_ref_backend(r), d);
        gm_ref_free(r);
    }
    free(q);
    /* gm_device_start: the CPU and auto at once, a device the build lacks refused */
    EXPECT_EQ(gm_device_start(GM_DEVICE_CPU), GM_OK);
    EXPECT_EQ(gm_device_start(GM_DEVICE_AUTO), GM_OK);
    EXPECT_EQ(gm_device_start((gm_device)99), GM_ERR_INVALID);
    if (!gm_backend_available(GM_DEVICE_CUDA))
        EXPECT_EQ(gm_device_start(GM_DEVICE_CUDA), GM_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(test_params_default)
{
    gm_params p = gm_params_default();
    EXPECT(p.min_confidence > 0 && p.min_confidence < 1);
    EXPECT(p.max_side > 0 && p.ref_points > 0 && p.query_points > 0 && p.basis_points > 0);
    EXPECT(p.ref_basis_prob > 0 && p.ref_basis_prob <= 1);
    EXPECT(p.query_bases > 0 && p.top_k > 0);
    EXPECT(p.max_pixels == GM_DEFAULT_MAX_PIXELS);
    EXPECT(strcmp(gm_status_str(GM_OK), gm_status_str(GM_ERR_EMPTY)) != 0);
}
END_TEST

static Suite *matcher_suite(void)
{
    Suite *s = suite_create("matcher");
    TCase *tc = tcase_create("match");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, render_ref, free_ref);
    tcase_add_checked_fixture(tc, NULL, unprepare_ref);
    tcase_add_loop_test(tc, test_match_similarity, 0, 4);
    tcase_add_test(tc, test_match_pyramid);
    tcase_add_test(tc, test_match_crop_view);
    tcase_add_test(tc, test_match_downscaled);
    tcase_add_test(tc, test_match_models);
    tcase_add_test(tc, test_match_affine_strong);
    tcase_add_test(tc, test_match_strong_tilt);
    tcase_add_test(tc, test_match_per_call_model);
    suite_add_tcase(s, tc);
    TCase *none = tcase_create("none");
    tcase_set_timeout(none, 120);
    tcase_add_unchecked_fixture(none, render_ref, free_ref);
    tcase_add_checked_fixture(none, NULL, unprepare_ref);
    tcase_add_test(none, test_flat_query);
    tcase_add_test(none, test_unrelated_query);
    tcase_add_test(none, test_periodic_ambiguous);
    tcase_add_test(none, test_repeat_tilted_ambiguous);
    tcase_add_test(none, test_planks_slide);
    tcase_add_test(none, test_tiny_queries);
    tcase_add_test(none, test_empty_query);
    tcase_add_test(none, test_degenerate_references);
    tcase_add_test(none, test_prep_timing);
    tcase_add_test(none, test_threads_deterministic);
    tcase_add_test(none, test_threads_leave_caller_alone);
    tcase_add_test(none, test_thread_budget);
    tcase_add_test(none, test_params_default);
    tcase_add_test(none, test_auto_warm);
    tcase_add_test(none, test_params_ranges);
    suite_add_tcase(s, none);
    return s;
}

int main(void)
{
    return run_suite(matcher_suite());
}
