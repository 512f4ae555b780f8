/* test_fault_cuda.c: the GPU failing mid-run (issue "Nothing lost, ever").
 * Faults are injected (gm_cuda_fault_set, the spec of gm_cuda_fault_inject
 * and the command line's GMATCH_CUDA_FAULT): the N-th kernel launch or device allocation from now fails as a
 * real failure would, once or (N-) every one after it.  Wherever it hits,
 * every query still gets its result: the query the device fails is matched
 * again on the CPU's twin of the reference, and so is every later query;
 * the results are the CPU's (the twin's exactly, the GPU's before the
 * failure within the parity tolerance of test_matcher_cuda), and
 * gm_ref_fallback says why.  A device failing while a reference is
 * prepared under GM_DEVICE_CUDA leaves it on the CPU the same way.  Also
 * under 4 threads on one reference.  Exit 77 (skipped) without a device. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gm_cuda.h"
#include "gmatch.h"

#include "test_util.h"

static const char *const k_queries[] = {
    "data/bench/q_retina_00_easy.jpg", "data/bench/q_retina_01_medium.jpg",
    "data/bench/q_retina_neg.jpg",     "data/bench/q_retina_02_medium.jpg",
    "data/bench/q_retina_00_easy.jpg", "data/bench/q_retina_01_medium.jpg",
};
#define NQ (int)(sizeof k_queries / sizeof k_queries[0])

static gm_image g_ref, g_q[NQ];
static gm_result g_cpu[NQ]; /* what the CPU answers */

static void setup(void)
{
    g_ref = load_data("data/bench/ref_retina.jpg");
    for (int i = 0; i < NQ; i++)
        g_q[i] = load_data(k_queries[i]);
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CPU;
    gm_ref *r = NULL;
    EXPECT_OK(gm_ref_prepare(&p, gm_image_view(&g_ref), &r));
    for (int i = 0; i < NQ; i++)
        EXPECT_OK(gm_match(r, gm_image_view(&g_q[i]), &g_cpu[i]));
    EXPECT_EQ(g_cpu[0].status, GM_MATCH_FOUND);
    gm_ref_free(r);
}

static void teardown(void)
{
    gm_cuda_fault_set(NULL);
    gm_image_free(&g_ref);
    for (int i = 0; i < NQ; i++)
        gm_image_free(&g_q[i]);
}

/* res against the CPU's answer to query i: exact when the CPU gave it */
static void check_result(int i, const gm_result *res, int on_cpu, const char *spec)
{
    const gm_result *a = &g_cpu[i];
    if (a->status != res->status || a->votes != res->votes)
        ck_abort_msg("%s, query %d: cpu status %d votes %d, got status %d votes %d", spec, i,
                     a->status, a->votes, res->status, res->votes);
    if (a->status != GM_MATCH_FOUND)
        return;
    if (on_cpu) {
        if (memcmp(a->h, res->h, sizeof a->h) != 0 || a->confidence != res->confidence)
            ck_abort_msg("%s, query %d: on the CPU twin but not the CPU's result", spec, i);
    } else {
        double gap = h_corner_gap(a->h, res->h, g_q[i].width, g_q[i].height);
        if (!(gap <= 0.01) || fabs(a->confidence - res->confidence) > 0.01)
            ck_abort_msg("%s, query %d: %.4g px from the CPU's", spec, i, gap);
    }
}

static gm_ref *prepare_cuda(void)
{
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CUDA;
    gm_ref *r = NULL;
    gm_status st = gm_ref_prepare(&p, gm_image_view(&g_ref), &r);
    if (st != GM_OK)
        ck_abort_msg("gm_ref_prepare(cuda) = %s: %s", gm_status_str(st), gm_ref_error(r));
    return r;
}

/* One fault spec through NQ queries on a fresh CUDA reference. */
static void run_spec(const char *spec, int must_hit)
{
    gm_cuda_fault_set(NULL);
    gm_ref *r = prepare_cuda();
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CUDA);
    EXPECT(*gm_ref_fallback(r) == '\0');
    EXPECT_EQ(gm_cuda_fault_set(spec), 0);
    for (int i = 0; i < NQ; i++) {
        gm_result res;
        gm_status st = gm_match(r, gm_image_view(&g_q[i]), &res);
        if (st != GM_OK)
            ck_abort_msg("%s, query %d: %s (%s)", spec, i, gm_status_str(st), res.error);
        /* a query that saw the failure was answered by the twin */
        check_result(i, &res, gm_ref_backend(r) == GM_DEVICE_CPU, spec);
    }
    long hits = gm_cuda_fault_hits();
    gm_cuda_fault_set(NULL);
    if (must_hit)
        EXPECT(hits > 0);
    if (hits > 0) {
        EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU);
        const char *why = gm_ref_fallback(r);
        if (strncmp(why, "the GPU failed (", 16) != 0 || strchr(why, '\n'))
            ck_abort_msg("%s: fallback message %s", spec, why);
        EXPECT(strncmp(gm_ref_device(r), "cpu", 3) == 0);
    } else {
        EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CUDA);
    }
    gm_ref_free(r);
}

START_TEST(test_launch_faults)
{
    static const char *const once[] = {"launch:1", "launch:3", "launch:9", "launch:25", "launch:60"};
    for (size_t k = 0; k < sizeof once / sizeof once[0]; k++)
        run_spec(once[k], k < 2);
    run_spec("launch:1-", 1);  /* the device dies: every launch fails */
    run_spec("launch:15-", 1);
}
END_TEST

START_TEST(test_alloc_faults)
{
    /* a query's buffers grow on demand: which allocation comes first
     * depends on the lane's sizes; whichever is hit, the results stand */
    static const char *const specs[] = {"alloc:1", "alloc:2", "alloc:4", "alloc:1-"};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
        run_spec(specs[k], 0);
}
END_TEST

/* The device fails while the reference is prepared under GM_DEVICE_CUDA:
 * the reference is prepared on the CPU and says why. */
START_TEST(test_prepare_fault)
{
    EXPECT_EQ(gm_cuda_fault_set("launch:2"), 0);
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CUDA;
    gm_ref *r = NULL;
    gm_status st = gm_ref_prepare(&p, gm_image_view(&g_ref), &r);
    long hits = gm_cuda_fault_hits();
    gm_cuda_fault_set(NULL);
    if (st != GM_OK)
        ck_abort_msg("gm_ref_prepare = %s: %s", gm_status_str(st), gm_ref_error(r));
    EXPECT(hits > 0);
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU);
    EXPECT(strstr(gm_ref_fallback(r), "while preparing the reference") != NULL);
    for (int i = 0; i < NQ; i++) {
        gm_result res;
        EXPECT_OK(gm_match(r, gm_image_view(&g_q[i]), &res));
        check_result(i, &res, 1, "prepare launch:2");
    }
    gm_ref_free(r);
}
END_TEST

typedef struct {
    gm_ref *r;
    int first;
    gm_status st[NQ];
    gm_result res[NQ];
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    for (int k = 0; k < NQ; k++) {
        int i = (w->first + k) % NQ;
        w->st[i] = gm_match(w->r, gm_image_view(&g_q[i]), &w->res[i]);
    }
    return NULL;
}

/* Four threads on one reference when the device fails under them: every
 * query answered, one twin. */
START_TEST(test_concurrent_fault)
{
    gm_cuda_fault_set(NULL);
    gm_ref *r = prepare_cuda();
    EXPECT_EQ(gm_cuda_fault_set("launch:20-"), 0);
    worker_t w[4];
    pthread_t t[4];
    for (int k = 0; k < 4; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].r = r, w[k].first = k;
        EXPECT(pthread_create(&t[k], NULL, worker, &w[k]) == 0);
    }
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    gm_cuda_fault_set(NULL);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < NQ; i++) {
            if (w[k].st[i] != GM_OK)
                ck_abort_msg("thread %d query %d: %s", k, i, w[k].res[i].error);
            check_result(i, &w[k].res[i], 0, "4 threads, launch:20-");
        }
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU);
    gm_ref_free(r);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("fault_cuda");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_launch_faults);
    tcase_add_test(tc, test_alloc_faults);
    tcase_add_test(tc, test_prepare_fault);
    tcase_add_test(tc, test_concurrent_fault);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(make_suite); }
