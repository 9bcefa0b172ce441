#!/bin/bash
# sharc-llama learns: the 15m config on the prepared corpus (the King James Bible, 4096-token
# BPE; trainer/scripts/prepare_data.py) must bring the validation loss from ln(4096) = 8.32 below
# LEARN_TARGET within LEARN_STEPS steps of 2 ranks x 2 x 128 tokens. A unigram model of the
# training split scores 6.02 on the validation split, so the target asks for context learnt,
# not token frequencies. The target was set from a run that reached 5.15 at step 200 and
# 4.95 at step 300 (f32, deterministic for a given BLAS); 5.2 leaves room for another CPU's
# BLAS rounding. Skips (77) without sentencepiece or the corpus.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

LEARN_STEPS=300
LEARN_TARGET=5.2
python=/usr/bin/python3
if ! "$python" -c 'import sentencepiece' 2> /dev/null || ! command -v bible > /dev/null; then
    echo "SKIP: needs python3-sentencepiece and bible-kjv (tools/install-deps.sh)"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-learn.XXXXXX")
trap 'rm -rf "$work"' EXIT
run_ok "prepare the corpus" "$python" "$top_srcdir/trainer/scripts/prepare_data.py" \
    --out "$work/kjv"

# (--timeout: 300 steps take 90 s in a plain build, a few times that under the sanitizers)
"$LAUNCH" --mode env -n 2 --timeout 900 -- "$top_builddir/trainer/sharc-llama" train --config 15m \
    --data "$work/kjv" --batch 2 --seq 128 --steps $LEARN_STEPS --warmup 20 --lr 2e-3 \
    --min-lr 2e-4 --val-every 50 --val-seqs 32 --print-every 25 --log "$work/learn.jsonl" \
    > "$work/learn.out" 2>&1
st=$?
grep -E "val loss|summary" "$work/learn.out"
run_ok "15m trains on 2 ranks" test $st -eq 0
run_ok "validation loss below $LEARN_TARGET within $LEARN_STEPS steps" python3 - \
    "$work/learn.jsonl" $LEARN_TARGET <<'EOF'
import json, sys
vals = [json.loads(l) for l in open(sys.argv[1]) if '"val"' in l]
best = min(v["val_loss"] for v in vals)
print("validation losses:", ", ".join("%d: %.3f" % (v["step"], v["val_loss"]) for v in vals))
sys.exit(0 if best < float(sys.argv[2]) else 1)
EOF
finish
