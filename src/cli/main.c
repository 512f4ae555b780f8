/* main.c: the gmatch command line, a thin layer over the library (gmatch.h).
 *
 *     gmatch [options] REF QUERY [QUERY...]
 *
 * Loads and prepares REF once, then matches every QUERY against it and
 * prints one line per query (formats in output.h) as soon as it is done.
 * Exit status: 0 when every input was processed (match or no match), 1 when
 * some input failed or the output could not be written, 2 for usage errors.
 * Diagnostics go to stderr as one line "gmatch: FILE: cause".
 *
 * This file is the wiring: main() and what only it needs.  The parts of a
 * run are beside it: options.c (argv), spool.c ('-'), warmstart.c (the
 * GPU's start), prefetch.c (the first video's read-ahead), run.c (the
 * references and their queries), stills.c and videorun.c (a still, a
 * video), cli.c (what they share).
 */
#define _POSIX_C_SOURCE 200809L /* fileno */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "gmatch.h"
#include "gmatch_video.h"
#include "cli/batch.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/prefetch.h"
#include "cli/run.h"
#include "cli/spool.h"
#include "cli/warmstart.h"

/* OpenMP's idle threads (libgomp's) spin some 300,000 rounds before they
 * sleep, milliseconds of a core that other work may need: on the 2-core
 * development machine with its other core busy, a public still took
 * 153-169 ms under the default and 93-99 ms spinning 3,000 rounds; but on
 * the GPU machine's 16 quiet cores 3,000 rounds let threads sleep between
 * the CPU path's parallel regions and cost it 5-20%.  30,000 rounds keep
 * both: 80-83 ms there busy (3,000: 75-91, the default 95-115), and the
 * default's times on 16 quiet cores within the runs' spread
 * (docs/speed.md, "OpenMP's idle threads").  libgomp reads its settings as
 * it loads, before main, so the command sets the shorter spin and runs
 * itself again, once, before anything else; an environment that chose
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT set) is kept.  No library does this
 * for a program: gmatch.h says what to set. */
#define GM_CLI_SPINCOUNT "30000"

static void omp_wait_env(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
        return;
    if (setenv("GOMP_SPINCOUNT", GM_CLI_SPINCOUNT, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT"); /* no /proc: the process goes on as it was */
}

/* -v: how OpenMP's idle threads wait. */
static void note_omp_wait(void)
{
    const char *p = getenv("OMP_WAIT_POLICY"), *n = getenv("GOMP_SPINCOUNT");
    fprintf(stderr, PROG ": OpenMP's idle threads: %s%s%s%s%s%s\n",
            p ? "OMP_WAIT_POLICY=" : "", p ? p : "", p && n ? ", " : "",
            n ? "GOMP_SPINCOUNT=" : "", n ? n : "", p || n ? "" : "the runtime's default");
}

/* --draw DIR: the folder first: a run that cannot write its pictures stops
 * at once.  Returns 0, or -1 when the folder cannot be made. */
static int make_draw_folder(const cli_opts *o)
{
    struct stat sb;
    if (mkdir(o->draw, 0777) != 0 && !(errno == EEXIST && stat(o->draw, &sb) == 0 &&
                                        S_ISDIR(sb.st_mode))) {
        diag_file(o->draw, "--draw: cannot make the folder: %s",
                  errno == EEXIST ? "a file of that name exists" : strerror(errno));
        return -1;
    }
    return 0;
}

/* GMATCH_CUDA_FAULT=launch:N or alloc:N (N-: every one from the N-th on):
 * a GPU that fails mid-run, for the tests of the fallback to the CPU
 * (tests/cli/fault.sh); the library reads no environment for it, the
 * command line hands it over (gm_cuda_fault_inject). */
static void fault_from_env(void)
{
    const char *e = getenv("GMATCH_CUDA_FAULT");
    if (e && *e && gm_cuda_fault_inject(e) == GM_ERR_INVALID)
        fprintf(stderr, PROG ": GMATCH_CUDA_FAULT=%s ignored (alloc:N, launch:N, N- for every "
                        "one from the N-th)\n", e);
}

/* --batch MANIFEST: the manifest read, this shard's share, --resume's
 * lines.  Returns 0, or -1 when the manifest or the file to resume cannot
 * be read (said on stderr). */
static int load_batch(const cli_opts *o, gm_batch *batch)
{
    char err[512] = "";
    if (gm_batch_load(o->batch, batch, err, sizeof err) != 0) {
        diag_file(o->batch, "%s", err);
        return -1;
    }
    gm_batch_shard(batch, o->shards > 0 ? o->shards : 1);
    if (o->resume && gm_batch_resume(batch, o->resume, o->format,
                                     o->output && strcmp(o->output, o->resume) == 0, err,
                                     sizeof err) != 0) {
        diag_file(o->resume, "%s", err);
        gm_batch_free(batch);
        return -1;
    }
    /* how threads wait for a GPU (kept by the library until CUDA starts:
     * no wait here); under auto the library moves the references to the
     * GPU when the run's pairs repay it (run.c tells it how many are left) */
    gpu_sync(o);
    return 0;
}

/* gmatch REF QUERY...: standard input spooled when '-' is among them, the
 * GPU's start and the first query's read-ahead begun. */
static void start_plain(cli_opts *o, int argc, char **argv, char **queries, int nq)
{
    int dashes = 0;
    for (int i = optind; i < argc; i++)
        dashes += strcmp(argv[i], "-") == 0;
    if (dashes > 1)
        usage_error("'-' (standard input) is read once: give it for one input only");
    if (dashes)
        stdin_to_file();
    /* under cuda CUDA starts on a thread of its own (gpu_start_main) and
     * load_reference waits for it; under auto the library begins on the
     * CPU (warmstart.h) */
    gpu_start(o);
    if (nq > 0)
        prefetch_start(o, queries[0]);
}

/* -o FILE opened into rc (appended to under --resume; *appending: it has
 * lines already).  Returns 0, or -1 when it cannot be opened (said on
 * stderr, the GPU's start waited for). */
static int open_output(const cli_opts *o, run_ctx *rc, int *appending)
{
    struct stat sb;
    *appending = o->resume != NULL && stat(o->output, &sb) == 0 && sb.st_size > 0;
    rc->out = fopen(o->output, o->resume ? "a" : "w");
    if (!rc->out) {
        diag_file(o->output, "cannot open for writing: %s", strerror(errno));
        gpu_wait();
        return -1;
    }
    rc->out_name = o->output;
    return 0;
}

/* The results closed: flushed or closed (a failure is a write error), and
 * a batch's file sorted. */
static void close_output(const cli_opts *o, run_ctx *rc)
{
    /* Data may still sit in a buffer, and close can fail too (a full disk,
     * NFS): check both before claiming success. */
    FILE *out = rc->out;
    if (out == stdout ? (fflush(out) != 0 || ferror(out)) : fclose(out) != 0) {
        if (!rc->write_failed)
            diag_file(rc->out_name, "write error: %s", strerror(errno));
        rc->write_failed = 1;
    }
    /* a batch's file in the manifest's order, once complete */
    if (o->batch && o->output && !rc->write_failed) {
        char err[512] = "";
        if (gm_batch_sort_file(o->output, o->format, err, sizeof err) != 0) {
            diag_file(o->output, "%s", err);
            rc->write_failed = 1;
        }
    }
}

int main(int argc, char **argv)
{
    omp_wait_env(argv);
    g_main_ms = now_ms();
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.params = gm_params_default();
    o.format = GM_OUTPUT_TEXT;
    o.verbosity = VERBOSITY_NORMAL;
    o.last = -1, o.step = 1, o.draw_every = 30;
    parse_options(argc, argv, &o);
    fault_from_env();
    g_pictures.dir = o.draw;
    if (o.draw && make_draw_folder(&o) != 0)
        return EXIT_USAGE;
    gm_video_log(o.verbosity >= VERBOSITY_VERBOSE);
    if (o.verbosity >= VERBOSITY_VERBOSE)
        note_omp_wait();
    if (o.threads_given && o.params.threads <= 0) /* --threads 0: every core */
        o.params.threads = omp_get_num_procs();

    gm_batch batch;
    memset(&batch, 0, sizeof batch);
    const char *ref_path = NULL;
    char **queries = NULL;
    int nq = 0;
    if (o.batch) {
        if (load_batch(&o, &batch) != 0)
            return EXIT_USAGE;
    } else {
        ref_path = argv[optind];
        queries = argv + optind + 1;
        nq = argc - optind - 1;
        start_plain(&o, argc, argv, queries, nq);
    }

    run_ctx rc = {.out = stdout, .out_name = "stdout"};
    int appending = 0;
    if (o.output && open_output(&o, &rc, &appending) != 0) {
        gm_batch_free(&batch);
        return EXIT_USAGE;
    }
    g_out_tty = isatty(fileno(rc.out));
    int summary = run_progress_start(&o, &batch, ref_path, nq);
    if (o.batch) {
        run_batch(&rc, &o, &batch, appending);
    } else if (gm_output_header(rc.out, o.format, o.params.model, 0) != 0) {
        diag_file(rc.out_name, "write error: %s", strerror(errno));
        rc.write_failed = 1;
    } else {
        run_plain(&rc, &o, ref_path, queries, nq);
    }
    gm_video_close(prefetch_take(0)); /* a run that never reached it */
    gm_pictures_free(&g_pictures);

    close_output(&o, &rc);
    gm_batch_free(&batch);
    if (summary)
        run_summary();
    int code = rc.failed || rc.write_failed ? EXIT_FAILURE : EXIT_SUCCESS;
    if (o.verbosity >= VERBOSITY_VERBOSE)
        fprintf(stderr, PROG ": timeline: main ends %.1f ms after it began\n", since_main());
    if (g_abandon) { /* under auto, a GPU still starting is not waited for */
        fflush(stderr);
        _exit(code);
    }
    return code;
}
