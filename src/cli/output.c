/* output.c: result lines of the gmatch command line, formats in output.h. */
#include "cli/output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* ---- UTF-8 ---------------------------------------------------------------- */

/* Length (1..4) of the valid UTF-8 sequence that starts at s, its code point
 * in *cp; 0 when the byte at s does not start a valid sequence.  The rules are
 * jansson's (RFC 3629): no overlong forms, no surrogates D800..DFFF, nothing
 * above U+10FFFF.  s is NUL-terminated, and NUL is never a continuation byte,
 * so the look-ahead stops at the end of the string. */
static int utf8_seq(const unsigned char *s, uint32_t *cp)
{
    unsigned c = s[0];
    int n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0; /* continuation byte, C0/C1 (always overlong) or F5..FF */
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

char *gm_output_utf8_sanitize(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s);
    /* Each invalid byte (1 byte) becomes U+FFFD (3 bytes): at most 3x. */
    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    while (*p) {
        uint32_t cp;
        int n = utf8_seq(p, &cp);
        if (n == 0) {
            out[o++] = (char)0xEF, out[o++] = (char)0xBF, out[o++] = (char)0xBD;
            p++;
        } else {
            memcpy(out + o, p, (size_t)n);
            o += (size_t)n, p += n;
        }
    }
    out[o] = '\0';
    return out;
}

/* ---- text ---------------------------------------------------------------- */

/* Code points above ASCII that a reader splitting on whitespace might split
 * on (Python's str.split() does, for all of these) or that are invisible
 * controls: C1 controls and the Unicode spaces. */
static int unicode_unsafe(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0xA0) || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Does the ASCII byte c have to be escaped inside double quotes? */
static int ascii_escaped(unsigned c)
{
    return c < 0x20 || c == 0x7F || c == '"' || c == '\\';
}

static int name_needs_quotes(const char *name)
{
    const unsigned char *p = (const unsigned char *)name;
    if (*p == '\0' || *p == '#')
        return 1;
    while (*p) {
        uint32_t cp;
        int n = utf8_seq(p, &cp);
        if (n == 0)
            return 1;
        if (n == 1 && (ascii_escaped(cp) || cp == ' ' || cp == '\''))
            return 1;
        if (n > 1 && unicode_unsafe(cp))
            return 1;
        p += n;
    }
    return 0;
}

static void put_octal(FILE *f, unsigned c)
{
    fprintf(f, "\\%03o", c & 0xFF);
}

int gm_output_write_name(FILE *f, const char *name)
{
    if (!name)
        name = "";
    if (!name_needs_quotes(name)) {
        fputs(name, f);
        return ferror(f) ? -1 : 0;
    }
    const unsigned char *p = (const unsigned char *)name;
    fputc('"', f);
    while (*p) {
        uint32_t cp;
        int n = utf8_seq(p, &cp);
        if (n == 0) {
            put_octal(f, *p++);
            continue;
        }
        if (n == 1) {
            switch (cp) {
            case '"': fputs("\\\"", f); break;
            case '\\': fputs("\\\\", f); break;
            case '\n': fputs("\\n", f); break;
            case '\t': fputs("\\t", f); break;
            case '\r': fputs("\\r", f); break;
            default:
                if (ascii_escaped(cp))
                    put_octal(f, cp);
                else
                    fputc((int)cp, f);
            }
        } else if (unicode_unsafe(cp)) {
            for (int i = 0; i < n; i++)
                put_octal(f, p[i]);
        } else {
            fwrite(p, 1, (size_t)n, f);
        }
        p += n;
    }
    fputc('"', f);
    return ferror(f) ? -1 : 0;
}

/* ---- records ------------------------------------------------------------- */

/* A "none"'s reason (gm_reason_name); NULL where the result names none (a
 * result made outside gm_match). */
static const char *rec_reason(const gm_result *r)
{
    return r->reason == GM_REASON_FOUND ? NULL : gm_reason_name(r->reason);
}

static const char *rec_status(const gm_output_rec *rec)
{
    if (rec->error || !rec->res)
        return "error";
    return rec->res->status == GM_MATCH_FOUND ? "match" : "none";
}

/* x rounded to 'decimals' decimals, -0 turned into 0 (so neither format
 * prints "-0.000000").  Values too large to scale are returned as they are. */
static double round_dec(double x, int decimals)
{
    double k = pow(10.0, decimals);
    double y = x * k;
    if (!isfinite(y))
        return x;
    return round(y) / k + 0.0;
}

gm_model gm_output_model(gm_model asked, const gm_result *res)
{
    return asked == GM_MODEL_AUTO || (unsigned)asked > GM_MODEL_AUTO ? res->model : asked;
}

int gm_output_parse_format(const char *s, gm_output_format *out)
{
    if (strcmp(s, "text") == 0) {
        *out = GM_OUTPUT_TEXT;
        return 0;
    }
    if (strcmp(s, "json") == 0) {
        *out = GM_OUTPUT_JSON;
        return 0;
    }
    return -1;
}

int gm_output_header(FILE *f, gm_output_format fmt, gm_model model, int batch)
{
    if (fmt == GM_OUTPUT_TEXT && batch)
        fputs("# line id ref", f);
    if (fmt == GM_OUTPUT_TEXT)
        fputs(batch ? " " : "# ", f);
    if (fmt == GM_OUTPUT_TEXT)
        fputs(model == GM_MODEL_HOMOGRAPHY || model == GM_MODEL_AUTO
                  ? "query frame status votes confidence a b c d e f g h scale angle_deg uncertainty_px|reason\n"
                  : "query frame status votes confidence a b c d e f scale angle_deg uncertainty_px|reason\n",
              f);
    if (fflush(f) != 0 || ferror(f))
        return -1;
    return 0;
}

static int record_text(FILE *f, const gm_output_rec *rec)
{
    const char *status = rec_status(rec);
    int ok = !rec->error && rec->res;
    int found = ok && rec->res->status == GM_MATCH_FOUND;
    if (rec->line > 0) {
        fprintf(f, "%lld ", (long long)rec->line);
        gm_output_write_name(f, rec->id);
        fputc(' ', f);
        gm_output_write_name(f, rec->ref);
        fputc(' ', f);
    }
    gm_output_write_name(f, rec->query);
    fprintf(f, " %lld %s %d %.4f", (long long)rec->frame, status, ok ? rec->res->votes : 0,
            ok ? round_dec(rec->res->confidence, 4) : 0.0);
    if (found) {
        const gm_result *r = rec->res;
        /* auto: the homography's columns on every row (g h = 0 0 for the
         * simpler models) */
        const int homog =
            rec->wide || rec->model == GM_MODEL_HOMOGRAPHY || rec->model == GM_MODEL_AUTO;
        for (int i = 0; i < 6; i++)
            fprintf(f, " %.6f", round_dec(homog ? r->h[i] : r->m[i], 6));
        if (homog)
            fprintf(f, " %.10f %.10f", round_dec(r->h[6], 10), round_dec(r->h[7], 10));
        fprintf(f, " %.6f %.3f %.3f", round_dec(r->scale, 6), round_dec(r->angle_deg, 3),
                round_dec(r->uncertainty_px, 3));
    } else {
        fputs(rec->wide || rec->model == GM_MODEL_HOMOGRAPHY || rec->model == GM_MODEL_AUTO
                  ? " - - - - - - - - - -" : " - - - - - - - -", f);
        const char *why = ok ? rec_reason(rec->res) : NULL;
        fprintf(f, " %s", why ? why : "-");
    }
    fputc('\n', f);
    if (fflush(f) != 0 || ferror(f))
        return -1;
    return 0;
}

/* A JSON real rounded to 'decimals', or null when not finite (json_real
 * refuses NaN and infinities). */
static json_t *json_dec(double x, int decimals)
{
    return isfinite(x) ? json_real(round_dec(x, decimals)) : json_null();
}

/* Set obj[key] = val and drop our reference; counts failures in *bad
 * (json_object_set_new also fails on a NULL val, i.e. an allocation failure). */
static void set(json_t *obj, const char *key, json_t *val, int *bad)
{
    if (json_object_set_new(obj, key, val) != 0)
        (*bad)++;
}

/* A JSON string from bytes that may not be UTF-8; NULL when out of memory. */
static json_t *json_name(const char *s)
{
    char *clean = gm_output_utf8_sanitize(s ? s : "");
    if (!clean)
        return NULL;
    json_t *j = json_string(clean);
    free(clean);
    return j;
}

static int record_json(FILE *f, const gm_output_rec *rec)
{
    int ok = !rec->error && rec->res;
    int found = ok && rec->res->status == GM_MATCH_FOUND;
    int bad = 0;
    json_t *o = json_object();
    if (!o)
        return -1;
    /* jansson keeps keys in insertion order (since 2.8), which fixes the
     * order of the keys in the line. */
    if (rec->line > 0) {
        set(o, "line", json_integer((json_int_t)rec->line), &bad);
        set(o, "id", json_name(rec->id), &bad); /* a string, given or not */
        set(o, "ref", json_name(rec->ref), &bad);
    }
    set(o, "query", json_name(rec->query), &bad);
    set(o, "frame", json_integer((json_int_t)rec->frame), &bad);
    if (rec->has_pts)
        set(o, "pts_s", json_dec(rec->pts_s, 6), &bad);
    set(o, "status", json_string(rec_status(rec)), &bad);
    const gm_model model = found ? gm_output_model(rec->model, rec->res) : rec->model;
    set(o, "model", json_string(gm_model_name(model)), &bad);
    set(o, "votes", json_integer(ok ? rec->res->votes : 0), &bad);
    set(o, "confidence", json_dec(ok ? rec->res->confidence : 0.0, 6), &bad);
    if (found) {
        const gm_result *r = rec->res;
        const int homog = model == GM_MODEL_HOMOGRAPHY; /* h: [m; 0 0 1] without perspective */
        json_t *m = json_array();
        for (int row = 0; m && row < (homog ? 3 : 2); row++) {
            json_t *a = json_array();
            for (int i = 0; a && i < 3; i++)
                if (json_array_append_new(a, homog ? json_dec(r->h[3 * row + i], row == 2 ? 10 : 6)
                                                   : json_dec(r->m[3 * row + i], 6)) != 0)
                    bad++;
            if (json_array_append_new(m, a) != 0)
                bad++;
        }
        set(o, "matrix", m, &bad);
        set(o, "scale", json_dec(r->scale, 6), &bad);
        set(o, "angle_deg", json_dec(r->angle_deg, 6), &bad);
        if (rec->q_w > 0 && rec->q_h > 0) {
            double xy[8];
            gm_result_corners(r, rec->q_w, rec->q_h, xy);
            json_t *c = json_array();
            for (int k = 0; c && k < 4; k++)
                if (json_array_append_new(c, json_pack("[oo]", json_dec(xy[2 * k], 3),
                                                       json_dec(xy[2 * k + 1], 3))) != 0)
                    bad++;
            set(o, "corners", c, &bad);
        }
        set(o, "residual_px", json_dec(r->residual_px, 3), &bad);
        set(o, "uncertainty_px", json_dec(r->uncertainty_px, 3), &bad);
        set(o, "overlap", json_pack("[oo]", json_dec(r->overlap[0], 4), json_dec(r->overlap[1], 4)),
            &bad);
        set(o, "direction",
            json_string(r->direction == GM_DIRECTION_REVERSE ? "reverse" : "forward"), &bad);
    }
    const char *why = ok && !found ? rec_reason(rec->res) : NULL;
    if (why)
        set(o, "reason", json_string(why), &bad);
    if (ok)
        set(o, "inliers", json_integer(rec->res->inliers), &bad);
    if (rec->ref_w > 0)
        set(o, "ref_size", json_pack("[ii]", rec->ref_w, rec->ref_h), &bad);
    if (rec->q_w > 0)
        set(o, "query_size", json_pack("[ii]", rec->q_w, rec->q_h), &bad);
    set(o, "time_ms", json_dec(rec->time_ms, 3), &bad);
    if (!ok)
        set(o, "error", json_name(rec->error ? rec->error : "no result"), &bad);
    /* 15 significant digits (DBL_DIG): every value rounded to 6 decimals
     * above prints as its shortest decimal form, 1.057727 and not
     * 1.0577270000000001 (%.17g). */
    char *line = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(o);
    if (!line)
        return -1;
    size_t len = strlen(line);
    line[len] = '\n'; /* overwrite the NUL: one write for the whole line */
    size_t w = fwrite(line, 1, len + 1, f);
    free(line);
    if (w != len + 1 || fflush(f) != 0 || ferror(f))
        return -1;
    return 0;
}

int gm_output_record(FILE *f, gm_output_format fmt, const gm_output_rec *rec)
{
    return fmt == GM_OUTPUT_JSON ? record_json(f, rec) : record_text(f, rec);
}
