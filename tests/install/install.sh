#!/bin/bash
# install.sh: gmatch as a user installs and links it.  Installs BUILD into a
# temporary prefix (cmake --install), then builds tests/install/example.c
# against it four ways (pkg-config and find_package; the shared and the
# static library), runs each on the sample pair, and checks that every one
# finds the match the gmatch binary finds; also the manual page and the
# installed binary.
#
# usage: tests/install/install.sh BUILD    (from the repository root)
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
. "$here/../check.sh"
prefix=$tmp/prefix
check "cmake --install" cmake --install "$build" --prefix "$prefix"
for f in bin/gmatch include/gmatch.h include/gmatch_version.h lib/libgmatch.a lib/libgmatch.so \
         lib/pkgconfig/gmatch.pc lib/cmake/gmatch/gmatchConfig.cmake share/man/man1/gmatch.1; do
    check "installed $f" test -e "$prefix/$f"
done
check "the installed binary runs" "$prefix/bin/gmatch" --version
check "man -l shows the page" sh -c "man -l '$prefix/share/man/man1/gmatch.1' | grep -q 'find where a query image appears'"
# the shared library exports the public API and nothing else
check "libgmatch.so exports only gm_* of gmatch.h" sh -c "
    nm -D --defined-only '$prefix/lib/libgmatch.so' | awk '{print \$3}' | grep -v '^_' | sort > '$tmp/syms'
    grep -ho '^GM_API [^(]*(' '$here/../../include/'*.h | sed 's/.* \**\([a-z_0-9]*\)(\$/\1/' | sort > '$tmp/api'
    diff '$tmp/api' '$tmp/syms'"

expect=$("$build/gmatch" --device cpu data/ref.jpg data/query.jpg | awk '!/^#/ {print $6, $7, $8}')
run_ex() { # name binary: its a b c match the CLI's to the printed digits
    local got
    got=$("$2" data/ref.jpg data/query.jpg) || { echo "$got"; return 1; }
    echo "$got"
    echo "$got" | grep -q "^gmatch " || return 1
    awk -v e="$expect" -v g="$got" 'BEGIN {
        split(e, a, " "); n = split(g, b, /[][; ]+/)
        for (i = 1; i <= n; i++) if (b[i] == "similarity") break
        d = 0; for (k = 1; k <= 3; k++) { x = a[k] - b[i + k]; if (x < 0) x = -x; if (x > d) d = x }
        exit !(d < 0.01) }'
}
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc_flags=$(pkg-config --cflags gmatch) && libs=$(pkg-config --libs gmatch) &&
    static_libs=$(pkg-config --static --libs gmatch | sed 's/-lgmatch /-Wl,-Bstatic -lgmatch -Wl,-Bdynamic /')
check "pkg-config, shared: cc builds" sh -c "cc '$here/example.c' $cc_flags $libs -o '$tmp/ex_pc_shared'"
check "pkg-config, shared: links libgmatch.so" sh -c "ldd '$tmp/ex_pc_shared' | grep -q 'libgmatch.so'"
check "pkg-config, shared: runs, finds the match" run_ex pc-shared "$tmp/ex_pc_shared"
check "pkg-config --static: cc builds" sh -c "cc '$here/example.c' $cc_flags $static_libs -o '$tmp/ex_pc_static'"
check "pkg-config --static: no libgmatch.so needed" sh -c "! ldd '$tmp/ex_pc_static' | grep -q 'libgmatch'"
check "pkg-config --static: runs, finds the match" run_ex pc-static "$tmp/ex_pc_static"
check "find_package: configures" cmake -S "$here" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$prefix"
check "find_package: builds" cmake --build "$tmp/b"
check "find_package gmatch::gmatch: runs, finds the match" run_ex cm-shared "$tmp/b/example_shared"
check "find_package gmatch::gmatch_static: runs, finds the match" run_ex cm-static "$tmp/b/example_static"
check "find_package gmatch::gmatch_static: no libgmatch.so needed" sh -c "! ldd '$tmp/b/example_static' | grep -q 'libgmatch'"
exit $fail
