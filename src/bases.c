/* bases.c: basis pairs and the similarity-invariant keys of points in their
 * frames (paper section 6).
 *
 * Frame of basis (a -> b): a at the origin, b at (GM_BASIS_B, 0).  A point p
 * gets cell (floor(u), floor(v)) and the direction of its gradient relative
 * to the basis direction, in GM_ANGLE_BINS bins: any similar labelled triple
 * (a, b, p) in either image gives the same key.  The direction is the extra
 * invariant the issue allows: it divides the chance collisions of unrelated
 * points by the number of bins.
 *
 * Key layout (18 bits):
 *   bits 0..6   u cell + GM_UV_HALF - B/2   (0..2*GM_UV_HALF-1, below 128)
 *   bits 7..13  v cell + GM_UV_HALF         (likewise)
 *   bits 14..17 direction bin               (0..15) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Row i of the pair selection: the j != i at squared distance l2min..l2max
 * whose hash of (seed, i, j) is at most thr, in increasing j.  Writes their
 * keys i << 16 | j to out unless out is NULL; returns how many. */
static uint32_t select_row(const gm_points *pts, uint32_t i, float l2min, float l2max,
                           uint64_t seed, uint64_t thr, uint32_t *out)
{
    uint32_t n = pts->n, c = 0;
    for (uint32_t j = 0; j < n; j++) {
        if (j == i)
            continue;
        float dx = pts->p[j].x - pts->p[i].x, dy = pts->p[j].y - pts->p[i].y;
        float d2 = dx * dx + dy * dy;
        if (d2 < l2min || d2 > l2max)
            continue;
        if (gm_mix64(seed ^ ((uint64_t)i << 32 | j)) <= thr) {
            if (out)
                out[c] = i << 16 | j;
            c++;
        }
    }
    return c;
}

gm_status gm_bases_select_cpu(const gm_points *pts, float lmin, float lmax, double prob,
                              uint64_t seed, gm_bases *b)
{
    b->n = 0;
    b->key = NULL;
    uint32_t n = pts->n;
    if (n > 65535)
        return GM_ERR_INVALID;
    uint64_t thr = prob >= 1.0 ? UINT64_MAX : (uint64_t)(prob * 18446744073709551616.0);
    float l2min = lmin * lmin, l2max = lmax * lmax;
    /* two passes: count, then fill; rows in parallel, order kept */
    uint32_t *cnt = calloc((size_t)n + 1, sizeof *cnt);
    if (!cnt)
        return GM_ERR_NOMEM;
#pragma omp parallel for schedule(dynamic, 8) if (n >= 128)
    for (int64_t i = 0; i < (int64_t)n; i++)
        cnt[i + 1] = select_row(pts, (uint32_t)i, l2min, l2max, seed, thr, NULL);
    for (uint32_t i = 0; i < n; i++)
        cnt[i + 1] += cnt[i];
    b->key = malloc((cnt[n] ? cnt[n] : 1) * sizeof *b->key);
    if (!b->key) {
        free(cnt);
        return GM_ERR_NOMEM;
    }
#pragma omp parallel for schedule(dynamic, 8) if (n >= 128)
    for (int64_t i = 0; i < (int64_t)n; i++)
        select_row(pts, (uint32_t)i, l2min, l2max, seed, thr, b->key + cnt[i]);
    b->n = cnt[n];
    free(cnt);
    return GM_OK;
}

uint32_t gm_basis_key(gm_point a, gm_point b, gm_point p)
{
    gm_frame f = gm_frame_of(a, b);
    return gm_frame_key(&f, p);
}

gm_status gm_basis_items_cpu(const gm_points *basis_pts, const uint32_t *basis_keys,
                             uint32_t nb, const gm_points *cloud, uint32_t **keys,
                             uint32_t **vals, uint32_t *n_items)
{
    *keys = *vals = NULL;
    *n_items = 0;
    /* one pass into a scratch of nb x cloud->n keys (at most cloud->n per
     * basis), then a compaction by the per-basis counts */
    size_t cap;
    if (!gm_mul_ok((size_t)nb, (size_t)cloud->n, &cap))
        return GM_ERR_NOMEM;
    uint32_t *scratch = malloc((cap ? cap : 1) * sizeof *scratch);
    uint32_t *cnt = calloc((size_t)nb + 1, sizeof *cnt);
    if (!scratch || !cnt) {
        free(scratch);
        free(cnt);
        return GM_ERR_NOMEM;
    }
    /* a (key, basis) pair is stored once even when several points of the
     * basis share the key: one query point then votes once per basis */
    int fail = 0;
#pragma omp parallel
    {
        uint64_t *seen = calloc((1u << 18) / 64, sizeof *seen);
        if (!seen) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 16)
        for (int64_t d = 0; d < (int64_t)nb; d++) {
            if (!seen)
                continue;
            gm_point a = basis_pts->p[basis_keys[d] >> 16], b = basis_pts->p[basis_keys[d] & 0xFFFF];
            gm_frame f = gm_frame_of(a, b);
            uint32_t *out = scratch + (size_t)d * cloud->n, c = 0;
            for (uint32_t k = 0; k < cloud->n; k++) {
                if (gm_near_endpoint(a, b, cloud->p[k]))
                    continue;
                uint32_t key = gm_frame_key(&f, cloud->p[k]);
                if (key == GM_KEY_EMPTY || (seen[key >> 6] >> (key & 63) & 1))
                    continue;
                seen[key >> 6] |= 1ull << (key & 63);
                out[c++] = key;
            }
            for (uint32_t k = 0; k < c; k++) /* clear the bits we set */
                seen[out[k] >> 6] = 0;
            cnt[d + 1] = c;
        }
        free(seen);
    }
    if (fail) {
        free(scratch);
        free(cnt);
        return GM_ERR_NOMEM;
    }
    for (uint32_t d = 0; d < nb; d++)
        cnt[d + 1] += cnt[d];
    uint32_t n = cnt[nb];
    *keys = malloc((n ? n : 1) * sizeof **keys);
    *vals = malloc((n ? n : 1) * sizeof **vals);
    if (!*keys || !*vals) {
        free(*keys);
        free(*vals);
        *keys = *vals = NULL;
        free(scratch);
        free(cnt);
        return GM_ERR_NOMEM;
    }
#pragma omp parallel for schedule(static)
    for (int64_t d = 0; d < (int64_t)nb; d++) {
        const uint32_t *in = scratch + (size_t)d * cloud->n;
        for (uint32_t k = cnt[d]; k < cnt[d + 1]; k++) {
            (*keys)[k] = in[k - cnt[d]];
            (*vals)[k] = (uint32_t)d;
        }
    }
    free(scratch);
    free(cnt);
    *n_items = n;
    return GM_OK;
}
