/* stream.c: jobs on a pool of threads, handed on in order (stream.h). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>

#include "cli/stream.h"

/* Shared under lock by the readers, the workers and the handing thread. */
typedef struct {
    int n, ring, ahead;
    int reading;          /* readers run: workers take only jobs read */
    int next_read;        /* the next job to read (reading) */
    int next;             /* the next job to work */
    int handed;           /* jobs handed on */
    int stop;             /* take no more */
    int *is_read;         /* per slot: its job is read, not yet taken by a worker */
    int *done;            /* per slot: its job is done */
    gm_stream_work_fn read, work;
    void *ctx;
    pthread_mutex_t lock;
    pthread_cond_t room;     /* a slot freed, a job taken, or stop: for the readers and,
                              * not reading, the workers */
    pthread_cond_t readable; /* a job read, or stop: for the workers (reading) */
    pthread_cond_t ready;    /* a job done: for the handing thread */
} stream;

/* The jobs taken so far: read, or (not reading) begun by a worker. */
static int taken(const stream *s) { return s->reading ? s->next_read : s->next; }

static void *reader_main(void *arg)
{
    stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && s->next_read < s->n &&
               (s->next_read >= s->handed + s->ring || s->next_read >= s->next + s->ahead))
            pthread_cond_wait(&s->room, &s->lock);
        if (s->stop || s->next_read >= s->n)
            break;
        int i = s->next_read++;
        pthread_mutex_unlock(&s->lock);
        s->read(s->ctx, i, i % s->ring);
        pthread_mutex_lock(&s->lock);
        s->is_read[i % s->ring] = 1;
        pthread_cond_broadcast(&s->readable);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void *worker_main(void *arg)
{
    stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        int i;
        if (s->reading) {
            /* the next job once read; done when every job taken is worked
             * and the readers take no more */
            while (!(s->next < s->next_read && s->is_read[s->next % s->ring]) &&
                   !(s->next >= s->next_read && (s->stop || s->next_read >= s->n)))
                pthread_cond_wait(&s->readable, &s->lock);
            if (s->next >= s->next_read)
                break;
            i = s->next++;
            s->is_read[i % s->ring] = 0;
            pthread_cond_broadcast(&s->room); /* a reader may go ahead by one */
        } else {
            while (!s->stop && s->next < s->n && s->next >= s->handed + s->ring)
                pthread_cond_wait(&s->room, &s->lock);
            if (s->stop || s->next >= s->n)
                break;
            i = s->next++;
        }
        pthread_mutex_unlock(&s->lock);
        if (!s->reading && s->read)
            s->read(s->ctx, i, i % s->ring);
        s->work(s->ctx, i, i % s->ring);
        pthread_mutex_lock(&s->lock);
        s->done[i % s->ring] = 1;
        pthread_cond_signal(&s->ready); /* one thread waits on it */
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int gm_stream_run(int n, int workers, int ring, gm_stream_work_fn work, gm_stream_put_fn put,
                  void *ctx)
{
    return gm_stream_run_read(n, workers, 0, 1, ring, NULL, work, put, ctx);
}

int gm_stream_run_read(int n, int workers, int readers, int ahead, int ring,
                       gm_stream_work_fn read, gm_stream_work_fn work, gm_stream_put_fn put,
                       void *ctx)
{
    if (n <= 0)
        return 0;
    if (ring < 1)
        ring = 1;
    if (ahead < 1)
        ahead = 1;
    if (workers > n)
        workers = n;
    if (!read || workers <= 0 || readers < 0)
        readers = 0;
    if (readers > n)
        readers = n;
    stream s = {.n = n, .ring = ring, .ahead = ahead, .read = read, .work = work, .ctx = ctx};
    s.done = calloc((size_t)ring, sizeof *s.done);
    s.is_read = calloc((size_t)ring, sizeof *s.is_read);
    pthread_t *th = workers > 0 ? calloc((size_t)workers, sizeof *th) : NULL;
    pthread_t *rt = readers > 0 ? calloc((size_t)readers, sizeof *rt) : NULL;
    int started = 0, rstarted = 0, i = 0, inline_done = 0;
    if (s.done && s.is_read && th && (readers == 0 || rt)) {
        pthread_mutex_init(&s.lock, NULL);
        pthread_cond_init(&s.room, NULL);
        pthread_cond_init(&s.readable, NULL);
        pthread_cond_init(&s.ready, NULL);
        /* the readers first: the workers learn from s.reading whether any run */
        s.reading = 1;
        for (int k = 0; k < readers; k++)
            rstarted += pthread_create(&rt[rstarted], NULL, reader_main, &s) == 0;
        if (rstarted == 0)
            s.reading = 0; /* no reader thread: each worker reads its own jobs */
        for (int k = 0; k < workers; k++)
            started += pthread_create(&th[started], NULL, worker_main, &s) == 0;
        if (started == 0 && rstarted > 0) {
            /* readers but no worker: the readers stopped, the jobs they
             * took worked and handed on here, then the rest in turn */
            pthread_mutex_lock(&s.lock);
            s.stop = 1;
            pthread_cond_broadcast(&s.room);
            pthread_mutex_unlock(&s.lock);
            for (int k = 0; k < rstarted; k++)
                pthread_join(rt[k], NULL);
            rstarted = 0;
            int halt = 0;
            for (; i < s.next_read; i++) {
                work(ctx, i, i % ring);
                halt |= put(ctx, i, i % ring) != 0;
            }
            for (; i < n && !halt; i++) {
                read(ctx, i, i % ring);
                work(ctx, i, i % ring);
                halt = put(ctx, i, i % ring);
            }
            inline_done = 1;
        }
        if (started > 0) {
            pthread_mutex_lock(&s.lock);
            /* every job in order; after a stop, those already taken */
            while (i < taken(&s) || (!s.stop && i < n)) {
                while (!s.done[i % ring])
                    pthread_cond_wait(&s.ready, &s.lock);
                pthread_mutex_unlock(&s.lock);
                int halt = put(ctx, i, i % ring);
                pthread_mutex_lock(&s.lock);
                s.done[i % ring] = 0;
                s.handed = ++i;
                s.stop |= halt != 0;
                pthread_cond_broadcast(&s.room);
                if (s.stop)
                    pthread_cond_broadcast(&s.readable);
            }
            s.stop = 1;
            pthread_cond_broadcast(&s.room);
            pthread_cond_broadcast(&s.readable);
            pthread_mutex_unlock(&s.lock);
            for (int k = 0; k < started; k++)
                pthread_join(th[k], NULL);
            for (int k = 0; k < rstarted; k++)
                pthread_join(rt[k], NULL);
        }
        pthread_mutex_destroy(&s.lock);
        pthread_cond_destroy(&s.room);
        pthread_cond_destroy(&s.readable);
        pthread_cond_destroy(&s.ready);
    }
    if (started == 0 && !inline_done) /* no thread (or no memory for the flags): here, in turn */
        for (int halt = 0; i < n && !halt; i++) {
            if (read)
                read(ctx, i, i % ring);
            work(ctx, i, i % ring);
            halt = put(ctx, i, i % ring);
        }
    free(th);
    free(rt);
    free(s.done);
    free(s.is_read);
    return i;
}
