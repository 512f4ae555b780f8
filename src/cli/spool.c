/* spool.c: standard input spooled to a temporary file (spool.h). */
#define _POSIX_C_SOURCE 200809L /* mkstemp */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/spool.h"

/* '-' (standard input): read once, whole, into a temporary file that the
 * decoders then read like any other (FFmpeg needs to seek in most
 * containers); the name printed stays '-'.  g_stdin_path is that file, ""
 * when '-' was not given or could not be read (g_stdin_err says why). */
static char g_stdin_path[64] = "";
static char g_stdin_err[256] = "";

static void stdin_remove(void)
{
    if (g_stdin_path[0])
        unlink(g_stdin_path);
}

void stdin_to_file(void)
{
    if (isatty(STDIN_FILENO)) {
        snprintf(g_stdin_err, sizeof g_stdin_err, "standard input is a terminal, not an image");
        return;
    }
    const char *dir = getenv("TMPDIR");
    char path[sizeof g_stdin_path];
    if (snprintf(path, sizeof path, "%s/gmatch-stdin-XXXXXX", dir && *dir ? dir : "/tmp") >=
        (int)sizeof path)
        snprintf(path, sizeof path, "/tmp/gmatch-stdin-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(g_stdin_err, sizeof g_stdin_err, "cannot make a temporary file for it: %s",
                 strerror(errno));
        return;
    }
    snprintf(g_stdin_path, sizeof g_stdin_path, "%s", path);
    atexit(stdin_remove);
    char buf[1 << 16];
    size_t total = 0;
    for (;;) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(g_stdin_err, sizeof g_stdin_err, "read error: %s", strerror(errno));
            break;
        }
        for (ssize_t k = 0; k < n;) {
            ssize_t w = write(fd, buf + k, (size_t)(n - k));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                snprintf(g_stdin_err, sizeof g_stdin_err, "cannot keep it in %s: %s", path,
                         strerror(errno));
                break;
            }
            k += w;
        }
        if (g_stdin_err[0])
            break;
        total += (size_t)n;
    }
    if (close(fd) != 0 && !g_stdin_err[0])
        snprintf(g_stdin_err, sizeof g_stdin_err, "cannot keep it in %s: %s", path,
                 strerror(errno));
    if (!g_stdin_err[0] && total == 0)
        snprintf(g_stdin_err, sizeof g_stdin_err, "empty file");
}

const char *source_of(const char *name, char *err, size_t errlen)
{
    if (strcmp(name, "-") != 0)
        return name;
    if (g_stdin_err[0]) {
        snprintf(err, errlen, "%s", g_stdin_err);
        return NULL;
    }
    return g_stdin_path;
}
