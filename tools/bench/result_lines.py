#!/usr/bin/env python3
"""result_lines.py: gmatch's result lines, compared across runs.

As a program:
    result_lines.py [--drop KEY,...] FILE...
prints every line of the files as canonical JSON (keys sorted, `time_ms`
and the listed keys dropped), sorted, one a line, so that the outputs of two
runs (one process against shards, a resumed run against a whole one, one
GPU against several) compare with cmp.  A line that is not JSON is an error.

As a module (this folder on PYTHONPATH):
    rows(path, strict=False)   the file's results as dicts without `time_ms`,
                               in file order (lines that are not JSON skipped
                               unless strict: a run that was cut short)
    canonical(row, drop=())    one row as canonical JSON without the keys in drop
"""
import json
import sys

VARIES = ("time_ms",)  # the only value that changes from run to run


def rows(path, strict=False):
    out = []
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                if strict:
                    raise
                continue
            for k in VARIES:
                r.pop(k, None)
            out.append(r)
    return out


def canonical(row, drop=()):
    return json.dumps({k: v for k, v in row.items() if k not in drop}, sort_keys=True)


def main(argv):
    drop = ()
    if len(argv) > 1 and argv[0] == "--drop":
        drop, argv = tuple(argv[1].split(",")), argv[2:]
    if not argv:
        sys.exit("usage: result_lines.py [--drop KEY,...] FILE...")
    lines = sorted(canonical(r, drop) for p in argv for r in rows(p, strict=True))
    sys.stdout.write("".join(l + "\n" for l in lines))


if __name__ == "__main__":
    main(sys.argv[1:])
