#!/usr/bin/env python3
"""seeds.py: how much gmatch's answers depend on --seed (issue "every match
with its error bar": the same status for at least 99% of the queries and
positions within 0.5 px).

usage: seeds.py RUN1.jsonl RUN2.jsonl [RUN...]

Each RUN: gmatch --format json lines of the same queries under another
--seed, or of tools/bench/invisible.py's copy of them (queries are matched
by their name without its extension).  Prints the share of queries whose
status is the same in every run, the queries whose status differs (M
match, n none, per run, and the confidences), and the matches whose
corners lie more than 0.5 px apart between runs.  Standard library only.
"""
import json
import math
import os
import sys


def load(path):
    out = {}
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            stem = os.path.splitext(os.path.basename(r["query"]))[0]
            out[(stem, r.get("frame", 0))] = r
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = [load(p) for p in sys.argv[1:]]
    keys = sorted(set().union(*runs))
    same, differ, apart = 0, [], []
    for k in keys:
        st = [r.get(k, {}).get("status") for r in runs]
        if len(set(st)) == 1:
            same += 1
            if st[0] == "match":
                cs = [r[k]["corners"] for r in runs]
                dev = max(math.hypot(a[0] - b[0], a[1] - b[1]) for c in cs for a, b in zip(c, cs[0]))
                if dev > 0.5:
                    apart.append((k[0], k[1], round(dev, 2)))
        else:
            differ.append((k[0], k[1], "".join("M" if s == "match" else "n" for s in st),
                           [round(r.get(k, {}).get("confidence", 0.0), 2) for r in runs]))
    matches = sum(1 for k in keys if all(r.get(k, {}).get("status") == "match" for r in runs))
    print("SEEDS runs=%d queries=%d same_status=%d (%.3f) differ=%d matches_in_all=%d "
          "positions_over_0.5px=%d" % (len(runs), len(keys), same, same / max(len(keys), 1),
                                       len(differ), matches, len(apart)))
    for d in differ:
        print("  status %s frame %d: %s %s" % d)
    for a in apart:
        print("  apart %s frame %d: %.2f px" % a)


if __name__ == "__main__":
    main()
