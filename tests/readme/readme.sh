#!/bin/bash
# readme.sh: every command of README.md runs as written, on the bundled
# sample data.  The README's fenced blocks, by their language:
#   sh      each command run here (from a folder holding data/ and tools/
#           of the repository, with GMATCH first on PATH as gmatch); each
#           must exit 0
#   c       compiled against this build's libgmatch.so and run; it must
#           print a match
#   text    the text output shown: it must be what gmatch prints for the
#           sample pair and data/bench's gravel negative (SAMPLES)
#   json    the JSON lines shown: the same values gmatch prints for them
#           (time_ms apart)
#   python  run by tests/python/test_readme.py (the installed module)
#   (none)  commands run elsewhere: each must be listed, with what runs
#           it, in tests/readme/elsewhere.txt
# The README stays a manual: at most 260 lines.
#
# usage: tests/readme/readme.sh GMATCH BUILD [CC_FLAGS...]
#        (from the repository root; CC_FLAGS: a sanitizer build's)
set -u
gm=${1:?usage: readme.sh GMATCH BUILD [CC_FLAGS...]}
build=${2:?usage: readme.sh GMATCH BUILD [CC_FLAGS...]}
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
case $build in /*) ;; *) build=$PWD/$build ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin" "$tmp/work"
ln -s "$gm" "$tmp/bin/gmatch"
ln -s "$root/data" "$tmp/work/data"
ln -s "$root/tools" "$tmp/work/tools"

python3 - "$root/README.md" "$root/tests/readme/elsewhere.txt" "$tmp" "$build" "$root" "$@" <<'PY'
import json, os, re, shlex, subprocess, sys
readme, elsewhere, tmp, build, root = sys.argv[1:6]
cc_flags = sys.argv[6:]
work = os.path.join(tmp, "work")
env = dict(os.environ, PATH=os.path.join(tmp, "bin") + os.pathsep + os.environ["PATH"])
fails, ran = [], 0
# the queries of the output shown: the sample pair's match and a negative's none
SAMPLES = ["data/ref.jpg", "data/query.jpg", "data/bench/q_gravel_neg.jpg"]

def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)

text = open(readme).read()
if text.count("\n") > 260:
    fail("README.md has %d lines: a manual of about 250 at most" % text.count("\n"))
blocks = re.findall(r"^```([a-z]*)\n(.*?)^```$", text, re.S | re.M)
if not blocks:
    fail("no code block found in README.md")

def commands(body):
    """The block's commands: lines joined at a trailing backslash, comments
    and blank lines left out."""
    out, cur = [], ""
    for line in body.splitlines():
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.lstrip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out

def run(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), cwd=work, env=env,
                          capture_output=True, text=True, timeout=600, **kw)

listed = {}
for line in open(elsewhere):
    if line.strip() and not line.startswith("#"):
        cmd, _, where = line.rstrip("\n").partition("\t")
        listed[cmd] = where
for lang, body in blocks:
    if lang == "sh":
        for cmd in commands(body):
            r = run(["bash", "-c", cmd])
            ran += 1
            print("%s %s" % ("ok  " if r.returncode == 0 else "FAIL", cmd))
            if r.returncode != 0:
                fail("%s: exit %d\n%s" % (cmd, r.returncode, (r.stdout + r.stderr)[-800:]))
    elif lang == "":
        for cmd in commands(body):
            if cmd not in listed:
                fail("%r: not run here, and not in tests/readme/elsewhere.txt" % cmd)
            else:
                print("ok   %s  (%s)" % (cmd, listed[cmd]))
    elif lang == "c":
        src = os.path.join(tmp, "readme.c")
        open(src, "w").write(body)
        exe = os.path.join(tmp, "readme_c")
        r = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", src, "-I" + os.path.join(root, "include"),
                 "-I" + os.path.join(build, "include"), "-L" + build, "-lgmatch",
                 "-Wl,-rpath," + build, "-o", exe] + cc_flags)
        if r.returncode != 0:
            fail("the C example does not build:\n" + r.stderr[-800:])
            continue
        r = run([exe])
        ran += 1
        ok = r.returncode == 0 and re.match(r"\w+ \[.*\] [01]\.\d{3}$", r.stdout.strip())
        print("%s the C example: %s" % ("ok  " if ok else "FAIL", r.stdout.strip()))
        if not ok:
            fail("the C example: exit %d, %r %r" % (r.returncode, r.stdout, r.stderr[-400:]))
    elif lang == "text":
        got = run(["gmatch"] + SAMPLES).stdout
        ran += 1
        if got.strip() != body.strip():
            fail("the text output shown is not gmatch's:\n%s\ngmatch prints:\n%s" % (body, got))
        else:
            print("ok   the text output shown")
    elif lang == "json":
        got = run(["gmatch", "--format", "json"] + SAMPLES).stdout
        ran += 1
        shown = [json.loads(l) for l in body.strip().splitlines()]
        real = [json.loads(l) for l in got.strip().splitlines()]
        for r in shown + real:
            r.pop("time_ms", None)
        if shown != real or [list(r) for r in shown] != [list(r) for r in real]:
            fail("the JSON shown is not gmatch's:\n%s\ngmatch prints:\n%s" % (body, got))
        else:
            print("ok   the JSON line shown")
    elif lang != "python":
        fail("a block in %r: readme.sh does not know how to check it" % lang)
print("readme.sh: %d commands and samples checked, %d failed" % (ran, len(fails)))
sys.exit(1 if fails else 0)
PY
