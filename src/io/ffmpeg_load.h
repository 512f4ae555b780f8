/* ffmpeg_load.h: FFmpeg's libraries opened on first use (dlopen), not at
 * the program's start.
 *
 * Linked, libavformat, libavcodec, libswscale and libavutil bring some 130
 * shared libraries into every process that loads libgmatch (Debian's
 * FFmpeg: its codecs' libraries and theirs), and the dynamic loader's
 * symbol lookups and their initializers took 46 ms of a 49 ms `gmatch
 * --version` on this project's 2-core machine (2.9 ms without them): a
 * cost that every still-only run, every shell loop over pairs and every
 * Python import paid for video it never read.  Now the video reader
 * (video.c) opens them on its first use (gm_ff_load) and calls FFmpeg
 * through the table gm_ff, by the sonames of the headers it was compiled
 * against (libavformat.so.59 for FFmpeg 5.1), so the ABI is the one the
 * code expects.  Without those libraries at run time a video gets a
 * one-line error naming the missing library; stills in JPEG and PNG never
 * need them.
 *
 * Why not a library for it: the well-kept candidates (libltdl, glib's
 * GModule) wrap the same two calls, dlopen and dlsym, that glibc has.
 *
 * video.c includes this header after FFmpeg's and calls FFmpeg's functions
 * by their own names: the defines at the end turn each call into one
 * through gm_ff.  A function video.c starts to call goes into GM_FF_FUNCS
 * and the defines: one left out fails the link of every program (an
 * undefined av_* symbol), since libgmatch no longer links FFmpeg. */
#ifndef GM_FFMPEG_LOAD_H
#define GM_FFMPEG_LOAD_H

#include <stddef.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

/* Every FFmpeg function video.c calls. */
#define GM_FF_FUNCS(X)                                                                       \
    X(av_buffer_ref) X(av_buffer_unref) X(av_dict_free) X(av_dict_set_int)                   \
    X(av_find_best_stream) X(av_frame_alloc) X(av_frame_copy_props) X(av_frame_free)         \
    X(av_frame_move_ref) X(av_frame_unref) X(av_free) X(av_freep) X(av_get_pix_fmt_name)     \
    X(av_hwdevice_ctx_create) X(av_hwdevice_iterate_types) X(av_hwframe_transfer_data)       \
    X(av_log_set_level) X(av_malloc) X(av_packet_alloc) X(av_packet_free) X(av_packet_unref) \
    X(av_pix_fmt_desc_get) X(av_probe_input_buffer2) X(av_read_frame) X(av_seek_frame)       \
    X(av_strerror) X(avcodec_alloc_context3) X(avcodec_free_context)                         \
    X(avcodec_get_hw_config) X(avcodec_get_name) X(avcodec_open2)                            \
    X(avcodec_parameters_to_context) X(avcodec_receive_frame) X(avcodec_send_packet)         \
    X(avformat_alloc_context) X(avformat_close_input) X(avformat_find_stream_info)           \
    X(avformat_open_input) X(avio_alloc_context) X(avio_closep) X(avio_context_free)         \
    X(avio_open) X(avio_seek) X(sws_freeContext) X(sws_getCachedContext)                     \
    X(sws_getColorspaceDetails) X(sws_scale) X(sws_setColorspaceDetails)

typedef struct {
#define GM_FF_MEMBER(name) __typeof__(name) *name;
    GM_FF_FUNCS(GM_FF_MEMBER)
#undef GM_FF_MEMBER
} gm_ff_api;

/* Filled by gm_ff_load; read-only after it. */
extern gm_ff_api gm_ff;

/* Opens the libraries and fills gm_ff, once per process (later calls
 * return the first call's outcome at once; thread-safe).  0 when loaded,
 * else -1 and the reason in err ("cannot load FFmpeg: libavformat.so.59:
 * cannot open shared object file: ..."). */
int gm_ff_load(char *err, size_t errlen);

/* FFmpeg's log level, applied now when the libraries are loaded, else when
 * gm_ff_load loads them (so that setting it loads nothing). */
void gm_ff_log_level(int level);

#ifndef GM_FF_LOADER /* in the callers (video.c): FFmpeg's names call through gm_ff */
#define av_buffer_ref gm_ff.av_buffer_ref
#define av_buffer_unref gm_ff.av_buffer_unref
#define av_dict_free gm_ff.av_dict_free
#define av_dict_set_int gm_ff.av_dict_set_int
#define av_find_best_stream gm_ff.av_find_best_stream
#define av_frame_alloc gm_ff.av_frame_alloc
#define av_frame_copy_props gm_ff.av_frame_copy_props
#define av_frame_free gm_ff.av_frame_free
#define av_frame_move_ref gm_ff.av_frame_move_ref
#define av_frame_unref gm_ff.av_frame_unref
#define av_free gm_ff.av_free
#define av_freep gm_ff.av_freep
#define av_get_pix_fmt_name gm_ff.av_get_pix_fmt_name
#define av_hwdevice_ctx_create gm_ff.av_hwdevice_ctx_create
#define av_hwdevice_iterate_types gm_ff.av_hwdevice_iterate_types
#define av_hwframe_transfer_data gm_ff.av_hwframe_transfer_data
#define av_log_set_level gm_ff.av_log_set_level
#define av_malloc gm_ff.av_malloc
#define av_packet_alloc gm_ff.av_packet_alloc
#define av_packet_free gm_ff.av_packet_free
#define av_packet_unref gm_ff.av_packet_unref
#define av_pix_fmt_desc_get gm_ff.av_pix_fmt_desc_get
#define av_probe_input_buffer2 gm_ff.av_probe_input_buffer2
#define av_read_frame gm_ff.av_read_frame
#define av_seek_frame gm_ff.av_seek_frame
#define av_strerror gm_ff.av_strerror
#define avcodec_alloc_context3 gm_ff.avcodec_alloc_context3
#define avcodec_free_context gm_ff.avcodec_free_context
#define avcodec_get_hw_config gm_ff.avcodec_get_hw_config
#define avcodec_get_name gm_ff.avcodec_get_name
#define avcodec_open2 gm_ff.avcodec_open2
#define avcodec_parameters_to_context gm_ff.avcodec_parameters_to_context
#define avcodec_receive_frame gm_ff.avcodec_receive_frame
#define avcodec_send_packet gm_ff.avcodec_send_packet
#define avformat_alloc_context gm_ff.avformat_alloc_context
#define avformat_close_input gm_ff.avformat_close_input
#define avformat_find_stream_info gm_ff.avformat_find_stream_info
#define avformat_open_input gm_ff.avformat_open_input
#define avio_alloc_context gm_ff.avio_alloc_context
#define avio_closep gm_ff.avio_closep
#define avio_context_free gm_ff.avio_context_free
#define avio_open gm_ff.avio_open
#define avio_seek gm_ff.avio_seek
#define sws_freeContext gm_ff.sws_freeContext
#define sws_getCachedContext gm_ff.sws_getCachedContext
#define sws_getColorspaceDetails gm_ff.sws_getColorspaceDetails
#define sws_scale gm_ff.sws_scale
#define sws_setColorspaceDetails gm_ff.sws_setColorspaceDetails
#endif

#endif
