# SPDX-License-Identifier: BSD-3-Clause
"""Build the C++ backend (python/csrc/) of this tree against the venv's torch and this build's
libsharc, into BUILD_DIR (sharc/torch/_build.py: rebuilt only when a source or a flag
changed), and print the module's path. tests/torch/env.sh runs it once per test; the torch
tests then point sharc.torch at it (TORCH_SHARC_NATIVE).

    native.py TOP_SRCDIR TOP_BUILDDIR BUILD_DIR
"""

import importlib.util
import os
import sys

top_srcdir, top_builddir, build_dir = (os.path.abspath(a) for a in sys.argv[1:4])
spec = importlib.util.spec_from_file_location(
    "sharc_build", os.path.join(top_srcdir, "python", "sharc", "torch", "_build.py"))
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)

libdir = os.path.join(top_builddir, ".libs")
args = build.ext_args(os.path.join(top_srcdir, "python", "csrc"),
                      [os.path.join(top_srcdir, "include"), os.path.join(top_builddir, "include")],
                      [libdir], [libdir], os.path.join(top_srcdir, "config", "cuda_none"))
mod = build.load(args, build_dir, verbose=bool(os.environ.get("VERBOSE")))
print(mod.__file__)
