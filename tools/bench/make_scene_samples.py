#!/usr/bin/python3
"""Make data/scene/: small samples of the cases issue 28 names, for
tests/cli/scene.sh.  Each query comes with its ground truth "H" (query
pixels -> reference pixels, 3x3) or "expect": "none".

  inside     the poster (data/bench/ref_retina.jpg) in a larger scene
             (a region of data/large/ref_mosaic.jpg) under a tilted view
  cut        the same poster, about a third of it outside the frame
  clutter    the poster in a scene made mostly of a dense texture
  overlap    two views of the mosaic sharing about a third of their area
  zoom       a region of the mosaic's reference enlarged 4 times
  neg_scene  a scene with another poster (data/bench/ref_cell.jpg)
  neg_view   a view of a part of the mosaic that the reference does not hold
  clip.mp4   24 frames of 480x272: the poster drifting and turning over a
             panning scene (clip.jsonl: per frame H, or "none" where it is
             gone)

usage: tools/bench/make_scene_samples.py [OUTDIR]   (default data/scene;
needs python3-opencv and ffmpeg; the tests need neither)"""
import json
import os
import subprocess
import sys

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "data", "scene")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(20261126)
poster = cv2.imread(os.path.join(ROOT, "data", "bench", "ref_retina.jpg"))
other = cv2.imread(os.path.join(ROOT, "data", "bench", "ref_cell.jpg"))
mosaic = cv2.imread(os.path.join(ROOT, "data", "large", "ref_mosaic.jpg"))


def quad(w, h, cx, cy, side, rot, shrink):
    """The outline of a w x h poster seen at centre (cx, cy), side px wide,
    turned by rot radians, its right side shrunk to shrink (a tilted view)."""
    s = side / w
    pts = np.array([[-w / 2, -h / 2], [w / 2, -h / 2 * shrink], [w / 2, h / 2 * shrink],
                    [-w / 2, h / 2]], np.float64) * s
    pts[1:3, 0] *= 0.5 + 0.5 * shrink
    c, sn = np.cos(rot), np.sin(rot)
    return pts @ np.array([[c, sn], [-sn, c]]) + [cx, cy]


def paste(scene, img, q):
    h, w = img.shape[:2]
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    G = cv2.getPerspectiveTransform(src, q.astype(np.float32))  # poster px -> scene px
    warped = cv2.warpPerspective(img, G, scene.shape[1::-1], flags=cv2.INTER_AREA)
    mask = cv2.warpPerspective(np.full((h, w), 255, np.uint8), G, scene.shape[1::-1])
    out = scene.copy()
    out[mask > 127] = warped[mask > 127]
    return out, G


def jpeg(path, img, q=90):
    cv2.imwrite(path, img, [cv2.IMWRITE_JPEG_QUALITY, q])


def light(img, gain, bias):
    return np.clip(img.astype(np.float32) * gain + bias, 0, 255).astype(np.uint8)


def H_of(G):
    Hq = np.linalg.inv(G)
    return (Hq / Hq[2, 2]).round(9).tolist()


man = []
# the poster in a scene: the scene a region of the mosaic, 960 x 720
# (the mosaic's tiles: cell, gravel, hubble over retina, text, hubble; the
# scenes and the clip use its right two columns, where neither poster is)
scene = cv2.resize(mosaic[480:960, 480:1440], (960, 720), interpolation=cv2.INTER_AREA)
img, G = paste(scene, light(poster, 0.9, 12), quad(480, 480, 560, 330, 330, 0.45, 0.8))
jpeg(os.path.join(out, "q_inside.jpg"), img)
man.append({"ref": "ref_poster.jpg", "query": "q_inside.jpg", "tier": "inside", "expect": "match", "H": H_of(G)})
scene2 = cv2.resize(mosaic[0:960, 960:1440], (960, 720), interpolation=cv2.INTER_AREA)
img, G = paste(scene2, light(poster, 1.1, -10), quad(480, 480, 850, 250, 380, -0.3, 0.9))
jpeg(os.path.join(out, "q_cut.jpg"), img)
man.append({"ref": "ref_poster.jpg", "query": "q_cut.jpg", "tier": "cut", "expect": "match", "H": H_of(G)})
# clutter: most of the scene a dense texture (gravel) whose strong edges
# and corners outnumber the poster's
scene3 = cv2.resize(mosaic[100:900, 480:1440], (960, 720), interpolation=cv2.INTER_AREA)
img, G = paste(scene3, light(poster, 0.9, 12), quad(480, 480, 560, 330, 330, 0.45, 0.8))
jpeg(os.path.join(out, "q_clutter.jpg"), img)
man.append({"ref": "ref_poster.jpg", "query": "q_clutter.jpg", "tier": "clutter", "expect": "match", "H": H_of(G)})
img, _ = paste(scene3, other, quad(400, 480, 500, 360, 300, 0.2, 0.85))
jpeg(os.path.join(out, "q_neg_scene.jpg"), img)
man.append({"ref": "ref_poster.jpg", "query": "q_neg_scene.jpg", "tier": "negative", "expect": "none"})
jpeg(os.path.join(out, "ref_poster.jpg"), poster, 95)

# two views of the mosaic: the reference its left part, the query a turned
# view of a region that shares about a third of its area
ref = mosaic[80:680, 100:900]  # 800 x 600
jpeg(os.path.join(out, "ref_view.jpg"), ref, 95)
ow, oh = 640, 480
src = np.array([[0, 0], [ow, 0], [ow, oh], [0, oh]], np.float32)
q = quad(ow, oh, 900 + 100, 560, 700, 0.12, 0.9)  # in mosaic pixels
G = cv2.getPerspectiveTransform(src, q.astype(np.float32))  # query px -> mosaic px
view = cv2.warpPerspective(mosaic, G, (ow, oh), flags=cv2.INTER_AREA | cv2.WARP_INVERSE_MAP)
jpeg(os.path.join(out, "q_overlap.jpg"), view)
Hq = np.array([[1, 0, -100], [0, 1, -80], [0, 0, 1]], np.float64) @ G
man.append({"ref": "ref_view.jpg", "query": "q_overlap.jpg", "tier": "overlap", "expect": "match",
            "H": (Hq / Hq[2, 2]).round(9).tolist()})
# a 4x enlargement of a 160 x 120 region of the reference
x0, y0 = 330, 260
zoom = cv2.resize(ref[y0:y0 + 120, x0:x0 + 160], (640, 480), interpolation=cv2.INTER_CUBIC)
jpeg(os.path.join(out, "q_zoom.jpg"), zoom)
man.append({"ref": "ref_view.jpg", "query": "q_zoom.jpg", "tier": "zoom", "expect": "match",
            "H": [[0.25, 0, x0 + 0.25 / 2 - 0.5], [0, 0.25, y0 + 0.25 / 2 - 0.5], [0, 0, 1]]})
# the negative: a view of the mosaic's hubble tile, which the reference's
# region does not hold
gv = cv2.resize(mosaic[500:900, 980:1400], (640, 480), interpolation=cv2.INTER_LINEAR)
jpeg(os.path.join(out, "q_neg_view.jpg"), gv)
man.append({"ref": "ref_view.jpg", "query": "q_neg_view.jpg", "tier": "negative", "expect": "none"})
with open(os.path.join(out, "manifest.jsonl"), "w") as f:
    for m in man:
        f.write(json.dumps(m) + "\n")

# the clip: the poster drifting over a panning scene, gone in frames 16-19
W, H, N = 480, 272, 24
enc = subprocess.Popen(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
                        "-s", "%dx%d" % (W, H), "-r", "30", "-i", "-", "-c:v", "libx264", "-crf", "20",
                        "-pix_fmt", "yuv420p", "-movflags", "+faststart",
                        os.path.join(out, "clip.mp4")], stdin=subprocess.PIPE)
with open(os.path.join(out, "clip.jsonl"), "w") as f:
    for k in range(N):
        bg = cv2.resize(mosaic[560:920, 480 + 12 * k:480 + 12 * k + 640], (W, H), interpolation=cv2.INTER_AREA)
        rec = {"ref": "ref_poster.jpg", "query": "clip.mp4", "frame": k, "tier": "clip", "w": W, "h": H}
        if 16 <= k < 20:
            frame = bg
            rec.update(expect="none")
        else:
            q = quad(480, 480, 150 + 9 * k, 130 + 2 * k, 170 - 2 * k, 0.25 - 0.02 * k, 0.85 + 0.005 * k)
            frame, G = paste(bg, poster, q)
            rec.update(expect="match", H=H_of(G))
        enc.stdin.write(np.ascontiguousarray(frame).tobytes())
        f.write(json.dumps(rec) + "\n")
enc.stdin.close()
enc.wait()
print("made", len(man), "pairs and", N, "frames in", out)
