#!/bin/bash
# setup.sh: install the packages gmatch needs to build and test (Debian 12).
#
# usage: tools/setup.sh          install what is missing (as root, or via sudo)
#        tools/setup.sh --list   print the package names, one per line
#
# apt-get runs only when some package is missing, so on a prepared machine
# this costs a dpkg query and nothing else.
set -euo pipefail

packages=(
    build-essential cmake pkg-config   # compiler (with OpenMP: libgomp), build
    libjpeg62-turbo-dev libpng-dev     # image decoding
    libjansson-dev                     # JSON output of the command line
    libavformat-dev libavcodec-dev     # video input (FFmpeg: demux, decode,
    libswscale-dev libavutil-dev       #   gray conversion)
    check libsubunit-dev               # unit tests (Check links libsubunit)
    python3 python3-numpy              # integration and accuracy tests
    python3-dev python3-setuptools     # the Python module (pip install . in a
    python3-wheel python3-venv         #   venv, nothing downloaded)
    python3-pytest                     #   and its tests
    man-db                             # the install test shows the manual page
    clang libclang-rt-14-dev libomp-dev # the libFuzzer harnesses (tools/fuzz/run.sh):
                                       #   clang, libFuzzer, clang's OpenMP
    parallel slurm-wlm munge           # the batch recipes' tests: GNU parallel, and a
                                       #   one-node Slurm cluster tests/cli/slurm.sh starts
)

if [ "${1:-}" = --list ]; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi

if ! command -v dpkg-query > /dev/null; then
    echo "setup.sh: no dpkg here; install the equivalents of: ${packages[*]}" >&2
    exit 0
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup.sh: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null || {
        echo "setup.sh: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2
        exit 1
    }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
