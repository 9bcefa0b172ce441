# torch-env.sh: sourced by the PyTorch benchmarks (bench-torch.sh, bench-native.sh) with $top
# (the tree) and $name (the script) set: finds the PyTorch venv ($venv) and the build
# ($build: SHARC_BUILD_DIR, else build/) with its sharc-perf ($perf), or exits saying what to
# make, and points the package at the build.
# SPDX-License-Identifier: BSD-3-Clause
venv=${SHARC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv}
build=${SHARC_BUILD_DIR:-$top/build}
unset SHARC_VENV SHARC_BUILD_DIR # not sharc knobs
perf=$build/perf/sharc-perf
[ -x "$perf" ] || { echo "$name: build sharc first (tools/build.sh)" >&2; exit 2; }
"$venv/bin/python" -c 'import torch, transformers' 2> /dev/null ||
    { echo "$name: no PyTorch venv at $venv (tools/install-deps.sh --torch)" >&2; exit 2; }
export LIBSHARC=$build/.libs/libsharc.so PYTHONPATH=$top/python OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
