#!/usr/bin/env python3
"""vsum.py: a run's per-query times from gmatch -v, summed up.

    gmatch -v ... 2> run.log; tools/bench/vsum.py run.log [more.log ...]

gmatch -v writes a line a query (a still, or a frame under -v -v) on stderr:
"decode D ms, edges E, ..., match total T ms (host H, waiting for the device
W in N waits)".  This prints, for each file, the number of such lines, the
mean, median and 90th percentile of the match total, the host time, the
time waiting for the device and the waits, and each stage's mean: where a
query's time went, so that a throughput comes with its bound (a lane's time
a query against the device's).  Lines of other kinds are skipped; a file
without query lines is an error (exit 1).
"""
import re
import statistics
import sys

TOTAL = re.compile(r"match total ([\d.]+) ms \(host ([\d.]+), waiting for the device "
                   r"([\d.]+) in (\d+) waits\)")
STAGE = re.compile(r"\b(decode|edges|bases|tables|vote|reduce|verify|polish|decide) "
                   r"([\d.]+)(?: ms)?[,;]")


def p90(v):
    s = sorted(v)
    return s[min(len(s) - 1, int(0.9 * len(s)))]


def summary(path):
    cols = {"total": [], "host": [], "waiting": [], "waits": []}
    stages = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = TOTAL.search(line)
            if not m:
                continue
            for k, v in zip(cols, m.groups()):
                cols[k].append(float(v))
            for name, v in STAGE.findall(line[:m.start()]):
                stages.setdefault(name, []).append(float(v))
    if not cols["total"]:
        return None
    out = ["%s: %d queries" % (path, len(cols["total"]))]
    for k, v in cols.items():
        unit = "" if k == "waits" else " ms"
        out.append("  %-8s mean %8.2f  median %8.2f  p90 %8.2f%s" %
                   (k, statistics.mean(v), statistics.median(v), p90(v), unit))
    out.append("  stages (mean ms): " +
               ", ".join("%s %.2f" % (k, statistics.mean(v)) for k, v in stages.items()))
    return "\n".join(out)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    rc = 0
    for path in argv[1:]:
        try:
            s = summary(path)
        except OSError as e:
            sys.stderr.write("vsum.py: %s: %s\n" % (path, e.strerror))
            rc = 1
            continue
        if s is None:
            sys.stderr.write("vsum.py: %s: no query lines (was gmatch run with -v?)\n" % path)
            rc = 1
            continue
        print(s)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
