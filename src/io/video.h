/* video.h: the video input's internals (src/io/video.c), for its tests and
 * tools: the public part is include/gmatch_video.h. */
#ifndef GM_VIDEO_H
#define GM_VIDEO_H

#include "gmatch_video.h"

/* The options v was opened with (for the frame pipeline, src/pipeline/frames.c). */
const gm_video_opts *gm_video_options(const gm_video *v);
/* Its statistics, which the frame pipeline keeps (NULL without FFmpeg). */
gm_video_stats *gm_video_stats_of(gm_video *v);

/* What libavformat makes of the regular file at path, by content: a single
 * picture (image2 or an image pipe: TIFF, BMP, WebP, PNM, ...), something
 * else it reads (a video, a GIF, sound), or nothing (not a regular file, an
 * empty one, unknown bytes, and JPEG or PNG, which are the library's own
 * decoders' alone; always nothing without FFmpeg).  Reads the file's first
 * bytes only. */
typedef enum { GM_PROBE_NONE = 0, GM_PROBE_PICTURE, GM_PROBE_OTHER } gm_probe;
gm_probe gm_video_probe(const char *path);

struct AVFrame;
struct SwsContext;
/* Convert a decoded frame to gray into f (buffer grown as needed): the luma
 * plane directly where that is exact, else libswscale (force_sws: always
 * libswscale, for tests); *sws is a cache the caller frees with
 * sws_freeContext.  GM_OK, GM_ERR_NOMEM, GM_ERR_CORRUPT (no pixel format) or
 * GM_ERR_UNSUPPORTED (libswscale cannot convert it). */
gm_status gm_video_convert(const struct AVFrame *fr, int force_sws, struct SwsContext **sws,
                           gm_video_frame *f);
/* A row of limited-range ("MPEG", 16-235) luma to full-range gray: each
 * byte i to round((i - 16) * 255 / 219), clamped (the conversion of
 * gm_video_convert; test_video checks every byte value). */
void gm_video_limited_row(const uint8_t *src, uint8_t *dst, int w);

/* libavcodec's frame threads for a video decoded on the CPU: `asked`
 * (gm_video_opts.decode_threads, GMATCH_DECODE_THREADS) where it is
 * positive; else 0, libavcodec's own choice (the cores + 1, at most 16),
 * on up to GM_VIDEO_AUTO_THREADS cores, and the cores, at most
 * GM_VIDEO_MAX_THREADS, on more.  The two-H200 machine (32 cores,
 * 2026-12-01, docs/speed.md "The decoder's threads beyond 16"): 1080p
 * inside the pipeline on one GPU with 16, 24, 32 threads 971-987,
 * 1,051-1,097, 1,107-1,118 fps, on both GPUs with 16, 24, 32, 48
 * 1,137-1,170, 1,303-1,353, 1,283-1,309, 1,256-1,269. */
#define GM_VIDEO_AUTO_THREADS 16
#define GM_VIDEO_MAX_THREADS 32
int gm_video_decode_threads(int asked, int cores);

/* gm_video_read, but the gray conversion left to the caller, who may run it
 * on another thread (the frame pipeline's workers: on the decoding thread
 * it took a 640x360 frame's decode half as long again).  An item that
 * decoded comes back with everything but its image and *raw holding the
 * decoded frame; the caller calls gm_video_finish on it.  *raw NULL: f is
 * whole (an error item, a frame read ahead, one NVDEC decoded). */
gm_status gm_video_read_raw(gm_video *v, gm_video_frame *f, int *got, struct AVFrame **raw);
/* *raw to gray in f, as gm_video_read would have (f->status and f->error
 * set the same way), then freed (*raw NULL); nothing for *raw NULL.  *sws:
 * the calling thread's libswscale cache (NULL at first), freed with
 * gm_video_sws_free.  Returns f->status. */
gm_status gm_video_finish(struct AVFrame **raw, struct SwsContext **sws, gm_video_frame *f);
void gm_video_sws_free(struct SwsContext **sws);
/* Frees *raw unconverted (a frame no worker took) and sets it NULL. */
void gm_video_raw_free(struct AVFrame **raw);

#endif
