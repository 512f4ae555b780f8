/* spool.h: '-', standard input, as an input of the command line: spooled
 * whole into a temporary file (removed at exit) that the decoders read like
 * any other. */
#ifndef GM_CLI_SPOOL_H
#define GM_CLI_SPOOL_H

#include <stddef.h>

/* Reads standard input, whole, into the temporary file, once, when '-' is
 * among the inputs; what went wrong is kept for source_of to tell. */
void stdin_to_file(void);

/* The file to read for an input name: the temporary copy for '-'; NULL with
 * the cause in err when standard input could not be read. */
const char *source_of(const char *name, char *err, size_t errlen);

#endif
