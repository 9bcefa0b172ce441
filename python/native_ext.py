# SPDX-License-Identifier: BSD-3-Clause
"""How the C++ backend (csrc/, the module sharc.torch._native) is compiled against the torch at
hand: by setup.py during `pip install`, and by tests/torch/native.py for the tests (a build of
the tree). Not part of the installed package.

The extension includes libsharc's public headers and links libsharc; where torch was built
with CUDA and the CUDA toolkit's headers are found, it is built with CUDA
(SHARC_TORCH_CUDA: CUDA tensors on the current stream) and links c10_cuda.
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["backend.cpp", "coll.cpp", "coll_list.cpp", "p2p.cpp", "util.cpp", "work.cpp",
           "module.cpp"]


def cuda_home():
    """The CUDA toolkit to compile the CUDA build against, or None for a CPU build."""
    import torch
    from torch.utils import cpp_extension

    if os.environ.get("SHARC_TORCH_NO_CUDA") or torch.version.cuda is None:
        return None
    home = cpp_extension.CUDA_HOME
    if home and os.path.isfile(os.path.join(home, "include", "cuda_runtime_api.h")):
        return home
    return None


def ext_args(include_dirs, library_dirs, rpaths, relative=False):
    """Keyword arguments of torch.utils.cpp_extension's builders for the extension:
    @include_dirs hold sharc/sharc.h (and sharc/version.h), @library_dirs libsharc.so; the
    sources relative to python/ (@relative: setuptools wants them so) or absolute."""
    home = cuda_home()
    incs = list(include_dirs)
    macros = []
    libs = ["sharc"]
    if home:
        incs.append(os.path.join(home, "include"))
        macros.append(("SHARC_TORCH_CUDA", "1"))
        libs.append("c10_cuda")
    else:
        # sharc/sharc_cuda.h's one CUDA type, for a build without the toolkit
        incs.append(os.path.join(HERE, "..", "config", "cuda_none"))
    return dict(
        sources=[os.path.join("csrc" if relative else os.path.join(HERE, "csrc"), s)
                 for s in SOURCES],
        include_dirs=incs,
        define_macros=macros,
        library_dirs=list(library_dirs),
        libraries=libs,
        extra_compile_args=["-O2", "-fvisibility=hidden"],
        extra_link_args=["-Wl,-rpath," + r for r in rpaths],
    )
