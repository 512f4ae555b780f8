/* bench_match.c: end-to-end time per query, split by stage, on each device.
 *
 * usage: bench_match [-r REPS] [-d cpu,cuda] [-m MODEL] [-q] MANIFEST.jsonl [MANIFEST.jsonl ...]
 *   MODEL: similarity (default), affine, homography or auto; -q: a line per query too
 *
 * Every reference of the manifests (../shared/bench/stills/manifest.jsonl:
 * lines with "ref" and "query", paths relative to the manifest) is decoded
 * and prepared once per device; every query is decoded once, matched once to
 * warm up, then REPS times (default 5); a query's time is the median of its
 * reps.  Prints, per device, the median and p90 over queries of each stage
 * (gm_result.time: edges, bases, vote, reduce, verify, total; decode is
 * apart, as the target excludes it) and of the reference
 * preparation, and how many queries matched.  Times are the library's own
 * (omp_get_wtime around each stage, host side; a GPU stage's time includes
 * waiting for its results). */
#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmatch.h"

#define MAX_ITEMS 4096

typedef struct {
    char ref[1024], query[1024];
} pair;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)(p * n + 0.5) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int load_manifest(const char *path, pair *out, int n, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_match: %s: cannot open\n", path);
        return -1;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    char line[8192];
    while (fgets(line, sizeof line, f) && n < cap) {
        json_error_t e;
        json_t *j = json_loads(line, 0, &e);
        if (!j)
            continue;
        const char *r = json_string_value(json_object_get(j, "ref"));
        const char *q = json_string_value(json_object_get(j, "query"));
        if (r && q) {
            snprintf(out[n].ref, sizeof out[n].ref, "%s%s", dir, r);
            snprintf(out[n].query, sizeof out[n].query, "%s%s", dir, q);
            n++;
        }
        json_decref(j);
    }
    fclose(f);
    return n;
}

/* the stages (gm_timing), the whole match, the host's share of it and the
 * calling thread's time blocked on the device (total = host + wait), the
 * waits' count, the decode */
enum { ST_EDGES, ST_BASES, ST_VOTE, ST_REDUCE, ST_VERIFY, ST_POLISH, ST_DECIDE, ST_TOTAL,
       ST_HOST, ST_WAIT, ST_WAITS, ST_DECODE, ST_N };
static const char *const k_stage[ST_N] = {"edges", "bases", "vote",   "reduce", "verify", "polish",
                                          "decide", "total", "host", "wait",   "waits",  "decode"};

static gm_model g_model = GM_MODEL_SIMILARITY;

static int per_query; /* -q */

static void run_device(gm_device dev, const pair *items, int n, int reps)
{
    static double st[ST_N][MAX_ITEMS], prep[MAX_ITEMS];
    int nq = 0, nref = 0, matched = 0, failed = 0;
    gm_params p = gm_params_default();
    p.device = dev;
    p.model = g_model;
    char device[512] = "";
    uint64_t waits = 0; /* the host's waits for the GPU in the timed matches */
    double wait_ms = 0;
    int timed = 0;
    for (int i = 0; i < n;) {
        /* the run of items with this reference */
        int j = i;
        while (j < n && strcmp(items[j].ref, items[i].ref) == 0)
            j++;
        gm_image ri;
        char err[512];
        gm_ref *r = NULL;
        if (gm_image_load(items[i].ref, p.max_pixels, &ri, err, sizeof err) != GM_OK) {
            fprintf(stderr, "bench_match: %s: %s\n", items[i].ref, err);
            failed += j - i;
            i = j;
            continue;
        }
        double t0 = omp_get_wtime();
        gm_status s = gm_ref_prepare(&p, gm_image_view(&ri), &r);
        double t1 = omp_get_wtime();
        gm_image_free(&ri);
        if (s != GM_OK) {
            fprintf(stderr, "bench_match: %s: %s: %s\n", items[i].ref, gm_status_str(s),
                    r ? gm_ref_error(r) : "");
            gm_ref_free(r);
            r = NULL;
            failed += j - i;
            i = j;
            continue;
        }
        snprintf(device, sizeof device, "%s", gm_ref_device(r));
        if (nref > 0 || dev != GM_DEVICE_CUDA) /* the first CUDA one pays for the context */
            prep[nref] = (t1 - t0) * 1e3;
        else
            prep[nref] = gm_ref_time_ms(r);
        nref++;
        for (; i < j; i++) {
            gm_image qi;
            double d0 = omp_get_wtime();
            if (gm_image_load(items[i].query, p.max_pixels, &qi, err, sizeof err) != GM_OK) {
                fprintf(stderr, "bench_match: %s: %s\n", items[i].query, err);
                failed++;
                continue;
            }
            double dec = (omp_get_wtime() - d0) * 1e3;
            gm_result res;
            double t[ST_N][64];
            int ok = gm_match(r, gm_image_view(&qi), &res) == GM_OK; /* warm-up */
            uint64_t w0 = 0, w1 = 0;
            double wm0 = 0, wm1 = 0;
            (void)gm_cuda_waits(&w0, &wm0);
            for (int k = 0; k < reps && ok; k++) {
                ok = gm_match(r, gm_image_view(&qi), &res) == GM_OK;
                t[ST_EDGES][k] = res.time.edges;
                t[ST_BASES][k] = res.time.bases;
                t[ST_VOTE][k] = res.time.vote;
                t[ST_REDUCE][k] = res.time.reduce;
                t[ST_VERIFY][k] = res.time.verify;
                t[ST_POLISH][k] = res.time.polish;
                t[ST_DECIDE][k] = res.time.decide;
                t[ST_TOTAL][k] = res.time.total;
                t[ST_HOST][k] = res.time.total - res.time.wait;
                t[ST_WAIT][k] = res.time.wait;
                t[ST_WAITS][k] = res.time.waits;
                t[ST_DECODE][k] = dec;
            }
            (void)gm_cuda_waits(&w1, &wm1);
            waits += w1 - w0, wait_ms += wm1 - wm0, timed += reps;
            gm_image_free(&qi);
            if (!ok) {
                fprintf(stderr, "bench_match: %s: matching failed\n", items[i].query);
                failed++;
                continue;
            }
            for (int s2 = 0; s2 < ST_N; s2++)
                st[s2][nq] = pct(t[s2], reps, 0.5);
            if (per_query) /* -q: a line per query, its medians */
                printf("query %s %s total %.3f edges %.3f bases %.3f vote %.3f reduce %.3f "
                       "verify %.3f polish %.3f decide %.3f host %.3f wait %.3f ms waits %.0f\n",
                       items[i].query, res.status == GM_MATCH_FOUND ? "match" : "none",
                       st[ST_TOTAL][nq], st[ST_EDGES][nq], st[ST_BASES][nq], st[ST_VOTE][nq],
                       st[ST_REDUCE][nq], st[ST_VERIFY][nq], st[ST_POLISH][nq],
                       st[ST_DECIDE][nq], st[ST_HOST][nq], st[ST_WAIT][nq], st[ST_WAITS][nq]);
            matched += res.status == GM_MATCH_FOUND;
            nq++;
        }
        gm_ref_free(r);
    }
    printf("device: %s\n", device[0] ? device : "(none prepared)");
    printf("queries %d (matched %d, failed %d), references %d, %d reps each\n", nq, matched,
           failed, nref, reps);
    printf("%-10s %9s %9s\n", "stage", "median", "p90");
    for (int s2 = 0; s2 < ST_N; s2++)
        printf("%-10s %9.3f %9.3f%s\n", k_stage[s2], pct(st[s2], nq, 0.5), pct(st[s2], nq, 0.9),
               s2 == ST_WAITS ? "" : " ms");
    printf("%-10s %9.3f %9.3f ms\n", "ref prep", pct(prep, nref, 0.5), pct(prep, nref, 0.9));
    if (dev == GM_DEVICE_CUDA && timed > 0)
        printf("GPU waits %.1f a match, %.3f ms a match (mean)\n", (double)waits / timed,
               wait_ms / timed);
}

int main(int argc, char **argv)
{
    int reps = 5;
    const char *devs = "cpu,cuda";
    int a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "-r") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "-d") && a + 1 < argc)
            devs = argv[++a];
        else if (!strcmp(argv[a], "-q"))
            per_query = 1;
        else if (!strcmp(argv[a], "-m") && a + 1 < argc) {
            const char *m = argv[++a];
            g_model = !strcmp(m, "affine")       ? GM_MODEL_AFFINE
                      : !strcmp(m, "homography") ? GM_MODEL_HOMOGRAPHY
                      : !strcmp(m, "auto")       ? GM_MODEL_AUTO
                                                 : GM_MODEL_SIMILARITY;
        }
        else {
            fprintf(stderr, "usage: bench_match [-r REPS] [-d cpu,cuda] [-m MODEL] MANIFEST...\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64 || a == argc) {
        fprintf(stderr, "usage: bench_match [-r REPS (1-64)] [-d cpu,cuda] MANIFEST...\n");
        return 2;
    }
    static pair items[MAX_ITEMS];
    int n = 0;
    for (; a < argc; a++)
        if ((n = load_manifest(argv[a], items, n, MAX_ITEMS)) < 0)
            return 1;
    printf("bench_match: %d queries, %s\n", n, devs);
    /* what the command line asks for (gm_cuda_set_sync); no GPU: nothing */
    if (strstr(devs, "cuda"))
        (void)gm_cuda_set_sync(GM_CUDA_SYNC_SPIN);
    if (strstr(devs, "cpu")) {
        run_device(GM_DEVICE_CPU, items, n, reps);
        printf("\n");
    }
    if (strstr(devs, "cuda"))
        run_device(GM_DEVICE_CUDA, items, n, reps);
    return 0;
}
