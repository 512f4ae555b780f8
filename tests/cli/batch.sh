#!/bin/bash
# batch.sh: integration test of gmatch --batch (docs/batch.md): a manifest of
# stills, a video, mixed models and bad lines, with relative paths; each
# result equal to one call of gmatch for that pair; shards 0..N-1 together
# equal to the unsharded run for N = 1, 2, 7; runs killed at random points
# and resumed equal to an uninterrupted one (and the file in manifest
# order); CSV; the GNU parallel recipe with tools/gmatch-merge.py; the Slurm
# array script with sbatch replaced by a loop over the tasks (tests/cli/
# slurm.sh runs it on a real one-node cluster).
#
# usage: tests/cli/batch.sh path/to/gmatch   (from the repository root)
# Needs bash, python3 (stdlib) and, for the parallel recipe, GNU parallel
# (tools/setup.sh installs it; without it that part fails, not skipped).
set -u
gm=${1:?usage: batch.sh GMATCH}
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
root=$PWD
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-batch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
have_video=0
# a build without FFmpeg lists --decode too: ask it to read the clip
[ -e data/video/clip.mp4 ] &&
    "$gm" data/video/ref_clip.jpg data/video/clip.mp4 --frames 0:1 > /dev/null 2>&1 && have_video=1

# the manifest: paths relative to its folder (links into data/), the
# references' lines shuffled, a video with a frame range, two models on one
# reference, and bad lines
mkdir -p "$tmp/m/imgs"
ln -s "$root/data/bench" "$tmp/m/imgs/bench"
ln -s "$root/data/video" "$tmp/m/imgs/video"
python3 - "$tmp/m/pairs.jsonl" "$have_video" <<'PY' || exit 1
import json, random, sys
out, have_video = sys.argv[1], sys.argv[2] == "1"
rows = []
for r in ("cell", "gravel", "hubble_deep_field", "retina", "text"):
    for q in ("00_easy", "01_medium", "02_medium", "neg"):
        rows.append({"ref": "imgs/bench/ref_%s.jpg" % r, "query": "imgs/bench/q_%s_%s.jpg" % (r, q)})
random.Random(5).shuffle(rows)
rows.insert(7, {"ref": "imgs/bench/ref_cell.jpg", "query": "imgs/bench/q_cell_01_medium.jpg",
                "model": "homography", "id": "cell-h"})
if have_video:
    rows.insert(3, {"ref": "imgs/video/ref_clip.jpg", "query": "imgs/video/clip.mp4",
                    "frames": "0:40", "id": "clip"})
rows.insert(11, {"ref": "imgs/bench/ref_text.jpg", "query": "imgs/missing.jpg", "id": "gone"})
with open(out, "w") as f:
    for i, r in enumerate(rows):
        f.write(json.dumps(r) + "\n")
        if i == 5:
            f.write('{"ref": "imgs/bench/ref_text.jpg", "querry": "x.jpg"}\n')
    f.write("not json\n")
PY
m=$tmp/m/pairs.jsonl
nlines=$(wc -l < "$m")

# strip FILE...: the result lines as sorted JSON without time_ms (the only
# value that changes from run to run)
strip() { python3 "$root/tools/bench/result_lines.py" "$@"; }
# ordered FILE: its lines in their order, without time_ms (the order checked too)
ordered() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); r.pop("time_ms", None); print(json.dumps(r))' "$1"; }

# 1. the whole manifest in one run
(cd "$tmp" && timeout 300 "$gm" --batch m/pairs.jsonl -o all.jsonl -q 2> all.err)
rc=$?
[ "$rc" -eq 1 ] || fail "batch: exit $rc, want 1 (bad lines and a missing file)"
python3 - "$tmp/all.jsonl" "$nlines" "$have_video" <<'PY' || fail "batch: the lines"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n, have_video = int(sys.argv[2]), sys.argv[3] == "1"
lines = sorted({r["line"] for r in rows})
assert lines == list(range(1, n + 1)), "a manifest line without its result: %s" % lines
keys = [(r["line"], r["frame"]) for r in rows]
assert keys == sorted(keys), "not in manifest order"
for r in rows:
    assert list(r)[:4] == ["line", "id", "ref", "query"], list(r)[:4]
    # one type, given or not: a string, the line number's digits by default
    assert isinstance(r["id"], str), r
    if r["id"] not in ("cell-h", "clip", "gone"):
        assert r["id"] == str(r["line"]), r
bad = [r for r in rows if r["status"] == "error"]
msgs = sorted(r["error"] for r in bad)
assert len(bad) == 3, msgs
assert any("unknown key 'querry'" in e for e in msgs), msgs
assert any("not JSON" in e for e in msgs), msgs
assert any(r["id"] == "gone" and "No such file" in r["error"] for r in bad), msgs
h = [r for r in rows if r["id"] == "cell-h"]
assert len(h) == 1 and h[0]["model"] == "homography" and len(h[0]["matrix"]) == 3, h
s = [r for r in rows if r["ref"].endswith("ref_cell.jpg") and r["id"] != "cell-h" and r["status"] == "match"]
assert s and all(r["model"] == "similarity" for r in s), s
if have_video:
    v = [r for r in rows if r["id"] == "clip"]
    assert [r["frame"] for r in v] == list(range(40)), [r["frame"] for r in v]
PY

# 2. each pair as one call of gmatch: the same values
python3 - "$gm" "$tmp/all.jsonl" "$tmp/m" <<'PY' || fail "batch: a pair differs from its own call"
import json, os, subprocess, sys
gm, res, mdir = sys.argv[1:]
rows = [json.loads(l) for l in open(res)]
pairs = {}
for r in rows:
    if r["status"] == "error" and "ref" not in r or not r["ref"]:
        continue
    pairs.setdefault(r["line"], []).append(r)
manifest = {i + 1: json.loads(l) for i, l in enumerate(open(os.path.join(mdir, "pairs.jsonl")))
            if l.startswith("{")}
differ = 0
for line, got in pairs.items():
    p = manifest[line]
    if "query" not in p:
        continue
    args = [gm, "--format", "json", "-q"]
    if "model" in p:
        args += ["--model", p["model"]]
    if "frames" in p:
        args += ["--frames", p["frames"]]
    args += [p["ref"], p["query"]]
    want = [json.loads(l) for l in subprocess.run(args, cwd=mdir, capture_output=True,
                                                  text=True, timeout=300).stdout.splitlines()]
    for a, b in zip(got, want):
        a = {k: v for k, v in a.items() if k not in ("line", "id", "ref", "time_ms")}
        b = {k: v for k, v in b.items() if k != "time_ms"}
        if a != b:
            differ += 1
            print("line %d: batch %s, alone %s" % (line, a, b))
    if len(got) != len(want):
        differ += 1
        print("line %d: %d lines, alone %d" % (line, len(got), len(want)))
sys.exit(differ > 0)
PY

# 3. shards: together exactly the unsharded lines
strip "$tmp/all.jsonl" > "$tmp/all.txt"
# (and the stills several at a time, as on a GPU: GMATCH_WORKERS=3 takes
# that path on the CPU; the same lines in the same order)
(cd "$tmp" && GMATCH_WORKERS=3 timeout 300 "$gm" --batch m/pairs.jsonl -o w3.jsonl -q 2> /dev/null)
cmp -s <(ordered "$tmp/all.jsonl") <(ordered "$tmp/w3.jsonl") || fail "3 still workers: not the lines of one at a time"
# (on a GPU, two copies of each reference on GPU 0 stand for two GPUs: a
# group of fewer pairs than the workers, all stills, is prepared on one
# copy, the first group and the video's on both; the same lines)
if "$gm" -q --device cuda data/bench/ref_cell.jpg data/bench/q_cell_00_easy.jpg > /dev/null 2>&1; then
    (cd "$tmp" && GMATCH_WORKERS=8 timeout 300 "$gm" --device cuda:0,0 -v --batch m/pairs.jsonl \
        -o g2.jsonl 2> g2.err)
    cmp -s <(ordered "$tmp/all.jsonl") <(ordered "$tmp/g2.jsonl") ||
        fail "cuda:0,0: not the lines of one at a time"
    one=$(grep -c 'device: cuda: GPU 0, [^;]*$' "$tmp/g2.err")
    both=$(grep -c 'device: cuda: GPU 0, .*; queries spread over it and GPU 0' "$tmp/g2.err")
    [ "$one" -ge 1 ] && [ "$both" -ge 1 ] ||
        fail "cuda:0,0: $one references on one copy, $both on both (want each at least 1)"
    # the loaders as on a GPU short of memory: no reference beyond the next
    (cd "$tmp" && GMATCH_WORKERS=8 GMATCH_REF_AHEAD_MEM=1 timeout 300 "$gm" --device cuda \
        --batch m/pairs.jsonl -o g1.jsonl -q 2> /dev/null)
    cmp -s <(ordered "$tmp/all.jsonl") <(ordered "$tmp/g1.jsonl") ||
        fail "GMATCH_REF_AHEAD_MEM=1: not the lines of one at a time"
fi
for n in 1 2 7; do
    rm -f "$tmp"/s.*.jsonl
    for ((i = 0; i < n; i++)); do
        (cd "$tmp" && timeout 300 "$gm" --batch m/pairs.jsonl --shard "$i/$n" -o "s.$i.jsonl" -q 2> /dev/null)
    done
    strip "$tmp"/s.*.jsonl > "$tmp/sh.txt"
    cmp -s "$tmp/all.txt" "$tmp/sh.txt" || fail "shards $n: not the unsharded lines ($(diff "$tmp/all.txt" "$tmp/sh.txt" | head -c 400))"
done

# (the same for a plain run of many queries, a video and a missing file
# among them: the pool that --device cuda uses, taken on the CPU)
qs=$(ls data/bench/q_cell_*.jpg data/bench/q_text_*.jpg)
v=data/video/clip.mp4
[ "$have_video" = 1 ] || v=
"$gm" --format json -q data/bench/ref_cell.jpg $qs $v data/missing.jpg > "$tmp/p1.jsonl" 2> /dev/null
GMATCH_WORKERS=3 "$gm" --format json -q data/bench/ref_cell.jpg $qs $v data/missing.jpg > "$tmp/p3.jsonl" 2> /dev/null
cmp -s <(ordered "$tmp/p1.jsonl") <(ordered "$tmp/p3.jsonl") || fail "a plain run, 3 still workers: not the lines of one at a time"
[ "$(wc -l < "$tmp/p3.jsonl")" -ge 9 ] || fail "a plain run, 3 still workers: $(wc -l < "$tmp/p3.jsonl") lines"

# 4. killed at random points and resumed: the uninterrupted result, in order.
# A kill comes 0.1-0.9 s times a scale after the start; the scale doubles
# after a run that added no line, so that a slow build (ASan) on a loaded
# machine still gets past its slowest pair, whatever the machine's speed.
for trial in 1 2 3; do
    rm -f "$tmp/r.jsonl"
    runs=0 scale=1 have=0
    while :; do
        runs=$((runs + 1))
        (cd "$tmp" && exec "$gm" --batch m/pairs.jsonl --resume r.jsonl -o r.jsonl -q 2> /dev/null) &
        pid=$!
        d=$(( (RANDOM % 9 + 1) * scale )) # tenths of a second
        sleep "$((d / 10)).$((d % 10))"
        if kill -9 "$pid" 2> /dev/null; then
            wait "$pid" 2> /dev/null
        else
            wait "$pid"
            break
        fi
        now=$(cat "$tmp/r.jsonl" 2> /dev/null | wc -l)
        if [ "$now" -gt "$have" ]; then
            have=$now
        elif [ "$scale" -lt 256 ]; then
            scale=$((scale * 2))
        else # 25-230 s a run and no line added
            fail "resume: no progress at $have lines"; break
        fi
        [ "$runs" -lt 200 ] || { fail "resume: not finished after 200 runs"; break; }
    done
    strip "$tmp/r.jsonl" > "$tmp/r.txt"
    cmp -s "$tmp/all.txt" "$tmp/r.txt" || fail "resume trial $trial ($runs runs): not the uninterrupted lines ($(diff "$tmp/all.txt" "$tmp/r.txt" | head -c 400))"
    python3 -c '
import json, sys
k = [(r["line"], r["frame"]) for r in map(json.loads, open(sys.argv[1]))]
sys.exit(k != sorted(k))' "$tmp/r.jsonl" || fail "resume trial $trial: not in manifest order"
done
# a finished run resumed adds nothing, and its exit status is this run's (0)
cp "$tmp/r.jsonl" "$tmp/r0.jsonl"
(cd "$tmp" && "$gm" --batch m/pairs.jsonl --resume r.jsonl -o r.jsonl -q 2> /dev/null)
rc=$?
cmp -s "$tmp/r0.jsonl" "$tmp/r.jsonl" || fail "resume of a finished run changed the file"
[ "$rc" -eq 0 ] || fail "resume of a finished run: exit $rc, want 0"

# resumed from half of the lines (the last one cut short) by 3 still
# workers, the groups through one stream: the uninterrupted lines, in order
half=$(( $(wc -l < "$tmp/all.jsonl") / 2 ))
head -n "$half" "$tmp/all.jsonl" | head -c -25 > "$tmp/h.jsonl"
(cd "$tmp" && GMATCH_WORKERS=3 "$gm" --batch m/pairs.jsonl --resume h.jsonl -o h.jsonl -q 2> /dev/null)
strip "$tmp/h.jsonl" > "$tmp/h.txt"
cmp -s "$tmp/all.txt" "$tmp/h.txt" || fail "resume by 3 still workers: not the uninterrupted lines ($(diff "$tmp/all.txt" "$tmp/h.txt" | head -c 400))"
python3 -c '
import json, sys
k = [(r["line"], r["frame"]) for r in map(json.loads, open(sys.argv[1]))]
sys.exit(k != sorted(k))' "$tmp/h.jsonl" || fail "resume by 3 still workers: not in manifest order"

# 5. CSV, text output, and the text resume
printf 'id,ref,query,model,frames\n"a,1",imgs/bench/ref_cell.jpg,imgs/bench/q_cell_00_easy.jpg,,\nb2,imgs/bench/ref_cell.jpg,imgs/bench/q_cell_02_medium.jpg,affine,\n' > "$tmp/m/p.csv"
(cd "$tmp" && "$gm" --batch m/p.csv --format text -o t.txt -q)
rc=$?
[ "$rc" -eq 0 ] || fail "csv: exit $rc"
[ "$(head -1 "$tmp/t.txt")" = "# line id ref query frame status votes confidence a b c d e f g h scale angle_deg uncertainty_px|reason" ] || fail "csv: text header: $(head -1 "$tmp/t.txt")"
grep -q '^2 a,1 imgs/bench/ref_cell.jpg imgs/bench/q_cell_00_easy.jpg 0 match ' "$tmp/t.txt" || fail "csv: the first pair: $(sed -n 2p "$tmp/t.txt")"
grep -q '^3 b2 imgs/bench/ref_cell.jpg imgs/bench/q_cell_02_medium.jpg 0 match ' "$tmp/t.txt" || fail "csv: the second pair: $(sed -n 3p "$tmp/t.txt")"
head -c -40 "$tmp/t.txt" > "$tmp/t2.txt" # the last line cut short
(cd "$tmp" && "$gm" --batch m/p.csv --format text --resume t2.txt -o t2.txt -q)
cmp -s <(cut -d' ' -f1-12 "$tmp/t.txt") <(cut -d' ' -f1-12 "$tmp/t2.txt") || fail "csv: the text resume: $(cat "$tmp/t2.txt")"

# 6. the GNU parallel recipe (docs/usage.md, "Large batches") and the merge tool
if command -v parallel > /dev/null; then
    rm -f "$tmp"/p.*.jsonl
    (cd "$tmp" && parallel -j 2 "$gm" --batch m/pairs.jsonl --shard {}/2 -o p.{}.jsonl -q ::: 0 1 2> /dev/null)
    python3 "$root/tools/gmatch-merge.py" "$tmp"/p.*.jsonl > "$tmp/merged.jsonl" || fail "gmatch-merge.py failed"
    strip "$tmp/merged.jsonl" > "$tmp/pm.txt"
    cmp -s "$tmp/all.txt" "$tmp/pm.txt" || fail "parallel: the shards are not the unsharded lines"
    cmp -s <(ordered "$tmp/all.jsonl") <(ordered "$tmp/merged.jsonl") || fail "gmatch-merge.py: not the manifest order of one run"
else
    fail "GNU parallel is not installed (tools/setup.sh installs it)"
fi

# 7. the Slurm array script, sbatch replaced by a loop over the tasks (3 of
# them, one killed once and requeued)
rm -rf "$tmp/sl"
for i in 0 1 2; do
    (cd "$tmp" && SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=2 \
        SLURM_ARRAY_TASK_COUNT=3 GMATCH=$gm "$root/tools/slurm/gmatch-array.sh" m/pairs.jsonl sl 2> /dev/null)
done
strip "$tmp"/sl/out.*.jsonl > "$tmp/sl.txt"
cmp -s "$tmp/all.txt" "$tmp/sl.txt" || fail "slurm script: the tasks' lines are not the unsharded lines"
(cd "$tmp" && SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MAX=2 GMATCH=$gm "$root/tools/slurm/gmatch-array.sh" m/pairs.jsonl sl 2> /dev/null)
strip "$tmp"/sl/out.*.jsonl > "$tmp/sl2.txt"
cmp -s "$tmp/all.txt" "$tmp/sl2.txt" || fail "slurm script: a task run again added lines"
(cd "$tmp" && SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=2 GMATCH=$gm "$root/tools/slurm/gmatch-array.sh" m/pairs.jsonl sl 2> /dev/null)
[ $? -eq 2 ] || fail "slurm script: an array not from 0 is not refused"

# 8. usage errors
"$gm" --batch "$tmp/m/pairs.jsonl" extra.jpg > /dev/null 2>&1
[ $? -eq 2 ] || fail "--batch with operands: not a usage error"
"$gm" --shard 1/2 a.jpg b.jpg > /dev/null 2>&1
[ $? -eq 2 ] || fail "--shard without --batch: not a usage error"
for s in 2/2 x/3 1/0 -1/2 1; do
    "$gm" --batch "$tmp/m/pairs.jsonl" --shard "$s" > /dev/null 2>&1
    [ $? -eq 2 ] || fail "--shard $s: not a usage error"
done
"$gm" --batch "$tmp/none.jsonl" > /dev/null 2> "$tmp/e.txt"
[ $? -eq 2 ] && grep -q "none.jsonl: cannot open" "$tmp/e.txt" || fail "a missing manifest: $(cat "$tmp/e.txt")"

if [ "$fails" -gt 0 ]; then
    echo "batch.sh: $fails failures"
    exit 1
fi
echo "batch.sh: all passed"
