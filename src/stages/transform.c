/* transform.c: similarity transforms [a -b tx; b a ty] (query -> reference). */
#include <math.h>
#include <string.h>

#include "stages/pair_core.h"
#include "stages/transform.h"

void gm_similarity_from_pairs(double qx0, double qy0, double qx1, double qy1, double rx0,
                              double ry0, double rx1, double ry1, double m[6])
{
    gm_similarity_of_pairs(qx0, qy0, qx1, qy1, rx0, ry0, rx1, ry1, m);
}

void gm_transform_apply(const double m[6], double x, double y, double *ox, double *oy)
{
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
}

static inline __attribute__((always_inline)) int
fit_lines_of(gm_model model, const double *qx, const double *qy, const double *rx,
             const double *ry, const double *nx, const double *ny, const double *w, int n,
             const double h0[9], double h[9])
{
    double hn[9];
    gm_fit_prepare(h0, hn);
    double A[8][8] = {{0}}, b[8] = {0};
    int used = 0;
    for (int i = 0; i < n; i++) {
        if (model != GM_MODEL_SIMILARITY && w[i] <= 0)
            continue;
        used++;
        double rows[3][8] = {{0}}, tgt[3], ws[3];
        int np = gm_fit_rows(model, hn, qx[i], qy[i], rx[i], ry[i], nx[i], ny[i], w[i], rows, tgt,
                             ws);
        gm_fit_accumulate(np, rows, tgt, ws, 0, A, b);
    }
    return gm_fit_finish(model, used, A, b, hn, h);
}

/* Weighted least squares over the correspondences of the model's rows
 * (fit_core.h), in point order.  The similarity takes every slot (a zero
 * weight adds zeros) and needs n >= 2; the other models count the slots of
 * positive weight.  Each model its own copy (fit_lines_of with a constant
 * model): the rows' sizes known, the accumulation unrolled, the same
 * operations in the same order. */
static int fit_lines(gm_model model, const double *qx, const double *qy, const double *rx,
                     const double *ry, const double *nx, const double *ny, const double *w, int n,
                     const double h0[9], double h[9])
{
    switch (model) {
    case GM_MODEL_SIMILARITY:
        return fit_lines_of(GM_MODEL_SIMILARITY, qx, qy, rx, ry, nx, ny, w, n, h0, h);
    case GM_MODEL_AFFINE:
        return fit_lines_of(GM_MODEL_AFFINE, qx, qy, rx, ry, nx, ny, w, n, h0, h);
    case GM_MODEL_HOMOGRAPHY:
        return fit_lines_of(GM_MODEL_HOMOGRAPHY, qx, qy, rx, ry, nx, ny, w, n, h0, h);
    default:
        return fit_lines_of(model, qx, qy, rx, ry, nx, ny, w, n, h0, h);
    }
}

int gm_similarity_fit_lines(const double *qx, const double *qy, const double *rx,
                            const double *ry, const double *nx, const double *ny,
                            const double *w, int n, double m[6])
{
    static const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    double h[9];
    if (fit_lines(GM_MODEL_SIMILARITY, qx, qy, rx, ry, nx, ny, w, n, id, h) != 0)
        return -1;
    for (int i = 0; i < 6; i++)
        m[i] = h[i];
    return 0;
}

void gm_h_from_m(const double m[6], double h[9])
{
    for (int i = 0; i < 6; i++)
        h[i] = m[i];
    h[6] = h[7] = 0;
    h[8] = 1;
}

int gm_model_fit_lines(gm_model model, const double *qx, const double *qy, const double *rx,
                       const double *ry, const double *nx, const double *ny, const double *w,
                       int n, const double h0[9], double h[9])
{
    return fit_lines(model, qx, qy, rx, ry, nx, ny, w, n, h0, h);
}

int gm_h_plausible(const double h[9], int w, int hgt)
{
    const double xs[5] = {0, w - 1.0, w - 1.0, 0, (w - 1) / 2.0};
    const double ys[5] = {0, 0, hgt - 1.0, hgt - 1.0, (hgt - 1) / 2.0};
    double smin = INFINITY, smax = 0, wmin = INFINITY, wmax = 0;
    for (int i = 0; i < 5; i++) {
        double x = xs[i], y = ys[i];
        double ww = h[6] * x + h[7] * y + h[8];
        if (!(ww > 0) || !isfinite(ww))
            return 0; /* the line at infinity crosses the view */
        double u = (h[0] * x + h[1] * y + h[2]) / ww, v = (h[3] * x + h[4] * y + h[5]) / ww;
        double a = (h[0] - u * h[6]) / ww, b = (h[1] - u * h[7]) / ww;
        double c = (h[3] - v * h[6]) / ww, d = (h[4] - v * h[7]) / ww;
        double det = a * d - b * c;
        if (!(det > 0))
            return 0; /* mirrored or collapsed */
        /* singular values of [a b; c d] */
        double e = (a * a + b * b + c * c + d * d) / 2, f = sqrt(fmax(0, e * e - det * det));
        double s1 = sqrt(e + f), s2 = det / s1;
        if (s1 > GM_H_MAX_ANISO * s2)
            return 0;
        double sc = sqrt(det);
        smin = fmin(smin, sc), smax = fmax(smax, sc);
        wmin = fmin(wmin, ww), wmax = fmax(wmax, ww);
    }
    return smax <= GM_H_MAX_SCALE_RATIO * smin && wmax <= GM_H_MAX_SCALE_RATIO * wmin;
}

int gm_h_inverse(const double h[9], double hi[9])
{
    const double a = h[4] * h[8] - h[5] * h[7], b = h[5] * h[6] - h[3] * h[8],
                 c = h[3] * h[7] - h[4] * h[6];
    const double det = h[0] * a + h[1] * b + h[2] * c;
    if (!(fabs(det) > 1e-300) || !isfinite(det))
        return -1;
    hi[0] = a / det, hi[1] = (h[2] * h[7] - h[1] * h[8]) / det, hi[2] = (h[1] * h[5] - h[2] * h[4]) / det;
    hi[3] = b / det, hi[4] = (h[0] * h[8] - h[2] * h[6]) / det, hi[5] = (h[2] * h[3] - h[0] * h[5]) / det;
    hi[6] = c / det, hi[7] = (h[1] * h[6] - h[0] * h[7]) / det, hi[8] = (h[0] * h[4] - h[1] * h[3]) / det;
    return 0;
}

int gm_h_invert(const double h[9], double hi[9])
{
    double t[9];
    if (gm_h_inverse(h, t) != 0 || !(fabs(t[8]) > 1e-300))
        return -1;
    for (int i = 0; i < 9; i++)
        hi[i] = t[i] / t[8];
    return 0;
}

/* The part of polygon (x, y)[n] where a x + b y + c >= 0, into (ox, oy);
 * returns its vertex count (Sutherland and Hodgman, one half-plane). */
static int clip_half(const double *x, const double *y, int n, double a, double b, double c,
                     double *ox, double *oy)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int j = (i + 1) % n;
        double vi = a * x[i] + b * y[i] + c, vj = a * x[j] + b * y[j] + c;
        if (vi >= 0)
            ox[m] = x[i], oy[m++] = y[i];
        if ((vi >= 0) != (vj >= 0)) {
            double t = vi / (vi - vj);
            ox[m] = x[i] + t * (x[j] - x[i]), oy[m++] = y[i] + t * (y[j] - y[i]);
        }
    }
    return m;
}

static double poly_area(const double *x, const double *y, int n)
{
    double a = 0;
    for (int i = 0; i < n; i++) {
        int j = (i + 1) % n;
        a += x[i] * y[j] - x[j] * y[i];
    }
    return fabs(a) / 2;
}

/* The polygon (x, y)[n] clipped to the rectangle [0, w] x [0, h]: the
 * clipped vertex count, the result in (x, y) (scratch: tx, ty). */
static int clip_rect(double *x, double *y, int n, double w, double h, double *tx, double *ty)
{
    n = clip_half(x, y, n, 1, 0, 0, tx, ty);
    n = clip_half(tx, ty, n, -1, 0, w, x, y);
    n = clip_half(x, y, n, 0, 1, 0, tx, ty);
    return clip_half(tx, ty, n, 0, -1, h, x, y);
}

int gm_h_horizon_crosses(const double h[9], int w, int hgt)
{
    const double xs[4] = {0, w, w, 0}, ys[4] = {0, 0, hgt, hgt};
    int pos = 0, neg = 0;
    for (int i = 0; i < 4; i++) {
        double ww = h[6] * xs[i] + h[7] * ys[i] + h[8];
        pos += ww > 0, neg += ww < 0;
    }
    return !(pos == 4 || neg == 4);
}

static int overlap_poly(const double h[9], int qw, int qh, int rw, int rh, double px[16],
                        double py[16], double *aq, double *ar_out)
{
    int best_n = 0;
    *aq = *ar_out = 0;
    double hi[9];
    if (qw <= 0 || qh <= 0 || rw <= 0 || rh <= 0 || gm_h_invert(h, hi) != 0)
        return 0;
    for (int i = 0; i < 9; i++)
        if (!isfinite(h[i]) || !isfinite(hi[i]))
            return 0;
    /* A homography's line at infinity (w = h6 x + h7 y + h8 = 0) may cross
     * the query: a strongly tilted plane whose horizon is in view, or a
     * poster that fills a small part of a wide frame.  The query's points
     * on either side of it map to finite reference points, and only one
     * side is the plane seen in front: each side is clipped apart (a
     * margin off the line, where points would map past any reference),
     * and the side that shares more with the reference is the shared part
     * (the other maps the plane seen from behind, a mirror image that the
     * matcher's edges did not verify). */
    const double wscale = fabs(h[6]) * qw + fabs(h[7]) * qh + fabs(h[8]);
    double best_ar = 0, best_aq = 0;
    for (int side = 1; side >= -1; side -= 2) {
        /* at most 5 vertices after the half-plane, 9 after the rectangle */
        double x[16] = {0, qw, qw, 0}, y[16] = {0, 0, qh, qh}, tx[16], ty[16];
        int n = clip_half(x, y, 4, side * h[6], side * h[7], side * h[8] - 1e-9 * wscale, tx, ty);
        if (n < 3)
            continue;
        for (int i = 0; i < n; i++) {
            double w = h[6] * tx[i] + h[7] * ty[i] + h[8];
            x[i] = (h[0] * tx[i] + h[1] * ty[i] + h[2]) / w;
            y[i] = (h[3] * tx[i] + h[4] * ty[i] + h[5]) / w;
            if (!isfinite(x[i]) || !isfinite(y[i]))
                return 0;
        }
        if ((n = clip_rect(x, y, n, rw, rh, tx, ty)) < 3)
            continue;
        double ar = poly_area(x, y, n);
        if (!(ar > best_ar))
            continue;
        /* the shared part carried back onto the query */
        for (int i = 0; i < n; i++) {
            double w = hi[6] * x[i] + hi[7] * y[i] + hi[8];
            if (!(fabs(w) > 0))
                return 0;
            tx[i] = (hi[0] * x[i] + hi[1] * y[i] + hi[2]) / w;
            ty[i] = (hi[3] * x[i] + hi[4] * y[i] + hi[5]) / w;
        }
        best_ar = ar;
        best_aq = poly_area(tx, ty, n);
        memcpy(px, tx, n * sizeof *px);
        memcpy(py, ty, n * sizeof *py);
        best_n = n;
    }
    *aq = best_aq, *ar_out = best_ar;
    return best_n;
}

int gm_overlap_poly(const double h[9], int qw, int qh, int rw, int rh, double px[16], double py[16])
{
    double aq, ar;
    return overlap_poly(h, qw, qh, rw, rh, px, py, &aq, &ar);
}

void gm_overlap(const double h[9], int qw, int qh, int rw, int rh, double share[2])
{
    double px[16], py[16], best_aq, best_ar;
    share[0] = share[1] = 0;
    if (overlap_poly(h, qw, qh, rw, rh, px, py, &best_aq, &best_ar) < 3)
        return;
    share[0] = fmin(1.0, best_aq / ((double)qw * qh));
    share[1] = fmin(1.0, best_ar / ((double)rw * rh));
}
