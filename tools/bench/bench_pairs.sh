#!/bin/bash
# bench_pairs.sh: the public stills as one batch of 5,000+ pairs (issue 32,
# "Public stills as a batch, decode included: at least 5,000 pairs per
# second in one process"), on one device:
#   - a manifest of the stills' pairs COPIES times over (default 65: 5,070
#     pairs of 13 references), ids apart, absolute paths;
#   - gmatch --batch on it under each worker count of WORKERS (the
#     GMATCH_WORKERS of src/cli/stills.c; default "default": the command
#     line's own choice), REPS times each: wall time and pairs per second;
#   - every pair's line present, no error line, and each pair's COPIES lines
#     the same (time_ms aside): a batch answers a pair as it does alone;
#   - where nvidia-smi runs, the GPU's busy share during each run (its
#     utilization sampled every 200 ms: the mean, and the share of samples
#     above 0).
#
# usage: tools/bench/bench_pairs.sh GMATCH STILLS_DIR OUT [gmatch args...]
#   STILLS_DIR: ../shared/bench/stills (manifest.jsonl and the images);
#   OUT: a folder for the manifest, the lines and the logs;
#   gmatch args: e.g. --device cuda --model similarity
# Env: COPIES (65), REPS (2), WORKERS ("default"; e.g. "8 16 32"), KEEP=1
#   keeps every run's lines (by default only a failed run's).
# Prints one line a run:
#   pairs W workers run R: N pairs in S s, P pairs/s[, GPU busy M% mean, K% of samples]
set -u
gm=$1 stills=$(cd "$2" && pwd) out=$3
shift 3
copies=${COPIES:-65} reps=${REPS:-2} workers=${WORKERS:-default}
mkdir -p "$out"
man=$out/pairs.jsonl
python3 - "$stills/manifest.jsonl" "$man" "$copies" <<'PY'
import json, os, sys
src, dst, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = os.path.dirname(os.path.abspath(src))
rows = [json.loads(l) for l in open(src) if l.strip()]
with open(dst, "w") as f:
    for k in range(copies):
        for i, r in enumerate(rows):
            f.write(json.dumps({"ref": os.path.join(d, r["ref"]),
                                "query": os.path.join(d, r["query"]),
                                "id": "%d-%d" % (i, k)}) + "\n")
PY
n=$(wc -l < "$man")
smi=0
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 && smi=1
rc=0
for w in $workers; do
    for r in $(seq 1 "$reps"); do
        tag=$w-$r
        if [ $smi = 1 ]; then
            nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 \
                > "$out/busy-$tag.txt" 2> /dev/null &
            smi_pid=$!
        fi
        env=()
        [ "$w" != default ] && env=(GMATCH_WORKERS="$w")
        s=$(date +%s.%N)
        env "${env[@]}" "$gm" -q --format json "$@" --batch "$man" > "$out/lines-$tag.jsonl" \
            2> "$out/err-$tag.txt"
        grc=$?
        e=$(date +%s.%N)
        busy=""
        if [ $smi = 1 ]; then
            kill "$smi_pid" 2> /dev/null
            wait "$smi_pid" 2> /dev/null
            busy=$(awk '$1 ~ /^[0-9]+$/ {s += $1; n++; if ($1 > 0) b++}
                        END {if (n) printf ", GPU busy %.0f%% mean, %.0f%% of samples", s / n, 100 * b / n}' \
                   "$out/busy-$tag.txt")
        fi
        awk -v w="$w" -v r="$r" -v n="$n" -v a="$s" -v b="$e" -v busy="$busy" -v grc="$grc" \
            'BEGIN {printf "pairs %s workers run %s: %d pairs in %.2f s, %.0f pairs/s%s%s\n",
                    w, r, n, b - a, n / (b - a), busy, grc ? " (gmatch exit " grc ")" : ""}'
        # every pair answered, no error line, each pair's copies alike
        python3 - "$out/lines-$tag.jsonl" "$n" "$copies" <<'PY' || rc=1
import json, sys
path, n, copies = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [json.loads(l) for l in open(path) if l.strip()]
errors = [l for l in lines if l.get("status") == "error"]
by_pair = {}
for l in lines:
    pair, _ = l["id"].rsplit("-", 1)
    l = {k: v for k, v in l.items() if k not in ("time_ms", "id", "line")}
    by_pair.setdefault(pair, []).append(json.dumps(l, sort_keys=True))
differ = [p for p, v in by_pair.items() if len(set(v)) != 1 or len(v) != copies]
bad = len(lines) != n or errors or differ
print("  %d lines of %d, %d errors, %d pairs whose copies differ%s"
      % (len(lines), n, len(errors), len(differ), "" if not bad else "  <-- FAILED"))
sys.exit(1 if bad else 0)
PY
        # the lines of a run that passed are not kept (KEEP=1 keeps them)
        [ "${KEEP:-0}" = 1 ] || [ $rc != 0 ] || rm -f "$out/lines-$tag.jsonl" "$out/busy-$tag.txt"
    done
done
exit $rc
