#!/bin/bash
# calibrate_photo.sh: the confidence on photographs other than the photo
# tier's.  Downloads two Debian wallpaper packages that the public photo tier
# does not use (apt-get download: nothing is installed), makes crops and
# tilted views of twelve of their photographs and illustrations at native
# resolution with ../shared/bench/gen_photo.py (negatives from four others),
# runs gmatch with --min-confidence 0 per model and prints the confidence of
# correct answers (< 3 px mean corner error), wrong ones (>= 10 px) and
# negatives, and what candidate thresholds keep.
#
# SET=repeats: instead, illustrations of repeated shapes, stripes and long
# parallel curves from desktop-base and gnome-backgrounds (repeats_fetch in
# wallpapers.sh), 6 crops and 4 tilted views each: the images where a second
# placement explains a query nearly as well (docs/calibration.md).
#
# usage: [SET=repeats] tools/bench/calibrate_photo.sh GMATCH SEED [MODEL...]
#        (default models: similarity auto); needs python3-opencv and the
#        network to Debian.
set -eu
gm=$1 seed=$2
shift 2
models=${*:-similarity auto}
here=$(cd "$(dirname "$0")" && pwd)
gen=$here/../../../shared/bench/gen_photo.py
. "$here/wallpapers.sh"
if [ "${SET:-}" = repeats ]; then
    tmp=$(mktemp -d)
    if [ -n "${KEEP:-}" ]; then echo "calibrate_photo.sh: keeping $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
    repeats_fetch "$tmp"
    refs=("${rep_refs[@]}") negs=("${rep_negs[@]}") crops=6 tilts=4
else
wallpapers_setup calibrate_photo.sh
crops=4 tilts=3
refs=("$w/Volna/contents/images/5120x2880.jpg" "$w/Shell/contents/images/5120x2880.jpg"
      "$w/SafeLanding/contents/images/5120x2880.jpg" "$w/MilkyWay/contents/images/5120x2880.png"
      "$w/Altai/contents/images/5120x2880.png" "$w/Canopee/contents/images/3840x2160.png"
      "$w/Kokkini/contents/images/3840x2160.png" "$w/Cluster/contents/images/3840x2160.png"
      "$b/the-mouse.jpg" "$b/rhythm.jpg" "$b/city.png" "$b/desert.png")
negs=("$w/IceCold/contents/images/5120x2880.png" "$w/Opal/contents/images/3840x2160.png"
      "$b/goldfish.png" "$b/calla.png")
mapfile -t refs < <(named "${refs[@]}")
mapfile -t negs < <(named "${negs[@]}")
fi
/usr/bin/python3 "$gen" "$tmp/photo" "$seed" $crops $tilts "${refs[@]}" -- "${negs[@]}" >/dev/null
man=$tmp/photo/manifest.jsonl
echo "calibrate_photo.sh: $(wc -l < "$man") queries over ${#refs[@]} references, seed $seed, $(date -u +%Y-%m-%d)"
for model in $models; do
  : > "$tmp/res.jsonl"
  for ref in $(sed 's/.*"ref": "\([^"]*\)".*/\1/' "$man" | sort -u); do
    qs=$(grep "\"ref\": \"$ref\"" "$man" | sed 's/.*"query": "\([^"]*\)".*/\1/' | sed "s#^#$tmp/photo/#")
    # shellcheck disable=SC2086
    "$gm" --format json --min-confidence 0 --model "$model" "$tmp/photo/$ref" $qs >> "$tmp/res.jsonl" || true
  done
  echo
  echo "== --model $model"
  /usr/bin/python3 - "$tmp/res.jsonl" "$man" <<'PY'
import json, os, sys
import cv2
import numpy as np
res = {os.path.basename(r["query"]): r for r in map(json.loads, open(sys.argv[1]))}
d = os.path.dirname(sys.argv[2])
rows = {"crop": [], "tilt": []}
wrong, neg, none_right = [], [], 0
for m in map(json.loads, open(sys.argv[2])):
    r = res.get(m["query"])
    if r is None or r["status"] == "error":
        continue
    c = r["confidence"]
    if m["expect"] == "none":
        neg.append(c)
        if c >= 0.25:
            print("  negative %s at %.3f" % (m["query"], c))
        continue
    if "matrix" not in r:
        continue
    h, w = cv2.imread(os.path.join(d, m["query"]), cv2.IMREAD_GRAYSCALE).shape
    T = np.array(m["H"] if "H" in m else m["T"] + [[0, 0, 1]], float)
    M = np.array(r["matrix"], float)
    if M.shape == (2, 3):
        M = np.vstack([M, [0, 0, 1]])
    e = []
    for x, y in ((0, 0), (w - 1, 0), (w - 1, h - 1), (0, h - 1)):
        a, b = T @ [x, y, 1], M @ [x, y, 1]
        e.append(np.hypot(*(a[:2] / a[2] - b[:2] / b[2])))
    e = float(np.mean(e))
    if e < 3:
        rows[m["tier"]].append(c)
    elif e >= 10:
        wrong.append((c, m["query"], round(e, 1)))
def q(v, p):
    return sorted(v)[int(p * (len(v) - 1))] if v else float("nan")
for t, v in rows.items():
    print("correct %-4s %3d: median %.3f, p5 %.3f" % (t, len(v), q(v, 0.5), q(v, 0.05)))
print("wrong (>= 10 px) %d, highest %.3f %s" % (len(wrong), max([w[0] for w in wrong], default=0),
                                                sorted(wrong, reverse=True)[:3]))
print("negatives %d, highest %.3f" % (len(neg), max(neg, default=0)))
good = rows["crop"] + rows["tilt"]
for th in (0.2, 0.25, 0.3, 0.35, 0.4):
    print("at %.2f: %d correct kept, %d wrong and %d negatives reported" %
          (th, sum(c >= th for c in good), sum(w[0] >= th for w in wrong), sum(c >= th for c in neg)))
PY
done
