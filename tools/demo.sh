#!/bin/bash
# demo.sh: install what is missing for building and running (tools/setup.sh:
# the compiler, CMake and the libraries; no test toolchain), build, and match
# the sample query.  Without Check installed build/ has no tests; tools/test.sh
# installs them and turns them on.
#
# usage: tools/demo.sh [gmatch options]
#   e.g. tools/demo.sh --format json -v
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
cmake -S . -B build
cmake --build build -j "$(nproc)"
set -x
build/gmatch "$@" data/ref.jpg data/query.jpg
