#!/bin/bash
# package.sh: the Debian package and the Python wheel (tools/package.sh),
# installed and run as a user runs them.
#
# usage: tests/package/package.sh GMATCH   (from the repository root; GMATCH:
#        a built gmatch whose line for the sample pair the packages must give)
#
# 1. builds the .deb (CUDA off unless GMATCH_DEB_CMAKE_ARGS says otherwise:
#    the package test need not wait for nvcc) and checks its files and its
#    Depends (FFmpeg's runtime packages too: gmatch opens them at run time);
# 2. installs it: with GMATCH_TEST_DPKG=1 as root (CI's .ci/run) by dpkg -i
#    into the system, then purges it with dpkg -P (where a gmatch package
#    is installed already, the test leaves it alone and unpacks as below);
#    otherwise unpacked by dpkg-deb -x into a temporary root (the files as dpkg would place them, run from there);
#    runs gmatch --version, the sample pair (the same line as GMATCH), a
#    frame of the sample clip (with FFmpeg), the manual page, and tests/install/example.c built with the package's
#    pkg-config file (the same matrix);
# 3. builds the wheel, installs it into a fresh venv (with Debian's numpy)
#    and matches the sample pair in Python (the same matrix), then removes
#    the venv.
set -u
gm=${1:?usage: package.sh GMATCH}
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-package.XXXXXX") || exit 1
installed=0
cleanup() {
    [ "$installed" = 1 ] && dpkg -P gmatch > /dev/null # purged: no record left
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP # the EXIT trap removes what dpkg -i installed
fail=0
. "$root/tests/check.sh"
cd "$root" || exit 1
# the sample pair's line without the query's name
want=$("$gm" --device cpu data/ref.jpg data/query.jpg | awk '!/^#/ {$1 = ""; print}')
[ -n "$want" ] || { echo "package.sh: $gm gives no line for the sample pair"; exit 1; }

# ---- 1. the .deb -----------------------------------------------------------------
export GMATCH_DEB_CMAKE_ARGS=${GMATCH_DEB_CMAKE_ARGS:--DGMATCH_CUDA=OFF}
check "tools/package.sh deb" tools/package.sh deb "$tmp/out"
deb=$(ls "$tmp"/out/gmatch_*.deb 2> /dev/null | head -1)
[ -n "$deb" ] || { echo "package.sh: no .deb built"; exit 1; }
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || gcc -print-multiarch)
dpkg-deb -c "$deb" | awk '{print $6}' > "$tmp/files"
for f in usr/bin/gmatch usr/include/gmatch.h usr/include/gmatch_video.h \
         usr/include/gmatch_version.h "usr/lib/$multi/libgmatch.so" "usr/lib/$multi/libgmatch.a" \
         "usr/lib/$multi/pkgconfig/gmatch.pc" "usr/lib/$multi/cmake/gmatch/gmatchConfig.cmake" \
         usr/share/man/man1/gmatch.1; do
    check "the .deb holds /$f" grep -qx "\./$f" "$tmp/files"
done
depends=$(dpkg-deb -f "$deb" Depends)
for d in libjpeg62-turbo libpng16-16 libjansson4 libgomp1 libc6; do
    check "the .deb depends on $d" grep -q "$d" <<< "$depends"
done
# FFmpeg is opened at run time (src/io/ffmpeg_load.h): the package names it
ff=0
pkg-config --exists libavformat libavcodec libswscale libavutil 2> /dev/null && ff=1
if [ $ff = 1 ]; then
    for d in libavformat libavcodec libswscale libavutil; do
        check "the .deb depends on $d (opened at run time)" grep -Eq "$d[0-9]+" <<< "$depends"
    done
fi

# ---- 2. installed ----------------------------------------------------------------
preinstalled=0 # a gmatch package on this machine that the test did not install
case $(dpkg-query -W -f='${db:Status-Status}' gmatch 2> /dev/null) in
    "" | not-installed | config-files) ;;
    *) preinstalled=1 ;;
esac
if [ "${GMATCH_TEST_DPKG:-0}" = 1 ] && [ "$(id -u)" -eq 0 ] && [ $preinstalled = 1 ]; then
    # never replace (nor remove) a package that the test did not install
    echo "     (a gmatch package is installed already: the test unpacks instead of dpkg -i)"
fi
if [ "${GMATCH_TEST_DPKG:-0}" = 1 ] && [ "$(id -u)" -eq 0 ] && [ $preinstalled = 0 ]; then
    check "dpkg -i" dpkg -i "$deb"
    installed=1
    prefix=/usr
    libdir_re="(/usr)?/lib/$multi" # /lib is /usr/lib on Debian 12
    run_env=()
    echo "     (installed by dpkg -i)"
else
    check "dpkg-deb -x (not root or GMATCH_TEST_DPKG unset: unpacked, not installed)" \
        dpkg-deb -x "$deb" "$tmp/root"
    prefix=$tmp/root/usr
    libdir_re="$prefix/lib/$multi"
    run_env=(env "LD_LIBRARY_PATH=$prefix/lib/$multi")
fi
ver=$("${run_env[@]}" "$prefix/bin/gmatch" --version 2>&1)
check "gmatch --version ($ver)" grep -qx 'gmatch [0-9.]*' <<< "$ver"
got=$("${run_env[@]}" "$prefix/bin/gmatch" --device cpu data/ref.jpg data/query.jpg | awk '!/^#/ {$1 = ""; print}')
check "the installed gmatch: the sample pair's line" test "$got" = "$want"
if [ $ff = 1 ]; then # a video's frame: FFmpeg found from the installed library
    gotv=$("${run_env[@]}" "$prefix/bin/gmatch" --device cpu --frames 0:1 data/video/ref_clip.jpg data/video/clip.mp4 | grep -c ' match ')
    check "the installed gmatch reads a video (FFmpeg opened at run time)" test "$gotv" = 1
fi
check "the manual page" sh -c "man -l '$prefix/share/man/man1/gmatch.1' | grep -q 'find where a query image appears'"
# C through the package's pkg-config file (its prefix moved to the
# unpacked root where it is not installed)
sed "s|^prefix=.*|prefix=$prefix|" "$prefix/lib/$multi/pkgconfig/gmatch.pc" > "$tmp/gmatch.pc"
flags=$(PKG_CONFIG_PATH=$tmp pkg-config --cflags --libs gmatch)
check "example.c builds with pkg-config" sh -c "cc '$root/tests/install/example.c' $flags -o '$tmp/example'"
# the matrix's first row, as printed by each (text: a b c; example.c: 4 and 2 decimals)
same_matrix() { # text line (without name), example or Python output
    python3 - "$1" "$2" <<'PY'
import re, sys
w = sys.argv[1].split()  # frame status votes confidence a b c d e f ...
got = [float(x) for x in re.findall(r"-?\d+\.\d+", sys.argv[2].split("[", 1)[1])[:6]]
sys.exit(not all(abs(float(a) - b) < 0.01 for a, b in zip(w[4:10], got)))
PY
}
libs=$("${run_env[@]}" ldd "$tmp/example" 2>&1)
check "example.c links the package's libgmatch.so" \
    grep -Eq "libgmatch\.so[^ ]* => $libdir_re/libgmatch\.so" <<< "$libs"
ex=$("${run_env[@]}" "$tmp/example" data/ref.jpg data/query.jpg 2>&1)
check "example.c against the package: the same matrix ($ex)" same_matrix "$want" "$ex"

# ---- 3. the wheel ----------------------------------------------------------------
check "tools/package.sh wheel" tools/package.sh wheel "$tmp/out"
whl=$(ls "$tmp"/out/gmatch-*.whl 2> /dev/null | head -1)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if [ -n "$whl" ]; then
    check "a fresh venv" "$py" -m venv --system-site-packages "$tmp/venv"
    check "pip install the wheel" "$tmp/venv/bin/pip" install --no-index --no-deps "$whl"
    pyout=$(cd "$tmp" && "$tmp/venv/bin/python" -c '
import sys, gmatch
r = gmatch.Reference(sys.argv[1], device="cpu").match(sys.argv[2])
print(r.status, r.model, "%.4f" % r.confidence, "[" + " ".join("%.6f" % v for v in r.matrix.ravel()) + "]")
' "$root/data/ref.jpg" "$root/data/query.jpg" 2>&1)
    # Python's defaults are the command line's: the same matrix and confidence
    check "the wheel from elsewhere, by default: the same matrix ($pyout)" same_matrix "$want" "$pyout"
    check "the wheel from elsewhere, by default: the same confidence" \
        test "$(awk '{print $3}' <<< "$pyout")" = "$(awk '{print $4}' <<< "$want")"
else
    fail=1
fi
[ $fail = 0 ] && echo "package.sh: all passed"
exit $fail
