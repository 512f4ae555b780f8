#!/bin/bash
# bench_scene.sh: the scene tier (the reference inside a larger query, cut by
# the frame, partial overlap, the object video; ../shared/bench/make_scene.sh)
# and the public tiers, for gmatch beside OpenCV's SIFT (+ RANSAC) and SIFT-H
# (SIFT without a feature cap + MAGSAC++ homography), in one run on one
# machine: each aligner's score table, median and p90 time per query, peak
# memory (tools/bench/bench.sh does the runs).  docs/scene.md has the figures.
#
# usage: tools/bench/bench_scene.sh [SCENE_BENCH] [GMATCH]
#   SCENE_BENCH  the folder holding scene/ (default ../scene-bench; make it
#                with ../shared/bench/make_scene.sh ../scene-bench)
#   GMATCH       default build/gmatch
# Env: MODELS (gmatch --model runs, default "similarity auto"), PEERS_SCENE
# (default "sift sift-h"), PEERS_PUBLIC (default "sift"), SKIP_PUBLIC=1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
scene=${1:-$top/../scene-bench}
gm=${2:-$top/build/gmatch}
[ -d "$scene/scene" ] || { echo "bench_scene.sh: no $scene/scene (run ../shared/bench/make_scene.sh $scene)" >&2; exit 2; }
models=${MODELS:-similarity auto}
echo "# gmatch scene benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m)"
echo
echo "## scene tier ($scene)"
PARTS=scene MODELS="$models" PEERS="${PEERS_SCENE-sift sift-h}" "$here/bench.sh" "$scene" "$gm"
if [ "${SKIP_PUBLIC:-0}" != 1 ]; then
  echo
  echo "## public tiers (../shared/bench)"
  PARTS="stills video real" MODELS="$models" PEERS="${PEERS_PUBLIC-sift}" "$here/bench.sh" \
    "$top/../shared/bench" "$gm"
fi
