#!/bin/bash
# fault.sh: the GPU failing mid-run, through the command line (issue
# "Nothing lost, ever").  GMATCH_CUDA_FAULT makes the N-th kernel launch or
# device allocation fail (N-: every one from the N-th on); whatever fails,
# `gmatch --device cuda` prints the lines `--device cpu` prints (status,
# votes and matrix: the CPU answers from the failure on, the GPU before it
# within 0.01 px), exactly one warning on stderr, and exits 0.  Stills of the
# bundled bench and the bundled video.
#
# usage: tests/cli/fault.sh path/to/gmatch   (from the repository root)
# Exit 77 (skipped) without a usable GPU.
set -u
gm=${1:?usage: fault.sh GMATCH}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-fault.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
ref=data/bench/ref_retina.jpg
stills=(data/bench/q_retina_00_easy.jpg data/bench/q_retina_01_medium.jpg
        data/bench/q_retina_neg.jpg data/bench/q_retina_02_medium.jpg
        data/bench/q_retina_00_easy.jpg)
if ! "$gm" -q --device cuda "$ref" "${stills[0]}" > /dev/null 2> "$tmp/probe"; then
    echo "fault.sh: skipped ($(head -c 200 "$tmp/probe"))"
    exit 77
fi
fails=0
compare() { # WANT GOT NAME
    python3 - "$1" "$2" <<'PY' || { fails=$((fails + 1)); echo "FAIL: $3: results differ"; }
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
ok = len(a) == len(b)
for x, y in zip(a, b):
    if (x["query"], x["frame"], x["status"], x.get("votes")) != (y["query"], y["frame"], y["status"], y.get("votes")):
        ok = False
    elif x["status"] == "match":
        d = max(abs(p - q) for r, s in zip(x["matrix"], y["matrix"]) for p, q in zip(r, s))
        ok &= d < 1e-3 * max(1.0, max(abs(p) for r in x["matrix"] for p in r))
print("  %d lines against %d" % (len(b), len(a)))
sys.exit(0 if ok else 1)
PY
}
for input in stills video; do
    if [ "$input" = stills ]; then args=("$ref" "${stills[@]}"); else
        args=(data/video/ref_clip.jpg data/video/clip.mp4); fi
    "$gm" -q --device cpu --format json "${args[@]}" > "$tmp/cpu.jsonl" 2> /dev/null
    for spec in launch:1 launch:5 launch:40 launch:200 launch:10- alloc:1 alloc:3-; do
        GMATCH_CUDA_FAULT=$spec "$gm" -q --device cuda --format json "${args[@]}" \
            > "$tmp/got.jsonl" 2> "$tmp/err"
        rc=$?
        echo "$input $spec: exit $rc, $(grep -c 'warning: the GPU failed' "$tmp/err") warning(s)"
        [ "$rc" -eq 0 ] || { fails=$((fails + 1)); echo "FAIL: $input $spec: exit $rc: $(tail -c 300 "$tmp/err")"; }
        [ "$(grep -c 'warning:' "$tmp/err")" -le 1 ] ||
            { fails=$((fails + 1)); echo "FAIL: $input $spec: more than one warning"; }
        case $spec in launch:1|launch:5|launch:10-)
            grep -q 'warning: the GPU failed' "$tmp/err" ||
                { fails=$((fails + 1)); echo "FAIL: $input $spec: no warning"; } ;;
        esac
        compare "$tmp/cpu.jsonl" "$tmp/got.jsonl" "$input $spec"
    done
done
[ "$fails" -eq 0 ] && { echo "fault.sh: all checks passed"; exit 0; }
echo "fault.sh: $fails checks failed"
exit 1
