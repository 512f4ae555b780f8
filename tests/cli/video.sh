#!/bin/bash
# video.sh: integration test of video queries (FFmpeg build): every matching
# frame of data/video/clip.mp4 within 3 px of the ground truth and "none" on
# the cut-away frames, frame numbers and timestamps, --frames/--step, other
# codecs and containers, a size change mid-stream, a truncated and a corrupt
# file, an audio-only file, stills and videos mixed in one run, exit codes.
#
# usage: tests/cli/video.sh path/to/gmatch   (from the repository root)
# Needs bash and python3 (stdlib); the damaged files are made from the
# committed ones here, so no ffmpeg program is needed.
set -u
gm=${1:?usage: video.sh GMATCH}
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
d=$PWD/data/video
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-video.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
# run NAME ARGS...: gmatch (killed after 120 s: a hang is a failure) with
# stdout in $tmp/NAME.out, stderr in $tmp/NAME.err, status in $rc
run() { local n=$1; shift; timeout 120 "$gm" "$@" > "$tmp/$n.out" 2> "$tmp/$n.err"; rc=$?; }
expect_rc() { [ "$rc" -eq "$1" ] || fail "$2: exit $rc, want $1 ($(head -c 300 "$tmp/$3.err"))"; }
# check NAME SPEC: python checks of $tmp/NAME.out (JSON lines); SPEC is
# python code with `rows` (the records) and the helpers below
check() {
    python3 - "$tmp/$1.out" "$d/clip.jsonl" "$2" <<'PY' || fail "$1: $2"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
truth = {m["frame"]: m for m in map(json.loads, open(sys.argv[2]))}

def err_px(r, f, s=1.0):
    """Mean corner error of record r against clip frame f; s: the frame was
    scaled by 1/s from 320x180 (query pixel x -> s*(x + 0.5) - 0.5)."""
    T, M = truth[f]["T"], r["matrix"]
    w, h = round(320 / s), round(180 / s)
    e = 0.0
    for x, y in ((0, 0), (w - 1, 0), (w - 1, h - 1), (0, h - 1)):
        u, v = s * (x + 0.5) - 0.5, s * (y + 0.5) - 0.5
        tx, ty = T[0][0] * u + T[0][1] * v + T[0][2], T[1][0] * u + T[1][1] * v + T[1][2]
        mx, my = M[0][0] * x + M[0][1] * y + M[0][2], M[1][0] * x + M[1][1] * y + M[1][2]
        e += ((tx - mx) ** 2 + (ty - my) ** 2) ** 0.5 / 4
    return e

def accurate(r, f=None, s=1.0):
    f = r["frame"] if f is None else f
    if truth[f]["expect"] == "none":
        return r["status"] == "none"
    return r["status"] == "match" and err_px(r, f, s) < 3.0

def pts_ok(r):
    return abs(r["pts_s"] - r["frame"] / 30) < 1e-3

ok = eval(sys.argv[3])
if not ok:
    bad = [(r["frame"], r["status"], round(err_px(r, r["frame"]), 2) if r.get("matrix") and r["frame"] in truth else None)
           for r in rows if not (r["frame"] in truth and accurate(r))]
    print("  rows:", len(rows), "first bad:", bad[:6])
sys.exit(0 if ok else 1)
PY
}

ref=$d/ref_clip.jpg

# ---- the clip: accuracy, numbers, timestamps --------------------------------
run full --format json "$ref" "$d/clip.mp4"
expect_rc 0 "clip.mp4" full
check full 'len(rows) == 50 and [r["frame"] for r in rows] == list(range(50))'
check full 'all(pts_ok(r) for r in rows)'
check full 'all(accurate(r) for r in rows)'
check full 'sum(r["status"] == "none" for r in rows) == 15'
run text "$ref" "$d/clip.mp4"
expect_rc 0 "clip.mp4, text" text
[ "$(grep -vc '^#' "$tmp/text.out")" -eq 50 ] || fail "text: 50 rows"
[ "$(awk '!/^#/ { print $2 }' "$tmp/text.out" | tr '\n' ' ')" = "$(seq -s ' ' 0 49) " ] ||
    fail "text: frame column"

# ---- decoders: --decode cpu and auto are the default; nvdec the same on a GPU,
# else one line and exit 1 for the video while the still in the run matches --
for dec in cpu auto; do
    run dec --decode $dec "$ref" "$d/clip.mp4"
    expect_rc 0 "--decode $dec" dec
    cmp -s "$tmp/dec.out" "$tmp/text.out" || fail "--decode $dec: output differs from the default"
done
run nv --decode nvdec "$ref" "$d/clip.mp4" "$ref"
case $rc in
0) cmp -s <(head -n 51 "$tmp/nv.out") "$tmp/text.out" || fail "--decode nvdec: output differs from --decode cpu" ;;
1) [ "$(wc -l < "$tmp/nv.err")" -eq 1 ] && grep -q "^gmatch: $d/clip.mp4: hardware decoding unavailable: " "$tmp/nv.err" ||
       fail "--decode nvdec without a GPU: one line ($(head -c 300 "$tmp/nv.err"))"
   [ "$(awk '!/^#/ { print $1, $2, $3 }' "$tmp/nv.out" | tr '\n' ' ')" = "$d/clip.mp4 0 error $ref 0 match " ] ||
       fail "--decode nvdec without a GPU: rows ($(head -c 300 "$tmp/nv.out"))" ;;
*) fail "--decode nvdec: exit $rc ($(head -c 300 "$tmp/nv.err"))" ;;
esac
run dec -v --decode auto --frames 0:2 "$ref" "$d/clip.mp4"
grep -q "clip.mp4: decoder: cpu" "$tmp/dec.err" || fail "-v --decode auto: the decoder line ($(head -c 300 "$tmp/dec.err"))"

# ---- selection: the same frames as the full run (40:45 seeks) -----------------
for sel in "40:45 1" "5:20 5" "33: 7" ":3 1"; do
    set -- $sel
    run sel --format json --frames "$1" --step "$2" "$ref" "$d/clip.mp4"
    expect_rc 0 "--frames $1 --step $2" sel
    a=${1%%:*} b=${1##*:}
    check sel "[r['frame'] for r in rows] == list(range(${a:-0}, ${b:-50}, $2)) and all(pts_ok(r) and accurate(r) for r in rows)"
done
run sel --frames 10:5 "$ref" "$d/clip.mp4"
expect_rc 2 "--frames 10:5" sel
run sel --step 0 "$ref" "$d/clip.mp4"
expect_rc 2 "--step 0" sel

# ---- codecs and containers: the first 12 frames ------------------------------
for f in clip_mpeg4.avi clip_mjpeg.mov clip_h264.ts clip_hevc.mkv clip_vp9.webm clip_av1.mkv; do
    run codec --format json "$ref" "$d/$f"
    expect_rc 0 "$f" codec
    check codec "[r['frame'] for r in rows] == list(range(12)) and all(pts_ok(r) and accurate(r) for r in rows)"
done
# frames 6..11 are 256x144: the same picture scaled by 0.8
run sizes --format json "$ref" "$d/sizes.ts"
expect_rc 0 "sizes.ts" sizes
check sizes '[r["frame"] for r in rows] == list(range(12)) and all(pts_ok(r) for r in rows)'
check sizes 'all(accurate(r, s=1.0 if r["frame"] < 6 else 1.25) for r in rows)'

# ---- damage --------------------------------------------------------------------
head -c 50000 "$d/clip.mp4" > "$tmp/truncated.mp4"
python3 - "$d" "$tmp" <<'PY'
import sys, wave
d, t = sys.argv[1:]
b = bytearray(open(d + "/clip.mp4", "rb").read())
for off in (len(b) // 2, len(b) // 2 + 3000):
    b[off:off + 400] = bytes(400)
open(t + "/corrupt.mp4", "wb").write(b)
b = bytearray(open(d + "/clip_h264.ts", "rb").read())
b[len(b) // 2:len(b) // 2 + 1500] = b"\x55" * 1500
open(t + "/corrupt.ts", "wb").write(b)
w = wave.open(t + "/audio.wav", "wb")
w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000)
w.writeframes(bytes(16000))
w.close()
open(t + "/notes.txt", "w").write("this is not an image\n")
open(t + "/garbage.mp4", "wb").write(b"\0\0\0\x20ftypisom" + bytes(range(256)) * 64)
PY
run trunc --format json "$ref" "$tmp/truncated.mp4"
expect_rc 1 "truncated.mp4" trunc
grep -q 'truncated' "$tmp/trunc.err" || fail "truncated: message ($(cat "$tmp/trunc.err"))"
check trunc 'len(rows) >= 20 and [r["frame"] for r in rows] == list(range(len(rows))) and all(accurate(r) for r in rows[:20])'
run cts --format json "$ref" "$tmp/corrupt.ts"
expect_rc 1 "corrupt.ts" cts
grep -q 'could not be decoded' "$tmp/cts.err" || fail "corrupt.ts: message"
check cts '[r["frame"] for r in rows] == list(range(12)) and any(r["status"] == "error" for r in rows) and accurate(rows[0])'
run cmp4 --format json "$ref" "$tmp/corrupt.mp4"
expect_rc 1 "corrupt.mp4" cmp4
check cmp4 '[r["frame"] for r in rows] == list(range(50)) and all(accurate(r) for r in rows[:20])'
for f in audio.wav notes.txt garbage.mp4; do
    run bad --format json "$ref" "$tmp/$f"
    expect_rc 1 "$f" bad
    check bad 'len(rows) == 1 and rows[0]["status"] == "error"'
done
grep -q 'no video stream' "$tmp/bad.err" || grep -q 'garbage.mp4' "$tmp/bad.err" || fail "garbage: message"
run bad "$ref" "$tmp/audio.wav"
grep -q '^gmatch: .*audio.wav: no video stream' "$tmp/bad.err" || fail "audio.wav: message"

# ---- stills and videos in one run ---------------------------------------------
run mixed --format json "$ref" "$d/clip_mpeg4.avi" "$ref" "$tmp/notes.txt" "$d/clip_h264.ts"
expect_rc 1 "mixed run" mixed
check mixed '[(r["query"].rsplit("/", 1)[-1], r["frame"]) for r in rows] == [("clip_mpeg4.avi", i) for i in range(12)] + [("ref_clip.jpg", 0), ("notes.txt", 0)] + [("clip_h264.ts", i) for i in range(12)]'
check mixed '"pts_s" not in rows[12] and rows[12]["status"] == "match" and rows[13]["status"] == "error" and "pts_s" in rows[0]'
# no progress bar when stderr is not a terminal
[ -s "$tmp/full.err" ] && fail "clip.mp4: stderr not empty: $(head -c 200 "$tmp/full.err")"

# the progress bar on a terminal (util-linux script gives one), none with -q
if command -v script > /dev/null; then
    script -qec "'$gm' '$ref' '$d/clip.mp4' > /dev/null" /dev/null > "$tmp/tty.out" 2>&1
    grep -q '/50 frames .*fps' "$tmp/tty.out" || fail "progress bar: $(head -c 200 "$tmp/tty.out" | cat -v)"
    script -qec "'$gm' -q '$ref' '$d/clip.mp4' > /dev/null" /dev/null > "$tmp/tty.out" 2>&1
    grep -q 'frames' "$tmp/tty.out" && fail "progress bar with -q"
fi

[ "$fails" -eq 0 ] && echo "video: all passed"
exit $((fails > 0))
