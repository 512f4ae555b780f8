#!/bin/bash
# terminal.sh: the progress bar on a terminal.  With stdout and stderr on one
# terminal (a pseudo-terminal here), every result line starts on a line of
# its own: the bar is erased before each line and drawn again below it, and
# nothing of the bar is left at the end.  Interrupted (SIGINT) while the bar
# is shown, gmatch leaves the terminal on a new line and dies by the signal.
#
# usage: tests/cli/terminal.sh path/to/gmatch   (from the repository root; an
# FFmpeg build).  Needs python3 (stdlib: pty).
set -u
gm=${1:?usage: terminal.sh GMATCH}
case $gm in /*) ;; *) gm=$PWD/$gm ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gmatch-terminal.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp data/video/clip.mp4 "$tmp/"
# 20 copies of the 50-frame clip as one input, for a run long enough to stop
{ echo "ffconcat version 1.0"; for _ in $(seq 20); do echo "file 'clip.mp4'"; done; } \
    > "$tmp/long.ffconcat"

python3 - "$gm" "$PWD/data/video/ref_clip.jpg" "$PWD/data/video/clip.mp4" "$tmp/long.ffconcat" <<'PY'
import os, pty, re, signal, sys, time
gm, ref, clip, long_ = sys.argv[1:]
fails = []

def spawn(args):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(gm, [gm] + args)
    return pid, fd

def read_all(fd, until=None, stop=None):
    out = b""
    while True:
        try:
            b = os.read(fd, 65536)
        except OSError:
            break
        if not b:
            break
        out += b
        if until and until(out):
            stop()
            until = None
    return out

def screen(raw):
    """What a terminal shows: \\r returns, ESC[K erases to the end."""
    lines, cur, col = [], [], 0
    i, text = 0, raw.decode("utf-8", "replace")
    while i < len(text):
        c = text[i]
        if text.startswith("\x1b[K", i):
            del cur[col:]
            i += 3
            continue
        if c == "\r":
            col = 0
        elif c == "\n":
            lines.append("".join(cur))
            cur, col = [], 0
        else:
            if col < len(cur):
                cur[col] = c
            else:
                cur.append(c)
            col += 1
        i += 1
    return lines, "".join(cur)

# 3. many stills (and a batch): a bar over the queries, every result line on
# a line of its own, one summary line at the end; none of it when stderr is
# not a terminal, unless --progress asks
stills = [os.path.join(os.path.dirname(ref), "../bench/q_cell_00_easy.jpg")] * 6 + \
         [os.path.join(os.path.dirname(ref), "../bench/q_cell_neg.jpg")] * 5 + ["/nonexistent.jpg"]
cell = os.path.join(os.path.dirname(ref), "../bench/ref_cell.jpg")
manifest = os.path.join(os.path.dirname(long_), "pairs.jsonl")
with open(manifest, "w") as f:
    for q in stills[:2] + [clip]:
        f.write('{"ref": "%s", "query": "%s"}\n' % (cell if q != clip else ref, q))
def summary_ok(lines, n, match, none, err):
    s = [l for l in lines if l.startswith("gmatch: ") and " lines: " in l]
    m = re.match(r"gmatch: (\d+) lines: (\d+) matched, (\d+) none, (\d+) errors?, [0-9.]+ s$",
                 s[0]) if len(s) == 1 and lines[-1] == s[0] else None
    got = tuple(map(int, m.groups())) if m else ()
    return m is not None and got[0] == n == sum(got[1:]) and \
        (match is None or got[1:] == (match, none, err))
for args, what, n, match, none, err, unit in (
        ([cell] + stills, "12 stills", 12, 6, 5, 1, b"queries"),
        (["--batch", manifest], "a batch", 52, None, None, None, b"pairs")):
    pid, fd = spawn(args)
    raw = read_all(fd)
    os.waitpid(pid, 0)
    lines, tail = screen(raw)
    if unit not in raw:
        fails.append("%s: no bar over the %s" % (what, unit.decode()))
    if tail.strip():
        fails.append("%s: the bar left on the terminal: %r" % (what, tail[:120]))
    for l in lines:
        if unit.decode() in l or "fps" in l:
            fails.append("%s: the bar's text on a line: %r" % (what, l[:120]))
            break
    if not summary_ok([l for l in lines if l], n, match, none, err):
        fails.append("%s: want one summary line at the end, got %r" % (what, lines[-3:]))
import subprocess
r = subprocess.run([gm, cell] + stills, capture_output=True)
if b"lines:" in r.stderr or b"queries" in r.stderr:
    fails.append("stderr not a terminal: a bar or a summary: %r" % r.stderr[-200:])
r = subprocess.run([gm, "--progress", cell] + stills, capture_output=True)
if not summary_ok(r.stderr.decode().replace("\r", "\n").split("\n")[:-1], 12, 6, 5, 1):
    fails.append("--progress, not a terminal: no summary line: %r" % r.stderr[-200:])
r = subprocess.run([gm, "-q", "--progress", cell] + stills, capture_output=True)
if b"lines:" in r.stderr:
    fails.append("-q: a summary line: %r" % r.stderr[-200:])

# 1. two videos to the end: every frame's line on a line of its own
pid, fd = spawn([ref, clip, clip])
raw = read_all(fd)
_, status = os.waitpid(pid, 0)
lines, tail = screen(raw)
rows = [l for l in lines if l.startswith(clip + " ")]
if len(rows) != 100:
    fails.append("want 100 result lines, got %d" % len(rows))
for l in lines:
    if not (l.startswith(clip + " ") or l.startswith("#") or l.startswith("gmatch: ") or l == ""):
        fails.append("a line that is neither a result nor a diagnostic: %r" % l[:120])
        break
    if "fps" in l:
        fails.append("the bar's text on a result line: %r" % l[:120])
        break
if tail.strip():
    fails.append("the bar left on the terminal: %r" % tail[:120])
if b"fps" not in raw:
    fails.append("no progress bar was drawn (the check above proves nothing)")

# 2. interrupted while the bar is shown
pid, fd = spawn([ref, long_])
start = time.time()
raw = read_all(fd, until=lambda out: out.count(b"fps") >= 3,
               stop=lambda: os.kill(pid, signal.SIGINT))
_, status = os.waitpid(pid, 0)
if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT):
    fails.append("interrupted: want death by SIGINT, got status %#x" % status)
if not raw.endswith(b"\n"):
    fails.append("interrupted: the terminal is left after %r" % raw[-80:])
lines, tail = screen(raw)
if tail:
    fails.append("interrupted: the last line does not end: %r" % tail[:120])

for f in fails:
    print("FAIL: " + f)
print("terminal.sh: %s" % ("all checks passed" if not fails else "%d checks failed" % len(fails)))
sys.exit(1 if fails else 0)
PY
