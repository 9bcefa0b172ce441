#!/bin/bash
# install-deps.sh: installs the Debian 12 packages sharc's build, tests and benchmarks need.
# Idempotent, and quick when everything is there (no apt-get update then). Run as root, or
# with sudo available. The CUDA toolkit and NCCL are not Debian packages: sharc finds them in
# /usr/local/cuda (or --with-cuda=DIR) and builds without them otherwise.
#
#   install-deps.sh [--torch] [--cudnn]
#     --torch   also create (or reuse) the Python virtual environment of the PyTorch tests and
#               benchmarks (python/, tests/torch/): PyPI's torch, transformers, numpy and
#               expecttest (for PyTorch's own test suite) in
#               $SHARC_VENV, by default ${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv, made with
#               the first python3 on PATH ($SHARC_VENV_PYTHON to choose another); and --cudnn
#     --cudnn   cuDNN 9 (PyPI's nvidia-cudnn-cu13: headers and libraries) and the header-only
#               cudnn-frontend (nvidia-cudnn-frontend, without its Python dependencies: only
#               its include/ folder is used) in the same venv, where configure finds them for
#               sharc-llama's --attention cudnn
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail

with_torch=0
with_cudnn=0
for arg in "$@"; do
    case "$arg" in
        --torch) with_torch=1; with_cudnn=1 ;;
        --cudnn) with_cudnn=1 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "install-deps: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
    esac
done

packages=(
    # build
    gcc make autoconf automake libtool libtool-bin pkg-config
    # transports, bootstrap, topology
    libucx-dev ucx-utils libibverbs-dev ibverbs-providers rdma-core
    libopenmpi-dev openmpi-bin libhwloc-dev libxml2-dev libjson-c-dev
    # shard checkpoints (checksums); GEMM compute in benchmarks and the trainer
    libxxhash-dev libopenblas-dev
    # metrics: served over HTTP (libmicrohttpd); tests check them with promtool, scrape them
    # with a real Prometheus and read the textfile mode with node_exporter
    libmicrohttpd-dev prometheus prometheus-node-exporter
    # tests: ss (free ports), ip and tc (namespace nodes: tools/nodes.sh), nsenter and unshare
    # (util-linux); python3 builds topology fixtures; clang + libFuzzer fuzz the parsers
    # (tools/fuzz.sh)
    iproute2 util-linux procps python3 clang libclang-rt-dev
    # a real Slurm on the namespace nodes (tools/nodes.sh up --slurm): slurmctld, slurmd, srun
    slurm-wlm munge
    # verbs for real: a QEMU guest with soft-RoCE (tools/rdma-vm.sh, tests/transport/rdma/)
    qemu-system-x86 busybox-static cpio kmod
    # trainer: tokenizer training and the corpus (trainer/scripts/prepare_data.py), scaling plots
    python3-sentencepiece bible-kjv bible-kjv-text gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null || { echo "install-deps: run as root (or install sudo)" >&2; exit 1; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
updated=0
apt_install() {
    [ $updated = 1 ] || "${sudo[@]}" apt-get update -qq
    updated=1
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@"
}

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages are installed"
else
    echo "install-deps: installing ${missing[*]}"
    apt_install "${missing[@]}"
fi

[ $with_cudnn = 1 ] || exit 0

# The venv: the packages are PyPI's (Debian has no torch, cuDNN or its frontend); pip runs only
# when one of them is missing, so a second run is quick. tests/torch/env.sh and configure find
# the venv the same way.
venv=${SHARC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv}
vpy=$venv/bin/python
make_venv() {
    local base_py=${SHARC_VENV_PYTHON:-$(command -v python3)}
    [ -x "$vpy" ] && "$vpy" -m pip --version > /dev/null 2>&1 && return 0
    if ! "$base_py" -m venv --help > /dev/null 2>&1; then
        apt_install python3-venv # Debian's python3 has no venv module without it
    fi
    mkdir -p "$(dirname "$venv")"
    local clear=()
    [ ! -f "$venv/pyvenv.cfg" ] || clear=(--clear) # an interrupted earlier install
    "$base_py" -m venv "${clear[@]}" "$venv"
    "$vpy" -m pip install -q --upgrade pip
}

if [ $with_torch = 1 ]; then
    # (expecttest: PyTorch's own test suite imports it, tests/torch/torch_suite.sh)
    torch_pkgs=(torch transformers numpy setuptools expecttest)
    if [ -x "$vpy" ] && "$vpy" -c 'import torch, transformers, numpy, setuptools, expecttest' \
        2> /dev/null; then
        echo "install-deps: $venv has torch $("$vpy" -c 'import torch; print(torch.__version__)')"
    else
        make_venv
        echo "install-deps: installing ${torch_pkgs[*]} from PyPI into $venv (about 3 GB, once)"
        "$vpy" -m pip install -q "${torch_pkgs[@]}"
        "$vpy" -c 'import torch, transformers, numpy; print("install-deps: torch", torch.__version__)'
    fi
fi

# cuDNN for CUDA 13 (torch's wheel brings it, at the version torch wants: kept), and the
# frontend's headers at the release sharc-llama's cudnn_sdpa.cc is built and checked with
frontend=1.32.0
have_cudnn() {
    "$vpy" - "$frontend" 2> /dev/null <<'EOF'
import importlib.metadata as m, sys
m.version("nvidia-cudnn-cu13")
sys.exit(m.version("nvidia-cudnn-frontend") != sys.argv[1])
EOF
}
if [ -x "$vpy" ] && have_cudnn; then
    echo "install-deps: $venv has cuDNN and cudnn-frontend $frontend"
    exit 0
fi
make_venv
echo "install-deps: installing nvidia-cudnn-cu13 and nvidia-cudnn-frontend $frontend from PyPI" \
    "into $venv (about 1 GB without torch, once)"
"$vpy" -c 'import importlib.metadata as m; m.version("nvidia-cudnn-cu13")' 2> /dev/null ||
    "$vpy" -m pip install -q nvidia-cudnn-cu13
"$vpy" -m pip install -q --no-deps "nvidia-cudnn-frontend==$frontend"
have_cudnn || { echo "install-deps: cuDNN or its frontend did not install" >&2; exit 1; }
