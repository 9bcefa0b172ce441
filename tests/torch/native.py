# SPDX-License-Identifier: BSD-3-Clause
"""Build the C++ backend (python/csrc/) of this tree against the venv's torch and this build's
libsharc, into BUILD_DIR (torch.utils.cpp_extension.load: rebuilt only when a source or a
flag changed), and print the module's path. tests/torch/env.sh runs it once per test; the
torch tests then point sharc.torch at it (TORCH_SHARC_NATIVE).

    native.py TOP_SRCDIR TOP_BUILDDIR BUILD_DIR
"""

import os
import sys

top_srcdir, top_builddir, build_dir = (os.path.abspath(a) for a in sys.argv[1:4])
sys.path.insert(0, os.path.join(top_srcdir, "python"))
import native_ext  # noqa: E402
from torch.utils import cpp_extension  # noqa: E402

libdir = os.path.join(top_builddir, ".libs")
args = native_ext.ext_args([os.path.join(top_srcdir, "include"),
                            os.path.join(top_builddir, "include")], [libdir], [libdir])
os.makedirs(build_dir, exist_ok=True)
mod = cpp_extension.load(
    name="_native",
    sources=args["sources"],
    extra_include_paths=args["include_dirs"],
    extra_cflags=args["extra_compile_args"] + ["-D%s=%s" % m for m in args["define_macros"]],
    extra_ldflags=["-L%s" % d for d in args["library_dirs"]] +
    ["-l%s" % lib for lib in args["libraries"]] + args["extra_link_args"],
    build_directory=build_dir,
    with_cuda=False,
    verbose=bool(os.environ.get("VERBOSE")),
)
print(mod.__file__)
