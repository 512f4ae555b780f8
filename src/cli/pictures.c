/* pictures.c: --draw DIR.  A still query's picture is DIR/<name>.png; a
 * video's, DIR/<name>_<frame>.png every --draw-every frames and
 * DIR/<name>_path.png with every frame's outline.  <name> is the input's
 * base name with its extension ("q.jpg" -> "q.jpg.png", so that q.jpg and
 * q.png do not share a picture). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/pictures.h"

int gm_picture_path(const gm_pictures *p, const char *name, const char *suffix, char *out,
                    size_t len)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strcmp(name, "-") == 0 || !*base)
        base = "stdin";
    int n = snprintf(out, len, "%s/%s%s.png", p->dir, base, suffix);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A drawn picture (st: how the drawing went) to path, then freed. */
static int write_picture(gm_status st, gm_rgb *pic, const char *path, char *err, size_t errlen)
{
    if (st != GM_OK) {
        snprintf(err, errlen, "cannot draw the picture: %s", gm_status_str(st));
        return -1;
    }
    st = gm_rgb_write_png(pic, path, err, errlen);
    gm_rgb_free(pic);
    return st == GM_OK ? 0 : -1;
}

int gm_picture_result(const gm_pictures *p, gm_view query, const gm_result *res,
                      const char *path, char *err, size_t errlen)
{
    gm_rgb pic;
    gm_status st = gm_draw_result(gm_image_view(&p->ref), query, res, GM_PICTURE_MAX_WIDTH, &pic);
    return write_picture(st, &pic, path, err, errlen);
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

int gm_picture_path_write(gm_pictures *p, const char *path, char *err, size_t errlen)
{
    gm_rgb pic;
    gm_status st = gm_draw_path(gm_image_view(&p->ref), p->corners, p->n, GM_PICTURE_MAX_WIDTH,
                                &pic);
    p->n = 0;
    return write_picture(st, &pic, path, err, errlen);
}

void gm_pictures_free(gm_pictures *p)
{
    gm_image_free(&p->ref);
    free(p->corners);
    p->corners = NULL;
    p->n = p->cap = 0;
}
