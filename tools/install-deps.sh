#!/bin/bash
# install-deps.sh: installs the Debian 12 packages sharc's build, tests and benchmarks need.
# Idempotent, and quick when everything is there (no apt-get update then). Run as root, or
# with sudo available. The CUDA toolkit and NCCL are not Debian packages: sharc finds them in
# /usr/local/cuda (or --with-cuda=DIR) and builds without them otherwise.
set -euo pipefail

packages=(
    # build
    gcc make autoconf automake libtool libtool-bin pkg-config
    # transports, bootstrap, topology
    libucx-dev ucx-utils libibverbs-dev ibverbs-providers rdma-core
    libopenmpi-dev openmpi-bin libhwloc-dev libxml2-dev libjson-c-dev
    # shard checkpoints (checksums); GEMM compute in benchmarks and the trainer
    libxxhash-dev libopenblas-dev
    # tests: ss (free ports), ip and tc (namespace nodes: tools/nodes.sh), nsenter and unshare
    # (util-linux); python3 builds topology fixtures; clang + libFuzzer fuzz the parsers
    # (tools/fuzz.sh)
    iproute2 util-linux procps python3 clang libclang-rt-dev
    # a real Slurm on the namespace nodes (tools/nodes.sh up --slurm): slurmctld, slurmd, srun
    slurm-wlm munge
    # verbs for real: a QEMU guest with soft-RoCE (tools/rdma-vm.sh, tests/rdma/)
    qemu-system-x86 busybox-static cpio kmod
    # trainer: tokenizer training and the corpus (trainer/prepare_data.py), scaling plots
    python3-sentencepiece bible-kjv bible-kjv-text gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages are installed"
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null || { echo "install-deps: run as root (or install sudo)" >&2; exit 1; }
    sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
