#!/bin/bash
# test.sh: the whole test suite, as CI runs it.
#
# usage: tools/test.sh
#
# 1. installs missing packages, the test toolchain included (tools/setup.sh
#    --test: Check, pytest, clang and libFuzzer, GNU parallel, Slurm, man-db),
# 2. builds build/ with warnings as errors and runs every ctest entry,
# 3. builds build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer
#    and runs every ctest entry again,
# 4. installs the Python module into a venv with pip and runs its tests
#    (tests/python/run.sh),
# 5. builds the Debian package and the wheel (tools/package.sh), installs
#    each and runs the sample pair through it (tests/package/package.sh; the
#    .deb by dpkg -i where GMATCH_TEST_DPKG=1 and root, as CI, else unpacked),
# 6. builds the libFuzzer harnesses (clang, ASan, UBSan) and runs each for
#    60 seconds on the checked-in corpus (tools/fuzz/run.sh smoke).
# Stops at the first failure; the exit status is 0 only when all passed.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh --test
jobs=$(nproc)

# GMATCH_BUILD_TESTS=ON: the tests are required here (AUTO, the default,
# leaves them out where Check is missing)
cmake -S . -B build -DGMATCH_WERROR=ON -DGMATCH_BUILD_TESTS=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

# -O1 -g: readable sanitizer reports at a bearable speed.
cmake -S . -B build-asan -DGMATCH_WERROR=ON -DGMATCH_SANITIZE=ON -DGMATCH_BUILD_TESTS=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g"
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan --output-on-failure -j "$jobs"

# The Python module, installed by pip into a venv as the README says, and
# its pytest suite (tests/python).
tests/python/run.sh

# The packages, installed and run as a user would.
tests/package/package.sh build/gmatch

# The fuzz smoke: the still decoders, the FFmpeg input path and the
# pipeline, a minute each from the seeds and the findings kept as inputs.
tools/fuzz/run.sh smoke "${GMATCH_FUZZ_SECONDS:-60}"

echo "test.sh: all tests passed (build/, build-asan/, the Python module, the packages and the fuzz smoke)"
