#!/bin/bash
# bench_video.sh: video throughput, CPU path, end to end (decode, gray,
# matching, output; the reference's preparation included), in frames per
# second, beside OpenCV SIFT + RANSAC (../shared/bench/opencv_match.py) on
# the same videos and machine.
#
# usage: tools/bench_video.sh [GMATCH] [FRAMES]
#   GMATCH  the binary (default build/gmatch); FRAMES per generated video
#   (default 90).  Videos: the public bench video (640x360) and 1280x720 and
#   1920x1080 flights over the same reference, generated here with
#   ../shared/bench/gen_video.py (needs python3-opencv and the ffmpeg program).
# Also prints gmatch's score on each video (../shared/bench/score.py).
# The environment variables GMATCH_WORKERS (matcher threads) and
# GMATCH_FRAME_THREADS (OpenMP threads per frame) are passed through to
# compare thread layouts.
set -euo pipefail
cd "$(dirname "$0")/.."
gm=${1:-build/gmatch}
n=${2:-90}
py=/usr/bin/python3
bench=../shared/bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref=$bench/video/ref_building.jpg
cp "$bench/video/building.mp4" "$bench/video/building.jsonl" "$tmp/"
for size in "1280 720" "1920 1080"; do
    set -- $size
    "$py" "$bench/gen_video.py" "$ref" data/bench/ref_gravel.jpg "$tmp/g$2" "v$2" "$1" "$2" "$n" 1
    mv "$tmp/g$2/v$2.mp4" "$tmp/g$2/v$2.jsonl" "$tmp/"
done
now() { date +%s.%N; }
printf '%-14s %7s %12s %12s %10s\n' video frames "gmatch fps" "SIFT fps" "gmatch ok@3px/fp"
for v in building v720 v1080; do
    frames=$(wc -l < "$tmp/$v.jsonl")
    t0=$(now)
    "$gm" -q --format json "$ref" "$tmp/$v.mp4" > "$tmp/$v.gm.jsonl" || true
    t1=$(now)
    "$py" "$bench/opencv_match.py" sift "$ref" "$tmp/$v.mp4" > "$tmp/$v.sift.jsonl"
    t2=$(now)
    score=$("$py" "$bench/score.py" "$tmp/$v.gm.jsonl" "$tmp/$v.jsonl" |
            awk '/^SUMMARY/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); s[kv[1]] = kv[2] } }
                 END { printf "%s/%s", s["ok@3px"], s["false_pos"] }')
    awk -v v="$v" -v f="$frames" -v a="$t0" -v b="$t1" -v c="$t2" -v s="$score" \
        'BEGIN { printf "%-14s %7d %12.1f %12.1f %10s\n", v, f, f / (b - a), f / (c - b), s }'
done
echo "($(nproc) cores; $(uptime | sed 's/.*load/load/'))"
