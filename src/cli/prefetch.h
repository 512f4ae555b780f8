/* prefetch.h: the command line's read-ahead of its first query, when that
 * is a video under --device cuda (prefetch.c says why). */
#ifndef GM_CLI_PREFETCH_H
#define GM_CLI_PREFETCH_H

#include "gmatch_video.h"
#include "cli/cli.h"

/* A file whose first bytes say JPEG or PNG is a still: not prefetched. */
int looks_still(const char *path);

/* Starts the read-ahead of path, the first query, where it repays. */
void prefetch_start(const cli_opts *o, const char *path);

/* Ends the read-ahead; returns the video when the run is to use it (the
 * first query, a video, on the GPU's thread layout), else closes it. */
gm_video *prefetch_take(int use);

#endif
