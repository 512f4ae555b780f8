/* status.c: gm_status, gm_model and gm_reason names, the library's version, a
 * result's corners. */
#include <string.h>

#include "gmatch.h"

const char *gm_version(void) { return GMATCH_VERSION; }

const char *gm_status_str(gm_status s)
{
    switch (s) {
    case GM_OK: return "ok";
    case GM_ERR_IO: return "input/output error";
    case GM_ERR_FORMAT: return "unknown image format";
    case GM_ERR_CORRUPT: return "corrupt image data";
    case GM_ERR_TOO_LARGE: return "image too large";
    case GM_ERR_NOMEM: return "out of memory";
    case GM_ERR_INVALID: return "invalid argument";
    case GM_ERR_EMPTY: return "empty image";
    case GM_ERR_UNSUPPORTED: return "unsupported image variant";
    case GM_ERR_HASH: return "hash table build failed";
    case GM_ERR_DEVICE: return "GPU device error";
    }
    return "unknown status";
}

const char *gm_model_name(gm_model m)
{
    switch (m) {
    case GM_MODEL_SIMILARITY:
        return "similarity";
    case GM_MODEL_AFFINE:
        return "affine";
    case GM_MODEL_HOMOGRAPHY:
        return "homography";
    case GM_MODEL_AUTO:
        return "auto";
    case GM_MODEL_REFERENCE: /* a stand-in for the reference's model, not a model */
        break;
    }
    return "unknown";
}

gm_status gm_model_from_name(const char *name, gm_model *out)
{
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY,
                                      GM_MODEL_AUTO};
    for (size_t i = 0; name && i < sizeof models / sizeof *models; i++)
        if (strcmp(name, gm_model_name(models[i])) == 0) {
            *out = models[i];
            return GM_OK;
        }
    return GM_ERR_INVALID;
}

const char *gm_reason_name(gm_reason r)
{
    switch (r) {
    case GM_REASON_FOUND: return "found";
    case GM_REASON_NO_EDGES: return "no_edges";
    case GM_REASON_NO_CANDIDATE: return "no_candidate";
    case GM_REASON_WEAK: return "weak";
    case GM_REASON_AMBIGUOUS: return "ambiguous";
    case GM_REASON_UNCERTAIN: return "uncertain";
    case GM_REASON_SMALL_OVERLAP: return "small_overlap";
    case GM_REASON_HORIZON: return "horizon";
    }
    return NULL;
}

void gm_result_corners(const gm_result *r, int qw, int qh, double xy[8])
{
    const double cx[4] = {0, qw - 1.0, qw - 1.0, 0}, cy[4] = {0, 0, qh - 1.0, qh - 1.0};
    const double *h = r->h;
    for (int k = 0; k < 4; k++) {
        double d = h[6] * cx[k] + h[7] * cy[k] + h[8];
        xy[2 * k] = (h[0] * cx[k] + h[1] * cy[k] + h[2]) / d;
        xy[2 * k + 1] = (h[3] * cx[k] + h[4] * cy[k] + h[5]) / d;
    }
}
