#!/usr/bin/env python3
"""invisible.py: a copy of a bench part whose queries carry a change nobody
can see, to measure how much gmatch's answers depend on it (issue "every
match with its error bar": the same status and positions within 0.5 px).

usage: invisible.py SRC_PART DST_PART [SHARE]

SRC_PART: a folder of ../shared/bench's layout (manifests *.jsonl, the
references and queries they name), e.g. ../photo-bench/photo.  DST_PART
gets the same manifests with each query renamed .png and written as PNG
after a change of one grey level up or down in a share SHARE (default
0.02) of its pixels, chosen by a generator seeded from the file's name;
the references are linked, unchanged.  Run gmatch on both folders with
../shared/bench/run.sh and compare the two runs with tools/bench/seeds.py.
Needs Debian's python3-opencv and python3-numpy.
"""
import json
import os
import sys
import zlib

import cv2
import numpy as np


def perturb(src, dst, share):
    img = cv2.imread(src, cv2.IMREAD_UNCHANGED)
    if img is None:
        raise SystemExit("invisible.py: %s: not an image OpenCV reads" % src)
    rng = np.random.default_rng(zlib.crc32(os.path.basename(src).encode()))
    # one step a pixel, every channel alike: -1 or +1 in a share of them, else 0
    step = np.where(rng.random(img.shape[:2]) < share,
                    rng.choice(np.array([-1, 1], dtype=np.int16), size=img.shape[:2]), 0)
    step = step.reshape(img.shape[:2] + (1,) * (img.ndim - 2))
    cv2.imwrite(dst, np.clip(img.astype(np.int16) + step, 0, 255).astype(np.uint8))


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    share = float(sys.argv[3]) if len(sys.argv) == 4 else 0.02
    os.makedirs(dst, exist_ok=True)
    done = set()  # the references linked and the queries written
    for man in sorted(f for f in os.listdir(src) if f.endswith(".jsonl")):
        with open(os.path.join(src, man)) as fin, open(os.path.join(dst, man), "w") as fout:
            for line in fin:
                if not line.strip():
                    continue
                r = json.loads(line)
                q, ref = r["query"], r["ref"]
                if ref not in done:
                    link = os.path.join(dst, ref)
                    if not os.path.exists(link):
                        os.symlink(os.path.abspath(os.path.join(src, ref)), link)
                    done.add(ref)
                base, ext = os.path.splitext(q)
                if ext.lower() in (".jpg", ".jpeg", ".png"):
                    newq = base + ".png"
                    if newq not in done:
                        perturb(os.path.join(src, q), os.path.join(dst, newq), share)
                        done.add(newq)
                    r["query"] = newq
                fout.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
