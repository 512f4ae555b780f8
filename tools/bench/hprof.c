/* hprof.c: where a process's host time goes, on a machine without perf (the
 * GPU machine): a sampling profiler loaded with LD_PRELOAD.
 *
 *   cc -shared -fPIC -O2 -o hprof.so tools/bench/hprof.c
 *   HPROF_OUT=prof.txt LD_PRELOAD=./hprof.so gmatch ...
 *   tools/bench/hprof_report.py prof.txt [BINARY=LOCAL_COPY ...]
 *
 * Every thread (the main one, and each made through pthread_create, which
 * this library wraps) gets a timer of its own CPU time (timer_create on
 * CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) that sends it SIGPROF every
 * HPROF_US microseconds of it (default 1000); a process-wide ITIMER_PROF
 * fires at most once a scheduler tick, which under-samples a process
 * running 16 threads.  The interrupted instruction is kept, and the word at
 * the stack pointer: a leaf function's return address (memcpy, memset: the
 * report names their callers), noise elsewhere.  No stack walk: an
 * unwinder in a signal handler can deadlock on the loader's lock.  A
 * sample is the place a core was busy, spinning included: self time, not
 * inclusive time.  For a sample outside the executable (the driver, libc)
 * the first HPROF_UPS words above the stack pointer that point into the
 * executable's code are kept too: most often return addresses of the
 * executable's functions that called into the library (which call waits,
 * which copies; a static CUDA runtime's own frames come first), sometimes
 * stale words.  At exit the samples are written to HPROF_OUT as lines
 * "TID MODULE OFFSET CALLER_MODULE CALLER_OFFSET" and HPROF_UPS more
 * "MODULE OFFSET" pairs (modules' paths and offsets into their files, from
 * /proc/self/maps; "- 0" for a word that is no code address), so that the
 * report can name functions with an unstripped copy of a binary that
 * travelled stripped.  The first line is
 * "# hprof US SAMPLES DROPPED". */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define HPROF_MAX (1 << 20) /* samples kept (116 MiB of addresses and tids) */
/* Words above the stack pointer searched for return addresses into the
 * executable, for a sample outside it (the driver's frames are deep),
 * never past the top of the thread's stack */
#define HPROF_SCAN 8192

#define HPROF_UPS 12 /* return addresses into the executable kept a sample */
static uint64_t *hp_pc, *hp_ret, *hp_up; /* hp_up: HPROF_UPS a sample */
static uint64_t hp_exe_lo, hp_exe_hi; /* the executable's code */
/* the top of the calling thread's stack (0: unknown, no scan) */
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t hp_top;

/* The mappings that execute, from /proc/self/maps (in increasing address
 * order, as the kernel lists them): their range, file offset and path. */
typedef struct {
    uint64_t lo, hi, off;
    char path[256];
} hp_map;

static int read_maps(hp_map *maps, int max)
{
    int nm = 0;
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512];
    while (m && nm < max && fgets(line, sizeof line, m)) {
        unsigned long long lo, hi, offs;
        char perm[8], path[256] = "";
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &lo, &hi, perm, &offs, path) < 4 ||
            perm[2] != 'x')
            continue;
        maps[nm].lo = lo, maps[nm].hi = hi, maps[nm].off = offs;
        snprintf(maps[nm].path, sizeof maps[nm].path, "%s", path[0] ? path : "[anon]");
        nm++;
    }
    if (m)
        fclose(m);
    return nm;
}

/* The mapping holding pc, or -1 (a binary search: maps are sorted). */
static int find_map(const hp_map *maps, int nm, uint64_t pc)
{
    int lo = 0, hi = nm - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (pc < maps[mid].lo)
            hi = mid - 1;
        else if (pc >= maps[mid].hi)
            lo = mid + 1;
        else
            return mid;
    }
    return -1;
}

#define HPROF_MAPS 4096
static hp_map hp_maps[HPROF_MAPS];

static uint32_t *hp_tid;
static unsigned hp_n, hp_dropped;
static long hp_us;

static void on_prof(int sig, siginfo_t *si, void *ctx)
{
    (void)sig, (void)si;
    unsigned i = __atomic_fetch_add(&hp_n, 1, __ATOMIC_RELAXED);
    if (i >= HPROF_MAX) {
        __atomic_fetch_add(&hp_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    const ucontext_t *uc = ctx;
#if defined(__x86_64__)
    hp_pc[i] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    const uint64_t *sp = (const uint64_t *)uc->uc_mcontext.gregs[REG_RSP];
    hp_ret[i] = sp[0];
    uint64_t *up = hp_up + (size_t)i * HPROF_UPS;
    int u = 0;
    uintptr_t room = hp_top > (uintptr_t)sp ? (hp_top - (uintptr_t)sp) / sizeof *sp : 0;
    int scan = room < HPROF_SCAN ? (int)room : HPROF_SCAN;
    if (hp_pc[i] < hp_exe_lo || hp_pc[i] >= hp_exe_hi)
        for (int k = 0; k < scan && u < HPROF_UPS; k++)
            if (sp[k] >= hp_exe_lo && sp[k] < hp_exe_hi)
                up[u++] = sp[k];
    for (; u < HPROF_UPS; u++)
        up[u] = 0;
#elif defined(__aarch64__)
    hp_pc[i] = (uint64_t)uc->uc_mcontext.pc;
    hp_ret[i] = (uint64_t)uc->uc_mcontext.regs[30]; /* the link register */
    memset(hp_up + (size_t)i * HPROF_UPS, 0, HPROF_UPS * sizeof *hp_up);
#else
    hp_pc[i] = 0, hp_ret[i] = 0;
    memset(hp_up + (size_t)i * HPROF_UPS, 0, HPROF_UPS * sizeof *hp_up);
#endif
    hp_tid[i] = (uint32_t)syscall(SYS_gettid);
}

static int hp_on; /* sampling: the calling thread's timer started */

/* The calling thread's CPU-time timer, SIGPROF to itself, and its stack's
 * top for the scan. */
static void thread_timer(void)
{
    if (!hp_on)
        return;
    pthread_attr_t a;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &lo, &size) == 0)
            hp_top = (uintptr_t)lo + size;
        pthread_attr_destroy(&a);
    }
    timer_t t;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t) != 0)
        return;
    struct itimerspec it;
    it.it_interval.tv_sec = it.it_value.tv_sec = hp_us / 1000000;
    it.it_interval.tv_nsec = it.it_value.tv_nsec = (hp_us % 1000000) * 1000;
    timer_settime(t, 0, &it, NULL);
}

typedef struct {
    void *(*fn)(void *);
    void *arg;
} hp_start;

static void *trampoline(void *p)
{
    hp_start s = *(hp_start *)p;
    free(p);
    thread_timer();
    return s.fn(s.arg);
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    hp_start *s = hp_on ? malloc(sizeof *s) : NULL;
    if (!s)
        return real(th, attr, fn, arg);
    s->fn = fn, s->arg = arg;
    int e = real(th, attr, trampoline, s);
    if (e)
        free(s);
    return e;
}

__attribute__((constructor)) static void hprof_start(void)
{
    if (!getenv("HPROF_OUT"))
        return;
    const char *us = getenv("HPROF_US");
    hp_us = us ? atol(us) : 1000;
    if (hp_us < 50)
        hp_us = 50;
    hp_pc = calloc(HPROF_MAX, sizeof *hp_pc);
    hp_ret = calloc(HPROF_MAX, sizeof *hp_ret);
    hp_up = calloc((size_t)HPROF_MAX * HPROF_UPS, sizeof *hp_up);
    hp_tid = calloc(HPROF_MAX, sizeof *hp_tid);
    if (!hp_pc || !hp_ret || !hp_up || !hp_tid)
        return;
    /* the executable's code: its mappings that execute */
    char exe[256] = "";
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = '\0';
    int nm = read_maps(hp_maps, HPROF_MAPS);
    for (int i = 0; i < nm; i++)
        if (strcmp(hp_maps[i].path, exe) == 0) {
            if (!hp_exe_lo || hp_maps[i].lo < hp_exe_lo)
                hp_exe_lo = hp_maps[i].lo;
            if (hp_maps[i].hi > hp_exe_hi)
                hp_exe_hi = hp_maps[i].hi;
        }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    hp_on = 1;
    thread_timer();
}

__attribute__((destructor)) static void hprof_stop(void)
{
    const char *out = getenv("HPROF_OUT");
    if (!out || !hp_pc)
        return;
    hp_on = 0;
    signal(SIGPROF, SIG_IGN);
    /* the mappings as they are now (libraries opened since the start) */
    const hp_map *maps = hp_maps;
    int nm = read_maps(hp_maps, HPROF_MAPS);
    FILE *f = fopen(out, "w");
    if (!f)
        return;
    unsigned n = hp_n < HPROF_MAX ? hp_n : HPROF_MAX;
    fprintf(f, "# hprof %ld %u %u\n", hp_us, n, hp_dropped);
    for (unsigned i = 0; i < n; i++) {
        fprintf(f, "%u", hp_tid[i]);
        for (int j = 0; j < 2 + HPROF_UPS; j++) {
            uint64_t pc = j >= 2 ? hp_up[(size_t)i * HPROF_UPS + j - 2] : j ? hp_ret[i] : hp_pc[i];
            int k = find_map(maps, nm, pc);
            if (k >= 0)
                fprintf(f, " %s %llx", maps[k].path,
                        (unsigned long long)(pc - maps[k].lo + maps[k].off));
            else if (j == 0)
                fprintf(f, " [unknown] %llx", (unsigned long long)pc);
            else
                fprintf(f, " - 0");
        }
        fputc('\n', f);
    }
    fclose(f);
}
