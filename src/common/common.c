/* common.c: the definitions common.h declares. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"

_Thread_local int gm_thread_budget;

void *gm_alloc_large(size_t count, size_t size)
{
    size_t bytes;
    if (!gm_mul_ok(count, size, &bytes))
        return NULL;
    char *p = malloc(bytes ? bytes : 1);
#ifdef MADV_HUGEPAGE
    if (p && bytes >= GM_LARGE_BYTES) {
        /* the whole pages inside the block; advice only: refused (no
         * transparent huge pages, or them off), the pages stay small */
        const long ps = sysconf(_SC_PAGESIZE);
        const uintptr_t pg = ps > 0 ? (uintptr_t)ps : 4096u;
        const uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1);
        const uintptr_t e = ((uintptr_t)p + bytes) & ~(pg - 1);
        if (e > a)
            (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
    }
#endif
    return p;
}
