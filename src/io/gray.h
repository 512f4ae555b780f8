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

#endif
