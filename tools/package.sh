#!/bin/bash
# package.sh: gmatch as packages.
#
# usage: tools/package.sh deb [OUTDIR]     the Debian package: a Release build
#                                          in build-package/ (prefix /usr, no
#                                          tests or tools), cpack -G DEB:
#                                          OUTDIR/gmatch_VERSION_ARCH.deb
#        tools/package.sh wheel [OUTDIR]   the Python module's wheel (the C
#                                          library linked in statically), built
#                                          by pip in a venv of Debian's Python:
#                                          OUTDIR/gmatch-VERSION-*.whl
#
# OUTDIR defaults to out/package.  The .deb holds the command line, the
# shared and static libraries, the headers, gmatch.pc, the CMake package
# and the manual page; its Depends come from dpkg-shlibdeps (the libraries
# the binaries link: libjpeg, libpng, FFmpeg's, jansson, libgomp, ...).
# GMATCH_DEB_CMAKE_ARGS adds CMake arguments to the .deb's build (e.g.
# -DGMATCH_CUDA=OFF; CUDA is built when nvcc is found, as ever).  The wheel
# is for this machine's Python and system libraries (a linux_* tag, not
# manylinux); it needs tools/setup.sh --python's packages.  Nothing is
# downloaded.  tests/package/package.sh installs both and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
out=${2:-out/package}
mkdir -p "$out"
out=$(cd "$out" && pwd)

case $what in
deb)
    # shellcheck disable=SC2086
    cmake -S . -B build-package -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
        -DGMATCH_BUILD_TESTS=OFF -DGMATCH_BUILD_TOOLS=OFF ${GMATCH_DEB_CMAKE_ARGS:-} > /dev/null
    cmake --build build-package -j "$(nproc)" > /dev/null
    (cd build-package && cpack -G DEB -B "$out" > /dev/null)
    rm -rf "$out/_CPack_Packages"
    ls "$out"/gmatch_*.deb
    ;;
wheel)
    py=/usr/bin/python3 # Debian's, whose site-packages hold numpy and setuptools
    [ -x "$py" ] || py=python3
    venv=build-python/venv-wheel
    rm -rf "$venv"
    "$py" -m venv --system-site-packages "$venv"
    "$venv/bin/pip" wheel --no-build-isolation --no-deps -w "$out" . > /dev/null
    rm -rf "$venv"
    ls "$out"/gmatch-*.whl
    ;;
*)
    echo "usage: tools/package.sh deb|wheel [OUTDIR]" >&2
    exit 2
    ;;
esac
