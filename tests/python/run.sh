#!/bin/bash
# run.sh: the Python module's tests as a new user meets the module: a venv
# that sees Debian's numpy (--system-site-packages), the module installed by
# pip from the repository root with nothing downloaded (README and docs/usage.md, "Python"),
# then Debian's pytest on tests/python.
#
# usage: tests/python/run.sh         (tools/test.sh runs it; the venv and the
#                                     library's build go to build-python/)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3 # Debian's, whose site-packages hold numpy and pytest
[ -x "$py" ] || py=python3
venv=$root/build-python/venv

# pip install . under a Python without the wheel package (a venv without
# Debian's site-packages): it works (setuptools 70.1 and later) or says in
# one line what is missing, never just "invalid command 'bdist_wheel'"
bare=$root/build-python/venv-nowheel
rm -rf "$bare"
"$py" -m venv "$bare"
if ! "$bare/bin/python" -c 'import wheel' 2> /dev/null; then
    if out=$("$bare/bin/pip" install --no-build-isolation --no-deps "$root" 2>&1); then
        echo "run.sh: pip install . without the wheel package: works"
    elif grep -q "needs the 'wheel' package" <<< "$out"; then
        echo "run.sh: pip install . without the wheel package: says so"
    else
        echo "$out" | tail -20
        echo "run.sh: FAIL: pip install . without the wheel package: no clear message" >&2
        exit 1
    fi
fi
rm -rf "$bare"

rm -rf "$venv"
"$py" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --no-build-isolation --no-deps "$root"
# from elsewhere than the source tree, so that the installed module is tested
cd "$root/build-python"
"$venv/bin/python" -c 'import gmatch; print("gmatch", gmatch.__version__, "from", gmatch.__file__)'
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/python"
