#!/bin/bash
# bench_auto.sh: what --device auto costs and saves, as whole processes
# (docs/speed.md, "auto"): gmatch --device cpu, cuda and auto, alternating,
# REPS runs each (default 5), on 1, 6 and 72 stills of the bundled sample
# pair and, when a photo tier is given, one still against its first large
# reference; the wall time's range per device, and whether the three
# devices printed the same lines (status, votes, model, every matrix entry
# to 1e-6; time_ms aside).  Under auto, -v's device lines of the last run
# show where the library moved the reference to the GPU.
#
# usage: tools/bench/bench_auto.sh GMATCH [PHOTO_BENCH_DIR]   (from the repository root)
set -u
gm=$1
photo=${2:-}
reps=${REPS:-5}
out=${OUT:-out}/auto
mkdir -p "$out"
ref=data/ref.jpg q=data/query.jpg
many() { for _ in $(seq 1 "$1"); do echo "$q"; done; }
runs=("one:$ref:$(many 1)" "six:$ref:$(many 6 | tr '\n' ' ')" "many72:$ref:$(many 72 | tr '\n' ' ')")
if [ -n "$photo" ] && [ -f "$photo/photo/manifest.jsonl" ]; then
  pr=$(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(r["ref"], r["query"])' \
       "$photo/photo/manifest.jsonl")
  set -- $pr
  runs+=("photo1:$photo/photo/$1:$photo/photo/$2")
fi
for run in "${runs[@]}"; do
  name=${run%%:*} rest=${run#*:}
  r=${rest%%:*} qs=${rest#*:}
  declare -A lo=() hi=()
  for k in $(seq 1 "$reps"); do
    for d in cpu cuda auto; do
      s0=$(date +%s%N)
      # shellcheck disable=SC2086
      "$gm" -v --format json --device "$d" "$r" $qs > "$out/$name-$d.jsonl" 2> "$out/$name-$d.err"
      ms=$(( ($(date +%s%N) - s0) / 1000000 ))
      [ -z "${lo[$d]:-}" ] || [ "$ms" -lt "${lo[$d]}" ] && lo[$d]=$ms
      [ -z "${hi[$d]:-}" ] || [ "$ms" -gt "${hi[$d]}" ] && hi[$d]=$ms
    done
  done
  same=$(python3 - "$out/$name-cpu.jsonl" "$out/$name-cuda.jsonl" "$out/$name-auto.jsonl" <<'PY'
import json, sys
def rows(p):
    return [json.loads(l) for l in open(p) if l.strip()]
a = rows(sys.argv[1])
bad = 0
for p in sys.argv[2:]:
    b = rows(p)
    if len(a) != len(b):
        bad += 1
        continue
    for x, y in zip(a, b):
        if (x.get("status"), x.get("votes"), x.get("model")) != (y.get("status"), y.get("votes"), y.get("model")):
            bad += 1
        elif "matrix" in x and max(abs(u - v) for ra, rb in zip(x["matrix"], y["matrix"]) for u, v in zip(ra, rb)) > 1e-6:
            bad += 1
print("same lines" if not bad else "%d DIFFERENT lines" % bad)
PY
)
  moved=$(grep -h "device:" "$out/$name-auto.err" | sed 's/^gmatch: //' | tr '\n' '|')
  printf '%-7s %3d lines  cpu %s-%s ms  cuda %s-%s ms  auto %s-%s ms  %s  auto: %s\n' "$name" \
    "$(wc -l < "$out/$name-cpu.jsonl")" "${lo[cpu]}" "${hi[cpu]}" "${lo[cuda]}" "${hi[cuda]}" \
    "${lo[auto]}" "${hi[auto]}" "$same" "$moved"
  unset lo hi
done
