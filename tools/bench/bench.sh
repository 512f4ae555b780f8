#!/bin/bash
# Benchmark: gmatch against OpenCV SIFT and ORB (+RANSAC) on the public bench,
# in one run on one machine.  Prints each aligner's score table (score.py),
# the median and p90 time per query (time_ms of each result line) and the
# peak memory of the largest process (GNU time, when /usr/bin/time exists).
#
# usage: tools/bench/bench.sh [BENCHDIR] [GMATCH] [-- extra gmatch args]
#   BENCHDIR  default ../shared/bench (stills/, video/, real/; or a folder
#             holding photo/, as ../shared/bench/make_photo.sh makes it)
#   GMATCH    default build/gmatch
# Env: PARTS="stills real" limits the parts run (default: stills real);
#      PEERS="sift orb" the OpenCV peers (empty to skip);
#      MODELS="similarity homography" the gmatch --model runs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bench=${1:-$top/../shared/bench}
gm=${2:-$top/build/gmatch}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
extra=("$@")
bench=$(cd "$bench" && pwd)
# run.sh, score.py and the OpenCV peer live in the shared bench, whatever
# folder of tiers is scored
kit=$(cd "$top/../shared/bench" && pwd)
parts=${PARTS:-stills real}
peers=${PEERS-sift orb}
models=${MODELS-similarity homography}
py=${PYTHON:-}
for c in /usr/bin/python3 python3; do
  [ -n "$py" ] && break
  "$c" -c 'import cv2' 2>/dev/null && py=$c
done
[ -n "$py" ] || { echo "bench.sh: no python3 with OpenCV (apt-get install python3-opencv)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/b"
for p in $parts; do ln -s "$bench/$p" "$out/b/$p"; done

echo "machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d)"
echo "bench:   $bench ($parts)"
run_one() { # name cmd...
  local name=$1; shift
  echo
  echo "== $name"
  # peak memory: GNU time's maximum resident set of the largest process
  # (run.sh's children: one aligner process per reference)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$out/$name.rss" "$kit/run.sh" "$out/b" "$out/$name.jsonl" "$@" \
      2>"$out/$name.err" | grep -v '^wall '
    echo "peak memory: $(( $(tail -1 "$out/$name.rss") / 1024 )) MiB (largest process)"
  else
    "$kit/run.sh" "$out/b" "$out/$name.jsonl" "$@" 2>"$out/$name.err" | grep -v '^wall '
  fi
  "$py" - "$out/$name.jsonl" <<'PY'
import json, sys
t = []
for l in open(sys.argv[1]):
    try:
        r = json.loads(l)
    except ValueError:
        continue
    if isinstance(r.get("time_ms"), (int, float)):
        t.append(r["time_ms"])
t.sort()
if t:
    med = t[len(t) // 2] if len(t) % 2 else 0.5 * (t[len(t) // 2 - 1] + t[len(t) // 2])
    p90 = t[min(len(t) - 1, int(0.9 * len(t) + 0.5) - 1)]
    print("time per query: median %.2f ms, p90 %.2f ms (%d queries)" % (med, p90, len(t)))
PY
}
for m in $models; do
  run_one "gmatch-$m" "$gm" --format json --device cpu --model "$m" "${extra[@]}"
done
for k in $peers; do
  run_one "opencv-$k" "$py" "$kit/opencv_match.py" "$k"
done
