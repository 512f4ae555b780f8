#!/bin/bash
# run.sh: the Python module's tests as a new user meets the module: a venv
# that sees Debian's numpy (--system-site-packages), the module installed by
# pip from the repository root with nothing downloaded (README, "Python"),
# then Debian's pytest on tests/python.
#
# usage: tests/python/run.sh         (tools/test.sh runs it; the venv and the
#                                     library's build go to build-python/)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3 # Debian's, whose site-packages hold numpy and pytest
[ -x "$py" ] || py=python3
venv=$root/build-python/venv
rm -rf "$venv"
"$py" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --no-build-isolation --no-deps "$root"
# from elsewhere than the source tree, so that the installed module is tested
cd "$root/build-python"
"$venv/bin/python" -c 'import gmatch; print("gmatch", gmatch.__version__, "from", gmatch.__file__)'
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/python"
