/* stream.c: jobs on a pool of threads, handed on in order (stream.h). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>

#include "cli/stream.h"

/* Shared under lock by the workers and the handing thread. */
typedef struct {
    int n, ring;
    int next;             /* the next job to take */
    int handed;           /* jobs handed on */
    int stop;             /* take no more */
    int *done;            /* per slot: its job is done */
    gm_stream_work_fn work;
    void *ctx;
    pthread_mutex_t lock;
    pthread_cond_t room;  /* a slot freed, or stop: for the workers */
    pthread_cond_t ready; /* a job done: for the handing thread */
} stream;

static void *worker_main(void *arg)
{
    stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && s->next < s->n && s->next >= s->handed + s->ring)
            pthread_cond_wait(&s->room, &s->lock);
        if (s->stop || s->next >= s->n)
            break;
        int i = s->next++;
        pthread_mutex_unlock(&s->lock);
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
    if (n <= 0)
        return 0;
    if (ring < 1)
        ring = 1;
    if (workers > n)
        workers = n;
    stream s = {.n = n, .ring = ring, .work = work, .ctx = ctx};
    s.done = calloc((size_t)ring, sizeof *s.done);
    pthread_t *th = workers > 0 ? calloc((size_t)workers, sizeof *th) : NULL;
    int started = 0, i = 0;
    if (s.done && th) {
        pthread_mutex_init(&s.lock, NULL);
        pthread_cond_init(&s.room, NULL);
        pthread_cond_init(&s.ready, NULL);
        for (int k = 0; k < workers; k++)
            started += pthread_create(&th[started], NULL, worker_main, &s) == 0;
        if (started > 0) {
            pthread_mutex_lock(&s.lock);
            /* every job in order; after a stop, those already taken */
            while (i < s.next || (!s.stop && i < n)) {
                while (!s.done[i % ring])
                    pthread_cond_wait(&s.ready, &s.lock);
                pthread_mutex_unlock(&s.lock);
                int halt = put(ctx, i, i % ring);
                pthread_mutex_lock(&s.lock);
                s.done[i % ring] = 0;
                s.handed = ++i;
                s.stop |= halt != 0;
                pthread_cond_broadcast(&s.room);
            }
            s.stop = 1;
            pthread_cond_broadcast(&s.room);
            pthread_mutex_unlock(&s.lock);
            for (int k = 0; k < started; k++)
                pthread_join(th[k], NULL);
        }
        pthread_mutex_destroy(&s.lock);
        pthread_cond_destroy(&s.room);
        pthread_cond_destroy(&s.ready);
    }
    if (started == 0) /* no thread (or no memory for the flags): here, in turn */
        for (int halt = 0; i < n && !halt; i++) {
            work(ctx, i, i % ring);
            halt = put(ctx, i, i % ring);
        }
    free(th);
    free(s.done);
    return i;
}
