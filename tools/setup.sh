#!/bin/bash
# setup.sh: install the Debian 12 packages gmatch needs, by need.
#
# usage: tools/setup.sh                 building and running: the compiler,
#                                       CMake and the libraries (tools/demo.sh)
#        tools/setup.sh --python        the same and what the Python module's
#                                       build needs (pip install . in a venv)
#        tools/setup.sh --test          everything: the above and the test
#                                       toolchain (tools/test.sh, CI)
#        tools/setup.sh [...] --list    print those package names, one a line
#
# apt-get runs only when some package is missing, so on a prepared machine
# this costs a dpkg query and nothing else.  CUDA is optional and not
# installed here: CMake builds the GPU backend whenever it finds nvcc.
set -euo pipefail

# building and running the command line and the C library
build=(
    build-essential cmake pkg-config   # compiler (with OpenMP: libgomp), build
    libjpeg62-turbo-dev libpng-dev     # image decoding
    libjansson-dev                     # JSON output of the command line
    libavformat-dev libavcodec-dev     # video and other still formats (FFmpeg:
    libswscale-dev libavutil-dev       #   demux, decode, gray conversion)
)
# the Python module (pip install --no-build-isolation --no-deps . in a venv
# made with --system-site-packages; nothing is downloaded)
python=(
    python3 python3-numpy python3-dev
    python3-setuptools python3-wheel python3-venv
)
# the tests (tools/test.sh): what the suites, the install test, the fuzz
# smoke and the batch recipes' tests use
test=(
    check libsubunit-dev               # unit tests (Check links libsubunit)
    python3-pytest                     # the Python module's tests
    man-db                             # the install test shows the manual page
    clang libclang-rt-14-dev libomp-dev # the libFuzzer harnesses (tools/fuzz/run.sh):
                                       #   clang, libFuzzer, clang's OpenMP
    parallel slurm-wlm munge           # the batch recipes' tests: GNU parallel, and a
                                       #   one-node Slurm cluster tests/cli/slurm.sh starts
)

list=0 want_python=0 want_test=0
for a in "$@"; do
    case "$a" in
    --list) list=1 ;;
    --python) want_python=1 ;;
    --test) want_python=1 want_test=1 ;;
    *) echo "usage: tools/setup.sh [--python | --test] [--list]" >&2; exit 2 ;;
    esac
done
packages=("${build[@]}")
[ "$want_python" = 1 ] && packages+=("${python[@]}")
[ "$want_test" = 1 ] && packages+=("${test[@]}")

if [ "$list" = 1 ]; then
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
