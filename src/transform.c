/* transform.c: similarity transforms [a -b tx; b a ty] (query -> reference). */
#include <math.h>

#include "internal.h"

void gm_similarity_from_pairs(double qx0, double qy0, double qx1, double qy1, double rx0,
                              double ry0, double rx1, double ry1, double m[6])
{
    /* as complex numbers: z = (r1 - r0) / (q1 - q0), t = r0 - z q0 */
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

void gm_transform_apply(const double m[6], double x, double y, double *ox, double *oy)
{
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
}

/* Solve the n x n system A x = b (n <= 8) with column equilibration and
 * partial pivoting; A and b are overwritten. */
static int solve_n(int n, double A[8][8], double b[8], double x[8])
{
    double sc[8];
    for (int j = 0; j < n; j++) {
        double m = 0;
        for (int i = 0; i < n; i++)
            m = fmax(m, fabs(A[i][j]));
        sc[j] = m > 0 ? 1.0 / m : 1.0;
        for (int i = 0; i < n; i++)
            A[i][j] *= sc[j];
    }
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r][c]) > fabs(A[p][c]))
                p = r;
        if (fabs(A[p][c]) < 1e-12)
            return -1;
        if (p != c) {
            for (int k = 0; k < n; k++) {
                double t = A[c][k];
                A[c][k] = A[p][k];
                A[p][k] = t;
            }
            double t = b[c];
            b[c] = b[p];
            b[p] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double f = A[r][c] / A[c][c];
            for (int k = c; k < n; k++)
                A[r][k] -= f * A[c][k];
            b[r] -= f * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < n; k++)
            s -= A[r][k] * x[k];
        x[r] = s / A[r][r];
    }
    for (int j = 0; j < n; j++) {
        x[j] *= sc[j];
        if (!isfinite(x[j]))
            return -1;
    }
    return 0;
}

/* Each correspondence contributes its point-to-line residual n.(Mq - r) with
 * weight w, and a point-to-point residual with weight w * GM_TANGENT_W so the
 * system stays well posed when all edges are parallel. */
#define GM_TANGENT_W 0.02

int gm_similarity_fit_lines(const double *qx, const double *qy, const double *rx,
                            const double *ry, const double *nx, const double *ny,
                            const double *w, int n, double m[6])
{
    double A[8][8] = {{0}}, b[8] = {0};
    /* parameters p = (a, b, tx, ty); Mq = (a qx - b qy + tx, b qx + a qy + ty) */
    for (int i = 0; i < n; i++) {
        double rows[3][5];
        double ws[3];
        /* normal direction */
        rows[0][0] = nx[i] * qx[i] + ny[i] * qy[i];
        rows[0][1] = ny[i] * qx[i] - nx[i] * qy[i];
        rows[0][2] = nx[i];
        rows[0][3] = ny[i];
        rows[0][4] = nx[i] * rx[i] + ny[i] * ry[i];
        ws[0] = w[i];
        /* x and y, lightly */
        rows[1][0] = qx[i]; rows[1][1] = -qy[i]; rows[1][2] = 1; rows[1][3] = 0; rows[1][4] = rx[i];
        rows[2][0] = qy[i]; rows[2][1] = qx[i];  rows[2][2] = 0; rows[2][3] = 1; rows[2][4] = ry[i];
        ws[1] = ws[2] = w[i] * GM_TANGENT_W;
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < 4; j++) {
                for (int k = 0; k < 4; k++)
                    A[j][k] += ws[r] * rows[r][j] * rows[r][k];
                b[j] += ws[r] * rows[r][j] * rows[r][4];
            }
    }
    double x[8];
    if (n < 2 || solve_n(4, A, b, x) != 0)
        return -1;
    m[0] = x[0];
    m[1] = -x[1];
    m[2] = x[2];
    m[3] = x[1];
    m[4] = x[0];
    m[5] = x[3];
    return 0;
}

void gm_h_from_m(const double m[6], double h[9])
{
    for (int i = 0; i < 6; i++)
        h[i] = m[i];
    h[6] = h[7] = 0;
    h[8] = 1;
}

void gm_h_apply(const double h[9], double x, double y, double *ox, double *oy)
{
    double w = h[6] * x + h[7] * y + h[8];
    if (fabs(w) < 1e-12)
        w = w < 0 ? -1e-12 : 1e-12;
    *ox = (h[0] * x + h[1] * y + h[2]) / w;
    *oy = (h[3] * x + h[4] * y + h[5]) / w;
}

void gm_h_normal(const double h[9], double x, double y, float ca, float sa, float *oc, float *os)
{
    double w = h[6] * x + h[7] * y + h[8], px, py;
    gm_h_apply(h, x, y, &px, &py);
    double a = (h[0] - px * h[6]) / w, b = (h[1] - px * h[7]) / w;
    double c = (h[3] - py * h[6]) / w, d = (h[4] - py * h[7]) / w;
    double det = a * d - b * c, s = det < 0 ? -1.0 : 1.0;
    double nx = s * (d * ca - c * sa), ny = s * (-b * ca + a * sa);
    double l = hypot(nx, ny);
    if (l < 1e-20) {
        *oc = ca;
        *os = sa;
        return;
    }
    *oc = (float)(nx / l);
    *os = (float)(ny / l);
}

int gm_model_fit_lines(gm_model model, const double *qx, const double *qy, const double *rx,
                       const double *ry, const double *nx, const double *ny, const double *w,
                       int n, const double h0[9], double h[9])
{
    if (model == GM_MODEL_SIMILARITY) {
        double m[6];
        if (gm_similarity_fit_lines(qx, qy, rx, ry, nx, ny, w, n, m) != 0)
            return -1;
        gm_h_from_m(m, h);
        return 0;
    }
    const int np = model == GM_MODEL_AFFINE ? 6 : 8;
    double hn[9]; /* h0 normalized to hn[8] = 1: the parameterization below */
    for (int i = 0; i < 9; i++)
        hn[i] = h0[8] != 0 ? h0[i] / h0[8] : h0[i];
    h0 = hn;
    double A[8][8] = {{0}}, b[8] = {0};
    int used = 0;
    for (int i = 0; i < n; i++) {
        if (w[i] <= 0)
            continue;
        used++;
        /* rows: the normal residual (weight w) and x, y residuals (weight
         * w * GM_TANGENT_W); J: derivative of the mapped point, r: target */
        double jx[8] = {0}, jy[8] = {0}, px, py;
        if (model == GM_MODEL_AFFINE) {
            /* p = (a qx + b qy + c, d qx + e qy + f): linear, solved exactly */
            jx[0] = qx[i]; jx[1] = qy[i]; jx[2] = 1;
            jy[3] = qx[i]; jy[4] = qy[i]; jy[5] = 1;
            px = py = 0; /* the residual target is the point itself */
        } else {
            /* Gauss-Newton on h0 + delta, h[8] fixed at 1 */
            double s = h0[6] * qx[i] + h0[7] * qy[i] + h0[8];
            gm_h_apply(h0, qx[i], qy[i], &px, &py);
            jx[0] = qx[i] / s; jx[1] = qy[i] / s; jx[2] = 1 / s;
            jx[6] = -qx[i] * px / s; jx[7] = -qy[i] * px / s;
            jy[3] = qx[i] / s; jy[4] = qy[i] / s; jy[5] = 1 / s;
            jy[6] = -qx[i] * py / s; jy[7] = -qy[i] * py / s;
        }
        double rows[3][8], tgt[3], ws[3];
        for (int j = 0; j < np; j++) {
            rows[0][j] = nx[i] * jx[j] + ny[i] * jy[j];
            rows[1][j] = jx[j];
            rows[2][j] = jy[j];
        }
        /* affine: J p = target; homography: J delta = target - p(h0) */
        tgt[0] = nx[i] * (rx[i] - px) + ny[i] * (ry[i] - py);
        tgt[1] = rx[i] - px;
        tgt[2] = ry[i] - py;
        ws[0] = w[i];
        ws[1] = ws[2] = w[i] * GM_TANGENT_W;
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < np; j++) {
                for (int k = 0; k < np; k++)
                    A[j][k] += ws[r] * rows[r][j] * rows[r][k];
                b[j] += ws[r] * rows[r][j] * tgt[r];
            }
    }
    double x[8];
    if (used < np || solve_n(np, A, b, x) != 0)
        return -1;
    if (model == GM_MODEL_AFFINE) {
        for (int j = 0; j < 6; j++)
            h[j] = x[j];
        h[6] = h[7] = 0;
        h[8] = 1;
    } else {
        double s = h0[8] != 0 ? h0[8] : 1;
        for (int j = 0; j < 8; j++)
            h[j] = h0[j] / s + x[j];
        h[8] = 1;
    }
    return 0;
}
