#!/usr/bin/env python3
"""ref_formats.py: the data/ sample pairs with each reference saved three
ways a person cannot tell apart (gray PNG, colour PNG, JPEG quality 95), to
measure issue 29's promise that they give the same status.

usage: ref_formats.py GMATCH [DATA]      (DATA: default data/)

For every manifest of DATA's bench, large and scene folders, and the sample
pair (ref.jpg, query.jpg), the reference is decoded by OpenCV as it is
stored (gray or colour) and written to a temporary folder as a gray PNG, a
colour PNG (its three channels) and a JPEG of quality 95; GMATCH runs with
`--format json` on each with the reference's queries.  Prints a line per
query whose status differs between the three, or whose matches' corners
lie more than 0.5 px apart, and a summary line:
  FORMATS queries=N same_status=S (share) apart=A
Needs Debian's python3-opencv and python3-numpy.
"""
import json
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np


def groups(data):
    out = {}
    for sub in ("bench", "large", "scene"):
        man = os.path.join(data, sub, "manifest.jsonl")
        if not os.path.exists(man):
            continue
        for line in open(man):
            r = json.loads(line)
            out.setdefault(os.path.join(data, sub, r["ref"]), []).append(
                os.path.join(data, sub, r["query"]))
    out.setdefault(os.path.join(data, "ref.jpg"), []).append(os.path.join(data, "query.jpg"))
    return out


def corners(r):
    m = np.array(r["matrix"], float)
    if m.shape[0] == 2:
        m = np.vstack([m, [0, 0, 1]])
    w, h = r["query_size"]
    p = np.array([[0, 0, 1], [w - 1, 0, 1], [w - 1, h - 1, 1], [0, h - 1, 1]], float) @ m.T
    return p[:, :2] / p[:, 2:3]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    gm, data = sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "data"
    n = same = apart = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ref, queries in groups(data).items():
            img = cv2.imread(ref, cv2.IMREAD_UNCHANGED)
            if img is None:
                sys.exit("ref_formats.py: %s: not an image OpenCV reads" % ref)
            gray = img if img.ndim == 2 else cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
            colour = img if img.ndim == 3 else cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
            stem = os.path.splitext(os.path.basename(ref))[0]
            paths = [os.path.join(tmp, stem + "_gray.png"), os.path.join(tmp, stem + "_colour.png"),
                     os.path.join(tmp, stem + "_q95.jpg")]
            cv2.imwrite(paths[0], gray)
            cv2.imwrite(paths[1], colour)
            cv2.imwrite(paths[2], colour, [cv2.IMWRITE_JPEG_QUALITY, 95])
            runs = []
            for p in paths:
                out = subprocess.run([gm, "--format", "json", p] + queries, check=False,
                                     stdout=subprocess.PIPE, text=True).stdout
                runs.append({json.loads(l)["query"]: json.loads(l) for l in out.splitlines() if l})
            for q in queries:
                rs = [run.get(q, {"status": "missing"}) for run in runs]
                n += 1
                st = [r["status"] for r in rs]
                if len(set(st)) > 1:
                    print("status %s: %s %s" % (q, st, [round(r.get("confidence", 0), 3) for r in rs]))
                    continue
                same += 1
                if st[0] == "match":
                    c = [corners(r) for r in rs]
                    d = max(np.abs(x - c[0]).max() for x in c[1:])
                    if d > 0.5:
                        apart += 1
                        print("apart %s: %.2f px" % (q, d))
    print("FORMATS queries=%d same_status=%d (%.3f) apart=%d" % (n, same, same / max(n, 1), apart))


if __name__ == "__main__":
    main()
