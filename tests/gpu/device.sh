#!/bin/bash
# tests/gpu/device.sh [--budget SECONDS] [--parts LIST] [--dry-run] BUNDLE OUT_DIR: sharc's
# GPU run (tests/gpu/run.sh) on a machine that has CUDA's driver and PyTorch but none of
# sharc's build: BUNDLE is tools/bundle.sh --gpu-run's archive (BUILD.tar.xz, made where
# sharc builds), unpacked into a temporary folder, its libraries first on the loader's path;
# the torch tests take the machine's python3 as their environment where it has torch,
# transformers and numpy. The run ends within the budget (default 480 s; the unpacking and
# the archive of the logs come on top: seconds). OUT_DIR keeps a handful of files: report.md,
# summary.txt and logs.tar.gz (every part's log and JSON); the summary table is printed last.
# BUNDLE may also be a build folder (a dry run here: tests/gpu/device.sh --dry-run build /tmp/x).
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
opts=() budget=480
while [ $# -gt 0 ]; do
    case $1 in
        --budget) budget=$2; shift 2 ;;
        --parts) opts+=(--parts "$2"); shift 2 ;;
        --dry-run) opts+=(--dry-run); shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        -*) echo "device.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
if [ $# -ne 2 ]; then
    sed -n '2,10p' "$0" >&2
    exit 2
fi
bundle=$1
mkdir -p "$2" || exit 2
dest=$(cd "$2" && pwd)
t0=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-gpu.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
if [ -d "$bundle" ]; then
    build=$(cd "$bundle" && pwd)
else
    tar -C "$work" -xJf "$bundle" || { echo "device.sh: cannot unpack $bundle" >&2; exit 2; }
    . "$work/sharc-bundle/env.sh"
    build=$work/sharc-bundle/build
fi
# the torch tests' environment (tests/torch/env.sh reads SHARC_VENV/bin/python and torchrun)
if [ -z "${SHARC_VENV:-}" ] && python3 -c 'import torch, transformers, numpy' 2> /dev/null; then
    mkdir -p "$work/venv/bin"
    ln -s "$(command -v python3)" "$work/venv/bin/python"
    ln -s "$(command -v torchrun || echo /nonexistent)" "$work/venv/bin/torchrun"
    export SHARC_VENV=$work/venv
fi
# the trainer's runs: 15 steps each, the medians over the last 13
export SHARC_GPU_LLAMA_STEPS=${SHARC_GPU_LLAMA_STEPS:-15}
budget=$((budget - (SECONDS - t0)))
bash "$top/tests/gpu/run.sh" --budget "$budget" "${opts[@]}" "$build" "$work/out" \
    > "$work/run.log" 2>&1
st=$?
cp "$work/run.log" "$work/out/" 2> /dev/null
cp "$work/out/report.md" "$work/out/summary.txt" "$dest/" 2> /dev/null
tar -C "$work/out" -czf "$dest/logs.tar.gz" --exclude='data-*' . 2> /dev/null
# the report, then the summary last (the run's own output where it made none: a skip)
if [ -f "$dest/summary.txt" ]; then
    cat "$dest/report.md" "$dest/summary.txt"
else
    cat "$work/run.log"
fi
exit $st
