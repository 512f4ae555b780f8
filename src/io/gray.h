/* gray.h: the one colour-to-gray rule of the io layer (image.c's decoders,
 * pixels.c's arrays): libjpeg's integer BT.601 weights, which sum to 65536,
 * so white stays white and a PNG, a JPEG and an array of the same colours
 * give the same gray. */
#ifndef GM_IO_GRAY_H
#define GM_IO_GRAY_H

#include <stdint.h>

/* 8-bit samples to 8-bit gray. */
static inline uint8_t gm_gray_from_rgb(unsigned r, unsigned g, unsigned b)
{
    return (uint8_t)((19595u * r + 38470u * g + 7471u * b + 32768u) >> 16);
}

/* The same weights on samples of up to 16 bits (the result keeps their range). */
static inline uint32_t gm_gray16_from_rgb(uint32_t r, uint32_t g, uint32_t b)
{
    return (uint32_t)((19595ull * r + 38470ull * g + 7471ull * b + 32768ull) >> 16);
}

/* 16-bit samples by their actual range (gmatch.h, gm_image_from_pixels):
 * with b the bits of top, the largest SAMPLE of the image (8 at least),
 * v -> round(v * 255 / (2^b - 1)).  n gray values of src into dst. */
static inline int gm_range_bits(uint32_t top)
{
    int bits = 8;
    while (bits < 16 && (top >> bits) != 0)
        bits++;
    return bits;
}

static inline void gm_gray16_to_8(const uint16_t *src, size_t n, uint32_t top, uint8_t *dst)
{
    const uint32_t den = (1u << gm_range_bits(top)) - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint8_t)((src[i] * 255u + den / 2) / den);
}

#endif
