/* gmatch_video.h: frames of a video file as 8-bit gray, and a pipeline that
 * matches every frame against one prepared reference (gmatch.h).  Through
 * FFmpeg (libavformat, libavcodec, libswscale, libavutil), which the
 * library opens on its first video (dlopen), not when a program starts: a
 * program that reads only JPEG and PNG never loads it.  In a library built
 * without it, or where its libraries cannot be loaded (gm_video_available()
 * is 0), gm_video_open answers GM_ERR_FORMAT saying so, and the rest is
 * never reached.
 *
 *     gm_video *v;
 *     gm_video_opts o = gm_video_opts_default();
 *     o.first = 100, o.last = 400, o.step = 2;          // frames 100, 102, ..., 398
 *     if (gm_video_open("clip.mp4", &o, &v, err, sizeof err) != GM_OK) ...
 *     gm_video_match(v, ref, sink, user);             // sink called in frame order
 *     if (gm_video_lost(v)) fprintf(stderr, "%s\n", gm_video_error(v));
 *     gm_video_close(v);
 *
 * Which files are videos: whatever libavformat recognises BY CONTENT (the
 * file name plays no part) and that holds a video stream libavcodec decodes.
 * The caller tries the still-image decoders (gm_image_load) first: they take
 * the single-picture formats (TIFF, WebP, ...) that this reader also reads.
 *
 * Frames are numbered from 0 in presentation order: the decoder's output
 * frames are counted.  For a stream with a constant frame rate the number is
 * also checked against the frame's timestamp, (pts - start) * fps: a frame
 * the decoder dropped (corrupt packets) leaves a gap, and each selected frame
 * in the gap comes out as an error item, so numbers stay right after damage
 * and after a seek.  pts_s is best_effort_timestamp * time_base minus the
 * stream's start time, in SECONDS.
 *
 * Gray: for formats whose first plane is 8-bit luma (yuv420p, nv12, gray,
 * ...) the Y plane is used directly; limited-range (MPEG, 16..235) luma is
 * expanded to 0..255 by a table, (y - 16) * 255 / 219 rounded and clamped,
 * which is what libswscale's conversion to GRAY8 does (tested to within one
 * level), so a video frame and the same picture as a still see the same
 * contrast.  Other formats (RGB, palette, 10-bit) go through libswscale to
 * GRAY8.
 *
 * Decoders (gm_video_opts.decode): the CPU (libavcodec's software decoders,
 * frame and slice threads), or NVDEC through FFmpeg's cuda hwaccel: frames
 * decoded on the GPU are copied to host memory (av_hwframe_transfer_data:
 * NV12, P010, ...) and then take the same gray path, so numbering, pts,
 * selection, seeking and damage reports do not depend on the decoder.  A
 * codec or profile NVDEC does not take (FFmpeg offers no CUDA format for it)
 * is decoded on the CPU.  GM_VIDEO_DECODE_AUTO is the CPU decoder: measured
 * faster end to end on the H100 machine at every size and codec tried
 * (docs/benchmarks.md, "Video decoding").  Damage differs: NVDEC conceals a corrupt slice
 * that the CPU decoder reports as a lost frame.
 */
#ifndef GMATCH_VIDEO_H
#define GMATCH_VIDEO_H

#include <stddef.h>
#include <stdint.h>

#include "gmatch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gm_video gm_video;

typedef enum {
    GM_VIDEO_DECODE_AUTO = 0, /* the measured choice: the CPU (see above) */
    GM_VIDEO_DECODE_CPU,
    GM_VIDEO_DECODE_NVDEC,    /* NVDEC or GM_ERR_DEVICE from gm_video_open */
} gm_video_decode;

typedef struct {
    int64_t first;        /* first frame selected (default 0) */
    int64_t last;         /* frames [first, last) are selected; -1 = to the end */
    int64_t step;         /* every step-th frame from first (default 1) */
    int decode_threads;   /* libavcodec threads; 0 = the cores (libavcodec's own
                             choice up to 16 cores, at most 32 beyond) */
    int workers;          /* matcher threads of gm_video_match; 0 = the cores on
                             the CPU, 16 a GPU (a lane each) at most the cores
                             on GPUs, chosen once the reference is placed */
    int frame_threads;    /* OpenMP threads per frame in each worker; 0 = 1.
                             Frames in parallel beat threads in a frame: the
                             bench video (640x360, 120 frames) on 2 cores,
                             end to end: 2 workers x 1 thread 3.6 s, 1 x 2
                             4.2 s, 2 x 2 3.6 s, 1 x 1 7.2 s (a shared
                             machine, load about 3; two runs each) */
    int64_t max_pixels;   /* frames above it are error items; <= 0: GM_DEFAULT_MAX_PIXELS */
    gm_video_decode decode; /* default GM_VIDEO_DECODE_AUTO */
    gm_model model;       /* gm_video_match's model: GM_MODEL_REFERENCE (default) the
                             reference's own, else one for gm_match_model (same rules) */
    int queue;            /* frames gm_video_match decodes ahead of its workers: the ring
                             holds workers + queue frames; <= 0: the default (as many as
                             128 MiB of frames hold, 2 to 16 a worker: gm_video_match) */
    int sink_pixels;      /* 1 (default): the sink's item holds the frame's pixels;
                             0: its size only (img.data NULL), and a frame's buffer
                             goes back to the decoder once matched, so results wait
                             in order behind a slow frame without holding frames:
                             the ring then holds 1,024 results more than frames */
} gm_video_opts;

GM_API gm_video_opts gm_video_opts_default(void);

/* One selected frame, or one selected frame that could not be decoded
 * (status != GM_OK, error says why).  The image is owned by the reader that
 * filled it; gm_video_frame_free releases it. */
typedef struct {
    int64_t frame;        /* frame number, presentation order, from 0 */
    int has_pts;
    double pts_s;         /* SECONDS from the stream start */
    gm_status status;
    char error[384];
    gm_image img;         /* valid when status == GM_OK */
    size_t cap;           /* bytes allocated at img.data */
} gm_video_frame;

GM_API void gm_video_frame_free(gm_video_frame *f);

/* Open a video file.  GM_ERR_FORMAT when it is not a video libavformat and
 * libavcodec read (the message in err says "no video stream" for an
 * audio-only file); GM_ERR_INVALID for bad options; GM_ERR_DEVICE when
 * o->decode is GM_VIDEO_DECODE_NVDEC and FFmpeg cannot make a CUDA device
 * (no driver, no GPU, an FFmpeg without CUDA: err says "hardware decoding
 * unavailable: " and why).  On success the caller
 * closes *out with gm_video_close. */
GM_API gm_status gm_video_open(const char *path, const gm_video_opts *o, gm_video **out, char *err,
                        size_t errlen);
/* The same for a file held in memory (size bytes at data, which must stay
 * valid and unchanged until gm_video_close): read through FFmpeg's own
 * reader (a custom AVIOContext), probed by content, seekable.  Frames over
 * o->max_pixels are refused before they are decoded, as for a file. */
GM_API gm_status gm_video_open_mem(const uint8_t *data, size_t size, const gm_video_opts *o,
                                   gm_video **out, char *err, size_t errlen);
GM_API void gm_video_close(gm_video *v);

/* The number of selected frames, from the container's frame count or its
 * duration times the frame rate; -1 when unknown. */
GM_API int64_t gm_video_frames_total(const gm_video *v);

/* Which decoder runs and why, one line for -v (never NULL; owned by v):
 * "cpu, 16 threads (--decode auto: ...)", "nvdec (cuda hwaccel, frames
 * copied to host memory)", "cpu: NVDEC does not decode mpeg4 ..."; after
 * the first frames it also tells a profile NVDEC refused. */
GM_API const char *gm_video_decoder(const gm_video *v);

/* Width, height and frame rate of the stream as the container states them
 * (fps 0 when unknown). */
GM_API void gm_video_info(const gm_video *v, int *width, int *height, double *fps);

/* The next selected item into *f (its buffer is reused, grown as needed).
 * *got = 0 at the end.  Damage on the way (corrupt packets, a truncated
 * file) does not stop the reading; gm_video_lost tells about it at the end.
 * Every video gives at least one item: one that gives no frame at all is an
 * error item for frame 0 (GM_ERR_CORRUPT, "no frame decoded..."), and a
 * selection that holds no frame is an error item for o.first
 * (GM_ERR_INVALID, "... the video has N frames").  Frames decoded with errors
 * concealed, or after a decode error or a lost frame until the next keyframe
 * (they may refer to the damage), are error items (GM_ERR_CORRUPT), never
 * pictures to match; so are the frames a container's index promises that a
 * truncated file does not deliver.
 * Returns GM_OK, or GM_ERR_NOMEM. */
GM_API gm_status gm_video_read(gm_video *v, gm_video_frame *f, int *got);


/* After the last item: nonzero when anything was lost (frames that did not
 * decode, a truncated file, a read error), with the summary in
 * gm_video_error (never NULL; "" when nothing was lost). */
GM_API int gm_video_lost(const gm_video *v);
GM_API const char *gm_video_error(const gm_video *v);

/* One result in frame order.  res is valid when item->status == GM_OK and
 * match == GM_OK; item->img's pixels only when o.sink_pixels (else its
 * width and height alone); time_ms runs from the end of the frame's decode
 * to its result (MILLISECONDS). */
typedef struct {
    const gm_video_frame *item;
    gm_status match;
    const gm_result *res;
    double time_ms;
} gm_video_result;

/* Called on the caller's thread, in frame order, once per selected item.
 * Returns 0 to go on, nonzero to stop the run (a write error). */
typedef int (*gm_video_sink)(void *user, const gm_video_result *r);

/* Decode and match every selected frame of v against ref: one decoder
 * thread feeds workers + o->queue frames (by default as many as 128 MiB of
 * frames hold, at least 2 and at most 16 a worker: memory stays flat; see
 * o->sink_pixels for when a frame's buffer is reused), o->workers
 * threads call gm_match (o->frame_threads OpenMP threads each), and the
 * calling thread hands the results to sink in frame order.  A reference
 * under GM_DEVICE_AUTO still on the CPU moves to the GPU first (a video
 * repays its start: gm_ref_expect(ref, -1, 1)).  Returns GM_OK
 * (also when frames were lost: see gm_video_lost), GM_ERR_NOMEM, or
 * GM_ERR_INVALID when a thread cannot be started. */
GM_API gm_status gm_video_match(gm_video *v, const gm_ref *ref, gm_video_sink sink, void *user);

/* Decode up to max_items selected items (and about max_bytes of frames)
 * ahead, now, on the calling thread: for example while the reference is
 * prepared or the GPU starts; gm_video_read (and so gm_video_match) hands
 * them out first, in order, as if read then.  *stop (when not NULL), read
 * between frames, ends it early.  Once per video, before any
 * gm_video_read, and never at the same time as another call on v.
 * GM_OK (also when nothing could be read: the reads say why),
 * GM_ERR_NOMEM, GM_ERR_INVALID. */
GM_API gm_status gm_video_prefetch(gm_video *v, int max_items, int64_t max_bytes, const int *stop);

/* Where gm_video_match's time went, for measurements (-v): milliseconds
 * summed over the threads of each kind, over v's runs so far. */
typedef struct {
    int64_t items;          /* items handed to the sink */
    int workers, ring;      /* matcher threads, frames the ring holds */
    double wall_ms;         /* gm_video_match from start to end */
    double decode_ms;       /* the decoding thread inside gm_video_read */
    double decoder_wait_ms; /* the decoding thread waiting for a free slot (ring full) */
    double match_ms;        /* workers inside gm_match */
    double worker_wait_ms;  /* workers waiting for a decoded frame */
    double convert_ms;      /* workers converting decoded frames to gray */
} gm_video_stats;
GM_API void gm_video_stats_get(const gm_video *v, gm_video_stats *s);

/* FFmpeg's own log lines on stderr: off (0) or warnings and errors
 * (nonzero).  FFmpeg's log level belongs to the process, so the library
 * never sets it by itself: an application that wants FFmpeg quiet (the
 * gmatch command line, but for -v) calls this.  The library's own messages
 * about a video come back through gm_video_open's err and gm_video_error. */
GM_API void gm_video_log(int verbose);

/* One picture from a file of any format, to 8-bit gray (free with
 * gm_image_free): frame 0 is gm_image_load's still (JPEG, PNG, TIFF, BMP,
 * WebP, PNM, ...), or else the first picture of whatever FFmpeg decodes (a
 * video, GIF, ...);
 * frame N > 0 is frame N of a video (numbered as gm_video_read numbers
 * them).  A reference can thus be any still or a video frame.  Errors as
 * gm_image_load's, with one line in err (a file neither reads: "not a JPEG
 * or PNG image or a video"; a video shorter than frame: "... the video has
 * N frames").  Without FFmpeg, JPEG and PNG only. */
GM_API gm_status gm_image_load_frame(const char *path, int64_t frame, int64_t max_pixels,
                                     gm_image *out, char *err, size_t errlen);

/* 1 when this library reads videos (built with FFmpeg, whose libraries
 * this call loads when they are not yet), else 0. */
GM_API int gm_video_available(void);

#ifdef __cplusplus
}
#endif
#endif
