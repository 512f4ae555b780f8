#!/bin/bash
# run.sh: build the libFuzzer harnesses and run them.
#
# usage: tools/fuzz/run.sh smoke [SECONDS]        each harness SECONDS (60) on the
#                                                 checked-in corpus (CI, tools/test.sh)
#        tools/fuzz/run.sh campaign DIR SECONDS [HARNESS...]
#                                                 long runs, one process a harness
#                                                 (fork mode: findings do not stop
#                                                 it), corpus and findings in DIR/
#        tools/fuzz/run.sh repro HARNESS FILE...  run inputs once (a finding)
#
# Harnesses (tools/fuzz/fuzz_*.c, built in build-fuzz/ by clang with ASan,
# UBSan and libFuzzer's coverage): image (the JPEG/PNG decoders), video (the
# FFmpeg input path, a file in memory through a custom AVIOContext),
# pipeline (reference and query from the bytes, prepared and matched on the
# CPU).  Seeds: tools/fuzz/corpus/HARNESS/.  A crash, a leak, a timeout
# (10 s an input) or an out-of-memory (2 GB) fails the run; the input that
# did it is written beside the corpus and printed.  Every finding becomes a
# regression input in tools/fuzz/corpus/HARNESS/ (so smoke runs it first).
set -euo pipefail
cd "$(dirname "$0")/../.."

mode=${1:-smoke}
all=(image video pipeline)
declare -A maxlen=([image]=65536 [video]=65536 [pipeline]=16384)

build() {
    CC=clang cmake -S . -B build-fuzz -DGMATCH_FUZZ=ON -DGMATCH_CUDA=OFF \
        -DGMATCH_BUILD_TESTS=OFF -DGMATCH_BUILD_CLI=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" > /dev/null
    cmake --build build-fuzz -j "$(nproc)" --target $(printf 'fuzz_%s ' "$@") > /dev/null
}

# one harness for SECONDS over the corpora given; writes a line of figures.
# FORK=1: libFuzzer's fork mode, which goes on after a finding (each is
# written to the work folder) so that a long campaign is not ended by one.
fuzz() {
    local h=$1 secs=$2 work=$3 log=$4
    shift 4
    local rc=0 fork=()
    [ "${FORK:-0}" = 1 ] && fork=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    build-fuzz/fuzz_"$h" "${fork[@]}" -max_total_time="$secs" -max_len="${maxlen[$h]}" \
        -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/corpus" "$@" > "$log" 2>&1 || rc=$?
    local execs cov
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [ -z "$execs" ] && execs=$(sed -n 's/^#\([0-9]*\): cov.*/\1/p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    printf '%s: %s s, %s executions, coverage %s edges, findings %s, exit %d\n' "$h" "$secs" \
        "${execs:-?}" "${cov:-?}" "$(ls "$work" | grep -c -E '^(crash|leak|timeout|oom)-')" "$rc"
    if [ "$rc" -ne 0 ]; then
        grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5 >&2
        return 1
    fi
}

case "$mode" in
smoke)
    secs=${2:-60}
    build "${all[@]}"
    fail=0
    for h in "${all[@]}"; do
        work=$(mktemp -d)
        mkdir -p "$work/corpus"
        fuzz "$h" "$secs" "$work" "$work/log" tools/fuzz/corpus/"$h" || {
            fail=1
            ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2> /dev/null >&2 || true
        }
        [ "$fail" -eq 0 ] && rm -rf "$work"
    done
    exit "$fail"
    ;;
campaign)
    dir=${2:?campaign DIR SECONDS [HARNESS...]}
    secs=${3:?campaign DIR SECONDS [HARNESS...]}
    shift 3
    hs=("$@")
    [ ${#hs[@]} -eq 0 ] && hs=("${all[@]}")
    build "${hs[@]}"
    pids=()
    for h in "${hs[@]}"; do
        mkdir -p "$dir/$h/corpus"
        FORK=1 fuzz "$h" "$secs" "$dir/$h" "$dir/$h/log.$(date +%s)" tools/fuzz/corpus/"$h" \
            >> "$dir/summary.txt" &
        pids+=($!)
    done
    fail=0
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    cat "$dir/summary.txt"
    exit "$fail"
    ;;
repro)
    h=${2:?repro HARNESS FILE...}
    shift 2
    build "$h"
    build-fuzz/fuzz_"$h" -runs=1 "$@"
    ;;
*)
    echo "usage: tools/fuzz/run.sh smoke [SECONDS] | campaign DIR SECONDS [HARNESS...] | repro HARNESS FILE..." >&2
    exit 2
    ;;
esac
