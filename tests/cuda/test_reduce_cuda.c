/* test_reduce_cuda.c: the device top-k (src/cuda/reduce.cu) against
 * gm_reduce_select_cpu: the same k candidates in the same order, for one tile
 * and for several passes over tiles, with tied scores, empty rows (-inf) and
 * k larger than n.  Exit 77 (skipped) without a CUDA device. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/gm_cuda.h"
#include "stages/reduce.h"
#include "cuda/reduce_cuda.h"
#include "test_util.h"

/* n candidates, one per query basis, scores from a few values (ties) with
 * some empty rows; query bases shuffled so ties are resolved by index. */
static gm_candidate *make(uint32_t n, uint32_t levels)
{
    gm_candidate *c = xmalloc(n, sizeof *c);
    for (uint32_t q = 0; q < n; q++) {
        uint32_t r = rng_next();
        float z = (r % 11 == 0) ? -INFINITY : (float)(r % levels) * 0.5f - 3.0f;
        c[q] = (gm_candidate){rng_next() % 5000, q, rng_next() % 300, z};
    }
    for (uint32_t i = n; i > 1; i--) { /* shuffle */
        uint32_t j = rng_next() % i;
        gm_candidate t = c[i - 1];
        c[i - 1] = c[j];
        c[j] = t;
    }
    return c;
}

static void check_case(uint32_t n, uint32_t k, uint32_t levels)
{
    gm_candidate *c = make(n, levels), *want = xmalloc(k, sizeof *want), *got;
    cudaStream_t s;
    CK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    gm_candidate *d_in = NULL, *d_out = NULL, *d_tmp = NULL;
    CK_CUDA(cudaMalloc((void **)&d_in, n * sizeof *d_in));
    CK_CUDA(cudaMemcpyAsync(d_in, c, n * sizeof *c, cudaMemcpyHostToDevice, s));
    CK_CUDA(cudaMalloc((void **)&d_out, k * sizeof *d_out));
    size_t nt = gm_topk_tmp_count(n, k);
    if (n > GM_TOPK_TILE)
        EXPECT(nt > 0);
    CK_CUDA(cudaMalloc((void **)&d_tmp, (nt ? nt : 1) * sizeof *d_tmp));
    EXPECT_OK(gm_topk_cuda(d_in, n, k, nt ? d_tmp : NULL, d_out, s));
    uint32_t m = n < k ? n : k;
    got = xmalloc(k, sizeof *got);
    CK_CUDA(cudaMemcpyAsync(got, d_out, m * sizeof *got, cudaMemcpyDeviceToHost, s));
    CK_CUDA(cudaStreamSynchronize(s));
    EXPECT_EQ(gm_reduce_select_cpu(c, n, k, want), m);
    for (uint32_t i = 0; i < m; i++) {
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
            ck_abort_msg("n %u k %u: #%u: gpu (%u, %u, %u, %g), cpu (%u, %u, %u, %g)", n, k, i,
                         got[i].ref_basis, got[i].query_basis, got[i].votes, got[i].score,
                         want[i].ref_basis, want[i].query_basis, want[i].votes, want[i].score);
    }
    CK_CUDA(cudaFree(d_in));
    CK_CUDA(cudaFree(d_out));
    CK_CUDA(cudaFree(d_tmp));
    CK_CUDA(cudaStreamDestroy(s));
    free(c);
    free(want);
    free(got);
}

START_TEST(test_one_tile)
{
    rng_state = 11;
    check_case(1, 1, 5);
    check_case(5, 32, 3);
    check_case(400, 32, 7);
    check_case(400, 32, 1000);
    check_case(GM_TOPK_TILE, 256, 9);
    check_case(1000, 1000, 4); /* k > 32 and > half of the padded size */
}
END_TEST

START_TEST(test_several_passes)
{
    rng_state = 12;
    check_case(GM_TOPK_TILE + 1, 32, 6);
    check_case(3 * GM_TOPK_TILE + 17, 256, 50);
    if (!getenv("GM_TEST_SMALL"))
        check_case(200000, 1024, 100000); /* seven passes */
}
END_TEST

START_TEST(test_invalid)
{
    EXPECT_EQ(gm_topk_cuda(NULL, 10, 4, NULL, NULL, 0), GM_ERR_INVALID);
    EXPECT_EQ(gm_topk_cuda(NULL, 0, 4, NULL, NULL, 0), GM_OK);
    gm_candidate *d = NULL;
    CK_CUDA(cudaMalloc((void **)&d, sizeof *d));
    EXPECT_EQ(gm_topk_cuda(d, 10, GM_TOPK_TILE, NULL, d, 0), GM_ERR_INVALID); /* k too large */
    EXPECT_EQ(gm_topk_cuda(d, GM_TOPK_TILE + 1, 4, NULL, d, 0), GM_ERR_INVALID); /* no scratch */
    CK_CUDA(cudaFree(d));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("reduce_cuda");
    TCase *tc = tcase_create("topk");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_one_tile);
    tcase_add_test(tc, test_several_passes);
    tcase_add_test(tc, test_invalid);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(make_suite); }
