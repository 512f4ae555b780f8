#!/bin/bash
# bench_nvdec.sh: NVDEC against the CPU decoder on the GPU machine (from the
# repository root, after tools/gpu.sh run unpacked $GM_GPU_DEV).  Pack:
#   GM_GPU_DEV=.device-nvdec tools/gpu.sh pack, then into $GM_GPU_DEV/videos:
#   HEVC and AV1 copies of v360/v1080 (ffmpeg -c:v libx265 / libsvtav1) and
#   the damaged files of tests/cli/video.sh (truncated.mp4, corrupt.ts/.mp4).
# Run: GM_GPU_DEV=.device-nvdec GM_GPU_TESTS=^none$ GM_GPU_NOBENCH=1
#   tools/gpu.sh run; tools/bench/bench_nvdec.sh
set -u
D=${GM_GPU_DEV:-.device-nvdec}; B=$D/bin; V=$D/videos; O=${OUT:-out}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/$D/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
ls /usr/lib/x86_64-linux-gnu/libnvcuvid* /usr/lib64/libnvcuvid* 2>/dev/null | head -3
echo "== bench_decode: fps through gm_video_read (decode + copy to host + gray), best of 3"
timeout 90 $B/bench_decode -r 3 -t 0,4 $V/building.mp4 $V/v360.mp4 $V/v720.mp4 $V/v1080.mp4 \
  $V/v360_hevc.mp4 $V/v1080_hevc.mp4 $V/v360_av1.mp4 $V/v1080_av1.mp4 2>"$O/bench.err" | tee "$O/bench.txt"
tail -3 "$O/bench.err"
echo "== compare cpu vs nvdec, item by item"
timeout 40 $B/bench_decode -r 1 -t 0 -c data/video/clip.mp4 data/video/clip_*.* data/video/sizes.ts \
  $V/truncated.mp4 $V/corrupt.ts $V/corrupt.mp4 $V/building.mp4 $V/v1080_hevc.mp4 2>"$O/cmp.err" | grep -E '^compare|^  ' | tee "$O/cmp.txt"
tail -3 "$O/cmp.err"
echo "== gmatch --decode cpu|nvdec, results"
for dec in cpu nvdec; do
  timeout 30 $B/gmatch -q --decode $dec --format json data/video/ref_clip.jpg data/video/clip.mp4 > "$O/clip.$dec.jsonl" 2>"$O/clip.$dec.err"; echo "clip $dec rc=$? $(head -c 200 "$O/clip.$dec.err")"
  timeout 30 $B/gmatch -q --decode $dec --format json $V/ref_building.jpg $V/building.mp4 > "$O/bld.$dec.jsonl" 2>"$O/bld.$dec.err"; echo "building $dec rc=$? $(head -c 200 "$O/bld.$dec.err")"
  python3 $D/bench/score.py "$O/bld.$dec.jsonl" $V/building.jsonl | grep SUMMARY
done
timeout 20 $B/gmatch -v --decode nvdec --frames 0:3 data/video/ref_clip.jpg data/video/clip.mp4 2>&1 >/dev/null | grep -E 'decoder|device:'
python3 - "$O" data/video/clip.jsonl <<'PY'
import json, sys
o, t = sys.argv[1:]
truth = {m["frame"]: m for m in map(json.loads, open(t))}
def load(p): return [json.loads(l) for l in open(p) if l.startswith("{")]
def err_px(r):
    T, M = truth[r["frame"]]["T"], r["matrix"]; e = 0
    for x, y in ((0, 0), (319, 0), (319, 179), (0, 179)):
        tx, ty = T[0][0]*x + T[0][1]*y + T[0][2], T[1][0]*x + T[1][1]*y + T[1][2]
        mx, my = M[0][0]*x + M[0][1]*y + M[0][2], M[1][0]*x + M[1][1]*y + M[1][2]
        e += ((tx-mx)**2 + (ty-my)**2) ** .5 / 4
    return e
for name in ("clip", "bld"):
    a, b = load(f"{o}/{name}.cpu.jsonl"), load(f"{o}/{name}.nvdec.jsonl")
    key = lambda r: (r["frame"], r.get("pts_s"), r["status"], r.get("votes"), r.get("matrix"))
    same = sum(key(x) == key(y) for x, y in zip(a, b))
    print(f"{name}: cpu {len(a)} rows, nvdec {len(b)} rows, identical (frame, pts, status, votes, matrix): {same}")
a = load(f"{o}/clip.nvdec.jsonl")
ok = sum((r["status"] == "none") if truth[r["frame"]]["expect"] == "none" else (r["status"] == "match" and err_px(r) < 3) for r in a)
print(f"clip nvdec: {ok}/{len(a)} accurate (3 px, none on cut-away)")
PY
echo "== end to end, gmatch -q (best of 2), fps over the whole run"
for dev in cuda cpu; do vids="building v360 v720 v1080"; [ $dev = cpu ] && vids="building v1080"; for v in $vids; do for dec in cpu nvdec; do
  best=1e9; for r in 1 2; do t0=$(date +%s.%N); timeout 30 $B/gmatch -q --device $dev --decode $dec $V/ref_building.jpg $V/$v.mp4 > /dev/null 2>&1; t1=$(date +%s.%N)
  best=$(awk -v a=$t0 -v b=$t1 -v m=$best 'BEGIN{print (b-a<m)?b-a:m}'); done
  n=$(wc -l < $V/$v.jsonl); awk -v v=$v -v d=$dev -v c=$dec -v n=$n -v s=$best 'BEGIN{printf "%-9s --device %-4s --decode %-5s %4d frames %6.2f s %7.1f fps\n", v, d, c, n, s, n/s}'
done; done; done 2>&1 | tee "$O/e2e.txt"
