/* run.h: the command line's runs: gmatch REF QUERY... (run_plain) and
 * gmatch --batch MANIFEST (run_batch), each reference prepared once and
 * its queries matched in order, with the run's bar and summary line. */
#ifndef GM_CLI_RUN_H
#define GM_CLI_RUN_H

#include "cli/batch.h"
#include "cli/cli.h"

/* gmatch REF QUERY...: the reference once, then every query. */
void run_plain(run_ctx *rc, const cli_opts *o, const char *ref_path, char **queries, int nq);

/* gmatch --batch MANIFEST: this shard's pairs, a reference at a time. */
void run_batch(run_ctx *rc, cli_opts *o, gm_batch *b, int appending);

/* The run's bar (g_run) over its queries or this shard's pairs (those
 * without lines yet, and videos to go on with), for a batch or RUN_MANY
 * queries or more; returns whether a summary is due at the end. */
int run_progress_start(const cli_opts *o, const gm_batch *b, const char *ref, int nq);

/* The summary line of a run with a bar: its lines by status, its time. */
void run_summary(void);

#endif
