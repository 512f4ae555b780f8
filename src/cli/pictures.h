/* pictures.h: --draw DIR, the pictures the command line writes of its
 * results (pictures.c, over gm_draw_result / gm_draw_path /
 * gm_draw_caption of gmatch.h). */
#ifndef GM_CLI_PICTURES_H
#define GM_CLI_PICTURES_H

#include <stdint.h>

#include "gmatch.h"
#include "cli/strmap.h"

/* The reference is drawn at most this wide. */
#define GM_PICTURE_MAX_WIDTH 1600

typedef struct {
    const char *dir;   /* NULL: no pictures */
    gm_image ref;      /* the reference as matched, kept for drawing */
    double *corners;   /* a video's outlines so far, 8 a frame (NAN: no match) */
    int n, cap;
    gm_strmap names;   /* the pictures' paths given out in this run (owned keys) */
} gm_pictures;

/* The file for an input name and a suffix, DIR/<name><suffix>.png, where
 * <name> mirrors the input's path: its folders become folders under DIR
 * (made here), without a leading '/' and without "." parts, ".." as "__";
 * '-' is "stdin".  A path given out before in this run (the same input
 * twice, "./q.jpg" beside "q.jpg") gets -2, -3, ... before ".png": a
 * picture is never written over.  Thread-safe.  Returns 0, or -1 when it
 * does not fit or memory runs out. */
int gm_picture_path(gm_pictures *p, const char *name, const char *suffix, char *out, size_t len);
/* Draw one result (its model as gm_output_model reports it for the model
 * asked) with the caption title below it (NULL: none) and write it to
 * path; err gets why not.  Returns 0 or -1. */
int gm_picture_result(const gm_pictures *p, gm_view query, const gm_result *res, gm_model asked,
                      const char *title, const char *path, char *err, size_t errlen);
/* Add a video frame's outline (res NULL or not a match: a gap). */
int gm_picture_add(gm_pictures *p, const gm_result *res, int qw, int qh);
/* Draw the outlines added since the last call and forget them. */
int gm_picture_path_write(gm_pictures *p, const char *title, const char *path, char *err,
                          size_t errlen);
void gm_pictures_free(gm_pictures *p);

#endif
