#!/bin/bash
# bench_video.sh: video throughput, end to end (decode, gray, matching,
# output), in frames per second, per device, beside OpenCV SIFT + RANSAC
# (../shared/bench/opencv_match.py) on the same videos and machine.
#
# usage: tools/bench/bench_video.sh [GMATCH] [FRAMES]    make the videos, then run
#        tools/bench/bench_video.sh make DIR [FRAMES]     only make them, into DIR
#        tools/bench/bench_video.sh run DIR [GMATCH]      only run, on DIR's videos
#   GMATCH  the binary (default build/gmatch); FRAMES per generated video
#   (default 90).  Videos: the public bench video (640x360, 120 frames) and
#   640x360, 1280x720 and 1920x1080 flights over the same reference, generated with
#   ../shared/bench/gen_video.py (needs python3-opencv and the ffmpeg
#   program; the GPU machine has neither ffmpeg nor FFmpeg's libraries, so
#   tools/gpu.sh makes them here and carries them).
# Env: DEVICES="cpu cuda" the gmatch devices run (default: cpu); SIFT=0
#   skips the OpenCV peer; REPS=N times each gmatch run, the fastest kept.  GMATCH_WORKERS (matcher threads) and
#   GMATCH_FRAME_THREADS (OpenMP threads per frame) pass through.
# Columns: fps over the whole run (the process's start, CUDA context and
# reference preparation included) and fps of the frames after the first 10
# (the same run minus a 10-frame run: the rate a long video sees); the score
# on the video (ok@3px over the positives / false positives on the cut-away).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${BENCH:-$here/../../../shared/bench}
py=${PYTHON:-}
for c in /usr/bin/python3 python3; do # the one with OpenCV (run.sh's choice)
    [ -n "$py" ] && break
    "$c" -c 'import cv2' 2>/dev/null && py=$c
done
[ -n "$py" ] || { echo "bench_video.sh: no python3 with OpenCV" >&2; exit 2; }

make_videos() { # DIR FRAMES
    local dir=$1 n=$2 ref=$bench/video/ref_building.jpg
    mkdir -p "$dir"
    cp "$bench/video/building.mp4" "$bench/video/building.jsonl" "$ref" "$dir/"
    for size in "640 360" "1280 720" "1920 1080"; do
        set -- $size
        "$py" "$bench/gen_video.py" "$ref" "$here/../../data/bench/ref_gravel.jpg" "$dir/g$2" "v$2" \
            "$1" "$2" "$n" 1
        mv "$dir/g$2/v$2.mp4" "$dir/g$2/v$2.jsonl" "$dir/"
        rm -rf "$dir/g$2"
    done
}

now() { date +%s.%N; }

run_videos() { # DIR GMATCH
    local dir=$1 gm=$2 ref=$1/ref_building.jpg out
    out=$(mktemp -d)
    printf '%-9s %-6s %7s %10s %12s %10s\n' video device frames "fps (all)" "fps (>10)" "ok@3px/fp"
    for v in building v360 v720 v1080; do
        local frames
        frames=$(wc -l < "$dir/$v.jsonl")
        for d in ${DEVICES:-cpu}; do
            local t0 t1 t2 score
            # best of REPS runs each: the whole video, and its first 10 frames
            local best_all=1e9 best_ten=1e9 r
            for r in $(seq "${REPS:-1}"); do
                t0=$(now)
                "$gm" -q --device "$d" --format json "$ref" "$dir/$v.mp4" > "$out/$v.$d.jsonl" || true
                t1=$(now)
                "$gm" -q --device "$d" --frames 0:10 "$ref" "$dir/$v.mp4" > /dev/null || true
                t2=$(now)
                best_all=$(awk -v a="$t0" -v b="$t1" -v m="$best_all" 'BEGIN { print (b - a < m) ? b - a : m }')
                best_ten=$(awk -v a="$t1" -v b="$t2" -v m="$best_ten" 'BEGIN { print (b - a < m) ? b - a : m }')
            done
            t0=0 t1=$best_all t2=$(awk -v a="$best_all" -v b="$best_ten" 'BEGIN { print a + b }')
            score=$("$py" "$bench/score.py" "$out/$v.$d.jsonl" "$dir/$v.jsonl" |
                    awk '/^SUMMARY/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); s[kv[1]] = kv[2] } }
                         END { printf "%s/%s", s["ok@3px"], s["false_pos"] }')
            awk -v v="$v" -v d="$d" -v f="$frames" -v a="$t0" -v b="$t1" -v c="$t2" -v s="$score" \
                'BEGIN { w = (b - a) - (c - b); printf "%-9s %-6s %7d %10.1f %12.1f %10s\n", v, d, f,
                         f / (b - a), (w > 0 ? (f - 10) / w : 0), s }'
        done
        if [ "${SIFT:-1}" != 0 ]; then
            local t0 t1
            t0=$(now)
            "$py" "$bench/opencv_match.py" sift "$ref" "$dir/$v.mp4" > "$out/$v.sift.jsonl"
            t1=$(now)
            awk -v v="$v" -v f="$frames" -v a="$t0" -v b="$t1" \
                'BEGIN { printf "%-9s %-6s %7d %10.1f %12s %10s\n", v, "sift", f, f / (b - a), "-", "-" }'
        fi
    done
    rm -rf "$out"
    echo "($(nproc) cores; $(uptime | sed 's/.*load/load/'))"
}

case "${1:-}" in
make) make_videos "$2" "${3:-90}" ;;
run) run_videos "$2" "${3:-$here/../../build/gmatch}" ;;
*)
    gm=${1:-$here/../../build/gmatch}
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    make_videos "$tmp" "${2:-90}"
    run_videos "$tmp" "$gm"
    ;;
esac
