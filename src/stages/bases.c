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
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "stages/points.h"
#include "stages/bases.h"

/* Row i of the pair selection: the j != i at squared distance l2min..l2max
 * whose hash of (seed, i, j) is at most thr, in increasing j.  Writes the
 * first cap of their keys i << 16 | j to out; returns how many there are. */
static uint32_t select_row(const gm_points *pts, uint32_t i, const uint32_t *near, uint32_t n_near,
                           float l2min, float l2max, uint64_t seed, uint64_t thr, uint32_t *out,
                           size_t cap)
{
    /* near: the candidate j in increasing order (the grid's), NULL: all.
     * Without branches on the length or the hash (both unpredictable: a
     * query's 200 points, 40,000 candidates a frame, took 28 cycles a
     * candidate, most of it mispredictions; docs/speed.md): a block's
     * candidates in range gathered first, then hashed; a pair that is not
     * kept is written where the next kept one goes, and a pair past the
     * room into a slot of the stack. */
    const gm_point *p = pts->p;
    const float xi = p[i].x, yi = p[i].y;
    const uint64_t row = seed ^ (uint64_t)i << 32;
    uint32_t n = near ? n_near : pts->n, c = 0, spill;
    uint32_t in[256];
    uint8_t ok[256];
    for (uint32_t t0 = 0; t0 < n; t0 += 256) {
        uint32_t t1 = n - t0 < 256 ? n : t0 + 256, m = 0;
        if (near) {
            for (uint32_t t = t0; t < t1; t++) {
                uint32_t j = near[t];
                float dx = p[j].x - xi, dy = p[j].y - yi;
                float d2 = dx * dx + dy * dy;
                /* "not shorter, not longer": a NaN length is kept, as it was */
                ok[t - t0] = (uint8_t)((j != i) & !(d2 < l2min) & !(d2 > l2max));
            }
        } else { /* every point: the lengths in vector lanes */
#pragma omp simd
            for (uint32_t t = t0; t < t1; t++) {
                float dx = p[t].x - xi, dy = p[t].y - yi;
                float d2 = dx * dx + dy * dy;
                ok[t - t0] = (uint8_t)((t != i) & !(d2 < l2min) & !(d2 > l2max));
            }
        }
        for (uint32_t t = t0; t < t1; t++) {
            in[m] = near ? near[t] : t;
            m += ok[t - t0];
        }
        for (uint32_t u = 0; u < m; u++) {
            uint32_t j = in[u];
            uint32_t *slot = c < cap ? &out[c] : &spill;
            *slot = i << 16 | j;
            c += gm_mix64(row ^ j) <= thr;
        }
    }
    return c;
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
    uint32_t *scratch = gm_alloc_large(cap, sizeof *scratch);
    uint32_t *cnt = calloc((size_t)nb + 1, sizeof *cnt);
    if (!scratch || !cnt) {
        free(scratch);
        free(cnt);
        return GM_ERR_NOMEM;
    }
    /* a (key, basis) pair is stored once even when several points of the
     * basis share the key: one query point then votes once per basis */
    int fail = 0;
#pragma omp parallel num_threads(gm_threads())
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
    *keys = gm_alloc_large(n, sizeof **keys);
    *vals = gm_alloc_large(n, sizeof **vals);
    if (!*keys || !*vals) {
        free(*keys);
        free(*vals);
        *keys = *vals = NULL;
        free(scratch);
        free(cnt);
        return GM_ERR_NOMEM;
    }
#pragma omp parallel for num_threads(gm_threads()) schedule(static)
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

/* ---- local versions through a grid (fine reference levels) --------------- */

void gm_grid_free(gm_grid *g)
{
    free(g->start);
    free(g->idx);
}

gm_status gm_grid_build(const gm_points *pts, float cell, gm_grid *g)
{
    memset(g, 0, sizeof *g);
    float x0 = 0, y0 = 0, x1 = 1, y1 = 1;
    for (uint32_t k = 0; k < pts->n; k++) {
        const gm_point *p = &pts->p[k];
        if (k == 0 || p->x < x0) x0 = p->x;
        if (k == 0 || p->y < y0) y0 = p->y;
        if (k == 0 || p->x > x1) x1 = p->x;
        if (k == 0 || p->y > y1) y1 = p->y;
    }
    g->cell = cell > 1.0f ? cell : 1.0f;
    g->x0 = x0, g->y0 = y0;
    g->gw = (int)((x1 - x0) / g->cell) + 1;
    g->gh = (int)((y1 - y0) / g->cell) + 1;
    size_t nc = (size_t)g->gw * g->gh;
    g->start = calloc(nc + 1, sizeof *g->start);
    g->idx = malloc((pts->n ? pts->n : 1) * sizeof *g->idx);
    if (!g->start || !g->idx) {
        gm_grid_free(g);
        return GM_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < pts->n; k++) {
        int cx = (int)((pts->p[k].x - x0) / g->cell), cy = (int)((pts->p[k].y - y0) / g->cell);
        g->start[(size_t)cy * g->gw + cx + 1]++;
    }
    for (size_t c = 0; c < nc; c++)
        g->start[c + 1] += g->start[c];
    uint32_t *fill = malloc((nc ? nc : 1) * sizeof *fill);
    if (!fill) {
        gm_grid_free(g);
        return GM_ERR_NOMEM;
    }
    memcpy(fill, g->start, nc * sizeof *fill);
    for (uint32_t k = 0; k < pts->n; k++) { /* increasing k: each cell stays sorted */
        int cx = (int)((pts->p[k].x - x0) / g->cell), cy = (int)((pts->p[k].y - y0) / g->cell);
        g->idx[fill[(size_t)cy * g->gw + cx]++] = k;
    }
    free(fill);
    return GM_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

uint32_t gm_grid_gather(const gm_grid *g, float cx, float cy, float r, int sorted, uint32_t *out)
{
    uint32_t n = gm_grid_gather_box(g, cx - r, cy - r, cx + r, cy + r, out);
    if (sorted)
        qsort(out, n, sizeof *out, cmp_u32);
    return n;
}

void gm_grid_box_cells(const gm_grid *g, float x0, float y0, float x1, float y1, int *cx0,
                       int *cy0, int *cx1, int *cy1)
{
    int gx0 = (int)floorf((x0 - g->x0) / g->cell), gx1 = (int)floorf((x1 - g->x0) / g->cell);
    int gy0 = (int)floorf((y0 - g->y0) / g->cell), gy1 = (int)floorf((y1 - g->y0) / g->cell);
    if (gx0 < 0) gx0 = 0;
    if (gy0 < 0) gy0 = 0;
    if (gx1 >= g->gw) gx1 = g->gw - 1;
    if (gy1 >= g->gh) gy1 = g->gh - 1;
    *cx0 = gx0, *cy0 = gy0, *cx1 = gx1, *cy1 = gy1;
}

uint32_t gm_grid_gather_box(const gm_grid *g, float x0, float y0, float x1, float y1, uint32_t *out)
{
    int gx0, gy0, gx1, gy1;
    gm_grid_box_cells(g, x0, y0, x1, y1, &gx0, &gy0, &gx1, &gy1);
    uint32_t n = 0;
    for (int y = gy0; y <= gy1; y++) {
        uint32_t k0, k1;
        gm_grid_span(g, y, gx0, gx1, &k0, &k1);
        for (uint32_t k = k0; k < k1; k++)
            out[n++] = g->idx[k];
    }
    return n;
}

/* A thread's items, its rows one after another in the order it took them. */
typedef struct {
    char *buf;
    size_t cap, used; /* items */
} row_buf;

/* Room for `more` items past b->used (doubling), 0 when out of memory. */
static int row_buf_room(row_buf *b, size_t elem, size_t more)
{
    if (b->cap - b->used >= more)
        return 1;
    size_t cap = b->cap ? 2 * b->cap : 4096;
    if (cap < b->used + more)
        cap = b->used + more;
    char *grown = realloc(b->buf, cap * elem);
    if (!grown)
        return 0;
    b->buf = grown, b->cap = cap;
    return 1;
}

gm_status gm_grid_rows(const gm_points *pts, float reach, int grid, int sorted, size_t elem,
                       gm_grid_row row, const void *ctx, void **items, uint32_t *n_items)
{
    *items = NULL;
    *n_items = 0;
    uint32_t n = pts->n;
    gm_grid g;
    memset(&g, 0, sizeof g);
    gm_status st = grid ? gm_grid_build(pts, reach, &g) : GM_OK;
    if (st != GM_OK)
        return st;
    const int nt = n >= 128 ? gm_threads() : 1;
    uint32_t *cnt = calloc((size_t)n + 1, sizeof *cnt), *who = malloc((n ? n : 1) * sizeof *who);
    size_t *at = malloc((n ? n : 1) * sizeof *at);
    row_buf *tb = calloc((size_t)nt, sizeof *tb);
    int fail = !cnt || !who || !at || !tb;
    if (!fail) {
#pragma omp parallel num_threads(nt) reduction(| : fail)
        {
            const int t = omp_get_thread_num();
            row_buf *b = &tb[t];
            uint32_t *near = grid ? malloc(GM_GRID_ROW_ROOM * (size_t)(n ? n : 1) * sizeof *near) : NULL;
            fail = grid && near == NULL;
#pragma omp for schedule(dynamic, 64)
            for (int64_t i = 0; i < (int64_t)n; i++) {
                if (fail)
                    continue;
                /* the row into what is left of the thread's buffer; one
                 * that does not fit is made again once the buffer has grown
                 * (near gathered anew: the row may have overwritten it) */
                uint32_t c = 0;
                for (int again = 0; again < 2; again++) {
                    uint32_t m = grid ? gm_grid_gather(&g, pts->p[i].x, pts->p[i].y, reach, sorted, near) : 0;
                    size_t room = b->cap - b->used;
                    c = row(ctx, (uint32_t)i, grid ? near : NULL, m,
                            b->buf ? b->buf + elem * b->used : NULL, room);
                    if (c <= room)
                        break;
                    if (again || !row_buf_room(b, elem, c)) {
                        fail = 1;
                        break;
                    }
                }
                who[i] = (uint32_t)t, at[i] = b->used, cnt[i + 1] = c;
                b->used += c;
            }
            free(near);
        }
    }
    if (!fail) {
        for (uint32_t i = 0; i < n; i++)
            cnt[i + 1] += cnt[i];
        *items = malloc((cnt[n] ? cnt[n] : 1) * elem);
        fail = *items == NULL;
    }
    if (!fail)
        for (uint32_t i = 0; i < n; i++)
            if (cnt[i + 1] > cnt[i]) /* a thread with no items has no buffer */
                memcpy((char *)*items + elem * cnt[i], tb[who[i]].buf + elem * at[i],
                       elem * (cnt[i + 1] - cnt[i]));
    for (int t = 0; tb && t < nt; t++)
        free(tb[t].buf);
    free(tb);
    free(who);
    free(at);
    gm_grid_free(&g);
    if (fail) {
        free(cnt);
        free(*items);
        *items = NULL;
        return GM_ERR_NOMEM;
    }
    *n_items = cnt[n];
    free(cnt);
    return GM_OK;
}

typedef struct {
    const gm_points *pts;
    float l2min, l2max;
    uint64_t seed, thr;
} pair_sel;

/* A row's pairs in increasing j from near in the grid's order: the few
 * selected sorted instead of the whole box gathered sorted (a 1080p
 * frame's fine level, 1,600 corners and some 130 a box: qsort took 16 of
 * the level's 17 ms on one core, docs/speed.md). */
static uint32_t pair_row(const void *ctx, uint32_t i, uint32_t *near, uint32_t m, void *out,
                         size_t cap)
{
    const pair_sel *c = ctx;
    uint32_t n = select_row(c->pts, i, near, m, c->l2min, c->l2max, c->seed, c->thr, out, cap);
    uint32_t *o = out;
    if (near && n <= cap) /* the row is made again when it did not fit */
        for (uint32_t k = 1; k < n; k++) {
            uint32_t v = o[k], t = k;
            for (; t > 0 && o[t - 1] > v; t--)
                o[t] = o[t - 1];
            o[t] = v;
        }
    return n;
}

/* Both selections: every pair tested (grid == 0), or only the pairs of
 * grid cells of side lmax that touch (grid == 1); the same output. */
static gm_status select_pairs(const gm_points *pts, float lmin, float lmax, double prob,
                              uint64_t seed, int grid, gm_bases *b)
{
    b->n = 0;
    b->key = NULL;
    if (pts->n > 65535)
        return GM_ERR_INVALID;
    pair_sel c = {pts, lmin * lmin, lmax * lmax, seed, gm_prob_threshold(prob)};
    void *items;
    gm_status st = gm_grid_rows(pts, lmax, grid, 0, sizeof *b->key, pair_row, &c, &items, &b->n);
    b->key = items;
    return st;
}

gm_status gm_bases_select_cpu(const gm_points *pts, float lmin, float lmax, double prob,
                              uint64_t seed, gm_bases *b)
{
    return select_pairs(pts, lmin, lmax, prob, seed, 0, b);
}

gm_status gm_bases_select_local_cpu(const gm_points *pts, float lmin, float lmax, double prob,
                                    uint64_t seed, gm_bases *b)
{
    return select_pairs(pts, lmin, lmax, prob, seed, 1, b);
}

/* A point keeps a key only while |u - B/2| < GM_UV_HALF and |v| < GM_UV_HALF
 * cells, B cells a basis length: within this many basis lengths of the
 * midpoint (the square's half-diagonal, and a margin). */
#define GM_ITEM_REACH (1.4143f * GM_UV_HALF / GM_BASIS_B + 0.01f)

/* A thread's scratch of gm_grid_items: its gather and key buffers, and
 * the keys it made for the bases of the current block, in the order it made
 * them (reused block after block). */
typedef struct {
    uint64_t *seen;
    uint32_t *near;
    uint32_t *k;
    size_t n, cap;
} key_buf;

/* Bases a block of gm_grid_items, per thread (at least 4 threads
 * counted): the block's keys wait in the threads' buffers until laid out,
 * so this bounds them (a fine level's basis has up to a few thousand keys:
 * a few MB), and a block has 16 dynamic chunks of 4 bases a thread or
 * more. */
#define GM_ITEM_BLOCK 64u

/* Appends c keys to kb; 0, or -1 for want of memory. */
static int key_push(key_buf *kb, const uint32_t *keyv, uint32_t c)
{
    if (kb->n + c > kb->cap) {
        size_t cap = kb->cap ? kb->cap : 4096;
        while (cap < kb->n + c)
            cap *= 2;
        uint32_t *k2 = realloc(kb->k, cap * sizeof *k2);
        if (!k2)
            return -1;
        kb->k = k2, kb->cap = cap;
    }
    memcpy(kb->k + kb->n, keyv, c * sizeof *keyv);
    kb->n += c;
    return 0;
}

/* Grows the item arrays, of which the first used items are made, to hold
 * need items (doubling): new arrays from gm_alloc_large (huge pages; a
 * realloc copied the whole of each old array into fresh small pages, the
 * most page faults of a photograph's reference) and the used items moved. */
static int items_room(uint32_t **keys, uint32_t **vals, size_t *cap, size_t used, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 65536;
    while (c < need)
        c *= 2;
    uint32_t *k2 = gm_alloc_large(c, sizeof *k2), *v2 = gm_alloc_large(c, sizeof *v2);
    if (!k2 || !v2) {
        free(k2);
        free(v2);
        return -1;
    }
    if (used > 0) {
        memcpy(k2, *keys, used * sizeof *k2);
        memcpy(v2, *vals, used * sizeof *v2);
    }
    free(*keys);
    free(*vals);
    *keys = k2, *vals = v2, *cap = c;
    return 0;
}

gm_status gm_grid_items(const gm_points *cloud, float cell, uint32_t nb, uint32_t key_bound,
                        gm_item_keys fn, const void *ctx, uint32_t **keys, uint32_t **vals,
                        uint32_t *n_items)
{
    *keys = *vals = NULL;
    *n_items = 0;
    gm_grid g;
    gm_status st = gm_grid_build(cloud, cell, &g);
    if (st != GM_OK)
        return st;
    /* One pass, in blocks of GM_ITEM_BLOCK bases a thread: the threads make the
     * block's keys into their buffers, basis d noting whose (who), where
     * (at) and how many (cnt); the block is then appended in basis order.
     * The two passes before (count, then make every key again to fill)
     * did twice the work; the blocks keep the memory as it was, the items'
     * two arrays and a block's keys (docs/scene.md, section 13). */
    const int nt = gm_threads();
    const uint32_t blk = GM_ITEM_BLOCK * (uint32_t)(nt > 4 ? nt : 4);
    uint32_t *cnt = malloc(blk * sizeof *cnt);
    size_t *at = malloc(blk * sizeof *at);
    uint16_t *who = malloc(blk * sizeof *who);
    key_buf *buf = calloc((size_t)nt, sizeof *buf);
    size_t n = 0, cap = 0;
    int fail = !cnt || !at || !who || !buf || nt > 65535;
    for (uint32_t b0 = 0; b0 < nb && !fail; b0 += blk) {
        const uint32_t m = nb - b0 < blk ? nb - b0 : blk;
#pragma omp parallel num_threads(nt) reduction(| : fail)
        {
            const int tid = omp_get_thread_num();
            key_buf *kb = &buf[tid];
            kb->n = 0;
            if (!kb->seen)
                kb->seen = calloc((key_bound + 63) / 64, sizeof *kb->seen);
            if (!kb->near)
                kb->near = malloc((cloud->n ? cloud->n : 1) * 2 * sizeof *kb->near);
            int bad = !kb->seen || !kb->near;
#pragma omp for schedule(dynamic, 4)
            for (int64_t i = 0; i < (int64_t)m; i++) {
                if (bad)
                    continue;
                uint32_t *keyv = kb->near + cloud->n;
                uint32_t c = fn(ctx, b0 + (uint32_t)i, &g, kb->near, kb->seen, keyv);
                cnt[i] = c, at[i] = kb->n, who[i] = (uint16_t)tid;
                bad = key_push(kb, keyv, c) != 0;
            }
            fail = bad;
        }
        size_t add = 0;
        for (uint32_t i = 0; i < m && !fail; i++)
            add += cnt[i];
        if (fail || n + add > UINT32_MAX || items_room(keys, vals, &cap, n, n + add) != 0) {
            fail = 1;
            break;
        }
        for (uint32_t i = 0; i < m; i++) {
            memcpy(*keys + n, buf[who[i]].k + at[i], cnt[i] * sizeof **keys);
            for (uint32_t k = 0; k < cnt[i]; k++)
                (*vals)[n + k] = b0 + i;
            n += cnt[i];
        }
    }
    gm_grid_free(&g);
    for (int t = 0; buf && t < nt; t++) {
        free(buf[t].seen);
        free(buf[t].near);
        free(buf[t].k);
    }
    free(buf);
    free(who);
    free(at);
    free(cnt);
    if (!fail && !*keys) /* no items: arrays of one, as callers free them */
        fail = items_room(keys, vals, &cap, 0, 1) != 0;
    if (fail) {
        free(*keys);
        free(*vals);
        *keys = *vals = NULL;
        return GM_ERR_NOMEM;
    }
    *n_items = (uint32_t)n;
    return GM_OK;
}

uint32_t gm_keys_add(uint64_t *seen, uint32_t key, uint32_t *keyv, uint32_t c)
{
    if (key == GM_KEY_EMPTY || (seen[key >> 6] >> (key & 63) & 1))
        return c;
    seen[key >> 6] |= 1ull << (key & 63);
    keyv[c] = key;
    return c + 1;
}

void gm_keys_clear(uint64_t *seen, const uint32_t *keyv, uint32_t c)
{
    for (uint32_t k = 0; k < c; k++)
        seen[keyv[k] >> 6] = 0;
}

typedef struct {
    const gm_points *pts, *cloud;
    const uint32_t *basis_keys;
} pair_items;

static uint32_t pair_keys(const void *ctx, uint32_t d, const gm_grid *g, uint32_t *near,
                          uint64_t *seen, uint32_t *keyv)
{
    const pair_items *x = ctx;
    gm_point a = x->pts->p[x->basis_keys[d] >> 16], b = x->pts->p[x->basis_keys[d] & 0xFFFF];
    gm_frame f = gm_frame_of(a, b);
    float len = hypotf(b.x - a.x, b.y - a.y);
    uint32_t m = gm_grid_gather(g, (a.x + b.x) / 2, (a.y + b.y) / 2, GM_ITEM_REACH * len + 1.0f, 0,
                                near);
    uint32_t c = 0;
    for (uint32_t t = 0; t < m; t++) {
        const gm_point q = x->cloud->p[near[t]];
        if (!gm_near_endpoint(a, b, q))
            c = gm_keys_add(seen, gm_frame_key(&f, q), keyv, c);
    }
    gm_keys_clear(seen, keyv, c);
    return c;
}

gm_status gm_basis_items_local_cpu(const gm_points *basis_pts, const uint32_t *basis_keys,
                                   uint32_t nb, const gm_points *cloud, uint32_t **keys,
                                   uint32_t **vals, uint32_t *n_items)
{
    float lmax = 1.0f; /* the grid cell: the longest basis's reach */
    for (uint32_t d = 0; d < nb; d++) {
        gm_point a = basis_pts->p[basis_keys[d] >> 16], b = basis_pts->p[basis_keys[d] & 0xFFFF];
        lmax = fmaxf(lmax, hypotf(b.x - a.x, b.y - a.y));
    }
    pair_items x = {basis_pts, cloud, basis_keys};
    return gm_grid_items(cloud, GM_ITEM_REACH * lmax, nb, 1u << 18, pair_keys, &x, keys, vals,
                         n_items);
}
