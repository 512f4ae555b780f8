#!/usr/bin/env python3
"""gmatch-merge: the results of several gmatch --batch shards (or runs) in
the manifest's order, on stdout.

    tools/gmatch-merge.py out/out.*.jsonl > all.jsonl
    tools/gmatch-merge.py --format text out.*.txt > all.txt

Every result line of --batch carries its manifest line ("line", text's
first column) and frame: lines are sorted by (line, frame), stably, so
`cat` order does not matter.  A text header is written once.  A line cut
short at the end of a file (a killed shard) is left out with a warning on
stderr; run that shard again with --resume first.  Exit status 1 when a
file cannot be read or a line is not a batch result, 0 otherwise.
"""
import argparse
import json
import shlex
import sys


def key_text(line):
    cols = shlex.split(line, posix=True)
    return int(cols[0]), int(cols[4])


def key_json(line):
    r = json.loads(line)
    return int(r["line"]), int(r["frame"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("json", "text"), default="json")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    key = key_json if a.format == "json" else key_text
    rows, header, bad = [], None, 0
    for name in a.files:
        try:
            with open(name, "rb") as f:
                data = f.read().decode("utf-8", errors="surrogateescape")
        except OSError as e:
            print("gmatch-merge: %s: %s" % (name, e.strerror), file=sys.stderr)
            bad = 1
            continue
        lines = data.split("\n")
        if lines and lines[-1] != "":
            print("gmatch-merge: %s: the last line is cut short (left out)" % name,
                  file=sys.stderr)
        for ln in lines[:-1]:
            if ln.startswith("#"):
                header = header or ln
                continue
            try:
                rows.append((key(ln), len(rows), ln))
            except (ValueError, KeyError, IndexError, TypeError):
                print("gmatch-merge: %s: not a --batch result: %.60s" % (name, ln),
                      file=sys.stderr)
                bad = 1
    rows.sort()
    out = sys.stdout.buffer
    if header is not None:
        out.write((header + "\n").encode("utf-8", errors="surrogateescape"))
    for _, _, ln in rows:
        out.write((ln + "\n").encode("utf-8", errors="surrogateescape"))
    return bad


if __name__ == "__main__":
    sys.exit(main())
