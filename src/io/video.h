/* video.h: the video input's internals (src/io/video.c), for its tests and
 * tools: the public part is include/gmatch_video.h. */
#ifndef GM_VIDEO_H
#define GM_VIDEO_H

#include "gmatch_video.h"

/* Convert a decoded frame to gray into f (buffer grown as needed): the luma
 * plane directly where that is exact, else libswscale (force_sws: always
 * libswscale, for tests); *sws is a cache the caller frees with
 * sws_freeContext.  GM_OK, GM_ERR_NOMEM, GM_ERR_CORRUPT (no pixel format) or
 * GM_ERR_UNSUPPORTED (libswscale cannot convert it). */
/* The options v was opened with (for the frame pipeline, src/pipeline/frames.c). */
const gm_video_opts *gm_video_options(const gm_video *v);
/* Its statistics, which the frame pipeline keeps (NULL without FFmpeg). */
gm_video_stats *gm_video_stats_of(gm_video *v);

struct AVFrame;
struct SwsContext;
gm_status gm_video_convert(const struct AVFrame *fr, int force_sws, struct SwsContext **sws,
                           gm_video_frame *f);

#endif
