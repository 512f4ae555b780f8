/* batch.h: gmatch --batch: a manifest of (reference, query) pairs, its
 * shards, and the results of an earlier run to resume from.
 *
 * The manifest, JSON lines (one object a line) or CSV with a header line
 * (a file whose first line that is not blank does not start with '{'):
 *
 *     {"ref": "cat/a.jpg", "query": "shots/1.jpg", "id": "a-1"}
 *     {"ref": "cat/a.jpg", "query": "clips/2.mp4", "frames": "0:300", "model": "homography"}
 *
 *     ref,query,id,model,frames
 *     cat/a.jpg,shots/1.jpg,a-1,,
 *
 *   ref, query  paths, relative to the manifest's folder unless absolute
 *               (the current folder for a manifest read from stdin)
 *   id          optional: a string or an integer, unique in the manifest
 *               as text (7 and "7" are the same id); the results carry it
 *               as a JSON string (default: the line number, "17")
 *   model       optional: similarity, affine, homography or auto (default
 *               the run's --model)
 *   frames      optional: "A:B", "A:" or ":B" for a video (default the
 *               run's --frames)
 *
 * Blank lines and JSON lines starting with '#' are skipped.  A bad line (not
 * JSON, a missing key, an unknown key, a bad value, a repeated id) is a pair
 * with `error` set: the run writes one error line for it and goes on.
 *
 * Pairs with the same reference path form a group, prepared once in a
 * process whatever the order of the lines.  --shard I/N gives every group
 * to one of N shards: groups in order of their number of pairs (most first,
 * ties by a stable hash of the reference path), each to the shard with the
 * fewest pairs so far (ties: the lowest shard).  Every process reads the
 * same manifest and computes the same split, so N processes do disjoint
 * work whose union is the manifest; a bad line without a reference goes to
 * shard (line - 1) mod N.
 *
 * Why CSV by hand and not a library: Debian's libcsv (libcsv3) has had no
 * release since 2013; RFC 4180's quoting is 40 lines here, tested with the
 * rest (tests/unit/test_batch.c). */
#ifndef GM_BATCH_H
#define GM_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "cli/output.h"

typedef struct {
    int64_t line;         /* in the manifest, from 1 */
    char *id;             /* the id as text (a number's digits, or the string) */
    char *ref, *query;    /* as the manifest names them (NULL when missing) */
    char *ref_path, *query_path; /* resolved against the manifest's folder */
    int model;            /* -1: the run's, else a gm_model */
    int has_frames;
    int64_t first, last;  /* frames [first, last), last -1: to the end */
    char *error;          /* a bad line: why (the pair gets an error line) */
    int group;            /* its reference's group, -1 for a bad line */
    /* from --resume: lines already written for this pair, the last frame */
    int64_t written;
    int64_t last_frame;
} gm_batch_pair;

typedef struct {
    const char *ref;      /* the first pair's names */
    const char *ref_path;
    int *pairs;           /* indices into the pairs, in manifest order */
    int n, cap;
    int shard;
} gm_batch_group;

typedef struct {
    gm_batch_pair *pairs;
    int n, cap;
    gm_batch_group *groups;
    int ng, gcap;
    char *dir;            /* the manifest's folder ("" for stdin or a bare name) */
    int csv;
    struct gm_batch_ids *ids; /* the pairs by id (batch.c), for --resume */
} gm_batch;

/* Read a manifest ('-': stdin).  0, or -1 with the cause in err (the file
 * cannot be read, a CSV header without ref and query, out of memory); a bad
 * line is not a failure but a pair with error set. */
int gm_batch_load(const char *path, gm_batch *b, char *err, size_t errlen);
void gm_batch_free(gm_batch *b);

/* Parse "A:B", "A:" or ":B" into [first, last) (last -1 when open, B > A).
 * 0, or -1 when malformed.  Shared with --frames. */
int gm_parse_frames(const char *s, int64_t *first, int64_t *last);

/* Give every group and bad line a shard in 0..n-1 (see above). */
void gm_batch_shard(gm_batch *b, int n);
/* The shard of pair i. */
int gm_batch_pair_shard(const gm_batch *b, int i, int n);

/* Read the results of an earlier run of the same manifest (--resume; the
 * format of this run): every complete line names its pair by id and
 * counts in its `written` and `last_frame`.  A last line without its
 * newline (a killed writer) is ignored, and when truncate is set the file
 * is cut back to the last complete line so that appending goes on cleanly.
 * A missing file is an empty one.  0, or -1 with the cause in err. */
int gm_batch_resume(gm_batch *b, const char *path, gm_output_format fmt, int truncate, char *err,
                    size_t errlen);

/* Rewrite the results file in manifest order (lines by their `line`, then
 * frame; stable), through a temporary file renamed over it.  0 (also when
 * it was in order: then untouched), or -1 with the cause in err. */
int gm_batch_sort_file(const char *path, gm_output_format fmt, char *err, size_t errlen);

#endif
