/* test_batch.c: the --batch manifest (JSON lines, CSV), its groups and
 * shards, reading results back (--resume) and manifest order. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/batch.h"
#include "test_util.h"

static char g_dir[] = "/tmp/gm_test_batch_XXXXXX";

static char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void load(const char *path, gm_batch *b)
{
    char err[256] = "";
    ck_assert_msg(gm_batch_load(path, b, err, sizeof err) == 0, "%s", err);
}

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
    strcpy(g_dir, "/tmp/gm_test_batch_XXXXXX");
}

START_TEST(test_json_lines)
{
    gm_batch b;
    load(write_file("m.jsonl",
                    "{\"ref\": \"r1.jpg\", \"query\": \"q1.jpg\"}\n"
                    "\n"
                    "# a comment\n"
                    "{\"ref\": \"/abs/r2.jpg\", \"query\": \"q2.mp4\", \"id\": \"two\", "
                    "\"frames\": \"5:10\", \"model\": \"homography\"}\n"
                    "{\"ref\": \"r1.jpg\", \"query\": \"q3.jpg\", \"id\": 77}\n"),
         &b);
    ck_assert_int_eq(b.csv, 0);
    ck_assert_int_eq(b.n, 3);
    ck_assert_int_eq(b.pairs[0].line, 1);
    ck_assert_str_eq(b.pairs[0].id, "1"); /* the line number */
    char want[600];
    snprintf(want, sizeof want, "%s/r1.jpg", g_dir);
    ck_assert_str_eq(b.pairs[0].ref_path, want);
    ck_assert_str_eq(b.pairs[0].ref, "r1.jpg");
    ck_assert_int_eq(b.pairs[1].line, 4);
    ck_assert_str_eq(b.pairs[1].id, "two");
    ck_assert_str_eq(b.pairs[1].ref_path, "/abs/r2.jpg");
    ck_assert_int_eq(b.pairs[1].has_frames, 1);
    ck_assert_int_eq(b.pairs[1].first, 5);
    ck_assert_int_eq(b.pairs[1].last, 10);
    ck_assert_int_eq(b.pairs[1].model, GM_MODEL_HOMOGRAPHY);
    ck_assert_str_eq(b.pairs[2].id, "77");
    ck_assert_int_eq(b.pairs[2].model, -1);
    /* two references: r1 (lines 1 and 5) and r2 */
    ck_assert_int_eq(b.ng, 2);
    ck_assert_int_eq(b.groups[0].n, 2);
    ck_assert_int_eq(b.groups[0].pairs[0], 0);
    ck_assert_int_eq(b.groups[0].pairs[1], 2);
    ck_assert_int_eq(b.pairs[1].group, 1);
    for (int i = 0; i < b.n; i++)
        ck_assert_ptr_null(b.pairs[i].error);
    gm_batch_free(&b);
}
END_TEST

START_TEST(test_bad_lines)
{
    gm_batch b;
    load(write_file("bad.jsonl",
                    "{\"ref\": \"r.jpg\", \"query\": \"q.jpg\", \"id\": \"x\"}\n"
                    "not json\n"
                    "{\"ref\": \"r.jpg\"}\n"
                    "{\"ref\": \"r.jpg\", \"query\": \"q.jpg\", \"frame\": \"1:2\"}\n"
                    "{\"ref\": \"r.jpg\", \"query\": \"q.jpg\", \"frames\": \"9:3\"}\n"
                    "{\"ref\": \"r.jpg\", \"query\": \"q.jpg\", \"model\": \"perspective\"}\n"
                    "{\"ref\": \"r.jpg\", \"query\": \"q.jpg\", \"id\": \"x\"}\n"
                    "{\"ref\": 3, \"query\": \"q.jpg\"}\n"
                    "[1, 2]\n"
                    "{\"ref\": \"\", \"query\": \"q.jpg\"}\n"
                    "{\"ref\": \"r.jpg\", \"query\": \"q.jpg\", \"id\": 7}\n"
                    "{\"ref\": \"r.jpg\", \"query\": \"q.jpg\", \"id\": \"7\"}\n"),
         &b);
    ck_assert_int_eq(b.n, 12);
    ck_assert_ptr_null(b.pairs[0].error);
    static const char *want[] = {NULL, "not JSON", "no query", "unknown key 'frame'",
                                 "frames '9:3'", "model 'perspective'", "the id repeats line 1's",
                                 "'ref' is not a string", "not a JSON object", "an empty ref",
                                 NULL, "the id repeats line 11's"}; /* 7 and "7": one id */
    for (int i = 1; i < 12; i++) {
        if (!want[i]) {
            ck_assert_ptr_null(b.pairs[i].error);
            continue;
        }
        ck_assert_msg(b.pairs[i].error && strstr(b.pairs[i].error, want[i]),
                      "line %d: '%s' lacks '%s'", i + 1,
                      b.pairs[i].error ? b.pairs[i].error : "(none)", want[i]);
        ck_assert_int_eq(b.pairs[i].group, -1);
    }
    ck_assert_int_eq(b.ng, 1);
    gm_batch_free(&b);
}
END_TEST

START_TEST(test_csv)
{
    gm_batch b;
    load(write_file("m.csv", "\r\nid,ref,query,model,frames\r\n"
                             "a1,r.jpg,q.jpg,,\r\n"
                             "\"a,2\",r.jpg,\"my \"\"q\"\"\nname.jpg\",affine,0:4\r\n"
                             "\r\n"
                             "short,r.jpg\r\n"
                             "b,s.jpg,t.jpg,,\n"),
         &b);
    ck_assert_int_eq(b.csv, 1);
    ck_assert_int_eq(b.n, 4);
    ck_assert_int_eq(b.pairs[0].line, 3);
    ck_assert_str_eq(b.pairs[0].id, "a1");
    ck_assert_int_eq(b.pairs[0].has_frames, 0);
    ck_assert_int_eq(b.pairs[1].line, 4);
    ck_assert_str_eq(b.pairs[1].id, "a,2");
    ck_assert_str_eq(b.pairs[1].query, "my \"q\"\nname.jpg");
    ck_assert_int_eq(b.pairs[1].model, GM_MODEL_AFFINE);
    ck_assert_int_eq(b.pairs[1].last, 4);
    ck_assert_int_eq(b.pairs[2].line, 7); /* after the quoted newline and a blank line */
    ck_assert_ptr_nonnull(strstr(b.pairs[2].error, "2 fields where the header has 5"));
    ck_assert_int_eq(b.pairs[3].line, 8);
    ck_assert_ptr_null(b.pairs[3].error);
    ck_assert_int_eq(b.ng, 2);
    gm_batch_free(&b);

    char err[256] = "";
    ck_assert_int_eq(gm_batch_load(write_file("h.csv", "a,b\nx,y\n"), &b, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "ref and query"));
    ck_assert_int_eq(gm_batch_load(write_file("u.csv", "ref,query\n\"open,q\n"), &b, err,
                                   sizeof err), 0);
    ck_assert_int_eq(b.n, 1);
    ck_assert_ptr_nonnull(strstr(b.pairs[0].error, "not closed"));
    gm_batch_free(&b);
    ck_assert_int_eq(gm_batch_load("/nonexistent/m.jsonl", &b, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot open"));
}
END_TEST

START_TEST(test_frames)
{
    int64_t a, b;
    ck_assert_int_eq(gm_parse_frames("3:9", &a, &b), 0);
    ck_assert_int_eq(a, 3);
    ck_assert_int_eq(b, 9);
    ck_assert_int_eq(gm_parse_frames("7:", &a, &b), 0);
    ck_assert_int_eq(a, 7);
    ck_assert_int_eq(b, -1);
    ck_assert_int_eq(gm_parse_frames(":5", &a, &b), 0);
    ck_assert_int_eq(a, 0);
    ck_assert_int_eq(b, 5);
    ck_assert_int_eq(gm_parse_frames("5:5", &a, &b), -1);
    ck_assert_int_eq(gm_parse_frames("5", &a, &b), -1);
    ck_assert_int_eq(gm_parse_frames("-1:5", &a, &b), -1);
    ck_assert_int_eq(gm_parse_frames("1:2:3", &a, &b), -1);
    ck_assert_int_eq(gm_parse_frames("1x:3", &a, &b), -1);
    ck_assert_int_eq(gm_parse_frames("99999999999999999999:", &a, &b), -1);
}
END_TEST

/* Every pair in exactly one shard, a reference's pairs together, the same
 * split every time, and the shards' loads within one reference's of each
 * other. */
START_TEST(test_shards)
{
    char *text = malloc(1 << 16);
    size_t k = 0;
    int sizes[] = {9, 1, 4, 4, 2, 7, 1, 3, 5, 6, 2, 2, 8, 1};
    int nrefs = (int)(sizeof sizes / sizeof sizes[0]), total = 0;
    for (int pass = 0; pass < 2; pass++) /* interleaved: references out of order */
        for (int r = 0; r < nrefs; r++)
            for (int q = pass; q < sizes[r]; q += 2) {
                k += (size_t)sprintf(text + k, "{\"ref\": \"ref%d.jpg\", \"query\": \"q%d_%d.jpg\"}\n",
                                     r, r, q);
                total++;
            }
    k += (size_t)sprintf(text + k, "broken\n");
    gm_batch b, b2;
    load(write_file("s.jsonl", text), &b);
    load(write_file("s.jsonl", text), &b2);
    free(text);
    ck_assert_int_eq(b.n, total + 1);
    ck_assert_int_eq(b.ng, nrefs);
    for (int n = 1; n <= 7; n++) {
        gm_batch_shard(&b, n);
        gm_batch_shard(&b2, n);
        int seen[400] = {0}, load[8] = {0};
        for (int i = 0; i < b.n; i++) {
            int s = gm_batch_pair_shard(&b, i, n);
            ck_assert_int_ge(s, 0);
            ck_assert_int_lt(s, n);
            ck_assert_int_eq(s, gm_batch_pair_shard(&b2, i, n));
            seen[i]++;
            load[s]++;
            if (b.pairs[i].group >= 0)
                ck_assert_int_eq(s, b.groups[b.pairs[i].group].shard);
        }
        for (int i = 0; i < b.n; i++)
            ck_assert_int_eq(seen[i], 1);
        int lo = 1 << 30, hi = 0;
        for (int s = 0; s < n; s++)
            lo = load[s] < lo ? load[s] : lo, hi = load[s] > hi ? load[s] : hi;
        ck_assert_msg(hi - lo <= 9 + 1, "n %d: loads from %d to %d", n, lo, hi);
    }
    gm_batch_free(&b);
    gm_batch_free(&b2);
}
END_TEST

START_TEST(test_resume_json)
{
    gm_batch b;
    load(write_file("m.jsonl", "{\"ref\": \"r.jpg\", \"query\": \"a.jpg\", \"id\": \"a\"}\n"
                               "{\"ref\": \"r.jpg\", \"query\": \"v.mp4\", \"id\": 12}\n"
                               "{\"ref\": \"r.jpg\", \"query\": \"c.jpg\"}\n"),
         &b);
    /* ids are strings in the lines; an integer (an older gmatch's line for
     * an integer id) is read as its digits */
    const char *res = "{\"line\":2,\"id\":12,\"ref\":\"r.jpg\",\"query\":\"v.mp4\",\"frame\":0}\n"
                      "{\"line\":1,\"id\":\"a\",\"ref\":\"r.jpg\",\"query\":\"a.jpg\",\"frame\":0}\n"
                      "{\"line\":2,\"id\":\"12\",\"ref\":\"r.jpg\",\"query\":\"v.mp4\",\"frame\":1}\n"
                      "{\"line\":2,\"id\":\"12\",\"ref\":\"r.jpg\",\"query\":\"v.mp4\",\"frame\":2}\n"
                      "{\"line\":3,\"id\":\"3\",\"ref\":\"r.jpg\",\"que";
    char *path = write_file("out.jsonl", res);
    char err[256] = "";
    ck_assert_int_eq(gm_batch_resume(&b, path, GM_OUTPUT_JSON, 1, err, sizeof err), 0);
    ck_assert_int_eq(b.pairs[0].written, 1);
    ck_assert_int_eq(b.pairs[1].written, 3);
    ck_assert_int_eq(b.pairs[1].last_frame, 2);
    ck_assert_int_eq(b.pairs[2].written, 0); /* its line was cut: not done */
    /* the cut line is gone from the file */
    const char *now = read_all(path);
    ck_assert_int_eq((int)strlen(now), (int)(strrchr(res, '\n') - res + 1));
    /* a missing file: nothing written yet */
    ck_assert_int_eq(gm_batch_resume(&b, "/nonexistent/x.jsonl", GM_OUTPUT_JSON, 0, err,
                                     sizeof err), 0);
    gm_batch_free(&b);
}
END_TEST

START_TEST(test_resume_text_and_order)
{
    gm_batch b;
    load(write_file("m.jsonl", "{\"ref\": \"r.jpg\", \"query\": \"a.jpg\", \"id\": \"7\"}\n"
                               "{\"ref\": \"r.jpg\", \"query\": \"b b.jpg\", \"id\": 7}\n"
                               "{\"ref\": \"r.jpg\", \"query\": \"v.mp4\", \"id\": \"x y\"}\n"),
         &b);
    char *path = write_file("out.txt",
                            "# line id ref query frame status votes confidence a b c d e f "
                            "scale angle_deg\n"
                            "3 \"x y\" r.jpg v.mp4 4 none 1 0.0000 - - - - - - - -\n"
                            "2 7 r.jpg \"b b.jpg\" 0 none 1 0.0000 - - - - - - - -\n"
                            "3 \"x y\" r.jpg v.mp4 3 none 1 0.0000 - - - - - - - -\n"
                            "1 7 r.jpg a.jpg 0 none 1 0.0000 - - - - - - - -\n");
    char err[256] = "";
    ck_assert_int_eq(gm_batch_resume(&b, path, GM_OUTPUT_TEXT, 1, err, sizeof err), 0);
    /* "7" and 7 are one id (line 2 is a repeated id's error line): the
     * pairs told apart by the line */
    ck_assert_ptr_nonnull(b.pairs[1].error);
    ck_assert_int_eq(b.pairs[0].written, 1);
    ck_assert_int_eq(b.pairs[1].written, 1);
    ck_assert_int_eq(b.pairs[2].written, 2);
    ck_assert_int_eq(b.pairs[2].last_frame, 4);
    ck_assert_int_eq(gm_batch_sort_file(path, GM_OUTPUT_TEXT, err, sizeof err), 0);
    ck_assert_str_eq(read_all(path),
                     "# line id ref query frame status votes confidence a b c d e f "
                     "scale angle_deg\n"
                     "1 7 r.jpg a.jpg 0 none 1 0.0000 - - - - - - - -\n"
                     "2 7 r.jpg \"b b.jpg\" 0 none 1 0.0000 - - - - - - - -\n"
                     "3 \"x y\" r.jpg v.mp4 3 none 1 0.0000 - - - - - - - -\n"
                     "3 \"x y\" r.jpg v.mp4 4 none 1 0.0000 - - - - - - - -\n");
    gm_batch_free(&b);
    char *jp = write_file("o.jsonl", "{\"line\":2,\"id\":2,\"frame\":0}\n"
                                     "{\"line\":1,\"id\":1,\"frame\":1}\n"
                                     "{\"line\":1,\"id\":1,\"frame\":0}\n");
    ck_assert_int_eq(gm_batch_sort_file(jp, GM_OUTPUT_JSON, err, sizeof err), 0);
    ck_assert_str_eq(read_all(jp), "{\"line\":1,\"id\":1,\"frame\":0}\n"
                                   "{\"line\":1,\"id\":1,\"frame\":1}\n"
                                   "{\"line\":2,\"id\":2,\"frame\":0}\n");
}
END_TEST

static Suite *batch_suite(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("cpu");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_json_lines);
    tcase_add_test(tc, test_bad_lines);
    tcase_add_test(tc, test_csv);
    tcase_add_test(tc, test_frames);
    tcase_add_test(tc, test_shards);
    tcase_add_test(tc, test_resume_json);
    tcase_add_test(tc, test_resume_text_and_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(batch_suite());
}
