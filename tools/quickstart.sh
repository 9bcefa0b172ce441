#!/bin/bash
# quickstart.sh: installs dependencies, builds sharc, and runs the main job on this machine
# with defaults: prepares the corpus (the King James Bible from Debian, a 4096-token BPE
# tokenizer trained with sentencepiece; trainer/scripts/prepare_data.py) and trains the tiny Llama
# with sharc-llama at 1, 2 and 4 local ranks (weak scaling: the same per-rank batch), printing
# the loss, tokens/s and the scaling efficiency, and writing build/scale/scale.csv and
# build/scale/scale.png.
#
#   tools/quickstart.sh [RANKS (default 1,2,4)] [STEPS per run (default 200)]
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/tools/build.sh" "$top/build"
python=${PYTHON:-/usr/bin/python3} # Debian's, which has python3-sentencepiece
"$python" "$top/trainer/scripts/prepare_data.py" --out "$top/build/data/kjv"
bash "$top/trainer/scripts/scale.sh" --ranks "${1:-1,2,4}" --out "$top/build/scale" \
    --bin "$top/build/trainer/sharc-llama" -- --config tiny --data "$top/build/data/kjv" \
    --batch 8 --seq 64 --steps "${2:-200}" --warmup 20 --lr 3e-3 --min-lr 3e-4 \
    --print-every 25 --val-every 100
