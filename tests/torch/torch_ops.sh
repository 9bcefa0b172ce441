#!/bin/bash
# The sharc torch.distributed backend against gloo, op by op (tests/torch/ops.py): every
# collective, f32/bf16/i64 and the other dtypes, every reduction, in place and not, sync and
# async, several in flight, odd sizes, non-contiguous tensors, a subgroup; at 1, 2, 3, 4 ranks;
# and at 2 on c10d's ProcessGroup, the base an older torch gives the group.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

for n in 1 2 3 4; do
    run_ok_match "torch backend ops against gloo, $n rank(s)" \
        "rank 0 of $n: [0-9]+ checks, 0 failed" \
        "$LAUNCH" -n $n --timeout 300 -- "$PY" "$TT/ops.py"
done
# the group as a torch whose c10d Backend Python cannot subclass makes it (a ProcessGroup)
run_ok_match "torch backend ops against gloo on a ProcessGroup base, 2 ranks" \
    "rank 0 of 2: [0-9]+ checks, 0 failed" \
    "$LAUNCH" -n 2 --timeout 300 -- "$PY" "$TT/ops.py" --c10d-base process_group
finish
