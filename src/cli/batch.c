/* batch.c: the manifest, shards and resumption of gmatch --batch (batch.h). */
#define _POSIX_C_SOURCE 200809L /* fileno, ftruncate, strdup */

#include "cli/batch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "gmatch.h"
#include "cli/strmap.h"

/* ---- small helpers -------------------------------------------------------- */

/* Room for one more element in *p (n used of *cap, elem bytes each),
 * doubling from first; 0, or -1 when out of memory (*p unchanged). */
static int grow(void *p, int n, int *cap, size_t elem, int first)
{
    if (n < *cap)
        return 0;
    int c = *cap ? *cap * 2 : first;
    void *np = realloc(*(void **)p, (size_t)c * elem);
    if (!np)
        return -1;
    *(void **)p = np, *cap = c;
    return 0;
}

/* The whole file ('-': stdin) in memory, NUL-terminated. */
static char *slurp(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            snprintf(err, errlen, "out of memory");
            break;
        }
        if (n + 1 >= cap) {
            char *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                continue;
            }
            buf = nb, cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - 1 - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                snprintf(err, errlen, "read error: %s", strerror(errno));
                free(buf);
                buf = NULL;
            }
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    if (buf)
        buf[n] = '\0', *len = n;
    return buf;
}

int gm_parse_frames(const char *s, int64_t *first, int64_t *last)
{
    const char *colon = strchr(s, ':');
    if (!colon || strchr(colon + 1, ':'))
        return -1;
    *first = 0, *last = -1;
    char *end;
    if (colon > s) {
        if (*s < '0' || *s > '9')
            return -1;
        errno = 0;
        long long a = strtoll(s, &end, 10);
        if (errno || end != colon)
            return -1;
        *first = a;
    }
    if (colon[1]) {
        if (colon[1] < '0' || colon[1] > '9')
            return -1;
        errno = 0;
        long long b = strtoll(colon + 1, &end, 10);
        if (errno || *end || b <= *first)
            return -1;
        *last = b;
    }
    return 0;
}

static int parse_model(const char *s)
{
    gm_model m;
    return gm_model_from_name(s, &m) == GM_OK ? (int)m : -1;
}

/* ---- pairs ---------------------------------------------------------------- */

static char *dupf(const char *fmt, const char *a)
{
    size_t n = (size_t)snprintf(NULL, 0, fmt, a) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, fmt, a);
    return s;
}

static gm_batch_pair *new_pair(gm_batch *b, int64_t line)
{
    if (grow(&b->pairs, b->n, &b->cap, sizeof *b->pairs, 256) != 0)
        return NULL;
    gm_batch_pair *p = &b->pairs[b->n++];
    memset(p, 0, sizeof *p);
    p->line = line, p->model = -1, p->group = -1, p->last = -1, p->last_frame = -1;
    return p;
}

/* Sets a bad line's cause (the first one stays). */
static void bad(gm_batch_pair *p, const char *fmt, const char *what)
{
    if (!p->error)
        p->error = dupf(fmt, what ? what : "");
}

/* The value of one field; NULL/"" means absent. */
static void set_field(gm_batch_pair *p, const char *key, const char *val)
{
    if (strcmp(key, "ref") == 0) {
        if (!(p->ref = strdup(val)))
            bad(p, "out of memory%s", "");
    } else if (strcmp(key, "query") == 0) {
        if (!(p->query = strdup(val)))
            bad(p, "out of memory%s", "");
    } else if (strcmp(key, "id") == 0) {
        if (!(p->id = strdup(val)))
            bad(p, "out of memory%s", "");
    } else if (strcmp(key, "model") == 0) {
        if ((p->model = parse_model(val)) < 0)
            bad(p, "model '%s' is not similarity, affine, homography or auto", val);
    } else if (strcmp(key, "frames") == 0) {
        p->has_frames = 1;
        if (gm_parse_frames(val, &p->first, &p->last) != 0)
            bad(p, "frames '%s' is not A:B, A: or :B with 0 <= A < B", val);
    } else {
        bad(p, "unknown key '%s' (ref, query, id, model, frames)", key);
    }
}

static void json_line(gm_batch *b, const char *text, int64_t line)
{
    gm_batch_pair *p = new_pair(b, line);
    if (!p)
        return;
    json_error_t je;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!o || !json_is_object(o)) {
        bad(p, o ? "not a JSON object%s" : "not JSON: %s", o ? "" : je.text);
        json_decref(o);
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        char num[32];
        if (strcmp(key, "id") == 0 && json_is_integer(v)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
            set_field(p, key, num);
        } else if (json_is_string(v)) {
            set_field(p, key, json_string_value(v));
        } else {
            bad(p, strcmp(key, "id") == 0 ? "'%s' is not a string or an integer"
                                          : "'%s' is not a string", key);
        }
    }
    json_decref(o);
}

/* One CSV record from *s (RFC 4180: fields in double quotes may hold commas,
 * newlines and "" for a quote); its fields in f[] (at most nmax, NUL-ended
 * in place), *s moved past the record and *line past its newlines.
 * Returns the number of fields, -1 for a quote left open, -2 for too many. */
static int csv_record(char **s, char **f, int nmax, int64_t *line)
{
    char *r = *s, *w = *s;
    int n = 0;
    for (;;) {
        if (n == nmax)
            return -2;
        f[n++] = w;
        if (*r == '"') {
            r++;
            for (;;) {
                if (!*r)
                    return -1;
                if (*r == '"' && r[1] == '"')
                    *w++ = '"', r += 2;
                else if (*r == '"')
                    break;
                else
                    *line += *r == '\n', *w++ = *r++;
            }
            r++;
        }
        while (*r && *r != ',' && *r != '\n' && *r != '\r')
            *w++ = *r++;
        int more = *r == ',', ends = *r != '\0';
        char *next = r + ends;
        if (*r == '\r' && r[1] == '\n')
            next = r + 2;
        *w = '\0'; /* may be where r points: r is not read after this */
        if (!more) {
            *line += ends;
            *s = next;
            return n;
        }
        r = w = next;
    }
}

#define CSV_MAX 16

static int load_csv(gm_batch *b, char *text, char *err, size_t errlen)
{
    char *s = text, *f[CSV_MAX], *names[CSV_MAX];
    int64_t line = 1;
    /* the header: the first record that is not blank */
    int nh = -1;
    while (*s) {
        nh = csv_record(&s, f, CSV_MAX, &line);
        if (nh != 1 || f[0][0])
            break;
    }
    if (nh < 0) {
        snprintf(err, errlen, "the CSV header line is malformed");
        return -1;
    }
    int have_ref = 0, have_query = 0;
    for (int i = 0; i < nh; i++) {
        names[i] = f[i];
        have_ref |= strcmp(f[i], "ref") == 0, have_query |= strcmp(f[i], "query") == 0;
    }
    if (!have_ref || !have_query) {
        snprintf(err, errlen, "the CSV header line names no ref and query columns");
        return -1;
    }
    while (*s) {
        int64_t at = line;
        int n = csv_record(&s, f, CSV_MAX, &line);
        if (n == 1 && !f[0][0])
            continue; /* a blank line */
        gm_batch_pair *p = new_pair(b, at);
        if (!p)
            break;
        if (n < 0) {
            bad(p, "%s", n == -1 ? "a quoted field is not closed" : "too many fields");
            if (n == -1)
                break; /* the rest of the file is inside the quote */
            while (*s && *s != '\n')
                s++;
            continue;
        }
        if (n != nh) {
            char m[64];
            snprintf(m, sizeof m, "%d fields where the header has %d", n, nh);
            bad(p, "%s", m);
            continue;
        }
        for (int i = 0; i < n; i++)
            if (f[i][0])
                set_field(p, names[i], f[i]);
    }
    return 0;
}

static int load_json(gm_batch *b, char *text)
{
    int64_t line = 0;
    for (char *s = text; *s;) {
        char *e = strchr(s, '\n');
        if (e)
            *e = '\0';
        line++;
        char *t = s;
        while (*t == ' ' || *t == '\t' || *t == '\r')
            t++;
        if (*t && *t != '#')
            json_line(b, t, line);
        if (!e)
            break;
        s = e + 1;
    }
    return 0;
}

static int is_csv(const char *path, const char *text)
{
    size_t n = strlen(path);
    if (n >= 4 && strcmp(path + n - 4, ".csv") == 0)
        return 1;
    if (n >= 6 && (strcmp(path + n - 6, ".jsonl") == 0 || strcmp(path + n - 5, ".json") == 0))
        return 0;
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
        text++;
    return *text != '{' && *text != '#';
}

static char *resolve(const char *dir, const char *name)
{
    if (name[0] == '/' || !dir[0] || strcmp(name, "-") == 0)
        return strdup(name);
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", dir, name);
    return s;
}

/* The pairs by id: the key of pair i is "n<digits>" for an integer id and
 * "s<string>" for a string one; the map gives the first pair of a key. */
struct gm_batch_ids {
    gm_strmap map;
    char **keys; /* [n], owned */
    int n;
};

static void ids_free(struct gm_batch_ids *ids)
{
    if (!ids)
        return;
    for (int i = 0; i < ids->n; i++)
        free(ids->keys[i]);
    free(ids->keys);
    gm_strmap_free(&ids->map);
    free(ids);
}

/* Ids, paths, groups: what the lines say, checked. */
static int finish_pairs(gm_batch *b, char *err, size_t errlen)
{
    gm_strmap refs = {0};
    struct gm_batch_ids *idx = calloc(1, sizeof *idx);
    char **keys = idx ? calloc((size_t)b->n + 1, sizeof *keys) : NULL;
    int rc = keys ? 0 : -1;
    if (idx)
        idx->keys = keys, idx->n = b->n;
    gm_strmap *ids = idx ? &idx->map : NULL;
    for (int i = 0; rc == 0 && i < b->n; i++) {
        gm_batch_pair *p = &b->pairs[i];
        char num[32];
        if (!p->id) {
            snprintf(num, sizeof num, "%lld", (long long)p->line);
            if (!(p->id = strdup(num))) {
                rc = -1;
                break;
            }
        }
        if (!(keys[i] = strdup(p->id))) {
            rc = -1;
            break;
        }
        int seen = gm_strmap_get(ids, keys[i]);
        if (seen >= 0) {
            snprintf(num, sizeof num, "%lld", (long long)b->pairs[seen].line);
            bad(p, "the id repeats line %s's", num);
        } else if (gm_strmap_put(ids, keys[i], i) != 0) {
            rc = -1;
            break;
        }
        if (!p->error && !p->ref)
            bad(p, "no ref%s", "");
        if (!p->error && !p->query)
            bad(p, "no query%s", "");
        if (!p->error && (!p->ref[0] || !p->query[0]))
            bad(p, "an empty %s path", !p->ref[0] ? "ref" : "query");
        if (p->error)
            continue;
        if (!(p->ref_path = resolve(b->dir, p->ref)) ||
            !(p->query_path = resolve(b->dir, p->query))) {
            rc = -1;
            break;
        }
        int g = gm_strmap_get(&refs, p->ref_path);
        if (g < 0) {
            if (grow(&b->groups, b->ng, &b->gcap, sizeof *b->groups, 64) != 0) {
                rc = -1;
                break;
            }
            g = b->ng++;
            memset(&b->groups[g], 0, sizeof b->groups[g]);
            b->groups[g].ref = p->ref, b->groups[g].ref_path = p->ref_path;
            if (gm_strmap_put(&refs, p->ref_path, g) != 0) {
                rc = -1;
                break;
            }
        }
        gm_batch_group *gr = &b->groups[g];
        if (grow(&gr->pairs, gr->n, &gr->cap, sizeof *gr->pairs, 8) != 0) {
            rc = -1;
            break;
        }
        gr->pairs[gr->n++] = i;
        p->group = g;
    }
    gm_strmap_free(&refs);
    b->ids = idx; /* kept for --resume (freed with the batch) */
    for (int i = 0; rc == 0 && i < b->n; i++)
        if (b->pairs[i].error && strncmp(b->pairs[i].error, "out of memory", 13) == 0)
            rc = -1;
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

int gm_batch_load(const char *path, gm_batch *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    size_t len;
    char *text = slurp(path, &len, err, errlen);
    if (!text)
        return -1;
    if (memchr(text, '\0', len)) {
        snprintf(err, errlen, "not a manifest: it holds NUL bytes");
        free(text);
        return -1;
    }
    const char *slash = strcmp(path, "-") == 0 ? NULL : strrchr(path, '/');
    b->dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup("");
    b->csv = is_csv(path, text);
    int rc = b->dir ? 0 : -1;
    if (rc == 0)
        rc = b->csv ? load_csv(b, text, err, errlen) : load_json(b, text);
    free(text);
    if (rc == 0 && finish_pairs(b, err, errlen) != 0)
        rc = -1;
    if (rc != 0) {
        if (!err[0])
            snprintf(err, errlen, "out of memory");
        gm_batch_free(b);
    }
    return rc;
}

void gm_batch_free(gm_batch *b)
{
    for (int i = 0; i < b->n; i++) {
        gm_batch_pair *p = &b->pairs[i];
        free(p->id), free(p->ref), free(p->query), free(p->ref_path), free(p->query_path);
        free(p->error);
    }
    for (int g = 0; g < b->ng; g++)
        free(b->groups[g].pairs);
    ids_free(b->ids);
    free(b->pairs), free(b->groups), free(b->dir);
    memset(b, 0, sizeof *b);
}

/* ---- shards --------------------------------------------------------------- */

static const gm_batch *g_sort_batch;

static int by_weight(const void *x, const void *y)
{
    const gm_batch_group *a = &g_sort_batch->groups[*(const int *)x];
    const gm_batch_group *c = &g_sort_batch->groups[*(const int *)y];
    if (a->n != c->n)
        return a->n > c->n ? -1 : 1;
    uint64_t ha = gm_fnv1a(a->ref), hc = gm_fnv1a(c->ref);
    if (ha != hc)
        return ha < hc ? -1 : 1;
    int s = strcmp(a->ref_path, c->ref_path);
    return s ? s : (*(const int *)x > *(const int *)y) - (*(const int *)x < *(const int *)y);
}

void gm_batch_shard(gm_batch *b, int n)
{
    if (n <= 1 || b->ng == 0) {
        for (int g = 0; g < b->ng; g++)
            b->groups[g].shard = 0;
        return;
    }
    int *order = malloc((size_t)b->ng * sizeof *order);
    int64_t *load = calloc((size_t)n, sizeof *load);
    if (!order || !load) {
        /* without memory for the balance: by the hash alone, still a split */
        for (int g = 0; g < b->ng; g++)
            b->groups[g].shard = (int)(gm_fnv1a(b->groups[g].ref) % (uint64_t)n);
        free(order), free(load);
        return;
    }
    for (int g = 0; g < b->ng; g++)
        order[g] = g;
    g_sort_batch = b;
    qsort(order, (size_t)b->ng, sizeof *order, by_weight);
    for (int k = 0; k < b->ng; k++) {
        int best = 0;
        for (int s = 1; s < n; s++)
            if (load[s] < load[best])
                best = s;
        b->groups[order[k]].shard = best;
        load[best] += b->groups[order[k]].n;
    }
    free(order), free(load);
}

int gm_batch_pair_shard(const gm_batch *b, int i, int n)
{
    const gm_batch_pair *p = &b->pairs[i];
    if (n <= 1)
        return 0;
    return p->group >= 0 ? b->groups[p->group].shard : (int)((p->line - 1) % n);
}

/* ---- reading results back -------------------------------------------------- */

/* The next whitespace-separated column of a text row, unquoted (the text
 * format's quoting: C escapes \" \\ \n \t \r and \ooo) into out. */
static const char *text_column(const char *s, char *out, size_t cap)
{
    while (*s == ' ')
        s++;
    size_t n = 0;
    if (*s == '"') {
        for (s++; *s && *s != '"'; s++) {
            int c = (unsigned char)*s;
            if (c == '\\' && s[1]) {
                s++;
                if (*s >= '0' && *s <= '7' && s[1] >= '0' && s[2] >= '0') {
                    c = (s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0');
                    s += 2;
                } else {
                    c = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s;
                }
            }
            if (n + 1 < cap)
                out[n++] = (char)c;
        }
        if (*s == '"')
            s++;
    } else {
        for (; *s && *s != ' '; s++)
            if (n + 1 < cap)
                out[n++] = *s;
    }
    out[n] = '\0';
    return s;
}

/* One result line's id (as text: an integer id of an older run's JSON line
 * is its digits), manifest line and frame.  0, or -1 when the line is not a
 * result. */
static int result_key(const char *ln, gm_output_format fmt, char *id, size_t idcap,
                      int64_t *line, int64_t *frame)
{
    if (fmt == GM_OUTPUT_JSON) {
        json_t *o = json_loads(ln, 0, NULL);
        json_t *jl = o ? json_object_get(o, "line") : NULL, *ji = o ? json_object_get(o, "id") : NULL;
        json_t *jf = o ? json_object_get(o, "frame") : NULL;
        int ok = json_is_integer(jl) && json_is_integer(jf) && (json_is_integer(ji) || json_is_string(ji));
        if (ok) {
            *line = json_integer_value(jl), *frame = json_integer_value(jf);
            if (json_is_integer(ji))
                snprintf(id, idcap, "%lld", (long long)json_integer_value(ji));
            else
                snprintf(id, idcap, "%s", json_string_value(ji));
        }
        json_decref(o);
        return ok ? 0 : -1;
    }
    if (ln[0] == '#')
        return -1;
    char col[4000], *end;
    const char *s = text_column(ln, col, sizeof col);
    *line = strtoll(col, &end, 10);
    if (end == col || *end)
        return -1;
    s = text_column(s, col, sizeof col);
    snprintf(id, idcap, "%s", col);
    s = text_column(s, col, sizeof col); /* ref */
    s = text_column(s, col, sizeof col); /* query */
    text_column(s, col, sizeof col);
    *frame = strtoll(col, &end, 10);
    return end == col || *end ? -1 : 0;
}

/* The pair on manifest line `line` (the pairs are in line order), or -1. */
static int pair_at_line(const gm_batch *b, int64_t line)
{
    int lo = 0, hi = b->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (b->pairs[mid].line == line)
            return mid;
        if (b->pairs[mid].line < line)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

int gm_batch_resume(gm_batch *b, const char *path, gm_output_format fmt, int truncate, char *err,
                    size_t errlen)
{
    size_t len = 0;
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return 0;
    char *text = slurp(path, &len, err, errlen);
    if (!text)
        return -1;
    size_t complete = len;
    while (complete > 0 && text[complete - 1] != '\n')
        complete--;
    if (truncate && complete < len) {
        FILE *f = fopen(path, "r+");
        if (!f || ftruncate(fileno(f), (off_t)complete) != 0) {
            snprintf(err, errlen, "cannot cut the unfinished last line: %s", strerror(errno));
            if (f)
                fclose(f);
            free(text);
            return -1;
        }
        fclose(f);
    }
    text[complete] = '\0';
    const gm_strmap *ids = &b->ids->map; /* gm_batch_load's */
    char id[4096];
    for (char *s = text; *s;) {
        char *e = strchr(s, '\n');
        *e = '\0';
        int64_t line, frame;
        if (result_key(s, fmt, id, sizeof id, &line, &frame) == 0) {
            /* the pair of that id, the one on that line when several say
             * it (a repeated id, an error line of its own) */
            int cand = gm_strmap_get(ids, id);
            int i = cand >= 0 && b->pairs[cand].line == line ? cand : -1;
            if (i < 0 && cand >= 0) { /* a repeated id: by its line */
                int k = pair_at_line(b, line);
                if (k >= 0 && strcmp(b->pairs[k].id, id) == 0)
                    i = k;
            }
            if (i < 0) /* the manifest changed its lines: by the id alone */
                i = cand;
            if (i >= 0) {
                b->pairs[i].written++;
                if (frame > b->pairs[i].last_frame)
                    b->pairs[i].last_frame = frame;
            }
        }
        s = e + 1;
    }
    free(text);
    return 0;
}

/* ---- manifest order ---------------------------------------------------------- */

typedef struct {
    int64_t line, frame;
    size_t at, len; /* the line's bytes in the file, its newline included */
    size_t seq;
} row;

static int by_place(const void *x, const void *y)
{
    const row *a = x, *c = y;
    if (a->line != c->line)
        return a->line < c->line ? -1 : 1;
    if (a->frame != c->frame)
        return a->frame < c->frame ? -1 : 1;
    return (a->seq > c->seq) - (a->seq < c->seq);
}

int gm_batch_sort_file(const char *path, gm_output_format fmt, char *err, size_t errlen)
{
    size_t len;
    char *text = slurp(path, &len, err, errlen);
    if (!text)
        return -1;
    size_t nrows = 0;
    for (size_t i = 0; i < len; i++)
        nrows += text[i] == '\n';
    row *rows = malloc((nrows + 1) * sizeof *rows);
    char *copy = malloc(len + 1);
    if (!rows || !copy) {
        snprintf(err, errlen, "out of memory");
        free(rows), free(copy), free(text);
        return -1;
    }
    memcpy(copy, text, len + 1);
    size_t n = 0, head = 0;
    int sorted = 1;
    char id[64];
    for (size_t at = 0; at < len;) {
        char *e = memchr(copy + at, '\n', len - at);
        size_t end = e ? (size_t)(e - copy) + 1 : len;
        if (e)
            *e = '\0';
        row r = {.at = at, .len = end - at, .seq = n};
        if (result_key(copy + at, fmt, id, sizeof id, &r.line, &r.frame) != 0) {
            if (n == 0 && at == head) { /* the header (text) stays first */
                head = end;
                at = end;
                continue;
            }
            r.line = INT64_MAX, r.frame = INT64_MAX; /* anything else: at the end, kept */
        }
        if (n > 0 && by_place(&rows[n - 1], &r) > 0)
            sorted = 0;
        rows[n++] = r;
        at = end;
    }
    free(copy);
    int rc = 0;
    if (!sorted) {
        qsort(rows, n, sizeof *rows, by_place);
        size_t plen = strlen(path);
        char *tmp = malloc(plen + sizeof ".sort-tmp");
        if (tmp)
            memcpy(tmp, path, plen), memcpy(tmp + plen, ".sort-tmp", sizeof ".sort-tmp");
        FILE *f = tmp ? fopen(tmp, "wb") : NULL;
        int ok = f != NULL && fwrite(text, 1, head, f) == head;
        for (size_t k = 0; ok && k < n; k++) {
            ok = fwrite(text + rows[k].at, 1, rows[k].len, f) == rows[k].len;
            if (ok && text[rows[k].at + rows[k].len - 1] != '\n')
                ok = fputc('\n', f) != EOF;
        }
        if (f && fclose(f) != 0)
            ok = 0;
        if (!ok || rename(tmp, path) != 0) {
            snprintf(err, errlen, "cannot rewrite in manifest order: %s",
                     errno ? strerror(errno) : "out of memory");
            if (tmp)
                remove(tmp);
            rc = -1;
        }
        free(tmp);
    }
    free(rows), free(text);
    return rc;
}
