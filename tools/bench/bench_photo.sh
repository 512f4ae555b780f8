#!/bin/bash
# bench_photo.sh: the photo tier and the public tiers for gmatch beside
# OpenCV's SIFT (+ RANSAC similarity) and SIFT-H (SIFT without a feature cap
# + MAGSAC++ homography, the strong and slow peer for photographs), in one
# run on one machine (tools/bench/bench_tier.sh); then reference preparation
# time and memory as the reference grows (1, 6 and 24 megapixels).
#
# usage: tools/bench/bench_photo.sh [PHOTO_BENCH] [GMATCH]
#   PHOTO_BENCH  the folder holding photo/ (default ../photo-bench; make it
#                with ../shared/bench/make_photo.sh ../photo-bench)
#   GMATCH       default build/gmatch
# Env: MODELS (gmatch --model runs, default "similarity homography", plus
# "auto" when the binary knows it), PEERS_PHOTO (default "sift sift-h"),
# PEERS_PUBLIC (default "sift"), SKIP_PUBLIC=1, SKIP_PREP=1.
# Needs python3-opencv (the peers, the scorer, the resized references) and
# GNU time (peak memory).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
photo=${1:-$top/../photo-bench}
gm=${2:-$top/build/gmatch}
[ -d "$photo/photo" ] || { echo "bench_photo.sh: no $photo/photo (run ../shared/bench/make_photo.sh $photo)" >&2; exit 2; }
models=${MODELS:-similarity homography}
# --model auto where this gmatch knows it
if ! "$gm" --model auto 2>&1 | grep -q "is not similarity"; then
  case " $models " in *" auto "*) ;; *) models="$models auto" ;; esac
fi

MODELS="$models" PEERS_TIER="${PEERS_PHOTO-sift sift-h}" "$here/bench_tier.sh" photo "$photo" "$gm"
[ "${SKIP_PREP:-0}" = 1 ] && exit 0

# Reference preparation as the reference grows: the largest photo-tier
# reference resized to 1, 6 and 24 megapixels (area-averaged down, cubic up).
echo
echo "## reference preparation (gmatch --device cpu -v REF data/query.jpg)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
big=$(ls -S "$photo"/photo/ref_*.jpg | head -1)
/usr/bin/python3 - "$big" "$tmp" <<'PY'
import sys, cv2
im = cv2.imread(sys.argv[1], cv2.IMREAD_GRAYSCALE)
h, w = im.shape
for mp in (1, 6, 24):
    s = (mp * 1e6 / (w * h)) ** 0.5
    size = (round(w * s), round(h * s))
    interp = cv2.INTER_AREA if s < 1 else cv2.INTER_CUBIC
    cv2.imwrite(f"{sys.argv[2]}/ref{mp}.jpg", cv2.resize(im, size, interpolation=interp),
                [cv2.IMWRITE_JPEG_QUALITY, 92])
PY
echo "| reference | size | prepare (ms) | peak RSS (MiB) |"
echo "|---|---|---|---|"
for mp in 1 6 24; do
  for model in $models; do
    line=$(/usr/bin/time -f 'RSS %M' "$gm" --device cpu -v --model "$model" "$tmp/ref$mp.jpg" \
           "$top/data/query.jpg" 2>&1 >/dev/null | grep -E 'prepare|^RSS')
    size=$(echo "$line" | sed -n 's/.*reference \([0-9x]*\):.*/\1/p')
    prep=$(echo "$line" | sed -n 's/.*prepare \([0-9.]*\) ms.*/\1/p')
    rss=$(echo "$line" | sed -n 's/^RSS \([0-9]*\)/\1/p')
    echo "| $mp MP, --model $model | $size | $prep | $(( ${rss:-0} / 1024 )) |"
  done
done
