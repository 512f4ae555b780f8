#!/bin/bash
# Integration: gmatch on data/bench (queries under known similarity transforms
# plus negatives).  Every positive must be found with a mean corner error under
# 3 px, every negative must be "none", and the output must be the same
# whatever the seed and the thread count.  data/large (small crops of a reference
# larger than the working size: the fine levels) likewise, except that one
# positive may be "none": never a wrong match, at most one missed.
# usage: tests/cli/accuracy.sh /path/to/gmatch   (from the repository root)
set -u
gm=${1:?usage: accuracy.sh GMATCH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for bench in data/bench data/large; do
: > "$tmp/t1.jsonl"
: > "$tmp/t2.jsonl"
allowed_none=0
[ "$bench" = data/large ] && allowed_none=1
for ref in $(sed 's/.*"ref": "\([^"]*\)".*/\1/' "$bench/manifest.jsonl" | sort -u); do
  qs=$(grep "\"ref\": \"$ref\"" "$bench/manifest.jsonl" | sed 's/.*"query": "\([^"]*\)".*/\1/' | sed "s#^#$bench/#")
  # shellcheck disable=SC2086
  "$gm" --format json --seed 7 --threads 1 "$bench/$ref" $qs >> "$tmp/t1.jsonl" || { echo "FAIL: gmatch exit $? on $ref"; fail=1; }
  # shellcheck disable=SC2086
  "$gm" --format json --threads 2 "$bench/$ref" $qs >> "$tmp/t2.jsonl" || fail=1
done
python3 - "$tmp/t1.jsonl" "$bench/manifest.jsonl" "$allowed_none" <<'PY' || fail=1
import json, os, sys
allowed_none = int(sys.argv[3])
res = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    res[os.path.basename(r["query"])] = r
bad = 0
for l in open(sys.argv[2]):
    m = json.loads(l)
    r = res.get(m["query"])
    if r is None:
        print("FAIL: no result for", m["query"]); bad += 1; continue
    if m["expect"] == "none":
        if r["status"] != "none":
            print("FAIL: %s: expected none, got %s" % (m["query"], r["status"])); bad += 1
        else:
            print("ok   %-36s none (confidence %.3f)" % (m["query"], r["confidence"]))
        continue
    if "H" in m:
        # a tilted view (a homography): "none" is right under a similarity;
        # a match must be within 3 px at the corners all the same
        if r["status"] == "none":
            print("ok   %-36s none (a tilted view)" % m["query"])
            continue
    if r["status"] != "match":
        if r["status"] == "none" and allowed_none > 0:
            allowed_none -= 1
            print("ok   %-36s none (one positive may be missed here)" % m["query"])
            continue
        print("FAIL: %s: expected a match, got %s" % (m["query"], r["status"])); bad += 1; continue
    # mean error of the query's corners (size from the JPEG's SOF marker)
    data = open(os.path.join(os.path.dirname(sys.argv[2]), m["query"]), "rb").read()
    i = 2
    while True:
        ln = int.from_bytes(data[i + 2:i + 4], "big")
        if data[i + 1] in (0xC0, 0xC1, 0xC2):
            h, w = int.from_bytes(data[i + 5:i + 7], "big"), int.from_bytes(data[i + 7:i + 9], "big")
            break
        i += 2 + ln
    T, M = m.get("T") or m["H"], r["matrix"]
    def ap(A, x, y):
        z = A[2][0] * x + A[2][1] * y + A[2][2] if len(A) == 3 else 1.0
        return ((A[0][0] * x + A[0][1] * y + A[0][2]) / z, (A[1][0] * x + A[1][1] * y + A[1][2]) / z)
    err = 0.0
    for x, y in ((0, 0), (w - 1, 0), (w - 1, h - 1), (0, h - 1)):
        (tx, ty), (mx, my) = ap(T, x, y), ap(M, x, y)
        err += ((tx - mx) ** 2 + (ty - my) ** 2) ** 0.5 / 4
    ok = err < 3.0
    print("%s %-36s corner error %.3f px" % ("ok  " if ok else "FAIL:", m["query"], err))
    bad += not ok
sys.exit(1 if bad else 0)
PY
# the same output under seed 7 and one thread as under the default seed and
# two (time_ms aside)
strip() { sed 's/"time_ms": *[0-9.e+-]*//' "$1"; }
if ! diff <(strip "$tmp/t1.jsonl") <(strip "$tmp/t2.jsonl") >/dev/null; then
  echo "FAIL: --seed 7 --threads 1 and --threads 2 differ"
  diff <(strip "$tmp/t1.jsonl") <(strip "$tmp/t2.jsonl") | head -5
  fail=1
fi
done
# --model homography and auto (three-point bases on top): never a wrong
# match on data/large, the crops still found, the negative none; auto's
# model key names the matrix's shape
qs=$(sed 's/.*"query": "\([^"]*\)".*/data\/large\/\1/' data/large/manifest.jsonl)
for model in homography auto; do
# shellcheck disable=SC2086
"$gm" --format json --model $model data/large/ref_mosaic.jpg $qs > "$tmp/h.jsonl" || fail=1
python3 - "$tmp/h.jsonl" data/large/manifest.jsonl $model <<'PY' || fail=1
import json, sys
res = {r["query"].rsplit("/", 1)[1]: r for r in map(json.loads, open(sys.argv[1]))}
bad, found = 0, 0
for m in map(json.loads, open(sys.argv[2])):
    r = res[m["query"]]
    if m["expect"] == "none":
        bad += r["status"] != "none"
        continue
    if r["status"] != "match":
        continue
    T, M = m.get("T") or m["H"], r["matrix"]
    if (len(M) == 3) != (r["model"] == "homography") or r["model"] == "auto" or \
            (sys.argv[3] == "homography" and r["model"] != "homography"):
        print("FAIL: %s: model %s with a %dx3 matrix" % (m["query"], r["model"], len(M))); bad += 1
    def ap(A, x, y):
        z = A[2][0] * x + A[2][1] * y + A[2][2] if len(A) == 3 else 1.0
        return ((A[0][0] * x + A[0][1] * y + A[0][2]) / z, (A[1][0] * x + A[1][1] * y + A[1][2]) / z)
    e = max(((ap(T, x, y)[0] - ap(M, x, y)[0]) ** 2 + (ap(T, x, y)[1] - ap(M, x, y)[1]) ** 2) ** 0.5
            for x, y in ((0, 0), (150, 0), (150, 130), (0, 130)))
    ok = e < 3
    found += ok and "T" in m
    bad += not ok
    print("%s %-36s %s (%s), corner error %.2f px" % ("ok  " if ok else "FAIL:", m["query"],
                                                       sys.argv[3], r["model"], e))
print("--model %s on data/large: %d crops found, %d wrong or false" % (sys.argv[3], found, bad))
sys.exit(1 if bad or found < 3 else 0)
PY
done
# --model homography always reports a homography, 3x3 (a similarity is one
# without perspective: the sample pair and data/bench's easy and medium
# queries are answered so), --model affine a 2x3 affine
for model in homography affine; do
"$gm" --format json --model $model data/ref.jpg data/query.jpg data/bench/ref_text.jpg > "$tmp/m.jsonl"
"$gm" --format json --model $model data/bench/ref_retina.jpg data/bench/q_retina_0*.jpg >> "$tmp/m.jsonl"
python3 - "$tmp/m.jsonl" $model <<'PY' || fail=1
import json, sys
rows, model = [json.loads(l) for l in open(sys.argv[1])], sys.argv[2]
assert sum(r["status"] == "match" for r in rows) == 4, [r["status"] for r in rows]
for r in rows:
    if r["status"] == "match":
        assert r["model"] == model and len(r["matrix"]) == (3 if model == "homography" else 2), r
        if model == "homography":
            assert r["matrix"][2][2] == 1.0, r
print("--model %s: %d lines, every match reported as %s" % (model, len(rows), model))
PY
done
[ $fail = 0 ] && echo "accuracy: all passed"
exit $fail
