#!/usr/bin/env python3
"""hprof_report.py: the functions where hprof.c's samples fell.

usage: hprof_report.py PROF [NAME=PATH ...] [-n TOP] [-m NAME]
  PROF       hprof.c's output (its lines: TID, then module and offset of the
             sample, of the word at the stack pointer, of the first
             return address into the executable up the stack)
  NAME=PATH  a local, unstripped copy of a module whose file name is NAME
             (gmatch=build-gpu/gmatch); otherwise the sampled path itself
             when it exists here, else the module's name alone
  -n TOP     rows a table (40); -m NAME the home module (gmatch)
Prints the share of samples (and their count) by module, by function
(self time) and by thread (each thread's largest functions); then the
samples outside the home module (libc's memset, the driver's waits) with
the function that the word at the stack pointer points into (the caller of
a leaf function, a guess elsewhere), and by the home module's function
found first up the stack, past the static CUDA runtime's frames, and the
one above it (its call into the other module: "gm_cuda_stream_wait <
download").  A stripped
library's functions are named by its nearest exported symbol, often
wrongly.  Symbols from `nm` (the dynamic table when a file has no other),
file offsets mapped to addresses through readelf's LOAD segments."""
import argparse
import bisect
import collections
import os
import subprocess


def segments(path):
    """[(offset, vaddr, filesz)] of the LOAD segments."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return segs


def symbols(path):
    """sorted [(address, name)] of the functions."""
    syms = []
    for dyn in ([], ["-D"]):
        out = subprocess.run(["nm", "-n", "-C", "--defined-only"] + dyn + [path],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split(None, 2)
            if len(f) == 3 and f[1] in "tTwWiI":
                syms.append((int(f[0], 16), f[2]))
        if syms:
            break
    syms.sort()
    return syms


class Module:
    def __init__(self, path):
        self.path = path
        self.ok = path and os.path.exists(path)
        self.segs = segments(path) if self.ok else []
        self.syms = symbols(path) if self.ok else []
        self.addrs = [a for a, _ in self.syms]

    def name(self, off):
        if not self.syms:
            return None
        va = off
        for o, v, n in self.segs:
            if o <= off < o + n:
                va = off - o + v
                break
        i = bisect.bisect_right(self.addrs, va) - 1
        return self.syms[i][1] if i >= 0 else None


def table(counter, rows, n):
    """The rows most common of counter: share, samples, key."""
    for k, c in counter.most_common(rows):
        print("  %5.1f%%  %7d  %s" % (100.0 * c / n, c, k))


def main():
    ap = argparse.ArgumentParser(description="the functions where hprof.c's samples fell")
    ap.add_argument("prof")
    ap.add_argument("local", nargs="*", metavar="NAME=PATH")
    ap.add_argument("-n", type=int, default=40, dest="top")
    ap.add_argument("-m", default="gmatch", dest="home")
    a = ap.parse_args()
    prof, top, home = a.prof, a.top, a.home
    local = dict(x.split("=", 1) for x in a.local)
    rows = []
    us = 1000
    with open(prof) as f:
        for line in f:
            if line.startswith("#"):
                us = int(line.split()[2])
                continue
            f = line.split()
            cm, co = (f[3], int(f[4], 16)) if len(f) >= 5 else ("-", 0)
            ups = [(f[k], int(f[k + 1], 16)) for k in range(5, len(f) - 1, 2) if f[k] != "-"]
            rows.append((int(f[0]), f[1], int(f[2], 16), cm, co, ups))
    mods = {}
    by_mod, by_fn = collections.Counter(), collections.Counter()
    by_tid = collections.defaultdict(collections.Counter)
    by_caller, by_up = collections.Counter(), collections.Counter()
    outside = 0

    def module(mod):
        if mod not in mods:
            mods[mod] = Module(local.get(os.path.basename(mod), mod))
        return mods[mod]

    for tid, mod, off, cm, co, ups in rows:
        base = os.path.basename(mod)
        fn = module(mod).name(off) or "?"
        key = "%s (%s)" % (fn, base)
        by_mod[base] += 1
        by_fn[key] += 1
        by_tid[tid][key] += 1
        if base != home:
            outside += 1
            cb = os.path.basename(cm)
            who = "%s (%s)" % (module(cm).name(co) or "?", cb) if cm != "-" else "-"
            by_caller["%s <- %s" % (key, who)] += 1
            # the first that is not the static CUDA runtime's own
            names = [module(um).name(uo) or "?" for um, uo in ups]
            own = [x for x in names if not x.startswith(("libcudart_static", "cuda"))]
            up = " < ".join(own[:2]) if own else names[0] if names else "-"
            by_up["%s <- %s" % (base, up)] += 1
    n = len(rows)
    # a thread's timer fires at most once a scheduler tick (HZ 250: 4 ms),
    # so a run has fewer samples than CPU time / interval: shares hold,
    # milliseconds would not
    print("%d samples (a thread's CPU time every %d us, at most once a tick)" % (n, us))
    print("\nby module:")
    table(by_mod, 12, n)
    print("\nby function (self):")
    table(by_fn, top, n)
    print("\noutside %s (%d samples), with the function at the stack pointer:" % (home, outside))
    table(by_caller, top, n)
    print("\noutside %s, by the first %s function up the stack (its call into the module):" % (home, home))
    table(by_up, top, n)
    print("\nthreads (largest first, up to 40): samples, then the thread's top functions")
    for tid, cnt in sorted(by_tid.items(), key=lambda t: -sum(t[1].values()))[:40]:
        s = sum(cnt.values())
        tops = ", ".join("%s %.0f%%" % (k, 100.0 * c / s) for k, c in cnt.most_common(3))
        print("  %7d %6d  %s" % (tid, s, tops))


if __name__ == "__main__":
    main()
