/* test_vote_cuda.c: the GPU voting stage (src/cuda/vote.cu) against the CPU
 * (gm_vote_cpu and the per-row step of gm_reduce_topk_cpu): the whole vote
 * matrix and every row's best cell must be identical.  Exit 77 (skipped)
 * without a CUDA device. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/gm_cuda.h"
#include "common/common.h"
#include "stages/points.h"
#include "stages/bases.h"
#include "stages/vote.h"
#include "stages/reduce.h"
#include "cuda/vote_cuda.h"
#include "stages/affine.h"
#include "test_util.h"

static uint64_t rng = 0x5EED;
static double unit(void)
{
    rng = gm_mix64(rng);
    return (double)(rng >> 11) / 9007199254740992.0;
}

static gm_points random_points(uint32_t n, float w, float h)
{
    gm_points p = {malloc(n * sizeof(gm_point)), n};
    ck_assert_ptr_nonnull(p.p);
    for (uint32_t i = 0; i < n; i++)
        p.p[i] = (gm_point){(float)(unit() * w), (float)(unit() * h),
                            (float)((unit() * 2 - 1) * GM_PI), 1.0f};
    return p;
}

/* The query: the reference's points under a similarity, plus others. */
static gm_points transform_points(const gm_points *src, double ang, double s, double tx, double ty,
                                  uint32_t extra)
{
    gm_points p = {malloc((src->n + extra) * sizeof(gm_point)), src->n + extra};
    ck_assert_ptr_nonnull(p.p);
    double c = cos(ang) * s, sn = sin(ang) * s;
    for (uint32_t i = 0; i < src->n; i++) {
        gm_point q = src->p[i];
        p.p[i] = (gm_point){(float)(c * q.x - sn * q.y + tx), (float)(sn * q.x + c * q.y + ty),
                            (float)(q.angle + ang), q.w};
    }
    for (uint32_t i = 0; i < extra; i++)
        p.p[src->n + i] = (gm_point){(float)(unit() * 300), (float)(unit() * 300),
                                     (float)((unit() * 2 - 1) * GM_PI), 1.0f};
    return p;
}

/* The device's outputs of one vote: the whole matrix, each row's best, the
 * scratch its rows may need. */
typedef struct {
    uint16_t *d_votes;
    gm_candidate *d_best;
    uint32_t *d_scratch;
} dev_rows;

static dev_rows rows_alloc(uint32_t n_q, uint32_t n_ref)
{
    dev_rows r = {NULL, NULL, NULL};
    ck_assert_int_eq(cudaMalloc((void **)&r.d_votes, (size_t)n_q * n_ref * 2), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&r.d_best, n_q * sizeof(gm_candidate)), cudaSuccess);
    size_t sb = gm_vote_scratch_bytes(n_ref, n_q);
    if (sb)
        ck_assert_int_eq(cudaMalloc((void **)&r.d_scratch, sb), cudaSuccess);
    return r;
}

/* The vote launched (st its status, what it is): its matrix must equal
 * votes cell for cell; the rows' bests come back (the caller frees them),
 * the device buffers are freed. */
static gm_candidate *rows_check(dev_rows r, gm_status st, const char *what, uint32_t n_q,
                                uint32_t n_ref, const uint16_t *votes)
{
    if (st != GM_OK)
        ck_abort_msg("%s: %s", what, gm_cuda_last_error());
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    uint16_t *gvotes = malloc((size_t)n_q * n_ref * 2);
    gm_candidate *gbest = malloc(n_q * sizeof *gbest);
    ck_assert_int_eq(cudaMemcpy(gvotes, r.d_votes, (size_t)n_q * n_ref * 2, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(gbest, r.d_best, n_q * sizeof *gbest, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    size_t diff = 0;
    for (size_t i = 0; i < (size_t)n_q * n_ref; i++)
        diff += votes[i] != gvotes[i];
    ck_assert_msg(diff == 0, "%s: %zu of %zu vote cells differ", what, diff, (size_t)n_q * n_ref);
    cudaFree(r.d_votes);
    cudaFree(r.d_best);
    cudaFree(r.d_scratch);
    free(gvotes);
    return gbest;
}

static void run_case(uint32_t n_corners, uint32_t n_cloud, double ang, double s)
{
    gm_points corners = random_points(n_corners, 400, 400);
    gm_points cloud = random_points(n_cloud, 400, 400);
    gm_bases rb;
    ck_assert_int_eq(gm_bases_select_cpu(&corners, 16, 150, 0.3, 7, &rb), GM_OK);
    uint32_t *keys, *vals, n_items;
    ck_assert_int_eq(gm_basis_items_cpu(&corners, rb.key, rb.n, &cloud, &keys, &vals, &n_items),
                     GM_OK);
    const uint32_t bound = 2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS;
    gm_multi cpu_table;
    ck_assert_int_eq(gm_multi_build_cpu(&cpu_table, keys, vals, n_items, bound, 11, NULL), GM_OK);
    uint32_t *d_keys = to_dev(keys, n_items * 4ull), *d_vals = to_dev(vals, n_items * 4ull);
    gm_cuckoo_dev gpu_table;
    memset(&gpu_table, 0, sizeof gpu_table);
    ck_assert_int_eq(gm_multi_build_cuda(&gpu_table, d_keys, d_vals, n_items, bound, 11, NULL, 0),
                     GM_OK);
    /* shares of the reference bases */
    uint32_t n_ref = rb.n;
    float *share = calloc(n_ref ? n_ref : 1, sizeof *share);
    for (uint32_t i = 0; i < n_items; i++)
        share[vals[i]] += 1.0f;
    for (uint32_t i = 0; i < n_ref; i++)
        share[i] /= (float)n_items;
    /* query: the corners and the cloud moved by a similarity */
    gm_points qcorners = transform_points(&corners, ang, s, 30, -20, 10);
    gm_points qcloud = transform_points(&cloud, ang, s, 30, -20, 100);
    gm_bases qb;
    ck_assert_int_eq(gm_bases_select_cpu(&qcorners, 16, 150, 0.05, 9, &qb), GM_OK);
    uint32_t n_q = qb.n;
    ck_assert_uint_gt(n_q, 0);
    /* CPU */
    uint16_t *votes = malloc((size_t)n_q * n_ref * sizeof *votes);
    gm_vote_cpu(&cpu_table, n_ref, &qcorners, qb.key, n_q, &qcloud, votes);
    gm_candidate *cbest = malloc(n_q * sizeof *cbest);
    ck_assert_uint_eq(gm_reduce_topk_cpu(votes, share, n_ref, n_q, n_q, cbest), n_q);
    /* GPU */
    gm_vote_basis *vb = malloc(n_q * sizeof *vb);
    for (uint32_t q = 0; q < n_q; q++) {
        gm_point a = qcorners.p[qb.key[q] >> 16], b = qcorners.p[qb.key[q] & 0xFFFF];
        vb[q] = (gm_vote_basis){gm_frame_of(a, b), a, b};
    }
    gm_vote_basis *d_qb = to_dev(vb, n_q * sizeof *vb);
    gm_point *d_cloud = to_dev(qcloud.p, qcloud.n * sizeof(gm_point));
    float *d_share = to_dev(share, n_ref * sizeof(float));
    dev_rows dr = rows_alloc(n_q, n_ref);
    gm_status st = gm_vote_reduce_cuda(&gpu_table, n_ref, d_share, d_qb, n_q, d_cloud, qcloud.n,
                                       dr.d_scratch, dr.d_votes, dr.d_best, 0);
    gm_candidate *gbest = rows_check(dr, st, "gm_vote_reduce_cuda", n_q, n_ref, votes);
    /* cbest is sorted by score; index the GPU rows by query basis */
    uint32_t max_votes = 0;
    for (uint32_t i = 0; i < n_q; i++) {
        const gm_candidate *c = &cbest[i], *g = &gbest[c->query_basis];
        ck_assert_uint_eq(g->query_basis, c->query_basis);
        ck_assert_uint_eq(g->ref_basis, c->ref_basis);
        ck_assert_uint_eq(g->votes, c->votes);
        ck_assert_msg(memcmp(&g->score, &c->score, sizeof(float)) == 0,
                      "row %u: score %.9g (GPU) vs %.9g (CPU)", c->query_basis, g->score, c->score);
        if (c->votes > max_votes)
            max_votes = c->votes;
    }
    ck_assert_uint_gt(max_votes, 10); /* the transformed points must really vote */
    cudaFree(d_keys); cudaFree(d_vals); cudaFree(d_qb); cudaFree(d_cloud); cudaFree(d_share);
    gm_cuckoo_dev_free(&gpu_table);
    gm_multi_free(&cpu_table);
    free(votes); free(cbest); free(gbest); free(vb); free(share);
    free(keys); free(vals); free(rb.key); free(qb.key);
    free(corners.p); free(cloud.p); free(qcorners.p); free(qcloud.p);
}

START_TEST(test_vote_matches_cpu)
{
    run_case(40, 300, 0.3, 1.0);
    run_case(80, 600, -2.0, 0.8);
    run_case(120, 900, 1.2, 1.3);
}
END_TEST

/* Rows counted in global scratch, query bases in tiles (as for references
 * with too many bases for shared memory): the same votes and bests. */
START_TEST(test_vote_tiles)
{
    gm_vote_debug_tiles(7);
    run_case(80, 600, -2.0, 0.8);
    gm_vote_debug_tiles(1);
    run_case(40, 300, 0.3, 1.0);
    gm_vote_debug_tiles(0);
}
END_TEST

/* Threads voting at once with rows of different lengths, each past the
 * default 48 KiB of shared memory: the kernel's shared-memory limit is one
 * attribute for every host thread, so one thread's setting must never leave
 * another's launch short ("too many resources requested for launch" made
 * a 1080p video fall back to the CPU under 8 workers).  Every call must
 * succeed and give its thread's first bests again. */
typedef struct {
    const gm_cuckoo_dev *table;
    uint32_t n_ref, n_q, n_cloud, rounds;
    const gm_vote_basis *d_qb;
    const gm_point *d_cloud;
    int failures, differ;
} vote_thread;

static void *vote_loop(void *arg)
{
    vote_thread *t = arg;
    cudaStream_t stream;
    float *d_share = NULL;
    gm_candidate *d_best = NULL, *first = malloc(t->n_q * sizeof *first),
                 *now = malloc(t->n_q * sizeof *now);
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&d_share, t->n_ref * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&d_best, t->n_q * sizeof(gm_candidate)) != cudaSuccess ||
        cudaMemset(d_share, 0, t->n_ref * sizeof(float)) != cudaSuccess || !first || !now) {
        t->failures = -1;
        return NULL;
    }
    for (uint32_t k = 0; k < t->rounds; k++) {
        gm_status st = gm_vote_reduce_cuda(t->table, t->n_ref, d_share, t->d_qb, t->n_q,
                                           t->d_cloud, t->n_cloud, NULL, NULL, d_best, stream);
        if (st != GM_OK || cudaStreamSynchronize(stream) != cudaSuccess) {
            t->failures++;
            continue;
        }
        gm_candidate *dst = k == 0 ? first : now;
        if (cudaMemcpy(dst, d_best, t->n_q * sizeof *dst, cudaMemcpyDeviceToHost) != cudaSuccess)
            t->failures++;
        else if (k > 0 && memcmp(first, now, t->n_q * sizeof *now) != 0)
            t->differ++;
    }
    cudaFree(d_share);
    cudaFree(d_best);
    cudaStreamDestroy(stream);
    free(first);
    free(now);
    return NULL;
}

START_TEST(test_vote_threads_shared_memory)
{
    int dev = 0, max_smem = 0;
    ck_assert_int_eq(cudaGetDevice(&dev), cudaSuccess);
    ck_assert_int_eq(
        cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
        cudaSuccess);
    if (max_smem < 96 * 1024)
        return; /* no row both past 48 KiB and two sizes apart on this device */
    gm_points corners = random_points(60, 400, 400);
    gm_points cloud = random_points(400, 400, 400);
    gm_bases rb;
    ck_assert_int_eq(gm_bases_select_cpu(&corners, 16, 150, 0.3, 7, &rb), GM_OK);
    uint32_t *keys, *vals, n_items;
    ck_assert_int_eq(gm_basis_items_cpu(&corners, rb.key, rb.n, &cloud, &keys, &vals, &n_items),
                     GM_OK);
    const uint32_t bound = 2 * GM_UV_HALF * 2 * GM_UV_HALF * GM_ANGLE_BINS;
    uint32_t *d_keys = to_dev(keys, n_items * 4ull), *d_vals = to_dev(vals, n_items * 4ull);
    gm_cuckoo_dev table;
    memset(&table, 0, sizeof table);
    ck_assert_int_eq(gm_multi_build_cuda(&table, d_keys, d_vals, n_items, bound, 11, NULL, 0),
                     GM_OK);
    gm_points qcorners = transform_points(&corners, 0.4, 1.1, 30, -20, 10);
    gm_points qcloud = transform_points(&cloud, 0.4, 1.1, 30, -20, 50);
    gm_bases qb;
    ck_assert_int_eq(gm_bases_select_cpu(&qcorners, 16, 150, 0.05, 9, &qb), GM_OK);
    uint32_t n_q = qb.n < 16 ? qb.n : 16;
    ck_assert_uint_gt(n_q, 0);
    gm_vote_basis vb[16];
    for (uint32_t q = 0; q < n_q; q++) {
        gm_point a = qcorners.p[qb.key[q] >> 16], b = qcorners.p[qb.key[q] & 0xFFFF];
        vb[q] = (gm_vote_basis){gm_frame_of(a, b), a, b};
    }
    gm_vote_basis *d_qb = to_dev(vb, n_q * sizeof *vb);
    gm_point *d_cloud = to_dev(qcloud.p, qcloud.n * sizeof(gm_point));
    /* rows of 48 KiB and a half, and of the most the device allows: the
     * reference's bases are the first rb.n cells of either */
    const uint32_t lens[2] = {(48 * 1024 + 24 * 1024) / 4, (uint32_t)(max_smem - 2048) / 4};
    vote_thread t[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        t[i] = (vote_thread){&table, lens[i % 2], n_q, qcloud.n, 400, d_qb, d_cloud, 0, 0};
        ck_assert_uint_ge(t[i].n_ref, rb.n);
        ck_assert_int_eq(pthread_create(&th[i], NULL, vote_loop, &t[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(t[i].failures == 0, "thread %d (rows of %u): %d of %u calls failed (%s)", i,
                      t[i].n_ref, t[i].failures, t[i].rounds, gm_cuda_last_error());
        ck_assert_msg(t[i].differ == 0, "thread %d: %d calls gave other bests", i, t[i].differ);
    }
    cudaFree(d_keys); cudaFree(d_vals); cudaFree(d_qb); cudaFree(d_cloud);
    gm_cuckoo_dev_free(&table);
    free(keys); free(vals); free(rb.key); free(qb.key);
    free(corners.p); free(cloud.p); free(qcorners.p); free(qcloud.p);
}
END_TEST

/* Points under the affine map p -> A p + t (A = [a0 a1; a2 a3]), their
 * gradient directions by A^-T, plus `extra` others. */
static gm_points affine_points(const gm_points *src, const double a[4], double tx, double ty,
                               uint32_t extra)
{
    gm_points p = {malloc((src->n + extra) * sizeof(gm_point)), src->n + extra};
    ck_assert_ptr_nonnull(p.p);
    double det = a[0] * a[3] - a[1] * a[2];
    for (uint32_t i = 0; i < src->n; i++) {
        gm_point q = src->p[i];
        double nx = cos(q.angle), ny = sin(q.angle);
        /* A^-T n = [a3 -a2; -a1 a0] n / det */
        double mx = (a[3] * nx - a[2] * ny) / det, my = (-a[1] * nx + a[0] * ny) / det;
        p.p[i] = (gm_point){(float)(a[0] * q.x + a[1] * q.y + tx),
                            (float)(a[2] * q.x + a[3] * q.y + ty), (float)atan2(my, mx), q.w};
    }
    for (uint32_t i = 0; i < extra; i++)
        p.p[src->n + i] = (gm_point){(float)(unit() * 400), (float)(unit() * 400),
                                     (float)((unit() * 2 - 1) * GM_PI), 1.0f};
    return p;
}

/* The triangles' vote (gm_tri_vote_reduce_cuda) on a reference table built
 * from the reference's items on the device (gm_multi_build_cuda), against the
 * CPU's: the whole matrix against a count made here from the table's
 * lookups, and every row's best against gm_tri_vote_rows_cpu's, field for
 * field.  The query is the reference under an affine map (so the rows
 * really vote) with points of its own. */
static void run_tri_case(uint32_t n_corners, uint32_t n_cloud, const double a[4])
{
    gm_points corners = random_points(n_corners, 400, 400);
    gm_points cloud = random_points(n_cloud, 400, 400);
    gm_tris rt;
    ck_assert_int_eq(gm_tris_select_cpu(&corners, 24, 120, 0.3f, 0.3, 7, &rt), GM_OK);
    uint32_t *keys, *vals, n_items;
    ck_assert_int_eq(gm_tri_items_cpu(&corners, &rt, &cloud, &keys, &vals, &n_items), GM_OK);
    gm_multi table;
    ck_assert_int_eq(gm_multi_build_cpu(&table, keys, vals, n_items, GM_AFF_KEYS, 13, NULL), GM_OK);
    float *share = gm_item_shares(vals, n_items, rt.n);
    ck_assert_ptr_nonnull(share);
    const uint32_t n_ref = rt.n;
    ck_assert_uint_gt(n_ref, 0);
    /* the device's table from the same items (its values' order within a
     * key may differ from the host's; the votes do not depend on it) */
    uint32_t *d_keys = to_dev(keys, n_items * 4ull), *d_vals = to_dev(vals, n_items * 4ull);
    gm_cuckoo_dev dtable;
    memset(&dtable, 0, sizeof dtable);
    ck_assert_int_eq(gm_multi_build_cuda(&dtable, d_keys, d_vals, n_items, GM_AFF_KEYS, 13, NULL, 0),
                     GM_OK);
    gm_points qcorners = affine_points(&corners, a, 25, -15, 10);
    gm_points qcloud = affine_points(&cloud, a, 25, -15, 200);
    gm_tris qt;
    ck_assert_int_eq(gm_tris_select_cpu(&qcorners, 24, 120, 0.3f, 0.2, 9, &qt), GM_OK);
    const uint32_t n_q = qt.n;
    ck_assert_uint_gt(n_q, 0);
    /* CPU: the rows' bests, and the matrix counted key by key */
    gm_candidate *cbest = malloc(n_q * sizeof *cbest);
    ck_assert_int_eq(gm_tri_vote_rows_cpu(&table, n_ref, share, &qcorners, qt.t, n_q, &qcloud, cbest),
                     GM_OK);
    float *cs = malloc(qcloud.n * 2 * sizeof *cs);
    gm_points_cs(&qcloud, cs);
    uint16_t *votes = calloc((size_t)n_q * n_ref, sizeof *votes);
    gm_tri_frame *tf = malloc(n_q * sizeof *tf);
    for (uint32_t q = 0; q < n_q; q++) {
        gm_point pa = qcorners.p[qt.t[q].a], pb = qcorners.p[qt.t[q].b], pc = qcorners.p[qt.t[q].c];
        tf[q] = gm_tri_frame_of(pa, pb, pc);
        for (uint32_t k = 0; k < qcloud.n; k++) {
            if (gm_near_vertex(pa.x, pa.y, pb.x, pb.y, pc.x, pc.y, qcloud.p[k]))
                continue;
            uint32_t key = gm_aframe_key_cs(&tf[q].f, qcloud.p[k], cs[2 * k], cs[2 * k + 1]);
            const uint32_t *first;
            uint32_t c = key == GM_KEY_EMPTY ? 0 : gm_multi_find(&table, key, &first);
            for (uint32_t i = 0; i < c; i++)
                votes[(size_t)q * n_ref + first[i]]++;
        }
    }
    /* GPU */
    gm_tri_frame *d_qt = to_dev(tf, n_q * sizeof *tf);
    gm_point *d_cloud = to_dev(qcloud.p, qcloud.n * sizeof(gm_point));
    float *d_cs = to_dev(cs, qcloud.n * 2 * sizeof *cs), *d_share = to_dev(share, n_ref * sizeof(float));
    dev_rows dr = rows_alloc(n_q, n_ref);
    gm_status st = gm_tri_vote_reduce_cuda(&dtable, n_ref, d_share, d_qt, n_q, d_cloud, d_cs,
                                           qcloud.n, dr.d_scratch, dr.d_votes, dr.d_best, 0);
    gm_candidate *gbest = rows_check(dr, st, "gm_tri_vote_reduce_cuda", n_q, n_ref, votes);
    uint32_t max_votes = 0;
    for (uint32_t q = 0; q < n_q; q++) {
        ck_assert_uint_eq(gbest[q].query_basis, cbest[q].query_basis);
        ck_assert_uint_eq(gbest[q].ref_basis, cbest[q].ref_basis);
        ck_assert_uint_eq(gbest[q].votes, cbest[q].votes);
        ck_assert_msg(memcmp(&gbest[q].score, &cbest[q].score, sizeof(float)) == 0,
                      "row %u: score %.9g (GPU) vs %.9g (CPU)", q, gbest[q].score, cbest[q].score);
        if (cbest[q].votes > max_votes)
            max_votes = cbest[q].votes;
    }
    ck_assert_uint_gt(max_votes, 10); /* the mapped points must really vote */
    cudaFree(d_qt); cudaFree(d_cloud); cudaFree(d_cs); cudaFree(d_share);
    cudaFree(d_keys); cudaFree(d_vals);
    gm_cuckoo_dev_free(&dtable);
    gm_multi_free(&table);
    free(votes); free(cbest); free(gbest); free(tf); free(cs); free(share);
    free(keys); free(vals); free(rt.t); free(qt.t);
    free(corners.p); free(cloud.p); free(qcorners.p); free(qcloud.p);
}

START_TEST(test_tri_vote_matches_cpu)
{
    const double shear[4] = {1.1, 0.25, -0.1, 0.85}, flat[4] = {0.9, -0.3, 0.2, 1.3};
    run_tri_case(50, 1500, shear);
    run_tri_case(90, 3000, flat);
    /* rows counted in global scratch, in tiles */
    gm_vote_debug_tiles(5);
    run_tri_case(50, 1500, shear);
    gm_vote_debug_tiles(0);
}
END_TEST

static Suite *vote_cuda_suite(void)
{
    Suite *s = suite_create("vote_cuda");
    TCase *tc = tcase_create("cuda_vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_vote_matches_cpu);
    tcase_add_test(tc, test_vote_tiles);
    tcase_add_test(tc, test_vote_threads_shared_memory);
    tcase_add_test(tc, test_tri_vote_matches_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(vote_cuda_suite); }
