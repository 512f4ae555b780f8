#!/bin/bash
# soak.sh: a long video through one process, the soak of the issue "Nothing
# lost, ever": the 300-frame 640x360 clip looped by FFmpeg's concat demuxer
# (an ffconcat list of copies, nothing large written) to FRAMES frames,
# after a run of 1,000 frames for the memory it needs.  Checks that every
# frame has its one line, in order, none an error, that every copy of the
# clip gives the results of the first copy (status, votes, matrix), and
# compares the peak RSS of the long run with the short one's (at most 1.1x);
# samples the long run's RSS every 5 s.
#
# usage: tools/bench/soak.sh DIR GMATCH [DEVICE] [FRAMES]
#   DIR holds ref_building.jpg, v360.mp4 and v360.jsonl (tools/bench/
#   bench_video.sh make DIR 300); DEVICE cpu (default) or cuda; FRAMES
#   100000 by default.  Exit 0 when every check passed.
set -euo pipefail
dir=$1 gm=$2 dev=${3:-cpu} frames=${4:-100000}
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
ref=$dir/ref_building.jpg
clip=$(wc -l < "$dir/v360.jsonl")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$dir/v360.mp4" "$tmp/"
copies=$(( (frames + clip - 1) / clip ))
{ echo "ffconcat version 1.0"; for _ in $(seq "$copies"); do echo "file 'v360.mp4'"; done; } \
    > "$tmp/long.ffconcat"
fail=0

check() { # OUT N: N lines, frames 0..N-1 in order, no error, copies equal
    python3 - "$1" "$2" "$clip" <<'PY'
import json, sys
out, n, clip = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(l) for l in open(out)]
bad = []
if len(rows) != n:
    bad.append("%d lines, want %d" % (len(rows), n))
if [r["frame"] for r in rows] != list(range(len(rows))):
    bad.append("frames not 0..N-1 in order")
err = [r for r in rows if r["status"] == "error"]
if err:
    bad.append("%d error lines, the first: frame %d %s" % (len(err), err[0]["frame"], err[0].get("error")))
key = lambda r: (r["status"], r.get("votes"), r.get("matrix"))
diff = [i for i, r in enumerate(rows) if key(r) != key(rows[i % clip])]
if diff:
    bad.append("%d frames differ from the clip's first copy, the first: %d" % (len(diff), diff[0]))
found = sum(r["status"] == "match" for r in rows)
print("  %d lines, %d matches, %d none, %d differ from the first copy" %
      (len(rows), found, len(rows) - found - len(err), len(diff)))
for b in bad:
    print("  FAIL: " + b)
sys.exit(1 if bad else 0)
PY
}

run() { # N OUT: one process over the first N frames; prints seconds and peak RSS
    local n=$1 out=$2
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$tmp/rss.$n" "$gm" -q --device "$dev" --format json \
        --frames "0:$n" "$ref" "$tmp/long.ffconcat" > "$out" 2> "$tmp/err.$n" &
    local pid=$! gpid
    # the RSS over the run, every 5 s (gmatch is time's child)
    : > "$tmp/samples.$n"
    while kill -0 "$pid" 2> /dev/null; do
        gpid=$(pgrep -P "$pid" -n || true)
        if [ -n "$gpid" ] && [ -r "/proc/$gpid/status" ]; then
            echo "$(wc -l < "$out") $(awk '/VmRSS/ {print $2}' "/proc/$gpid/status")" >> "$tmp/samples.$n"
        fi
        sleep 5
    done
    wait "$pid" || { echo "  FAIL: exit $? ($(tail -c 300 "$tmp/err.$n"))"; fail=1; }
    t1=$(date +%s.%N)
    awk -v n="$n" -v a="$t0" -v b="$t1" -v r="$(cat "$tmp/rss.$n")" \
        'BEGIN { printf "%d frames: %.1f s, %.1f fps, peak RSS %.1f MiB\n", n, b - a, n / (b - a), r / 1024 }'
}

echo "soak: $gm --device $dev, 640x360 clip of $clip frames looped to $frames ($(nproc) cores, $(date -u +%F))"
run 1000 "$tmp/short.jsonl"
check "$tmp/short.jsonl" 1000 || fail=1
run "$frames" "$tmp/long.jsonl"
check "$tmp/long.jsonl" "$frames" || fail=1
echo "  RSS (MiB) by lines written:"
stride=$(( $(wc -l < "$tmp/samples.$frames") / 20 + 1 ))
awk -v s="$stride" '(NR - 1) % s == 0 { printf "    %8d lines  %.1f\n", $1, $2 / 1024 }' "$tmp/samples.$frames"
awk -v a="$(cat "$tmp/rss.1000")" -v b="$(cat "$tmp/rss.$frames")" \
    'BEGIN { printf "  peak RSS %d frames / 1000 frames: %.3f (at most 1.1)\n", '"$frames"', b / a;
             exit (b > 1.1 * a) }' || { echo "  FAIL: memory grew"; fail=1; }
[ "$fail" -eq 0 ] && echo "soak: all checks passed" || echo "soak: FAILED"
exit "$fail"
