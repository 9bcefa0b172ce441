#!/bin/bash
# sharc-llama end to end: sharding invariance (1 rank against 2 and 4, flat and HSDP, with and
# without gradient accumulation, the head's logits in chunks of 7 rows, adaptive prefetch with
# the timeline trace: the same losses for 20 steps in f32), resume (stopping at step k and resuming equals the uninterrupted run,
# on the same and on another number of ranks), export and re-import, and bad input through
# the command line (clear errors, no crash; --device cuda where there is no GPU among them).
# The GPU's own: tests/trainer_cuda.sh.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

LLAMA="$top_builddir/trainer/sharc-llama"
FIXTURE="$top_srcdir/tests/trainer/hf_tiny"
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-trainer.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/data"
make_tokens "$work/data/train.bin" 20000 512 512
make_tokens "$work/data/val.bin" 3000 512 512

# train NAME RANKS ARGS...: tiny model, 20 steps, f32, JSONL log in $work/NAME.jsonl
train() {
    local name=$1 n=$2; shift 2
    "$LAUNCH" --mode env -n "$n" -- "$LLAMA" train --config tiny --data "$work/data" --seq 32 \
        --steps 20 --warmup 5 --threads 1 --val-every 0 --print-every 5 \
        --log "$work/$name.jsonl" "$@"
}

run_ok "1 rank, batch 4" train ref 1 --batch 4
for spec in "2 --batch 2" "4 --batch 1" "4 --batch 1 --hsdp 2" "2 --batch 1 --accum 2" \
        "4 --batch 1 --hsdp 2 --recompute" "1 --batch 1 --accum 4" "1 --batch 4 --head-rows 7"; do
    name=$(echo "$spec" | tr -d ' -')
    read -r n args <<< "$spec"
    # shellcheck disable=SC2086
    if train "$name" "$n" $args > "$work/$name.out" 2>&1; then
        run_ok "$n ranks, $args: the 1-rank losses" losses_match "$work/ref.jsonl" \
            "$work/$name.jsonl"
    else
        run_ok "$n ranks, $args" cat "$work/$name.out" false
    fi
done

# the shard engine's timeline (--trace) and adaptive prefetch (--prefetch auto): the losses
# are the reference's, and the trace is every rank's, valid, with waits adding up
if train traced 2 --batch 2 --prefetch auto --trace "$work/trace.json" > "$work/traced.out" 2>&1
then
    run_ok "2 ranks, --prefetch auto --trace: the 1-rank losses" losses_match "$work/ref.jsonl" \
        "$work/traced.jsonl"
    run_ok "2 ranks, --trace: the trace holds both ranks' steps" python3 \
        "$top_srcdir/tests/shard/check_trace.py" "$work/trace.json" --ranks 2 --auto
else
    run_ok "2 ranks, --prefetch auto --trace" cat "$work/traced.out" false
fi

# resume: stop at 10 with a checkpoint, go on to 20 (2 ranks; and 2 ranks' checkpoint on 1)
run_ok "2 ranks, stopped at step 10" train stop 2 --batch 2 --stop-at 10 --save "$work/ck"
run_ok "2 ranks, resumed" train resumed 2 --batch 2 --resume "$work/ck"
run_ok "resumed steps 11-20 equal the uninterrupted run" losses_match "$work/ref.jsonl" \
    "$work/resumed.jsonl" 11
run_ok "1 rank, resumed from the 2-rank checkpoint" train resumed1 1 --batch 4 \
    --resume "$work/ck"
run_ok "2-rank checkpoint on 1 rank: steps 11-20 equal" losses_match "$work/ref.jsonl" \
    "$work/resumed1.jsonl" 11

# export to Hugging Face safetensors and train on from there: the first loss is the exported
# model's (the 20-step model of the reference run evaluated on step 21's batch would differ,
# so compare the reference's validation loss instead)
run_ok "2 ranks export a Hugging Face checkpoint" train exp 2 --batch 2 --export "$work/hf" \
    --val-every 20
run_ok_match "the export re-imports (1 rank, same validation loss)" \
    "$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["event"] == "val": print("val loss %.4f" % e["val_loss"])' "$work/exp.jsonl")" \
    "$LAUNCH" --mode env -n 1 -- "$LLAMA" train --hf "$work/hf" --data "$work/data" --seq 32 \
    --batch 4 --steps 1 --lr 0 --min-lr 0 --val-every 1 --threads 1

# a sharded Hugging Face checkpoint (model.safetensors.index.json and two files) loads the
# same weights as the single file: the same validation loss
python3 - "$FIXTURE/model.safetensors" "$work/sharded" <<'EOF'
import json, os, shutil, struct, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
shutil.copy(os.path.join(os.path.dirname(src), "config.json"), out)
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header.pop("__metadata__", None)
names = sorted(header)
index = {"metadata": {}, "weight_map": {}}
for part, group in enumerate((names[::2], names[1::2])):
    fname = "model-%05d-of-00002.safetensors" % (part + 1)
    hdr, blobs, off = {}, [], 0
    for name in group:
        b, e = header[name]["data_offsets"]
        blobs.append(raw[8 + n + b:8 + n + e])
        hdr[name] = dict(header[name], data_offsets=[off, off + e - b])
        off += e - b
        index["weight_map"][name] = fname
    text = json.dumps(hdr).encode()
    with open(os.path.join(out, fname), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
json.dump(index, open(os.path.join(out, "model.safetensors.index.json"), "w"))
EOF
mkdir -p "$work/data128"
make_tokens "$work/data128/train.bin" 20000 128 128
make_tokens "$work/data128/val.bin" 3000 128 128
val_loss() {
    "$LAUNCH" --mode env -n 2 -- "$LLAMA" train --hf "$1" --data "$work/data128" --seq 16 \
        --batch 2 --steps 1 --lr 0 --min-lr 0 --val-every 1 --threads 1 2>&1 |
        grep -o 'val loss [0-9.]*' | head -1
}
single=$(val_loss "$FIXTURE")
run_ok_match "a sharded checkpoint loads on 2 ranks as the single file ($single)" \
    "${single:-no loss}" val_loss "$work/sharded"

# bad input: a clear error within seconds, never a crash
: > "$work/empty.bin"
make_tokens "$work/big.bin" 1000 600 0
cp -r "$FIXTURE" "$work/trunc" && truncate -s 5000 "$work/trunc/model.safetensors"
cp -r "$FIXTURE" "$work/noweights" && rm "$work/noweights/model.safetensors"
cp -r "$FIXTURE" "$work/shape" &&
    sed -i 's/"intermediate_size": *96/"intermediate_size": 80/' "$work/shape/config.json"
cp -r "$FIXTURE" "$work/heads" &&
    sed -i 's/"num_key_value_heads": *2/"num_key_value_heads": 3/' "$work/heads/config.json"
cp -r "$FIXTURE" "$work/notjson" && echo '{"hidden_size": 32,' > "$work/notjson/config.json"
one() { "$LAUNCH" --mode env -n 1 -- "$LLAMA" train --seq 16 --batch 1 --steps 1 --threads 1 "$@"; }
run_fail "an empty token file" 20 "empty.bin.*(empty|no tokens)" \
    one --config tiny --train "$work/empty.bin"
run_fail "a token id >= the vocabulary" 20 "big.bin.*(token|id).*(600|59[0-9]|5[0-9][0-9]).*vocab" \
    one --config tiny --vocab 512 --train "$work/big.bin"
run_fail "--hsdp that does not divide the world" 20 "HSDP.*does not divide the world size 3" \
    "$LAUNCH" --mode env -n 3 -- "$LLAMA" train --config tiny --data "$work/data" --seq 16 \
    --batch 1 --steps 1 --threads 1 --hsdp 2
run_fail "a truncated model.safetensors" 20 "model.safetensors.*lm_head.weight.*(truncated|not inside)" \
    one --hf "$work/trunc" --data "$work/data"
run_fail "a missing model.safetensors" 20 "noweights.*(safetensors|No such file)" \
    one --hf "$work/noweights" --data "$work/data"
run_fail "config.json with shapes the weights do not have" 20 "shape.*(shape|mlp|80|96)" \
    one --hf "$work/shape" --data "$work/data"
run_fail "config.json with heads that do not divide" 20 "heads.*(kv|key_value|divide)" \
    one --hf "$work/heads" --data "$work/data"
run_fail "a config.json that is not JSON" 20 "notjson/config.json: cannot read a JSON object" \
    one --hf "$work/notjson" --data "$work/data"
run_fail "an unknown named config" 20 "no-such.*(unknown|configs)" one --config no-such \
    --data "$work/data"
run_fail "a trace file that cannot be written" 20 "cannot write the trace file '$work/no/dir/t.json'" \
    one --config tiny --data "$work/data" --trace "$work/no/dir/t.json"
run_fail "--prefetch that is neither a count nor auto" 20 "prefetch.*not an integer" \
    one --config tiny --data "$work/data" --prefetch some
run_fail "bf16 compute on the CPU" 20 "compute-dtype bf16 needs --device cuda" one --config tiny \
    --data "$work/data" --compute-dtype bf16
run_fail "an unknown device" 20 "device: 'tpu' is not cpu or cuda" one --config tiny \
    --data "$work/data" --device tpu
run_fail "an unknown attention" 20 "attention: 'sdpa' is not auto, cudnn, flash or gemm" one \
    --config tiny --data "$work/data" --attention sdpa
run_fail "the tiled attention on the CPU" 20 "flash attention runs on CUDA in bf16" one \
    --config tiny --data "$work/data" --attention flash
# cuDNN's attention: a build without it says so before anything else; one with it needs CUDA
if grep -q "define HAVE_CUDNN 1" "$top_builddir/config.h" 2> /dev/null; then
    no_cudnn_cpu="the cuDNN attention runs on CUDA in bf16"
    no_cudnn_gpu="device cuda: no CUDA device is usable here"
else
    no_cudnn_cpu="attention cudnn: this sharc-llama was built without (cuDNN|CUDA)"
    no_cudnn_gpu=$no_cudnn_cpu
fi
run_fail "cuDNN's attention on the CPU" 20 "$no_cudnn_cpu" one --config tiny --data "$work/data" \
    --attention cudnn
if ! nvidia-smi -L > /dev/null 2>&1; then
    run_fail "--device cuda without a GPU" 20 \
        "device cuda: (no CUDA device is usable here|this sharc-llama was built without CUDA)" \
        one --config tiny --data "$work/data" --device cuda
    run_fail "--attention cudnn without a GPU" 20 "$no_cudnn_gpu" one --config tiny \
        --data "$work/data" --device cuda --attention cudnn
fi
finish
