# parts.sh: sourced by tests/gpu/run.sh: how a part of the GPU run runs within its time box and
# the run's budget, the record each part leaves for the summary table, and the benchmarks'
# helpers (sharc-llama's runs, PyTorch's beside them, the rows of their tables). Needs run.sh's
# variables: out, report, build, top, venv, dry_run, budget, t_start, only, llama_steps.
# SPDX-License-Identifier: BSD-3-Clause

# The summary: one entry per part, in the order the parts came
sum_name=() sum_outcome=() sum_secs=() sum_figure=()
failures=0
reserve=${reserve:-10} # seconds the budget keeps for the report and the summary
min_box=${min_box:-20} # a part gets at least this many seconds, or is skipped

# record NAME OUTCOME SECONDS: a part's line of the summary (its figure comes with figure)
record() {
    sum_name+=("$1") sum_outcome+=("$2") sum_secs+=("$3") sum_figure+=("")
}
# figure TEXT: the figure of the part recorded last (tokens/s and MFU, TFLOP/s, ...)
figure() {
    [ ${#sum_name[@]} -gt 0 ] && sum_figure[${#sum_name[@]} - 1]=$1
}
# selected NAME: whether --parts chose NAME (every part without --parts); a pattern of --parts
# ends in * to take a prefix (llama-1b*)
selected() {
    [ -z "$only" ] && return 0
    local p
    for p in ${only//,/ }; do
        # shellcheck disable=SC2053 # a glob of --parts on purpose
        [[ $1 == $p ]] && return 0
    done
    return 1
}
# time_left: seconds of the budget left before its reserve (a large number without a budget)
time_left() {
    if [ "$budget" -gt 0 ]; then
        echo $((budget - (SECONDS - t_start) - reserve))
    else
        echo 999999
    fi
}

# part NAME BOX COMMAND...: runs COMMAND (its output in OUT/NAME.log) for at most BOX seconds,
# or the budget's time left where that is less; a part the budget cannot give half its box
# (and at least min_box seconds) is skipped, so that one slow part cannot eat the rest. The part's
# outcome goes to the summary and, failed, its log's end to the report. Returns COMMAND's
# status (1 where it did not run).
part() {
    local name=$1 box=$2 left lim t0 st log=$out/$1.log
    shift 2
    selected "$name" || return 1
    if [ "$dry_run" = 1 ]; then
        record "$name" "skipped (dry run; box ${box} s)" 0
        return 1
    fi
    left=$(time_left)
    lim=$box
    [ "$left" -lt "$lim" ] && lim=$left
    if [ "$lim" -lt "$min_box" ] || [ $((lim * 2)) -lt "$box" ]; then
        record "$name" "skipped (the budget's ${left} s left; box ${box} s)" 0
        return 1
    fi
    t0=$SECONDS
    timeout -k 10 "$lim" "$@" > "$log" 2>&1
    st=$?
    case $st in
        0) record "$name" ok $((SECONDS - t0)) ;;
        77) record "$name" "skipped ($(tail -n 1 "$log" | cut -c1-60))" $((SECONDS - t0)) ;;
        124|137)
            record "$name" "FAILED (stopped after $lim s)" $((SECONDS - t0))
            failures=$((failures + 1))
            { echo "### $name (stopped after $lim s)"; tail -n 20 "$log"; echo; } >> "$out/failures.txt"
            ;;
        *)
            record "$name" "FAILED (exit $st)" $((SECONDS - t0))
            failures=$((failures + 1))
            { echo "### $name (exit $st)"; tail -n 20 "$log"; echo; } >> "$out/failures.txt"
            ;;
    esac
    return $st
}

# section TITLE [LINE...]: a section of the report; in a dry run it says so
section() {
    {
        echo
        echo "## $1"
        echo
        shift
        [ $# -gt 0 ] && printf '%s\n' "$@"
        [ "$dry_run" = 1 ] && echo "(dry run: nothing measured)"
    } >> "$report"
}

# The token files of the benchmarks (synthetic: the speed does not depend on them)
data_for() { # data_for VOCAB: the path of a token file of 1M tokens below VOCAB
    mkdir -p "$out/data-$1"
    [ -f "$out/data-$1/train.bin" ] || make_tokens "$out/data-$1/train.bin" 1000000 "$1" "$1"
    echo "$out/data-$1/train.bin"
}

# llama_bench NAME BOX CONFIG VOCAB BATCH SEQ ARGS...: sharc-llama train on one GPU (bf16 compute and
# gathers, f32 masters and reductions), llama_steps steps; a row of its table (rows-llama.md)
llama_bench() {
    local run=$1 name=llama-$1 box=$2 config=$3 vocab=$4 batch=$5 seq=$6 data args
    shift 6
    args=${*//$out\//} # the row names the files beside the report by their names
    selected "$name" || return 1
    [ "$dry_run" = 1 ] || data=$(data_for "$vocab")
    rm -f "$out/$name.jsonl"
    if part "$name" "$box" "$build/trainer/sharc-llama" train --device cuda --config "$config" \
        --train "${data:-/dev/null}" --batch "$batch" --seq "$seq" --steps "$llama_steps" \
        --warmup 2 --print-every 10 --log "$out/$name.jsonl" "$@"; then
        figure "$(llama_summary "$out/$name.jsonl" "%.0f tok/s, %.1f%% MFU, %.0f MiB")"
        echo "| $run | $batch x $seq $args | $(llama_summary "$out/$name.jsonl" \
            "%.0f | %.1f%% | %.0f MiB | %.3f s") |" >> "$out/rows-llama.md"
    else
        echo "| $run | $batch x $seq $args | ${sum_outcome[${#sum_outcome[@]} - 1]:-not run} | | | |" \
            >> "$out/rows-llama.md"
    fi
}
# llama_summary JSONL FORMAT: the run's summary record as FORMAT (tokens/s, MFU in %, peak
# device memory, step seconds, in that order)
llama_summary() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
try:
    s = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "summary"][-1]
except (OSError, IndexError, ValueError):
    print("no summary")
    sys.exit(0)
v = (s["tokens_per_s"], 100 * s["mfu"], s.get("peak_gpu_mem_mib", 0), s["step_s"])
print(sys.argv[2] % v[:sys.argv[2].count("%")])
EOF
}

# PyTorch beside sharc-llama (trainer/scripts/bench_torch.py): the same config, batch,
# sequence and token file on the same GPU; bf16 autocast over f32 parameters, SDPA attention,
# fused AdamW; MFU against the peak sharc-llama's run LLAMA took (its start record), so that
# both MFUs share it. torch_bench NAME BOX LLAMA CONFIG VOCAB BATCH SEQ ARGS...
torch_py="" # the python with torch, transformers and numpy: the venv's, or python3 (looked
torch_looked=0 # for once, at the first torch_bench: importing torch takes seconds)
torch_bench() {
    local name=torch-$1 box=$2 ref=$3 config=$4 vocab=$5 batch=$6 seq=$7 peak data
    shift 7
    selected "$name" || return 1
    if [ $torch_looked = 0 ] && [ "$dry_run" != 1 ]; then
        torch_looked=1
        for py in "$venv/bin/python" python3; do
            "$py" -c 'import torch, transformers, numpy' > /dev/null 2>&1 && { torch_py=$py; break; }
        done
    fi
    if [ -z "$torch_py" ] && [ "$dry_run" != 1 ]; then
        record "$name" "skipped (no python with torch, transformers and numpy)" 0
        return 1
    fi
    [ "$dry_run" = 1 ] || data=$(data_for "$vocab")
    peak=$(python3 -c 'import json, sys
s = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "start"][-1]
print("%.6g" % (s["gemm_peak_gflops"] / 1e3))' "$out/llama-$ref.jsonl" 2> /dev/null)
    part "$name" "$box" "$torch_py" "$top/trainer/scripts/bench_torch.py" --config "$config" \
        --device cuda --data "${data:-/dev/null}" --batch "$batch" --seq "$seq" \
        --steps "$llama_steps" --warmup-steps 3 ${peak:+--peak-tflops "$peak"} "$@" || return 1
    figure "$(torch_summary "$out/$name.log" "%.0f tok/s, %.1f%% MFU, %.0f MiB")"
}
# torch_summary LOG FORMAT: bench_torch.py's last summary line as FORMAT (tokens/s, MFU in %,
# peak memory)
torch_summary() {
    python3 - "$1" "$2" <<'EOF'
import sys
try:
    last = [l for l in open(sys.argv[1]) if l.startswith("bench_torch: tokens_per_s=")][-1]
    t = dict(f.split("=", 1) for f in last.split()[1:])
    v = (float(t["tokens_per_s"]), 100 * float(t["mfu"]), float(t["peak_mem_mib"]))
except (OSError, IndexError, KeyError, ValueError):
    print("no summary")
    sys.exit(0)
print(sys.argv[2] % v[:sys.argv[2].count("%")])
EOF
}
# beside_row NAME LLAMA TORCH: a row of the table sharc-llama beside PyTorch
beside_row() {
    python3 - "$out/llama-$2.jsonl" "$out/torch-$3.log" "$1" >> "$report" <<'EOF'
import json, sys
try:
    s = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "summary"][-1]
except (OSError, IndexError, ValueError):
    s = None
try:
    last = [l for l in open(sys.argv[2]) if l.startswith("bench_torch: tokens_per_s=")][-1]
    t = dict(f.split("=", 1) for f in last.split()[1:])
except (OSError, IndexError):
    t = None
a = ("%.0f | %.1f%% | %.0f MiB" % (s["tokens_per_s"], 100 * s["mfu"],
                                    s.get("peak_gpu_mem_mib", 0)) if s else "- | |")
b = ("%.0f | %.1f%% | %.0f MiB" % (float(t["tokens_per_s"]), 100 * float(t["mfu"]),
                                    float(t["peak_mem_mib"])) if t else "- | |")
r = "%.2f" % (s["tokens_per_s"] / float(t["tokens_per_s"])) if s and t else "-"
print("| %s | %s | %s | %s |" % (sys.argv[3], a, b, r))
EOF
}

# summary: the table of every part, printed last
summary() {
    local i w=4
    for i in "${!sum_name[@]}"; do [ ${#sum_name[$i]} -gt $w ] && w=${#sum_name[$i]}; done
    echo
    printf "%-${w}s  %-44s %6s  %s\n" part outcome secs figure
    for i in "${!sum_name[@]}"; do
        printf "%-${w}s  %-44s %6s  %s\n" "${sum_name[$i]}" "${sum_outcome[$i]}" \
            "${sum_secs[$i]}" "${sum_figure[$i]}"
    done
    printf "%d part(s): %d ok, %d failed, %d skipped; %d s\n" ${#sum_name[@]} \
        "$(printf '%s\n' "${sum_outcome[@]}" | grep -c '^ok')" "$failures" \
        "$(printf '%s\n' "${sum_outcome[@]}" | grep -c '^skipped')" $((SECONDS - t_start))
}
