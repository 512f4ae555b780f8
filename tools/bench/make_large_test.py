#!/usr/bin/python3
"""make_large_test.py: the fine-level test data in data/large (see
data/README.md): a 1440x960 reference larger than the working size (a
mosaic of the five CC0/public-domain images of data/bench, 480x480 each,
the sixth tile hubble turned 90 degrees), small crops of it under known
similarity transforms (each 8-13% of the reference's width, so 4-6% of its
width at the working size), two tilted views (a homography, the far side
shrunk to 60-70%) and a negative (smooth noise).  Needs OpenCV
(python3-opencv); the tests do not.

usage: tools/bench/make_large_test.py   (from the repository root)
"""
import json, math, os
import cv2
import numpy as np

src = "data/bench"
out = "data/large"
os.makedirs(out, exist_ok=True)
names = ["cell", "gravel", "hubble_deep_field", "retina", "text"]
tiles = [cv2.resize(cv2.imread(f"{src}/ref_{n}.jpg", cv2.IMREAD_GRAYSCALE), (480, 480),
                    interpolation=cv2.INTER_AREA) for n in names]
tiles.append(cv2.rotate(tiles[2], cv2.ROTATE_90_CLOCKWISE))
ref = np.vstack([np.hstack(tiles[0:3]), np.hstack(tiles[3:6])])
cv2.imwrite(f"{out}/ref_mosaic.jpg", ref, [cv2.IMWRITE_JPEG_QUALITY, 92])
rng = np.random.default_rng(20261124)
rows = []
# (centre x, centre y, query w, h, scale ref px per query px, angle degrees)
for i, (cx, cy, w, h, s, a) in enumerate([(250, 230, 160, 140, 1.0, 25), (700, 700, 180, 150, 0.8, -60),
                                           (1200, 300, 140, 170, 1.2, 140), (400, 720, 200, 160, 0.9, 0)]):
    t = math.radians(a)
    c, sn = s * math.cos(t), s * math.sin(t)
    # query pixel (x, y) -> reference: R (x - w/2, y - h/2) + (cx, cy)
    T = [[c, -sn, cx - c * (w - 1) / 2 + sn * (h - 1) / 2],
         [sn, c, cy - sn * (w - 1) / 2 - c * (h - 1) / 2]]
    q = cv2.warpAffine(ref, np.array(T), (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    q = np.clip(q + rng.normal(0, 2, q.shape), 0, 255).astype(np.uint8)
    name = f"q_crop{i}.jpg"
    cv2.imwrite(f"{out}/{name}", q, [cv2.IMWRITE_JPEG_QUALITY, 90])
    rows.append({"ref": "ref_mosaic.jpg", "query": name, "expect": "match", "T": T})
# tilted views (--model homography): a region of the reference seen by a
# tilted camera, the far side shrunk; H carries query pixels to reference
# pixels
for i, (x0, y0, rw, rh, far, w, h) in enumerate([(120, 80, 300, 260, 0.7, 320, 260),
                                                  (560, 560, 320, 300, 0.6, 300, 300)]):
    src = np.float32([[x0, y0], [x0 + rw, y0], [x0 + rw, y0 + rh], [x0, y0 + rh]])
    d = (1 - far) / 2 * w
    dst = np.float32([[d, 0], [w - 1 - d, 0], [w - 1, h - 1], [0, h - 1]])
    H = cv2.getPerspectiveTransform(dst, src)  # query -> reference
    q = cv2.warpPerspective(ref, H, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
    q = np.clip(q + rng.normal(0, 2, q.shape), 0, 255).astype(np.uint8)
    name = f"q_tilt{i}.jpg"
    cv2.imwrite(f"{out}/{name}", q, [cv2.IMWRITE_JPEG_QUALITY, 90])
    rows.append({"ref": "ref_mosaic.jpg", "query": name, "expect": "match", "tier": "tilt",
                 "H": (H / H[2, 2]).tolist()})
noise = cv2.GaussianBlur(rng.normal(128, 60, (170, 190)), (0, 0), 3)
cv2.imwrite(f"{out}/q_neg.jpg", np.clip(noise, 0, 255).astype(np.uint8))
rows.append({"ref": "ref_mosaic.jpg", "query": "q_neg.jpg", "expect": "none"})
with open(f"{out}/manifest.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
