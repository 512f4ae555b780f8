/* _gmatch.c: the C half of the Python module (python/gmatch/__init__.py is
 * the other): images in (paths or any object with the buffer protocol: a
 * numpy array of any strides), references prepared and queries matched with
 * the GIL released, video frames read one at a time.  Only the public API
 * (gmatch.h, gmatch_video.h) is used, so this is the library as any C
 * caller sees it.  The Python layer builds the result objects and keeps the
 * conventions (keyword parameters, numpy matrices, a generator per video).
 *
 * Errors: a file that cannot be read or decoded raises OSError ("PATH:
 * why"); an array that is not an image, a parameter out of range or a model
 * the reference cannot answer, ValueError; out of memory, MemoryError; a
 * device failure, RuntimeError.  Each message is the library's one line. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "gmatch.h"
#include "gmatch_video.h"

#define REF_CAPSULE "gmatch._ref"
#define VIDEO_CAPSULE "gmatch._video"

/* The exception type of a library status (the module's docstring): what
 * cannot be read, OSError; a bad argument or image, ValueError; memory,
 * MemoryError; the device and the rest, RuntimeError. */
static PyObject *exc_of(gm_status st)
{
    switch (st) {
    case GM_ERR_IO:
    case GM_ERR_FORMAT:
    case GM_ERR_CORRUPT:
    case GM_ERR_UNSUPPORTED:
        return PyExc_OSError;
    case GM_ERR_INVALID:
    case GM_ERR_EMPTY:
    case GM_ERR_TOO_LARGE:
        return PyExc_ValueError;
    case GM_ERR_NOMEM:
        return PyExc_MemoryError;
    default:
        return PyExc_RuntimeError;
    }
}

/* Raise the exception for a library status with its message. */
static PyObject *raise_status(gm_status st, const char *msg)
{
    PyErr_SetString(exc_of(st), msg && *msg ? msg : gm_status_str(st));
    return NULL;
}

/* The same for a file: "PATH: message". */
static PyObject *raise_file(gm_status st, const char *path, const char *msg)
{
    PyErr_Format(exc_of(st), "%s: %s", path, msg && *msg ? msg : gm_status_str(st));
    return NULL;
}

/* ---- images ---------------------------------------------------------------- */

/* A path: JPEG and PNG by the library's decoders, any other still (TIFF,
 * BMP, WebP, PNM, ...) or frame `frame` of a video through FFmpeg
 * (gm_image_load_frame). */
static int load_path(PyObject *obj, int64_t frame, int64_t max_pixels, gm_image *out)
{
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(obj, &bytes))
        return -1;
    const char *path = PyBytes_AS_STRING(bytes);
    char err[512] = "";
    gm_status st;
    Py_BEGIN_ALLOW_THREADS
    st = gm_image_load_frame(path, frame, max_pixels, out, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != GM_OK) {
        raise_file(st, path, err);
        Py_DECREF(bytes);
        return -1;
    }
    Py_DECREF(bytes);
    return 0;
}

/* An array (buffer protocol): H x W, or H x W x C with C 1, 3 (BGR) or 4
 * (BGRA); uint8 or uint16; any strides. */
static int load_array(PyObject *obj, int64_t max_pixels, int rgb, gm_image *out)
{
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_RECORDS_RO) != 0)
        return -1;
    int rc = -1;
    const char *fmt = b.format ? b.format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == (PY_LITTLE_ENDIAN ? '<' : '>'))
        fmt++;
    int bytes = 0;
    if (strcmp(fmt, "B") == 0 && b.itemsize == 1)
        bytes = 1;
    else if (strcmp(fmt, "H") == 0 && b.itemsize == 2)
        bytes = 2;
    if (!bytes) {
        PyErr_Format(PyExc_ValueError,
                     "an image array holds uint8 or uint16 samples, not '%s' (itemsize %zd): "
                     "convert it, e.g. with numpy's astype(numpy.uint8)",
                     b.format ? b.format : "B", b.itemsize);
        goto done;
    }
    if (b.ndim != 2 && b.ndim != 3) {
        PyErr_Format(PyExc_ValueError,
                     "an image array is H x W (gray) or H x W x C (C = 1, 3 for BGR, 4 for "
                     "BGRA), not %d-dimensional", b.ndim);
        goto done;
    }
    Py_ssize_t ch = b.ndim == 3 ? b.shape[2] : 1;
    if (ch != 1 && ch != 3 && ch != 4) {
        PyErr_Format(PyExc_ValueError,
                     "an image array has 1, 3 (BGR) or 4 (BGRA) channels, not %zd", ch);
        goto done;
    }
    if (b.shape[0] > INT32_MAX || b.shape[1] > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "an image array of more than 2^31 rows or columns");
        goto done;
    }
    gm_pixels px = {b.buf, (int)b.shape[1], (int)b.shape[0], (int)ch, bytes, !rgb,
                    b.strides ? b.strides[0] : b.shape[1] * ch * bytes,
                    b.strides ? b.strides[1] : ch * bytes,
                    b.ndim == 3 && b.strides ? b.strides[2] : bytes};
    char err[256] = "";
    gm_status st;
    Py_BEGIN_ALLOW_THREADS
    st = gm_image_from_pixels(&px, max_pixels, out, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != GM_OK) {
        raise_status(st, err);
        goto done;
    }
    rc = 0;
done:
    PyBuffer_Release(&b);
    return rc;
}

/* obj: a path (str, bytes, os.PathLike; frame: of a video) or an array. */
static int load_image(PyObject *obj, int64_t frame, int64_t max_pixels, int rgb, gm_image *out)
{
    memset(out, 0, sizeof *out);
    if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyObject_HasAttrString(obj, "__fspath__"))
        return load_path(obj, frame, max_pixels, out);
    if (PyObject_CheckBuffer(obj))
        return load_array(obj, max_pixels, rgb, out);
    PyErr_Format(PyExc_TypeError,
                 "an image is a path or an array (numpy: H x W uint8/uint16 gray or H x W x 3 "
                 "BGR), not %.100s", Py_TYPE(obj)->tp_name);
    return -1;
}

/* ---- references -------------------------------------------------------------- */

static void ref_destroy(PyObject *cap)
{
    gm_ref_free(PyCapsule_GetPointer(cap, REF_CAPSULE));
}

static gm_ref *ref_of(PyObject *cap)
{
    return PyCapsule_GetPointer(cap, REF_CAPSULE);
}

/* fallback(capsule) -> (str, backend): gm_ref_fallback, and where the
 * reference runs now */
static PyObject *py_fallback(PyObject *self, PyObject *cap)
{
    (void)self;
    gm_ref *r = ref_of(cap);
    if (!r)
        return NULL;
    return Py_BuildValue("(sssi)", gm_ref_fallback(r), gm_device_name(gm_ref_backend(r)),
                         gm_ref_device(r), gm_ref_gpus(r));
}

/* expect(capsule, queries, wait) -> None: gm_ref_expect, the GIL released
 * (wait may take the GPU's start) */
static PyObject *py_expect(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap;
    long long queries;
    int wait;
    if (!PyArg_ParseTuple(args, "OLp", &cap, &queries, &wait))
        return NULL;
    gm_ref *r = ref_of(cap);
    if (!r)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    gm_ref_expect(r, (int64_t)queries, wait);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_defaults(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    gm_params p = gm_params_default();
    return Py_BuildValue("{s:K,s:i,s:i,s:i,s:d,s:L,s:i,s:i,s:i,s:i,s:d,s:i,s:i,s:d}", "seed",
                         (unsigned long long)p.seed, "threads", p.threads, "device", (int)p.device,
                         "model", (int)p.model, "min_confidence", p.min_confidence, "max_pixels",
                         (long long)p.max_pixels, "max_side", p.max_side, "ref_points",
                         p.ref_points, "query_points", p.query_points, "basis_points",
                         p.basis_points, "ref_basis_prob", p.ref_basis_prob, "query_bases",
                         p.query_bases, "top_k", p.top_k, "max_uncertainty", p.max_uncertainty);
}

/* prepare(image, frame, rgb, seed, threads, device, model, min_confidence,
 *         max_pixels, max_side, ref_points, query_points, basis_points,
 *         ref_basis_prob, query_bases, top_k, gpus, direction, max_uncertainty)
 *   -> (capsule, width, height, ms)
 *   gpus: None or gm_params.gpus ("all", "0,2"); where the reference runs
 *   (it moves under auto) is fallback()'s to say */
static PyObject *py_prepare(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *image;
    int rgb, device, model, direction;
    unsigned long long seed;
    long long max_pixels, frame;
    gm_params p = gm_params_default();
    if (!PyArg_ParseTuple(args, "OLpKiiidLiiiidiizid:prepare", &image, &frame, &rgb, &seed,
                          &p.threads, &device, &model, &p.min_confidence, &max_pixels,
                          &p.max_side, &p.ref_points, &p.query_points, &p.basis_points,
                          &p.ref_basis_prob, &p.query_bases, &p.top_k, &p.gpus, &direction,
                          &p.max_uncertainty))
        return NULL;
    p.direction = (gm_direction)direction;
    p.seed = seed;
    p.device = (gm_device)device;
    p.model = (gm_model)model;
    p.max_pixels = max_pixels;
    gm_image img;
    if (load_image(image, frame, p.max_pixels, rgb, &img) != 0)
        return NULL;
    gm_ref *r = NULL;
    gm_status st;
    Py_BEGIN_ALLOW_THREADS
    st = gm_ref_prepare(&p, gm_image_view(&img), &r);
    Py_END_ALLOW_THREADS
    int w = img.width, h = img.height;
    gm_image_free(&img);
    if (st != GM_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", r ? gm_ref_error(r) : gm_status_str(st));
        gm_ref_free(r);
        return raise_status(st, msg);
    }
    PyObject *cap = PyCapsule_New(r, REF_CAPSULE, ref_destroy);
    if (!cap) {
        gm_ref_free(r);
        return NULL;
    }
    return Py_BuildValue("(Niid)", cap, w, h, gm_ref_time_ms(r));
}

/* The result as a tuple: (found, model, h[9], confidence, votes, inliers,
 * residual_px, time_ms, (overlap[0], overlap[1]), direction,
 * uncertainty_px, reason); the Python layer names the fields. */
static PyObject *result_tuple(const gm_result *res)
{
    const char *reason = gm_reason_name(res->reason);
    return Py_BuildValue("(Ni(ddddddddd)diidd(dd)ids)",
                         PyBool_FromLong(res->status == GM_MATCH_FOUND), (int)res->model,
                         res->h[0], res->h[1], res->h[2], res->h[3], res->h[4], res->h[5],
                         res->h[6], res->h[7], res->h[8], res->confidence, res->votes,
                         res->inliers, res->residual_px, res->time.total, res->overlap[0],
                         res->overlap[1], (int)res->direction, res->uncertainty_px,
                         reason ? reason : "unknown");
}

/* match(capsule, image, model, rgb, max_pixels) -> (result tuple, width, height) */
static PyObject *py_match(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cap, *image;
    int model, rgb;
    long long max_pixels;
    if (!PyArg_ParseTuple(args, "OOipL:match", &cap, &image, &model, &rgb, &max_pixels))
        return NULL;
    gm_ref *r = ref_of(cap);
    if (!r)
        return NULL;
    gm_image img;
    if (load_image(image, 0, max_pixels, rgb, &img) != 0)
        return NULL;
    gm_result res;
    gm_status st;
    Py_BEGIN_ALLOW_THREADS
    st = gm_match_model(r, gm_image_view(&img), (gm_model)model, &res);
    Py_END_ALLOW_THREADS
    int w = img.width, h = img.height;
    gm_image_free(&img);
    if (st != GM_OK)
        return raise_status(st, res.error);
    return Py_BuildValue("(Nii)", result_tuple(&res), w, h);
}

/* ---- videos -------------------------------------------------------------------- */

/* A video is matched by the library's own frame pipeline (gm_video_match:
 * a decoder thread, frames matched in parallel by workers) running on a
 * thread of ours; its sink copies each result into a bounded ring that
 * video_next empties, with the GIL released while it waits.  A generator
 * dropped early stops the pipeline (the sink answers "stop") and joins it. */
#define RING 64

typedef struct {
    int64_t frame;
    int has_pts, failed, w, h;
    double pts_s;
    gm_result res;
    char error[384];
} video_item;

typedef struct {
    gm_video *v;
    gm_ref *ref;
    PyObject *refcap; /* keeps the reference alive while the pipeline runs */
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    video_item ring[RING];
    int head, count, done, stop;
    gm_status st;
} video_state;

static int video_sink(void *user, const gm_video_result *r)
{
    video_state *s = user;
    video_item it;
    memset(&it, 0, sizeof it);
    const gm_video_frame *f = r->item;
    it.frame = f->frame, it.has_pts = f->has_pts, it.pts_s = f->pts_s;
    if (f->status != GM_OK) {
        it.failed = 1;
        snprintf(it.error, sizeof it.error, "%s", f->error);
    } else if (r->match != GM_OK) {
        it.failed = 1, it.w = f->img.width, it.h = f->img.height;
        snprintf(it.error, sizeof it.error, "matching failed: %s",
                 r->res && r->res->error[0] ? r->res->error : gm_status_str(r->match));
    } else {
        it.res = *r->res, it.w = f->img.width, it.h = f->img.height;
    }
    pthread_mutex_lock(&s->mu);
    while (s->count == RING && !s->stop)
        pthread_cond_wait(&s->cv, &s->mu);
    int stop = s->stop;
    if (!stop) {
        s->ring[(s->head + s->count) % RING] = it;
        s->count++;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return stop;
}

static void *video_main(void *arg)
{
    video_state *s = arg;
    gm_status st = gm_video_match(s->v, s->ref, video_sink, s);
    pthread_mutex_lock(&s->mu);
    s->st = st, s->done = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void video_destroy(PyObject *cap)
{
    video_state *s = PyCapsule_GetPointer(cap, VIDEO_CAPSULE);
    if (!s)
        return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        Py_BEGIN_ALLOW_THREADS
        pthread_join(s->th, NULL);
        Py_END_ALLOW_THREADS
    }
    gm_video_close(s->v);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    Py_XDECREF(s->refcap);
    PyMem_RawFree(s);
}

/* video_open(path, ref, first, last, step, max_pixels, model)
 *   -> (capsule, width, height, fps, total): the pipeline started */
static PyObject *py_video_open(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *pathobj, *refcap, *bytes = NULL;
    gm_video_opts o = gm_video_opts_default();
    long long first, last, step, max_pixels;
    int model;
    if (!PyArg_ParseTuple(args, "OOLLLLi:video_open", &pathobj, &refcap, &first, &last, &step,
                          &max_pixels, &model))
        return NULL;
    gm_ref *ref = ref_of(refcap);
    if (!ref)
        return NULL;
    if (!PyUnicode_FSConverter(pathobj, &bytes))
        return NULL;
    o.first = first, o.last = last, o.step = step, o.max_pixels = max_pixels, o.model = (gm_model)model;
    o.sink_pixels = 0; /* the sink keeps a frame's size, not its pixels */
    const char *path = PyBytes_AS_STRING(bytes);
    video_state *s = PyMem_RawCalloc(1, sizeof *s);
    if (!s) {
        Py_DECREF(bytes);
        return PyErr_NoMemory();
    }
    char err[512] = "";
    gm_status st;
    Py_BEGIN_ALLOW_THREADS
    st = gm_video_open(path, &o, &s->v, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != GM_OK) {
        PyMem_RawFree(s);
        raise_file(st, path, err);
        Py_DECREF(bytes);
        return NULL;
    }
    Py_DECREF(bytes);
    s->ref = ref;
    s->refcap = refcap;
    Py_INCREF(refcap);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    PyObject *cap = PyCapsule_New(s, VIDEO_CAPSULE, video_destroy);
    if (!cap) {
        gm_video_close(s->v);
        Py_DECREF(refcap);
        PyMem_RawFree(s);
        return NULL;
    }
    if (pthread_create(&s->th, NULL, video_main, s) != 0) {
        Py_DECREF(cap);
        PyErr_SetString(PyExc_RuntimeError, "cannot start the video thread");
        return NULL;
    }
    s->started = 1;
    int w = 0, h = 0;
    double fps = 0;
    gm_video_info(s->v, &w, &h, &fps);
    return Py_BuildValue("(NiidL)", cap, w, h, fps, (long long)gm_video_frames_total(s->v));
}

/* video_next(video) -> None at the end, else
 * (frame, pts_s or None, error or None, result tuple or None, width, height),
 * the next selected frame's result, in frame order. */
static PyObject *py_video_next(PyObject *self, PyObject *vcap)
{
    (void)self;
    video_state *s = PyCapsule_GetPointer(vcap, VIDEO_CAPSULE);
    if (!s)
        return NULL;
    video_item it;
    int got = 0;
    gm_status st;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&s->mu);
    while (s->count == 0 && !s->done)
        pthread_cond_wait(&s->cv, &s->mu);
    if (s->count > 0) {
        it = s->ring[s->head];
        s->head = (s->head + 1) % RING;
        s->count--;
        got = 1;
        pthread_cond_broadcast(&s->cv);
    }
    st = s->st;
    pthread_mutex_unlock(&s->mu);
    Py_END_ALLOW_THREADS
    if (!got) {
        if (st != GM_OK)
            return raise_status(st, "video matching stopped");
        Py_RETURN_NONE;
    }
    PyObject *pts = Py_None;
    if (it.has_pts) {
        if (!(pts = PyFloat_FromDouble(it.pts_s)))
            return NULL;
    } else {
        Py_INCREF(pts);
    }
    if (it.failed)
        return Py_BuildValue("(LNsOii)", (long long)it.frame, pts, it.error, Py_None, it.w, it.h);
    return Py_BuildValue("(LNONii)", (long long)it.frame, pts, Py_None, result_tuple(&it.res),
                         it.w, it.h);
}

/* video_lost(video) -> the summary of what was lost, or None */
static PyObject *py_video_lost(PyObject *self, PyObject *vcap)
{
    (void)self;
    video_state *s = PyCapsule_GetPointer(vcap, VIDEO_CAPSULE);
    if (!s)
        return NULL;
    if (!gm_video_lost(s->v))
        Py_RETURN_NONE;
    return PyUnicode_FromString(gm_video_error(s->v));
}

/* ---- the module ------------------------------------------------------------------ */

/* The device names (gm_device_name) in gm_device's order, as far as the
 * library names them. */
static PyObject *py_devices(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    PyObject *t = PyTuple_New(0);
    for (int d = 0; t; d++) {
        const char *name = gm_device_name((gm_device)d);
        if (strcmp(name, "unknown") == 0)
            return t;
        PyObject *s = PyUnicode_FromString(name);
        if (!s || _PyTuple_Resize(&t, d + 1) != 0) {
            Py_XDECREF(s);
            return NULL;
        }
        PyTuple_SET_ITEM(t, d, s);
    }
    return NULL;
}

/* device_from_name(name) -> (device index, gpus or None); None for no
 * device's name; ValueError for a device's list that is not one
 * (gm_device_from_name; a device this build lacks is returned, and
 * preparing a reference on it says why). */
static PyObject *py_device_from_name(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    gm_device d = GM_DEVICE_AUTO;
    const char *gpus = NULL;
    gm_status st = gm_device_from_name(name, &d, &gpus);
    if (st != GM_OK && st != GM_ERR_UNSUPPORTED && !gpus)
        Py_RETURN_NONE;
    if (st != GM_OK && st != GM_ERR_UNSUPPORTED)
        return PyErr_Format(PyExc_ValueError,
                            "device %R: gpus '%s' is not \"all\" or up to %d GPU numbers like "
                            "\"0,2\"", arg, gpus, GM_MAX_GPUS);
    if (gpus)
        return Py_BuildValue("(is)", (int)d, gpus);
    return Py_BuildValue("(iO)", (int)d, Py_None);
}

/* The model names (gm_model_name) in the library's order: the one list
 * that gmatch.MODELS and every model argument are checked against. */
static PyObject *py_models(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    static const gm_model models[] = {GM_MODEL_SIMILARITY, GM_MODEL_AFFINE, GM_MODEL_HOMOGRAPHY,
                                      GM_MODEL_AUTO};
    PyObject *t = PyTuple_New(4);
    for (Py_ssize_t i = 0; t && i < 4; i++) {
        PyObject *name = PyUnicode_FromString(gm_model_name(models[i]));
        if (!name || (int)models[i] != (int)i) {
            Py_XDECREF(name);
            Py_DECREF(t);
            return name ? PyErr_Format(PyExc_RuntimeError, "gm_model's order changed") : NULL;
        }
        PyTuple_SET_ITEM(t, i, name);
    }
    return t;
}

static PyObject *py_version(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyUnicode_FromString(gm_version());
}

static PyObject *py_video_available(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyBool_FromLong(gm_video_available());
}

static PyObject *py_backend_available(PyObject *self, PyObject *arg)
{
    (void)self;
    int d = (int)PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(gm_backend_available((gm_device)d));
}

/* to_gray(image, rgb, max_pixels) -> (bytes, width, height): the gray image the
 * library matches, for drawing and for tests */
static PyObject *py_to_gray(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *image;
    int rgb;
    long long max_pixels;
    if (!PyArg_ParseTuple(args, "OpL:to_gray", &image, &rgb, &max_pixels))
        return NULL;
    gm_image img;
    if (load_image(image, 0, max_pixels, rgb, &img) != 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)img.width * img.height);
    if (out) {
        char *d = PyBytes_AS_STRING(out);
        for (int y = 0; y < img.height; y++)
            memcpy(d + (size_t)y * img.width, img.data + (size_t)y * img.stride, (size_t)img.width);
    }
    int w = img.width, h = img.height;
    gm_image_free(&img);
    return out ? Py_BuildValue("(Nii)", out, w, h) : NULL;
}

/* draw(ref, query, rgb, found, model, h[9], confidence, scale, angle, residual,
 *      max_width) -> (bytes RGB, width, height): gm_draw_result */
static PyObject *py_draw(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ref_obj, *q_obj;
    int rgb, found, model, max_width;
    gm_result res;
    memset(&res, 0, sizeof res);
    if (!PyArg_ParseTuple(args, "OOpii(ddddddddd)ddddi:draw", &ref_obj, &q_obj, &rgb, &found,
                          &model, &res.h[0], &res.h[1], &res.h[2], &res.h[3], &res.h[4],
                          &res.h[5], &res.h[6], &res.h[7], &res.h[8], &res.confidence,
                          &res.scale, &res.angle_deg, &res.residual_px, &max_width))
        return NULL;
    res.status = found ? GM_MATCH_FOUND : GM_MATCH_NONE;
    res.model = (gm_model)model;
    memcpy(res.m, res.h, sizeof res.m);
    gm_image ref, q;
    if (load_image(ref_obj, 0, 0, rgb, &ref) != 0)
        return NULL;
    if (load_image(q_obj, 0, 0, rgb, &q) != 0) {
        gm_image_free(&ref);
        return NULL;
    }
    gm_rgb pic;
    gm_status st;
    Py_BEGIN_ALLOW_THREADS
    st = gm_draw_result(gm_image_view(&ref), gm_image_view(&q), &res, max_width, &pic);
    Py_END_ALLOW_THREADS
    gm_image_free(&ref);
    gm_image_free(&q);
    if (st != GM_OK)
        return raise_status(st, "cannot draw the result");
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)pic.width * pic.height * 3);
    if (out) {
        char *d = PyBytes_AS_STRING(out);
        for (int y = 0; y < pic.height; y++)
            memcpy(d + (size_t)y * pic.width * 3, pic.data + (ptrdiff_t)y * pic.stride,
                   (size_t)pic.width * 3);
    }
    int w = pic.width, h = pic.height;
    gm_rgb_free(&pic);
    return out ? Py_BuildValue("(Nii)", out, w, h) : NULL;
}

static PyMethodDef methods[] = {
    {"draw", py_draw, METH_VARARGS, "A picture of a result (gm_draw_result), RGB bytes."},
    {"defaults", py_defaults, METH_NOARGS, "The library's default parameters (gm_params_default)."},
    {"prepare", py_prepare, METH_VARARGS, "Prepare a reference (gm_ref_prepare), GIL released."},
    {"match", py_match, METH_VARARGS, "Match a query (gm_match_model), GIL released."},
    {"fallback", py_fallback, METH_O, "gm_ref_fallback, the backend, device and GPUs now."},
    {"expect", py_expect, METH_VARARGS, "gm_ref_expect, GIL released."},
    {"video_open", py_video_open, METH_VARARGS, "Open a video (gm_video_open)."},
    {"video_next", py_video_next, METH_O, "The next selected frame's result (None at the end)."},
    {"video_lost", py_video_lost, METH_O, "What the video lost (gm_video_error), or None."},
    {"version", py_version, METH_NOARGS, "The C library's version (gm_version)."},
    {"models", py_models, METH_NOARGS, "The model names (gm_model_name), in the library's order."},
    {"devices", py_devices, METH_NOARGS, "The device names (gm_device_name), in gm_device's order."},
    {"device_from_name", py_device_from_name, METH_O, "gm_device_from_name: (index, gpus)."},
    {"video_available", py_video_available, METH_NOARGS, "Whether videos can be read (FFmpeg)."},
    {"backend_available", py_backend_available, METH_O, "gm_backend_available."},
    {"to_gray", py_to_gray, METH_VARARGS, "An image as the library sees it: 8-bit gray bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gmatch._gmatch",
    "The C half of gmatch: see the gmatch package for the documented API.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__gmatch(void)
{
    return PyModule_Create(&module);
}
