"""gmatch: find where a query image appears inside a reference image.

Geometric hashing on the cuckoo hash tables of Alcantara et al., "Real-Time
Parallel Hashing on the GPU" (SIGGRAPH Asia 2009), with verification and
sub-pixel refinement; on an NVIDIA GPU (CUDA) or on the CPU.  This module is
the C library (gmatch.h) on numpy arrays:

    import cv2, gmatch
    ref = gmatch.Reference(cv2.imread("ref.jpg"))       # prepared once
    res = ref.match(cv2.imread("query.jpg"))            # any number of queries
    if res:                                              # res.status == "match"
        warped = cv2.warpPerspective(query, res.matrix3, (ref.width, ref.height))

Images are numpy arrays (H x W uint8 or uint16 gray, H x W x 3 BGR as OpenCV
loads them, H x W x 4 BGRA; any strides: slices and transposes are read as
they are) or paths (JPEG and PNG by the library's decoders, other stills
such as TIFF, BMP, WebP and PNM through FFmpeg).  16-bit images are scaled
by their actual range (10- or 12-bit data in a 16-bit container comes out
full range).

The matrix maps query pixel (x, y) to reference pixel (OpenCV's warpAffine
convention: pixel centres at integer coordinates); a 2x3 array for the
similarity and affine models (cv2.warpAffine), 3x3 for a homography
(cv2.warpPerspective); Result.matrix3 is always 3x3.

Threads: Reference.match releases the GIL while it runs, so several threads
can match queries against one reference at once.  Importing the module sets
GOMP_SPINCOUNT=30000 in os.environ where neither it nor OMP_WAIT_POLICY is
set, so that OpenMP's idle threads sleep after a tenth of the runtime's
default spin instead of spinning for milliseconds on cores other work may
need (processes started later inherit it).  Errors raise OSError (a
file that cannot be read), ValueError (an array that is not an image, a
parameter out of range), MemoryError, or RuntimeError (a device failure),
each with the library's one-line message.
"""
import math
import os
import warnings

import numpy as np

# OpenMP's idle threads spin before they sleep (libgomp: some 300,000
# rounds), taking cores that other work may need; libgomp reads how long as
# it loads, with the extension below, so a shorter spin is set here where
# the environment chose nothing (the gmatch command does the same; it has
# no effect where libgomp was loaded already)
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "30000"

from . import _gmatch  # after the environment above

__all__ = ["Reference", "Result", "match", "MODELS", "DEVICES", "video_available",
           "cuda_available", "__version__"]

__version__ = _gmatch.version()

#: The models a match can report (gmatch.h, gm_model), in the library's order.
MODELS = _gmatch.models()
#: The devices a reference can run on (gmatch.h, gm_device), in the library's order.
DEVICES = _gmatch.devices()
#: Which image is looked for in which (gmatch.h, gm_direction), in the library's order.
DIRECTIONS = ("auto", "forward", "reverse")

_DEFAULTS = _gmatch.defaults()


def video_available():
    """Whether this build reads videos (the C library was built with FFmpeg)."""
    return _gmatch.video_available()


def cuda_available():
    """Whether this build has the CUDA backend (whether a GPU is usable is
    known when a Reference is prepared with device="cuda")."""
    return _gmatch.backend_available(DEVICES.index("cuda"))


def _model_index(model):
    if model not in MODELS:
        raise ValueError(f"model {model!r}: one of {', '.join(MODELS)}")
    return MODELS.index(model)


class Result:
    """One query's answer (or one video frame's).

    status      "match", "none", or "error" (a video frame that did not decode:
                see error); bool(result) is True for a match
    matrix      numpy array, query -> reference pixels: 2x3 for the similarity and
                affine models (cv2.warpAffine), 3x3 for a homography
                (cv2.warpPerspective); None unless status is "match"
    matrix3     the same as 3x3 ([matrix; 0 0 1] for 2x3); None unless a match
    model       "similarity", "affine" or "homography": the model of matrix,
                the one asked for (a similarity is an affine and a homography
                too: model="homography" always gives a 3x3 matrix, as the
                command line's --model homography does); under model="auto"
                the one the edges supported; for "none", the model asked for
    confidence  0..1, the verification of the transform against the reference's
                edges (a match when at least the reference's min_confidence)
    votes       the votes of the winning basis pair
    inliers     query edge points the reference confirmed
    residual_px root mean square distance, in reference pixels, of the query's
                edge points (mapped) from the reference edges they landed on: the
                fit's accuracy; None unless a match
    corners     4 x 2 array: the query's corners (0, 0), (w-1, 0), (w-1, h-1),
                (0, h-1) in reference pixels; None unless a match
    scale       reference pixels per query pixel (at the query's centre for a
                homography); None unless a match
    angle_deg   the rotation, clockwise on screen (y down) positive; None unless
                a match
    time_ms     the library's time for this query, in milliseconds
    query_size  (width, height) of the query
    frame       the frame number (videos; None for a still)
    pts_s       the frame's time in seconds from the stream start (videos; None
                where unknown)
    error       why a video frame gave no result (status "error"), else None
    overlap     (query share, reference share): the share of the query's area
                that lies on the reference and of the reference's area that the
                query covers; None unless a match
    direction   "forward" (the query found in the reference) or "reverse" (the
                reference found in the query); None unless a match
    uncertainty_px  a bound, in reference pixels, on the mean error of the
                corners of the region the two images share, which held for at
                least 95% of the matches of calibration sets
                (docs/calibration.md); None unless a match
    reason      why not, for "none": "no_edges", "no_candidate", "weak",
                "ambiguous", "uncertain", "small_overlap" or "horizon"
                (gmatch.h, gm_reason); None for a match or an error
    """

    __slots__ = ("status", "matrix", "matrix3", "model", "confidence", "votes", "inliers",
                 "residual_px", "corners", "scale", "angle_deg", "time_ms", "query_size", "frame",
                 "pts_s", "error", "overlap", "direction", "uncertainty_px", "reason")

    def __init__(self, raw=None, query_size=(0, 0), asked="similarity", frame=None, pts_s=None,
                 error=None):
        self.query_size = tuple(query_size)
        self.frame, self.pts_s, self.error = frame, pts_s, error
        self.matrix = self.matrix3 = self.corners = self.scale = self.angle_deg = None
        self.residual_px = self.overlap = self.direction = None
        self.uncertainty_px = self.reason = None
        if raw is None:  # an error item of a video
            self.status, self.model = "error", asked
            self.confidence, self.votes, self.inliers, self.time_ms = 0.0, 0, 0, 0.0
            return
        (found, model, h, self.confidence, self.votes, self.inliers, residual, self.time_ms,
         overlap, direction, uncertainty, reason) = raw
        self.status = "match" if found else "none"
        self.model = MODELS[model] if found and asked == "auto" else asked
        if not found:
            self.reason = reason
            return
        self.residual_px = residual
        self.uncertainty_px = uncertainty
        self.overlap = tuple(overlap)
        self.direction = DIRECTIONS[direction]
        H = np.array(h, dtype=np.float64).reshape(3, 3)
        self.matrix3 = H
        self.matrix = H.copy() if self.model == "homography" else H[:2].copy()
        w, hq = self.query_size
        c = np.array([[0, 0, 1], [w - 1, 0, 1], [w - 1, hq - 1, 1], [0, hq - 1, 1]], np.float64)
        p = c @ H.T
        self.corners = p[:, :2] / p[:, 2:3]
        # scale and angle from the local linear part at the query's centre
        x, y = (w - 1) / 2.0, (hq - 1) / 2.0
        d = H[2, 0] * x + H[2, 1] * y + H[2, 2]
        u = (H[0, 0] * x + H[0, 1] * y + H[0, 2]) / d
        v = (H[1, 0] * x + H[1, 1] * y + H[1, 2]) / d
        a, b = (H[0, 0] - u * H[2, 0]) / d, (H[0, 1] - u * H[2, 1]) / d
        c2, e = (H[1, 0] - v * H[2, 0]) / d, (H[1, 1] - v * H[2, 1]) / d
        self.scale = math.sqrt(abs(a * e - b * c2))
        self.angle_deg = math.degrees(math.atan2(c2, a))

    def __bool__(self):
        return self.status == "match"

    def __repr__(self):
        where = "" if self.frame is None else f"frame={self.frame}, "
        if self.status == "error":
            return f"Result({where}status='error', error={self.error!r})"
        if self.status == "none":
            return (f"Result({where}status='none', model={self.model!r}, "
                    f"confidence={self.confidence:.3f}, reason={self.reason!r})")
        return (f"Result({where}status='match', model={self.model!r}, "
                f"confidence={self.confidence:.3f}, scale={self.scale:.4f}, "
                f"angle_deg={self.angle_deg:.2f}, uncertainty_px={self.uncertainty_px:.2f}, "
                f"matrix={self.matrix.round(4).tolist()})")

    def draw(self, reference, query, max_width=1600, rgb=False):
        """A picture of this result, to look at before trusting the numbers:
        an H x W x 3 uint8 array, B, G, R (cv2.imwrite takes it as it is; R, G,
        B with rgb=True, which also reads 3-channel inputs as R, G, B).

        reference, query: the images that were matched (arrays or paths).  A
        match: the reference (at most max_width wide) with the query's outline
        in red and the query warped into its frame in false colour (gray where
        the two agree, green and magenta fringes where they do not), and a
        caption with the numbers.  No match: the two side by side.
        """
        if self.status == "error":
            raise ValueError(f"an error result has nothing to draw: {self.error}")
        found = self.status == "match"
        h = tuple(self.matrix3.ravel()) if found else (1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0)
        buf, w, hh = _gmatch.draw(reference, query, bool(rgb), found,
                                  MODELS.index(self.model) if self.model in MODELS else 0, h,
                                  float(self.confidence), float(self.scale or 0.0),
                                  float(self.angle_deg or 0.0), float(self.residual_px or 0.0),
                                  int(max_width))
        img = np.frombuffer(buf, np.uint8).reshape(hh, w, 3)
        return img.copy() if rgb else np.ascontiguousarray(img[:, :, ::-1])

    def to_dict(self):
        """The fields as plain Python values (lists for arrays), e.g. for json.dumps."""
        out = {}
        for k in self.__slots__:
            v = getattr(self, k)
            out[k] = v.tolist() if isinstance(v, np.ndarray) else v
        return out


class Reference:
    """A reference image, prepared once (edges, bases, hash tables) for any
    number of queries.

    Reference(image, *, model="auto", device="auto", min_confidence=0.3,
              seed=1, threads=0, max_pixels=100_000_000, rgb=False, frame=0,
              direction="auto", max_uncertainty=20.0, **tuning)

    image           a numpy array (H x W uint8/uint16 gray, H x W x 3 BGR, H x W x 4
                    BGRA, any strides) or a path
    model           the default model of match(): "similarity" (rotation, uniform
                    scale, translation), "affine", "homography" (views with
                    perspective) or "auto" (the simplest the edges support).  A
                    reference prepared for anything but "similarity" answers every
                    model; one prepared for "similarity" (faster to prepare) only that
    device          "auto" (the CPU first, the GPU once the queries repay its
                    start, see expect(); the same results), "cpu",
                    "cuda" (the GPU or RuntimeError), or "cuda:all" / "cuda:0,2":
                    prepared on each of those GPUs, the queries of threads
                    matching at once spread over them (the same results)
    min_confidence  below it a result is "none" (0..1)
    max_uncertainty a match whose uncertainty_px exceeds it is "none" (reason
                    "uncertain"); reference pixels, float("inf") for no bound
    seed            the hash tables' functions; every seed gives the same results
                    (the search's draws are a function of the images), whatever
                    the threads and the device
    threads         CPU threads of each call, 0 = all cores
    max_pixels      refuse larger images (reference and queries)
    rgb             3- and 4-channel arrays are R, G, B(, A) instead of OpenCV's B, G, R
    frame           for a video's path: the frame (from 0) that is the reference
    direction       "auto" (the query inside the reference, and where that finds
                    nothing the reference inside the query), "forward" or
                    "reverse" (one way only; gmatch.h, gm_direction)
    tuning          max_side, ref_points, query_points, basis_points,
                    ref_basis_prob, query_bases, top_k: gmatch.h documents them and
                    their ranges

    Attributes: width, height (of the reference), device (what runs it now, in
    words), gpus (how many GPUs the queries spread over now, 0 on the CPU),
    backend ("cpu" or "cuda", now), fallback ("" or why the GPU gave
    way to the CPU: a query the GPU fails is matched again on the CPU, which
    answers every later one), prepare_ms, model, min_confidence, max_uncertainty.
    """

    _TUNING = ("max_side", "ref_points", "query_points", "basis_points", "ref_basis_prob",
               "query_bases", "top_k")

    def __init__(self, image, *, model="auto", device="auto", min_confidence=None, seed=None,
                 threads=None, max_pixels=None, rgb=False, frame=0, direction="auto",
                 max_uncertainty=None, **tuning):
        unknown = set(tuning) - set(self._TUNING)
        if unknown:
            raise TypeError(f"Reference() got unexpected keyword argument(s): "
                            f"{', '.join(sorted(unknown))}")
        # (index, gpus); None for no device's name; ValueError for a list that is not one
        parsed = _gmatch.device_from_name(device) if isinstance(device, str) else None
        if parsed is None:
            raise ValueError(f"device {device!r}: one of {', '.join(DEVICES)}, cuda:all or "
                             f"cuda:N[,N...]")
        device_index, gpus = parsed
        if direction not in DIRECTIONS:
            raise ValueError(f"direction {direction!r}: one of {', '.join(DIRECTIONS)}")
        p = dict(_DEFAULTS)
        for k, v in (("min_confidence", min_confidence), ("seed", seed), ("threads", threads),
                     ("max_pixels", max_pixels), ("max_uncertainty", max_uncertainty)):
            if v is not None:
                p[k] = v
        p.update(tuning)
        self.model = model
        self.rgb = bool(rgb)
        self.min_confidence = float(p["min_confidence"])
        self.max_uncertainty = float(p["max_uncertainty"])
        self._max_pixels = int(p["max_pixels"])
        self._cap, self.width, self.height, self.prepare_ms = \
            _gmatch.prepare(image, int(frame), self.rgb, int(p["seed"]), int(p["threads"]),
                            device_index, _model_index(model),
                            float(p["min_confidence"]), self._max_pixels, int(p["max_side"]),
                            int(p["ref_points"]), int(p["query_points"]), int(p["basis_points"]),
                            float(p["ref_basis_prob"]), int(p["query_bases"]), int(p["top_k"]),
                            gpus, DIRECTIONS.index(direction), self.max_uncertainty)

    @property
    def device(self):
        """What runs the queries now, in words (gm_ref_device): under "auto"
        the CPU until the GPU takes over, and why it did not."""
        return _gmatch.fallback(self._cap)[2]

    @property
    def gpus(self):
        """How many GPUs the queries spread over now (0 on the CPU)."""
        return _gmatch.fallback(self._cap)[3]

    def expect(self, queries, wait=False):
        """Under device "auto": tells the reference how many more queries are
        coming (None: no end known), so that the GPU starts now where they
        repay its start, rather than after the CPU's time has paid for it
        (gm_ref_expect); wait=True returns once the GPU's copy is ready or
        has failed.  Nothing on another device or once on the GPU.
        match_video says so itself."""
        _gmatch.expect(self._cap, -1 if queries is None else int(queries), bool(wait))

    @property
    def backend(self):
        """"cpu" or "cuda": where the reference runs now (after a GPU failure, "cpu")."""
        return _gmatch.fallback(self._cap)[1]

    @property
    def fallback(self):
        """"" while the reference runs where it was prepared; else one line
        saying that the GPU failed, and why (gm_ref_fallback)."""
        return _gmatch.fallback(self._cap)[0]

    def __repr__(self):
        return (f"Reference({self.width}x{self.height}, model={self.model!r}, "
                f"device={self.device!r})")

    def match(self, query, model=None):
        """Where query (an array or a path) appears in this reference: a Result.

        model: "similarity", "affine", "homography" or "auto"; None for the
        reference's own.  The GIL is released while the library works.
        """
        model = self.model if model is None else model
        raw, w, h = _gmatch.match(self._cap, query, _model_index(model), self.rgb,
                                  self._max_pixels)
        return Result(raw, (w, h), asked=model)

    def match_video(self, path, frames=None, step=1, model=None):
        """Match every selected frame of the video at path: a generator of
        Results in frame order, each with frame and pts_s.  The library's frame
        pipeline runs on threads of its own (a decoder, frames matched in
        parallel) while the caller consumes the results.

        frames: None for all, or (first, last) for frames first .. last-1 (last
        None: to the end), or a range (its start, stop and step).  A frame that
        does not decode is a Result with status "error" and error saying why
        (every selected frame gets its Result); when frames were lost on the
        way, a RuntimeWarning at the end says what.
        """
        model = self.model if model is None else model
        mi = _model_index(model)
        first, last = 0, -1
        if isinstance(frames, range):
            first, last, step = frames.start, frames.stop, frames.step
        elif frames is not None:
            first, last = frames
            last = -1 if last is None else last
        if first < 0 or step < 1 or (last != -1 and last < first):
            raise ValueError(f"frames {frames!r}, step {step}: first >= 0, last >= first, step >= 1")
        v, _, _, _, _ = _gmatch.video_open(os.fspath(path), self._cap, first, last, step,
                                           self._max_pixels, mi)
        while True:
            item = _gmatch.video_next(v)
            if item is None:
                break
            frame, pts, error, raw, w, h = item
            yield Result(raw, (w, h), asked=model, frame=frame, pts_s=pts, error=error)
        lost = _gmatch.video_lost(v)
        if lost:
            warnings.warn(f"{os.fspath(path)}: {lost}", RuntimeWarning, stacklevel=2)


def match(reference, query, model="auto", **params):
    """One pair: Reference(reference, model=model, **params).match(query).

    Under device "auto" (the default) the one pair runs on the CPU: one query
    never repays starting the GPU (on an H100 machine a quarter of a second
    for CUDA alone, where the CPU matches a 512-pixel pair in about 50 ms,
    see docs/speed.md; the library's choice, gmatch.h).  device="cuda" asks
    for the GPU all the same.  Both give the same result.  For several
    queries against one reference, prepare it once with Reference.
    """
    return Reference(reference, model=model, **params).match(query)
