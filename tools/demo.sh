#!/bin/bash
# demo.sh: install what is missing, build, and match the sample query.
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
