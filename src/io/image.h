/* image.h: the library's own still decoders (src/io/image.c), for still.c:
 * the public gm_image_load (gmatch.h) is these and FFmpeg's still formats. */
#ifndef GM_IMAGE_H
#define GM_IMAGE_H

#include "gmatch.h"

/* A JPEG or PNG file to 8-bit gray, as gm_image_load documents, and
 * GM_ERR_FORMAT for anything else ("empty file", "not a JPEG or PNG
 * image"). */
gm_status gm_image_load_jpeg_png(const char *path, int64_t max_pixels, gm_image *out, char *err,
                                 size_t errlen);

#endif
