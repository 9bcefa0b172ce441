#!/bin/bash
# One pip install is the whole install: in a fresh virtual environment (reusing the PyTorch
# venv's packages, pip and setuptools through a .pth file: no download), `pip install python/`
# builds libsharc from this tree with its own build system (configure with the static CUDA
# runtime; NCCL opened at run time) into the package, and the C++ torch backend against that
# torch; then, with no LIBSHARC, PYTHONPATH or TORCH_SHARC_NATIVE set, the package loads its own
# libsharc (which needs neither libcudart nor libnccl), its metadata carries the licence,
# "sharc" is the C++ backend, and torchrun trains the FSDP2 example. libsharc's build directory
# is kept in the build tree (later runs only relink what changed).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m venv --without-pip "$tmp/venv" # pip and setuptools too come from the PyTorch venv
vpy=$tmp/venv/bin/python
site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$PY" -c 'import site; print("\n".join(site.getsitepackages()))' > "$site/torch_venv.pth"
clean=(env -u LIBSHARC -u PYTHONPATH -u TORCH_SHARC_NATIVE)

run_ok "pip install python/ (libsharc and the C++ backend built)" \
    "${clean[@]}" SHARC_BUILD_DIR="$(cd "$top_builddir" && pwd)/python-wheel" MAX_JOBS=2 \
    timeout 1200 "$vpy" -m pip install -q --no-build-isolation --no-index "$top_srcdir/python"
run_ok_match "the installed package loads its own libsharc and the C++ backend" \
    "$site/sharc/_libs/libsharc.so.0 native" \
    "${clean[@]}" "$vpy" -c 'import sharc, sharc.torch
print(sharc.library_path, sharc.torch.implementation)'
run_ok_match "the package's metadata names its licence" "License-Expression: BSD-3-Clause" \
    cat "$site"/sharc-*.dist-info/METADATA
run_ok_match "the package carries the licence's text" "BSD 3-Clause License.*the sharc authors" \
    cat "$site"/sharc-*.dist-info/licenses/LICENSE
lib=$site/sharc/_libs/libsharc.so.0
run_ok_match "the packaged libsharc needs neither libcudart nor libnccl" "needed: 0" \
    sh -c "test -f '$lib' && echo needed: \$(readelf -d '$lib' | grep -cE 'NEEDED.*(cudart|nccl)')"
run_ok_match "init_process_group(\"sharc\") with no import of sharc (torch's entry point)" \
    "world 1 sharc native" \
    "${clean[@]}" RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" \
    "$vpy" -c 'import sys, torch, torch.distributed as dist
dist.init_process_group("sharc")
t = torch.ones(3); dist.all_reduce(t)
print("world", dist.get_world_size(), dist.get_backend(), sys.modules["sharc.torch"].implementation)
dist.destroy_process_group()'
run_ok_match "torchrun of the FSDP2 example with nothing set" \
    "sharc \(native\).*step +3 \| loss .*done: 3 steps" \
    "${clean[@]}" timeout 180 "$vpy" -m torch.distributed.run --nproc-per-node 2 \
    --master-port "$(free_port)" "$top_srcdir/python/examples/fsdp_llama.py" --steps 3 \
    --layers 2 --dim 64 --seq 32
finish
