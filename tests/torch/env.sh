# env.sh: sourced by the torch_*.sh tests after lib.sh. Finds the PyTorch virtual environment
# the way tools/install-deps.sh --torch makes it (SHARC_VENV, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv) and points the sharc package (python/) at this
# build's libsharc. Exits 77 (SKIP) without the venv or a shared library, and in sanitizer
# builds: a Python process cannot load an ASan-built libsharc unless the sanitizer runtime is
# preloaded into the interpreter, and then the runtime reports the interpreter's and torch's
# own leaks and allocator mismatches; the C tests cover libsharc under the sanitizers.
# SPDX-License-Identifier: BSD-3-Clause
venv=${SHARC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv}
unset SHARC_VENV # not a sharc knob: sharc would warn about it in every rank
PY=$venv/bin/python
TORCHRUN=$venv/bin/torchrun
if [ -n "${SHARCTEST_SANITIZE:-}" ]; then
    echo "SKIP: the PyTorch tests do not run in the sanitizer build (see tests/torch/env.sh);" \
        "the normal build runs them"
    exit 77
fi
if ! "$PY" -c 'import torch, numpy, transformers' > /dev/null 2>&1; then
    echo "SKIP: no Python with torch, transformers and numpy at $venv;" \
        "tools/install-deps.sh --torch makes it (or set SHARC_VENV)"
    exit 77
fi
LIBSHARC=$(cd "$top_builddir" && pwd)/.libs/libsharc.so
if [ ! -f "$LIBSHARC" ]; then
    echo "SKIP: no shared libsharc was built (the Python package loads libsharc.so)"
    exit 77
fi
PYTHONPATH=$(cd "$top_srcdir" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}
TT=$top_srcdir/tests/torch
# one compute thread per rank: the ranks share this machine's cores
export LIBSHARC PYTHONPATH OMP_NUM_THREADS=1
# The C++ backend (python/csrc/) built against the venv's torch and this libsharc, once for
# every torch test (tests/torch/native.py: rebuilt only when a source changed; concurrent
# builds wait for each other). Its failure to build fails the test.
native_dir=$(cd "$top_builddir" && pwd)/python-native
if ! native_log=$(MAX_JOBS=$(nproc) "$PY" "$TT/native.py" "$top_srcdir" "$top_builddir" \
    "$native_dir" 2>&1); then
    echo "$native_log" | tail -40
    echo "FAIL: the C++ torch backend does not build (tests/torch/native.py)"
    exit 1
fi
TORCH_SHARC_NATIVE=$(echo "$native_log" | tail -1)
export TORCH_SHARC_NATIVE
