/* test_output.c: the text and JSON result lines of the command line. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/output.h"
#include "test_util.h"

/* Render one record (or the header when rec is NULL) into a new string. */
static char *render(gm_output_format fmt, const gm_output_rec *rec)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    int rc = rec ? gm_output_record(f, fmt, rec) : gm_output_header(f, fmt, GM_MODEL_SIMILARITY, 0);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

static char *render_name(const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(gm_output_write_name(f, name), 0);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

static gm_result match_result(void)
{
    gm_result r;
    memset(&r, 0, sizeof r);
    r.status = GM_MATCH_FOUND;
    /* 1.0577270000000001 is what %.17g makes of 1.057727. */
    double m[6] = {1.057727, 0.028525, 90.17363449, -0.028525, 1.057727, 178.7922451};
    memcpy(r.m, m, sizeof m);
    memcpy(r.h, m, sizeof m);
    r.h[8] = 1;
    r.residual_px = 0.21372;
    r.scale = 1.0581118;
    r.angle_deg = -1.54470049;
    r.votes = 57;
    r.confidence = 0.8125;
    r.inliers = 300;
    /* the query's 128 x 123 on the 480 x 360 reference: all of it, and
     * 1.058^2 128 123 / (480 360) = 0.1019 of the reference */
    r.overlap[0] = 1.0;
    r.overlap[1] = 0.10194;
    r.direction = GM_DIRECTION_FORWARD;
    r.uncertainty_px = 0.6789;
    return r;
}

static gm_result none_result(void)
{
    gm_result r;
    memset(&r, 0, sizeof r);
    r.status = GM_MATCH_NONE;
    r.votes = 4;
    r.confidence = 0.03125;
    r.m[0] = 123.0; /* garbage that must not be printed */
    r.uncertainty_px = 5.0; /* nor this */
    r.reason = GM_REASON_AMBIGUOUS;
    return r;
}

/* Parse one JSON line: exactly one line, ends with '\n', an object. */
static json_t *parse_line(const char *line)
{
    size_t len = strlen(line);
    ck_assert_uint_gt(len, 1);
    ck_assert_int_eq(line[len - 1], '\n');
    ck_assert_ptr_eq(strchr(line, '\n'), line + len - 1);
    json_error_t err;
    json_t *j = json_loads(line, 0, &err);
    ck_assert_msg(j != NULL, "invalid JSON (%s): %s", err.text, line);
    ck_assert(json_is_object(j));
    return j;
}

/* The keys of obj, in order, joined by ','. */
static void key_list(json_t *obj, char *out, size_t n)
{
    const char *key;
    json_t *v;
    out[0] = '\0';
    json_object_foreach(obj, key, v) {
        (void)v;
        if (out[0])
            strncat(out, ",", n - strlen(out) - 1);
        strncat(out, key, n - strlen(out) - 1);
    }
}

/* The key order in the raw line (jansson's object iteration order is the
 * insertion order of the parser, i.e. the order in the line). */
static void assert_keys(json_t *obj, const char *want)
{
    char got[512];
    key_list(obj, got, sizeof got);
    ck_assert_str_eq(got, want);
}

static double real_at(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    ck_assert_msg(json_is_real(v), "%s is not a real", key);
    return json_real_value(v);
}

/* ---- formats ------------------------------------------------------------- */

START_TEST(test_parse_format)
{
    gm_output_format f = GM_OUTPUT_JSON;
    ck_assert_int_eq(gm_output_parse_format("text", &f), 0);
    ck_assert_int_eq(f, GM_OUTPUT_TEXT);
    ck_assert_int_eq(gm_output_parse_format("json", &f), 0);
    ck_assert_int_eq(f, GM_OUTPUT_JSON);
    ck_assert_int_eq(gm_output_parse_format("JSON", &f), -1);
    ck_assert_int_eq(gm_output_parse_format("", &f), -1);
    ck_assert_int_eq(gm_output_parse_format("csv", &f), -1);
}
END_TEST

/* ---- text ---------------------------------------------------------------- */

START_TEST(test_text_header)
{
    char *s = render(GM_OUTPUT_TEXT, NULL);
    ck_assert_str_eq(s, "# query frame status votes confidence a b c d e f scale angle_deg "
                        "uncertainty_px|reason\n");
    free(s);
    s = render(GM_OUTPUT_JSON, NULL);
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

START_TEST(test_text_match)
{
    gm_result r = match_result();
    gm_output_rec rec = {.query = "q1.jpg", .frame = 0, .res = &r, .time_ms = 12.5};
    char *s = render(GM_OUTPUT_TEXT, &rec);
    ck_assert_str_eq(s, "q1.jpg 0 match 57 0.8125 1.057727 0.028525 90.173634 -0.028525 "
                        "1.057727 178.792245 1.058112 -1.545 0.679\n");
    free(s);
}
END_TEST

START_TEST(test_text_none_error)
{
    gm_result r = none_result();
    gm_output_rec rec = {.query = "q2.jpg", .frame = 3, .res = &r, .time_ms = 1};
    char *s = render(GM_OUTPUT_TEXT, &rec);
    ck_assert_str_eq(s, "q2.jpg 3 none 4 0.0313 - - - - - - - - ambiguous\n");
    free(s);
    gm_result m = match_result(); /* ignored: error wins */
    gm_output_rec err = {.query = "x.jpg", .error = "cannot open", .res = &m};
    s = render(GM_OUTPUT_TEXT, &err);
    ck_assert_str_eq(s, "x.jpg 0 error 0 0.0000 - - - - - - - - -\n");
    free(s);
    /* No result and no message is still an error row, not a crash. */
    gm_output_rec nores = {.query = "y.jpg"};
    s = render(GM_OUTPUT_TEXT, &nores);
    ck_assert_str_eq(s, "y.jpg 0 error 0 0.0000 - - - - - - - - -\n");
    free(s);
}
END_TEST

START_TEST(test_text_negative_zero)
{
    gm_result r = match_result();
    r.m[1] = -1e-9; /* rounds to zero: must not print "-0.000000" */
    r.angle_deg = -0.0001;
    gm_output_rec rec = {.query = "q", .res = &r};
    char *s = render(GM_OUTPUT_TEXT, &rec);
    ck_assert_ptr_null(strstr(s, "-0.000"));
    ck_assert_ptr_nonnull(strstr(s, " 1.057727 0.000000 90.173634"));
    free(s);
}
END_TEST

START_TEST(test_text_names)
{
    static const struct { const char *in, *out; } cases[] = {
        {"plain.jpg", "plain.jpg"},
        {"dir/sub-dir/q_1.jpeg", "dir/sub-dir/q_1.jpeg"},
        {"caf\xc3\xa9.jpg", "caf\xc3\xa9.jpg"},           /* UTF-8 stays as it is */
        {"a#b.jpg", "a#b.jpg"},                           /* '#' inside is harmless */
        {"my photo.jpg", "\"my photo.jpg\""},
        {"tab\there", "\"tab\\there\""},
        {"new\nline", "\"new\\nline\""},
        {"cr\rx", "\"cr\\rx\""},
        {"say \"hi\".png", "\"say \\\"hi\\\".png\""},
        {"it's.png", "\"it's.png\""},
        {"back\\slash.png", "\"back\\\\slash.png\""},
        {"bell\a.png", "\"bell\\007.png\""},
        {"del\x7f.png", "\"del\\177.png\""},
        {"bad\xff.png", "\"bad\\377.png\""},             /* invalid UTF-8 byte */
        {"nbsp\xc2\xa0x", "\"nbsp\\302\\240x\""},        /* U+00A0 is whitespace to Python */
        {"ideo\xe3\x80\x80x", "\"ideo\\343\\200\\200x\""}, /* U+3000 */
        {"#hash.jpg", "\"#hash.jpg\""},                   /* would look like the header */
        {"", "\"\""},                                     /* an empty column would vanish */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = render_name(cases[i].in);
        ck_assert_str_eq(s, cases[i].out);
        free(s);
    }
    /* In a row, a quoted name keeps the columns countable. */
    gm_result r = none_result();
    gm_output_rec rec = {.query = "my photo.jpg", .res = &r};
    char *s = render(GM_OUTPUT_TEXT, &rec);
    ck_assert_str_eq(s, "\"my photo.jpg\" 0 none 4 0.0313 - - - - - - - - ambiguous\n");
    free(s);
}
END_TEST

/* ---- JSON ---------------------------------------------------------------- */

START_TEST(test_json_match)
{
    gm_result r = match_result();
    gm_output_rec rec = {.query = "q1.jpg", .frame = 0, .res = &r, .time_ms = 12.34567,
                         .ref_w = 480, .ref_h = 360, .q_w = 128, .q_h = 123};
    char *s = render(GM_OUTPUT_JSON, &rec);
    /* Exact text: key order, compact form, shortest real forms; the corners
     * are m at (0, 0), (127, 0), (127, 122), (0, 122), e.g. x at (127, 0):
     * 1.057727 * 127 + 90.17363449 = 224.50496 */
    ck_assert_str_eq(s, "{\"query\":\"q1.jpg\",\"frame\":0,\"status\":\"match\",\"model\":\"similarity\",\"votes\":57,"
                        "\"confidence\":0.8125,\"matrix\":[[1.057727,0.028525,90.173634],"
                        "[-0.028525,1.057727,178.792245]],\"scale\":1.058112,"
                        "\"angle_deg\":-1.5447,\"corners\":[[90.174,178.792],[224.505,175.17],"
                        "[227.985,304.212],[93.654,307.835]],\"residual_px\":0.214,\"uncertainty_px\":0.679,\"overlap\":[1.0,0.1019],\"direction\":\"forward\",\"inliers\":300,"
                        "\"ref_size\":[480,360],\"query_size\":[128,123],\"time_ms\":12.346}\n");
    json_t *j = parse_line(s);
    assert_keys(j, "query,frame,status,model,votes,confidence,matrix,scale,angle_deg,corners,"
                   "residual_px,uncertainty_px,overlap,direction,inliers,ref_size,query_size,time_ms");
    ck_assert_str_eq(json_string_value(json_object_get(j, "query")), "q1.jpg");
    ck_assert(json_is_integer(json_object_get(j, "frame")));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "frame")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "match");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "votes")), 57);
    ck_assert_double_eq(real_at(j, "confidence"), 0.8125);
    json_t *m = json_object_get(j, "matrix");
    ck_assert(json_is_array(m));
    ck_assert_uint_eq(json_array_size(m), 2);
    for (int row = 0; row < 2; row++) {
        json_t *a = json_array_get(m, (size_t)row);
        ck_assert_uint_eq(json_array_size(a), 3);
        for (int i = 0; i < 3; i++) {
            json_t *v = json_array_get(a, (size_t)i);
            ck_assert(json_is_real(v));
            ck_assert_double_eq_tol(json_real_value(v), r.m[3 * row + i], 0.5e-6);
        }
    }
    ck_assert_double_eq(real_at(j, "scale"), 1.058112);
    ck_assert_double_eq(real_at(j, "angle_deg"), -1.5447);
    ck_assert_double_eq(real_at(j, "time_ms"), 12.346);
    json_decref(j);
    free(s);
}
END_TEST

/* A similarity answer under --model homography is a homography without
 * perspective: "homography" and a 3x3 matrix; under affine an "affine"
 * 2x3; under auto the library's choice (gm_output_model). */
START_TEST(test_json_model_asked)
{
    gm_result r = match_result(); /* r.model: similarity */
    static const gm_model asked[] = {GM_MODEL_HOMOGRAPHY, GM_MODEL_AFFINE, GM_MODEL_AUTO,
                                     GM_MODEL_SIMILARITY};
    static const char *name[] = {"homography", "affine", "similarity", "similarity"};
    for (int k = 0; k < 4; k++) {
        gm_output_rec rec = {.query = "q1.jpg", .res = &r, .model = asked[k], .ref_w = 480,
                             .ref_h = 360, .q_w = 128, .q_h = 123};
        char *s = render(GM_OUTPUT_JSON, &rec);
        json_t *j = parse_line(s);
        ck_assert_str_eq(json_string_value(json_object_get(j, "model")), name[k]);
        json_t *m = json_object_get(j, "matrix");
        size_t rows = k == 0 ? 3 : 2;
        ck_assert_uint_eq(json_array_size(m), rows);
        for (size_t row = 0; row < rows; row++)
            for (size_t i = 0; i < 3; i++)
                ck_assert_double_eq_tol(json_real_value(json_array_get(json_array_get(m, row), i)),
                                        r.h[3 * row + i], 0.5e-6);
        json_decref(j);
        free(s);
    }
    r.model = GM_MODEL_AFFINE; /* auto says what it chose */
    gm_output_rec rec = {.query = "q1.jpg", .res = &r, .model = GM_MODEL_AUTO};
    char *s = render(GM_OUTPUT_JSON, &rec);
    ck_assert_ptr_nonnull(strstr(s, "\"model\":\"affine\""));
    free(s);
}
END_TEST

START_TEST(test_json_none)
{
    gm_result r = none_result();
    gm_output_rec rec = {.query = "q2.jpg", .frame = 7, .res = &r, .time_ms = 9.87,
                         .ref_w = 480, .ref_h = 360, .q_w = 64, .q_h = 48};
    char *s = render(GM_OUTPUT_JSON, &rec);
    json_t *j = parse_line(s);
    /* none: no matrix, corners, residual or uncertainty; why, the inliers
     * and both sizes */
    assert_keys(j, "query,frame,status,model,votes,confidence,reason,inliers,ref_size,query_size,"
                   "time_ms");
    ck_assert_str_eq(json_string_value(json_object_get(j, "reason")), "ambiguous");
    json_t *qs = json_object_get(j, "query_size");
    ck_assert_int_eq(json_integer_value(json_array_get(qs, 0)), 64);
    ck_assert_int_eq(json_integer_value(json_array_get(qs, 1)), 48);
    ck_assert_str_eq(json_string_value(json_object_get(j, "query")), "q2.jpg");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "frame")), 7);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "none");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "votes")), 4);
    ck_assert_double_eq(real_at(j, "confidence"), 0.03125);
    ck_assert_double_eq(real_at(j, "time_ms"), 9.87);
    json_decref(j);
    free(s);
    /* every reason by its name, one word each (the text's column) */
    static const char *names[] = {"found", "no_edges", "no_candidate", "weak", "ambiguous",
                                  "uncertain", "small_overlap", "horizon"};
    for (int k = 0; k <= (int)GM_REASON_HORIZON; k++) {
        ck_assert_str_eq(gm_reason_name((gm_reason)k), names[k]);
        ck_assert_ptr_null(strchr(names[k], ' '));
    }
    ck_assert_ptr_null(gm_reason_name((gm_reason)99));
    /* every model by its name and back (gm_model_from_name: the command
     * line's, the batch files' and Python's one parser) */
    static const char *models[] = {"similarity", "affine", "homography", "auto"};
    for (int k = 0; k <= (int)GM_MODEL_AUTO; k++) {
        gm_model m = (gm_model)99;
        ck_assert_str_eq(gm_model_name((gm_model)k), models[k]);
        ck_assert_int_eq(gm_model_from_name(models[k], &m), GM_OK);
        ck_assert_int_eq((int)m, k);
    }
    static const char *not_models[] = {"", "Affine", "homography ", "unknown", "proj"};
    for (size_t k = 0; k < sizeof not_models / sizeof *not_models; k++) {
        gm_model m = GM_MODEL_AFFINE;
        ck_assert_int_eq(gm_model_from_name(not_models[k], &m), GM_ERR_INVALID);
        ck_assert_int_eq((int)m, (int)GM_MODEL_AFFINE); /* untouched */
    }
    ck_assert_int_eq(gm_model_from_name(NULL, &(gm_model){GM_MODEL_AUTO}), GM_ERR_INVALID);
    /* a none that names no reason (made outside the library): no key, '-' */
    r.reason = GM_REASON_FOUND;
    s = render(GM_OUTPUT_JSON, &rec);
    ck_assert_ptr_null(strstr(s, "reason"));
    free(s);
    s = render(GM_OUTPUT_TEXT, &rec);
    ck_assert_str_eq(s, "q2.jpg 7 none 4 0.0313 - - - - - - - - -\n");
    free(s);
}
END_TEST

/* Every device by its name and back, with a list where a device has
 * several units (gm_device_from_name: the command line's --device and
 * Python's device=); a device this build lacks is named but unsupported. */
START_TEST(test_device_names)
{
    static const char *devices[] = {"auto", "cpu", "cuda"};
    for (int k = 0; k <= (int)GM_DEVICE_CUDA; k++) {
        gm_device d = (gm_device)99;
        const char *gpus = "x";
        ck_assert_str_eq(gm_device_name((gm_device)k), devices[k]);
        gm_status want = gm_backend_available((gm_device)k) ? GM_OK : GM_ERR_UNSUPPORTED;
        ck_assert_int_eq(gm_device_from_name(devices[k], &d, &gpus), want);
        ck_assert_int_eq((int)d, k);
        ck_assert_ptr_null(gpus);
    }
    ck_assert_str_eq(gm_device_name((gm_device)7), "unknown");
    int cuda = gm_backend_available(GM_DEVICE_CUDA);
    static const char *lists[] = {"cuda:all", "cuda:1", "cuda:0,2", "cuda:0,0"};
    for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) {
        gm_device d = GM_DEVICE_AUTO;
        const char *gpus = NULL;
        ck_assert_int_eq(gm_device_from_name(lists[k], &d, &gpus), cuda ? GM_OK : GM_ERR_UNSUPPORTED);
        ck_assert_int_eq((int)d, (int)GM_DEVICE_CUDA);
        ck_assert_ptr_eq(gpus, lists[k] + 5); /* inside the name */
    }
    /* a list the reference's preparation would refuse: the device and the
     * list set, so that a caller can say which (a build without CUDA: its
     * lists are not read) */
    static const char *bad_lists[] = {"cuda:x", "cuda:0,", "cuda:-1", "cuda:0;1"};
    for (size_t k = 0; k < sizeof bad_lists / sizeof *bad_lists; k++) {
        gm_device d = GM_DEVICE_AUTO;
        const char *gpus = NULL;
        ck_assert_int_eq(gm_device_from_name(bad_lists[k], &d, &gpus),
                         cuda ? GM_ERR_INVALID : GM_ERR_UNSUPPORTED);
        ck_assert_ptr_eq(gpus, bad_lists[k] + 5);
    }
    static const char *not_devices[] = {"", "tpu", "CUDA", "cpu:0", "auto:1", "cuda ", "cudax:1"};
    for (size_t k = 0; k < sizeof not_devices / sizeof *not_devices; k++) {
        gm_device d = GM_DEVICE_CPU;
        const char *gpus = NULL;
        ck_assert_int_eq(gm_device_from_name(not_devices[k], &d, &gpus), GM_ERR_INVALID);
        ck_assert_int_eq((int)d, (int)GM_DEVICE_CPU); /* untouched */
        ck_assert_ptr_null(gpus);
    }
    const char *gpus = NULL;
    ck_assert_int_eq(gm_device_from_name(NULL, &(gm_device){GM_DEVICE_AUTO}, &gpus),
                     GM_ERR_INVALID);
}
END_TEST

START_TEST(test_json_error)
{
    gm_output_rec rec = {.query = "missing.jpg", .frame = 0,
                         .error = "cannot open file: No such file or directory",
                         .time_ms = 0.0123};
    char *s = render(GM_OUTPUT_JSON, &rec);
    json_t *j = parse_line(s);
    assert_keys(j, "query,frame,status,model,votes,confidence,time_ms,error");
    ck_assert_str_eq(json_string_value(json_object_get(j, "query")), "missing.jpg");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "frame")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "error");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "votes")), 0);
    ck_assert_double_eq(real_at(j, "confidence"), 0.0);
    ck_assert_double_eq(real_at(j, "time_ms"), 0.012);
    ck_assert_str_eq(json_string_value(json_object_get(j, "error")),
                     "cannot open file: No such file or directory");
    json_decref(j);
    free(s);
}
END_TEST

START_TEST(test_json_pts)
{
    gm_result r = match_result();
    gm_output_rec rec = {.query = "v.mp4", .frame = 25, .has_pts = 1, .pts_s = 1.0000004,
                         .res = &r, .time_ms = 3};
    char *s = render(GM_OUTPUT_JSON, &rec);
    json_t *j = parse_line(s);
    assert_keys(j, "query,frame,pts_s,status,model,votes,confidence,matrix,scale,angle_deg,"
                   "residual_px,uncertainty_px,overlap,direction,inliers,time_ms"); /* no sizes given: no corners or sizes */
    ck_assert_double_eq(real_at(j, "pts_s"), 1.0);
    json_decref(j);
    free(s);
    gm_output_rec err = {.query = "v.mp4", .frame = 26, .has_pts = 1, .pts_s = 1.04,
                         .error = "decode failed"};
    s = render(GM_OUTPUT_JSON, &err);
    j = parse_line(s);
    assert_keys(j, "query,frame,pts_s,status,model,votes,confidence,time_ms,error");
    json_decref(j);
    free(s);
}
END_TEST

START_TEST(test_json_nonfinite)
{
    gm_result r = match_result();
    r.scale = NAN;
    r.m[2] = INFINITY;
    gm_output_rec rec = {.query = "q", .res = &r};
    char *s = render(GM_OUTPUT_JSON, &rec);
    json_t *j = parse_line(s);
    ck_assert(json_is_null(json_object_get(j, "scale")));
    ck_assert(json_is_null(json_array_get(json_array_get(json_object_get(j, "matrix"), 0), 2)));
    json_decref(j);
    free(s);
}
END_TEST

/* Names that need escaping come back unchanged through a JSON parser. */
START_TEST(test_json_escaping)
{
    static const char *names[] = {
        "say \"hi\".png",
        "back\\slash.png",
        "new\nline\tand tab.jpg",
        "ctrl\x01\x1f\x7f.jpg",
        "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80.jpg", /* 2-, 3-, 4-byte UTF-8 */
        "line\xe2\x80\xa8sep.jpg",                                  /* U+2028 */
        "/slash/</script>.jpg",
        "",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        gm_output_rec rec = {.query = names[i], .error = names[i]};
        char *s = render(GM_OUTPUT_JSON, &rec);
        json_t *j = parse_line(s);
        ck_assert_str_eq(json_string_value(json_object_get(j, "query")), names[i]);
        ck_assert_str_eq(json_string_value(json_object_get(j, "error")), names[i]);
        json_decref(j);
        free(s);
    }
}
END_TEST

/* Invalid UTF-8 still gives valid JSON, each bad byte as U+FFFD. */
START_TEST(test_json_invalid_utf8)
{
    static const struct { const char *in, *out; } cases[] = {
        {"bad\xff.png", "bad\xef\xbf\xbd.png"},
        {"latin1 caf\xe9.jpg", "latin1 caf\xef\xbf\xbd.jpg"},
        {"\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd"},                   /* lone continuations */
        {"over\xc0\xaf", "over\xef\xbf\xbd\xef\xbf\xbd"},           /* overlong '/' */
        {"sur\xed\xa0\x80", "sur\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* U+D800 */
        {"big\xf4\x90\x80\x80", "big\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"cut\xe6\x97", "cut\xef\xbf\xbd\xef\xbf\xbd"},             /* truncated at the end */
        {"ok\xc3\xa9\xc3", "ok\xc3\xa9\xef\xbf\xbd"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *clean = gm_output_utf8_sanitize(cases[i].in);
        ck_assert_ptr_nonnull(clean);
        ck_assert_str_eq(clean, cases[i].out);
        free(clean);
        gm_result r = none_result();
        gm_output_rec rec = {.query = cases[i].in, .res = &r};
        char *s = render(GM_OUTPUT_JSON, &rec);
        json_t *j = parse_line(s);
        ck_assert_str_eq(json_string_value(json_object_get(j, "query")), cases[i].out);
        json_decref(j);
        free(s);
    }
}
END_TEST

/* A failing stream is reported, not ignored. */
START_TEST(test_write_error)
{
    FILE *f = fopen("/dev/full", "w");
    if (!f)
        return; /* no /dev/full here: nothing to test */
    gm_result r = match_result();
    gm_output_rec rec = {.query = "q", .res = &r};
    ck_assert_int_eq(gm_output_header(f, GM_OUTPUT_TEXT, GM_MODEL_SIMILARITY, 0), -1);
    ck_assert_int_eq(gm_output_record(f, GM_OUTPUT_TEXT, &rec), -1);
    ck_assert_int_eq(gm_output_record(f, GM_OUTPUT_JSON, &rec), -1);
    fclose(f);
}
END_TEST

static Suite *output_suite(void)
{
    Suite *s = suite_create("output");
    TCase *tc = tcase_create("cpu");
    tcase_add_test(tc, test_parse_format);
    tcase_add_test(tc, test_text_header);
    tcase_add_test(tc, test_text_match);
    tcase_add_test(tc, test_text_none_error);
    tcase_add_test(tc, test_text_negative_zero);
    tcase_add_test(tc, test_text_names);
    tcase_add_test(tc, test_json_match);
    tcase_add_test(tc, test_json_none);
    tcase_add_test(tc, test_json_error);
    tcase_add_test(tc, test_json_pts);
    tcase_add_test(tc, test_json_nonfinite);
    tcase_add_test(tc, test_json_escaping);
    tcase_add_test(tc, test_json_invalid_utf8);
    tcase_add_test(tc, test_write_error);
    tcase_add_test(tc, test_json_model_asked);
    tcase_add_test(tc, test_device_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(output_suite());
}
