/* test_gpus_cuda.c: a reference on several GPUs (gm_params.gpus, the
 * command line's --device cuda:all and cuda:0,2; issue "Beyond one
 * process").  On a machine with one GPU the same code runs with copies on
 * that GPU ("0,0,0"): the reference prepared on each, queries of threads
 * matching at once spread over the copies (each takes some), every result
 * the same as on one GPU (bit for bit: the same kernels) and as the CPU's
 * within the parity tolerance of test_matcher_cuda; a GPU that is not there
 * is GM_ERR_DEVICE under cuda and the CPU under auto; a bad list is
 * GM_ERR_INVALID; a device failure on the copies falls back to the CPU as
 * on one GPU.  Exit 77 (skipped) without a device. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* the driver's types: cuCtxGetCurrent through the runtime */

#include "cuda/gm_cuda.h"
#include "gmatch.h"
#include "pipeline/matcher.h"

#include "test_util.h"

static const char *const k_queries[] = {
    "data/bench/q_text_00_easy.jpg", "data/bench/q_text_01_medium.jpg",
    "data/bench/q_text_neg.jpg",     "data/bench/q_text_02_medium.jpg",
};
#define NQ (int)(sizeof k_queries / sizeof k_queries[0])
#define THREADS 6
#define ROUNDS 4
/* GM_TEST_SMALL=1 (compute-sanitizer, tools/gpu.sh): 3 threads, 1 round */
static int g_threads = THREADS, g_rounds = ROUNDS;

static gm_image g_ref, g_q[NQ];
static gm_result g_one[NQ], g_cpu[NQ]; /* one GPU's answers, the CPU's */
static int g_ngpu;

static gm_ref *prepare(gm_device d, const char *gpus, gm_status want)
{
    gm_params p = gm_params_default();
    p.device = d, p.gpus = gpus;
    gm_ref *r = NULL;
    gm_status st = gm_ref_prepare(&p, gm_image_view(&g_ref), &r);
    if (st != want)
        ck_abort_msg("gm_ref_prepare(%s, gpus %s) = %s, want %s: %s", d == GM_DEVICE_CUDA ? "cuda" : "auto",
                     gpus ? gpus : "NULL", gm_status_str(st), gm_status_str(want), gm_ref_error(r));
    return r;
}

static void setup(void)
{
    g_ref = load_data("data/bench/ref_text.jpg");
    for (int i = 0; i < NQ; i++)
        g_q[i] = load_data(k_queries[i]);
    g_ngpu = gm_cuda_device_count(NULL, 0);
    gm_ref *r = prepare(GM_DEVICE_CUDA, NULL, GM_OK);
    for (int i = 0; i < NQ; i++)
        EXPECT_OK(gm_match(r, gm_image_view(&g_q[i]), &g_one[i]));
    EXPECT_EQ(g_one[0].status, GM_MATCH_FOUND);
    EXPECT_EQ(gm_ref_gpus(r), 1);
    EXPECT_EQ(gm_ref_gpu(r, 0), 0);
    EXPECT_EQ(gm_ref_gpu(r, 1), -1);
    EXPECT_EQ(gm_ref_gpu(r, -1), -1);
    /* each GPU's memory: some available, no more than all of it; a GPU
     * that is not there */
    for (int k = 0; k < g_ngpu; k++) {
        size_t avail = 0, total = 0;
        EXPECT_OK(gm_device_memory(GM_DEVICE_CUDA, k, &avail, &total));
        if (!(avail > 0 && avail <= total && total >= ((size_t)256 << 20)))
            ck_abort_msg("GPU %d: %zu of %zu bytes available", k, avail, total);
    }
    size_t avail = 0, total = 0;
    EXPECT_EQ(gm_device_memory(GM_DEVICE_CUDA, g_ngpu, &avail, &total), GM_ERR_DEVICE);
    gm_ref_free(r);
    r = prepare(GM_DEVICE_CPU, NULL, GM_OK);
    for (int i = 0; i < NQ; i++)
        EXPECT_OK(gm_match(r, gm_image_view(&g_q[i]), &g_cpu[i]));
    EXPECT_EQ(gm_ref_gpus(r), 0);
    gm_ref_free(r);
}

static void teardown(void)
{
    gm_cuda_fault_set(NULL);
    gm_image_free(&g_ref);
    for (int i = 0; i < NQ; i++)
        gm_image_free(&g_q[i]);
}

/* res against one GPU's answer (exact) or, after a fallback, the CPU's */
static void check_result(int i, const gm_result *res, const char *what)
{
    const gm_result *a = &g_one[i], *c = &g_cpu[i];
    int gpu_same = a->status == res->status && a->votes == res->votes &&
                   memcmp(a->h, res->h, sizeof a->h) == 0 && a->confidence == res->confidence;
    int cpu_same = c->status == res->status && c->votes == res->votes &&
                   memcmp(c->h, res->h, sizeof c->h) == 0 && c->confidence == res->confidence;
    if (!gpu_same && !cpu_same)
        ck_abort_msg("%s, query %d: status %d votes %d conf %.6f, one GPU %d %d %.6f, cpu %d %d %.6f",
                     what, i, res->status, res->votes, res->confidence, a->status, a->votes,
                     a->confidence, c->status, c->votes, c->confidence);
    if (a->status == GM_MATCH_FOUND) {
        double gap = h_corner_gap(c->h, a->h, g_q[i].width, g_q[i].height);
        if (!(gap <= 0.01))
            ck_abort_msg("%s, query %d: one GPU %.4g px from the CPU", what, i, gap);
    }
}

typedef struct {
    const gm_ref *r;
    int first;
    gm_status st[ROUNDS][NQ];
    gm_result res[ROUNDS][NQ];
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    for (int k = 0; k < g_rounds; k++)
        for (int j = 0; j < NQ; j++) {
            int i = (w->first + j) % NQ;
            w->st[k][i] = gm_match(w->r, gm_image_view(&g_q[i]), &w->res[k][i]);
        }
    return NULL;
}

/* THREADS threads x ROUNDS x NQ queries on r: every result right; returns
 * how many copies took queries */
static int run_threads(const gm_ref *r, const char *what)
{
    static worker_t w[THREADS];
    pthread_t t[THREADS];
    for (int k = 0; k < g_threads; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].r = r, w[k].first = k;
        EXPECT(pthread_create(&t[k], NULL, worker, &w[k]) == 0);
    }
    for (int k = 0; k < g_threads; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < g_threads; k++)
        for (int n = 0; n < g_rounds; n++)
            for (int i = 0; i < NQ; i++) {
                if (w[k].st[n][i] != GM_OK)
                    ck_abort_msg("%s: thread %d query %d: %s (%s)", what, k, i,
                                 gm_status_str(w[k].st[n][i]), w[k].res[n][i].error);
                check_result(i, &w[k].res[n][i], what);
            }
    int used = 0;
    long total = 0;
    for (int c = 0; c <= r->pl.nrep; c++) {
        used += r->pl.served && r->pl.served[c] > 0;
        total += r->pl.served ? r->pl.served[c] : 0;
    }
    if (r->pl.nrep > 0 && total != (long)g_threads * g_rounds * NQ)
        ck_abort_msg("%s: the copies took %ld queries of %d", what, total, g_threads * g_rounds * NQ);
    return r->pl.nrep > 0 ? used : 1;
}

/* Three copies on GPU 0: prepared on each, the queries spread, the same results. */
START_TEST(test_copies_on_one_gpu)
{
    gm_ref *r = prepare(GM_DEVICE_CUDA, "0,0,0", GM_OK);
    EXPECT_EQ(gm_ref_gpus(r), 3);
    for (int k = 0; k < 3; k++)
        EXPECT_EQ(gm_ref_gpu(r, k), 0);
    EXPECT_EQ(gm_ref_gpu(r, 3), -1);
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CUDA);
    EXPECT(*gm_ref_fallback(r) == '\0');
    if (!strstr(gm_ref_device(r), "queries spread over it and GPU 0, GPU 0"))
        ck_abort_msg("device: %s", gm_ref_device(r));
    int used = run_threads(r, "gpus 0,0,0");
    if (used < 2)
        ck_abort_msg("%d threads at once used %d of 3 copies", g_threads, used);
    /* one query at a time: always the first copy (the fewest in flight, 0) */
    long before = r->pl.served[0];
    gm_result res;
    for (int i = 0; i < NQ; i++) {
        EXPECT_OK(gm_match(r, gm_image_view(&g_q[i]), &res));
        check_result(i, &res, "one at a time");
    }
    EXPECT_EQ(r->pl.served[0] - before, NQ);
    /* gm_match_model through the copies as well */
    gm_ref_free(r);
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CUDA, p.gpus = "0,0", p.model = GM_MODEL_AUTO;
    EXPECT_OK(gm_ref_prepare(&p, gm_image_view(&g_ref), &r));
    EXPECT_EQ(gm_ref_gpus(r), 2);
    EXPECT_OK(gm_match_model(r, gm_image_view(&g_q[0]), GM_MODEL_SIMILARITY, &res));
    EXPECT_EQ(res.status, GM_MATCH_FOUND);
    EXPECT_EQ(res.votes, g_one[0].votes);
    gm_ref_free(r);
}
END_TEST

/* "all": every GPU of the machine (here as many as it has). */
START_TEST(test_all)
{
    gm_ref *r = prepare(GM_DEVICE_CUDA, "all", GM_OK);
    EXPECT_EQ(gm_ref_gpus(r), g_ngpu < GM_MAX_GPUS ? g_ngpu : GM_MAX_GPUS);
    for (int k = 0; k < gm_ref_gpus(r); k++) /* "all": in the devices' order */
        EXPECT_EQ(gm_ref_gpu(r, k), k);
    run_threads(r, "gpus all");
    gm_ref_free(r);
}
END_TEST

/* A GPU that is not there; a list that is not one. */
START_TEST(test_bad_lists)
{
    char list[32];
    snprintf(list, sizeof list, "0,%d", g_ngpu);
    gm_ref *r = prepare(GM_DEVICE_CUDA, list, GM_ERR_DEVICE);
    char want[64];
    snprintf(want, sizeof want, "no CUDA device %d (%d visible)", g_ngpu, g_ngpu);
    if (!strstr(gm_ref_error(r), want))
        ck_abort_msg("error: %s", gm_ref_error(r));
    gm_ref_free(r);
    r = prepare(GM_DEVICE_AUTO, list, GM_OK); /* auto: the CPU */
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU);
    EXPECT_EQ(gm_ref_gpus(r), 0);
    gm_ref_free(r);
    static const char *const bad[] = {"x", "0,", ",1", "-1", "0;1", "all,0", "1.5",
                                      "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        r = prepare(GM_DEVICE_CUDA, bad[k], GM_ERR_INVALID);
        if (!strstr(gm_ref_error(r), "gpus"))
            ck_abort_msg("gpus %s: %s", bad[k], gm_ref_error(r));
        gm_ref_free(r);
    }
}
END_TEST

/* The device failing under the copies: every query answered, the copies
 * that saw the failure on the CPU, gm_ref_fallback says so. */
START_TEST(test_fault_on_copies)
{
    gm_ref *r = prepare(GM_DEVICE_CUDA, "0,0", GM_OK);
    EXPECT_EQ(gm_cuda_fault_set("launch:30-"), 0);
    run_threads(r, "gpus 0,0, launch:30-");
    EXPECT(gm_cuda_fault_hits() > 0);
    gm_cuda_fault_set(NULL);
    if (strncmp(gm_ref_fallback(r), "the GPU failed (", 16) != 0)
        ck_abort_msg("fallback: %s", gm_ref_fallback(r));
    gm_ref_free(r);
}
END_TEST

/* What a thread's CUDA context is before and after it prepares a
 * reference on the GPU, matches with it and frees it (have: the driver's
 * cuCtxGetCurrent could be reached through the runtime). */
typedef struct {
    int have;
    gm_status st;
    void *ctx[4]; /* before, after preparing, after matching, after freeing */
} ctx_probe;

static void *ctx_probe_main(void *arg)
{
    ctx_probe *p = arg;
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        return NULL;
    CUresult (*get)(CUcontext *) = (CUresult(*)(CUcontext *))fn;
    CUcontext c = NULL;
    p->have = get(&c) == CUDA_SUCCESS;
    p->ctx[0] = c;
    gm_params prm = gm_params_default();
    prm.device = GM_DEVICE_CUDA;
    gm_ref *r = NULL;
    p->st = gm_ref_prepare(&prm, gm_image_view(&g_ref), &r);
    c = NULL, get(&c), p->ctx[1] = c;
    gm_result res;
    if (p->st == GM_OK)
        p->st = gm_match(r, gm_image_view(&g_q[0]), &res);
    c = NULL, get(&c), p->ctx[2] = c;
    gm_ref_free(r);
    c = NULL, get(&c), p->ctx[3] = c;
    return NULL;
}

/* The library gives the calling thread its device back (issue 31): a new
 * thread, which has no CUDA context, has none after preparing, matching
 * and freeing a reference on the GPU (setting "device 0" back would have
 * made one); with two GPUs or more, a thread on the last one is on it
 * again after a reference on GPU 0 answered it. */
START_TEST(test_thread_device_kept)
{
    ctx_probe p = {0};
    pthread_t th;
    EXPECT_EQ(pthread_create(&th, NULL, ctx_probe_main, &p), 0);
    pthread_join(th, NULL);
    if (!p.have) {
        printf("test_thread_device_kept: cuCtxGetCurrent not reachable, context not checked\n");
    } else {
        EXPECT_OK(p.st);
        EXPECT(p.ctx[0] == NULL);
        for (int k = 1; k < 4; k++)
            if (p.ctx[k] != NULL)
                ck_abort_msg("a context is current after step %d (none before)", k);
    }
    if (g_ngpu < 2)
        return;
    EXPECT_EQ(cudaSetDevice(g_ngpu - 1), cudaSuccess);
    gm_ref *r = prepare(GM_DEVICE_CUDA, "0", GM_OK);
    gm_result res;
    EXPECT_OK(gm_match(r, gm_image_view(&g_q[0]), &res));
    int dev = -1;
    EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
    EXPECT_EQ(dev, g_ngpu - 1);
    gm_ref_free(r);
    EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
    EXPECT_EQ(dev, g_ngpu - 1);
}
END_TEST

static Suite *gpus_suite(void)
{
    Suite *s = suite_create("gpus_cuda");
    TCase *tc = tcase_create("cuda");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_copies_on_one_gpu);
    tcase_add_test(tc, test_all);
    tcase_add_test(tc, test_bad_lists);
    tcase_add_test(tc, test_fault_on_copies);
    tcase_add_test(tc, test_thread_device_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (getenv("GM_TEST_SMALL"))
        g_threads = 3, g_rounds = 1;
    return run_cuda_suite(gpus_suite);
}
