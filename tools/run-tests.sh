#!/bin/bash
# run-tests.sh: the whole test suite. Installs dependencies (with the PyTorch venv of the
# torch tests: tools/install-deps.sh --torch), builds with -Werror in build/, and runs
# `make check` (no GPU and no RDMA device needed; GPU tests report SKIP without one).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${SHARC_BUILD_DIR:-$top/build}
if ! bash "$top/tools/install-deps.sh" --torch; then
    echo "run-tests: the PyTorch venv could not be made (is PyPI reachable?): the torch tests" \
        "will be skipped" >&2
fi
bash "$top/tools/build.sh" "$builddir" --enable-werror ${SHARC_CONFIGURE_FLAGS:-}
# the scripts' own settings are no knobs of the library's: keep them from the tests
unset SHARC_BUILD_DIR SHARC_CONFIGURE_FLAGS
cd "$builddir"
make -j"$(nproc)" check
