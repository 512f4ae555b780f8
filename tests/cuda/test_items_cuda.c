/* test_items_cuda.c: the GPU items stage (src/cuda/items.cu) against the CPU
 * (gm_basis_items_cpu): the same number of items and the same keys[] and
 * vals[] arrays, element by element (so the same order).  Exit 77 (skipped)
 * without a CUDA device. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/gm_cuda.h"
#include "common/common.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "cuda/items_cuda.h"
#include "stages/affine.h"
#include "test_util.h"

static uint64_t rng = 0x17E35;
static double unit(void)
{
    rng = gm_mix64(rng);
    return (double)(rng >> 11) / 9007199254740992.0;
}

static gm_point random_point(float w, float h)
{
    return (gm_point){(float)(unit() * w), (float)(unit() * h), (float)((unit() * 2 - 1) * GM_PI),
                      1.0f};
}

/* n points: n_clustered of them in clusters of up to 12 around a few centres
 * (tiny offsets, the same angle, some exact copies: many share a key in most
 * frames), the rest uniform; then shuffled so that the copies of a key fall
 * in different warps and chunks. */
static gm_points cloud_points(uint32_t n, uint32_t n_clustered, float w, float h)
{
    gm_points p = {malloc((n ? n : 1) * sizeof(gm_point)), n};
    ck_assert_ptr_nonnull(p.p);
    uint32_t i = 0;
    while (i < n_clustered && i < n) {
        gm_point c = random_point(w, h);
        uint32_t m = 2 + (uint32_t)(unit() * 11);
        for (uint32_t j = 0; j < m && i < n_clustered && i < n; j++, i++) {
            gm_point q = c;
            if (j % 3) { /* every third an exact copy */
                q.x += (float)((unit() - 0.5) * 0.02);
                q.y += (float)((unit() - 0.5) * 0.02);
            }
            p.p[i] = q;
        }
    }
    for (; i < n; i++)
        p.p[i] = random_point(w, h);
    for (uint32_t k = n; k > 1; k--) {
        uint32_t j = (uint32_t)(unit() * k);
        gm_point t = p.p[k - 1];
        p.p[k - 1] = p.p[j];
        p.p[j] = t;
    }
    return p;
}

/* max_bases: use at most this many of the selected bases (0: all) and require
 * at least that many.  Returns the number of items. */
static uint32_t run_case(uint32_t n_corners, uint32_t n_cloud, uint32_t n_clustered, double prob,
                         uint32_t max_bases)
{
    gm_points corners = cloud_points(n_corners, n_corners / 4, 400, 400);
    gm_points cloud = cloud_points(n_cloud, n_clustered, 400, 400);
    gm_bases rb = {NULL, 0};
    if (n_corners)
        ck_assert_int_eq(gm_bases_select_cpu(&corners, 16, 150, prob, 7, &rb), GM_OK);
    uint32_t nb = rb.n;
    if (max_bases) {
        ck_assert_uint_ge(nb, max_bases);
        nb = max_bases;
    }
    uint32_t *keys = NULL, *vals = NULL, n_items = 0;
    ck_assert_int_eq(gm_basis_items_cpu(&corners, rb.key, nb, &cloud, &keys, &vals, &n_items),
                     GM_OK);
    /* the keys before the once-per-basis rule: the clusters must really
     * produce repeated keys (unless there is nothing to repeat) */
    uint64_t n_valid = 0;
    gm_vote_basis *vb = malloc((nb ? nb : 1) * sizeof *vb);
    ck_assert_ptr_nonnull(vb);
    for (uint32_t d = 0; d < nb; d++) {
        gm_point a = corners.p[rb.key[d] >> 16], b = corners.p[rb.key[d] & 0xFFFF];
        vb[d] = (gm_vote_basis){gm_frame_of(a, b), a, b};
        for (uint32_t k = 0; k < cloud.n; k++)
            n_valid += !gm_near_endpoint(a, b, cloud.p[k]) &&
                       gm_frame_key(&vb[d].f, cloud.p[k]) != GM_KEY_EMPTY;
    }
    if (n_clustered && nb)
        ck_assert_uint_gt(n_valid, n_items);
    /* GPU */
    gm_vote_basis *d_b = to_dev(vb, (size_t)nb * sizeof *vb);
    gm_point *d_cloud = to_dev(cloud.p, (size_t)cloud.n * sizeof(gm_point));
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreate(&stream), cudaSuccess);
    uint32_t *d_keys = NULL, *d_vals = NULL, g_n = 0xDEADBEEFu;
    gm_status st =
        gm_basis_items_cuda(d_b, nb, d_cloud, cloud.n, &d_keys, &d_vals, &g_n, stream);
    if (st != GM_OK)
        ck_abort_msg("gm_basis_items_cuda: %s", gm_cuda_last_error());
    ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
    ck_assert_uint_eq(g_n, n_items);
    if (n_items == 0) {
        ck_assert_ptr_null(d_keys);
        ck_assert_ptr_null(d_vals);
    }
    uint32_t *gk = malloc((n_items ? n_items : 1) * sizeof *gk);
    uint32_t *gv = malloc((n_items ? n_items : 1) * sizeof *gv);
    ck_assert_ptr_nonnull(gk);
    ck_assert_ptr_nonnull(gv);
    if (n_items) {
        ck_assert_int_eq(cudaMemcpy(gk, d_keys, n_items * 4ull, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(gv, d_vals, n_items * 4ull, cudaMemcpyDeviceToHost),
                         cudaSuccess);
    }
    for (uint32_t i = 0; i < n_items; i++)
        if (gk[i] != keys[i] || gv[i] != vals[i])
            ck_abort_msg("item %u of %u: GPU (key %u, basis %u), CPU (key %u, basis %u)", i,
                         n_items, gk[i], gv[i], keys[i], vals[i]);
    printf("items: %u bases x %u points (%u clustered): %u items (%llu keys in the window)\n",
           nb, cloud.n, n_clustered, n_items, (unsigned long long)n_valid);
    cudaFree(d_keys);
    cudaFree(d_vals);
    cudaFree(d_b);
    cudaFree(d_cloud);
    cudaStreamDestroy(stream);
    free(gk);
    free(gv);
    free(keys);
    free(vals);
    free(vb);
    free(rb.key);
    free(corners.p);
    free(cloud.p);
    return n_items;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* n items as (val << 32 | key), sorted: the items as a set. */
static uint64_t *item_set(const uint32_t *keys, const uint32_t *vals, uint32_t n)
{
    uint64_t *s = malloc((n ? n : 1) * sizeof *s);
    ck_assert_ptr_nonnull(s);
    for (uint32_t i = 0; i < n; i++)
        s[i] = (uint64_t)vals[i] << 32 | keys[i];
    qsort(s, n, sizeof *s, cmp_u64);
    return s;
}

/* The triangles' items (gm_tri_items_cuda) against gm_tri_items_cpu's: the
 * same (key, triangle) items as a set (the CPU's come in its grid's order
 * within a triangle, the GPU's in cloud order), none twice. */
static uint32_t run_tri_case(uint32_t n_corners, uint32_t n_cloud, uint32_t n_clustered)
{
    gm_points corners = cloud_points(n_corners, n_corners / 4, 400, 400);
    gm_points cloud = cloud_points(n_cloud, n_clustered, 400, 400);
    gm_tris t = {NULL, 0};
    ck_assert_int_eq(gm_tris_select_cpu(&corners, 20, 120, 0.3f, 0.3, 7, &t), GM_OK);
    uint32_t *keys = NULL, *vals = NULL, n_items = 0;
    ck_assert_int_eq(gm_tri_items_cpu(&corners, &t, &cloud, &keys, &vals, &n_items), GM_OK);
    gm_tri_frame *tf = malloc((t.n ? t.n : 1) * sizeof *tf);
    float *cs = malloc((cloud.n ? cloud.n : 1) * 2 * sizeof *cs);
    ck_assert(tf && cs);
    for (uint32_t d = 0; d < t.n; d++)
        tf[d] = gm_tri_frame_of(corners.p[t.t[d].a], corners.p[t.t[d].b], corners.p[t.t[d].c]);
    gm_points_cs(&cloud, cs);
    gm_tri_frame *d_t = to_dev(tf, (size_t)t.n * sizeof *tf);
    gm_point *d_cloud = to_dev(cloud.p, (size_t)cloud.n * sizeof(gm_point));
    float *d_cs = to_dev(cs, (size_t)cloud.n * 2 * sizeof *cs);
    uint32_t *d_keys = NULL, *d_vals = NULL, g_n = 0xDEADBEEFu;
    gm_status st = gm_tri_items_cuda(d_t, t.n, d_cloud, d_cs, cloud.n, &d_keys, &d_vals, &g_n, 0);
    if (st != GM_OK)
        ck_abort_msg("gm_tri_items_cuda: %s", gm_cuda_last_error());
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    ck_assert_uint_eq(g_n, n_items);
    uint32_t *gk = malloc((n_items ? n_items : 1) * sizeof *gk);
    uint32_t *gv = malloc((n_items ? n_items : 1) * sizeof *gv);
    ck_assert(gk && gv);
    if (n_items) {
        ck_assert_int_eq(cudaMemcpy(gk, d_keys, n_items * 4ull, cudaMemcpyDeviceToHost), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(gv, d_vals, n_items * 4ull, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    uint64_t *cset = item_set(keys, vals, n_items), *gset = item_set(gk, gv, n_items);
    for (uint32_t i = 0; i < n_items; i++) {
        if (gset[i] != cset[i])
            ck_abort_msg("triangle item %u of %u: GPU (triangle %u, key %u), CPU (triangle %u, key "
                         "%u)", i, n_items, (uint32_t)(gset[i] >> 32), (uint32_t)gset[i],
                         (uint32_t)(cset[i] >> 32), (uint32_t)cset[i]);
        if (i > 0)
            ck_assert(gset[i] != gset[i - 1]); /* a key once a triangle */
    }
    printf("triangle items: %u triangles x %u points (%u clustered): %u items\n", t.n, cloud.n,
           n_clustered, n_items);
    cudaFree(d_keys); cudaFree(d_vals); cudaFree(d_t); cudaFree(d_cloud); cudaFree(d_cs);
    free(gk); free(gv); free(cset); free(gset); free(keys); free(vals); free(tf); free(cs);
    free(t.t); free(corners.p); free(cloud.p);
    return n_items;
}

START_TEST(test_tri_items_matches_cpu)
{
    ck_assert_uint_gt(run_tri_case(40, 2000, 600), 1000);
    ck_assert_uint_gt(run_tri_case(90, 5000, 0), 1000);
    ck_assert_uint_eq(run_tri_case(40, 0, 0), 0); /* no cloud: no items */
}
END_TEST

START_TEST(test_items_empty)
{
    ck_assert_uint_eq(run_case(0, 300, 100, 0.3, 0), 0);     /* no corners: 0 bases */
    ck_assert_uint_eq(run_case(40, 0, 0, 0.3, 0), 0);        /* 0 cloud points */
    ck_assert_uint_eq(run_case(40, 300, 100, 0.0, 0), 0);    /* prob 0: 0 bases */
    /* invalid arguments */
    uint32_t *k = NULL, *v = NULL, n = 0;
    ck_assert_int_eq(gm_basis_items_cuda(NULL, 3, NULL, 5, &k, &v, &n, 0), GM_ERR_INVALID);
    ck_assert_int_eq(gm_basis_items_cuda(NULL, 0, NULL, 0, NULL, &v, &n, 0), GM_ERR_INVALID);
}
END_TEST

START_TEST(test_items_matches_cpu)
{
    run_case(20, 1, 0, 0.5, 0);                                /* one point (may give 0 items) */
    run_case(30, 31, 20, 0.5, 0);                              /* less than a warp */
    ck_assert_uint_gt(run_case(40, 300, 120, 0.3, 0), 0);      /* a chunk and a bit */
    ck_assert_uint_gt(run_case(80, 777, 500, 0.3, 0), 0);      /* heavy clustering */
    ck_assert_uint_gt(run_case(60, 3000, 1500, 0.1, 0), 0);    /* many chunks */
    ck_assert_uint_gt(run_case(300, 600, 200, 0.5, 5000), 0);  /* 5000 bases x 600 points */
}
END_TEST

static Suite *items_cuda_suite(void)
{
    Suite *s = suite_create("items_cuda");
    TCase *tc = tcase_create("cuda_vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_items_empty);
    tcase_add_test(tc, test_items_matches_cpu);
    tcase_add_test(tc, test_tri_items_matches_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(items_cuda_suite); }
