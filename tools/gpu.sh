#!/bin/bash
# gpu.sh: the GPU checks and benchmarks, in one call on the GPU machine.
#
# Here (a machine with nvcc, no GPU needed):
#   tools/gpu.sh pack     builds build-gpu/ (Release, CUDA on, sm_90 + PTX),
#                         puts the CUDA test binaries, the benchmark and the
#                         shared libraries they need into .device/
# On the GPU machine (device tool: carry .device), from the repository root:
#   tools/gpu.sh run      device info, every CUDA-vs-CPU test, the same under
#                         compute-sanitizer memcheck and racecheck, the hash
#                         table benchmark; logs and CSV under $OUT (or out/)
# GM_GPU_BUILD (default build-gpu) and GM_GPU_DEV (default .device) name the
# build and carry folders, so that several checkouts' work can travel apart;
# GM_GPU_TESTS (a grep pattern, default all) picks the tests that run,
# GM_GPU_BENCH (words: hash match scores pairs kprof hprof video videolong gop reverse fault soak sift gpus photo scene seeds; default
# hash match scores video sift fault) the
# benchmarks; GM_GPU_NOBENCH=1 runs none, GM_GPU_NOSAN=1 no sanitizer;
# GM_GPU_INVISIBLE=0 leaves the seeds bench's invisible-change run out;
# GM_GPU_LEAN=1 (pack) packs less video for the carry limit (below).
set -u
cd "$(dirname "$0")/.."
build=${GM_GPU_BUILD:-build-gpu}
dev=${GM_GPU_DEV:-.device}
pick=${GM_GPU_TESTS:-.}
benches=" ${GM_GPU_BENCH:-hash match scores video sift fault} "
want() { case "$benches" in *" $1 "*) return 0 ;; esac; return 1; }
mode=${1:-run}
if [ "$mode" = pack-photo ]; then
  # The photo tier in its own call: a build without FFmpeg (small libraries),
  # the CUDA tests, the public stills and real tiers and the photo tier's
  # images (about 20 MB) into GM_GPU_DEV (default .device-photo); there:
  # GM_GPU_DEV=.device-photo GM_GPU_BENCH="scores photo" tools/gpu.sh run.
  set -e
  photo=${2:-../photo-bench}
  build=${GM_GPU_BUILD:-build-gpu-photo}
  dev=${GM_GPU_DEV:-.device-photo}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGMATCH_CUDA=ON -DGMATCH_FFMPEG=OFF \
        -DGMATCH_WERROR=ON >/dev/null
  cmake --build "$build" -j "$(nproc)"
  rm -rf "$dev" && mkdir -p "$dev/bin" "$dev/bench"
  cp "$build/gmatch" "$build/bench_match" "$build"/test_*_cuda "$dev/bin/"
  # the public stills and real tiers too (no video without FFmpeg)
  cp ../shared/bench/run.sh ../shared/bench/score.py "$dev/bench/"
  cp -r ../shared/bench/stills ../shared/bench/real "$dev/bench/"
  mkdir -p "$dev/photo-bench" && cp -r "$photo/photo" "$dev/photo-bench/"
  # the scene tier's stills (make_scene.sh; its video needs FFmpeg: the
  # other call), when a third argument names its folder
  if [ -n "${3:-}" ]; then
    mkdir -p "$dev/scene-bench/scene"
    cp "$3"/scene/*.jpg "$3/scene/manifest.jsonl" "$dev/scene-bench/scene/"
  fi
  ../shared/device/pack-libs.sh "$dev/libs.tar.xz" "$dev"/bin/*
  strip "$dev"/bin/*
  tar cJf "$dev/bin.tar.xz" -C "$dev" bin && rm -rf "$dev/bin"
  du -sh "$dev"
  exit 0
fi
if [ "$mode" = pack ]; then
  set -e
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGMATCH_CUDA=ON -DGMATCH_WERROR=ON >/dev/null
  cmake --build "$build" -j "$(nproc)"
  rm -rf "$dev" && mkdir -p "$dev/bin"
  progs=$(ls "$build"/test_*_cuda "$build"/bench_* "$build"/gmatch 2>/dev/null)
  cp $progs "$dev/bin/"
  # the public bench (stills, video, real, run.sh, score.py, the OpenCV peer)
  cp -r ../shared/bench "$dev/bench"
  # 1280x720 and 1920x1080 videos for the video benchmark (no ffmpeg there)
  if command -v ffmpeg >/dev/null && [ "${GM_GPU_VIDEO_FRAMES:-300}" -gt 0 ]; then
    tools/bench/bench_video.sh make "$dev/videos" "${GM_GPU_VIDEO_FRAMES:-300}" >/dev/null
  fi
  # gmatch opens FFmpeg at run time (src/io/ffmpeg_load.h), out of ldd's
  # sight: a program linked to the two libraries it opens (their
  # dependencies bring the rest) names them to pack-libs.sh
  if pkg-config --exists libavformat libswscale; then # the build's AUTO found them
    echo 'int main(void) { return 0; }' | cc -x c - -o "$dev/ffmpeg-libs" -Wl,--no-as-needed \
      $(pkg-config --libs libavformat libswscale)
  fi
  ../shared/device/pack-libs.sh "$dev/libs.tar.xz" "$dev"/bin/* $(ls "$dev/ffmpeg-libs" 2>/dev/null)
  rm -f "$dev/ffmpeg-libs"
  # the kernel profiler (tools/bench/kprof.c) and the CUPTI it loads
  if [ -f "$build/kprof.so" ]; then
    cp "$build/kprof.so" "$dev/"
    cupti=$(sed -n 's/^CUDA_cupti_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
    [ -f "$cupti" ] && cp -L "$cupti" "$dev/$(basename "$(readlink -f "$cupti")")"
  fi
  # the host sampler (tools/bench/hprof.c): where the workers' time goes
  [ -f "$build/hprof.so" ] && cp "$build/hprof.so" "$dev/"
  # the carry limit is 64 MiB with the working tree (6.4 MiB): FFmpeg's
  # libraries (46.5 MiB), kprof's CUPTI (4.0), the programs (3.3), all the
  # videos (4.6) and the bench (3.1) come to some 68 MiB with it, so
  # GM_GPU_LEAN=1 leaves out the test programs and what only the video and
  # scores benches read (the 720p and the building clips, the public video
  # and real tiers): 63.3 MiB, for the reverse, kprof and gop benches
  if [ -n "${GM_GPU_LEAN:-}" ]; then
    rm -rf "$dev"/videos/v720.* "$dev"/videos/building.* "$dev/bench/video" "$dev/bench/real" \
      "$dev"/bin/test_*
  fi
  # the programs travel stripped and compressed
  strip "$dev"/bin/*
  tar cJf "$dev/bin.tar.xz" -C "$dev" bin && rm -rf "$dev/bin"
  du -sh "$dev"
  tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  echo "$(du -sb "$dev" | cut -f1) $tree" | awk '{ printf "carry %.1f MiB + tree %.1f MiB = %.1f MiB (the limit 64)\n", $1 / 1048576, $2 / 1048576, ($1 + $2) / 1048576 }'
  exit 0
fi

out=${OUT:-out}
mkdir -p "$out"
mkdir -p "$dev/libs" && tar xJf "$dev/libs.tar.xz" -C "$dev/libs"
[ -f "$dev/bin.tar.xz" ] && tar xJf "$dev/bin.tar.xz" -C "$dev"
export LD_LIBRARY_PATH=$PWD/$dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CK_FORK=no CK_DEFAULT_TIMEOUT=600
# guard CMD...: CMD killed after GM_GPU_GUARD seconds (default 300): with
# CK_FORK=no a test's own timeout cannot end a hang, and one hang took a
# whole call's 600 s once (docs/speed.md, 2026-11-29); exit 124 or 137
# then, named HUNG in the summary
guard() { timeout -k 5 "${GM_GPU_GUARD:-300}" "$@"; }
verdict() { case $1 in 0) echo "$2" ;; 77) echo SKIPPED ;; 124 | 137) echo HUNG ;; *) echo "$3 ($1)" ;; esac; }
# kprof OUTFILE CMD...: CMD under the kernel profiler (tools/bench/kprof.c,
# when packed, with the CUPTI it loads), each kernel's launches and time
# written to OUTFILE
[ -f "$dev/kprof.so" ] && cp "$dev"/libcupti.so* "$dev/libs/" 2>/dev/null
kprof() { local f=$1; shift; CUDA_INJECTION64_PATH=$PWD/$dev/kprof.so KPROF_OUT="$f" "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$out/device.txt"
fail=0
summary=()
for t in "$dev"/bin/test_*_cuda; do
  [ -x "$t" ] || continue # none in a lean pack
  basename "$t" | grep -qE -- "$pick" || continue
  name=$(basename "$t")
  guard "$t" > "$out/$name.log" 2>&1; rc=$?
  summary+=("$(printf '%-22s %s' "$name" "$(verdict $rc pass FAIL)")")
  [ $rc = 0 ] || fail=1
  tail -3 "$out/$name.log"
done
if [ -n "${GM_GPU_NOSAN:-}" ]; then
  summary+=("sanitizers not run (GM_GPU_NOSAN)")
elif command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    for t in "$dev"/bin/test_*_cuda; do
      [ -x "$t" ] || continue
      basename "$t" | grep -qE -- "$pick" || continue
      name=$(basename "$t")
      GM_TEST_SMALL=1 guard compute-sanitizer --tool "$tool" --error-exitcode 99 "$t" > "$out/$name.$tool.log" 2>&1; rc=$?
      summary+=("$(printf '%-22s %-10s %s' "$name" "$tool" "$(verdict $rc clean ERRORS)")")
      [ $rc = 0 ] || fail=1
      grep -m3 -E "ERROR SUMMARY|Invalid|hazard" "$out/$name.$tool.log"
    done
  done
else
  summary+=("compute-sanitizer not found")
fi
if [ -z "${GM_GPU_NOBENCH:-}" ]; then
  if want hash && [ -x "$dev/bin/bench_hash" ]; then
    "$dev/bin/bench_hash" "$out/bench_hash.csv" 2>&1 | tee "$out/bench_hash.log" | tail -40
  fi
  if want match && [ -x "$dev/bin/bench_match" ] && [ -d "$dev/bench/stills" ]; then
    echo "== end to end per stage (bench_match, public stills)"
    guard "$dev/bin/bench_match" -r 5 "$dev/bench/stills/manifest.jsonl" 2>&1 | tee "$out/bench_match.log"
  fi
  # the public stills as one batch of 5,070 pairs (tools/bench/bench_pairs.sh):
  # pairs per second and the GPU's busy share, similarity and auto, the
  # command line's workers and 16, 32 (GM_GPU_PAIRS_WORKERS)
  if want pairs && [ -x "$dev/bin/gmatch" ] && [ -d "$dev/bench/stills" ]; then
    for m in similarity auto; do
      echo "== batch of the public stills, --device cuda --model $m"
      WORKERS=${GM_GPU_PAIRS_WORKERS:-default 16 32} REPS=1 tools/bench/bench_pairs.sh \
        "$dev/bin/gmatch" "$dev/bench/stills" "$out/pairs-$m" --device cuda --model "$m" 2>&1 |
        tee "$out/pairs-$m.log"
    done
  fi
  # where the device's time goes (tools/bench/kprof.c): each kernel's
  # launches and time over the public stills ten times as one batch
  if want kprof && [ -f "$dev/kprof.so" ] && [ -d "$dev/bench/stills" ]; then
    python3 - "$dev/bench/stills" > "$out/kprof-stills.jsonl" <<'PY'
import json, os, sys
d = os.path.abspath(sys.argv[1])
rows = [json.loads(l) for l in open(os.path.join(d, "manifest.jsonl"))]
for _ in range(10):
    for j in rows:
        print(json.dumps({"ref": os.path.join(d, j["ref"]), "query": os.path.join(d, j["query"])}))
PY
    for m in similarity auto; do
      echo "== kernels over the public stills x 10, --device cuda --model $m"
      kprof "$out/kprof-$m.txt" "$dev/bin/gmatch" -q --device cuda --model "$m" --format json \
        --batch "$out/kprof-stills.jsonl" > /dev/null
      head -12 "$out/kprof-$m.txt" | cut -c1-160
    done
  fi
  if [ -x "$dev/bin/gmatch" ] && [ -x "$dev/bench/run.sh" ]; then
    want scores && for d in cuda cpu; do
      echo "== scores, gmatch --device $d"
      "$dev/bench/run.sh" "$dev/bench" "$out/scores-$d.jsonl" "$dev/bin/gmatch" --format json \
        --device "$d" 2>"$out/scores-$d.err" | tee "$out/scores-$d.txt"
    done
    want scores && python3 - "$out/scores-cpu.jsonl" "$out/scores-cuda.jsonl" <<'PY'
import json, sys
def load(p):
    d = {}
    for l in open(p):
        try:
            r = json.loads(l)
        except ValueError:
            continue
        d[(r.get("query"), r.get("frame"))] = r
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
same = sum(1 for k in a if k in b and a[k].get("status") == b[k].get("status") and a[k].get("votes") == b[k].get("votes"))
print("cpu vs cuda: %d of %d results with the same status and votes" % (same, len(a)))
PY
    for tier in photo scene; do
    want $tier && [ -d "$dev/$tier-bench/$tier" ] || continue
      for m in ${GM_GPU_MODELS:-similarity auto}; do
        for d in cuda cpu; do
          echo "== $tier tier, gmatch --device $d --model $m"
          "$dev/bench/run.sh" "$dev/$tier-bench" "$out/$tier-$m-$d.jsonl" "$dev/bin/gmatch" --format json \
            --device "$d" --model "$m" 2>"$out/$tier-$m-$d.err" | tee "$out/$tier-$m-$d.txt"
        done
        python3 - "$out/$tier-$m-cpu.jsonl" "$out/$tier-$m-cuda.jsonl" "$m" "$tier" <<'PY'
import json, sys
def load(p):
    return {(r["query"], r["frame"]): r for r in map(json.loads, open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
same, worst = 0, 0.0
for k, r in a.items():
    s = b.get(k)
    if s and s["status"] == r["status"] and s["votes"] == r["votes"] and s.get("model") == r.get("model"):
        same += 1
        if "matrix" in r and "matrix" in s:
            worst = max(worst, max(abs(x - y) for ra, rb in zip(r["matrix"], s["matrix"]) for x, y in zip(ra, rb)))
print("%s --model %s, cpu vs cuda: %d of %d results with the same status, votes and model; "
      "largest matrix entry difference %.3g" % (sys.argv[4], sys.argv[3], same, len(a), worst))
PY
        [ $tier = photo ] || continue
        echo "== bench_match, photo tier, --model $m"
        "$dev/bin/bench_match" -r 3 -m "$m" "$dev/photo-bench/photo/manifest.jsonl" 2>&1 |
          tee "$out/bench_match_photo_$m.log"
      done
    done
    # seeds: the photo and scene tiers' stills under --seed 1-5
    # (GM_GPU_SEEDS) on the GPU (CPU = CUDA), every gmatch* program carried
    # (variants built beside the default one; GM_GPU_SEED_PROGS names
    # some), and how much the answers depend on the seed
    # (tools/bench/seeds.py)
    if want seeds; then
      seeds=${GM_GPU_SEEDS:-1 2 3 4 5}
      first=${seeds%% *}
      # the same queries with a change nobody sees (tools/bench/invisible.py:
      # one grey level in 2% of the pixels, saved as PNG), made once, run
      # under the first seed (GM_GPU_INVISIBLE=0: not at all)
      invisible=${GM_GPU_INVISIBLE:-1}
      if [ "$invisible" = 1 ]; then
        for tier in photo scene; do
          [ -d "$dev/$tier-bench/$tier" ] && [ ! -d "$dev/invisible-bench/$tier" ] &&
            python3 tools/bench/invisible.py "$dev/$tier-bench/$tier" "$dev/invisible-bench/$tier"
        done
      fi
      for g in ${GM_GPU_SEED_PROGS:-"$dev"/bin/gmatch*}; do
        case $g in */*) ;; *) g=$dev/bin/$g ;; esac
        p=${g##*/}
        for s in $seeds; do
          : > "$out/seeds-$p-$s.jsonl"
          for tier in photo scene; do
            [ -d "$dev/$tier-bench/$tier" ] || continue
            "$dev/bench/run.sh" "$dev/$tier-bench" "$out/seeds-$tier.jsonl" "$g" --format json \
              --device cuda --seed "$s" > "$out/seeds-$p-$tier-$s.txt" 2>&1
            cat "$out/seeds-$tier.jsonl" >> "$out/seeds-$p-$s.jsonl"
          done
          grep -h "^wall\|SUMMARY" "$out/seeds-$p"-*-"$s".txt | sed "s/^/$p seed $s: /"
        done
        if [ "$first" != "$seeds" ]; then
          echo "== $p: answers against the seed"
          python3 tools/bench/seeds.py "$out/seeds-$p"-[0-9]*.jsonl | tee "$out/seeds-$p.txt"
        fi
        [ "$invisible" = 1 ] || continue
        "$dev/bench/run.sh" "$dev/invisible-bench" "$out/invis-$p.jsonl" "$g" --format json \
          --device cuda --seed "$first" > "$out/invis-$p-score.txt" 2>&1
        grep -h "^wall\|SUMMARY" "$out/invis-$p-score.txt" | sed "s/^/$p invisible: /"
        echo "== $p: answers against an invisible change"
        python3 tools/bench/seeds.py "$out/seeds-$p-$first.jsonl" "$out/invis-$p.jsonl" |
          tee "$out/invis-$p.txt"
      done
    fi
    if want video && [ -d "$dev/videos" ]; then
      echo "== video throughput (tools/bench/bench_video.sh)"
      BENCH=$dev/bench DEVICES="cuda cpu" REPS=3 SIFT=$(want sift && echo 1 || echo 0) tools/bench/bench_video.sh run "$dev/videos" "$dev/bin/gmatch" 2>&1 |
        tee "$out/bench_video.txt"
    fi
    if want gop && [ -d "$dev/videos" ] && [ -x "$dev/bin/bench_gop" ]; then
      # a group of pictures a decoder against one decoder's frame threads,
      # on bench_video_long.sh's long videos (the issue's 640x360 x 3,000
      # and 1080p x 1,200 frames: 20 and 8 groups)
      echo "== decoding a group of pictures a decoder (tools/bench/bench_gop.c)"
      "$dev/bin/bench_gop" -r 3 -d 1,2,4,8,16 $(tools/bench/bench_video_long.sh lists "$dev/videos") 2>&1 |
        tee "$out/bench_gop.txt"
    fi
    if want hprof && [ -f "$dev/hprof.so" ] && [ -d "$dev/videos" ]; then
      # where the host's time goes (tools/bench/hprof.c) over bench_video_long.sh's
      # 640x360 x 3,000 frames: the samples travel back, the report runs
      # here with the unstripped binary: tools/bench/hprof_report.py
      # OUT/hprof-MODEL.prof gmatch=build-gpu/gmatch
      echo "== the host's time over 640x360 x 3,000 frames (tools/bench/hprof.c)"
      l360=$(tools/bench/bench_video_long.sh lists "$dev/videos" | grep v360)
      for m in similarity auto; do
        HPROF_OUT="$out/hprof-$m.prof" LD_PRELOAD=$PWD/$dev/hprof.so "$dev/bin/gmatch" -v \
          --device cuda --model "$m" --format json "$dev/videos/ref_building.jpg" "$l360" \
          2>&1 > /dev/null | grep -E "frames in|a frame's match" | sed "s/^/$m: /"
      done
    fi
    if want videolong && [ -d "$dev/videos" ]; then
      echo "== long videos, whole runs (tools/bench/bench_video_long.sh)"
      tools/bench/bench_video_long.sh "$dev/videos" "$dev/bin/gmatch" 2>&1 | tee "$out/bench_video_long.txt"
    fi
    if want reverse && [ -f "$dev/videos/v1080.mp4" ]; then
      # the 1080p clip's frames without a view of the reference (180-194):
      # each runs the reverse search, whose preparation of the frame as a
      # reference is some 40% of a 1080p run's workers' time under
      # similarity (docs/speed.md); -v's stages a frame, one worker and the
      # default, and where the device's time goes (kprof, when packed)
      echo "== the reverse search on 1080p frames (frames 180-194 of v1080.mp4)"
      for w in 1 16; do
        GMATCH_WORKERS=$w "$dev/bin/gmatch" -v --device cuda --model similarity --frames 180:195 \
          "$dev/videos/ref_building.jpg" "$dev/videos/v1080.mp4" 2>&1 >/dev/null |
          grep -E "a frame's match|pipeline|GPU:" | sed "s/^/workers $w: /" | tee -a "$out/reverse.txt"
      done
      if [ -f "$dev/kprof.so" ]; then
        kprof "$out/kprof-reverse.txt" "$dev/bin/gmatch" -q --device cuda --model similarity \
          --frames 180:195 "$dev/videos/ref_building.jpg" "$dev/videos/v1080.mp4" > /dev/null
        head -16 "$out/kprof-reverse.txt" | cut -c1-160
      fi
    fi
    if want gpus; then
      # --device cuda:all and cuda:0,0 (two copies on the one GPU: the
      # spreading of issue "Beyond one process" without a second GPU) against
      # --device cuda: the same lines (time_ms aside), and their speed
      echo "== several GPUs' code: --device cuda:all and cuda:0,0 against cuda"
      for d in cuda cuda:all cuda:0,0; do
        n=$(echo "$d" | tr ':,' '-_') # file names the device tool returns
        "$dev/bench/run.sh" "$dev/bench" "$out/gpus-$n.jsonl" "$dev/bin/gmatch" --format json \
          --device "$d" 2>"$out/gpus-$n.err" | tee "$out/gpus-$n.txt" | grep -E "^wall|overall|total" | head -4
        for v in v360 v1080; do
          [ -f "$dev/videos/$v.mp4" ] || continue
          s0=$(date +%s.%N)
          "$dev/bin/gmatch" --format json -q --device "$d" "$dev/videos/ref_building.jpg" \
            "$dev/videos/$v.mp4" > "$out/gpus-$n-$v.jsonl" 2>>"$out/gpus-$n.err"
          s1=$(date +%s.%N)
          python3 -c 'import sys; n = sum(1 for _ in open(sys.argv[1])); t = float(sys.argv[3]) - float(sys.argv[2]); print("%s %s: %d frames in %.2f s, %.0f fps" % (sys.argv[4], sys.argv[5], n, t, n / t))' \
            "$out/gpus-$n-$v.jsonl" "$s0" "$s1" "$d" "$v" | tee -a "$out/gpus-video.txt"
        done
      done
      PYTHONPATH=tools/bench python3 - "$out" <<'PY' | tee "$out/gpus-compare.txt"
import os, sys
from result_lines import rows, canonical
out = sys.argv[1]
def lines(p):
    return [canonical(r) for r in rows(p)]
bad = 0
for name in ("", "-v360", "-v1080"):
    base = os.path.join(out, "gpus-cuda%s.jsonl" % name)
    if not os.path.exists(base):
        continue
    a = lines(base)
    for d in ("cuda:all", "cuda:0,0"):
        b = lines(os.path.join(out, "gpus-%s%s.jsonl" % (d.replace(":", "-").replace(",", "_"), name)))
        same = sum(x == y for x, y in zip(a, b))
        print("%-9s%s: %d of %d lines the same as --device cuda" % (d, name or " bench", same, len(a)))
        bad += same != len(a) or len(a) != len(b)
print("gpus: " + ("every line the same" if not bad else "DIFFERENCES"))
sys.exit(bad > 0)
PY
      [ "${PIPESTATUS[0]}" -eq 0 ] && summary+=("cuda:all, cuda:0,0 = cuda: pass") || { summary+=("cuda:all, cuda:0,0 = cuda: FAIL"); fail=1; }
    fi
    if want fault; then
      echo "== the GPU failing mid-run, through the command line (tests/cli/fault.sh)"
      tests/cli/fault.sh "$dev/bin/gmatch" 2>&1 | tee "$out/fault_cli.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] && summary+=("fault.sh: pass") || { summary+=("fault.sh: FAIL"); fail=1; }
    fi
    if want soak && [ -d "$dev/videos" ]; then
      echo "== soak: 100,000 frames of 640x360 in one process (tools/bench/soak.sh)"
      tools/bench/soak.sh "$dev/videos" "$dev/bin/gmatch" cuda "${GM_GPU_SOAK_FRAMES:-100000}" 2>&1 |
        tee "$out/soak_cuda.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] && summary+=("soak: pass") || { summary+=("soak: FAIL"); fail=1; }
    fi
    want sift && echo "== OpenCV SIFT+RANSAC on this machine" && "$dev/bench/run.sh" "$dev/bench" "$out/scores-sift.jsonl" python3 "$dev/bench/opencv_match.py" sift \
      2>"$out/scores-sift.err" | tee "$out/scores-sift.txt"
    ls "$out"/scores-*.jsonl >/dev/null 2>&1 && python3 - "$out"/scores-*.jsonl <<'PY'
import json, sys
for p in sys.argv[1:]:
    t = []
    for l in open(p):
        try:
            r = json.loads(l)
        except ValueError:
            continue
        if isinstance(r.get("time_ms"), (int, float)) and r.get("frame", 0) == 0:
            t.append(r["time_ms"])
    t.sort()
    if t:
        print("%s: time_ms per still median %.2f, p90 %.2f (%d)" % (p.split("/")[-1], t[len(t) // 2], t[int(0.9 * len(t))], len(t)))
PY
  fi
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $fail
