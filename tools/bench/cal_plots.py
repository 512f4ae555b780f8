#!/usr/bin/python3
"""cal_plots.py: docs/calibration.md's pictures from cal_score.py's rows.

usage: cal_plots.py ROWS.tsv OUTDIR [THRESHOLD]

ROWS: ROWS=FILE cal_score.py ... (query, tier, confidence, error,
uncertainty_px, ...).  Writes OUTDIR/reliability.png (answers by confidence:
the share right (< 3 px), off (3-10) and wrong (>= 10), with the count of
each bin) and OUTDIR/uncertainty.png (each match at or above THRESHOLD,
default 0.3: its true error against its uncertainty_px, log scales, the
line error = uncertainty; green right, orange off, red wrong).  Drawn with
OpenCV (python3-opencv), no plotting library.
"""
import math
import os
import sys

import cv2
import numpy as np

W, H, M = 760, 480, 70  # picture, margin
GREEN, ORANGE, RED, GRAY, BLACK = (60, 160, 60), (0, 140, 255), (40, 40, 220), (200, 200, 200), (0, 0, 0)


def text(img, s, x, y, scale=0.45, color=BLACK):
    cv2.putText(img, s, (int(x), int(y)), cv2.FONT_HERSHEY_SIMPLEX, scale, color, 1, cv2.LINE_AA)


def reliability(rows, path):
    img = np.full((H, W, 3), 255, np.uint8)
    x0, y0, x1, y1 = M, H - M, W - 20, 40
    edges = [i / 10 for i in range(11)]
    bw = (x1 - x0) / 10
    for k in range(11):
        y = y0 - (y0 - y1) * k / 10
        cv2.line(img, (x0, int(y)), (x1, int(y)), GRAY, 1)
        text(img, "%d%%" % (10 * k), 20, y + 4)
    for i in range(10):
        lo, hi = edges[i], edges[i + 1] + (1e-9 if i == 9 else 0)
        b = [r for r in rows if lo <= r[2] < hi]
        xa = x0 + i * bw + 6
        if b:
            y = float(y0)
            for share, col in ((sum(r[3] < 3 for r in b) / len(b), GREEN),
                               (sum(3 <= r[3] < 10 for r in b) / len(b), ORANGE),
                               (sum(r[3] >= 10 for r in b) / len(b), RED)):
                h = (y0 - y1) * share
                cv2.rectangle(img, (int(xa), int(y - h)), (int(xa + bw - 12), int(y)), col, -1)
                y -= h
        text(img, "n=%d" % len(b), xa, y1 - 8, 0.4)
        text(img, "%.1f" % lo, x0 + i * bw - 8, y0 + 18, 0.4)
    text(img, "1.0", x1 - 10, y0 + 18, 0.4)
    text(img, "confidence (bins of 0.1); green right (< 3 px), orange 3-10 px, red wrong (>= 10 px)",
         x0, H - 20, 0.45)
    cv2.imwrite(path, img)


def uncertainty(rows, thr, path):
    img = np.full((H, W, 3), 255, np.uint8)
    x0, y0, x1, y1 = M, H - M, W - 20, 30
    lo, hi = -2.0, 3.5  # log10 pixels on both axes

    def px(u, e):
        fx = (math.log10(max(u, 10 ** lo)) - lo) / (hi - lo)
        fy = (math.log10(max(e, 10 ** lo)) - lo) / (hi - lo)
        return int(x0 + fx * (x1 - x0)), int(y0 - min(fy, 1.0) * (y0 - y1))
    for d in range(int(lo), int(hi) + 1):
        xa, ya = px(10 ** d, 10 ** d)
        cv2.line(img, (xa, y0), (xa, y1), GRAY, 1)
        cv2.line(img, (x0, ya), (x1, ya), GRAY, 1)
        text(img, "%g" % 10 ** d, xa - 10, y0 + 18, 0.4)
        text(img, "%g" % 10 ** d, 15, ya + 4, 0.4)
    cv2.line(img, px(10 ** lo, 10 ** lo), px(10 ** hi, 10 ** hi), BLACK, 1, cv2.LINE_AA)
    kept = [r for r in rows if r[2] >= thr]
    within = sum(r[3] <= r[4] for r in kept)
    for r in kept:
        col = GREEN if r[3] < 3 else ORANGE if r[3] < 10 else RED
        cv2.circle(img, px(r[4], r[3]), 4, col, -1, cv2.LINE_AA)
    text(img, "uncertainty_px (reference pixels)", x0 + 180, H - 20)
    text(img, "true error (px)", 15, 20)
    text(img, "below the line: error within uncertainty_px, %d of %d matches (%.1f%%)" %
         (within, len(kept), 100.0 * within / max(len(kept), 1)), x0 + 10, y1 + 20, 0.45)
    cv2.imwrite(path, img)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = []
    for line in open(sys.argv[1]):
        f = line.rstrip("\n").split("\t")
        rows.append((f[0], f[1], float(f[2]), float(f[3]), float(f[4])))
    thr = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
    os.makedirs(sys.argv[2], exist_ok=True)
    reliability(rows, os.path.join(sys.argv[2], "reliability.png"))
    uncertainty(rows, thr, os.path.join(sys.argv[2], "uncertainty.png"))


if __name__ == "__main__":
    main()
