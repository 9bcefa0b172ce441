#!/bin/bash
# sharc-llama --device cuda end to end, on the GPU(s) of this machine:
#  - the model against transformers on the committed fixtures (GQA; Llama 3 rope scaling):
#    f32 to the CPU trainer's tolerances, bf16 to its own (tests/trainer/test_llama_hf.c);
#    and against the CPU model on random checkpoints with head sizes 64 and 128, where bf16
#    runs cuDNN's attention (a build with cuDNN) and the tiled kernel (test_llama_hf
#    --against-cpu);
#  - a whole training run in f32 on the GPU equal to the CPU trainer's: the step losses of 20
#    steps within 1e-4 relative (plain; gradient accumulation with recomputation; bf16
#    gathers and reductions against the same on the CPU, where the CPU casts too);
#  - bf16 against f32 on the GPU over 200 steps of the tiny config on a learnable sequence
#    (a first-order Markov chain over 128 tokens, 90% deterministic): both must learn (the
#    last 20 steps' mean loss below half the first 20's), and every 20-step window's mean
#    bf16 loss within 5% (+0.02) of f32's. The band was set before the first GPU run; the
#    output prints the largest difference seen;
#  - checkpoints: a GPU run stopped and resumed equals the uninterrupted one, and its
#    Hugging Face export evaluates the same on the CPU;
#  - --profile (CUDA events): the same losses, every op site with its calls, the JSON, the
#    op track in --trace (tests/trainer/check_profile.py);
#  - with two or more GPUs, 2 ranks (one GPU each, NCCL) equal 1 rank with the same batch.
# SKIP (77) without a GPU or a build without CUDA.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

LLAMA="$top_builddir/trainer/sharc-llama"
FIXTURES="$top_srcdir/tests/trainer/hf_tiny $top_srcdir/tests/trainer/hf_tiny_llama3"
if ! nvidia-smi -L > /dev/null 2>&1; then
    echo "SKIP: no GPU (nvidia-smi finds none)"
    exit 77
fi
probe=$("$LLAMA" train --device cuda --config tiny --steps 0 --train /dev/null 2>&1)
if echo "$probe" | grep -q "built without CUDA"; then
    echo "SKIP: sharc-llama was built without CUDA"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-trainer-cuda.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A token file of N ids below VOCAB: each next id is a fixed permutation of the last one with
# probability 0.9, else uniform (entropy 0.80 nats at 128 tokens: a model learns it).
make_markov() {
    python3 - "$@" <<'EOF'
import random, struct, sys
path, n, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(7)
perm = list(range(vocab))
random.Random(11).shuffle(perm)
ids, t = [], 0
for _ in range(n):
    t = perm[t] if r.random() < 0.9 else r.randrange(vocab)
    ids.append(t)
with open(path, "wb") as f:
    f.write(b"SHARCTOK" + struct.pack("<IIQII", 1, 2, n, vocab, 0))
    f.write(struct.pack("<%dH" % n, *ids))
EOF
}
mkdir -p "$work/data" "$work/markov"
make_tokens "$work/data/train.bin" 20000 512 512
make_tokens "$work/data/val.bin" 3000 512 512
make_markov "$work/markov/train.bin" 200000 128
make_markov "$work/markov/val.bin" 8000 128

# the model against transformers
# shellcheck disable=SC2086
run_ok_match "GPU f32 matches LlamaForCausalLM (GQA; Llama 3 rope scaling)" "gradients" \
    "$BIN/trainer/test_llama_hf" --device cuda --compute-dtype f32 $FIXTURES
echo "$last_out" | grep -E "rel err"
# shellcheck disable=SC2086
run_ok_match "GPU bf16 matches LlamaForCausalLM within the bf16 tolerances" "gradients" \
    "$BIN/trainer/test_llama_hf" --device cuda --compute-dtype bf16 $FIXTURES
echo "$last_out" | grep -E "rel err"

# head sizes 64 and 128 (the fixtures' is 8), where bf16 takes cuDNN's attention (a build with
# it: config.h's HAVE_CUDNN) or the tiled kernel: against the CPU model in f32 on random
# checkpoints (tests/lib.sh make_hf_llama), in f32 and with each bf16 attention
make_hf_llama "$work/hd64" 256 4 2 64 2 512 512
make_hf_llama "$work/hd128" 256 2 1 128 2 512 512
attentions="auto flash"
grep -q "define HAVE_CUDNN 1" "$top_builddir/config.h" 2> /dev/null && attentions="$attentions cudnn"
for hd in 64 128; do
    for run in f32-gemm $(for a in $attentions; do echo "bf16-$a"; done); do
        dt=${run%-*} attn=${run#*-}
        run_ok_match "GPU $dt, --attention $attn, head size $hd: the CPU model's loss, logits and gradients" \
            "gradients" "$BIN/trainer/test_llama_hf" --device cuda --compute-dtype "$dt" \
            --attention "$attn" --against-cpu "$work/hd$hd"
        echo "$last_out" | grep -E "rel err"
    done
done

# train NAME RANKS ARGS...: tiny model, f32 unless told, JSONL log in $work/NAME.jsonl
train() {
    local name=$1 n=$2; shift 2
    "$LAUNCH" --mode env -n "$n" --timeout 300 -- "$LLAMA" train --config tiny --seq 32 \
        --steps 20 --warmup 5 --threads 1 --val-every 0 --print-every 10 --peak-tflops 1 \
        --log "$work/$name.jsonl" "$@"
}
one() { local name=$1; shift; train "$name" 1 --data "$work/data" "$@"; }

run_ok "CPU, 20 steps" one cpu --batch 4
run_ok "GPU f32, 20 steps" one gpu --batch 4 --device cuda --compute-dtype f32 --val-every 20 \
    --export "$work/hf"
run_ok "GPU f32: the CPU's losses (1e-4)" losses_match "$work/cpu.jsonl" "$work/gpu.jsonl" 1 1e-4
run_ok "CPU, accumulation 2 and recomputation" one cpu_acc --batch 2 --accum 2 --recompute
run_ok "GPU f32, accumulation 2 and recomputation" one gpu_acc --batch 2 --accum 2 --recompute \
    --device cuda --compute-dtype f32
run_ok "GPU f32 accumulation: the CPU's losses (1e-4)" losses_match "$work/cpu_acc.jsonl" \
    "$work/gpu_acc.jsonl" 1 1e-4
run_ok "CPU, bf16 gathers and reductions" one cpu_bf --batch 4 --param-dtype bf16 \
    --reduce-dtype bf16
run_ok "GPU f32 compute, bf16 gathers and reductions" one gpu_bf --batch 4 --device cuda \
    --compute-dtype f32 --param-dtype bf16 --reduce-dtype bf16
run_ok "GPU bf16 gathers and reductions: the CPU's losses (1e-3: bf16 sums)" losses_match \
    "$work/cpu_bf.jsonl" "$work/gpu_bf.jsonl" 1 1e-3

# bf16 against f32 over 200 steps, on the Markov data
band() {
    local dt=$1
    train "band_$dt" 1 --data "$work/markov" --batch 8 --seq 64 --steps 200 --warmup 10 \
        --lr 3e-3 --min-lr 3e-4 --print-every 50 --device cuda --compute-dtype "$dt"
}
run_ok "GPU f32, 200 steps of the Markov chain" band f32
run_ok "GPU bf16, 200 steps of the Markov chain" band bf16
run_ok_match "bf16 within 5% (+0.02) of f32 in every 20-step window; both learn" "windows" \
    python3 - "$work/band_f32.jsonl" "$work/band_bf16.jsonl" <<'EOF'
import json, sys
def losses(path):
    return [e["loss"] for e in map(json.loads, open(path)) if e["event"] == "step"]
f, b = losses(sys.argv[1]), losses(sys.argv[2])
if len(f) != 200 or len(b) != 200:
    sys.exit("expected 200 steps, got %d and %d" % (len(f), len(b)))
mf = [sum(f[i:i + 20]) / 20 for i in range(0, 200, 20)]
mb = [sum(b[i:i + 20]) / 20 for i in range(0, 200, 20)]
worst = max(abs(x - y) / (0.05 * y + 0.02) for x, y in zip(mb, mf))
print("windows (f32 / bf16):", " ".join("%.3f/%.3f" % p for p in zip(mf, mb)))
print("largest difference: %.1f%% of the band" % (100 * worst))
ok = worst <= 1.0 and mf[-1] < 0.5 * mf[0] and mb[-1] < 0.5 * mb[0]
sys.exit(0 if ok else 1)
EOF
echo "$last_out"

# checkpoints on the GPU: stop at 10, resume, equal; the export evaluates the same on the CPU
run_ok "GPU bf16, 20 steps" one ref_bf --batch 4 --device cuda
run_ok "GPU bf16, stopped at step 10" one stop_bf --batch 4 --device cuda --stop-at 10 \
    --save "$work/ck"
run_ok "GPU bf16, resumed" one resumed_bf --batch 4 --device cuda --resume "$work/ck"
run_ok "GPU resumed steps 11-20 equal the uninterrupted run" losses_match "$work/ref_bf.jsonl" \
    "$work/resumed_bf.jsonl" 11

# --profile on the GPU: the CUDA events' path, the losses of the run without it
profiled() {
    one prof_bf --batch 4 --device cuda --profile-json "$work/prof_bf.json" \
        --trace "$work/prof_bf.trace.json" > "$work/prof_bf.out" 2>&1
}
run_ok "GPU bf16, --profile with --trace" profiled
run_ok "GPU bf16 --profile: the losses without it" losses_match "$work/ref_bf.jsonl" \
    "$work/prof_bf.jsonl"
run_ok_match "GPU --profile: every site, its calls, the JSON, the op track" "profile: 33 sites" \
    python3 "$top_srcdir/tests/trainer/check_profile.py" "$work/prof_bf.out" \
    "$work/prof_bf.json" --layers 2 --trace "$work/prof_bf.trace.json" --device-times
echo "$last_out"
run_ok "GPU --profile: the engine's trace stays valid" python3 \
    "$top_srcdir/tests/shard/check_trace.py" "$work/prof_bf.trace.json" --ranks 1
run_ok "the GPU's f32 export, evaluated on the CPU" "$LAUNCH" --mode env -n 1 -- "$LLAMA" train \
    --hf "$work/hf" --data "$work/data" --seq 32 --batch 4 --steps 1 --lr 0 --min-lr 0 \
    --val-every 1 --threads 1 --log "$work/reimport.jsonl"
run_ok_match "the export's validation loss on the CPU is the GPU's (1e-4)" "val" \
    python3 - "$work/gpu.jsonl" "$work/reimport.jsonl" <<'EOF'
import json, sys
def val(path):
    return [e["val_loss"] for e in map(json.loads, open(path)) if e["event"] == "val"][0]
a, b = val(sys.argv[1]), val(sys.argv[2])
print("val loss: GPU %.6f, its export on the CPU %.6f" % (a, b))
sys.exit(0 if abs(a - b) <= 1e-4 * abs(a) else 1)
EOF

# several GPUs: one rank each through NCCL, the same global batch as one rank
ngpu=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -ge 2 ]; then
    run_ok "GPU f32, 2 ranks x batch 2" train gpu2 2 --data "$work/data" --batch 2 \
        --device cuda --compute-dtype f32
    run_ok "2 GPUs: the 1-GPU losses (1e-4)" losses_match "$work/gpu.jsonl" "$work/gpu2.jsonl" 1 \
        1e-4
else
    echo "(one GPU: the multi-GPU comparison needs two)"
fi
finish
