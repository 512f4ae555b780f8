/* fit_core.h: the arithmetic of transforms and of the point-to-line fits,
 * shared by the CPU (transform.c, verify.c) and the CUDA refinement
 * (src/cuda/verify.cu).  Static inline GM_HD functions, so both sides evaluate
 * the same expressions in the same order; the CUDA side is compiled with
 * --fmad=false, so no multiply-add is contracted and every value that does
 * not depend on a summation order is bit for bit the CPU's.
 *
 * A fit is three steps: gm_fit_prepare (once, from the current estimate),
 * gm_fit_accumulate (per correspondence, into the normal equations A x = b)
 * and gm_fit_finish (solve, build the 3x3).  The CPU runs them in point order;
 * the GPU sums per thread and reduces, so its sums differ in the last bits. */
#ifndef GM_FIT_CORE_H
#define GM_FIT_CORE_H

#include <math.h>

#include "common/common.h"

/* 3x3 transforms, row-major, query -> reference; h[8] = 1 for a homography. */
static inline GM_HD void gm_h_apply(const double h[9], double x, double y, double *ox, double *oy)
{
    double w = h[6] * x + h[7] * y + h[8];
    if (fabs(w) < 1e-12)
        w = w < 0 ? -1e-12 : 1e-12;
    *ox = (h[0] * x + h[1] * y + h[2]) / w;
    *oy = (h[3] * x + h[4] * y + h[5]) / w;
}

/* The direction (ca, sa) of an edge normal at (x, y) carried by h: the
 * inverse transpose of h's local Jacobian, normalized.  The length is
 * sqrt(nx^2 + ny^2), not hypot: sqrt is correctly rounded on the CPU and the
 * GPU alike, hypot's last ulp differs between glibc and CUDA. */
static inline GM_HD void gm_h_normal(const double h[9], double x, double y, float ca, float sa,
                                     float *oc, float *os)
{
    double w = h[6] * x + h[7] * y + h[8], px, py;
    gm_h_apply(h, x, y, &px, &py);
    double a = (h[0] - px * h[6]) / w, b = (h[1] - px * h[7]) / w;
    double c = (h[3] - py * h[6]) / w, d = (h[4] - py * h[7]) / w;
    double det = a * d - b * c, s = det < 0 ? -1.0 : 1.0;
    double nx = s * (d * ca - c * sa), ny = s * (-b * ca + a * sa);
    double l = sqrt(nx * nx + ny * ny);
    if (l < 1e-20) {
        *oc = ca;
        *os = sa;
        return;
    }
    *oc = (float)(nx / l);
    *os = (float)(ny / l);
}

/* Solve the n x n system A x = b (n <= 8) with column equilibration and
 * partial pivoting; A and b are overwritten.  0, or -1 when singular or the
 * solution is not finite. */
static inline GM_HD int gm_solve_n(int n, double A[8][8], double b[8], double x[8])
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

/* Unknowns of the model's linear system: similarity (a, b, tx, ty), affine
 * (6 entries), homography (8 entries of a Gauss-Newton step, h[8] = 1). */
static inline GM_HD int gm_fit_unknowns(gm_model model)
{
    return model == GM_MODEL_SIMILARITY ? 4 : model == GM_MODEL_AFFINE ? 6 : 8;
}

/* The estimate h0 normalized to hn[8] = 1 (the homography's
 * parameterization; unused by the other models). */
static inline GM_HD void gm_fit_prepare(const double h0[9], double hn[9])
{
    for (int i = 0; i < 9; i++)
        hn[i] = h0[8] != 0 ? h0[i] / h0[8] : h0[i];
}

/* The three rows of one correspondence (query point q, reference point r on
 * a line of unit normal n, weight w): rows[r][0..np), targets and weights.
 * Returns np. */
static inline GM_HD int gm_fit_rows(gm_model model, const double hn[9], double qx, double qy,
                                    double rx, double ry, double nx, double ny, double w,
                                    double rows[3][8], double tgt[3], double ws[3])
{
    ws[0] = w;
    ws[1] = ws[2] = w * GM_TANGENT_W;
    if (model == GM_MODEL_SIMILARITY) {
        /* p = (a, b, tx, ty); Mq = (a qx - b qy + tx, b qx + a qy + ty) */
        rows[0][0] = nx * qx + ny * qy;
        rows[0][1] = ny * qx - nx * qy;
        rows[0][2] = nx;
        rows[0][3] = ny;
        tgt[0] = nx * rx + ny * ry;
        /* x and y, lightly */
        rows[1][0] = qx; rows[1][1] = -qy; rows[1][2] = 1; rows[1][3] = 0; tgt[1] = rx;
        rows[2][0] = qy; rows[2][1] = qx;  rows[2][2] = 0; rows[2][3] = 1; tgt[2] = ry;
        return 4;
    }
    const int np = gm_fit_unknowns(model);
    /* J: derivative of the mapped point, r: target */
    double jx[8] = {0}, jy[8] = {0}, px, py;
    if (model == GM_MODEL_AFFINE) {
        /* p = (a qx + b qy + c, d qx + e qy + f): linear, solved exactly */
        jx[0] = qx; jx[1] = qy; jx[2] = 1;
        jy[3] = qx; jy[4] = qy; jy[5] = 1;
        px = py = 0; /* the residual target is the point itself */
    } else {
        /* Gauss-Newton on hn + delta, h[8] fixed at 1 */
        double s = hn[6] * qx + hn[7] * qy + hn[8];
        gm_h_apply(hn, qx, qy, &px, &py);
        jx[0] = qx / s; jx[1] = qy / s; jx[2] = 1 / s;
        jx[6] = -qx * px / s; jx[7] = -qy * px / s;
        jy[3] = qx / s; jy[4] = qy / s; jy[5] = 1 / s;
        jy[6] = -qx * py / s; jy[7] = -qy * py / s;
    }
    for (int j = 0; j < np; j++) {
        rows[0][j] = nx * jx[j] + ny * jy[j];
        rows[1][j] = jx[j];
        rows[2][j] = jy[j];
    }
    /* affine: J p = target; homography: J delta = target - p(hn) */
    tgt[0] = nx * (rx - px) + ny * (ry - py);
    tgt[1] = rx - px;
    tgt[2] = ry - py;
    return np;
}

/* A += ws rows^T rows, b += ws rows^T tgt, in the CPU's order.  `upper`:
 * only the entries k >= j (the GPU mirrors them before solving: A is
 * symmetric, the products of A[j][k] and A[k][j] are the same numbers). */
static inline GM_HD void gm_fit_accumulate(int np, const double rows[3][8], const double tgt[3],
                                           const double ws[3], int upper, double A[8][8],
                                           double b[8])
{
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < np; j++) {
            for (int k = upper ? j : 0; k < np; k++)
                A[j][k] += ws[r] * rows[r][j] * rows[r][k];
            b[j] += ws[r] * rows[r][j] * tgt[r];
        }
}

/* Solves the normal equations of `used` correspondences (A and b are
 * overwritten) and writes the model as a 3x3 h; 0, or -1 when there are
 * fewer correspondences than unknowns (fewer than 2 for the similarity) or
 * the system is degenerate (h untouched then). */
static inline GM_HD int gm_fit_finish(gm_model model, int used, double A[8][8], double b[8],
                                      const double hn[9], double h[9])
{
    const int np = gm_fit_unknowns(model);
    double x[8];
    if (used < (model == GM_MODEL_SIMILARITY ? 2 : np) || gm_solve_n(np, A, b, x) != 0)
        return -1;
    if (model == GM_MODEL_SIMILARITY) {
        h[0] = x[0];
        h[1] = -x[1];
        h[2] = x[2];
        h[3] = x[1];
        h[4] = x[0];
        h[5] = x[3];
        h[6] = h[7] = 0;
        h[8] = 1;
    } else if (model == GM_MODEL_AFFINE) {
        for (int j = 0; j < 6; j++)
            h[j] = x[j];
        h[6] = h[7] = 0;
        h[8] = 1;
    } else {
        double s = hn[8] != 0 ? hn[8] : 1;
        for (int j = 0; j < 8; j++)
            h[j] = hn[j] / s + x[j];
        h[8] = 1;
    }
    return 0;
}

#endif
