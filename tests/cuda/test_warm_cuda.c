/* test_warm_cuda.c: GM_DEVICE_AUTO's warm start (src/pipeline/warm.c) on a
 * GPU.  One process, in order, since what auto does depends on whether CUDA
 * runs in the process already:
 *   1. a reference under auto begins on the CPU and, with no word of what is
 *      coming, moves to the GPU once its queries have cost the CPU about the
 *      GPU's start and the preparation (the ski rental): not after the first
 *      query, and before the CPU has spent three times that; threads matching
 *      at once while it moves get the CPU's answers (the GPU's are the same
 *      within the parity tolerance);
 *   2. the next reference under auto is prepared on the GPU at once;
 *   3. (in a process of its own, this program run again with "threads":
 *      CUDA must not run yet) threads matching at once on an auto reference
 *      while gm_ref_expect(r, -1, 1) moves it get the CPU's answers, and the
 *      call returns with the GPU's copy ready.
 * Exit 77 (skipped) without a device. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/gm_cuda.h"
#include "gmatch.h"

#include "test_util.h"

static const char *const k_queries[] = {
    "data/bench/q_text_00_easy.jpg", "data/bench/q_text_01_medium.jpg",
    "data/bench/q_text_neg.jpg",     "data/bench/q_text_02_medium.jpg",
};
#define NQ (int)(sizeof k_queries / sizeof k_queries[0])
#define THREADS 4

static gm_image g_ref, g_q[NQ];
static gm_result g_cpu[NQ]; /* the CPU's answers */

static void setup(void)
{
    g_ref = load_data("data/bench/ref_text.jpg");
    for (int i = 0; i < NQ; i++)
        g_q[i] = load_data(k_queries[i]);
}

static void teardown(void)
{
    gm_image_free(&g_ref);
    for (int i = 0; i < NQ; i++)
        gm_image_free(&g_q[i]);
}

static gm_ref *prepare(gm_device d)
{
    gm_params p = gm_params_default();
    p.device = d;
    gm_ref *r = NULL;
    if (gm_ref_prepare(&p, gm_image_view(&g_ref), &r) != GM_OK)
        ck_abort_msg("prepare: %s", gm_ref_error(r));
    return r;
}

/* res against the CPU's answer of query i: the same status, the corners
 * within 0.01 px (the CPU and CUDA parity of tests/cuda) */
static void check_same(int i, const gm_result *res, const char *what)
{
    const gm_result *c = &g_cpu[i];
    if (res->status != c->status)
        ck_abort_msg("%s, query %d: status %d, the CPU's %d", what, i, res->status, c->status);
    if (c->status == GM_MATCH_FOUND) {
        double gap = h_corner_gap(c->h, res->h, g_q[i].width, g_q[i].height);
        if (!(gap <= 0.01))
            ck_abort_msg("%s, query %d: %.4g px from the CPU", what, i, gap);
    }
}

typedef struct {
    const gm_ref *r;
    int first, n;
    gm_result res[64];
    gm_status st[64];
} worker_t;

static void cpu_answers(void)
{
    gm_ref *cpu = prepare(GM_DEVICE_CPU);
    for (int i = 0; i < NQ; i++)
        EXPECT_OK(gm_match(cpu, gm_image_view(&g_q[i]), &g_cpu[i]));
    EXPECT_EQ(g_cpu[0].status, GM_MATCH_FOUND);
    gm_ref_free(cpu);
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    for (int k = 0; k < w->n; k++)
        w->st[k] = gm_match(w->r, gm_image_view(&g_q[(w->first + k) % NQ]), &w->res[k]);
    return NULL;
}

START_TEST(test_warm)
{
    cpu_answers();

    /* 1. the ski rental */
    gm_ref *r = prepare(GM_DEVICE_AUTO);
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU);
    if (!strstr(gm_ref_device(r), "once the work repays"))
        ck_abort_msg("device: %s", gm_ref_device(r));
    double cost = 250.0 + gm_ref_time_ms(r), spent = 0.0;
    int n = 0, started_at = -1;
    for (; n < 2000 && gm_ref_backend(r) == GM_DEVICE_CPU; n++) {
        gm_result res;
        if (started_at < 0 && gm_ref_starting(r))
            started_at = n;
        EXPECT_OK(gm_match(r, gm_image_view(&g_q[n % NQ]), &res));
        check_same(n % NQ, &res, "auto, before the move");
        spent += res.time.total;
        if (!strstr(gm_ref_device(r), "once the work repays") && gm_ref_backend(r) == GM_DEVICE_CPU)
            ck_abort_msg("the start failed: %s", gm_ref_device(r));
        if (n == 0 && res.time.total < cost && gm_ref_starting(r))
            ck_abort_msg("started after one query of %.1f ms (cost %.1f ms)", res.time.total,
                         cost);
        if (started_at < 0 && !gm_ref_starting(r) && gm_ref_backend(r) == GM_DEVICE_CPU &&
            spent > 3.0 * cost + 500.0)
            ck_abort_msg("not started after %d queries, %.1f ms on the CPU (cost %.1f ms): %s",
                         n + 1, spent, cost, gm_ref_device(r));
    }
    printf("auto: moved to the GPU after %d queries, %.1f ms on the CPU (start at query %d, "
           "cost %.1f ms): %s\n", n, spent, started_at, cost, gm_ref_device(r));
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CUDA);
    EXPECT_EQ(gm_ref_gpus(r), 1);
    EXPECT(strncmp(gm_ref_device(r), "cuda", 4) == 0);
    EXPECT(*gm_ref_fallback(r) == '\0');
    for (int i = 0; i < NQ; i++) {
        gm_result res;
        EXPECT_OK(gm_match(r, gm_image_view(&g_q[i]), &res));
        check_same(i, &res, "auto, on the GPU");
    }
    gm_ref_free(r);

    /* 2. CUDA runs in the process: the next reference goes there at once */
    r = prepare(GM_DEVICE_AUTO);
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CUDA);
    EXPECT(!gm_ref_starting(r));
    gm_ref_free(r);
}
END_TEST

/* Threads matching at once on an auto reference while gm_ref_expect moves
 * it: every answer the CPU's (within the parity tolerance), none lost. */
START_TEST(test_warm_threads)
{
    cpu_answers();
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_AUTO;
    gm_ref *r = NULL;
    EXPECT_OK(gm_ref_prepare(&p, gm_image_view(&g_ref), &r));
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CPU); /* CUDA does not run in this process yet */
    static worker_t w[THREADS];
    pthread_t t[THREADS];
    for (int k = 0; k < THREADS; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].r = r, w[k].first = k, w[k].n = 24;
        EXPECT(pthread_create(&t[k], NULL, worker, &w[k]) == 0);
    }
    EXPECT_OK(gm_ref_expect(r, -1, 1));
    EXPECT(!gm_ref_starting(r));
    EXPECT_EQ(gm_ref_backend(r), GM_DEVICE_CUDA);
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < THREADS; k++)
        for (int j = 0; j < w[k].n; j++) {
            if (w[k].st[j] != GM_OK)
                ck_abort_msg("thread %d query %d: %s", k, j, w[k].res[j].error);
            check_same((w[k].first + j) % NQ, &w[k].res[j], "threads while moving");
        }
    gm_ref_free(r);
}
END_TEST

/* A suite of one test, for one process each (main) */
static const TTest *g_test;
static Suite *one_suite(void)
{
    Suite *s = suite_create("warm_cuda");
    TCase *tc = tcase_create("cuda");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, g_test);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    g_test = argc > 1 && !strcmp(argv[1], "threads") ? test_warm_threads : test_warm;
    int rc = run_cuda_suite(one_suite);
    if (g_test == test_warm_threads)
        return rc;
    if (rc != 0)
        return rc; /* a failure, or 77: no device */
    fflush(stdout);
    pid_t pid = fork(); /* the second part in a fresh process: no CUDA yet */
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "threads", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1;
    return WEXITSTATUS(status);
}
