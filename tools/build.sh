#!/bin/bash
# build.sh [BUILD_DIR] [configure options...]: installs the dependencies, generates the
# build system and builds sharc out of tree (default: build/). Re-running reuses the tree.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-$top/build}
[ $# -gt 0 ] && shift
bash "$top/tools/install-deps.sh"
[ -x "$top/configure" ] || "$top/autogen.sh"
mkdir -p "$builddir"
cd "$builddir"
if [ ! -f Makefile ] || [ $# -gt 0 ]; then
    "$top/configure" "$@"
fi
make -j"$(nproc)"
