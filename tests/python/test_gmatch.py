"""The Python module (python/gmatch) on the repository's sample data.

Run by tests/python/run.sh (a venv with --system-site-packages, the module
installed by pip from the repository root, Debian's python3-pytest):
arrays of each dtype and layout, the data/bench pairs within 3 px, a video,
threads sharing one reference, bad input raising clean errors, a per-call
model, and no leak over 10,000 calls.  Images are read with the module
itself (paths) or built with numpy, so OpenCV is not needed.
"""
import gc
import json
import os
import resource
import threading
import tracemalloc

import numpy as np
import pytest

import gmatch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "data")


def gray(path):
    """An image as the library sees it (8-bit gray), as a numpy array."""
    buf, w, h = gmatch._gmatch.to_gray(path, False, 0)
    return np.frombuffer(buf, np.uint8).reshape(h, w).copy()


def corner_error(matrix3, T, w, h):
    """Mean distance of the query's four corners under the two transforms."""
    T3 = np.vstack([np.asarray(T, float), [0, 0, 1]]) if len(T) == 2 else np.asarray(T, float)
    c = np.array([[0, 0, 1], [w - 1, 0, 1], [w - 1, h - 1, 1], [0, h - 1, 1]], float)
    a, b = c @ matrix3.T, c @ T3.T
    return float(np.mean(np.linalg.norm(a[:, :2] / a[:, 2:] - b[:, :2] / b[:, 2:], axis=1)))


@pytest.fixture(scope="module")
def sample():
    ref = gmatch.Reference(os.path.join(DATA, "ref.jpg"), device="cpu")
    query = gray(os.path.join(DATA, "query.jpg"))
    want = ref.match(query)
    assert want.status == "match"
    return ref, query, want


def test_version_and_availability():
    assert gmatch.__version__.count(".") == 2
    assert isinstance(gmatch.video_available(), bool)
    assert isinstance(gmatch.cuda_available(), bool)


def test_openmp_spin():
    """The module sets OpenMP's shorter spin where the environment chose
    nothing, before the library (and libgomp) load; a choice is kept."""
    import subprocess
    import sys
    code = "import os, gmatch; print(os.environ.get('GOMP_SPINCOUNT'))"
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "30000", out.stderr
    env["OMP_WAIT_POLICY"] = "passive"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "None", out.stderr


def test_backend_and_fallback(sample):
    ref = sample[0]
    assert ref.backend == "cpu" and ref.fallback == ""
    ref.match(sample[1])
    assert ref.backend == "cpu" and ref.fallback == ""


def test_result_fields(sample):
    ref, query, res = sample
    assert bool(res) and res.model in gmatch.MODELS
    assert res.matrix.shape == ((3, 3) if res.model == "homography" else (2, 3))
    assert res.matrix3.shape == (3, 3) and res.matrix3[2, 2] == pytest.approx(1.0)
    assert res.corners.shape == (4, 2)
    # the corners are the matrix applied to the query's corners
    h, w = query.shape
    p = res.matrix3 @ np.array([w - 1, h - 1, 1.0])
    assert np.allclose(res.corners[2], p[:2] / p[2])
    assert 0.3 <= res.confidence <= 1 and res.votes > 0 and res.inliers > 0
    assert 0 <= res.residual_px < 1
    assert 0 < res.uncertainty_px < 10 and res.reason is None
    assert res.time_ms > 0 and res.query_size == (w, h)
    assert res.frame is None and res.error is None
    d = res.to_dict()
    json.dumps(d)
    assert d["status"] == "match" and len(d["corners"]) == 4


def test_array_layouts_agree(sample):
    """C-contiguous, sliced (a step in each axis of a larger array),
    transposed storage and negative strides: the same pixels, the same answer."""
    ref, query, want = sample
    h, w = query.shape
    big = np.zeros((2 * h, 3 * w), np.uint8)
    big[::2, ::3] = query
    layouts = {
        "contiguous": query,
        "sliced": big[::2, ::3],
        "transposed storage": np.asfortranarray(query),
        "flipped twice": query[::-1, ::-1][::-1, ::-1],
        "H x W x 1": query[:, :, None],
    }
    for name, arr in layouts.items():
        got = ref.match(arr)
        assert got.status == want.status, name
        assert np.array_equal(got.matrix, want.matrix), name
        assert got.confidence == want.confidence, name


def test_color_and_16bit(sample):
    ref, query, want = sample
    # gray replicated into B, G, R (and BGRA): the weights sum to 1, so the same gray
    bgr = np.repeat(query[:, :, None], 3, axis=2)
    bgra = np.concatenate([bgr, np.full(query.shape + (1,), 7, np.uint8)], axis=2)
    for arr in (bgr, bgra, np.ascontiguousarray(bgr[:, :, ::-1])):
        got = ref.match(arr)
        assert np.array_equal(got.matrix, want.matrix)
    # 16-bit: 12-bit data (x 4095 / 255) comes out as the same 8-bit image
    q12 = (query.astype(np.uint32) * 4095 // 255).astype(np.uint16)
    assert np.array_equal(gray(q12), query)
    got = ref.match(q12)
    assert got.status == "match" and np.array_equal(got.matrix, want.matrix)
    # full 16-bit range too
    q16 = (query.astype(np.uint32) * 257).astype(np.uint16)
    assert np.array_equal(gray(q16), query)


def test_reference_from_array_equals_path(sample):
    ref, query, want = sample
    arr = gmatch.Reference(gray(os.path.join(DATA, "ref.jpg")), device="cpu")
    got = arr.match(query)
    assert (arr.width, arr.height) == (ref.width, ref.height)
    assert np.array_equal(got.matrix, want.matrix) and got.confidence == want.confidence


def test_bench_pairs_within_3px():
    """data/bench: every match within 3 px of the truth, the negatives none."""
    rows = [json.loads(l) for l in open(os.path.join(DATA, "bench", "manifest.jsonl"))]
    refs = {}
    found = 0
    for r in rows:
        if r["ref"] not in refs:
            refs[r["ref"]] = gmatch.Reference(os.path.join(DATA, "bench", r["ref"]),
                                              model="similarity", device="cpu")
        q = gray(os.path.join(DATA, "bench", r["query"]))
        res = refs[r["ref"]].match(q)
        if r["expect"] == "none":
            assert res.status == "none", r["query"]
            assert res.reason in ("no_edges", "no_candidate", "weak", "ambiguous", "uncertain",
                                  "small_overlap", "horizon"), (r["query"], res.reason)
            assert res.uncertainty_px is None
            continue
        if res:
            found += 1
            e = corner_error(res.matrix3, r["T"], q.shape[1], q.shape[0])
            assert e < 3.0, (r["query"], e)
    assert found >= 0.9 * sum(r["expect"] == "match" for r in rows)


def test_seeds():
    """Every seed gives the same answers (issue 29): the search's draws are
    a function of the images, the seed salts the hash tables only.  Every
    pair of data/ (the bench, the large reference's crops and tilted views,
    the scene's posters and views), seeds 1-5: the same status, reason,
    confidence and corners."""
    groups = {}
    for sub in ("bench", "large", "scene"):
        for r in map(json.loads, open(os.path.join(DATA, sub, "manifest.jsonl"))):
            groups.setdefault(os.path.join(DATA, sub, r["ref"]), []).append(
                os.path.join(DATA, sub, r["query"]))
    groups.setdefault(os.path.join(DATA, "ref.jpg"), []).append(os.path.join(DATA, "query.jpg"))
    for ref_path, q_paths in groups.items():
        qs = [gray(q) for q in q_paths]
        first = None
        for seed in range(1, 6):
            ref = gmatch.Reference(ref_path, model="auto", device="cpu", seed=seed)
            got = [ref.match(q) for q in qs]
            key = [(a.status, a.reason, a.confidence,
                    None if a.corners is None else a.corners.tolist()) for a in got]
            if first is None:
                first = key
            assert key == first, (ref_path, seed)


def test_invisible_changes():
    """The same answer for a reference that differs invisibly (issue 29):
    data/bench's pairs and the sample pair, the reference as decoded, as a
    colour array whose gray differs from it by a level in a pixel out of 50
    (the difference between a gray and a colour save of one picture), and
    with every pixel's value moved by at most one level: the same status and
    the corners within 0.5 px.  Measured (docs/calibration.md, 2026-11-27):
    over data/large and data/scene too, these changes flip data/large's
    q_tilt1 (0.88 -> 0.03 with every pixel moved) and data/scene's q_inside
    (0.70 -> 0.0 as the colour array), which is why they are not here:
    issue 29 stays open for them."""
    rows = [json.loads(l) for l in open(os.path.join(DATA, "bench", "manifest.jsonl"))]
    pairs = [(os.path.join(DATA, "bench", r["ref"]), os.path.join(DATA, "bench", r["query"]))
             for r in rows]
    pairs.append((os.path.join(DATA, "ref.jpg"), os.path.join(DATA, "query.jpg")))
    rng = np.random.default_rng(29)
    for ref_path, q_path in pairs:
        q = gray(q_path)
        base = gray(ref_path)
        colour = np.repeat(base[:, :, None], 3, axis=2)
        hit = rng.random(base.shape) < 0.02
        colour[hit, 1] = np.minimum(colour[hit, 1].astype(int) + 2, 255).astype(np.uint8)
        nudged = np.clip(base.astype(int) + rng.integers(-1, 2, base.shape), 0, 255).astype(np.uint8)
        answers = [gmatch.Reference(img, model="auto", device="cpu").match(q)
                   for img in (base, colour, nudged)]
        st = [a.status for a in answers]
        assert len(set(st)) == 1, (q_path, st, [round(a.confidence, 3) for a in answers])
        if st[0] == "match":
            for a in answers[1:]:
                assert np.abs(a.corners - answers[0].corners).max() < 0.5, q_path


def test_per_call_model(sample):
    ref, query, want = sample
    for m in gmatch.MODELS:
        res = ref.match(query, model=m)
        assert res.status == "match"
        # the model asked for (a similarity answer is an affine and a
        # homography too: --model homography's 3x3 matrix); auto's choice
        assert res.model == m if m != "auto" else res.model in gmatch.MODELS[:3]
        assert res.matrix.shape == ((3, 3) if res.model == "homography" else (2, 3))
        assert corner_error(res.matrix3, want.matrix3, query.shape[1], query.shape[0]) < 1.0
    sim = gmatch.Reference(os.path.join(DATA, "ref.jpg"), model="similarity", device="cpu")
    assert sim.match(query).model == "similarity"
    with pytest.raises(ValueError, match="similarity only"):
        sim.match(query, model="homography")
    with pytest.raises(ValueError, match="model"):
        ref.match(query, model="perspective")


def test_shared_region_and_direction():
    """Two views sharing a quarter of their area (data/scene): found forward,
    judged on the region they share, which Result.overlap reports; a forced
    reverse search gives the same region or none, never another; a bad
    direction is a ValueError."""
    view = os.path.join(DATA, "scene", "ref_view.jpg")
    q = gray(os.path.join(DATA, "scene", "q_overlap.jpg"))
    r = gmatch.Reference(view, device="cpu").match(q)
    assert r.status == "match" and r.direction == "forward"
    assert 0.2 < r.overlap[0] < 0.35 and 0.15 < r.overlap[1] < 0.3, r.overlap
    back = gmatch.Reference(view, device="cpu", direction="reverse").match(q)
    if back:  # the same place for query points on the shared part (its left side)
        assert back.direction == "reverse"
        p = np.array([[40, 100, 1], [100, 240, 1], [60, 400, 1]], np.float64)
        a, b = p @ r.matrix3.T, p @ back.matrix3.T
        assert np.abs(a[:, :2] / a[:, 2:] - b[:, :2] / b[:, 2:]).max() < 5
    none = gmatch.Reference(view, device="cpu", direction="forward").match(
        gray(os.path.join(DATA, "scene", "q_neg_view.jpg")))
    assert none.status == "none" and none.overlap is None and none.direction is None
    with pytest.raises(ValueError):
        gmatch.Reference(view, device="cpu", direction="sideways")


def test_match_function():
    res = gmatch.match(os.path.join(DATA, "ref.jpg"), os.path.join(DATA, "query.jpg"),
                       device="cpu")
    assert res.status == "match"


@pytest.mark.skipif(not gmatch.video_available(), reason="built without FFmpeg")
def test_video():
    truth = [json.loads(l) for l in open(os.path.join(DATA, "video", "clip.jsonl"))]
    ref = gmatch.Reference(os.path.join(DATA, "video", "ref_clip.jpg"), model="similarity",
                           device="cpu")
    results = list(ref.match_video(os.path.join(DATA, "video", "clip.mp4")))
    assert [r.frame for r in results] == list(range(len(truth)))
    good = 0
    for r, t in zip(results, truth):
        assert r.pts_s == pytest.approx(t["frame"] / 30.0, abs=1e-3)
        if t["expect"] == "none":
            assert r.status == "none", t["frame"]
        elif r:
            assert corner_error(r.matrix3, t["T"], t["w"], t["h"]) < 3.0, t["frame"]
            good += 1
    assert good >= 0.9 * sum(t["expect"] == "match" for t in truth)
    # a selection: frames 10, 13, ..., 28, by a range or a pair and a step
    sel = [r.frame for r in ref.match_video(os.path.join(DATA, "video", "clip.mp4"),
                                            frames=range(10, 30, 3))]
    assert sel == list(range(10, 30, 3))
    sel = [r.frame for r in ref.match_video(os.path.join(DATA, "video", "clip.mp4"),
                                            frames=(45, None))]
    assert sel == list(range(45, 50))
    # a generator dropped early stops the pipeline's threads (no hang), and
    # a second run gives the same results (frames are matched in parallel)
    g = ref.match_video(os.path.join(DATA, "video", "clip.mp4"))
    assert [next(g).frame for _ in range(3)] == [0, 1, 2]
    del g
    again = list(ref.match_video(os.path.join(DATA, "video", "clip.mp4")))
    assert [(r.status, r.confidence) for r in again] == [(r.status, r.confidence) for r in results]


@pytest.mark.skipif(not gmatch.video_available(), reason="built without FFmpeg")
def test_video_errors(tmp_path):
    ref = gmatch.Reference(os.path.join(DATA, "ref.jpg"), model="similarity", device="cpu")
    with pytest.raises(OSError, match="nonexistent"):
        next(ref.match_video(tmp_path / "nonexistent.mp4"))
    # past the end: one error Result saying how many frames the video has
    res = list(ref.match_video(os.path.join(DATA, "video", "clip.mp4"), frames=(400, 500)))
    assert len(res) == 1 and res[0].status == "error" and "50 frames" in res[0].error
    # a cut file: every selected frame gets its Result, the loss a warning
    data = open(os.path.join(DATA, "video", "clip.mp4"), "rb").read()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.warns(RuntimeWarning):
        res = list(ref.match_video(cut))
    assert res and all(r.status in ("match", "none", "error") for r in res)
    with pytest.raises(ValueError):
        next(ref.match_video(os.path.join(DATA, "video", "clip.mp4"), step=0))


def test_threads_share_a_reference(sample):
    """Eight threads on one reference: each answer the single-threaded one."""
    ref, query, want = sample
    rows = [json.loads(l) for l in open(os.path.join(DATA, "bench", "manifest.jsonl"))]
    queries = [query] + [gray(os.path.join(DATA, "bench", r["query"])) for r in rows[:7]]
    alone = [ref.match(q) for q in queries]
    got = [None] * (len(queries) * 4)
    errors = []

    def work(i):
        try:
            got[i] = ref.match(queries[i % len(queries)])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(got))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, r in enumerate(got):
        a = alone[i % len(queries)]
        assert r.status == a.status and r.confidence == a.confidence
        if a:
            assert np.array_equal(r.matrix, a.matrix)


@pytest.mark.parametrize("bad, error, words", [
    (np.zeros((8, 8), np.float32), ValueError, "uint8 or uint16"),
    (np.zeros((8, 8), np.int16), ValueError, "uint8 or uint16"),
    (np.zeros((0, 8), np.uint8), ValueError, "zero width or height"),
    (np.zeros((8, 8, 3, 2), np.uint8), ValueError, "4-dimensional"),
    (np.zeros((8,), np.uint8), ValueError, "1-dimensional"),
    (np.zeros((8, 8, 2), np.uint8), ValueError, "channels"),
    (42, TypeError, "path or an array"),
    ("/nonexistent/q.jpg", OSError, "No such file"),
    (os.path.join(ROOT, "README.md"), OSError, "not a JPEG or PNG"),
])
def test_bad_queries(sample, bad, error, words):
    ref = sample[0]
    with pytest.raises(error, match=words):
        ref.match(bad)


def test_gpus():
    """device="cuda:all" / "cuda:0,2" (gm_params.gpus): a list that is not one
    is a ValueError naming gpus; a reference on the CPU spreads over no GPU;
    where a GPU is usable, two copies on it ("cuda:0,0") and "cuda:all" give
    the results of "cuda"."""
    path = os.path.join(DATA, "ref.jpg")
    with pytest.raises(ValueError, match="gpus"):
        gmatch.Reference(path, device="cuda:x")
    with pytest.raises(ValueError, match="gpus"):
        gmatch.Reference(path, device="cuda:0,")
    assert gmatch.Reference(path, device="cpu").gpus == 0
    try:
        one = gmatch.Reference(path, device="cuda")
    except RuntimeError:
        with pytest.raises(RuntimeError, match="CUDA"):
            gmatch.Reference(path, device="cuda:all")
        return
    q = os.path.join(DATA, "query.jpg")
    want = one.match(q)
    for d, n in (("cuda:0,0", 2), ("cuda:all", None)):
        ref = gmatch.Reference(path, device=d)
        assert ref.gpus == n if n else ref.gpus >= 1
        got = ref.match(q)
        assert (got.status, got.votes, got.confidence) == (want.status, want.votes,
                                                           want.confidence)


def test_bad_references():
    with pytest.raises(ValueError, match="top_k"):
        gmatch.Reference(os.path.join(DATA, "ref.jpg"), top_k=0, device="cpu")
    with pytest.raises(ValueError, match="device"):
        gmatch.Reference(os.path.join(DATA, "ref.jpg"), device="tpu")
    with pytest.raises(TypeError, match="colour"):
        gmatch.Reference(os.path.join(DATA, "ref.jpg"), colour=True)
    with pytest.raises(ValueError, match="over the limit"):
        gmatch.Reference(np.zeros((100, 100), np.uint8), max_pixels=5000, device="cpu")
    with pytest.raises(OSError, match="truncated|corrupt|premature|JPEG"):
        data = open(os.path.join(DATA, "ref.jpg"), "rb").read()
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "gmatch-pytest-cut.jpg")
        with open(path, "wb") as f:
            f.write(data[:200])
        try:
            gmatch.Reference(path, device="cpu")
        finally:
            os.unlink(path)


def test_no_leak_over_10000_calls(sample):
    """10,000 matches of a small query (and 10,000 refused ones): Python's heap
    (tracemalloc) and the process's resident memory stay flat."""
    ref = gmatch.Reference(os.path.join(DATA, "ref.jpg"), model="similarity", device="cpu",
                           threads=1)
    q = sample[1][100:164, 100:164].copy()
    bad = np.zeros((4, 4), np.float32)

    def burst(n):
        for _ in range(n):
            ref.match(q)
            try:
                ref.match(bad)
            except ValueError:
                pass

    def rss_kib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() // 1024

    burst(500)  # warm: allocator pools, OpenMP threads
    gc.collect()
    tracemalloc.start()
    r0, t0 = rss_kib(), tracemalloc.get_traced_memory()[0]
    burst(10000)
    gc.collect()
    r1, t1 = rss_kib(), tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert t1 - t0 < 64 * 1024, f"Python heap grew by {t1 - t0} bytes"
    assert r1 - r0 < 4 * 1024, f"resident memory grew by {r1 - r0} KiB"


def test_rgb_order(sample):
    """A colour image as BGR, and the same as RGB with rgb=True: the same gray."""
    ref, query, want = sample
    h, w = query.shape
    rng = np.random.default_rng(5)
    bgr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    rgb = np.ascontiguousarray(bgr[:, :, ::-1])
    a = gmatch._gmatch.to_gray(bgr, False, 0)[0]
    b = gmatch._gmatch.to_gray(rgb, True, 0)[0]
    c = gmatch._gmatch.to_gray(rgb, False, 0)[0]
    assert a == b and a != c
    both = gmatch.Reference(os.path.join(DATA, "ref.jpg"), device="cpu", rgb=True)
    q3 = np.repeat(query[:, :, None], 3, axis=2)
    assert np.array_equal(both.match(q3).matrix, want.matrix)


@pytest.mark.skipif(not gmatch.video_available(), reason="built without FFmpeg")
def test_other_formats(tmp_path, sample):
    """PGM and BMP references (FFmpeg's decoders) equal to the same pixels in
    an array; a TIFF query; a frame of a video as the reference."""
    ref, query, want = sample
    g = gray(os.path.join(DATA, "ref.jpg"))
    h, w = g.shape
    pgm = tmp_path / "ref.pgm"
    pgm.write_bytes(b"P5\n%d %d\n255\n" % (w, h) + g.tobytes())
    row = (w * 3 + 3) // 4 * 4
    px = np.zeros((h, row), np.uint8)
    px[:, :3 * w] = np.repeat(g, 3, axis=1)
    import struct
    body = px[::-1].tobytes()
    bmp = tmp_path / "ref.bmp"
    bmp.write_bytes(b"BM" + struct.pack("<IHHI", 54 + len(body), 0, 0, 54) +
                    struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(body), 2835, 2835, 0, 0) +
                    body)
    for path in (pgm, bmp):
        r = gmatch.Reference(path, device="cpu")
        assert (r.width, r.height) == (w, h)
        got = r.match(query)
        assert np.array_equal(got.matrix, want.matrix), path
    assert ref.match(os.path.join(DATA, "query.tiff")).status == "match"
    v = gmatch.Reference(os.path.join(DATA, "video", "clip.mp4"), frame=3, device="cpu")
    res = list(v.match_video(os.path.join(DATA, "video", "clip.mp4"), frames=(3, 4)))
    assert res[0].status == "match"
    assert np.allclose(res[0].matrix3, np.eye(3), atol=0.02)
    with pytest.raises(ValueError, match="50 frames"):
        gmatch.Reference(os.path.join(DATA, "video", "clip.mp4"), frame=500, device="cpu")


def test_draw(sample):
    """result.draw: a picture with the outline in red where the corners are;
    none: the two side by side; an error result refuses."""
    ref, query, want = sample
    refimg = gray(os.path.join(DATA, "ref.jpg"))
    pic = want.draw(refimg, query)
    assert pic.dtype == np.uint8 and pic.ndim == 3 and pic.shape[2] == 3
    assert pic.shape[1] >= refimg.shape[1] and pic.shape[0] > refimg.shape[0]
    # B, G, R: the outline is red, (40, 40, 255); at the first corner
    x, y = np.round(want.corners[0]).astype(int)
    patch = pic[max(0, y - 2):y + 3, max(0, x - 2):x + 3].reshape(-1, 3)
    assert any((p == [40, 40, 255]).all() for p in patch)
    rgbpic = want.draw(refimg, query, rgb=True)
    assert np.array_equal(rgbpic, pic[:, :, ::-1])
    neg = ref.match(np.full((64, 64), 128, np.uint8))
    assert neg.status == "none"
    side = neg.draw(refimg, np.full((64, 64), 128, np.uint8))
    assert side.shape[1] >= refimg.shape[1] + 64
    assert (side[10, refimg.shape[1] + 8 + 10] == 128).all()


def test_auto_begins_on_the_cpu():
    """device "auto" (the default): the library prepares the reference on the
    CPU and moves it to a GPU only once the queries repay its start, so one
    pair (gmatch.match) never starts it; expect() tells what is coming and
    leaves the answers as they are."""
    ref, q = os.path.join(DATA, "ref.jpg"), os.path.join(DATA, "query.jpg")
    r = gmatch.Reference(ref)
    assert r.backend == "cpu" and r.gpus == 0
    assert "auto" in r.device, r.device
    first = r.match(q)
    assert first.status == "match"
    r.expect(0)
    r.expect(None, wait=True)  # a GPU where there is one: ready, or failed and said why
    assert r.backend in ("cpu", "cuda")
    assert r.device.startswith("cuda" if r.backend == "cuda" else "cpu"), r.device
    again = r.match(q)
    assert again.status == "match"
    assert np.abs(again.matrix - first.matrix).max() < 1e-3
    assert gmatch.match(ref, q).status == "match"
    with pytest.raises(ValueError):
        r.expect("many")
