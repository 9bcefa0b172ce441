#!/bin/bash
# trainer/scripts/bench_torch.py (PyTorch beside sharc-llama) at the tiny config for 3 steps on
# the CPU, in f32 and in bf16 autocast, on random tokens and on a token file: its last line
# carries every field, a positive rate and an MFU below 1.5, the FLOPs per token sharc-llama
# counts for the same shape (`sharc-llama flops`), the parameters of the same model, and the
# vocabulary of the token file as sharc-llama takes it. The GPU runs (110m, 1b) are
# tests/gpu/run.sh's. SKIP (77) where the PyTorch virtual environment is missing (made by
# tools/install-deps.sh --torch: SHARC_VENV, else ${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

venv=${SHARC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv}
unset SHARC_VENV # not a sharc knob
PY=$venv/bin/python
if ! "$PY" -c 'import torch, transformers, numpy' > /dev/null 2>&1; then
    echo "SKIP: no Python with torch, transformers and numpy at $venv;" \
        "tools/install-deps.sh --torch makes it (or set SHARC_VENV)"
    exit 77
fi
LLAMA="$top_builddir/trainer/sharc-llama"
BENCH="$top_srcdir/trainer/scripts/bench_torch.py"
trainer_work bench-torch

# bench NAME ARGS...: 3 timed steps after 1 of the tiny config, 2 x 32 tokens, one thread
bench() {
    local name=$1; shift
    OMP_NUM_THREADS=1 "$PY" "$BENCH" --config tiny --seq 32 --batch 2 --steps 3 \
        --warmup-steps 1 --threads 1 "$@" > "$work/$name.out" 2>&1 ||
        { cat "$work/$name.out"; return 1; }
    tail -n 1 "$work/$name.out"
}

# check NAME KEY=VALUE...: the last line's fields: all there, sane, and those given equal
check() {
    python3 - "$work/$1.out" "${@:2}" <<'EOF'
import math, sys
line = open(sys.argv[1]).read().splitlines()[-1]
if not line.startswith("bench_torch: tokens_per_s="):
    sys.exit("last line: %r" % line)
kv = dict(f.split("=", 1) for f in line.split()[1:])
keys = ("tokens_per_s step_ms threads torch config device dtype attn compile batch seq vocab "
        "params flops_per_token mfu peak_tflops peak peak_mem_mib adamw").split()
missing = [k for k in keys if k not in kv]
if missing:
    sys.exit("fields missing: %s in %r" % (missing, line))
bad = []
if not float(kv["tokens_per_s"]) > 0 or not float(kv["step_ms"]) > 0:
    bad.append("no rate")
if not 0 < float(kv["mfu"]) < 1.5 or not float(kv["peak_tflops"]) > 0:
    bad.append("MFU %s against %s TFLOP/s" % (kv["mfu"], kv["peak_tflops"]))
for want in sys.argv[2:]:
    k, v = want.split("=", 1)
    try:
        same = math.isclose(float(kv[k]), float(v), rel_tol=5e-4)
    except ValueError:
        same = kv[k] == v
    if not same:
        bad.append("%s=%s, want %s" % (k, kv[k], v))
print(("FAIL: " + "; ".join(bad)) if bad else "fields ok: " + line)
sys.exit(1 if bad else 0)
EOF
}

# what sharc-llama counts for the tiny config at T = 32 (its own vocabulary, 4096)
flops=$("$LLAMA" flops --config tiny --seq 32 |
    sed -n 's/.*training FLOPs per token: \([^ ]*\) .*/\1/p')
params=$(python3 -c 'C, L, H, KV, F, V = 64, 2, 4, 2, 176, 4096; hd = C // H
print(L * (2 * C * hd * H + 2 * C * hd * KV + 3 * C * F + 2 * C) + C + 2 * V * C)')

run_ok "sharc-llama flops --config tiny --seq 32: $flops FLOPs per token" test -n "$flops"
run_ok "f32 on the CPU, random tokens" bench f32
run_ok_match "f32: the fields, sharc-llama's FLOPs per token and parameters" "fields ok" \
    check f32 flops_per_token="$flops" params="$params" vocab=4096 device=cpu dtype=f32 \
    config=tiny batch=2 seq=32 compile=0
run_ok "bf16 autocast on the CPU, a token file" bench bf16 --dtype bf16 \
    --data "$work/data/train.bin"
run_ok_match "bf16: the fields, the token file's vocabulary" "fields ok" check bf16 dtype=bf16 \
    vocab=256
# explicit dims (2 heads of 32 on 1 kv head): the count follows them
flops_dims=$(python3 -c 'C, L, H, KV, hd, F, V, T = 64, 2, 2, 1, 32, 176, 4096, 32
n = L * (2 * C * hd * H + 2 * C * hd * KV + 3 * C * F + 2 * C) + C + V * C
print(6 * n + 12 * L * H * hd * T)')
run_ok "explicit dims: 2 heads on 1 kv head" bench dims --heads 2 --kv-heads 1
run_ok_match "explicit dims: the fields, the FLOPs of those dims" "fields ok" check dims \
    config=custom flops_per_token="$flops_dims"
finish
