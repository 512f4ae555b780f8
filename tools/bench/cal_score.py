#!/usr/bin/python3
"""cal_score.py: the reliability of gmatch's confidence and the coverage of
its uncertainty_px on a calibration set (docs/calibration.md).

usage: cal_score.py RESULTS.jsonl THRESHOLD MAX_UNCERTAINTY MANIFEST.jsonl [MANIFEST...]

RESULTS: gmatch --format json --min-confidence 0 lines for the manifests'
queries (the generators' manifests: ../shared/bench/gen_*.py).  Errors are
measured as ../shared/bench/score.py measures them (its functions are
imported): the mean distance, in reference pixels, between where the answer
and the truth put the corners of the region the two images share.  Prints:

- the reliability table: answers by confidence, and the share of them that
  are right (< 3 px), off (3-10 px) and wrong (>= 10 px), negatives apart;
- at THRESHOLD (the reporting threshold) and MAX_UNCERTAINTY (the bound
  above which an answer is "none"): the matches, the share of them whose
  error is within uncertainty_px (the promise: at least 95%), the quantiles
  of error / uncertainty_px, the wrong answers left and the right ones that
  the bound withholds.

ROWS=FILE also writes one tab-separated row per answer with a matrix (query,
tier, confidence, error, uncertainty_px, residual_px, model, votes).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "shared", "bench"))
import cv2  # noqa: E402
from score import apply, shared_points  # noqa: E402


def size(path, cache):
    if path not in cache:
        im = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        cache[path] = (im.shape[1], im.shape[0]) if im is not None else (None, None)
    return cache[path]


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    thr, umax = float(sys.argv[2]), float(sys.argv[3])
    got = {}
    for line in open(sys.argv[1]):
        if line.startswith("{"):
            r = json.loads(line)
            got[(os.path.basename(r["query"]), int(r.get("frame") or 0))] = r
    rows, negs, cache = [], [], {}
    for mp in sys.argv[4:]:
        d = os.path.dirname(mp)
        for m in map(json.loads, open(mp)):
            r = got.get((m["query"], int(m.get("frame", 0))))
            if r is None or r.get("status") == "error":
                continue
            if m["expect"] == "none":
                negs.append(r)
                continue
            if not r.get("matrix"):
                continue
            G = m.get("T") or m.get("H")
            if "w" in m:
                w, h = m["w"], m["h"]
            else:
                w, h = size(os.path.join(d, m["query"]), cache)
            c = shared_points(G, w, h, *size(os.path.join(d, m["ref"]), cache))
            e = float(np.linalg.norm(apply(G, c) - apply(r["matrix"], c), axis=1).mean())
            rows.append((m["query"], m.get("tier", ""), r["confidence"], e,
                         r.get("uncertainty_px", float("nan")), r.get("residual_px", float("nan")),
                         r.get("model", ""), r.get("votes", 0)))
    if os.environ.get("ROWS"):
        with open(os.environ["ROWS"], "w") as f:
            for row in rows:
                f.write("\t".join(str(x) for x in row) + "\n")
    print("reliability: answers by confidence (positives), right < 3 px, off 3-10, wrong >= 10")
    print("%-11s %5s %6s %5s %6s %8s" % ("confidence", "n", "right", "off", "wrong", "% right"))
    edges = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001]
    for lo, hi in zip(edges, edges[1:]):
        b = [x for x in rows if lo <= x[2] < hi]
        right = sum(x[3] < 3 for x in b)
        wrong = sum(x[3] >= 10 for x in b)
        print("%4.1f - %3.1f  %5d %6d %5d %6d %8s" % (lo, min(hi, 1.0), len(b), right,
                                                  len(b) - right - wrong, wrong,
                                                  "%.1f" % (100.0 * right / len(b)) if b else "-"))
    nn = [r["confidence"] for r in negs]
    print("negatives: %d, at or above %.2f: %d (highest %.3f)" % (len(nn), thr, sum(c >= thr for c in nn),
                                                               max(nn, default=0.0)))
    rep = [x for x in rows if x[2] >= thr]
    kept = [x for x in rep if x[4] <= umax]
    within = [x for x in kept if x[3] <= x[4]]
    print("at confidence >= %.2f: %d answers; uncertainty_px <= %g: %d matches" % (thr, len(rep), umax,
                                                                              len(kept)))
    if kept:
        q = np.array([x[3] / x[4] if x[4] > 0 else np.inf for x in kept])
        print("error within uncertainty_px: %d of %d (%.3f); error/uncertainty p50 %.2f p90 %.2f "
              "p95 %.2f p99 %.2f max %.2f" % (len(within), len(kept), len(within) / len(kept),
                                              *np.percentile(q, [50, 90, 95, 99, 100])))
        u = np.array([x[4] for x in kept])
        print("uncertainty_px of the matches: p5 %.2f median %.2f p95 %.2f" % tuple(np.percentile(u, [5, 50, 95])))
    print("wrong matches (>= 10 px) left: %d %s" % (
        sum(x[3] >= 10 for x in kept),
        sorted(((round(x[3], 1), x[0], round(x[2], 3), round(x[4], 2)) for x in kept if x[3] >= 10),
               reverse=True)[:5]))
    print("withheld by the bound: %d right (< 3 px), %d wrong (>= 10 px)" % (
        sum(x[3] < 3 and x[4] > umax for x in rep), sum(x[3] >= 10 and x[4] > umax for x in rep)))


if __name__ == "__main__":
    main()
