/* stream.h: jobs [0, n) on a pool of threads, each handed on in order as
 * soon as it and every job before it are done.
 *
 * The command line's stills (run.c, each job stills.c's still_run) run on
 * it: on a GPU each
 * worker matches a still on its own lane, and the main thread writes the
 * lines in manifest order.  Before it, the stills went in windows of 64
 * with a barrier after each: one slow still (a negative's reverse search,
 * 100-300 ms) kept the other workers idle at the window's end (the public
 * stills as one auto batch of 5,070 pairs on an H200: 266 -> 349 pairs/s,
 * docs/speed.md).
 *
 *     static void work(void *ctx, int i, int slot) { ... job i into slot ... }
 *     static int put(void *ctx, int i, int slot) { ... hand job i on ...; return 0; }
 *     int done = gm_stream_run(n, workers, ring, work, put, ctx);
 *
 * Job i lives in slot i % ring (the caller's storage of `ring` results)
 * from the moment a worker takes it until put returns: at most ring jobs
 * are taken and not yet handed on, which bounds the results held while an
 * earlier, slower job runs.  Why by hand and not a library: what is needed
 * is ordered hand-off with a bounded window over pthreads, 80 lines; the
 * thread pools Debian packages (GLib's GThreadPool, libdispatch) bring a
 * dependency and still leave the ordering to the caller. */
#ifndef GM_CLI_STREAM_H
#define GM_CLI_STREAM_H

/* work: job i into slot (on a worker thread; jobs run concurrently).
 * put: job i, done, from slot, on the calling thread, in order of i;
 * nonzero asks to take no more jobs. */
typedef void (*gm_stream_work_fn)(void *ctx, int i, int slot);
typedef int (*gm_stream_put_fn)(void *ctx, int i, int slot);

/* Runs jobs [0, n) on `workers` threads (at most n) while the calling
 * thread hands them on in order.  After put asks to stop, the jobs already
 * taken still run and are handed on.  Where no thread can be started, the
 * calling thread does each job itself, then hands it on.  Returns the
 * number of jobs handed on: n, or fewer after a stop.  ring >= 1. */
int gm_stream_run(int n, int workers, int ring, gm_stream_work_fn work, gm_stream_put_fn put,
                  void *ctx);

#endif
