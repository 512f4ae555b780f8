/* fuzz_image.c: libFuzzer harness for the JPEG/PNG decoder (src/io/image.c),
 * after stb's stbi_read_fuzzer.c.
 *
 * Built with the library instrumented by tools/fuzz/run.sh (CMake
 * -DGMATCH_FUZZ=ON, clang), run as
 *   build-fuzz/fuzz_image -max_len=65536 tools/fuzz/corpus/image
 * The seeds (tools/fuzz/corpus/image: progressive, palette, 16-bit, gray
 * with alpha, 1-bit) start the fuzzer inside the decoders.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_contract.h"
#include "gmatch.h"

/* A small pixel limit keeps each input fast: forged headers are the common
 * case, and the size check itself is part of what is under test. */
#define FUZZ_MAX_PIXELS ((int64_t)4 * 1000 * 1000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gm_image img;
    char err[256];
    gm_status st = gm_image_load_mem(data, size, FUZZ_MAX_PIXELS, &img, err, sizeof err);
    if (st == GM_OK) {
        /* Read every pixel, so that MemorySanitizer builds catch rows the
         * decoder left unwritten; the sum keeps the loop from being dropped. */
        volatile unsigned sum = 0;
        for (int y = 0; y < img.height; y++)
            for (int x = 0; x < img.width; x++)
                sum += img.data[(size_t)y * (size_t)img.stride + (size_t)x];
        (void)sum;
        gm_image_free(&img);
    } else if (img.data != NULL || !one_line(err)) {
        __builtin_trap(); /* the contract: *out zeroed, a one-line message */
    }
    return 0;
}
