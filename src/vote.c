/* vote.c: every chosen query basis looks up the key of every query point in
 * the reference's multi-value table and votes for each reference basis stored
 * under it (paper section 6).  The matrix is query-basis major, so on the CPU
 * one thread owns a row and no atomics are needed; counts saturate at 65535. */
#include <string.h>

#include "internal.h"

void gm_vote_cpu(const gm_multi *table, uint32_t n_ref, const gm_points *qbasis_pts,
                 const uint32_t *qbasis_keys, uint32_t n_q, const gm_points *qcloud,
                 uint16_t *votes)
{
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t q = 0; q < (int64_t)n_q; q++) {
        uint16_t *row = votes + (size_t)q * n_ref;
        memset(row, 0, (size_t)n_ref * sizeof *row);
        gm_point a = qbasis_pts->p[qbasis_keys[q] >> 16], b = qbasis_pts->p[qbasis_keys[q] & 0xFFFF];
        gm_frame f = gm_frame_of(a, b);
        for (uint32_t k = 0; k < qcloud->n; k++) {
            if (gm_near_endpoint(a, b, qcloud->p[k]))
                continue;
            uint32_t key = gm_frame_key(&f, qcloud->p[k]);
            if (key == GM_KEY_EMPTY)
                continue;
            const uint32_t *v;
            uint32_t c = gm_multi_find(table, key, &v);
            for (uint32_t i = 0; i < c; i++)
                if (row[v[i]] != UINT16_MAX)
                    row[v[i]]++;
        }
    }
}
