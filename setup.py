"""Build of the Python module (python/gmatch) over the C library.

    python3 -m venv --system-site-packages V
    V/bin/pip install --no-build-isolation --no-deps .

The extension links the library statically, so the module is one file that
needs no LD_LIBRARY_PATH.  Where the library comes from:
  - GMATCH_PREFIX=/usr/local (an installed gmatch: cmake --install): its
    gmatch.pc and libgmatch.a;
  - otherwise this repository's library, configured and built by CMake into
    build-python/ (the command line, tests and tools off) and installed into
    build-python/prefix.  GMATCH_CMAKE_ARGS adds CMake arguments, e.g.
    "-DGMATCH_CUDA=OFF -DGMATCH_FFMPEG=OFF".
Nothing is downloaded: the build needs Debian's python3-dev, python3-numpy and
python3-setuptools beside the library's own packages (tools/setup.sh).
"""
import importlib.util
import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))

# pip builds a wheel (PEP 517), and setuptools before 70.1 makes one (and the
# metadata pip asks for first) through the wheel package's bdist_wheel:
# without it setuptools says only "invalid command 'bdist_wheel'".
WHEEL_COMMANDS = {"bdist_wheel", "dist_info"}
if WHEEL_COMMANDS & set(sys.argv[1:]) and importlib.util.find_spec("wheel") is None:
    import setuptools
    if tuple(int(x) for x in re.findall(r"\d+", setuptools.__version__)[:2]) < (70, 1):
        sys.exit("gmatch: building the Python module needs the 'wheel' package, which this "
                 f"Python ({sys.executable}) lacks: on Debian, apt-get install python3-wheel "
                 "(tools/setup.sh --python does) and make the venv with "
                 "--system-site-packages; elsewhere, pip install wheel.")


def cmake_version():
    """The version, written once: project() in CMakeLists.txt."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*gmatch\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("no project(gmatch VERSION ...) in CMakeLists.txt")
    return m.group(1)


def run(cmd):
    print(" ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


def library_prefix():
    prefix = os.environ.get("GMATCH_PREFIX")
    if prefix:
        return prefix
    build = os.path.join(ROOT, "build-python")
    prefix = os.path.join(build, "prefix")
    args = ["-DCMAKE_BUILD_TYPE=Release", "-DGMATCH_BUILD_CLI=OFF",
            "-DGMATCH_BUILD_TESTS=OFF", "-DGMATCH_BUILD_TOOLS=OFF"]
    args += shlex.split(os.environ.get("GMATCH_CMAKE_ARGS", ""))
    run(["cmake", "-S", ROOT, "-B", build] + args)
    run(["cmake", "--build", build, "-j", str(os.cpu_count() or 1)])
    run(["cmake", "--install", build, "--prefix", prefix])
    return prefix


def pkg_config(prefix, *args):
    pc = [os.path.join(prefix, d, "pkgconfig") for d in ("lib", "lib64", "share")]
    env = dict(os.environ, PKG_CONFIG_PATH=os.pathsep.join(
        pc + [os.environ.get("PKG_CONFIG_PATH", "")]))
    out = subprocess.run(["pkg-config"] + list(args) + ["gmatch"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return shlex.split(out)


class BuildWithLibrary(build_ext):
    """build_ext that first finds or builds the C library and links it statically."""

    def build_extensions(self):
        prefix = library_prefix()
        cflags = pkg_config(prefix, "--cflags")
        libdir = pkg_config(prefix, "--variable=libdir")[0]
        static = os.path.join(libdir, "libgmatch.a")
        if not os.path.exists(static):
            raise RuntimeError(f"{static} not found: the Python module links the static library")
        # Libs.private: OpenMP, libpng, libjpeg, FFmpeg, CUDA's runtime, ...
        private = [a for a in pkg_config(prefix, "--static", "--libs")
                   if a != "-lgmatch" and not a.startswith("-Wl,-rpath")]
        for ext in self.extensions:
            ext.include_dirs += [a[2:] for a in cflags if a.startswith("-I")]
            ext.extra_objects.append(static)
            ext.extra_link_args += private
        super().build_extensions()


setup(
    version=cmake_version(),
    ext_modules=[Extension("gmatch._gmatch", sources=["python/gmatch/_gmatch.c"],
                           extra_compile_args=["-std=c11", "-Wall", "-Wextra"])],
    cmdclass={"build_ext": BuildWithLibrary},
)
