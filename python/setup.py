# SPDX-License-Identifier: BSD-3-Clause
"""Build of the package sharc: libsharc from this tree with its own build system, put inside
the package (sharc/_libs/libsharc.so.0, where sharc/_lib.py finds it first), and the C++ torch
backend (sharc.torch._native) compiled against the torch of the environment installed into.
The backend's sources and sharc's headers go into the package too (sharc/torch/_csrc,
sharc/_include): where torch comes later or changes, sharc.torch compiles the backend against
it on first use (sharc/torch/native.py).

    pip install ./python                         # or: python -m build python/
    SHARC_CONFIGURE_ARGS="--without-mpi"         # more arguments for libsharc's configure
    SHARC_BUILD_DIR=DIR                          # libsharc's build directory (reused if
                                                 # configured; default: python/build/libsharc)
    SHARC_TORCH_EXT=0                            # no C++ backend now (built on first use)

libsharc is configured with --with-cuda-runtime=static, and opens NCCL at run time: a wheel built
where CUDA is loads where there is none (the CUDA runtime is inside libsharc and finds no driver;
NCCL is opened at run time, torch's nvidia-nccl wheel or the system's). The sources come from the
repository around python/, or, in an sdist, from its _tree/ (the sdist carries them).
"""

import glob
import importlib.util
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "sharc_build", os.path.join(HERE, "sharc", "torch", "_build.py"))
native_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native_build)


def _tree():
    """The C library's source tree: the repository around python/, or the sdist's copy."""
    for top in (os.path.dirname(HERE), os.path.join(HERE, "_tree")):
        if os.path.isfile(os.path.join(top, "configure.ac")) and \
                os.path.isfile(os.path.join(top, "include", "sharc", "sharc.h")):
            return top
    raise RuntimeError("sharc: the C sources are not here (configure.ac beside python/, or an "
                       "sdist's _tree/)")


def _run(cmd, cwd):
    print("sharc: %s (in %s)" % (" ".join(cmd), cwd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def build_libsharc(bdir):
    """Configure @bdir (once) and make libsharc.la in it."""
    top = _tree()
    os.makedirs(bdir, exist_ok=True)
    if not os.path.isfile(os.path.join(top, "configure")):
        _run(["./autogen.sh"], top)
    if not os.path.isfile(os.path.join(bdir, "Makefile")):
        args = ["--with-cuda-runtime=static"]
        args += os.environ.get("SHARC_CONFIGURE_ARGS", "").split()
        _run([os.path.join(top, "configure")] + args, bdir)
    jobs = os.environ.get("MAX_JOBS") or str(os.cpu_count() or 2)
    _run(["make", "-j" + jobs, "libsharc.la"], bdir)


def _installed_soname(bdir):
    lib = os.path.join(bdir, ".libs", "libsharc.so.0")
    if not os.path.exists(lib):
        raise RuntimeError("sharc: the build made no %s" % lib)
    return os.path.realpath(lib)


def _find_torch():
    """torch's module: the build environment's, else (pip's isolated build) the one of the
    environment being installed into, which the extension must match."""
    try:
        import torch  # noqa: F401

        return True
    except ImportError:
        pass
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    try:
        out = subprocess.run([sys.executable, "-c", "import site, sys; print('\\n'.join("
                              "site.getsitepackages()))"], env=env, capture_output=True,
                             text=True, timeout=60).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return False
    sys.path.extend(p for p in out if p not in sys.path)
    try:
        import torch  # noqa: F401,F811

        return True
    except ImportError:
        return False


WANT_TORCH = os.environ.get("SHARC_TORCH_EXT", "1") != "0"
HAVE_TORCH = WANT_TORCH and _find_torch()
if HAVE_TORCH:
    from torch.utils.cpp_extension import BuildExtension as _BuildBase  # torch's ABI, C++ std
    from torch.utils.cpp_extension import CppExtension
else:
    _BuildBase = build_ext
def _build_dir():
    """SHARC_BUILD_DIR, else python/build/libsharc; but a tree configured in place (./configure
    at its top, which autoconf then refuses to build elsewhere) builds there, as it is."""
    if os.environ.get("SHARC_BUILD_DIR"):
        return os.path.abspath(os.environ["SHARC_BUILD_DIR"])
    top = _tree()
    if os.path.isfile(os.path.join(top, "config.status")):
        print("sharc: %s is configured in place: libsharc is built there, with its own "
              "configure arguments (`make distclean` there builds it apart, with the static "
              "CUDA runtime)" % top, flush=True)
        return top
    return os.path.join(HERE, "build", "libsharc")


BUILD_DIR = _build_dir()
PLACEHOLDER = "sharc._placeholder"


class BuildExt(_BuildBase):
    """libsharc first (into the package), then the C++ backend against it."""

    def run(self):
        if not WANT_TORCH:
            print("sharc: SHARC_TORCH_EXT=0: no C++ torch backend", flush=True)
        elif not HAVE_TORCH:
            print("sharc: torch is not installed: the C++ torch backend is compiled on the "
                  "first use of sharc.torch", flush=True)
        build_libsharc(BUILD_DIR)
        lib = _installed_soname(BUILD_DIR)
        for root in [os.path.abspath(self.build_lib)] + ([HERE] if self.inplace else []):
            os.makedirs(os.path.join(root, "sharc", "_libs"), exist_ok=True)
            shutil.copyfile(lib, os.path.join(root, "sharc", "_libs", "libsharc.so.0"))
            _copy_sources(root)
        super().run()

    def build_extension(self, ext):
        if ext.name != PLACEHOLDER:
            super().build_extension(ext)


def _copy_sources(root):
    """What compiling the C++ backend later needs, into the package under @root: its sources
    (sharc/torch/_csrc), sharc's public headers with this build's version.h and the stand-in
    for CUDA's header (sharc/_include)."""
    top = _tree()
    dst = os.path.join(root, "sharc", "torch", "_csrc")
    os.makedirs(dst, exist_ok=True)
    for name in native_build.SOURCES + native_build.HEADERS:
        shutil.copyfile(os.path.join(HERE, "csrc", name), os.path.join(dst, name))
    inc = os.path.join(root, "sharc", "_include")
    os.makedirs(os.path.join(inc, "sharc"), exist_ok=True)
    os.makedirs(os.path.join(inc, "cuda_none"), exist_ok=True)
    for h in glob.glob(os.path.join(top, "include", "sharc", "*.h")) + \
            [os.path.join(BUILD_DIR, "include", "sharc", "version.h")]:
        shutil.copyfile(h, os.path.join(inc, "sharc", os.path.basename(h)))
    shutil.copyfile(os.path.join(top, "config", "cuda_none", "cuda_runtime_api.h"),
                    os.path.join(inc, "cuda_none", "cuda_runtime_api.h"))


def _extensions():
    # the placeholder makes setuptools run build_ext (libsharc) and tag the wheel for the
    # platform where there is no C++ backend to build
    exts = [Extension(PLACEHOLDER, sources=[])]
    if HAVE_TORCH:
        top = _tree()
        args = native_build.ext_args("csrc", [os.path.join(top, "include"),
                                              os.path.join(BUILD_DIR, "include")],
                                     [os.path.join(BUILD_DIR, ".libs")], ["$ORIGIN/../_libs"],
                                     os.path.join(top, "config", "cuda_none"))
        exts.append(CppExtension("sharc.torch._native", **args))
    return exts


class Sdist(sdist):
    """The sdist carries the C sources (the repository's files outside python/) in _tree/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        top = os.path.dirname(HERE)
        try:
            listed = subprocess.run(["git", "ls-files"], cwd=top, capture_output=True,
                                    text=True, check=True).stdout.split("\n")
        except (OSError, subprocess.CalledProcessError):
            raise RuntimeError("sharc: an sdist is made from a git checkout of the repository")
        for rel in listed:
            if not rel or rel.startswith("python/"):
                continue
            dst = os.path.join(base_dir, "_tree", rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(os.path.join(top, rel), dst)


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExt, "sdist": Sdist})
