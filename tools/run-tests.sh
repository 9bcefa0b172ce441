#!/bin/bash
# run-tests.sh: the whole test suite. Installs dependencies, builds with -Werror in build/,
# and runs `make check` (no GPU and no RDMA device needed; GPU tests report SKIP without one).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${SHARC_BUILD_DIR:-$top/build}
bash "$top/tools/build.sh" "$builddir" --enable-werror ${SHARC_CONFIGURE_FLAGS:-}
cd "$builddir"
make -j"$(nproc)" check
