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

/* Solve the 4x4 system A x = b by Gaussian elimination with partial pivoting. */
static int solve4(double A[4][4], double b[4], double x[4])
{
    for (int c = 0; c < 4; c++) {
        int p = c;
        for (int r = c + 1; r < 4; r++)
            if (fabs(A[r][c]) > fabs(A[p][c]))
                p = r;
        if (fabs(A[p][c]) < 1e-12)
            return -1;
        if (p != c) {
            for (int k = 0; k < 4; k++) {
                double t = A[c][k];
                A[c][k] = A[p][k];
                A[p][k] = t;
            }
            double t = b[c];
            b[c] = b[p];
            b[p] = t;
        }
        for (int r = c + 1; r < 4; r++) {
            double f = A[r][c] / A[c][c];
            for (int k = c; k < 4; k++)
                A[r][k] -= f * A[c][k];
            b[r] -= f * b[c];
        }
    }
    for (int r = 3; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < 4; k++)
            s -= A[r][k] * x[k];
        x[r] = s / A[r][r];
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
    double A[4][4] = {{0}}, b[4] = {0};
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
    double x[4];
    if (n < 2 || solve4(A, b, x) != 0)
        return -1;
    if (!isfinite(x[0]) || !isfinite(x[1]) || !isfinite(x[2]) || !isfinite(x[3]))
        return -1;
    m[0] = x[0];
    m[1] = -x[1];
    m[2] = x[2];
    m[3] = x[1];
    m[4] = x[0];
    m[5] = x[3];
    return 0;
}
