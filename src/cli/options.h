/* options.h: the command line's options: --help, --version and the
 * parsing of argv into cli_opts, with the usage errors (exit 2) of a bad
 * one.
 *
 * Options are parsed with getopt_long from glibc: long options, permuted
 * operands and "--" are all there, so no argument-parsing library is needed
 * (one fewer dependency to install on every machine).
 */
#ifndef GM_CLI_OPTIONS_H
#define GM_CLI_OPTIONS_H

#include "cli/cli.h"

/* A usage error: the message, a hint, exit 2. */
_Noreturn void usage_error(const char *fmt, ...);

/* argv into *o (set to the defaults before); --help and --version print
 * and exit, a bad option or operand is a usage error.  The operands start
 * at optind. */
void parse_options(int argc, char **argv, cli_opts *o);

#endif
