/* resample.c: integer box downscale to the working size.
 * A working pixel X covers source pixels f*X .. f*X+f-1, so its centre is the
 * source coordinate f*X + (f-1)/2 (pixel centres at integers). */
#include <stdlib.h>

#include "common/common.h"
#include "stages/resample.h"

int gm_downscale_factor(int w, int h, int max_side)
{
    int m = w > h ? w : h;
    if (max_side <= 0 || m <= max_side)
        return 1;
    return (m + max_side - 1) / max_side;
}

/* f = 2 (a 1080p video frame, a 2048-pixel image), written out so that
 * it vectorizes: the same sums and rounding as the general loop.  A 1080p
 * frame took about 5 ms in the general loop on one core of the H100
 * machine, beside the decoder's threads (docs/speed.md). */
static void downscale2(gm_view src, uint8_t *dst)
{
    int dw = src.width / 2, dh = src.height / 2;
#pragma omp parallel for num_threads(gm_threads()) schedule(static) if ((size_t)dw * dh * 4 >= GM_PAR_PIXELS)
    for (int y = 0; y < dh; y++) {
        const uint8_t *r0 = src.data + (ptrdiff_t)(2 * y) * src.stride;
        const uint8_t *r1 = r0 + src.stride;
        uint8_t *o = dst + (size_t)y * dw;
        for (int x = 0; x < dw; x++) {
            unsigned s = (unsigned)r0[2 * x] + r0[2 * x + 1] + r1[2 * x] + r1[2 * x + 1];
            o[x] = (uint8_t)((s + 2) >> 2);
        }
    }
}

/* Any f: each output row's f source rows summed column by column (a loop
 * that vectorizes), then each run of f columns; the same integer sums and
 * rounding as the box loop (test_sobel.c checks it against one).  The box
 * loop took about 5 ms a 1080p frame at f = 4 on one core of the H200
 * machine, the frame's levels 1 and 2 and a cut-away frame's preparation
 * three such (docs/speed.md). */
void gm_downscale_cpu(gm_view src, int f, uint8_t *dst)
{
    if (f == 2) {
        downscale2(src, dst);
        return;
    }
    int dw = src.width / f, dh = src.height / f;
    const size_t cols = (size_t)dw * f;
    const uint32_t area = (uint32_t)(f * f);
#pragma omp parallel num_threads(gm_threads()) if ((size_t)dw * dh * f * f >= GM_PAR_PIXELS)
    {
        uint32_t *sum = malloc((cols ? cols : 1) * sizeof *sum);
#pragma omp for schedule(static)
        for (int y = 0; y < dh; y++) {
            if (sum) {
                const uint8_t *r = src.data + (ptrdiff_t)(y * f) * src.stride;
                for (size_t x = 0; x < cols; x++)
                    sum[x] = r[x];
                for (int j = 1; j < f; j++) {
                    r += src.stride;
                    for (size_t x = 0; x < cols; x++)
                        sum[x] += r[x];
                }
                for (int x = 0; x < dw; x++) {
                    uint32_t s = 0;
                    for (int i = 0; i < f; i++)
                        s += sum[(size_t)x * f + i];
                    dst[(size_t)y * dw + x] = (uint8_t)((s + area / 2) / area);
                }
                continue;
            }
            /* no scratch: the box loop */
            for (int x = 0; x < dw; x++) {
                uint32_t s = 0;
                for (int j = 0; j < f; j++) {
                    const uint8_t *row = src.data + (ptrdiff_t)(y * f + j) * src.stride + (ptrdiff_t)x * f;
                    for (int i = 0; i < f; i++)
                        s += row[i];
                }
                dst[(size_t)y * dw + x] = (uint8_t)((s + area / 2) / area);
            }
        }
        free(sum);
    }
}
