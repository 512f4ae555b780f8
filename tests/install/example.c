/* example.c: gmatch from C, as an application sees it (the install test
 * builds it against an installed gmatch through pkg-config and through
 * find_package, with the shared and with the static library).
 *
 *     example REF QUERY      prints the query's transform in the reference
 *                            and its uncertainty, or "none" and why; exit 1
 *                            on any error
 */
#include <stdio.h>

#include <gmatch.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s REF QUERY\n", argv[0]);
        return 2;
    }
    if (GMATCH_VERSION_NUMBER < 100) {
        fprintf(stderr, "gmatch %s is older than 0.1.0\n", GMATCH_VERSION);
        return 1;
    }
    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CPU; /* the same answer on every machine */
    gm_image ref, qry;
    char err[256];
    gm_status st = gm_image_load(argv[1], p.max_pixels, &ref, err, sizeof err);
    if (st != GM_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    st = gm_image_load(argv[2], p.max_pixels, &qry, err, sizeof err);
    if (st != GM_OK) {
        fprintf(stderr, "%s: %s\n", argv[2], err);
        gm_image_free(&ref);
        return 1;
    }
    gm_ref *r = NULL;
    st = gm_ref_prepare(&p, gm_image_view(&ref), &r);
    if (st != GM_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], r ? gm_ref_error(r) : gm_status_str(st));
        gm_ref_free(r);
        gm_image_free(&ref);
        gm_image_free(&qry);
        return 1;
    }
    gm_result res;
    st = gm_match(r, gm_image_view(&qry), &res);
    if (st != GM_OK)
        fprintf(stderr, "%s: %s\n", argv[2], res.error);
    else if (res.status == GM_MATCH_FOUND)
        printf("gmatch %s (library %s): %s [%.4f %.4f %.2f; %.4f %.4f %.2f] confidence %.3f "
               "uncertainty %.2f px\n",
               GMATCH_VERSION, gm_version(), gm_model_name(res.model), res.m[0], res.m[1],
               res.m[2], res.m[3], res.m[4], res.m[5], res.confidence, res.uncertainty_px);
    else
        printf("none (%s)\n", gm_reason_name(res.reason));
    gm_ref_free(r);
    gm_image_free(&ref);
    gm_image_free(&qry);
    return st == GM_OK ? 0 : 1;
}
