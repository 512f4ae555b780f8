# check.sh: the ok/FAIL lines of the shell tests that install gmatch
# (tests/install/install.sh, tests/package/package.sh), sourced.
#
# check NAME COMMAND...: runs COMMAND, prints "ok   NAME" or "FAIL NAME"
# and the first lines of its output; a failure sets fail=1.  Needs $tmp (a
# folder of the caller's) for the output.
check() {
    local name=$1
    shift
    if "$@" > "$tmp/check.out" 2>&1; then
        echo "ok   $name"
    else
        echo "FAIL $name"
        sed 's/^/     /' "$tmp/check.out" | head -20
        fail=1
    fi
}
