/* sobel.c: binomial smoothing, Sobel gradients, non-maximum suppression and an
 * adaptive threshold.  All integer, so the CUDA twin can be checked exactly.
 *
 * Scales: the smoothed image s is 16x the intensity (0..4080) after a 5-tap
 * binomial [1 4 6 4 1] in x and y (sum 256, >> 4); Sobel of s fits int16
 * (|gx| <= 4 * 4080 = 16320); mag2 = gx^2 + gy^2 fits int32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "stages/sobel.h"

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static void smooth(gm_view img, uint16_t *tmp, uint16_t *s)
{
    int w = img.width, h = img.height;
    const int par = (size_t)w * h >= GM_PAR_PIXELS;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (par)
    for (int y = 0; y < h; y++) {
        const uint8_t *row = img.data + (ptrdiff_t)y * img.stride;
        uint16_t *t = tmp + (size_t)y * w;
        for (int x = 0; x < w; x++) {
            int a = row[clampi(x - 2, 0, w - 1)], b = row[clampi(x - 1, 0, w - 1)];
            int c = row[x], d = row[clampi(x + 1, 0, w - 1)], e = row[clampi(x + 2, 0, w - 1)];
            t[x] = (uint16_t)(a + 4 * b + 6 * c + 4 * d + e);
        }
    }
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (par)
    for (int y = 0; y < h; y++) {
        const uint16_t *r0 = tmp + (size_t)clampi(y - 2, 0, h - 1) * w;
        const uint16_t *r1 = tmp + (size_t)clampi(y - 1, 0, h - 1) * w;
        const uint16_t *r2 = tmp + (size_t)y * w;
        const uint16_t *r3 = tmp + (size_t)clampi(y + 1, 0, h - 1) * w;
        const uint16_t *r4 = tmp + (size_t)clampi(y + 2, 0, h - 1) * w;
        uint16_t *o = s + (size_t)y * w;
        for (int x = 0; x < w; x++) {
            uint32_t v = (uint32_t)r0[x] + 4u * r1[x] + 6u * r2[x] + 4u * r3[x] + r4[x];
            o[x] = (uint16_t)((v + 8) >> 4);
        }
    }
}

static void sobel(const uint16_t *s, int w, int h, int16_t *gx, int16_t *gy, int32_t *mag2)
{
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if ((size_t)w * h >= GM_PAR_PIXELS)
    for (int y = 0; y < h; y++) {
        const uint16_t *a = s + (size_t)clampi(y - 1, 0, h - 1) * w;
        const uint16_t *b = s + (size_t)y * w;
        const uint16_t *c = s + (size_t)clampi(y + 1, 0, h - 1) * w;
        for (int x = 0; x < w; x++) {
            int xl = clampi(x - 1, 0, w - 1), xr = clampi(x + 1, 0, w - 1);
            int dx = (a[xr] + 2 * b[xr] + c[xr]) - (a[xl] + 2 * b[xl] + c[xl]);
            int dy = (c[xl] + 2 * c[x] + c[xr]) - (a[xl] + 2 * a[x] + a[xr]);
            size_t i = (size_t)y * w + x;
            gx[i] = (int16_t)dx;
            gy[i] = (int16_t)dy;
            mag2[i] = dx * dx + dy * dy;
        }
    }
}


static void nms(const int16_t *gx, const int16_t *gy, const int32_t *mag2, int w, int h,
                int32_t floor2, uint8_t *edge)
{
    const ptrdiff_t off[4] = {1, w, w + 1, w - 1};
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if ((size_t)w * h >= GM_PAR_PIXELS)
    for (int y = 0; y < h; y++) {
        uint8_t *er = edge + (size_t)y * w;
        if (y < GM_EDGE_MARGIN || y >= h - GM_EDGE_MARGIN) {
            memset(er, 0, (size_t)w);
            continue;
        }
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            int32_t m = mag2[i];
            if (x < GM_EDGE_MARGIN || x >= w - GM_EDGE_MARGIN || m < floor2) {
                er[x] = 0;
                continue;
            }
            ptrdiff_t o = off[gm_edge_dir(gx[i], gy[i])];
            /* strictly above one neighbour, at least the other: plateaus keep one pixel */
            er[x] = (uint8_t)(m > mag2[i - o] && m >= mag2[i + o]);
        }
    }
}

/* The threshold on mag2 that keeps at most max_edges of the thinned pixels,
 * never below the absolute and relative floors.  A histogram over sqrt(mag2)
 * (integer, 0..23080) makes it one pass. */
static int32_t adaptive_threshold(const int32_t *mag2, const uint8_t *edge, size_t n,
                                  int max_edges)
{
    enum { NBIN = GM_EDGE_HIST_BINS, SHIFT = GM_EDGE_HIST_SHIFT };
    uint32_t all[NBIN] = {0}, thin[NBIN] = {0};
    for (size_t i = 0; i < n; i++) {
        int m = (int)sqrtf((float)mag2[i]);
        int b = m >> SHIFT;
        if (b >= NBIN)
            b = NBIN - 1;
        all[b]++;
        thin[b] += edge[i];
    }
    /* 99th percentile of all magnitudes */
    size_t acc = 0, p99 = 0;
    for (int b = NBIN - 1; b >= 0; b--) {
        acc += all[b];
        if (acc * 100 >= n) {
            p99 = (size_t)b << SHIFT;
            break;
        }
    }
    double t = GM_REL_MAG * (double)p99;
    if (t < GM_MIN_MAG)
        t = GM_MIN_MAG;
    /* raise t until at most max_edges thinned pixels remain */
    acc = 0;
    for (int b = NBIN - 1; b >= 0; b--) {
        if (acc + thin[b] > (size_t)max_edges) {
            double tb = (double)((b + 1) << SHIFT);
            if (tb > t)
                t = tb;
            break;
        }
        acc += thin[b];
    }
    return (int32_t)(t * t);
}

gm_status gm_edges_cpu(gm_view img, int max_edges, gm_edges *e)
{
    memset(e, 0, sizeof *e);
    int w = img.width, h = img.height;
    size_t n;
    if (w <= 0 || h <= 0 || !gm_mul_ok((size_t)w, (size_t)h, &n))
        return GM_ERR_INVALID;
    /* every pixel of each is written: huge pages for a large image */
    uint16_t *tmp = gm_alloc_large(n, sizeof *tmp), *s = gm_alloc_large(n, sizeof *s);
    e->gx = gm_alloc_large(n, sizeof *e->gx);
    e->gy = gm_alloc_large(n, sizeof *e->gy);
    e->mag2 = gm_alloc_large(n, sizeof *e->mag2);
    e->edge = gm_alloc_large(n, 1);
    e->w = w;
    e->h = h;
    if (!tmp || !s || !e->gx || !e->gy || !e->mag2 || !e->edge) {
        free(tmp);
        free(s);
        gm_edges_free(e);
        return GM_ERR_NOMEM;
    }
    smooth(img, tmp, s);
    sobel(s, w, h, e->gx, e->gy, e->mag2);
    free(tmp);
    free(s);
    nms(e->gx, e->gy, e->mag2, w, h, GM_MIN_MAG * GM_MIN_MAG, e->edge);
    e->threshold = adaptive_threshold(e->mag2, e->edge, n, max_edges);
    int32_t thr = e->threshold;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if (n >= GM_PAR_PIXELS)
    for (ptrdiff_t i = 0; i < (ptrdiff_t)n; i++)
        e->edge[i] = (uint8_t)(e->edge[i] && e->mag2[i] >= thr);
    return GM_OK;
}

void gm_edges_free(gm_edges *e)
{
    free(e->gx);
    free(e->gy);
    free(e->mag2);
    free(e->edge);
    memset(e, 0, sizeof *e);
}
