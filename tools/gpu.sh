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
# GM_GPU_TESTS (a grep pattern, default all) picks the tests that run.
set -u
cd "$(dirname "$0")/.."
build=${GM_GPU_BUILD:-build-gpu}
dev=${GM_GPU_DEV:-.device}
pick=${GM_GPU_TESTS:-.}
mode=${1:-run}
if [ "$mode" = pack ]; then
  set -e
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGMATCH_CUDA=ON -DGMATCH_WERROR=ON >/dev/null
  cmake --build "$build" -j "$(nproc)"
  rm -rf "$dev" && mkdir -p "$dev/bin"
  progs=$(ls "$build"/test_*_cuda "$build"/bench_* "$build"/gmatch 2>/dev/null)
  cp $progs "$dev/bin/"
  ../shared/device/pack-libs.sh "$dev/libs.tar.xz" "$dev"/bin/*
  du -sh "$dev"
  exit 0
fi

out=${OUT:-out}
mkdir -p "$out"
mkdir -p "$dev/libs" && tar xJf "$dev/libs.tar.xz" -C "$dev/libs"
export LD_LIBRARY_PATH=$PWD/$dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CK_FORK=no CK_DEFAULT_TIMEOUT=600
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$out/device.txt"
fail=0
summary=()
for t in $(ls "$dev"/bin/test_*_cuda | grep -E -- "$pick"); do
  name=$(basename "$t")
  "$t" > "$out/$name.log" 2>&1; rc=$?
  summary+=("$(printf '%-22s %s' "$name" "$( [ $rc = 0 ] && echo pass || { [ $rc = 77 ] && echo SKIPPED || echo "FAIL ($rc)"; })")")
  [ $rc = 0 ] || fail=1
  tail -3 "$out/$name.log"
done
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    for t in $(ls "$dev"/bin/test_*_cuda | grep -E -- "$pick"); do
      name=$(basename "$t")
      GM_TEST_SMALL=1 compute-sanitizer --tool "$tool" --error-exitcode 99 "$t" > "$out/$name.$tool.log" 2>&1; rc=$?
      summary+=("$(printf '%-22s %-10s %s' "$name" "$tool" "$( [ $rc = 0 ] && echo clean || echo "ERRORS ($rc)")")")
      [ $rc = 0 ] || fail=1
      grep -m3 -E "ERROR SUMMARY|Invalid|hazard" "$out/$name.$tool.log"
    done
  done
else
  summary+=("compute-sanitizer not found")
fi
for b in "$dev"/bin/bench_*; do
  [ -n "${GM_GPU_NOBENCH:-}" ] && break
  [ -x "$b" ] || continue
  "$b" "$out/$(basename "$b").csv" 2>&1 | tee "$out/$(basename "$b").log" | tail -40
done
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $fail
