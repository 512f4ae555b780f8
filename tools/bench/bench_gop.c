/* bench_gop.c: does decoding scale when each group of pictures has a
 * decoder of its own?  The measurement behind the frame pipeline's next
 * step (docs/speed.md, "Still to do": under similarity a video run is bound
 * by its one decoder, whose frame threads stop scaling).
 *
 * usage: bench_gop [-r REPS] [-d LIST] [-t THREADS] VIDEO...
 *   -r REPS     timed runs per row, the fastest kept (default 3)
 *   -d LIST     decoders side by side, comma separated (default "1,2,4,8,16")
 *   -t THREADS  libavcodec threads per decoder (default 1)
 *
 * The packets are read into memory first (demuxing apart, as a demuxing
 * thread would hand them over) and cut at key packets; each cut-out group
 * is decoded on its own by the next free decoder (its own codec context,
 * drained at the group's end).  Rows: one decoder over the whole stream with
 * libavcodec's frame threads (all cores: what gmatch does now), then D
 * decoders over the groups.  Every row is checked against one decoder of
 * one thread: the same frames in the same order, each frame's luma equal
 * (an FNV-1a hash of its rows), in a run of its own before the timed
 * ones, which count the frames only (a hash on the thread that receives a
 * frame costs as much as a fast decode: 0.3 ms at 640x360, which capped
 * the one-decoder row at some 3,000 fps).  A group whose key frame is not a clean
 * start (an open group of pictures: leading pictures that refer back) shows
 * as a mismatch, not as a speed.  Columns: video, size, frames, groups,
 * decoders, threads, fps (best of REPS), speed-up against the first row,
 * frames that differ. */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

/* frames a group may give beyond its packets (none seen; a decoder's extra) */
#define GM_SLACK 16

typedef struct {
    AVPacket **pkt;
    int n;
    int *start; /* group g: packets start[g] .. start[g + 1] - 1 */
    int groups;
    const AVCodecParameters *par;
} stream;

typedef struct {
    uint64_t *hash; /* group g's frames' hashes in output order from base[g] */
    int *base, *count, *cap;
    int groups; /* of the last run */
} output;

typedef struct {
    const stream *s;
    output *out;
    int threads;
    int check; /* hash each frame (the checked run), else count them */
    int next; /* the next group to take, under mu */
    pthread_mutex_t mu;
    int failed;
} job;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static uint64_t luma_hash(const AVFrame *f)
{
    uint64_t h = 1469598103934665603ull;
    for (int y = 0; y < f->height; y++) {
        const uint8_t *row = f->data[0] + (size_t)y * f->linesize[0];
        for (int x = 0; x < f->width; x++)
            h = (h ^ row[x]) * 1099511628211ull;
    }
    return h;
}

static AVCodecContext *decoder(const AVCodecParameters *par, int threads)
{
    const AVCodec *c = avcodec_find_decoder(par->codec_id);
    AVCodecContext *dc = c ? avcodec_alloc_context3(c) : NULL;
    if (!dc || avcodec_parameters_to_context(dc, par) < 0)
        goto fail;
    dc->thread_count = threads;
    dc->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    if (avcodec_open2(dc, c, NULL) < 0)
        goto fail;
    return dc;
fail:
    avcodec_free_context(&dc);
    return NULL;
}

/* Packets [a, b) through dc, then drained; each frame's hash appended to
 * group g's list.  0, or -1 when the decoder failed outright. */
static int decode_range(AVCodecContext *dc, const stream *s, int a, int b, output *o, int g,
                        AVFrame *fr, int check)
{
    for (int i = a; i <= b; i++) {
        if (avcodec_send_packet(dc, i < b ? s->pkt[i] : NULL) < 0 && i == b)
            return -1;
        while (avcodec_receive_frame(dc, fr) == 0) {
            if (o->count[g] == o->cap[g])
                return -1;
            o->hash[(size_t)o->base[g] + (size_t)o->count[g]++] = check ? luma_hash(fr) : 0;
            av_frame_unref(fr);
        }
    }
    avcodec_flush_buffers(dc); /* drained: ready for the next group */
    return 0;
}

static void *decode_groups(void *arg)
{
    job *j = arg;
    AVCodecContext *dc = decoder(j->s->par, j->threads);
    AVFrame *fr = av_frame_alloc();
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int g = dc && fr && !j->failed ? j->next++ : j->s->groups;
        if (!dc || !fr)
            j->failed = 1;
        pthread_mutex_unlock(&j->mu);
        if (g >= j->s->groups)
            break;
        if (decode_range(dc, j->s, j->s->start[g], j->s->start[g + 1], j->out, g, fr,
                         j->check) != 0) {
            pthread_mutex_lock(&j->mu);
            j->failed = 1;
            pthread_mutex_unlock(&j->mu);
        }
    }
    av_frame_free(&fr);
    avcodec_free_context(&dc);
    return NULL;
}

/* One run: ndec decoders over the groups (ndec 0: one decoder over the
 * whole stream as a single group), each frame hashed when check.  The wall
 * time in ms, or -1. */
static double run(const stream *s, int ndec, int threads, output *o, int check)
{
    stream one = *s;
    int whole[2] = {0, s->n};
    if (ndec == 0)
        one.start = whole, one.groups = 1, ndec = 1;
    for (int g = 0; g < one.groups; g++) { /* room for a few frames over a group's packets */
        o->base[g] = one.start[g] + GM_SLACK * g;
        o->count[g] = 0;
        o->cap[g] = one.start[g + 1] - one.start[g] + GM_SLACK;
    }
    o->groups = one.groups;
    job j = {.s = &one, .out = o, .threads = threads, .check = check};
    pthread_mutex_init(&j.mu, NULL);
    pthread_t th[256];
    double t0 = now_ms();
    int started = 0;
    for (; started < ndec && started < 256; started++)
        if (pthread_create(&th[started], NULL, decode_groups, &j) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    double ms = now_ms() - t0;
    pthread_mutex_destroy(&j.mu);
    return j.failed || started < ndec ? -1 : ms;
}

/* The frames the last run gave. */
static int frames_of(const output *o)
{
    int k = 0;
    for (int g = 0; g < o->groups; g++)
        k += o->count[g];
    return k;
}

/* The frames of the last run in order against ref's. */
static int differ(const output *o, const uint64_t *ref, int nref)
{
    int k = 0, bad = 0;
    for (int g = 0; g < o->groups; g++)
        for (int i = 0; i < o->count[g]; i++, k++)
            bad += k >= nref || o->hash[o->base[g] + i] != ref[k];
    return bad + abs(nref - k);
}

static int bench(const char *path, int reps, const int *decs, int ndecs, int threads)
{
    AVFormatContext *fc = NULL;
    if (avformat_open_input(&fc, path, NULL, NULL) < 0 || avformat_find_stream_info(fc, NULL) < 0) {
        fprintf(stderr, "bench_gop: %s: cannot open\n", path);
        avformat_close_input(&fc);
        return 1;
    }
    int si = av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (si < 0) {
        fprintf(stderr, "bench_gop: %s: no video stream\n", path);
        avformat_close_input(&fc);
        return 1;
    }
    stream s = {.par = fc->streams[si]->codecpar};
    int cap = 1024;
    s.pkt = malloc((size_t)cap * sizeof *s.pkt);
    s.start = malloc((size_t)(cap + 1) * sizeof *s.start);
    AVPacket *p = av_packet_alloc();
    while (s.pkt && s.start && p && av_read_frame(fc, p) >= 0) {
        if (p->stream_index != si) {
            av_packet_unref(p);
            continue;
        }
        if (s.n == cap) {
            cap *= 2;
            AVPacket **np = realloc(s.pkt, (size_t)cap * sizeof *np);
            int *ns = realloc(s.start, (size_t)(cap + 1) * sizeof *ns);
            if (np)
                s.pkt = np;
            if (ns)
                s.start = ns;
            if (!np || !ns)
                break;
        }
        if ((p->flags & AV_PKT_FLAG_KEY) || s.n == 0)
            s.start[s.groups++] = s.n;
        s.pkt[s.n++] = av_packet_clone(p);
        av_packet_unref(p);
    }
    av_packet_free(&p);
    s.start[s.groups] = s.n;
    const size_t ng = (size_t)s.groups + 1;
    output o = {.hash = malloc(((size_t)s.n + GM_SLACK * ng) * sizeof *o.hash),
                .base = calloc(ng, sizeof(int)),
                .count = calloc(ng, sizeof(int)),
                .cap = calloc(ng, sizeof(int))};
    uint64_t *ref = malloc(((size_t)s.n + GM_SLACK) * sizeof *ref);
    int rc = 0;
    if (!o.hash || !o.base || !o.count || !o.cap || !ref) {
        fprintf(stderr, "bench_gop: out of memory\n");
        rc = 1;
        goto done;
    }
    /* the reference: one decoder, one thread */
    if (run(&s, 0, 1, &o, 1) < 0) {
        fprintf(stderr, "bench_gop: %s: the decoder failed\n", path);
        rc = 1;
        goto done;
    }
    int nref = o.count[0];
    memcpy(ref, o.hash, (size_t)nref * sizeof *ref);
    double base = 0;
    for (int row = -1; row < ndecs; row++) {
        int nd = row < 0 ? 0 : decs[row], th = row < 0 ? 0 : threads;
        /* the checked run, then the timed ones (each gives as many frames) */
        double best = run(&s, nd, th, &o, 1);
        int bad = best < 0 ? 0 : differ(&o, ref, nref);
        for (int r = 0; r < reps && best >= 0; r++) {
            double ms = run(&s, nd, th, &o, 0);
            if (ms < 0 || frames_of(&o) != nref) {
                best = -1;
                break;
            }
            if (r == 0 || ms < best)
                best = ms;
        }
        double fps = best > 0 ? nref / (best / 1e3) : 0;
        if (row < 0)
            base = fps;
        char dcol[16], tcol[16];
        snprintf(dcol, sizeof dcol, "%d", nd ? nd : 1);
        snprintf(tcol, sizeof tcol, th ? "%d" : "all", th);
        printf("%-28s %4dx%-4d %6d %6d %9s %8s %9.1f %6.2fx %6d\n", path, s.par->width,
               s.par->height, nref, nd ? s.groups : 1, dcol, tcol, fps, base > 0 ? fps / base : 0,
               bad);
        if (best < 0 || bad)
            rc = 1;
    }
done:
    for (int i = 0; i < s.n; i++)
        av_packet_free(&s.pkt[i]);
    free(s.pkt), free(s.start), free(o.hash), free(o.base), free(o.count), free(o.cap), free(ref);
    avformat_close_input(&fc);
    return rc;
}

int main(int argc, char **argv)
{
    int reps = 3, threads = 1, decs[32], ndecs = 0;
    const char *list = "1,2,4,8,16";
    int c;
    while ((c = getopt(argc, argv, "r:d:t:")) != -1) {
        if (c == 'r')
            reps = atoi(optarg);
        else if (c == 'd')
            list = optarg;
        else if (c == 't')
            threads = atoi(optarg);
        else {
            fprintf(stderr, "usage: bench_gop [-r REPS] [-d LIST] [-t THREADS] VIDEO...\n");
            return 2;
        }
    }
    for (const char *q = list; *q && ndecs < 32;) {
        int d = atoi(q);
        if (d > 0 && d <= 256)
            decs[ndecs++] = d;
        q = strchr(q, ',');
        if (!q)
            break;
        q++;
    }
    if (optind >= argc || ndecs == 0 || reps < 1 || threads < 0) {
        fprintf(stderr, "usage: bench_gop [-r REPS] [-d LIST] [-t THREADS] VIDEO...\n");
        return 2;
    }
    av_log_set_level(AV_LOG_ERROR);
    printf("%-28s %9s %6s %6s %9s %8s %9s %7s %6s\n", "video", "size", "frames", "groups",
           "decoders", "threads", "fps", "speedup", "differ");
    int rc = 0;
    for (int i = optind; i < argc; i++)
        rc |= bench(argv[i], reps, decs, ndecs, threads);
    return rc;
}
