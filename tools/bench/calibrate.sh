#!/bin/bash
# Confidence calibration: generates queries with ground truth from the given
# source images (../shared/bench/gen_bench.py: easy, medium, hard and one
# negative per source), runs gmatch with --min-confidence 0 and prints the
# confidence distribution of correct answers (< 3 px), wrong ones (>= 10 px)
# and negatives, with the error rates of candidate thresholds.
#
# usage: tools/bench/calibrate.sh GMATCH SEED QUERIES_PER_SOURCE SRC1 [SRC2 ...]
#   e.g. tools/bench/calibrate.sh build/gmatch 11 5 /usr/share/doc/opencv-doc/examples/data/{messi5,graf1,starry_night}.jpg
# Env: GMATCH_ARGS extra gmatch options (e.g. "--model homography").
set -eu
gm=$1 seed=$2 per=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
gen=${GEN_BENCH:-$here/../../../shared/bench/gen_bench.py}
py=/usr/bin/python3
"$py" -c 'import cv2' 2>/dev/null || py=python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" "$gen" "$out" "$seed" "$per" "$@" >/dev/null
for ref in $(sed 's/.*"ref": "\([^"]*\)".*/\1/' "$out/manifest.jsonl" | sort -u); do
  qs=$(grep "\"ref\": \"$ref\"" "$out/manifest.jsonl" | sed 's/.*"query": "\([^"]*\)".*/\1/' | sed "s#^#$out/#")
  # shellcheck disable=SC2086
  "$gm" --format json --min-confidence 0 ${GMATCH_ARGS:-} "$out/$ref" $qs >> "$out/res.jsonl" || true
done
"$py" - "$out/res.jsonl" "$out/manifest.jsonl" <<'PY'
import json, os, sys
import cv2
import numpy as np
res = {os.path.basename(r["query"]): r for r in map(json.loads, open(sys.argv[1]))}
good, wrong, neg, fail = [], [], [], 0
d = os.path.dirname(sys.argv[2])
for l in open(sys.argv[2]):
    m = json.loads(l)
    r = res.get(m["query"])
    if r is None or r["status"] == "error":
        fail += 1
        continue
    c = r["confidence"]
    if m["expect"] == "none":
        neg.append(c)
        continue
    if r["status"] != "match":
        wrong.append(c)
        continue
    q = cv2.imread(os.path.join(d, m["query"]), cv2.IMREAD_GRAYSCALE)
    h, w = q.shape
    pts = np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], float)
    def ap(G):
        G = np.array(G, float)
        if G.shape == (3, 3):
            p = np.c_[pts, np.ones(4)] @ G.T
            return p[:, :2] / p[:, 2:]
        return pts @ G[:, :2].T + G[:, 2]
    e = float(np.linalg.norm(ap(m["T"]) - ap(r["matrix"]), axis=1).mean())
    (good if e < 3 else wrong if e >= 10 else []).append(c)
    if e >= 3 and os.environ.get("CAL_VERBOSE"): print("  wrong %-30s err %8.1f conf %.3f" % (m["query"], e, c))
def q(a):
    return "n=%d" % len(a) + ("" if not a else " min %.3f p5 %.3f median %.3f max %.3f" % (
        min(a), np.percentile(a, 5), np.median(a), max(a)))
print("correct (<3 px):  ", q(good))
print("wrong (>=10 px):  ", q(wrong))
print("negatives:        ", q(neg))
print("errors/missing:    %d" % fail)
print("threshold  correct-kept  wrong-reported  negatives-reported")
for t in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5):
    print("%9.2f  %12d  %14d  %18d" % (t, sum(c >= t for c in good), sum(c >= t for c in wrong),
                                       sum(c >= t for c in neg)))
PY
