/* test_scene.h: a rendered scene and its edge points, for the tests of
 * verification and refinement (test_verify.c, test_verify_cuda.c).
 * Include after test_util.h. */
#ifndef GM_TEST_SCENE_H
#define GM_TEST_SCENE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "stages/compact.h"
#include "stages/points.h"
#include "stages/sobel.h"
#include "stages/verify.h"

/* The scene, in reference coordinates: a soft gradient background, disks,
 * rotated rectangles and a triangle with their own grey levels. */
static inline double scene(double x, double y)
{
    double v = 90 + 0.15 * x + 0.1 * y;
    static const double disks[][4] = {{60, 50, 22, 210}, {170, 140, 30, 30}, {190, 45, 15, 160},
                                      {95, 150, 12, 240}};
    for (size_t i = 0; i < sizeof disks / sizeof *disks; i++)
        if (hypot(x - disks[i][0], y - disks[i][1]) < disks[i][2])
            v = disks[i][3];
    static const double rects[][6] = {{120, 70, 28, 14, 0.5, 20}, {45, 120, 18, 30, -0.3, 180},
                                      {200, 95, 20, 9, 1.2, 235}};
    for (size_t i = 0; i < sizeof rects / sizeof *rects; i++) {
        double dx = x - rects[i][0], dy = y - rects[i][1], c = cos(rects[i][4]), s = sin(rects[i][4]);
        if (fabs(c * dx + s * dy) < rects[i][2] && fabs(-s * dx + c * dy) < rects[i][3])
            v = rects[i][5];
    }
    /* triangle (140,20) (230,10) (200,60) */
    double ax = 140, ay = 20, bx = 230, by = 10, cx = 200, cy = 60;
    double d1 = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
    double d2 = (cx - bx) * (y - by) - (cy - by) * (x - bx);
    double d3 = (ax - cx) * (y - cy) - (ay - cy) * (x - cx);
    if ((d1 > 0 && d2 > 0 && d3 > 0) || (d1 < 0 && d2 < 0 && d3 < 0))
        v = 120 - 0.2 * x;
    return v;
}

/* Render w x h pixels, pixel (x, y) showing the scene at H(x, y) (a 3x3,
 * row-major), 4 x 4 supersampled over the pixel. */
static inline uint8_t *render_h(int w, int h, const double H[9])
{
    uint8_t *im = xmalloc((size_t)w * h, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double acc = 0;
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    double px = x - 0.375 + 0.25 * i, py = y - 0.375 + 0.25 * j;
                    double s = H[6] * px + H[7] * py + H[8];
                    acc += scene((H[0] * px + H[1] * py + H[2]) / s, (H[3] * px + H[4] * py + H[5]) / s);
                }
            double v = acc / 16;
            im[(size_t)y * w + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lrint(v));
        }
    return im;
}

static inline uint8_t *render(int w, int h, const double T[6])
{
    const double H[9] = {T[0], T[1], T[2], T[3], T[4], T[5], 0, 0, 1};
    return render_h(w, h, H);
}

/* Every edge point of an image (the stages up to the points). */
static inline gm_points edge_points(const uint8_t *im, int w, int h)
{
    gm_edges e;
    EXPECT_EQ(gm_edges_cpu((gm_view){im, w, h, w}, w * h / 8, &e), GM_OK);
    uint32_t *idx = xmalloc((size_t)w * h, sizeof *idx);
    uint32_t n = gm_compact_flags_cpu(e.edge, (uint32_t)(w * h), idx);
    gm_points pts;
    EXPECT_EQ(gm_edge_points_cpu(&e, idx, n, &pts), GM_OK);
    free(idx);
    gm_edges_free(&e);
    return pts;
}

/* The points of a query image mapped by m0 (query -> reference) expressed
 * in query coordinates: q = m0^-1 p, angles turned back. */
static inline gm_points pull_back(const gm_points *p, const double m[6])
{
    gm_points q = {xmalloc(p->n, sizeof(gm_point)), p->n};
    double det = m[0] * m[4] - m[1] * m[3], rot = atan2(m[3], m[0]);
    for (uint32_t k = 0; k < p->n; k++) {
        double x = p->p[k].x - m[2], y = p->p[k].y - m[5];
        double a = p->p[k].angle - rot;
        a = a > GM_PI ? a - 2 * GM_PI : a <= -GM_PI ? a + 2 * GM_PI : a;
        q.p[k] = (gm_point){(float)((m[4] * x - m[1] * y) / det), (float)((-m[3] * x + m[0] * y) / det),
                            (float)a, p->p[k].w};
    }
    return q;
}

#endif
