#!/bin/bash
# cli.sh: integration test of the gmatch command line (options, exit codes,
# output formats, error handling).  Accuracy is tested by accuracy.sh.
#
# usage: tests/cli/cli.sh path/to/gmatch
#
# Needs only bash and python3 (stdlib): the input images are generated into a
# temporary directory, so the test runs from a clean clone.  Every failing
# check is printed; the exit status is 1 when any check failed.
set -u

gm=${1:?usage: cli.sh path/to/gmatch}
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
data=$(cd "$(dirname "$0")/../../data" && pwd)
[ -x "$gm" ] || { echo "cli.sh: $gm: not an executable" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

fails=0 checks=0
pass() { checks=$((checks + 1)); }
fail() {
    checks=$((checks + 1)) fails=$((fails + 1))
    echo "FAIL: $*"
    # the last command's output helps to see why
    [ -s out ] && sed 's/^/  stdout| /' out | head -n 8
    [ -s err ] && sed 's/^/  stderr| /' err | head -n 8
}
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() { local d=$1; shift; if "$@"; then pass; else fail "$d"; fi; }
# run ARGS...: runs gmatch, stdout in ./out, stderr in ./err, status in $rc.
run() { "$gm" "$@" > out 2> err; rc=$?; }
# expect_rc WANT DESCRIPTION ARGS...
expect_rc() {
    local want=$1 d=$2; shift 2
    run "$@"
    if [ "$rc" -eq "$want" ]; then pass; else fail "$d: exit $rc, want $want"; fi
}
# The data lines of the text output (without the header).
rows() { grep -v '^#' out; }
nrows() { rows | wc -l; }
# column N of the text row of query NAME (plain names only)
col() { awk -v q="$1" -v n="$2" '$1 == q { print $n }' out; }

# ---- inputs --------------------------------------------------------------------
# ref.png: 320x240 blocks, discs and lines at many gray levels; query.png: a
# 128x96 crop of it at (100, 70); flat.png: uniform gray (no edges at all);
# truncated.png: a valid PNG cut in half.
python3 - <<'EOF' || { echo "cli.sh: cannot generate the test images" >&2; exit 1; }
import random, struct, zlib

def png(path, w, h, px):
    raw = b"".join(b"\0" + bytes(px[y * w:(y + 1) * w]) for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)
    return data

rnd = random.Random(12345)
W, H = 320, 240
img = [(x * 3 + y * 2) % 40 + 100 for y in range(H) for x in range(W)]
for _ in range(60):
    kind = rnd.random()
    cx, cy = rnd.randrange(W), rnd.randrange(H)
    g = rnd.randrange(0, 256)
    if kind < 0.45:
        w, h = rnd.randrange(6, 50), rnd.randrange(6, 50)
        for y in range(max(0, cy - h // 2), min(H, cy + h // 2)):
            for x in range(max(0, cx - w // 2), min(W, cx + w // 2)):
                img[y * W + x] = g
    elif kind < 0.8:
        r = rnd.randrange(4, 25)
        for y in range(max(0, cy - r), min(H, cy + r + 1)):
            for x in range(max(0, cx - r), min(W, cx + r + 1)):
                if (x - cx) ** 2 + (y - cy) ** 2 <= r * r:
                    img[y * W + x] = g
    else:
        dx, dy = rnd.uniform(-1, 1), rnd.uniform(-1, 1)
        for t in range(rnd.randrange(20, 120)):
            x, y = int(cx + dx * t), int(cy + dy * t)
            for k in (0, 1):
                if 0 <= x + k < W and 0 <= y < H:
                    img[y * W + x + k] = g
png("ref.png", W, H, img)
qx, qy, qw, qh = 100, 70, 128, 96
png("query.png", qw, qh, [img[(qy + y) * W + qx + x] for y in range(qh) for x in range(qw)])
png("flat.png", 96, 96, [128] * (96 * 96))
d = png("/dev/null", W, H, img)
with open("truncated.png", "wb") as f:
    f.write(d[: len(d) // 2])
with open("notes.txt", "w") as f:
    f.write("this is not an image\n")
EOF
mkdir adir

# ---- help, version, usage errors -----------------------------------------------
expect_rc 0 "--help" --help
check "--help prints the usage on stdout" grep -q '^usage: gmatch' out
check "--help prints nothing on stderr" test ! -s err
expect_rc 0 "-h" -h
check "-h prints the usage" grep -q '^usage: gmatch' out
expect_rc 0 "--version" --version
# the version of project() in CMakeLists.txt (ctest passes it)
ver=${GMATCH_EXPECT_VERSION:?set by ctest: the version of project()}
check "--version prints 'gmatch $ver'" test "$(cat out)" = "gmatch $ver"
expect_rc 0 "-V" -V
check "-V prints 'gmatch $ver'" test "$(cat out)" = "gmatch $ver"

expect_rc 2 "no arguments"
check "no arguments: a message on stderr" grep -q 'gmatch: .*missing' err
check "no arguments: a usage hint" grep -q -- '--help' err
check "no arguments: nothing on stdout" test ! -s out
expect_rc 2 "REF without QUERY" ref.png
expect_rc 2 "unknown long option" --frobnicate ref.png query.png
check "unknown option is named" grep -q -- '--frobnicate' err
expect_rc 2 "unknown short option" -Z ref.png query.png
expect_rc 2 "option without its argument" ref.png query.png --format
expect_rc 2 "bad --format" --format xml ref.png query.png
check "bad --format names the value" grep -q 'xml' err
expect_rc 2 "bad --model" --model conformal ref.png query.png
check "bad --model names the value" grep -q 'conformal' err
expect_rc 0 "--model homography" --model homography ref.png query.png
check "--model homography: text header has the columns g h" grep -q '^# query frame status votes confidence a b c d e f g h scale angle_deg uncertainty_px|reason$' out
check "--model homography: a row has 16 columns" test "$(rows | awk '{print NF}')" = 16
expect_rc 0 "--model homography --format json" --model homography --format json ref.png query.png
check "--model homography: JSON matrix is 3x3 with h33 = 1" python3 -c 'import json,sys; m=json.loads(open("out").readline())["matrix"]; sys.exit(not (len(m) == 3 and all(len(r) == 3 for r in m) and m[2][2] == 1))'
check "--model homography: JSON says model homography" python3 -c 'import json,sys; sys.exit(json.loads(open("out").readline())["model"] != "homography")'
expect_rc 0 "--model auto --format json" --model auto --format json ref.png query.png
check "--model auto: the model key names a model and the matrix's shape" python3 -c 'import json,sys; r=json.loads(open("out").readline()); sys.exit(not (r["model"] in ("similarity", "affine", "homography") and len(r["matrix"]) == (3 if r["model"] == "homography" else 2)))'
expect_rc 0 "--model auto: text" --model auto ref.png query.png
check "--model auto: text header has the columns g h" grep -q '^# query frame status votes confidence a b c d e f g h scale angle_deg uncertainty_px|reason$' out
expect_rc 0 "--model similarity: text" --model similarity ref.png query.png
check "--model similarity: text header has six entries" \
    test "$(head -n 1 out)" = "# query frame status votes confidence a b c d e f scale angle_deg uncertainty_px|reason"
check "--model similarity: a row has 14 columns" test "$(rows | awk '{print NF}')" = 14
expect_rc 0 "--model similarity --format json" --model similarity --format json ref.png query.png
check "--model similarity: JSON says similarity, matrix 2x3" python3 -c 'import json,sys; r=json.loads(open("out").readline()); sys.exit(not (r["model"] == "similarity" and len(r["matrix"]) == 2))'
expect_rc 1 "--model affine --format json, a missing query" --model affine --format json ref.png missing.png
check "--model affine: an error line says model affine" python3 -c 'import json,sys; sys.exit(json.loads(open("out").readline())["model"] != "affine")'
expect_rc 0 "--model affine" --model affine --format json ref.png query.png
check "--model affine: JSON matrix is 2x3" python3 -c 'import json,sys; m=json.loads(open("out").readline())["matrix"]; sys.exit(not (len(m) == 2 and all(len(r) == 3 for r in m)))'
for t in -1 abc 2x '' 1e3 99999999999999999999; do
    expect_rc 2 "bad --threads '$t'" --threads "$t" ref.png query.png
done
for s in -1 x 18446744073709551616 ''; do
    expect_rc 2 "bad --seed '$s'" --seed "$s" ref.png query.png
done
for c in -0.1 1.5 nan inf x; do
    expect_rc 2 "bad --min-confidence '$c'" --min-confidence "$c" ref.png query.png
done
for m in 0 -5 x; do
    expect_rc 2 "bad --max-pixels '$m'" --max-pixels "$m" ref.png query.png
done
for u in 0 -1 nan x ''; do
    expect_rc 2 "bad --max-uncertainty '$u'" --max-uncertainty "$u" ref.png query.png
done
# --max-uncertainty: a match's uncertainty_px is its bound; under a bound
# below it the same query is none, uncertain; 'inf' leaves it a match
expect_rc 0 "--max-uncertainty inf" --max-uncertainty inf --format json ref.png query.png
u=$(python3 -c 'import json; print(json.loads(open("out").readline())["uncertainty_px"])')
expect_rc 0 "--max-uncertainty below the match's own" --max-uncertainty "$(python3 -c "print($u / 2)")" ref.png query.png
check "--max-uncertainty below it: none, uncertain" test "$(col query.png 3) $(col query.png 16)" = "none uncertain"
expect_rc 0 "--max-uncertainty above it" --max-uncertainty "$(python3 -c "print($u * 2)")" ref.png query.png
check "--max-uncertainty above it: a match" test "$(col query.png 3)" = match
expect_rc 0 "a query without edges" --format json ref.png flat.png
check "a query without edges: none, no_edges" python3 -c 'import json,sys; r=json.loads(open("out").readline()); sys.exit(not (r["status"] == "none" and r["reason"] == "no_edges"))'
expect_rc 2 "bad --device" --device tpu ref.png query.png
for d in gpu CPU '' nvdec2; do
    expect_rc 2 "bad --decode '$d'" --decode "$d" ref.png query.png
done
check "bad --decode: names the choices" grep -q "^gmatch: --decode: 'nvdec2' is not auto, cpu or nvdec" err
expect_rc 2 "--decode without its argument" ref.png query.png --decode
# --device cuda: a match on a GPU; without one, a one-line reason and exit 1
# (the reference cannot be prepared); in a build without CUDA, a usage error
run --device cuda ref.png query.png
case $rc in
0) check "--device cuda on a GPU: a result row" test "$(nrows)" -eq 1
   check "--device cuda on a GPU: same as --device cpu" \
       test "$("$gm" --device cpu ref.png query.png)" = "$(cat out)" ;;
1) check "--device cuda without a GPU: one line naming the reference" \
       grep -q '^gmatch: ref.png: no usable CUDA device: ' err
   check "--device cuda without a GPU: one line" test "$(wc -l < err)" -eq 1
   check "--device cuda without a GPU: an error row" test "$(col query.png 3)" = error ;;
2) check "--device cuda in a build without CUDA: one line" \
       test "$(cat err)" = "gmatch: --device cuda: this gmatch was built without CUDA (no nvcc at build time)" ;;
*) check "--device cuda: exit 0, 1 or 2 (got $rc)" false ;;
esac
# a run on GPUs 0 to m-1 shows CUDA only those (CUDA starts each GPU it
# sees), said by -v; cuda:all, the CPU and a user's list shorter than m are
# left alone (a build without CUDA says nothing)
if [ "$rc" -ne 2 ]; then
    vis() { "$@" 2>&1 >/dev/null | sed -n 's/^gmatch: CUDA_VISIBLE_DEVICES=\([^ ]*\) .*/\1/p'; }
    for c in "cuda 0" "auto 0" "cuda:1 0,1" "cuda:0,2 0,1,2" "cuda:2,0 0,1,2" "cuda:0,0 0"; do
        set -- $c
        check "--device $1: CUDA shown $2" \
            test "$(vis env -u CUDA_VISIBLE_DEVICES "$gm" -v --device "$1" ref.png query.png)" = "$2"
    done
    check "--device cuda:1 under the user's 3,1,2: 3,1" \
        test "$(vis env CUDA_VISIBLE_DEVICES=3,1,2 "$gm" -v --device cuda:1 ref.png query.png)" = 3,1
    check "--device cuda:1 under the user's 3: left alone" \
        test -z "$(vis env CUDA_VISIBLE_DEVICES=3 "$gm" -v --device cuda:1 ref.png query.png)"
    for d in cuda:all cpu; do
        check "--device $d: CUDA_VISIBLE_DEVICES left alone" \
            test -z "$(vis env -u CUDA_VISIBLE_DEVICES "$gm" -v --device $d ref.png query.png)"
    done
    # on a GPU, a video's workers are the library's choice once the
    # reference is placed: 16 a GPU, at most the cores, whether the first
    # video was read ahead while CUDA started (cuda, cuda:0, a list) or
    # not (GMATCH_PREFETCH=0), and the same lines either way
    if [ "$rc" -eq 0 ] && "$gm" "$data/video/ref_clip.jpg" "$data/video/clip.mp4" --frames 0:1 > /dev/null 2>&1; then
        n=$(nproc); w=$((n < 16 ? n : 16))
        workers() { "$@" 2>&1 >/dev/null | sed -n 's/.*pipeline: \([0-9]*\) workers.*/\1/p'; }
        lines() { "$@" 2>/dev/null | sed 's/"time_ms":[0-9.e+-]*//'; }
        for d in cuda cuda:0; do
            for p in 1 0; do
                check "--device $d, GMATCH_PREFETCH=$p: a video's $w workers" \
                    test "$(workers env GMATCH_PREFETCH=$p "$gm" -v --device $d --frames 0:12 \
                            "$data/video/ref_clip.jpg" "$data/video/clip.mp4")" = "$w"
            done
            check "--device $d: the same lines read ahead or not" \
                test "$(lines "$gm" --device $d --format json --frames 0:12 "$data/video/ref_clip.jpg" "$data/video/clip.mp4")" = \
                     "$(lines env GMATCH_PREFETCH=0 "$gm" --device $d --format json --frames 0:12 "$data/video/ref_clip.jpg" "$data/video/clip.mp4")"
        done
    fi
fi
# --device auto: the same lines as --device cpu, also over a run long enough
# for the GPU, where there is one, to start and take over part way
many=(); for i in $(seq 40); do many+=(query.png); done
run --device auto ref.png "${many[@]}"
check "--device auto: exit 0 over 40 stills" test "$rc" -eq 0
check "--device auto: the same lines as --device cpu" \
    test "$("$gm" --device cpu ref.png "${many[@]}")" = "$(cat out)"

# ---- normal runs ---------------------------------------------------------------
expect_rc 0 "one query" ref.png query.png
# the default model is auto: the header has a homography's eight entries
check "text: header line first" \
    test "$(head -n 1 out)" = "# query frame status votes confidence a b c d e f g h scale angle_deg uncertainty_px|reason"
check "text: one row per query" test "$(nrows)" -eq 1
check "text: 16 columns" test "$(rows | awk '{ print NF }')" = 16
check "text: query is not an error" test "$(col query.png 3)" != error
check "text: default prints nothing on stderr" test ! -s err

expect_rc 0 "--seed 0 --threads 0 --device cpu" --seed 0 --threads 0 --device cpu ref.png query.png
expect_rc 0 "--device auto" --device auto ref.png query.png
# stills do not decode through FFmpeg: every --decode leaves them alone
for d in auto cpu nvdec; do
    expect_rc 0 "--decode $d on stills" --decode "$d" ref.png query.png
done
expect_rc 0 "options after operands (permuted)" ref.png query.png --format json
check "options after operands: JSON output" grep -q '^{' out
expect_rc 0 "-- ends the options" -- ref.png query.png

expect_rc 0 "-v" -v ref.png query.png
check "-v names the device" grep -Eq 'device: (cpu|cuda)' err
check "-v prints the reference preparation" grep -q 'prepare' err
check "-v prints stage timings" grep -q 'vote' err
# OpenMP's idle threads: a shorter spin where the environment chose nothing
# (the command runs itself again with it), the environment's choice kept
run() { env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$gm" "$@" > out 2> err; rc=$?; }
expect_rc 0 "-v, no OpenMP setting" -v ref.png query.png
check "-v: the command's spin" grep -q "OpenMP's idle threads: GOMP_SPINCOUNT=30000" err
run() { OMP_WAIT_POLICY=passive "$gm" "$@" > out 2> err; rc=$?; }
expect_rc 0 "-v, OMP_WAIT_POLICY set" -v ref.png query.png
check "-v: the environment's choice kept" grep -q "OpenMP's idle threads: OMP_WAIT_POLICY=passive$" err
run() { "$gm" "$@" > out 2> err; rc=$?; }
expect_rc 1 "-q with a missing query" -q ref.png query.png missing.png
check "-q still prints errors" grep -q 'missing.png' err
expect_rc 0 "-q" -q ref.png query.png
check "-q: nothing on stderr" test ! -s err

# ---- failures per input --------------------------------------------------------
expect_rc 1 "missing query between good ones" ref.png query.png missing.png query.png
check "missing query: every query gets a row" test "$(nrows)" -eq 3
check "missing query: the good ones are processed" \
    test "$(rows | awk '$1 == "query.png" && $3 != "error"' | wc -l)" -eq 2
check "missing query: an error row" test "$(col missing.png 3)" = error
check "missing query: error row has '-' columns" \
    test "$(rows | awk '$1 == "missing.png" { print $6, $12, $13 }')" = "- - -"
check "missing query: stderr names the file" grep -q '^gmatch: missing.png: ' err

expect_rc 1 "missing reference" missing-ref.png query.png flat.png
check "missing reference: a row per query" test "$(nrows)" -eq 2
check "missing reference: all rows are errors" \
    test "$(rows | awk '$3 == "error"' | wc -l)" -eq 2
check "missing reference: stderr names the reference" grep -q '^gmatch: missing-ref.png: ' err
expect_rc 1 "missing reference (json)" --format json missing-ref.png query.png
check "missing reference: error message names the reference" \
    python3 -c 'import json,sys; r=json.loads(open("out").readline()); sys.exit(not ("missing-ref.png" in r["error"] and r["status"] == "error" and r["query"] == "query.png"))'

expect_rc 1 "a directory as query" ref.png adir
check "directory: error row" test "$(col adir 3)" = error
check "directory: stderr names it" grep -q '^gmatch: adir: ' err
expect_rc 1 "a text file as query" ref.png notes.txt
check "text file: error row" test "$(col notes.txt 3)" = error
expect_rc 1 "a truncated PNG as query" ref.png truncated.png
check "truncated PNG: error row" test "$(col truncated.png 3)" = error
expect_rc 1 "an empty file as query" ref.png /dev/null
check "empty file: error row" test "$(col /dev/null 3)" = error
expect_rc 1 "--max-pixels below the query size" --max-pixels 1000 ref.png query.png
check "--max-pixels: error row" test "$(rows | awk '{ print $3 }' | sort -u)" = error
expect_rc 0 "flat gray query (no edges)" ref.png flat.png
check "flat gray: status none" test "$(col flat.png 3)" = none
check "flat gray: '-' columns" test "$(rows | awk '{ print $6, $15 }')" = "- -"

# ---- JSON ----------------------------------------------------------------------
# jsoncheck: every line of ./out is a JSON object (python3 -m json.tool) with
# exactly the keys its status calls for, in order.
cat > jsoncheck.py <<'EOF'
import json, sys
KEYS = {
    "match": ["query", "frame", "status", "model", "votes", "confidence", "matrix", "scale", "angle_deg",
              "corners", "residual_px", "uncertainty_px", "overlap", "direction", "inliers",
              "ref_size", "query_size", "time_ms"],
    "none": ["query", "frame", "status", "model", "votes", "confidence", "reason", "inliers",
             "ref_size", "query_size", "time_ms"],
    "error": ["query", "frame", "status", "model", "votes", "confidence", "ref_size", "time_ms", "error"],
}
ok = True
lines = open("out", "rb").read().split(b"\n")
if lines[-1] != b"":
    print("  last line not terminated"); ok = False
for raw in lines[:-1]:
    r = json.loads(raw.decode("utf-8"), object_pairs_hook=lambda kv: kv)  # keep order and duplicates
    keys = [k for k, _ in r]
    d = dict(r)
    want = KEYS.get(d.get("status"))
    if keys != want:
        print("  keys %s, want %s" % (keys, want)); ok = False; continue
    if not (isinstance(d["frame"], int) and isinstance(d["votes"], int)
            and isinstance(d["confidence"], (int, float)) and 0 <= d["confidence"] <= 1
            and isinstance(d["time_ms"], (int, float)) and d["time_ms"] >= 0):
        print("  bad value types: %r" % raw); ok = False
    # the default model, auto, says what it chose for a match
    want_models = ("similarity", "affine", "homography") if d["status"] == "match" else ("auto",)
    if d["model"] not in want_models:
        print("  model %r, want one of %r (the default: auto)" % (d["model"], want_models)); ok = False
    if d["status"] == "match":
        m = d["matrix"]
        rows3 = 3 if d["model"] == "homography" else 2
        if not (len(m) == rows3 and all(len(row) == 3 for row in m)):
            print("  bad matrix: %r" % m); ok = False
        w, h = d["query_size"]
        for (x, y), (qx, qy) in zip(d["corners"], [(0, 0), (w - 1, 0), (w - 1, h - 1), (0, h - 1)]):
            if abs(m[0][0] * qx + m[0][1] * qy + m[0][2] - x) > 2e-3 or \
               abs(m[1][0] * qx + m[1][1] * qy + m[1][2] - y) > 2e-3:
                print("  corner (%g, %g) of %r is not the matrix at (%g, %g)" % (x, y, d["corners"], qx, qy)); ok = False
        if not 0 <= d["residual_px"] < 1 or d["inliers"] <= 0:
            print("  residual_px %r, inliers %r" % (d["residual_px"], d["inliers"])); ok = False
        if not 0 < d["uncertainty_px"] < 10:
            print("  uncertainty_px %r" % d["uncertainty_px"]); ok = False
    elif d["status"] == "none" and d["reason"] not in ("no_edges", "no_candidate", "weak", "ambiguous",
                                                       "uncertain", "small_overlap", "horizon"):
        print("  reason %r" % d["reason"]); ok = False
    if "ref_size" in d and d["ref_size"] != [320, 240]:
        print("  ref_size %r, want [320, 240]" % d["ref_size"]); ok = False
sys.exit(0 if ok else 1)
EOF
json_tool() {
    local line
    while IFS= read -r line; do
        printf '%s\n' "$line" | python3 -m json.tool > /dev/null || return 1
    done < out
}
expect_rc 1 "json: match, none, error" --format json ref.png query.png flat.png missing.png
check "json: three lines" test "$(wc -l < out)" -eq 3
check "json: each line passes python3 -m json.tool" json_tool
check "json: exact keys per status" python3 jsoncheck.py
check "json: flat gray is none" \
    python3 -c 'import json,sys; l=[json.loads(x) for x in open("out")]; sys.exit(l[1]["status"] != "none" or l[2]["status"] != "error")'

# Odd but valid file names round-trip through JSON unchanged.
names=("with space.png" 'quote".png' "single'quote.png" 'back\slash.png' "tab	tab.png"
       "café 日本 😀.png" "#hash.png" "-dash.png")
for n in "${names[@]}"; do cp -- query.png "$n"; done
expect_rc 0 "json: odd file names" --format json -- ref.png "${names[@]}"
check "json: odd names: valid JSON" python3 jsoncheck.py
printf '%s\n' "${names[@]}" > names.txt
check "json: odd names round-trip" python3 -c '
import json, sys
want = open("names.txt", encoding="utf-8").read().split("\n")[:-1]
got = [json.loads(l)["query"] for l in open("out", encoding="utf-8")]
sys.exit(got != want)'
check "json: odd names are not errors" \
    python3 -c 'import json,sys; sys.exit(any(json.loads(l)["status"] == "error" for l in open("out")))'

# A name that is not UTF-8 still gives valid JSON.
bad=$(printf 'bad\377name.png')
cp query.png "$bad"
expect_rc 0 "json: non-UTF-8 file name" --format json ref.png "$bad"
check "json: non-UTF-8 name: valid JSON with U+FFFD" \
    python3 -c 'import json,sys; r=json.loads(open("out","rb").read().decode("utf-8")); sys.exit(r["query"] != "bad\ufffdname.png")'

# Text output keeps columns countable for odd names.
expect_rc 0 "text: odd file names" -- ref.png "${names[@]}"
check "text: a name with a space is quoted" grep -q '^"with space.png" 0 ' out
check "text: a name with a tab is quoted and escaped" grep -q '^"tab\\ttab.png" 0 ' out
check "text: every odd name gives 16 columns" \
    python3 -c '
import shlex, sys
rows = [l for l in open("out", encoding="utf-8") if not l.startswith("#")]
sys.exit(len(rows) != 8 or any(len(shlex.split(l)) != 16 for l in rows))'

# ---- output file ---------------------------------------------------------------
expect_rc 0 "-o FILE" -o result.txt ref.png query.png
check "-o: nothing on stdout" test ! -s out
check "-o: the results are in FILE" grep -q '^query.png ' result.txt
expect_rc 0 "--output FILE (json)" --format json --output result.json ref.png query.png
check "--output: JSON in FILE" python3 -c 'import json; json.loads(open("result.json").readline())'
expect_rc 2 "-o into a missing directory" -o nodir/x/result.txt ref.png query.png
check "-o failure names the file" grep -q 'nodir/x/result.txt' err
expect_rc 2 "-o to a directory" -o adir ref.png query.png
if [ -w /dev/full ]; then
    expect_rc 1 "writing to /dev/full" ref.png query.png -o /dev/full
    check "/dev/full: a write error message" grep -qi 'error' err
    "$gm" ref.png query.png > /dev/full 2> err; rc=$?
    check "stdout on /dev/full: exit 1 (got $rc)" test "$rc" -eq 1
    check "stdout on /dev/full: a message" grep -qi 'error' err
fi

# ---- standard input, other still formats, a video frame as the reference ------
# ref.pgm and ref.bmp hold ref.png's pixels; query16.png and ref16.png are
# query.png and ref.png as 16-bit PNGs of 10-bit data, which come back to the
# same 8 bits (round(v * 1023 / 255), scaled by their range).
python3 - <<'EOF' || { echo "cli.sh: cannot generate the format images" >&2; exit 1; }
import struct, zlib
def read_png8(path):  # the gray 8-bit PNGs written above: one IDAT, filter 0
    d = open(path, "rb").read()
    w, h = struct.unpack(">II", d[16:24])
    i, idat = 8, b""
    while i < len(d):
        n, t = struct.unpack(">I4s", d[i:i + 8])
        if t == b"IDAT":
            idat += d[i + 8:i + 8 + n]
        i += 12 + n
    raw = zlib.decompress(idat)
    return w, h, [raw[y * (w + 1) + 1 + x] for y in range(h) for x in range(w)]
def png16(path, w, h, px):
    raw = b"".join(b"\0" + b"".join(struct.pack(">H", v) for v in px[y * w:(y + 1) * w])
                   for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0))
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
w, h, px = read_png8("ref.png")
open("ref.pgm", "wb").write(b"P5\n%d %d\n255\n" % (w, h) + bytes(px))
row = (w * 3 + 3) // 4 * 4
bmp = b"".join(b"".join(bytes((v, v, v)) for v in px[y * w:(y + 1) * w]).ljust(row, b"\0")
               for y in reversed(range(h)))
open("ref.bmp", "wb").write(b"BM" + struct.pack("<IHHI", 54 + len(bmp), 0, 0, 54)
                            + struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(bmp), 2835, 2835, 0, 0) + bmp)
png16("ref16.png", w, h, [round(v * 1023 / 255) for v in px])
qw, qh, qpx = read_png8("query.png")
png16("query16.png", qw, qh, [round(v * 1023 / 255) for v in qpx])
EOF
# a row without its query name
tail_of() { sed 's/^[^ ]* //'; }
run ref.png query.png
want=$(rows | tail_of)
"$gm" - query.png < ref.png > out 2> err; rc=$?
check "'-' as REF: exit 0 (got $rc)" test "$rc" -eq 0
check "'-' as REF: the same result as the file" test "$(rows | tail_of)" = "$want"
"$gm" ref.png - < query.png > out 2> err; rc=$?
check "'-' as QUERY: exit 0 (got $rc)" test "$rc" -eq 0
check "'-' as QUERY: its line is named '-'" test "$(col - 3)" = match
check "'-' as QUERY: the same result as the file" test "$(rows | tail_of)" = "$want"
expect_rc 2 "'-' twice" - - query.png
check "'-' twice: says it is read once" grep -q 'read once' err
"$gm" ref.png - query.png < /dev/null > out 2> err; rc=$?
check "empty standard input: exit 1 (got $rc)" test "$rc" -eq 1
check "empty standard input: an error line for '-'" test "$(col - 3)" = error
check "empty standard input: the other query still matched" test "$(col query.png 3)" = match
check "empty standard input: a message" grep -q -- '-: empty file' err
: > empty.jpg
"$gm" ref.png empty.jpg query.png > out 2> err; rc=$?
check "an empty query file: exit 1 (got $rc)" test "$rc" -eq 1
check "an empty query file: an error line" test "$(col empty.jpg 3)" = error
check "an empty query file: the other query still matched" test "$(col query.png 3)" = match
check "an empty query file: one line naming it, 'empty file'" \
    test "$(cat err)" = "gmatch: empty.jpg: empty file"
"$gm" empty.jpg query.png > out 2> err; rc=$?
check "an empty reference file: exit 1 (got $rc)" test "$rc" -eq 1
check "an empty reference file: one line naming it, 'empty file'" \
    test "$(cat err)" = "gmatch: empty.jpg: empty file"
expect_rc 0 "-o -" -o - ref.png query.png
check "-o -: the results on stdout" test "$(rows | tail_of)" = "$want"
check "-o -: no file named '-'" test ! -e ./-
run ref16.png query16.png
check "16-bit PNGs of 10-bit data: the same result as the 8-bit ones" test "$(rows | tail_of)" = "$want"
run ref.pgm query.png
if grep -q 'without FFmpeg' err; then
    echo "cli.sh: built without FFmpeg: PGM, BMP and video references not checked"
else
    check "a PGM reference: the same result as the PNG" test "$(rows | tail_of)" = "$want"
    run ref.bmp query.png
    check "a BMP reference: the same result as the PNG" test "$(rows | tail_of)" = "$want"
    run ref.png ref.pgm
    check "a PGM query: matched (got $(col ref.pgm 3))" test "$(col ref.pgm 3)" = match
    expect_rc 0 "--ref-frame 3" --ref-frame 3 --frames 3:4 --format json "$data/video/clip.mp4" \
        "$data/video/clip.mp4"
    check "--ref-frame 3: frame 3 found in itself at the identity" python3 -c '
import json, sys
r = json.loads(open("out").readline())
m = r["matrix"]
sys.exit(not (r["status"] == "match" and abs(m[0][0] - 1) < 0.01 and abs(m[0][2]) < 1 and abs(m[1][2]) < 1))'
    expect_rc 1 "--ref-frame past the end" --ref-frame 500 "$data/video/clip.mp4" query.png
    check "--ref-frame past the end: the frame count" grep -q 'the video has 50 frames' err
    check "--ref-frame past the end: an error line" test "$(col query.png 3)" = error
fi
expect_rc 2 "--ref-frame -1" --ref-frame -1 ref.png query.png

# ---- pictures (--draw) ----------------------------------------------------------
expect_rc 0 "--draw" --draw pics ref.png query.png flat.png
check "--draw: a picture per still" test -s pics/query.png.png -a -s pics/flat.png.png
check "--draw: the results as without it" test "$(rows | grep query.png | tail_of)" = "$want"
# the pictures are PNGs gmatch reads back: the match's is the reference's
# width (320, the caption bar below), the none's the two side by side
"$gm" --format json pics/query.png.png pics/flat.png.png > out 2> err
check "--draw: the pictures read back as PNGs" python3 -c '
import json, sys
r = json.loads(open("out").readline())
sys.exit(not (r["ref_size"][0] == 400 and r["ref_size"][1] > 240 and r["query_size"][0] >= 320 + 96))'
# names mirror the inputs' paths; what would repeat is numbered, never
# written over; the caption names the input (two pictures of one result,
# named apart, differ)
mkdir -p d1 d2 && cp query.png d1/q.png && cp query.png d2/q.png
expect_rc 0 "--draw, one name in two folders" --draw dpics ref.png d1/q.png d2/q.png query.png ./query.png
check "--draw: the folders mirrored" test -s dpics/d1/q.png.png -a -s dpics/d2/q.png.png
check "--draw: the same picture twice numbered" test -s dpics/query.png.png -a -s dpics/query.png-2.png
check "--draw: nothing else" test "$(find dpics -type f | wc -l)" -eq 4
differ() { ! cmp -s "$1" "$2"; }
check "--draw: the caption names the file" differ dpics/d1/q.png.png dpics/d2/q.png.png
expect_rc 0 "--draw, a path with .. and an absolute one" --draw upics ref.png ../"$(basename "$tmp")"/query.png "$tmp/query.png"
check "--draw: '..' as '__', '/' dropped" \
    test -s "upics/__/$(basename "$tmp")/query.png.png" -a -s "upics${tmp}/query.png.png"
expect_rc 2 "--draw onto a file" --draw ref.png ref.png query.png
check "--draw onto a file: says why" grep -q 'draw' err
if "$gm" "$data/video/ref_clip.jpg" "$data/video/clip.mp4" --frames 0:1 > /dev/null 2>&1; then
    ln -s "$data/video" video
    expect_rc 0 "--draw a video" -q --draw vpics --draw-every 20 "$data/video/ref_clip.jpg" video/clip.mp4
    check "--draw a video: frames 0, 20, 40 and the path" \
        test -s vpics/video/clip.mp4_0.png -a -s vpics/video/clip.mp4_20.png -a -s vpics/video/clip.mp4_40.png -a -s vpics/video/clip.mp4_path.png
    check "--draw a video: no other frame" test "$(find vpics -type f | wc -l)" -eq 4
fi
expect_rc 2 "--draw-every 0" --draw pics --draw-every 0 ref.png query.png

# ---- every still format as the reference and as the query ----------------------
# data/formats: a 240x240 reference and its 120x120 crop at (60, 70) in each
# format (data/README.md); each as REF against the PNG query and as QUERY
# against the PNG reference: a match within 1 px of the translation.
near_60_70() { # the text row in ./out: c near 60, f near 70, a near 1
    awk '!/^#/ { ok = $3 == "match" && ($8 - 60) ^ 2 < 1 && ($11 - 70) ^ 2 < 1 && ($6 - 1) ^ 2 < 1e-4 }
         END { exit !ok }' out
}
fmt=$data/formats
if "$gm" "$fmt/ref.bmp" "$fmt/query.png" > /dev/null 2>&1; then
    for f in "$fmt"/ref*; do
        case $f in */ref.png) continue ;; esac
        q=$fmt/query${f#$fmt/ref}
        run "$f" "$fmt/query.png"
        check "$(basename "$f") as REF: the crop at (60, 70)" near_60_70
        run "$fmt/ref.png" "$q"
        check "$(basename "$q") as QUERY: at (60, 70)" near_60_70
    done
else
    echo "cli.sh: built without FFmpeg: only JPEG and PNG are read; formats not checked"
fi

# ---- determinism ---------------------------------------------------------------
strip_time() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); r.pop("time_ms", None); print(json.dumps(r))' "$1"; }
expect_rc 0 "--seed 7 --threads 1" --format json --seed 7 --threads 1 -o t1.json ref.png query.png flat.png query.png
expect_rc 0 "--seed 7 --threads 2" --format json --seed 7 --threads 2 -o t2.json ref.png query.png flat.png query.png
check "same seed, 1 and 2 threads: same output" \
    test "$(strip_time t1.json)" = "$(strip_time t2.json)"
check "same seed, same query twice: same result" \
    python3 -c 'import json,sys; l=[json.loads(x) for x in open("t1.json")]; [r.pop("time_ms") for r in l]; sys.exit(l[0] != l[2])'

echo "cli.sh: $((checks - fails)) of $checks checks passed"
[ "$fails" -eq 0 ]
