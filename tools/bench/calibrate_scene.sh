#!/bin/bash
# calibrate_scene.sh: the confidence on the scene tier's cases (issue 28),
# generated from other images than the public scene tier's.  Downloads two
# Debian wallpaper packages (apt-get download: nothing is installed), takes
# eight posters and four large photographs that the public scene tier does
# not use, makes with ../shared/bench/gen_scene.py (the scene tier's own
# generator, another seed) the poster inside larger scenes (wholly and cut by
# the frame), views sharing part of a photograph, negatives and the drifting
# poster's video, runs gmatch with --min-confidence 0 per model and prints
# the confidence of correct answers (< 3 px mean error over the region the
# two images share, as ../shared/bench/score.py measures), wrong ones
# (>= 10 px) and negatives, and what candidate thresholds keep.
#
# usage: tools/bench/calibrate_scene.sh GMATCH SEED [MODEL...]   (default
#        models: auto similarity); needs python3-opencv, ffmpeg and the
#        network to Debian.  KEEP=1 keeps the generated folder.
set -eu
gm=$1 seed=$2
shift 2
models=${*:-auto similarity}
here=$(cd "$(dirname "$0")" && pwd)
bench=$here/../../../shared/bench
. "$here/wallpapers.sh"
wallpapers_setup calibrate_scene.sh
# none of these is in the public scene tier (make_scene.sh: FallenLeaf,
# EveningGlow, OneStandsOut, Grey, ColdRipple, Autumn, FlyingKonqui, Path,
# BytheWater, Shell)
posters=("$w/Volna/contents/images/5120x2880.jpg" "$w/SafeLanding/contents/images/5120x2880.jpg"
         "$w/Altai/contents/images/5120x2880.png" "$w/Kokkini/contents/images/3840x2160.png"
         "$b/the-mouse.jpg" "$b/rhythm.jpg" "$b/goldfish.png" "$b/calla.png")
large=("$w/Canopee/contents/images/3840x2160.png" "$w/IceCold/contents/images/5120x2880.png"
       "$b/city.png" "$b/desert.png")
mapfile -t posters < <(named "${posters[@]}")
mapfile -t large < <(named "${large[@]}")
/usr/bin/python3 "$bench/gen_scene.py" "$tmp/scene" "$seed" 4 2 4 "${posters[@]}" -- "${large[@]}" >/dev/null
mans=("$tmp"/scene/*.jsonl)
echo "calibrate_scene.sh: $(cat "${mans[@]}" | wc -l) queries and frames, seed $seed, $(date -u +%Y-%m-%d)"
for model in $models; do
  : > "$tmp/res.jsonl"
  for man in "${mans[@]}"; do
    for ref in $(sed 's/.*"ref": "\([^"]*\)".*/\1/' "$man" | sort -u); do
      qs=$(grep "\"ref\": \"$ref\"" "$man" | sed 's/.*"query": "\([^"]*\)".*/\1/' | sort -u | sed "s#^#$tmp/scene/#")
      # shellcheck disable=SC2086
      "$gm" --format json --min-confidence 0 --model "$model" "$tmp/scene/$ref" $qs >> "$tmp/res.jsonl" || true
    done
  done
  echo
  echo "== --model $model"
  /usr/bin/python3 - "$bench" "$tmp/res.jsonl" "${mans[@]}" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[1])
import cv2
import numpy as np
from score import shared_points, apply
res = {}
for r in map(json.loads, open(sys.argv[2])):
    res[(os.path.basename(r["query"]), int(r.get("frame") or 0))] = r
rows, wrong, neg = {}, [], []
for man in sys.argv[3:]:
    d = os.path.dirname(man)
    for m in map(json.loads, open(man)):
        r = res.get((m["query"], int(m.get("frame", 0))))
        if r is None or r["status"] == "error":
            continue
        c = r["confidence"]
        if m["expect"] == "none":
            neg.append(c)
            if c >= 0.25:
                print("  negative %s %s at %.3f" % (m["query"], m.get("frame", ""), c))
            continue
        if "matrix" not in r:
            rows.setdefault(m["tier"], [])
            continue
        w, h = (m["w"], m["h"]) if "w" in m else r["query_size"]
        rw, rh = r["ref_size"]
        T = m.get("H") or m.get("T")
        p = shared_points(T, w, h, rw, rh)
        e = float(np.linalg.norm(apply(T, p) - apply(r["matrix"], p), axis=1).mean())
        if e < 3:
            rows.setdefault(m["tier"], []).append(c)
        elif e >= 10:
            wrong.append((c, m["query"], m.get("frame", ""), round(e, 1)))
def q(v, p):
    return sorted(v)[int(p * (len(v) - 1))] if v else float("nan")
good = []
for t, v in sorted(rows.items()):
    print("correct %-10s %3d: median %.3f, p5 %.3f" % (t, len(v), q(v, 0.5), q(v, 0.05)))
    good += v
print("wrong (>= 10 px) %d, highest %.3f %s" % (len(wrong), max([x[0] for x in wrong], default=0),
                                                sorted(wrong, reverse=True)[:3]))
print("negatives %d, highest %.3f" % (len(neg), max(neg, default=0)))
for th in (0.2, 0.25, 0.3, 0.35, 0.4):
    print("at %.2f: %d correct kept, %d wrong and %d negatives reported" %
          (th, sum(c >= th for c in good), sum(x[0] >= th for x in wrong), sum(c >= th for c in neg)))
PY
done
