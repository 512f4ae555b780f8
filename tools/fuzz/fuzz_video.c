/* fuzz_video.c: libFuzzer harness for the FFmpeg input path (src/io/video.c):
 * the fuzzer's bytes as a file in memory (gm_video_open_mem, FFmpeg's reader
 * over a custom AVIOContext), probed, demuxed, decoded and turned gray item
 * by item as the command line reads a video query.
 *
 * Built by CMake with -DGMATCH_FUZZ=ON (clang; tools/fuzz/run.sh), run as
 *   build-fuzz/fuzz_video -max_len=65536 -timeout=10 tools/fuzz/corpus/video
 * The contract checked on every input: gm_video_open either succeeds or
 * leaves *out NULL with a one-line message; every item read is a frame with
 * pixels or an error with a one-line message; the items stop. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_contract.h"
#include "gmatch.h"
#include "gmatch_video.h"

/* Small limits keep each input fast: forged sizes are the common case, and
 * refusing them is part of what is under test. */
#define FUZZ_MAX_PIXELS ((int64_t)1 << 20)
#define FUZZ_MAX_ITEMS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        gm_video_log(0);
        quiet = 1;
    }
    gm_video_opts o = gm_video_opts_default();
    o.max_pixels = FUZZ_MAX_PIXELS;
    o.decode_threads = 1; /* one thread: reproducible, and no frame threads to race */
    o.decode = GM_VIDEO_DECODE_CPU;
    if (size > 0 && (data[0] & 1)) {
        /* a frame selection now and then: seeking and the selection's items */
        o.first = data[size - 1] % 40;
        o.step = 1 + data[size / 2] % 3;
    }
    gm_video *v = NULL;
    char err[256] = "";
    gm_status st = gm_video_open_mem(data, size, &o, &v, err, sizeof err);
    if (st != GM_OK) {
        if (v != NULL || !one_line(err))
            __builtin_trap();
        return 0;
    }
    gm_video_frame f;
    memset(&f, 0, sizeof f);
    int got = 1, items = 0;
    while (items < FUZZ_MAX_ITEMS) {
        if (gm_video_read(v, &f, &got) != GM_OK || !got)
            break;
        items++;
        if (f.status == GM_OK) {
            if (!f.img.data || f.img.width <= 0 || f.img.height <= 0 ||
                (int64_t)f.img.width * f.img.height > FUZZ_MAX_PIXELS)
                __builtin_trap();
            volatile unsigned sum = 0;
            for (int y = 0; y < f.img.height; y++)
                sum += f.img.data[(size_t)y * (size_t)f.img.stride + (size_t)(f.img.width - 1)];
            (void)sum;
        } else if (!one_line(f.error)) {
            __builtin_trap();
        }
    }
    /* every video gives at least one item (issue 15) */
    if (items == 0)
        __builtin_trap();
    (void)gm_video_lost(v);
    if (strchr(gm_video_error(v), '\n'))
        __builtin_trap();
    gm_video_frame_free(&f);
    gm_video_close(v);
    return 0;
}
