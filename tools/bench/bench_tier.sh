#!/bin/bash
# bench_tier.sh: one generated tier (photo/ of make_photo.sh, scene/ of
# make_scene.sh) and the public tiers, for gmatch beside OpenCV's SIFT
# (+ RANSAC) and SIFT-H (SIFT without a feature cap + MAGSAC++ homography),
# in one run on one machine: each aligner's score table, median and p90 time
# per query, peak memory (tools/bench/bench.sh does the runs).
# tools/bench/bench_photo.sh runs it for the photo tier, then the
# reference's preparation as it grows.
#
# usage: tools/bench/bench_tier.sh TIER [DIR] [GMATCH]
#   TIER    photo or scene
#   DIR     the folder holding TIER/ (default ../TIER-bench; make it with
#           ../shared/bench/make_TIER.sh ../TIER-bench)
#   GMATCH  default build/gmatch
# Env: MODELS (gmatch --model runs, default "similarity auto"), PEERS_TIER
# (default "sift sift-h"), PEERS_PUBLIC (default "sift"), SKIP_PUBLIC=1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tier=${1:?usage: bench_tier.sh photo|scene [DIR] [GMATCH]}
dir=${2:-$top/../$tier-bench}
gm=${3:-$top/build/gmatch}
[ -d "$dir/$tier" ] || { echo "bench_tier.sh: no $dir/$tier (run ../shared/bench/make_$tier.sh $dir)" >&2; exit 2; }
models=${MODELS:-similarity auto}
echo "# gmatch $tier benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m)"
echo
echo "## $tier tier ($dir)"
PARTS=$tier MODELS="$models" PEERS="${PEERS_TIER-sift sift-h}" "$here/bench.sh" "$dir" "$gm"
if [ "${SKIP_PUBLIC:-0}" != 1 ]; then
  echo
  echo "## public tiers (../shared/bench)"
  PARTS="stills video real" MODELS="$models" PEERS="${PEERS_PUBLIC-sift}" "$here/bench.sh" \
    "$top/../shared/bench" "$gm"
fi
