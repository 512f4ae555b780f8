/* fuzz_pipeline.c: libFuzzer harness for the whole pipeline on small images
 * (CPU backend): a reference and a query made from the fuzzer's bytes,
 * prepared and matched under the model the bytes choose.
 *
 * Built by CMake with -DGMATCH_FUZZ=ON (clang; tools/fuzz/run.sh), run as
 *   build-fuzz/fuzz_pipeline -max_len=8192 -timeout=10 tools/fuzz/corpus/pipeline
 *
 * The bytes: [0] reference width, [1] height, [2] query width, [3] height,
 * [4] model and flags, [5] [6] crop offset, then pixels.  With flag 0x10 the
 * query is a crop of the reference (so that votes, verification and the
 * refinement run on real agreement), the pixels after the reference's
 * disturbing it; otherwise both images are the bytes, repeated to fill.
 * The contract checked: gm_ref_prepare and gm_match return GM_OK or an error
 * with a one-line message; a result holds finite numbers, a confidence in
 * [0, 1] and a known status and model. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_contract.h"
#include "gmatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER 7

static void fill(uint8_t *dst, size_t n, const uint8_t *src, size_t len, uint8_t salt)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = len ? (uint8_t)(src[i % len] + (uint8_t)(i / len) * salt) : salt;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEADER)
        return 0;
    int rw = 8 + data[0] % 89, rh = 8 + data[1] % 89;  /* 8..96 */
    int qw = 4 + data[2] % 61, qh = 4 + data[3] % 61;  /* 4..64 */
    gm_model model = (gm_model)(data[4] & 3);
    int crop = (data[4] & 0x10) != 0;
    const uint8_t *px = data + HEADER;
    size_t npx = size - HEADER;

    uint8_t *ref = malloc((size_t)rw * rh), *qry = malloc((size_t)qw * qh);
    if (!ref || !qry)
        goto out;
    fill(ref, (size_t)rw * rh, px, npx, 37);
    if (crop && qw <= rw && qh <= rh) {
        int x0 = data[5] % (rw - qw + 1), y0 = data[6] % (rh - qh + 1);
        for (int y = 0; y < qh; y++)
            memcpy(qry + (size_t)y * qw, ref + (size_t)(y0 + y) * rw + x0, (size_t)qw);
        size_t rest = npx > (size_t)rw * rh ? npx - (size_t)rw * rh : 0;
        for (size_t i = 0; i < rest && i < (size_t)qw * qh; i++)
            qry[i] = (uint8_t)(qry[i] + px[(size_t)rw * rh + i]);
    } else {
        fill(qry, (size_t)qw * qh, px + npx / 2, npx - npx / 2, 11);
    }

    gm_params p = gm_params_default();
    p.device = GM_DEVICE_CPU;
    p.threads = 1;
    p.model = model;
    gm_view rv = {ref, rw, rh, rw}, qv = {qry, qw, qh, qw};
    gm_ref *r = NULL;
    gm_status st = gm_ref_prepare(&p, rv, &r);
    if (st != GM_OK) {
        if (r && !one_line(gm_ref_error(r)))
            __builtin_trap();
        gm_ref_free(r);
        goto out;
    }
    gm_result res;
    st = gm_match(r, qv, &res);
    if (st == GM_OK && res.status == GM_MATCH_FOUND) {
        double xy[8];
        gm_result_corners(&res, qw, qh, xy);
        for (int i = 0; i < 8; i++)
            if (!isfinite(xy[i]))
                __builtin_trap();
        if (!(res.confidence >= 0 && res.confidence <= 1) || !isfinite(res.scale) ||
            !isfinite(res.angle_deg) || res.model < GM_MODEL_SIMILARITY ||
            res.model > GM_MODEL_HOMOGRAPHY)
            __builtin_trap();
    } else if (st == GM_OK && res.status != GM_MATCH_NONE) {
        __builtin_trap();
    } else if (st != GM_OK && !one_line(res.error)) {
        __builtin_trap();
    }
    gm_ref_free(r);
out:
    free(ref);
    free(qry);
    return 0;
}
