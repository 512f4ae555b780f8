#!/bin/bash
# bench_gpus.sh: every GPU of a host (issue "Measure every GPU of a host"),
# in one call on a machine with two GPUs (nvidia-h200-x2):
#   video   640x360 x 3000 and 1920x1080 x 1200 frames (the 300-frame clips
#           of bench_video.sh looped by ffconcat), decode included, one
#           process, --device cuda:0, cuda:1, cuda:all
#   stills  the public stills as a --batch manifest of many pairs a
#           reference (each pair COPIES times, ids apart), pairs per second
#           under cuda:0, cuda:1, cuda:all
#   shards  the same work as two processes at once (--shard 0/2 on cuda:0,
#           --shard 1/2 on cuda:1) beside one process on cuda:all: the
#           videos as a manifest of two references (the clip's reference
#           under two names) and the stills manifest
#   same    every configuration's lines equal (time_ms aside)
#   bounds  -v's pipeline figures (decoding a frame, workers waiting for
#           one), nvidia-smi's utilization of each GPU every second
#
# usage: tools/bench/bench_gpus.sh DEV OUT [GMATCH]
#   DEV: the packed folder (tools/gpu.sh pack: bin, libs, bench, videos)
# Env: REPS (default 2), COPIES (default 8); for a dry run elsewhere D0, D1,
#   DALL (the devices, default cuda:0 cuda:1 cuda:all), LOOPS360 and
#   LOOPS1080 (copies of the clips, default 10 and 4), FRAMES (a --frames
#   range for every video run, default all).
set -u
dev=$1 out=$2 gm=${3:-$1/bin/gmatch}
reps=${REPS:-2} copies=${COPIES:-8}
d0=${D0:-cuda:0} d1=${D1:-cuda:1} dall=${DALL:-cuda:all}
l360=${LOOPS360:-10} l1080=${LOOPS1080:-4}
fr=()
[ -n "${FRAMES:-}" ] && fr=(--frames "$FRAMES")
mkdir -p "$out"
work=$(mktemp -d)
smi=
trap 'rm -rf "$work"; [ -n "$smi" ] && kill $smi 2> /dev/null' EXIT
now() { date +%s.%N; }
: > "$out/smi.csv"
ngpu=0
if command -v nvidia-smi > /dev/null; then
    ngpu=$(nvidia-smi -L | wc -l)
    nvidia-smi -L
    nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader -l 1 \
        > "$out/smi.csv" 2>&1 &
    smi=$!
fi
echo "bench_gpus: $ngpu GPUs, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
# the long videos: concat lists beside the clips (the concat demuxer takes
# names relative to the list), the manifests and two names of the reference
vd=$dev/videos
mkdir -p "$vd"
for spec in "v360 $l360" "v1080 $l1080"; do
    set -- $spec
    [ -f "$vd/$1.mp4" ] || continue
    { echo "ffconcat version 1.0"; for _ in $(seq "$2"); do echo "file $1.mp4"; done; } \
        > "$vd/$1-long.ffconcat"
done
if [ -f "$vd/ref_building.jpg" ]; then
    cp "$vd/ref_building.jpg" "$vd/ref_a.jpg"
    cp "$vd/ref_building.jpg" "$vd/ref_b.jpg"
fi
for v in v360 v1080; do
    fj=""
    [ -n "${FRAMES:-}" ] && fj=", \"frames\": \"$FRAMES\""
    printf '{"ref": "ref_a.jpg", "query": "%s-long.ffconcat", "id": "%s-a"%s}\n{"ref": "ref_b.jpg", "query": "%s-long.ffconcat", "id": "%s-b"%s}\n' \
        "$v" "$v" "$fj" "$v" "$v" "$fj" > "$vd/$v-pairs.jsonl"
done
# the stills sets: the public stills, and the photo tier when carried
# (tools/gpu.sh pack-photo); each pair COPIES times
sets=stills
[ -f "$dev/photo-bench/photo/manifest.jsonl" ] && sets="stills photo"
for set in $sets; do
src=$dev/bench/stills/manifest.jsonl
[ "$set" = photo ] && src=$dev/photo-bench/photo/manifest.jsonl
python3 - "$src" "$work/$set.jsonl" "$copies" <<'PY'
import json, os, sys
src, dst, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = os.path.dirname(os.path.abspath(src))
rows = [json.loads(l) for l in open(src)]
with open(dst, "w") as f:
    for c in range(copies):
        for i, r in enumerate(rows):
            f.write(json.dumps({"ref": os.path.join(d, r["ref"]), "query": os.path.join(d, r["query"]),
                                "id": "%d-%d" % (i, c)}) + "\n")
PY
done
nst=$(wc -l < "$work/stills.jsonl")
npo=0
[ -f "$work/photo.jsonl" ] && npo=$(wc -l < "$work/photo.jsonl")
videos=v360
[ -f "$vd/v360.mp4" ] || videos=""
[ -f "$vd/v1080.mp4" ] && videos="$videos v1080"
# timed NAME OUTFILE CMD...: runs with stdout to OUTFILE, prints the wall
# time, keeps stderr (-v's lines) in NAME.err
timed() {
    local name=$1 file=$2
    shift 2
    local t0 t1
    t0=$(now)
    "$@" > "$file" 2> "$out/$name.err"
    local rc=$?
    t1=$(now)
    echo "$name $t0 $t1 $rc" >> "$out/times.txt"
    python3 -c 'import sys; print("%-28s %7.2f s  (exit %s)" % (sys.argv[1], float(sys.argv[3]) - float(sys.argv[2]), sys.argv[4]))' \
        "$name" "$t0" "$t1" "$rc"
}
for r in $(seq "$reps"); do
    echo "== round $r"
    for k in 0 1 2; do
        d=$d0 n=cuda-0
        [ $k = 1 ] && d=$d1 n=cuda-1
        [ $k = 2 ] && d=$dall n=cuda-all
        for v in $videos; do
            timed "video-$v-$n-r$r" "$out/video-$v-$n.jsonl" "$gm" -v --format json --device "$d" \
                "${fr[@]}" "$vd/ref_a.jpg" "$vd/$v-long.ffconcat"
        done
        for set in $sets; do
            timed "$set-$n-r$r" /dev/null "$gm" --batch "$work/$set.jsonl" --device "$d" \
                -o "$out/$set-$n.jsonl" -q
        done
    done
    for v in $videos $sets; do
        m=$vd/$v-pairs.jsonl
        [ $v = stills ] || [ $v = photo ] && m=$work/$v.jsonl
        # two shards, one a GPU, at once; then one process on both
        t0=$(now)
        "$gm" --batch "$m" --shard 0/2 --device "$d0" -o "$out/$v-shard0.jsonl" -q \
            2> "$out/$v-shard0.err" &
        p0=$!
        "$gm" --batch "$m" --shard 1/2 --device "$d1" -o "$out/$v-shard1.jsonl" -q \
            2> "$out/$v-shard1.err"
        wait $p0
        t1=$(now)
        echo "$v-shards-r$r $t0 $t1 0" >> "$out/times.txt"
        python3 -c 'import sys; print("%-28s %7.2f s" % (sys.argv[1], float(sys.argv[3]) - float(sys.argv[2])))' \
            "$v-2shards-r$r" "$t0" "$t1"
        timed "$v-batch-cuda-all-r$r" /dev/null "$gm" --batch "$m" --device "$dall" \
            -o "$out/$v-batchall.jsonl" -q
    done
done
[ -n "$smi" ] && kill $smi 2> /dev/null
# the figures: frames or pairs a second, best of the rounds, ratios
PYTHONPATH=$(dirname "$0") python3 - "$out" "$nst" "$npo" "$videos" <<'PY'
import collections, os, sys
from result_lines import rows as lines, canonical
out, nst, npo, videos = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
best = {}
for l in open(os.path.join(out, "times.txt")):
    name, a, b, rc = l.split()
    key = name.rsplit("-r", 1)[0]
    best[key] = min(best.get(key, 1e9), float(b) - float(a))
def frames(v):
    return sum(1 for _ in open(os.path.join(out, "video-%s-cuda-0.jsonl" % v)))
work = {v: frames(v) for v in videos}
print("\n| work | cuda:0 | cuda:1 | cuda:all | all / best one | 2 shards (2 processes) | batch cuda:all (1 process) |")
print("|---|---|---|---|---|---|---|")
for v, n in work.items():
    one = [n / best["video-%s-%s" % (v, d)] for d in ("cuda-0", "cuda-1")]
    both = n / best["video-%s-cuda-all" % v]
    sh = 2 * n / best["%s-shards" % v]
    ba = 2 * n / best["%s-batch-cuda-all" % v]
    print("| %s x %d frames (fps) | %.0f | %.0f | %.0f | %.2fx | %.0f | %.0f |" % (v, n, one[0], one[1], both, both / max(one), sh, ba))
for name, n in (("stills", nst), ("photo", npo)):
    if n == 0:
        continue
    one = [n / best["%s-%s" % (name, d)] for d in ("cuda-0", "cuda-1")]
    both = n / best["%s-cuda-all" % name]
    print("| %s x %d pairs (pairs/s) | %.1f | %.1f | %.1f | %.2fx | %.1f | %.1f |" % (
        "public stills" if name == "stills" else "photo tier", n, one[0], one[1], both, both / max(one),
        n / best["%s-shards" % name], n / best["%s-batch-cuda-all" % name]))
# identical results
bad = 0
for v in videos:
    ref = [canonical(r) for r in lines(os.path.join(out, "video-%s-cuda-0.jsonl" % v))]
    for d in ("cuda-1", "cuda-all"):
        got = [canonical(r) for r in lines(os.path.join(out, "video-%s-%s.jsonl" % (v, d)))]
        bad += got != ref
        print("video %s %s: %d lines, %s cuda:0's" % (v, d, len(got), "the same as" if got == ref else "NOT"))
    # the batch's two pairs are the clip's lines twice (line, id, ref apart)
    # (the query's name as the manifest gives it, not as the command line did)
    strip = lambda rs: sorted(canonical(r, ("line", "id", "ref", "query")) for r in rs)
    sh = strip(lines(os.path.join(out, "%s-shard0.jsonl" % v)) + lines(os.path.join(out, "%s-shard1.jsonl" % v)))
    ba = strip(lines(os.path.join(out, "%s-batchall.jsonl" % v)))
    twice = strip(lines(os.path.join(out, "video-%s-cuda-0.jsonl" % v)) * 2)
    print("video %s: shards %s, batch cuda:all %s" % (v, "same" if sh == twice else "DIFFER", "same" if ba == twice else "DIFFER"))
    bad += sh != twice or ba != twice
full = lambda rs: sorted(canonical(r) for r in rs)
for st in ("stills", "photo") if npo else ("stills",):
    s0 = full(lines(os.path.join(out, "%s-cuda-0.jsonl" % st)))
    for name in ("%s-cuda-1.jsonl" % st, "%s-cuda-all.jsonl" % st, "%s-batchall.jsonl" % st):
        got = full(lines(os.path.join(out, name)))
        print("%s: %d lines, %s" % (name, len(got), "the same as cuda:0" if got == s0 else "DIFFERS"))
        bad += got != s0
    got = full(lines(os.path.join(out, "%s-shard0.jsonl" % st)) + lines(os.path.join(out, "%s-shard1.jsonl" % st)))
    print("%s shards: %s" % (st, "the same as cuda:0" if got == s0 else "DIFFER"))
    bad += got != s0
# the GPUs' utilization while cuda:all ran (samples above 0 only)
util = collections.defaultdict(list)
for l in open(os.path.join(out, "smi.csv")):
    p = [x.strip() for x in l.split(",")]
    if len(p) >= 2 and p[0].isdigit() and p[1].endswith("%"):
        util[int(p[0])].append(int(p[1][:-1]))
for g, u in sorted(util.items()):
    busy = [x for x in u if x > 0]
    print("GPU %d: %d samples, busy in %d, mean utilization when busy %.0f%%" % (g, len(u), len(busy), sum(busy) / max(1, len(busy))))
print("same results everywhere" if not bad else "RESULTS DIFFER")
PY
for v in $videos; do
    for d in cuda-0 cuda-all; do
        echo "-- -v of video $v $d (last round):"
        grep -hE "pipeline:|frames in|device:|timeline: opened" "$out/video-$v-$d-r$reps.err" | head -5
    done
done
