/* video.c: video frames as gray through FFmpeg: probing, decoding (the CPU
 * or NVDEC), numbering, selection and seeking, the gray conversion.
 * Conventions in gmatch_video.h; the frame pipeline that matches the frames
 * is src/pipeline/frames.c. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "io/video.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <omp.h>

/* FFmpeg's headers, and its functions called through the table that
 * gm_ff_load fills on the first use (the libraries are not linked) */
#include "io/ffmpeg_load.h"

/* Seek instead of decoding and dropping when the first selected frame is at
 * least this far in (frames).  Decoding 32 frames of 1080p H.264 costs about
 * as much as the seek's decode from the previous keyframe. */
#define SEEK_MIN_FRAMES 32
/* Consecutive decoder errors without a frame before the stream is given up
 * (a decoder that fails on every call must not hang the run). */
#define MAX_DECODE_ERRORS 10000
/* Why --decode auto is the CPU decoder (the figures: docs/benchmarks.md, "Video decoding"). */
#define AUTO_WHY " (--decode auto: faster end to end than NVDEC on the H100 machine at every size measured)"

struct gm_video {
    AVFormatContext *fc;
    AVIOContext *io;        /* gm_video_open_mem's reader, NULL for a file */
    const uint8_t *mem;     /* the caller's bytes (gm_video_open_mem) */
    size_t mem_size;
    int64_t mem_pos;
    AVCodecContext *dc;
    AVPacket *pkt;
    AVFrame *fr;
    AVFrame *host;          /* fr copied from the GPU (NVDEC), reused */
    AVFrame **raw_out;      /* gm_video_read_raw's: the held frame handed over unconverted */
    AVBufferRef *hw;        /* the CUDA device of NVDEC, NULL for the CPU decoder */
    int hw_refused;         /* NVDEC refused the stream (get_format fell back) */
    char decoder[192];      /* gm_video_decoder */
    struct SwsContext *sws;
    int si;                 /* stream index */
    AVRational tb;          /* stream time base */
    int64_t start;          /* stream start time in tb, 0 when unknown */
    double fps;             /* 0 when unknown */
    int cfr;                /* constant frame rate: numbers checked against timestamps */
    int64_t expected;       /* frames in the stream by the container, -1 unknown */
    gm_video_opts o;

    int64_t next;           /* number of the next frame out of the decoder */
    int numbered;           /* next is known (not right after a seek) */
    int64_t gap_lo, gap_hi; /* lost frames still to report, [gap_lo, gap_hi) */
    int held;               /* fr holds a decoded frame numbered held_n */
    int64_t held_n;
    int held_bad;           /* 0 sound, 1 decoded with errors concealed, 2 decoded
                               from a damaged reference (tainted) */
    int tainted;            /* a decode error or a lost frame since the last keyframe */
    int64_t after_damage;   /* frames decoded while tainted (error items) */
    double held_ms;         /* time spent decoding it, MILLISECONDS */
    int flushing, drained, stopped_early, finished;
    int errors_in_row;
    int seeked;             /* reading began at a seek (o.first >= SEEK_MIN_FRAMES) */
    int64_t decoded;        /* frames out of the decoder */
    int64_t items;          /* items handed out by gm_video_read */
    int empty_reported;     /* the one item of a video that gave none */
    int tail_done;          /* the frames missing at the end were handed out */

    int64_t lost;           /* frames that did not decode (gaps) */
    int64_t bad_packets;    /* packets or calls the decoder refused */
    int64_t concealed;      /* frames output with decode errors concealed */
    int read_error;         /* AVERROR of the demuxer, 0 none */
    char err[256];
    gm_video_stats stats;   /* kept by gm_video_match (src/pipeline/frames.c) */
    /* read ahead by gm_video_prefetch, handed out first by gm_video_read */
    gm_video_frame *ahead;
    int ahead_n, ahead_head, ahead_end;
    gm_status ahead_st;
};

gm_video_opts gm_video_opts_default(void)
{
    gm_video_opts o = {.first = 0, .last = -1, .step = 1, .decode_threads = 0, .workers = 0,
                       .frame_threads = 1, .max_pixels = 0, .decode = GM_VIDEO_DECODE_AUTO,
                       .model = GM_MODEL_REFERENCE, .queue = 0,
                       .sink_pixels = 1};
    return o;
}

void gm_video_log(int verbose)
{
    gm_ff_log_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET);
}

int gm_video_available(void) { return gm_ff_load(NULL, 0) == 0; }

/* FFmpeg loaded (ffmpeg_load.h), else 0 and a "not ..., and" line in err
 * that says which library is missing. */
static int ffmpeg_ready(char *err, size_t errlen)
{
    char why[320];
    if (gm_ff_load(why, sizeof why) == 0)
        return 1;
    snprintf(err, errlen, "not a JPEG or PNG image, and no video or other image can be read: %s",
             why);
    return 0;
}

void gm_video_frame_free(gm_video_frame *f)
{
    free(f->img.data);
    memset(f, 0, sizeof *f);
}


static void av_msg(int e, char *buf, size_t len)
{
    char tmp[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(e, tmp, sizeof tmp);
    snprintf(buf, len, "%s", tmp);
}

/* ---- opening ------------------------------------------------------------- */

void gm_video_close(gm_video *v)
{
    if (!v)
        return;
    for (int i = 0; v->ahead && i < v->ahead_n; i++)
        gm_video_frame_free(&v->ahead[i]);
    free(v->ahead);
    sws_freeContext(v->sws);
    av_frame_free(&v->host);
    av_frame_free(&v->fr);
    av_packet_free(&v->pkt);
    avcodec_free_context(&v->dc);
    av_buffer_unref(&v->hw);
    avformat_close_input(&v->fc);
    if (v->io) {
        av_freep(&v->io->buffer);
        avio_context_free(&v->io);
    }
    free(v);
}

/* Probe by content only: an empty name gives the extension matchers of
 * libavformat nothing (a .txt file is otherwise the "tty" demuxer's video). */
static const AVInputFormat *probe_reader(AVIOContext *pb, char *err, size_t errlen)
{
    const AVInputFormat *fmt = NULL;
    int e = av_probe_input_buffer2(pb, &fmt, "", NULL, 0, 0);
    if (e < 0 || !fmt) {
        snprintf(err, errlen, "not a JPEG or PNG image or a video");
        return NULL;
    }
    return fmt;
}

static const AVInputFormat *probe_content(const char *url, char *err, size_t errlen)
{
    AVIOContext *pb = NULL;
    int e = avio_open(&pb, url, AVIO_FLAG_READ);
    if (e < 0) {
        char m[AV_ERROR_MAX_STRING_SIZE];
        av_msg(e, m, sizeof m);
        snprintf(err, errlen, "cannot open file: %s", m);
        return NULL;
    }
    const AVInputFormat *fmt = probe_reader(pb, err, errlen);
    avio_closep(&pb);
    return fmt;
}

/* Is this a demuxer of single pictures (TIFF, BMP, WebP, PNM, ... through
 * image2 or an image pipe)?  Their decoders read whole-picture damage as
 * errors anyway, but under AV_EF_EXPLODE some also refuse sound pictures
 * for a warning (the TIFF decoder: "unknown or unsupported tag"), and
 * with frame threads that refusal loses the only frame without an error. */
static int single_picture(const AVInputFormat *f)
{
    size_t n = strlen(f->name);
    return strcmp(f->name, "image2") == 0 || (n > 5 && strcmp(f->name + n - 5, "_pipe") == 0);
}

/* "file:PATH" (malloc'd, NULL when out of memory): "file:" so that a name
 * with a colon is not taken for a protocol */
static char *file_url(const char *path)
{
    size_t ulen = strlen(path) + 6;
    char *url = malloc(ulen);
    if (url)
        snprintf(url, ulen, "file:%s", path);
    return url;
}

gm_probe gm_video_probe(const char *path)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0 ||
        gm_ff_load(NULL, 0) != 0)
        return GM_PROBE_NONE;
    char *url = file_url(path), err[128];
    const AVInputFormat *fmt = url ? probe_content(url, err, sizeof err) : NULL;
    free(url);
    if (fmt && (!strcmp(fmt->name, "jpeg_pipe") || !strcmp(fmt->name, "png_pipe")))
        return GM_PROBE_NONE; /* the library's own decoders refused it */
    return !fmt ? GM_PROBE_NONE : single_picture(fmt) ? GM_PROBE_PICTURE : GM_PROBE_OTHER;
}

static int64_t count_selected(const gm_video_opts *o, int64_t n)
{
    int64_t hi = o->last >= 0 && o->last < n ? o->last : n;
    if (hi <= o->first)
        return 0;
    return (hi - o->first + o->step - 1) / o->step;
}

/* ---- NVDEC ---------------------------------------------------------------- */

/* Does FFmpeg decode this codec through a CUDA device (an nvdec hwaccel)? */
static int codec_has_cuda(const AVCodec *codec)
{
    for (int i = 0;; i++) {
        const AVCodecHWConfig *h = avcodec_get_hw_config(codec, i);
        if (!h)
            return 0;
        if (h->device_type == AV_HWDEVICE_TYPE_CUDA &&
            (h->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
            return 1;
    }
}

/* The CUDA device for NVDEC into *hw, or -1 with the reason in err. */
static int cuda_device(AVBufferRef **hw, char *err, size_t errlen)
{
    enum AVHWDeviceType t = AV_HWDEVICE_TYPE_NONE;
    while ((t = av_hwdevice_iterate_types(t)) != AV_HWDEVICE_TYPE_NONE && t != AV_HWDEVICE_TYPE_CUDA)
        ;
    if (t != AV_HWDEVICE_TYPE_CUDA) {
        snprintf(err, errlen, "hardware decoding unavailable: this FFmpeg was built without CUDA");
        return -1;
    }
    /* loads libcuda.so.1 (the driver); NVDEC itself (libnvcuvid.so.1) is
     * loaded when the decoder starts */
    int e = av_hwdevice_ctx_create(hw, AV_HWDEVICE_TYPE_CUDA, NULL, NULL, 0);
    if (e < 0) {
        /* FFmpeg's code says little (EPERM for a missing driver): tell the
         * driver's absence apart ourselves */
        void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        char m[AV_ERROR_MAX_STRING_SIZE];
        av_msg(e, m, sizeof m);
        if (cuda)
            dlclose(cuda);
        snprintf(err, errlen, "hardware decoding unavailable: %s%s%s",
                 cuda ? "no usable CUDA device (FFmpeg: " : "no CUDA driver (libcuda.so.1)",
                 cuda ? m : "", cuda ? ")" : "");
        return -1;
    }
    return 0;
}

/* libavcodec's get_format: CUDA frames when offered; otherwise (a profile
 * NVDEC lacks, or its hwaccel failed to start) the software format, so the
 * stream is decoded on the CPU rather than lost. */
static enum AVPixelFormat pick_format(AVCodecContext *dc, const enum AVPixelFormat *fmts)
{
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
        if (*p == AV_PIX_FMT_CUDA)
            return *p;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++) {
        const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(*p);
        if (d && !(d->flags & AV_PIX_FMT_FLAG_HWACCEL)) {
            ((gm_video *)dc->opaque)->hw_refused = 1;
            return *p;
        }
    }
    return AV_PIX_FMT_NONE;
}

/* Where the frames of v decode: NVDEC when asked for and the codec has it
 * (v->hw set), else the CPU.  Before the decoder context is made.  Returns GM_OK or GM_ERR_DEVICE (err
 * set). */
static gm_status choose_decoder(gm_video *v, const AVCodec *codec, char *err, size_t errlen)
{
    if (v->o.decode != GM_VIDEO_DECODE_NVDEC)
        return GM_OK;
    if (cuda_device(&v->hw, err, errlen) != 0)
        return GM_ERR_DEVICE;
    /* only the stream's own decoder: FFmpeg 5.1's native av1 decoder has
     * the cuda hwaccel (libdav1d, the default, has not) but no software
     * path to fall back on, and NVDEC refused the test AV1 files on the
     * H100 (0 frames) */
    if (!codec_has_cuda(codec)) {
        av_buffer_unref(&v->hw);
        snprintf(v->decoder, sizeof v->decoder, "cpu: NVDEC does not decode through %s (no cuda "
                 "hwaccel in FFmpeg for it)", codec->name);
        return GM_OK;
    }
    snprintf(v->decoder, sizeof v->decoder, "nvdec (FFmpeg's cuda hwaccel, decoder %s, frames "
             "copied to host memory)", codec->name);
    return GM_OK;
}

int gm_video_decode_threads(int asked, int cores)
{
    if (asked > 0)
        return asked;
    if (cores <= GM_VIDEO_AUTO_THREADS)
        return 0; /* libavcodec's own choice: the cores + 1, at most 16 */
    return cores < GM_VIDEO_MAX_THREADS ? cores : GM_VIDEO_MAX_THREADS;
}

/* Threads or the CUDA device on the decoder context. */
static gm_status setup_decoder(gm_video *v)
{
    if (!v->hw) {
        v->dc->thread_count = gm_video_decode_threads(v->o.decode_threads, omp_get_num_procs());
        v->dc->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
        return GM_OK;
    }
    v->dc->hw_device_ctx = av_buffer_ref(v->hw);
    if (!v->dc->hw_device_ctx)
        return GM_ERR_NOMEM;
    v->dc->opaque = v;
    v->dc->get_format = pick_format;
    /* one thread, as FFmpeg's hw_decode example: the GPU decodes, frame
     * threads would only queue surfaces */
    v->dc->thread_count = 1;
    return GM_OK;
}

const char *gm_video_decoder(const gm_video *v)
{
    if (v->hw && v->hw_refused)
        return "cpu, 1 thread: NVDEC refused the stream's profile or size";
    return v->decoder;
}

static int options_valid(const gm_video_opts *opts, char *err, size_t errlen)
{
    if (!opts || opts->first < 0 || opts->step < 1 || (opts->last >= 0 && opts->last < opts->first) ||
        opts->decode < GM_VIDEO_DECODE_AUTO || opts->decode > GM_VIDEO_DECODE_NVDEC ||
        opts->model < GM_MODEL_REFERENCE || opts->model > GM_MODEL_AUTO) {
        snprintf(err, errlen, "invalid frame selection, decoder or model");
        return 0;
    }
    return 1;
}

static gm_status open_stream(gm_video *v, const char *url, const AVInputFormat *fmt, char *err,
                             size_t errlen);

gm_status gm_video_open(const char *path, const gm_video_opts *opts, gm_video **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    if (!options_valid(opts, err, errlen))
        return GM_ERR_INVALID;
    /* The still decoders have already read the start of the file: from a
     * FIFO or a terminal those bytes are gone, and opening it again would
     * wait forever for a writer that has left.  Videos come from files. */
    struct stat sb;
    const int known = stat(path, &sb) == 0;
    if (known && !S_ISREG(sb.st_mode) && !S_ISBLK(sb.st_mode)) {
        snprintf(err, errlen, "not a JPEG or PNG image; a video is read only from a regular "
                 "file, and this is a %s", S_ISFIFO(sb.st_mode) ? "FIFO" : S_ISCHR(sb.st_mode)
                 ? "character device" : S_ISSOCK(sb.st_mode) ? "socket" : "special file");
        return GM_ERR_FORMAT;
    }
    if (known && S_ISREG(sb.st_mode) && sb.st_size == 0) {
        snprintf(err, errlen, "empty file");
        return GM_ERR_FORMAT;
    }
    if (!ffmpeg_ready(err, errlen))
        return GM_ERR_FORMAT;
    char *url = file_url(path);
    if (!url)
        return GM_ERR_NOMEM;
    gm_status st = GM_ERR_FORMAT;
    const AVInputFormat *fmt = probe_content(url, err, errlen);
    gm_video *v = fmt ? calloc(1, sizeof *v) : NULL;
    if (fmt && !v)
        st = GM_ERR_NOMEM;
    if (v) {
        v->o = *opts;
        st = open_stream(v, url, fmt, err, errlen);
    }
    free(url);
    if (st != GM_OK) {
        gm_video_close(v);
        return st;
    }
    *out = v;
    return GM_OK;
}

/* gm_video_open_mem's reader: the caller's bytes as a seekable file */
static int mem_read(void *opaque, uint8_t *buf, int n)
{
    gm_video *v = opaque;
    int64_t left = (int64_t)v->mem_size - v->mem_pos;
    if (left <= 0)
        return AVERROR_EOF;
    if (n > left)
        n = (int)left;
    memcpy(buf, v->mem + v->mem_pos, (size_t)n);
    v->mem_pos += n;
    return n;
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence)
{
    gm_video *v = opaque;
    int64_t to;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return (int64_t)v->mem_size;
    case SEEK_SET: to = offset; break;
    case SEEK_CUR: to = v->mem_pos + offset; break;
    case SEEK_END: to = (int64_t)v->mem_size + offset; break;
    default: return AVERROR(EINVAL);
    }
    if (to < 0 || to > (int64_t)v->mem_size)
        return AVERROR(EINVAL);
    v->mem_pos = to;
    return to;
}

gm_status gm_video_open_mem(const uint8_t *data, size_t size, const gm_video_opts *opts,
                            gm_video **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!options_valid(opts, err, errlen))
        return GM_ERR_INVALID;
    if (!data && size > 0) {
        snprintf(err, errlen, "no data");
        return GM_ERR_INVALID;
    }
    if (size == 0) {
        snprintf(err, errlen, "empty file");
        return GM_ERR_FORMAT;
    }
    if (!ffmpeg_ready(err, errlen))
        return GM_ERR_FORMAT;
    gm_video *v = calloc(1, sizeof *v);
    enum { IO_BUF = 32768 };
    uint8_t *buf = av_malloc(IO_BUF);
    if (!v || !buf) {
        free(v);
        av_free(buf);
        return GM_ERR_NOMEM;
    }
    v->o = *opts;
    v->mem = data;
    v->mem_size = size;
    v->io = avio_alloc_context(buf, IO_BUF, 0, v, mem_read, NULL, mem_seek);
    if (!v->io) {
        av_free(buf);
        free(v);
        return GM_ERR_NOMEM;
    }
    gm_status st = GM_ERR_FORMAT;
    const AVInputFormat *fmt = probe_reader(v->io, err, errlen);
    if (!fmt)
        ;
    else if (avio_seek(v->io, 0, SEEK_SET) < 0)
        snprintf(err, errlen, "cannot rewind the data after probing it");
    else if (!(v->fc = avformat_alloc_context()))
        st = GM_ERR_NOMEM;
    else {
        v->fc->pb = v->io;
        v->fc->flags |= AVFMT_FLAG_CUSTOM_IO;
        st = open_stream(v, NULL, fmt, err, errlen);
    }
    if (st != GM_OK) {
        gm_video_close(v);
        return st;
    }
    *out = v;
    return GM_OK;
}

/* Frames over the pixel limit are refused before anything decodes them:
 * when every video stream whose header gives a size is over the limit (and
 * none leaves it unknown), at once, with the size; otherwise the decoders,
 * those of the stream probe included, get the limit (max_pixels) and
 * refuse a larger frame as a damaged one before allocating it. */
static int too_large(const gm_video *v, const AVCodecParameters *p)
{
    return p->width > 0 && p->height > 0 && (int64_t)p->width * p->height > v->o.max_pixels;
}

static gm_status size_error(const gm_video *v, const AVCodecParameters *p, char *err, size_t errlen)
{
    snprintf(err, errlen, "video frames of %dx%d exceed --max-pixels %" PRId64, p->width,
             p->height, v->o.max_pixels);
    return GM_ERR_TOO_LARGE;
}

static gm_status refuse_large(gm_video *v, char *err, size_t errlen)
{
    const AVCodecParameters *first_over = NULL;
    for (unsigned i = 0; i < v->fc->nb_streams; i++) {
        const AVCodecParameters *p = v->fc->streams[i]->codecpar;
        if (p->codec_type != AVMEDIA_TYPE_VIDEO)
            continue;
        if (!too_large(v, p))
            return GM_OK; /* a stream that may be read */
        if (!first_over)
            first_over = p;
    }
    return first_over ? size_error(v, first_over, err, errlen) : GM_OK;
}

static int find_stream_info(gm_video *v)
{
    unsigned n = v->fc->nb_streams;
    AVDictionary **opt = n ? calloc(n, sizeof *opt) : NULL;
    if (n && !opt)
        return AVERROR(ENOMEM);
    for (unsigned i = 0; i < n; i++)
        av_dict_set_int(&opt[i], "max_pixels", v->o.max_pixels, 0);
    int e = avformat_find_stream_info(v->fc, opt);
    for (unsigned i = 0; i < n; i++)
        av_dict_free(&opt[i]);
    free(opt);
    return e;
}

/* The rest of opening, for a file (url) or the caller's bytes (v->fc made,
 * its reader set): the header, the stream, its size, the decoder. */
static gm_status open_stream(gm_video *v, const char *url, const AVInputFormat *fmt, char *err,
                             size_t errlen)
{
    gm_status st = GM_ERR_FORMAT;
    if (v->o.max_pixels <= 0)
        v->o.max_pixels = GM_DEFAULT_MAX_PIXELS;
    int e = avformat_open_input(&v->fc, url, fmt, NULL);
    gm_status big = e >= 0 ? refuse_large(v, err, errlen) : GM_OK;
    if (big != GM_OK)
        return big;
    /* a file that ends after its header (no frame at all) reads as one
     * with no frame decoded, not as a damaged header */
    if (e >= 0 && (e = find_stream_info(v)) == AVERROR_EOF && v->fc->nb_streams > 0)
        e = 0;
    if (e < 0) {
        /* a header cut short, a damaged header: say what was being read */
        char m[AV_ERROR_MAX_STRING_SIZE];
        av_msg(e, m, sizeof m);
        if (e == AVERROR_EOF)
            snprintf(err, errlen, "no frame: the file ends in or right after its %s header",
                     fmt->name);
        else
            snprintf(err, errlen, "cannot read the %s header: %s", fmt->name, m);
        st = GM_ERR_CORRUPT;
        goto fail;
    }
    const AVCodec *codec = NULL;
    v->si = av_find_best_stream(v->fc, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (v->si == AVERROR_STREAM_NOT_FOUND ||
        (v->si >= 0 && (v->fc->streams[v->si]->disposition & AV_DISPOSITION_ATTACHED_PIC))) {
        snprintf(err, errlen, "no video stream (%s file)", v->fc->iformat->name);
        goto fail;
    }
    if (v->si < 0 || !codec) {
        AVStream *s0 = v->si >= 0 ? v->fc->streams[v->si] : NULL;
        snprintf(err, errlen, "no decoder for the video stream%s%s",
                 s0 ? ": " : "", s0 ? avcodec_get_name(s0->codecpar->codec_id) : "");
        st = GM_ERR_UNSUPPORTED;
        goto fail;
    }
    AVStream *s = v->fc->streams[v->si];
    if (too_large(v, s->codecpar))
        return size_error(v, s->codecpar, err, errlen);
    if ((st = choose_decoder(v, codec, err, errlen)) != GM_OK)
        goto fail;
    st = GM_ERR_NOMEM;
    v->dc = avcodec_alloc_context3(codec);
    v->pkt = av_packet_alloc();
    v->fr = av_frame_alloc();
    v->host = av_frame_alloc();
    if (!v->dc || !v->pkt || !v->fr || !v->host)
        goto fail;
    if ((e = avcodec_parameters_to_context(v->dc, s->codecpar)) < 0)
        goto fail_av;
    v->dc->pkt_timebase = s->time_base;
    v->dc->max_pixels = v->o.max_pixels;
    if ((st = setup_decoder(v)) != GM_OK)
        goto fail;
    st = GM_ERR_NOMEM;
    /* a damaged frame is an error, not a concealed picture: deterministic
     * under frame threading (concealment flags were not) and never a match
     * on half a picture */
    if (!single_picture(v->fc->iformat))
        v->dc->err_recognition |= AV_EF_EXPLODE;
    /* beyond 16 threads libavcodec warns that more are "not recommended"
     * as it opens (with -v on the terminal): asked for by the measurement
     * of gm_video_decode_threads, so the open's warnings go one level down */
    v->dc->log_level_offset = v->dc->thread_count > GM_VIDEO_AUTO_THREADS ? 8 : 0;
    e = avcodec_open2(v->dc, codec, NULL);
    v->dc->log_level_offset = 0;
    if (e < 0)
        goto fail_av;
    if (!v->decoder[0]) {
        /* 0 threads: a wrapped library (libdav1d) runs its own */
        char th[32] = "its own threads";
        if (v->dc->thread_count > 0)
            snprintf(th, sizeof th, "%d threads", v->dc->thread_count);
        snprintf(v->decoder, sizeof v->decoder, "cpu (libavcodec, %s)%s", th,
                 v->o.decode == GM_VIDEO_DECODE_AUTO ? AUTO_WHY : "");
    }

    v->tb = s->time_base;
    v->start = s->start_time != AV_NOPTS_VALUE ? s->start_time : 0;
    AVRational fr = s->avg_frame_rate.num > 0 && s->avg_frame_rate.den > 0 ? s->avg_frame_rate
                                                                           : s->r_frame_rate;
    v->fps = fr.num > 0 && fr.den > 0 ? av_q2d(fr) : 0.0;
    v->cfr = v->fps > 0 && s->r_frame_rate.num > 0 && av_cmp_q(s->avg_frame_rate, s->r_frame_rate) == 0;
    v->expected = -1;
    if (s->nb_frames > 0)
        v->expected = s->nb_frames;
    else if (v->fps > 0 && s->duration != AV_NOPTS_VALUE && s->duration > 0)
        v->expected = llround((double)s->duration * av_q2d(s->time_base) * v->fps);
    else if (v->fps > 0 && v->fc->duration != AV_NOPTS_VALUE && v->fc->duration > 0)
        v->expected = llround((double)v->fc->duration / AV_TIME_BASE * v->fps);

    v->numbered = 1;
    if (v->o.first >= SEEK_MIN_FRAMES && v->cfr) {
        /* back to the keyframe before a point a frame ahead of first; the
         * timestamps then number the frames */
        double t = ((double)v->o.first - 1.0) / v->fps;
        int64_t ts = v->start + (int64_t)floor(t / av_q2d(v->tb));
        if (av_seek_frame(v->fc, v->si, ts, AVSEEK_FLAG_BACKWARD) >= 0)
            v->numbered = 0, v->seeked = 1;
        else
            av_seek_frame(v->fc, v->si, v->start, AVSEEK_FLAG_BACKWARD);
    }
    return GM_OK;
fail_av: {
    char m[AV_ERROR_MAX_STRING_SIZE];
    av_msg(e, m, sizeof m);
    snprintf(err, errlen, "cannot open the %s decoder: %s", codec->name, m);
    st = e == AVERROR(ENOMEM) ? GM_ERR_NOMEM : GM_ERR_CORRUPT;
}
fail:
    return st;
}

int64_t gm_video_frames_total(const gm_video *v)
{
    return v->expected < 0 ? -1 : count_selected(&v->o, v->expected);
}

void gm_video_info(const gm_video *v, int *width, int *height, double *fps)
{
    const AVCodecParameters *p = v->fc->streams[v->si]->codecpar;
    *width = p->width, *height = p->height, *fps = v->fps;
}

int gm_video_lost(const gm_video *v)
{
    return v->err[0] != '\0';
}

const gm_video_opts *gm_video_options(const gm_video *v) { return &v->o; }
gm_video_stats *gm_video_stats_of(gm_video *v) { return &v->stats; }

void gm_video_stats_get(const gm_video *v, gm_video_stats *s)
{
    if (v)
        *s = v->stats;
    else
        memset(s, 0, sizeof *s);
}

const char *gm_video_error(const gm_video *v)
{
    return v->err;
}

/* ---- gray ---------------------------------------------------------------- */

/* Is the first plane 8-bit luma with one byte per pixel? */
static int direct_luma(const AVPixFmtDescriptor *d)
{
    return d && !(d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM |
                              AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_FLOAT)) &&
           d->nb_components >= 1 && d->comp[0].plane == 0 && d->comp[0].step == 1 &&
           d->comp[0].depth == 8 && d->comp[0].shift == 0 && d->comp[0].offset == 0 &&
           (d->nb_components <= 2 || d->log2_chroma_w || d->log2_chroma_h ||
            d->comp[1].plane != 0); /* planar or semi-planar chroma, not packed YUYV */
}

static int full_range(const AVFrame *fr, const AVPixFmtDescriptor *d)
{
    if (fr->color_range == AVCOL_RANGE_JPEG)
        return 1;
    if (fr->color_range == AVCOL_RANGE_MPEG)
        return 0;
    /* unspecified: the yuvj formats and gray are full range, other YUV limited */
    return d->nb_components <= 2 || strncmp(d->name, "yuvj", 4) == 0;
}

/* Grow f's buffer for w x h gray.  Returns 0, or -1 when out of memory. */
static int frame_reserve(gm_video_frame *f, int w, int h)
{
    size_t need = (size_t)w * (size_t)h;
    if (need > f->cap) {
        uint8_t *p = realloc(f->img.data, need);
        if (!p)
            return -1;
        f->img.data = p, f->cap = need;
    }
    f->img.width = w, f->img.height = h, f->img.stride = w;
    return 0;
}

/* 16-bit gray and packed RGB in the host's byte order (a 16-bit TIFF or
 * PNM): gm_image_from_pixels scales them by their actual range, as a 16-bit
 * PNG is (libswscale would keep the high byte: 10-bit data nearly black).
 * Returns 1 and fills px for such a frame. */
static int packed16(const AVFrame *fr, gm_pixels *px)
{
    static const struct {
        enum AVPixelFormat fmt;
        int ch, bgr;
    } k[] = {{AV_PIX_FMT_GRAY16, 1, 0}, {AV_PIX_FMT_RGB48, 3, 0}, {AV_PIX_FMT_BGR48, 3, 1},
             {AV_PIX_FMT_RGBA64, 4, 0}, {AV_PIX_FMT_BGRA64, 4, 1}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (fr->format == k[i].fmt) {
            *px = (gm_pixels){fr->data[0], fr->width, fr->height, k[i].ch, 2, k[i].bgr,
                              fr->linesize[0], 2 * k[i].ch, 2};
            return 1;
        }
    return 0;
}

void gm_video_limited_row(const uint8_t *src, uint8_t *dst, int w)
{
    /* round((i - 16) * 255 / 219) clamped to 0..255, as v + round(v * 36 /
     * 219) for v = i - 16 >= 0: (72 v + 219) / 438 in 16 bits (no exact
     * half: 72 v + 219 is odd), so the loop runs in vector lanes where a
     * table's lookups ran one byte at a time (a 1080p frame's conversion
     * was 8% of a GPU video run's host time, docs/speed.md) */
    for (int x = 0; x < w; x++) {
        uint16_t v = src[x] > 16 ? (uint16_t)(src[x] - 16) : 0;
        uint16_t g = (uint16_t)(v + (uint16_t)(72 * v + 219) / 438);
        dst[x] = (uint8_t)(g > 255 ? 255 : g);
    }
}

gm_status gm_video_convert(const struct AVFrame *fr, int force_sws, struct SwsContext **sws,
                           gm_video_frame *f)
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(fr->format);
    if (!d || fr->width <= 0 || fr->height <= 0)
        return GM_ERR_CORRUPT;
    if (frame_reserve(f, fr->width, fr->height) != 0)
        return GM_ERR_NOMEM;
    int w = fr->width, h = fr->height;
    if (!force_sws && direct_luma(d)) {
        int full = full_range(fr, d);
        for (int y = 0; y < h; y++) {
            const uint8_t *src = fr->data[0] + (ptrdiff_t)y * fr->linesize[0];
            uint8_t *dst = f->img.data + (size_t)y * (size_t)w;
            if (full)
                memcpy(dst, src, (size_t)w);
            else
                gm_video_limited_row(src, dst, w);
        }
        return GM_OK;
    }
    gm_pixels px;
    if (!force_sws && packed16(fr, &px)) {
        gm_image g;
        gm_status st = gm_image_from_pixels(&px, (int64_t)w * h, &g, NULL, 0);
        if (st != GM_OK)
            return st;
        memcpy(f->img.data, g.data, (size_t)w * (size_t)h); /* both packed, w x h */
        gm_image_free(&g);
        return GM_OK;
    }
    *sws = sws_getCachedContext(*sws, w, h, fr->format, w, h, AV_PIX_FMT_GRAY8, SWS_POINT, NULL,
                                NULL, NULL);
    if (!*sws)
        return GM_ERR_UNSUPPORTED;
    if (fr->color_range == AVCOL_RANGE_JPEG && !(d->flags & AV_PIX_FMT_FLAG_RGB)) {
        int *inv, *tab, sr, dr, b, c, sat;
        if (sws_getColorspaceDetails(*sws, &inv, &sr, &tab, &dr, &b, &c, &sat) >= 0)
            sws_setColorspaceDetails(*sws, inv, 1, tab, dr, b, c, sat);
    }
    uint8_t *dst[4] = {f->img.data, NULL, NULL, NULL};
    int dst_stride[4] = {w, 0, 0, 0};
    if (sws_scale(*sws, (const uint8_t *const *)fr->data, fr->linesize, 0, h, dst, dst_stride) != h)
        return GM_ERR_UNSUPPORTED;
    return GM_OK;
}

/* ---- reading ------------------------------------------------------------- */

static int selected(const gm_video *v, int64_t n)
{
    return n >= v->o.first && (v->o.last < 0 || n < v->o.last) && (n - v->o.first) % v->o.step == 0;
}

/* The summary of what was lost, once, after the last frame. */
static void finish(gm_video *v)
{
    if (v->finished)
        return;
    v->finished = 1;
    char *e = v->err;
    size_t len = sizeof v->err, k = 0;
    int64_t end = v->o.last >= 0 && v->expected > v->o.last ? v->o.last : v->expected;
    /* a frame count from the container's index is exact; one from the
     * duration may be one off */
    int exact = v->fc->streams[v->si]->nb_frames > 0;
    if (!v->stopped_early && v->expected > 0 && v->next < end &&
        (exact || v->read_error || end - v->next > 1))
        k += (size_t)snprintf(e + k, len - k, "stream ends after %" PRId64 " of %" PRId64
                              " frames (truncated file?)", v->next, v->expected);
    else if (v->read_error) {
        char m[AV_ERROR_MAX_STRING_SIZE];
        av_msg(v->read_error, m, sizeof m);
        k += (size_t)snprintf(e + k, len - k, "read error after frame %" PRId64 ": %s",
                              v->next, m);
    }
    if (v->lost && k < len)
        k += (size_t)snprintf(e + k, len - k, "%s%" PRId64 " frames could not be decoded",
                              k ? "; " : "", v->lost);
    if (v->bad_packets && k < len)
        k += (size_t)snprintf(e + k, len - k, "%s%" PRId64 " corrupt packets", k ? "; " : "",
                              v->bad_packets);
    if (v->concealed && k < len)
        k += (size_t)snprintf(e + k, len - k, "%s%" PRId64 " frames decoded with errors "
                              "concealed", k ? "; " : "", v->concealed);
    if (v->after_damage && k < len)
        snprintf(e + k, len - k, "%s%" PRId64 " frames decoded after damage not matched",
                 k ? "; " : "", v->after_damage);
}

/* Does a frame refer to no other (a keyframe or an intra picture)?  Damage
 * before it stops there. */
static int is_keyframe(const AVFrame *fr)
{
#ifdef AV_FRAME_FLAG_KEY
    if (fr->flags & AV_FRAME_FLAG_KEY)
        return 1;
#else
    if (fr->key_frame)
        return 1;
#endif
    return fr->pict_type == AV_PICTURE_TYPE_I;
}

/* The frame fr, just out of the decoder: its number, and the frames the
 * timestamps say were lost before it. */
static void number_frame(gm_video *v)
{
    int64_t n = v->next;
    int64_t pts = v->fr->best_effort_timestamp;
    if (v->cfr && pts != AV_NOPTS_VALUE) {
        int64_t p = llround((double)(pts - v->start) * av_q2d(v->tb) * v->fps);
        if (!v->numbered && p >= 0) {
            n = p;
        } else if (p > v->next) {
            v->tainted = 1; /* what refers to the lost frames is wrong too */
            v->gap_lo = v->next, v->gap_hi = p;
            v->lost += p - v->next;
            n = p;
        }
    }
    v->numbered = 1;
    v->decoded++;
    v->held = 1, v->held_n = n;
    v->next = n + 1;
    int concealed = v->fr->decode_error_flags || (v->fr->flags & AV_FRAME_FLAG_CORRUPT);
    if (concealed)
        v->concealed++;
    if (is_keyframe(v->fr) && !concealed)
        v->tainted = 0;
    v->held_bad = concealed ? 1 : v->tainted ? 2 : 0;
    v->after_damage += v->held_bad == 2;
}

static void fill_pts(const gm_video *v, const AVFrame *fr, gm_video_frame *f)
{
    int64_t pts = fr ? fr->best_effort_timestamp : AV_NOPTS_VALUE;
    f->has_pts = 1;
    if (pts != AV_NOPTS_VALUE)
        f->pts_s = (double)(pts - v->start) * av_q2d(v->tb);
    else if (v->fps > 0)
        f->pts_s = (double)f->frame / v->fps;
    else
        f->has_pts = 0, f->pts_s = 0;
}

/* Feed the decoder one packet of our stream (or the flush at the end). */
static void feed(gm_video *v)
{
    for (;;) {
        int e = av_read_frame(v->fc, v->pkt);
        if (e < 0) {
            if (e != AVERROR_EOF)
                v->read_error = e;
            avcodec_send_packet(v->dc, NULL);
            v->flushing = 1;
            return;
        }
        if (v->pkt->stream_index != v->si) {
            av_packet_unref(v->pkt);
            continue;
        }
        e = avcodec_send_packet(v->dc, v->pkt);
        av_packet_unref(v->pkt);
        if (e < 0 && e != AVERROR(EAGAIN))
            v->bad_packets++, v->tainted = 1;
        return;
    }
}

/* The held frame fr to gray in f; a frame NVDEC decoded is first copied to
 * host memory (NV12, P010, ...: its own format, then the usual path).
 * GM_OK, GM_ERR_NOMEM, or another status with f->error set. */
static gm_status convert_held(gm_video *v, gm_video_frame *f)
{
    const AVFrame *src = v->fr;
    if (v->fr->format == AV_PIX_FMT_CUDA) {
        av_frame_unref(v->host);
        int e = av_hwframe_transfer_data(v->host, v->fr, 0);
        if (e >= 0)
            e = av_frame_copy_props(v->host, v->fr); /* color range: the gray table */
        if (e < 0) {
            char m[AV_ERROR_MAX_STRING_SIZE];
            av_msg(e, m, sizeof m);
            snprintf(f->error, sizeof f->error, "cannot copy the frame from the GPU: %s", m);
            return e == AVERROR(ENOMEM) ? GM_ERR_NOMEM : GM_ERR_DEVICE;
        }
        src = v->host;
    }
    gm_status st = gm_video_convert(src, 0, &v->sws, f);
    if (st != GM_OK && st != GM_ERR_NOMEM)
        snprintf(f->error, sizeof f->error, "cannot convert pixel format %s to gray",
                 av_get_pix_fmt_name(src->format));
    return st;
}

/* The one error item of a video that gave no item at all, so that every
 * input gets its line: nothing decoded (frame 0, "no frame decoded" and
 * the damage summary), or frames decoded but none selected (the first
 * frame asked for, and how many frames the video has). */
static void report_empty(gm_video *v, gm_video_frame *f)
{
    f->has_pts = 0, f->pts_s = 0;
    if (v->decoded == 0 && !v->seeked) {
        f->frame = 0, f->status = GM_ERR_CORRUPT;
        snprintf(f->error, sizeof f->error, "no frame decoded%s%s", v->err[0] ? ": " : "",
                 v->err);
        return;
    }
    f->frame = v->o.first, f->status = GM_ERR_INVALID;
    int64_t n = v->decoded > 0 ? v->next : v->expected;
    char want[64];
    if (v->o.last >= 0)
        snprintf(want, sizeof want, "%" PRId64 ":%" PRId64, v->o.first, v->o.last);
    else
        snprintf(want, sizeof want, "%" PRId64 ":", v->o.first);
    if (n >= 0)
        snprintf(f->error, sizeof f->error, "no frame selected: frames %s asked for, the video "
                 "has %" PRId64 " frames (0 to %" PRId64 ")", want, n, n - 1);
    else
        snprintf(f->error, sizeof f->error, "no frame selected: frames %s asked for, none "
                 "decoded from there to the end", want);
}

static gm_status read_one(gm_video *v, gm_video_frame *f, int *got);

gm_status gm_video_prefetch(gm_video *v, int max_items, int64_t max_bytes, const int *stop)
{
    if (!v || max_items <= 0 || v->ahead || v->items > 0)
        return GM_ERR_INVALID;
    if (!(v->ahead = calloc((size_t)max_items, sizeof *v->ahead)))
        return GM_ERR_NOMEM;
    int64_t bytes = 0;
    while (v->ahead_n < max_items && bytes < max_bytes &&
           !(stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE))) {
        int got = 0;
        gm_status st = read_one(v, &v->ahead[v->ahead_n], &got);
        if (st != GM_OK || !got) { /* the end, or a failure: replayed in order */
            v->ahead_end = 1;
            v->ahead_st = st;
            break;
        }
        bytes += (int64_t)v->ahead[v->ahead_n].cap;
        v->ahead_n++;
    }
    return GM_OK;
}

gm_status gm_video_read(gm_video *v, gm_video_frame *f, int *got)
{
    if (v->ahead_head < v->ahead_n) { /* read ahead: the item moves, f's buffer takes its place */
        gm_video_frame t = *f;
        *f = v->ahead[v->ahead_head];
        v->ahead[v->ahead_head++] = t;
        *got = 1;
        return GM_OK;
    }
    if (v->ahead_end) {
        v->ahead_end = 0;
        *got = 0;
        return v->ahead_st;
    }
    return read_one(v, f, got);
}

gm_status gm_video_read_raw(gm_video *v, gm_video_frame *f, int *got, struct AVFrame **raw)
{
    *raw = NULL;
    if (v->ahead_head < v->ahead_n || v->ahead_end) /* read ahead: converted then */
        return gm_video_read(v, f, got);
    v->raw_out = raw;
    gm_status st = read_one(v, f, got);
    v->raw_out = NULL;
    return st;
}

gm_status gm_video_finish(struct AVFrame **raw, struct SwsContext **sws, gm_video_frame *f)
{
    if (!*raw)
        return GM_OK;
    gm_status st = gm_video_convert(*raw, 0, sws, f);
    if (st == GM_ERR_NOMEM)
        snprintf(f->error, sizeof f->error, "out of memory for the frame's gray image");
    else if (st != GM_OK)
        snprintf(f->error, sizeof f->error, "cannot convert pixel format %s to gray",
                 av_get_pix_fmt_name((*raw)->format));
    f->status = st;
    av_frame_free(raw);
    return st;
}

/* (nothing to free when FFmpeg never loaded: no frame or context was made) */
void gm_video_raw_free(struct AVFrame **raw)
{
    if (*raw)
        av_frame_free(raw);
}

void gm_video_sws_free(struct SwsContext **sws)
{
    if (*sws)
        sws_freeContext(*sws);
    *sws = NULL;
}

static gm_status read_one(gm_video *v, gm_video_frame *f, int *got)
{
    *got = 0;
    for (;;) {
        while (v->gap_lo < v->gap_hi) {
            int64_t n = v->gap_lo++;
            if (!selected(v, n))
                continue;
            f->frame = n, f->status = GM_ERR_CORRUPT;
            f->has_pts = v->fps > 0, f->pts_s = v->fps > 0 ? (double)n / v->fps : 0;
            snprintf(f->error, sizeof f->error, "frame could not be decoded (corrupt or missing data)");
            *got = 1, v->items++;
            return GM_OK;
        }
        if (v->held) {
            v->held = 0;
            int64_t n = v->held_n;
            if (!selected(v, n)) {
                av_frame_unref(v->fr);
                continue;
            }
            f->frame = n, f->error[0] = '\0';
            fill_pts(v, v->fr, f);
            if (v->held_bad) {
                f->status = GM_ERR_CORRUPT;
                snprintf(f->error, sizeof f->error, "%s", v->held_bad == 1
                         ? "frame decoded with errors concealed (damaged data)"
                         : "frame decoded after damage before it (a lost or broken frame it may "
                           "refer to); sound again from the next keyframe");
            } else if ((int64_t)v->fr->width * v->fr->height > v->o.max_pixels) {
                f->status = GM_ERR_TOO_LARGE;
                snprintf(f->error, sizeof f->error, "frame of %dx%d exceeds the pixel limit",
                         v->fr->width, v->fr->height);
            } else if (v->raw_out && v->fr->format != AV_PIX_FMT_CUDA) {
                /* converted by the caller (gm_video_finish), on its thread */
                if (!(*v->raw_out = av_frame_alloc())) {
                    av_frame_unref(v->fr);
                    return GM_ERR_NOMEM;
                }
                av_frame_move_ref(*v->raw_out, v->fr);
                f->status = GM_OK;
            } else {
                f->status = convert_held(v, f);
                if (f->status == GM_ERR_NOMEM) {
                    av_frame_unref(v->fr);
                    return GM_ERR_NOMEM;
                }
            }
            av_frame_unref(v->fr);
            *got = 1, v->items++;
            return GM_OK;
        }
        if (v->drained && !v->tail_done) {
            /* frames the container's index promises but the stream did not
             * deliver (a truncated file): an error item each, so that
             * every frame gets its line; not for a video that gave no
             * frame at all, which is one item (report_empty) */
            v->tail_done = 1;
            int64_t end = v->o.last >= 0 && v->expected > v->o.last ? v->o.last : v->expected;
            if (v->decoded > 0 && v->numbered && !v->stopped_early &&
                v->fc->streams[v->si]->nb_frames > 0 && v->next < end) {
                v->gap_lo = v->next, v->gap_hi = end;
                continue;
            }
        }
        if (v->drained) {
            finish(v);
            if (v->items == 0 && !v->empty_reported) {
                v->empty_reported = 1;
                report_empty(v, f);
                *got = 1;
            }
            return GM_OK;
        }
        if (v->numbered && v->o.last >= 0 && v->next >= v->o.last) {
            v->drained = v->stopped_early = 1;
            continue;
        }
        int e = avcodec_receive_frame(v->dc, v->fr);
        if (e == 0) {
            v->errors_in_row = 0;
            number_frame(v);
        } else if (e == AVERROR(EAGAIN) && !v->flushing) {
            feed(v);
        } else if (e == AVERROR_EOF || e == AVERROR(EAGAIN)) {
            v->drained = 1;
        } else {
            v->bad_packets++, v->tainted = 1;
            if (++v->errors_in_row > MAX_DECODE_ERRORS)
                v->drained = 1;
        }
    }
}
