/* test_stream.c: jobs on a pool of threads handed on in order
 * (src/cli/stream.c): every job once, in order, the window bound, a stop
 * part-way, and the edge cases (no job, no worker, one slot). */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/stream.h"
#include "test_util.h"

typedef struct {
    int n, ring;
    long *slot;          /* the caller's storage: job i's result in slot i % ring */
    int *runs;           /* per job: how often it ran */
    int taken;           /* atomic: jobs begun */
    int max_ahead;       /* the most jobs begun and not handed on, seen by put */
    int next_put;        /* the job put expects next */
    int stop_at;         /* put asks to stop after this job (-1: never) */
    int bad;             /* put saw a job out of order or a wrong result */
} jobs;

static void work(void *ctx, int i, int slot)
{
    jobs *j = ctx;
    __atomic_fetch_add(&j->taken, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&j->runs[i], 1, __ATOMIC_SEQ_CST);
    /* uneven jobs: every seventh one slow, so that later ones finish first */
    struct timespec d = {0, (i % 7 == 0 ? 300 : 5) * 1000L + (long)(i % 13) * 1000L};
    nanosleep(&d, NULL);
    j->slot[slot] = (long)i * i + 1;
}

static int put(void *ctx, int i, int slot)
{
    jobs *j = ctx;
    if (i != j->next_put || j->slot[slot] != (long)i * i + 1)
        j->bad++;
    j->slot[slot] = -1; /* a slot is written again only for a later job */
    j->next_put = i + 1;
    int ahead = __atomic_load_n(&j->taken, __ATOMIC_SEQ_CST) - i;
    if (ahead > j->max_ahead)
        j->max_ahead = ahead;
    return i == j->stop_at;
}

static jobs *jobs_new(int n, int ring, int stop_at)
{
    jobs *j = calloc(1, sizeof *j);
    ck_assert_ptr_nonnull(j);
    j->n = n, j->ring = ring, j->stop_at = stop_at;
    j->slot = calloc((size_t)(ring > 0 ? ring : 1), sizeof *j->slot);
    j->runs = calloc((size_t)(n > 0 ? n : 1), sizeof *j->runs);
    ck_assert(j->slot && j->runs);
    return j;
}

static void jobs_free(jobs *j)
{
    free(j->slot);
    free(j->runs);
    free(j);
}

/* every job ran once, and was handed on in order with its own result */
static void check_all(jobs *j, int handed)
{
    ck_assert_int_eq(j->bad, 0);
    ck_assert_int_eq(j->next_put, handed);
    for (int i = 0; i < j->n; i++)
        ck_assert_int_eq(j->runs[i], i < handed ? 1 : 0);
}

START_TEST(test_order)
{
    const int cases[][3] = {{500, 8, 16}, {300, 3, 64}, {200, 16, 4}, {100, 4, 1}, {50, 1, 8},
                            {40, 0, 8},   {5, 32, 64}, {1, 4, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int n = cases[c][0], workers = cases[c][1], ring = cases[c][2];
        jobs *j = jobs_new(n, ring, -1);
        int handed = gm_stream_run(n, workers, ring, work, put, j);
        ck_assert_msg(handed == n, "n %d workers %d ring %d: %d handed on", n, workers, ring,
                      handed);
        check_all(j, handed);
        /* never more than ring jobs begun and not yet handed on (the one
         * being handed on counted) */
        ck_assert_msg(j->max_ahead <= ring, "n %d workers %d ring %d: %d ahead", n, workers, ring,
                      j->max_ahead);
        jobs_free(j);
    }
}
END_TEST

START_TEST(test_stop)
{
    /* put asks to stop after job 100: the jobs already taken are still
     * handed on, in order, and no later one runs */
    for (int workers = 0; workers <= 8; workers += 4) {
        const int n = 400, ring = 16;
        jobs *j = jobs_new(n, ring, 100);
        int handed = gm_stream_run(n, workers, ring, work, put, j);
        ck_assert_int_ge(handed, 101);
        ck_assert_int_le(handed, 101 + ring);
        ck_assert_int_eq(j->taken, handed);
        check_all(j, handed);
        jobs_free(j);
    }
    /* a stop at the last job */
    jobs *j = jobs_new(30, 8, 29);
    ck_assert_int_eq(gm_stream_run(30, 4, 8, work, put, j), 30);
    check_all(j, 30);
    jobs_free(j);
}
END_TEST

START_TEST(test_empty)
{
    jobs *j = jobs_new(0, 4, -1);
    ck_assert_int_eq(gm_stream_run(0, 4, 4, work, put, j), 0);
    ck_assert_int_eq(gm_stream_run(-3, 4, 4, work, put, j), 0);
    ck_assert_int_eq(j->taken, 0);
    ck_assert_int_eq(j->next_put, 0);
    jobs_free(j);
}
END_TEST

static Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_stop);
    tcase_add_test(tc, test_empty);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(stream_suite());
}
