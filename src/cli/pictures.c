/* pictures.c: --draw DIR.  A still query's picture is DIR/<name>.png; a
 * video's, DIR/<name>_<frame>.png every --draw-every frames and
 * DIR/<name>_path.png with every frame's outline.  <name> mirrors the
 * input's path with its extension ("d1/q.jpg" -> DIR/d1/q.jpg.png, so that
 * d2/q.jpg and q.png do not share a picture), numbered where it would
 * repeat (gm_picture_path); a caption below each picture names the input
 * and the frame. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/pictures.h"
#include "cli/output.h"

/* the still workers name their pictures at once */
static pthread_mutex_t g_names_lock = PTHREAD_MUTEX_INITIALIZER;

/* name as a relative path: its '/'-separated parts without the empty and
 * "." ones, ".." as "__"; "-" is "stdin", nothing left "input".  Returns
 * 0, or -1 when it does not fit. */
static int mirror(const char *name, char *out, size_t len)
{
    size_t n = 0;
    if (strcmp(name, "-") == 0)
        name = "stdin";
    for (const char *s = name; *s;) {
        size_t k = strcspn(s, "/");
        int dots = k == 2 && s[0] == '.' && s[1] == '.';
        if (k > 0 && !(k == 1 && s[0] == '.')) {
            const char *part = dots ? "__" : s;
            if (n + (n > 0) + k + 1 > len)
                return -1;
            if (n > 0)
                out[n++] = '/';
            memcpy(out + n, part, k);
            n += k;
        }
        s += k + (s[k] == '/');
    }
    if (n == 0)
        return snprintf(out, len, "input") < (int)len ? 0 : -1;
    out[n] = '\0';
    return 0;
}

/* The folders of path below dir, made where missing (errors show when the
 * picture is written). */
static void make_folders(const char *dir, char *path)
{
    for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        (void)mkdir(path, 0777); /* EEXIST, or the write says why */
        *s = '/';
    }
}

int gm_picture_path(gm_pictures *p, const char *name, const char *suffix, char *out, size_t len)
{
    char rel[4096];
    if (mirror(name, rel, sizeof rel) != 0)
        return -1;
    int rc = -1;
    pthread_mutex_lock(&g_names_lock);
    for (int k = 1;; k++) {
        char num[16] = "";
        if (k > 1)
            snprintf(num, sizeof num, "-%d", k);
        int n = snprintf(out, len, "%s/%s%s%s.png", p->dir, rel, suffix, num);
        if (n < 0 || (size_t)n >= len)
            break;
        if (gm_strmap_get(&p->names, out) >= 0)
            continue;
        char *keep = strdup(out);
        if (keep && gm_strmap_put(&p->names, keep, k) == 0)
            rc = 0;
        else
            free(keep);
        break;
    }
    pthread_mutex_unlock(&g_names_lock);
    if (rc == 0)
        make_folders(p->dir, out);
    return rc;
}

/* A drawn picture (st: how the drawing went) with its title below (NULL:
 * none) to path, then freed. */
static int write_picture(gm_status st, gm_rgb *pic, const char *title, const char *path,
                         char *err, size_t errlen)
{
    if (st == GM_OK && title) {
        gm_rgb titled;
        st = gm_draw_caption(pic, title, &titled);
        gm_rgb_free(pic);
        *pic = titled;
    }
    if (st != GM_OK) {
        gm_rgb_free(pic);
        snprintf(err, errlen, "cannot draw the picture: %s", gm_status_str(st));
        return -1;
    }
    st = gm_rgb_write_png(pic, path, err, errlen);
    gm_rgb_free(pic);
    return st == GM_OK ? 0 : -1;
}

int gm_picture_result(const gm_pictures *p, gm_view query, const gm_result *res, gm_model asked,
                      const char *title, const char *path, char *err, size_t errlen)
{
    gm_rgb pic;
    gm_result shown = *res;
    if (shown.status == GM_MATCH_FOUND)
        shown.model = gm_output_model(asked, res);
    gm_status st = gm_draw_result(gm_image_view(&p->ref), query, &shown, GM_PICTURE_MAX_WIDTH,
                                  &pic);
    return write_picture(st, &pic, title, path, err, errlen);
}

int gm_picture_add(gm_pictures *p, const gm_result *res, int qw, int qh)
{
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        double *c = realloc(p->corners, (size_t)cap * 8 * sizeof *c);
        if (!c)
            return -1;
        p->corners = c, p->cap = cap;
    }
    double *c = p->corners + 8 * (size_t)p->n++;
    if (res && res->status == GM_MATCH_FOUND)
        gm_result_corners(res, qw, qh, c);
    else
        for (int k = 0; k < 8; k++)
            c[k] = NAN;
    return 0;
}

int gm_picture_path_write(gm_pictures *p, const char *title, const char *path, char *err,
                          size_t errlen)
{
    gm_rgb pic;
    gm_status st = gm_draw_path(gm_image_view(&p->ref), p->corners, p->n, GM_PICTURE_MAX_WIDTH,
                                &pic);
    p->n = 0;
    return write_picture(st, &pic, title, path, err, errlen);
}

void gm_pictures_free(gm_pictures *p)
{
    gm_image_free(&p->ref);
    free(p->corners);
    p->corners = NULL;
    p->n = p->cap = 0;
    for (size_t i = 0; i < p->names.cap; i++)
        free((char *)p->names.key[i]);
    gm_strmap_free(&p->names);
}
