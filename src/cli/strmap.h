/* strmap.h: a map of strings to ints, open addressing, for the command
 * line's bookkeeping (batch ids and references, --draw's picture names). */
#ifndef GM_CLI_STRMAP_H
#define GM_CLI_STRMAP_H

#include <stddef.h>
#include <stdint.h>

/* The keys are borrowed: they must outlive the map (zero it to start). */
typedef struct {
    const char **key;
    int *val;
    size_t cap, n;
} gm_strmap;

/* FNV-1a of a string (also batch.c's stable hash of a reference path). */
uint64_t gm_fnv1a(const char *s);
/* The value of key, or -1. */
int gm_strmap_get(const gm_strmap *m, const char *key);
/* Add key (not yet in the map); 0, or -1 when out of memory. */
int gm_strmap_put(gm_strmap *m, const char *key, int val);
void gm_strmap_free(gm_strmap *m);

#endif
