/* h264_flags_race.c: FFmpeg 5.1's frame-threaded H.264 decoder hands out a
 * damaged picture with or without its error-concealment flag, by timing.
 *
 * Decodes one video with libavcodec alone (no gmatch code) and prints, for
 * every picture, its timestamp and decode_error_flags.  Run it many times on
 * a cut H.264 stream and count the distinct outputs: with one thread the
 * truncated picture always carries FF_DECODE_ERROR_CONCEALMENT_ACTIVE (4);
 * with frame threads it sometimes carries 0, because the picture is
 * handed out at the flush (a copy of its AVFrame, flags included) while the
 * thread that decoded it may still be running error concealment, which sets
 * the flag afterwards.  docs/robustness.md ("Determinism of a cut stream's
 * last frame") has the figures.
 *
 * build: cc -O1 tools/repro/h264_flags_race.c -o h264_flags_race \
 *            $(pkg-config --cflags --libs libavformat libavcodec libavutil)
 * usage: h264_flags_race VIDEO THREADS   (THREADS 1: one; 0: frame threads,
 *                                          as many as cores)            */
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s VIDEO THREADS\n", argv[0]);
        return 2;
    }
    av_log_set_level(AV_LOG_QUIET);
    AVFormatContext *fc = NULL;
    if (avformat_open_input(&fc, argv[1], NULL, NULL) < 0 || avformat_find_stream_info(fc, NULL) < 0) {
        fprintf(stderr, "%s: cannot open\n", argv[1]);
        return 1;
    }
    int si = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (si < 0) {
        fprintf(stderr, "%s: no video stream\n", argv[1]);
        return 1;
    }
    const AVCodec *codec = avcodec_find_decoder(fc->streams[si]->codecpar->codec_id);
    AVCodecContext *dc = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(dc, fc->streams[si]->codecpar);
    dc->thread_count = atoi(argv[2]);
    dc->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    dc->err_recognition |= AV_EF_EXPLODE; /* as gmatch opens it */
    if (avcodec_open2(dc, codec, NULL) < 0) {
        fprintf(stderr, "%s: cannot open the decoder\n", argv[1]);
        return 1;
    }
    AVPacket *pkt = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    int flushing = 0;
    for (;;) {
        int e = avcodec_receive_frame(dc, fr);
        if (e == 0) {
            printf("picture pts %lld flags %d\n", (long long)fr->pts, fr->decode_error_flags);
            av_frame_unref(fr);
        } else if (e == AVERROR(EAGAIN) && !flushing) {
            for (;;) {
                if (av_read_frame(fc, pkt) < 0) {
                    avcodec_send_packet(dc, NULL);
                    flushing = 1;
                    break;
                }
                int ours = pkt->stream_index == si;
                if (ours && avcodec_send_packet(dc, pkt) < 0)
                    printf("packet refused\n");
                av_packet_unref(pkt);
                if (ours)
                    break;
            }
        } else if (e == AVERROR_EOF || e == AVERROR(EAGAIN)) {
            break;
        } else {
            printf("decoding error\n");
        }
    }
    av_frame_free(&fr);
    av_packet_free(&pkt);
    avcodec_free_context(&dc);
    avformat_close_input(&fc);
    return 0;
}
