/* fuzz_contract.h: the contract every harness checks of a message: one
 * line, not empty (the library's errors and the command line's lines). */
#ifndef GM_FUZZ_CONTRACT_H
#define GM_FUZZ_CONTRACT_H

#include <string.h>

static inline int one_line(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && !memchr(s, '\n', n);
}

#endif
