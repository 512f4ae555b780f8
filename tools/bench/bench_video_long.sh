#!/bin/bash
# bench_video_long.sh: video throughput over whole long runs, the figures of
# the issue "Speed to the hardware's limit": 640x360 x 3000 frames and
# 1920x1080 x 1200 frames, one process each, start, decode and output
# included, with -v's timeline (CUDA's start, the reference, the first, the
# tenth and the last result, in ms after main began).
#
# usage: tools/bench/bench_video_long.sh DIR [GMATCH]
#        tools/bench/bench_video_long.sh lists DIR   (writes the lists only
#        and prints their paths: tools/gpu.sh's gop bench decodes them)
#   DIR holds ref_building.jpg, v360.mp4 and v1080.mp4 (bench_video.sh make
#   DIR 300 makes them; tools/gpu.sh pack carries them as .device/videos).
#   The long videos are concat lists (ffconcat) of copies of the clips, so
#   nothing large is written or carried: v360 x 10, v1080 x 4.
# Env: DEVICES (default "cuda"), REPS (default 3; each run printed),
#   GMATCH_WORKERS / GMATCH_FRAME_THREADS pass through.
# Checks that every frame has its line and that the copies of the clip give
# the same results as the clip's first copy (frame i and i + k * clip).
set -euo pipefail
lists_only=0
[ "$1" = lists ] && { lists_only=1; shift; }
dir=$1 gm=${2:-build/gmatch}
ref=$dir/ref_building.jpg
for spec in "v360 10" "v1080 4"; do
    set -- $spec
    list=$dir/$1x$2.ffconcat
    { echo "ffconcat version 1.0"; for _ in $(seq "$2"); do echo "file $1.mp4"; done; } > "$list"
    [ $lists_only = 0 ] || echo "$list"
done
[ $lists_only = 0 ] || exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
for spec in "v360 10" "v1080 4"; do
    set -- $spec
    v=$1 copies=$2 list=$dir/$1x$2.ffconcat
    clip=$(wc -l < "$dir/$v.jsonl")
    frames=$((clip * copies))
    for d in ${DEVICES:-cuda}; do
        for r in $(seq "${REPS:-3}"); do
            t0=$(now)
            "$gm" -v --device "$d" --format json "$ref" "$list" > "$tmp/out.jsonl" 2> "$tmp/err" || true
            t1=$(now)
            lines=$(wc -l < "$tmp/out.jsonl")
            # the same result for frame i of every copy (status, votes, matrix)
            same=$(python3 - "$tmp/out.jsonl" "$clip" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
clip = int(sys.argv[2])
key = lambda r: (r["status"], r.get("votes"), r.get("matrix"))
print(sum(1 for i, r in enumerate(rows) if key(r) == key(rows[i % clip])))
EOF
)
            awk -v v="$v" -v d="$d" -v f="$frames" -v n="$lines" -v s="$same" -v a="$t0" -v b="$t1" \
                'BEGIN { printf "%-6s %-5s frames %d lines %d same-as-clip %d  whole %.3f s  %.1f fps\n",
                         v, d, f, n, s, b - a, f / (b - a) }'
            grep -E "timeline|prepare|frames in" "$tmp/err" | sed 's/^/    /'
        done
    done
done
echo "($(nproc) cores; $(uptime | sed 's/.*load/load/'))"
