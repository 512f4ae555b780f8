/* strmap.c: a map of strings to ints (strmap.h). */
#include "cli/strmap.h"

#include <stdlib.h>
#include <string.h>

uint64_t gm_fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int map_grow(gm_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    const char **key = calloc(cap, sizeof *key);
    int *val = calloc(cap, sizeof *val);
    if (!key || !val) {
        free(key), free(val);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->key[i]) {
            size_t j = gm_fnv1a(m->key[i]) & (cap - 1);
            while (key[j])
                j = (j + 1) & (cap - 1);
            key[j] = m->key[i], val[j] = m->val[i];
        }
    free(m->key), free(m->val);
    m->key = key, m->val = val, m->cap = cap;
    return 0;
}

int gm_strmap_get(const gm_strmap *m, const char *key)
{
    if (!m->cap)
        return -1;
    for (size_t j = gm_fnv1a(key) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1))
        if (strcmp(m->key[j], key) == 0)
            return m->val[j];
    return -1;
}

int gm_strmap_put(gm_strmap *m, const char *key, int val)
{
    if (2 * (m->n + 1) > m->cap && map_grow(m) != 0)
        return -1;
    size_t j = gm_fnv1a(key) & (m->cap - 1);
    while (m->key[j])
        j = (j + 1) & (m->cap - 1);
    m->key[j] = key, m->val[j] = val, m->n++;
    return 0;
}

void gm_strmap_free(gm_strmap *m)
{
    free(m->key), free(m->val);
    memset(m, 0, sizeof *m);
}
