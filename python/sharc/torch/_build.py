# SPDX-License-Identifier: BSD-3-Clause
"""How the C++ backend (the module sharc.torch._native, from python/csrc/) is compiled against
the torch at hand: by setup.py during `pip install`, by tests/torch/native.py for the tests (a
build of the tree), and by native.py when the installed module does not load (a torch
installed or upgraded after sharc: its ABI differs), into a cache directory per torch version.
Imports nothing of sharc's, so that setup.py can load it by path.

The extension includes libsharc's public headers and links libsharc; where torch was built
with CUDA and the CUDA toolkit's headers are found, it is built with CUDA
(SHARC_TORCH_CUDA: CUDA tensors on the current stream) and links c10_cuda.
"""

import os

SOURCES = ["backend.cpp", "coll.cpp", "coll_list.cpp", "p2p.cpp", "util.cpp", "work.cpp",
           "module.cpp"]
HEADERS = ["backend.hpp", "util.hpp"]


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


def ext_args(csrc, include_dirs, library_dirs, rpaths, cuda_none, libsharc="sharc"):
    """Keyword arguments of torch.utils.cpp_extension's builders for the extension: its sources
    in @csrc, @include_dirs holding sharc/sharc.h (and sharc/version.h), @library_dirs
    libsharc (linked as -l@libsharc), @cuda_none the folder of the stand-in for CUDA's one type
    in sharc/sharc_cuda.h, for a build without the toolkit."""
    home = cuda_home()
    incs = list(include_dirs)
    macros = []
    libs = [libsharc]
    if home:
        incs.append(os.path.join(home, "include"))
        macros.append(("SHARC_TORCH_CUDA", "1"))
        libs.append("c10_cuda")
    else:
        incs.append(cuda_none)
    return dict(
        sources=[os.path.join(csrc, s) for s in SOURCES],
        include_dirs=incs,
        define_macros=macros,
        library_dirs=list(library_dirs),
        libraries=libs,
        extra_compile_args=["-O2", "-fvisibility=hidden"],
        extra_link_args=["-Wl,-rpath," + r for r in rpaths],
    )


def load(args, build_dir, verbose=False):
    """Compile (only what changed) and import the extension from @args (ext_args) in
    @build_dir, with torch.utils.cpp_extension.load; the module."""
    from torch.utils import cpp_extension

    os.makedirs(build_dir, exist_ok=True)
    return cpp_extension.load(
        name="_native",
        sources=args["sources"],
        extra_include_paths=args["include_dirs"],
        extra_cflags=args["extra_compile_args"] + ["-D%s=%s" % m for m in args["define_macros"]],
        extra_ldflags=["-L%s" % d for d in args["library_dirs"]] +
        ["-l%s" % lib for lib in args["libraries"]] + args["extra_link_args"],
        build_directory=build_dir,
        with_cuda=False,
        verbose=verbose,
    )
