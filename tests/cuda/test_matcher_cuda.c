/* test_matcher_cuda.c: the whole pipeline on the GPU (--device cuda) against
 * the CPU path, on the bundled data (data/ref.jpg + data/query.jpg and every
 * pair of data/bench), same seed: same status, same votes of the winning
 * basis pair (the integer stages are exact), transforms within 0.01 px at the
 * query's corners, confidences within 0.01 (the refinement sums in another
 * order).  Also: one reference reused for many queries, and queries of
 * growing and shrinking sizes through the same device buffers.  Exit 77
 * (skipped) without a CUDA device. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gm_cuda.h"
#include "gmatch.h"
#include "pipeline/matcher.h"
#include "stages/transform.h"

#include "test_util.h"

static const char *const k_pairs[][2] = {
    {"data/ref.jpg", "data/query.jpg"},
    {"data/bench/ref_cell.jpg", "data/bench/q_cell_00_easy.jpg"},
    {"data/bench/ref_cell.jpg", "data/bench/q_cell_01_medium.jpg"},
    {"data/bench/ref_cell.jpg", "data/bench/q_cell_02_medium.jpg"},
    {"data/bench/ref_cell.jpg", "data/bench/q_cell_neg.jpg"},
    {"data/bench/ref_gravel.jpg", "data/bench/q_gravel_00_easy.jpg"},
    {"data/bench/ref_gravel.jpg", "data/bench/q_gravel_01_medium.jpg"},
    {"data/bench/ref_gravel.jpg", "data/bench/q_gravel_02_medium.jpg"},
    {"data/bench/ref_gravel.jpg", "data/bench/q_gravel_neg.jpg"},
    {"data/bench/ref_hubble_deep_field.jpg", "data/bench/q_hubble_deep_field_00_easy.jpg"},
    {"data/bench/ref_hubble_deep_field.jpg", "data/bench/q_hubble_deep_field_01_medium.jpg"},
    {"data/bench/ref_hubble_deep_field.jpg", "data/bench/q_hubble_deep_field_02_medium.jpg"},
    {"data/bench/ref_hubble_deep_field.jpg", "data/bench/q_hubble_deep_field_neg.jpg"},
    {"data/bench/ref_retina.jpg", "data/bench/q_retina_00_easy.jpg"},
    {"data/bench/ref_retina.jpg", "data/bench/q_retina_01_medium.jpg"},
    {"data/bench/ref_retina.jpg", "data/bench/q_retina_02_medium.jpg"},
    {"data/bench/ref_retina.jpg", "data/bench/q_retina_neg.jpg"},
    {"data/bench/ref_text.jpg", "data/bench/q_text_00_easy.jpg"},
    {"data/bench/ref_text.jpg", "data/bench/q_text_01_medium.jpg"},
    {"data/bench/ref_text.jpg", "data/bench/q_text_02_medium.jpg"},
    {"data/bench/ref_text.jpg", "data/bench/q_text_neg.jpg"},
};
#define N_PAIRS (sizeof k_pairs / sizeof k_pairs[0])

static gm_image load(const char *path)
{
    gm_image img;
    char err[256] = "";
    if (gm_image_load(path, gm_params_default().max_pixels, &img, err, sizeof err) != GM_OK)
        ck_abort_msg("%s: %s (run from the source directory)", path, err);
    return img;
}

/* One query on a CPU and a CUDA reference of the same image and model. */
static void compare_refs(gm_ref *rc, gm_ref *rg, const char *q_path, gm_model model, int *found)
{
    gm_image qi = load(q_path);
    gm_result a, b;
    EXPECT_OK(gm_match(rc, gm_image_view(&qi), &a));
    EXPECT_OK(gm_match(rg, gm_image_view(&qi), &b));
    if (a.status != b.status || a.votes != b.votes)
        ck_abort_msg("%s (model %d): cpu status %d votes %d, cuda status %d votes %d", q_path,
                     (int)model, a.status, a.votes, b.status, b.votes);
    if (a.status == GM_MATCH_FOUND) {
        double gap = h_corner_gap(a.h, b.h, qi.width, qi.height);
        if (!(gap <= 0.01) || fabs(a.confidence - b.confidence) > 0.01 || a.model != b.model)
            ck_abort_msg("%s (model %d): corners %.4g px apart, confidence %.4f vs %.4f, "
                         "models %d vs %d",
                         q_path, (int)model, gap, a.confidence, b.confidence, (int)a.model,
                         (int)b.model);
        ++*found;
    }
    gm_image_free(&qi);
}

static void prepare_both(const gm_image *ri, gm_model model, gm_ref **rc, gm_ref **rg)
{
    gm_params pc = gm_params_default(), pg;
    pc.model = model;
    pc.device = GM_DEVICE_CPU;
    pg = pc;
    pg.device = GM_DEVICE_CUDA;
    EXPECT_OK(gm_ref_prepare(&pc, gm_image_view(ri), rc));
    gm_status st = gm_ref_prepare(&pg, gm_image_view(ri), rg);
    if (st != GM_OK)
        ck_abort_msg("gm_ref_prepare(cuda) = %s: %s", gm_status_str(st), gm_ref_error(*rg));
    EXPECT(strncmp(gm_ref_device(*rg), "cuda", 4) == 0);
}

static void compare_pair(const char *ref_path, const char *q_path, gm_model model, int *found)
{
    gm_image ri = load(ref_path);
    gm_ref *rc = NULL, *rg = NULL;
    prepare_both(&ri, model, &rc, &rg);
    compare_refs(rc, rg, q_path, model, found);
    gm_ref_free(rc);
    gm_ref_free(rg);
    gm_image_free(&ri);
}

START_TEST(test_pairs_similarity)
{
    int found = 0;
    size_t n = getenv("GM_TEST_SMALL") ? 3 : N_PAIRS;
    for (size_t i = 0; i < n; i++)
        compare_pair(k_pairs[i][0], k_pairs[i][1], GM_MODEL_SIMILARITY, &found);
    EXPECT(found >= (int)(n * 3 / 5)); /* the data has matches to compare, not only "none" */
}
END_TEST

START_TEST(test_pairs_models)
{
    int found = 0;
    compare_pair(k_pairs[0][0], k_pairs[0][1], GM_MODEL_HOMOGRAPHY, &found);
    compare_pair(k_pairs[2][0], k_pairs[2][1], GM_MODEL_AFFINE, &found);
    EXPECT(found >= 1);
}
END_TEST

/* A reference larger than the working size (data/large: 1440x960, one fine
 * level at the reference's own pixels, voted and verified on the device like
 * level 0): crops found on the fine level, tilted views through the
 * triangles (host stages on both devices) and a negative, under similarity
 * and auto. */
START_TEST(test_large)
{
    static const char *const qs[] = {"data/large/q_crop0.jpg", "data/large/q_crop1.jpg",
                                     "data/large/q_crop2.jpg", "data/large/q_crop3.jpg",
                                     "data/large/q_tilt0.jpg", "data/large/q_tilt1.jpg",
                                     "data/large/q_neg.jpg"};
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AUTO};
    /* under the sanitizers (GM_TEST_SMALL): similarity, two crops */
    int small = getenv("GM_TEST_SMALL") != NULL;
    size_t nm = small ? 1 : sizeof models / sizeof models[0];
    size_t nq = small ? 2 : sizeof qs / sizeof qs[0];
    gm_image ri = load("data/large/ref_mosaic.jpg");
    for (size_t m = 0; m < nm; m++) {
        gm_ref *rc = NULL, *rg = NULL;
        prepare_both(&ri, models[m], &rc, &rg);
        int found = 0;
        for (size_t i = 0; i < nq; i++)
            compare_refs(rc, rg, qs[i], models[m], &found);
        /* something to compare: the crops (one of them found only under auto) */
        EXPECT(found >= (small ? 2 : models[m] == GM_MODEL_SIMILARITY ? 3 : 4));
        gm_ref_free(rc);
        gm_ref_free(rg);
    }
    gm_image_free(&ri);
}
END_TEST

/* The reference's self-maps (src/pipeline/selfmap.c: a vote of level 0 in
 * its own table, the rows refined on its own edges) on both devices: the
 * same count, each within 0.01 working px over the level; on data/large's
 * reference and on a point-symmetric one made from it (its right half the
 * left turned half a turn), which has one at least. */
START_TEST(test_selfmaps)
{
    gm_image plain = load("data/large/ref_mosaic.jpg"), sym = plain;
    const int w = plain.width, h = plain.height;
    sym.data = malloc((size_t)w * h);
    ck_assert_ptr_nonnull(sym.data);
    sym.stride = w;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            sym.data[(size_t)y * w + x] = x < w / 2 ? plain.data[(size_t)y * plain.stride + x]
                                                    : plain.data[(size_t)(h - 1 - y) * plain.stride + w - 1 - x];
    const gm_image *imgs[2] = {&plain, &sym};
    int n_sym = 0;
    for (int i = 0; i < 2; i++) {
        gm_ref *rc = NULL, *rg = NULL;
        prepare_both(imgs[i], GM_MODEL_SIMILARITY, &rc, &rg);
        if (rc->ix.n_self != rg->ix.n_self)
            ck_abort_msg("image %d: %d self-maps on the cpu, %d on cuda", i, rc->ix.n_self, rg->ix.n_self);
        const ref_level *l = &rc->ix.lv[0];
        for (int k = 0; k < rc->ix.n_self; k++) {
            double gap = 0;
            for (int c = 0; c < 4; c++) {
                double x = c & 1 ? l->w - 1.0 : 0, y = c & 2 ? l->h - 1.0 : 0, ax, ay, bx, by;
                gm_h_apply(rc->ix.self[k], x, y, &ax, &ay);
                gm_h_apply(rg->ix.self[k], x, y, &bx, &by);
                gap = fmax(gap, hypot(ax - bx, ay - by));
            }
            if (!(gap <= 0.01))
                ck_abort_msg("image %d: self-map %d %.4g px apart", i, k, gap);
        }
        if (i == 1)
            n_sym = rc->ix.n_self;
        gm_ref_free(rc);
        gm_ref_free(rg);
    }
    EXPECT(n_sym > 0); /* something compared */
    free(sym.data);
    gm_image_free(&plain);
}
END_TEST

/* One reference, many queries of different sizes through the same buffers:
 * each equals a fresh CPU match. */
START_TEST(test_reuse)
{
    gm_image ri = load("data/bench/ref_retina.jpg");
    gm_params pc = gm_params_default(), pg = pc;
    pc.device = GM_DEVICE_CPU;
    pg.device = GM_DEVICE_CUDA;
    gm_ref *rc = NULL, *rg = NULL;
    EXPECT_OK(gm_ref_prepare(&pc, gm_image_view(&ri), &rc));
    EXPECT_OK(gm_ref_prepare(&pg, gm_image_view(&ri), &rg));
    const char *qs[] = {"data/bench/q_retina_00_easy.jpg", "data/bench/ref_retina.jpg",
                        "data/bench/q_retina_neg.jpg", "data/bench/q_retina_02_medium.jpg",
                        "data/query.jpg", "data/bench/q_retina_00_easy.jpg"};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        gm_image qi = load(qs[i]);
        gm_result a, b;
        EXPECT_OK(gm_match(rc, gm_image_view(&qi), &a));
        EXPECT_OK(gm_match(rg, gm_image_view(&qi), &b));
        EXPECT_EQ(a.status, b.status);
        EXPECT_EQ(a.votes, b.votes);
        if (a.status == GM_MATCH_FOUND)
            EXPECT(h_corner_gap(a.h, b.h, qi.width, qi.height) <= 0.01);
        gm_image_free(&qi);
    }
    /* a tiny query: no match and no error on either path */
    uint8_t tiny[16 * 16];
    memset(tiny, 128, sizeof tiny);
    gm_view tv = {tiny, 16, 16, 16};
    gm_result a, b;
    EXPECT_OK(gm_match(rc, tv, &a));
    EXPECT_OK(gm_match(rg, tv, &b));
    EXPECT_EQ(a.status, GM_MATCH_NONE);
    EXPECT_EQ(b.status, GM_MATCH_NONE);
    gm_ref_free(rc);
    gm_ref_free(rg);
    gm_image_free(&ri);
}
END_TEST

/* Several threads matching on one CUDA reference at once (lanes): every
 * result equals the CPU's. */
typedef struct {
    gm_ref *rg;
    const gm_image *q;
    const gm_result *want;
    int nq, bad;
} conc_job;

static void *conc_worker(void *arg)
{
    conc_job *j = arg;
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < j->nq; i++) {
            gm_result b;
            if (gm_match(j->rg, gm_image_view(&j->q[i]), &b) != GM_OK ||
                b.status != j->want[i].status || b.votes != j->want[i].votes ||
                (b.status == GM_MATCH_FOUND &&
                 !(h_corner_gap(b.h, j->want[i].h, j->q[i].width, j->q[i].height) <= 0.01)))
                j->bad++;
        }
    return NULL;
}

START_TEST(test_concurrent)
{
    gm_image ri = load("data/bench/ref_text.jpg");
    const char *names[] = {"data/bench/q_text_00_easy.jpg", "data/bench/q_text_01_medium.jpg",
                           "data/bench/q_text_02_medium.jpg", "data/bench/q_text_neg.jpg"};
    enum { NQ = 4, NT = 6 };
    gm_image q[NQ];
    gm_result want[NQ];
    gm_params pc = gm_params_default(), pg = pc;
    pc.device = GM_DEVICE_CPU;
    pg.device = GM_DEVICE_CUDA;
    gm_ref *rc = NULL, *rg = NULL;
    EXPECT_OK(gm_ref_prepare(&pc, gm_image_view(&ri), &rc));
    EXPECT_OK(gm_ref_prepare(&pg, gm_image_view(&ri), &rg));
    for (int i = 0; i < NQ; i++) {
        q[i] = load(names[i]);
        EXPECT_OK(gm_match(rc, gm_image_view(&q[i]), &want[i]));
    }
    pthread_t th[NT];
    conc_job jobs[NT];
    int nt = getenv("GM_TEST_SMALL") ? 2 : NT;
    for (int t = 0; t < nt; t++) {
        jobs[t] = (conc_job){rg, q, want, NQ, 0};
        ck_assert_int_eq(pthread_create(&th[t], NULL, conc_worker, &jobs[t]), 0);
    }
    int bad = 0;
    for (int t = 0; t < nt; t++) {
        pthread_join(th[t], NULL);
        bad += jobs[t].bad;
    }
    EXPECT_EQ(bad, 0);
    for (int i = 0; i < NQ; i++)
        gm_image_free(&q[i]);
    gm_ref_free(rc);
    gm_ref_free(rg);
    gm_image_free(&ri);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("matcher_cuda");
    TCase *tc = tcase_create("pipeline");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_pairs_similarity);
    tcase_add_test(tc, test_pairs_models);
    tcase_add_test(tc, test_large);
    tcase_add_test(tc, test_selfmaps);
    tcase_add_test(tc, test_reuse);
    tcase_add_test(tc, test_concurrent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_cuda_suite(make_suite); }
