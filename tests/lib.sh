# lib.sh: shared helpers of sharc's shell tests (sourced, not run).
# make check exports top_srcdir, top_builddir and MPIRUN; running a test by hand from the
# build directory works too.
# SPDX-License-Identifier: BSD-3-Clause
: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${top_builddir:=.}"
LAUNCH="$top_srcdir/tests/launch.sh"
BIN="$top_builddir/tests"
failures=0

# A TCP port where nobody listens, and nobody on the next one (torchrun's rule takes
# MASTER_PORT+1), below Linux's ephemeral range (32768+) where client sockets could hold it.
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((12000 + RANDOM % 20000))
        if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q . &&
           ! ss -Htln "sport = :$((p + 1))" 2>/dev/null | grep -q .; then
            echo "$p"; return
        fi
    done
    echo $((12000 + RANDOM % 20000))
}

# show_out TEXT: a failed command's output, its start and its end (the launcher prints rank
# 0's output first: a hang or error there stays in sight).
show_out() {
    local n
    n=$(printf '%s\n' "$1" | wc -l)
    if [ "$n" -le 70 ]; then
        printf '%s\n' "$1"
    else
        printf '%s\n' "$1" | head -25
        echo "[... $((n - 65)) lines ...]"
        printf '%s\n' "$1" | tail -40
    fi
}

# run_ok DESCRIPTION COMMAND...: the command must succeed.
run_ok() {
    local what=$1; shift
    local out t0=$SECONDS
    out=$("$@" 2>&1)
    local st=$?
    if [ $st -ne 0 ]; then
        echo "FAIL: $what (exit $st)$(took "$t0")"
        show_out "$out"
        failures=$((failures + 1))
    else
        echo "ok: $what$(took "$t0")"
    fi
}

# took T0: " [N s]", the seconds since T0 ($SECONDS then), when SHARCTEST_TIMES is set (the
# guest of rdma.sh sets it, to show where its time goes); nothing otherwise.
took() {
    [ -n "${SHARCTEST_TIMES:-}" ] && echo " [$((SECONDS - $1)) s]"
}

# run_ok_match DESCRIPTION PATTERN COMMAND...: the command must succeed and its output match
# the extended regex PATTERN (to show which path it took). The output stays in last_out for
# further checks.
run_ok_match() {
    local what=$1 pattern=$2; shift 2
    local out st t0=$SECONDS
    out=$("$@" 2>&1)
    st=$?
    last_out=$out
    if [ $st -ne 0 ]; then
        echo "FAIL: $what (exit $st)$(took "$t0")"
        show_out "$out"
        failures=$((failures + 1))
    elif ! echo "$out" | grep -Ezq -- "$pattern"; then
        echo "FAIL: $what: output does not match /$pattern/"
        show_out "$out"
        failures=$((failures + 1))
    else
        echo "ok: $what$(took "$t0")"
    fi
}

# run_fail DESCRIPTION MAX_SECONDS PATTERN COMMAND...: the command must fail within
# MAX_SECONDS, and its output must match the extended regex PATTERN.
run_fail() {
    local what=$1 max=$2 pattern=$3; shift 3
    local out t0 t1 st
    t0=$(date +%s.%N)
    out=$("$@" 2>&1)
    st=$?
    t1=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    if [ $st -eq 0 ]; then
        echo "FAIL: $what: succeeded, expected a failure"
        show_out "$out"
        failures=$((failures + 1))
    elif awk -v s="$secs" -v m="$max" 'BEGIN { exit !(s > m) }'; then
        echo "FAIL: $what: took $secs s, limit $max s"
        show_out "$out"
        failures=$((failures + 1))
    elif ! echo "$out" | grep -Ezq -- "$pattern"; then
        echo "FAIL: $what: output does not match /$pattern/"
        show_out "$out"
        failures=$((failures + 1))
    else
        echo "ok: $what (failed as expected in $secs s)"
    fi
}

# run_fail patterns may span lines (grep -z): ".*" crosses newlines.
# MPIRUN_CMD: mpirun as the tests run it (oversubscribed, as root, shared memory). In
# sanitizer builds OpenMPI's components stay mapped so LeakSanitizer can name them and the
# suppressions in lsan.supp apply (tests/nodlclose.c), and unwinding is slow but complete
# (OpenMPI is built without frame pointers). Returns 1 when there is no mpirun.
setup_mpirun() {
    [ -n "${MPIRUN:-}" ] || return 1
    MPIRUN_CMD=("$MPIRUN" --oversubscribe --allow-run-as-root --mca btl self,vader
                -x SHARC_BOOTSTRAP_TIMEOUT=30s)
    if [ -n "${SHARCTEST_SANITIZE:-}" ]; then
        export LD_PRELOAD="$top_builddir/tests/.libs/libnodlclose.so"
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:fast_unwind_on_malloc=0"
    fi
    return 0
}

# A token file of N random ids below VOCAB (header vocab RECORDED), seeded.
make_tokens() {
    python3 - "$@" <<'EOF'
import random, struct, sys
path, n, vocab, recorded = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = random.Random(n)
ids = [r.randrange(vocab) for _ in range(n)]
with open(path, "wb") as f:
    f.write(b"SHARCTOK" + struct.pack("<IIQII", 1, 2, n, recorded, 0))
    f.write(struct.pack("<%dH" % n, *ids))
EOF
}

# emu_trainer NAME: $EMU, the trainer on the emulated CUDA runtime (tests/trainer/sharc-llama-
# emu), or SKIP (77) without it (no C++ compiler) and in sanitizer builds (the emulation's
# fibers and AddressSanitizer do not mix); and trainer_work NAME
emu_trainer() {
    EMU="$top_builddir/tests/trainer/sharc-llama-emu"
    if [ ! -x "$EMU" ]; then
        echo "SKIP: no tests/trainer/sharc-llama-emu (needs a C++ compiler)"
        exit 77
    fi
    if [ -n "${SHARCTEST_SANITIZE:-}" ]; then
        echo "SKIP: the CUDA emulation's fibers and AddressSanitizer do not mix"
        exit 77
    fi
    trainer_work "$1"
}

# trainer_work NAME: $work, a directory removed at exit, with token files in $work/data
# (vocabulary 256)
trainer_work() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-$1.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/data"
    make_tokens "$work/data/train.bin" 20000 256 256
    make_tokens "$work/data/val.bin" 3000 256 256
}

# make_hf_llama DIR DIM HEADS KV_HEADS HEAD_DIM LAYERS FFN VOCAB: a Hugging Face Llama
# checkpoint (config.json, model.safetensors in f32) with seeded random weights (normal, 0.02;
# norms 1), for shapes no named config has (the tiled attention's head sizes on a small model).
make_hf_llama() {
    python3 - "$@" <<'EOF'
import json, os, random, struct, sys
d, (dim, h, kv, hd, layers, ffn, vocab) = sys.argv[1], map(int, sys.argv[2:9])
os.makedirs(d, exist_ok=True)
json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim,
           "num_hidden_layers": layers, "num_attention_heads": h, "num_key_value_heads": kv,
           "head_dim": hd, "intermediate_size": ffn, "vocab_size": vocab,
           "max_position_embeddings": 1024, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": False,
           "mlp_bias": False, "dtype": "float32"}, open(os.path.join(d, "config.json"), "w"))
shapes = [("model.embed_tokens.weight", (vocab, dim))]
for l in range(layers):
    p = "model.layers.%d." % l
    shapes += [(p + "input_layernorm.weight", (dim,)),
               (p + "self_attn.q_proj.weight", (h * hd, dim)),
               (p + "self_attn.k_proj.weight", (kv * hd, dim)),
               (p + "self_attn.v_proj.weight", (kv * hd, dim)),
               (p + "self_attn.o_proj.weight", (dim, h * hd)),
               (p + "post_attention_layernorm.weight", (dim,)),
               (p + "mlp.gate_proj.weight", (ffn, dim)), (p + "mlp.up_proj.weight", (ffn, dim)),
               (p + "mlp.down_proj.weight", (dim, ffn))]
shapes += [("model.norm.weight", (dim,)), ("lm_head.weight", (vocab, dim))]
r, header, data = random.Random(5), {}, []
for name, shape in shapes:
    n = shape[0] * (shape[1] if len(shape) > 1 else 1)
    vals = [1.0] * n if len(shape) == 1 else [r.gauss(0.0, 0.02) for _ in range(n)]
    off = sum(map(len, data))
    data.append(struct.pack("<%df" % n, *vals))
    header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + 4 * n]}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(d, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(data))
EOF
}

# losses_match A.jsonl B.jsonl [FIRST_STEP [TOL [NORM_TOL]]]: the step losses of B equal A's
# (relative TOL, default 1e-5) for every step of A from FIRST_STEP on; B must have them all.
# With NORM_TOL, the gradient norms too.
losses_match() {
    python3 - "$@" <<'EOF'
import json, sys
def losses(path, key="loss"):
    out = {}
    for line in open(path):
        e = json.loads(line)
        if e["event"] == "step":
            out[e["step"]] = e[key]
    return out
a, b = losses(sys.argv[1]), losses(sys.argv[2])
first = int(sys.argv[3]) if len(sys.argv) > 3 else 1
steps = [s for s in sorted(a) if s >= first]
if not steps or any(s not in b for s in steps):
    sys.exit("steps missing: %s has %s, %s has %s" % (sys.argv[1], sorted(a), sys.argv[2], sorted(b)))
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in steps)
tol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-5
print("%d steps, largest relative loss difference %.2e (limit %.0e)" % (len(steps), worst, tol))
ok = worst <= tol
if len(sys.argv) > 5:
    na, nb = losses(sys.argv[1], "grad_norm"), losses(sys.argv[2], "grad_norm")
    nworst, ntol = max(abs(na[s] - nb[s]) / abs(na[s]) for s in steps), float(sys.argv[5])
    print("largest relative gradient norm difference %.2e (limit %.0e)" % (nworst, ntol))
    ok = ok and nworst <= ntol
sys.exit(0 if ok else 1)
EOF
}

# out_has PATTERN...: each extended regex matches a line of $last_out (run_ok_match's output)
out_has() {
    local p
    for p in "$@"; do
        printf '%s\n' "$last_out" | grep -Eq -- "$p" || { echo "no line matches /$p/"; return 1; }
    done
}

# transport_log N NODES OUTPUT: in OUTPUT (SHARC_LOG_LEVEL=info, "[rank R] " before each line,
# as launch.sh prints it) every rank of a job of N ranks in blocks on NODES nodes logged the
# transports SHARC_TRANSPORT=auto picks: shm inside a node and UCX between nodes, or UCX alone
# with one rank a node
transport_log() {
    local n=$1 k=$2 out=$3 r want
    for ((r = 0; r < n; r++)); do
        if [ $((n / k)) -gt 1 ]; then
            want="\[rank $r\] node[0-9]+:.* comm: rank $r of $n, node $((r / (n / k))) of $k, .*transport hybrid\)"
            echo "$out" | grep -Eq "\[rank $r\] .*transport: shm within the node, ucx between nodes" ||
                { echo "rank $r did not log 'shm within the node, ucx between nodes'"; return 1; }
        else
            want="\[rank $r\] node[0-9]+:.* comm: rank $r of $n, node $r of $k, .*transport ucx\)"
        fi
        echo "$out" | grep -Eq "$want" || { echo "rank $r did not log /$want/"; return 1; }
    done
    echo "every rank logged its transports"
}

# setup_nodes K [tools/nodes.sh up options]: K nodes on this machine for this test (network,
# UTS and mount namespaces on a private bridge: tools/nodes.sh), torn down when the test
# exits, however it exits; SKIP (77) where they cannot be made (not root, namespaces refused,
# or with --slurm no Slurm). Sets NODES (tools/nodes.sh with this test's prefix) and
# NODE_EXEC (for launch.sh --node-exec).
setup_nodes() {
    local k=$1 why slurm=""
    shift
    case " $* " in *" --slurm "*) slurm=--slurm ;; esac
    # shellcheck source=../tools/nodes.sh
    . "$top_srcdir/tools/nodes.sh"
    if ! why=$(nodes_check $slurm); then
        echo "SKIP: $why"
        exit 77
    fi
    NODES_PREFIX=$(basename "$0" .sh | tr -cd 'a-z0-9' | cut -c1-10)$$
    NODES_OWNER_PID=$$
    nodes_gc # sets left by tests that were killed
    trap 'nodes_down' EXIT
    trap 'exit 130' INT TERM HUP
    if ! nodes_up "$k" "$@"; then
        echo "FAIL: cannot make $k namespace nodes"
        exit 1
    fi
    NODES="$(cd "$top_srcdir" && pwd)/tools/nodes.sh -p $NODES_PREFIX"
    NODE_EXEC="$NODES exec"
}

# fault_job DIR AT FAULT -- COMMAND...: starts a job whose ranks write their output to
# DIR/out.R as it comes (launch.sh --out-dir DIR, srun -o DIR/out.%t), runs the shell command
# FAULT AT seconds later, and watches: FAULT_SEEN[R] is the time in seconds from the fault to
# the first line of rank R matching $FAULT_LINE (a failure the rank reported) and
# FAULT_WALL[R] the wall-clock time it was seen (seconds since the epoch), FAULT_END the
# time from the fault to the job's end, FAULT_RC the job's status and FAULT_OUT its own
# output. Polls every 50 ms; COMMAND must bound itself (launch.sh --timeout, timeout). With
# $FAULT_READY set, AT counts from the first line of rank 0 that matches it (the job under
# way: a loaded machine may take longer to make the communicator), waited for up to 60 s.
fault_job() {
    local dir=$1 at=$2 fault=$3 lp t0 now f r alive
    shift 4
    rm -rf "$dir" && mkdir -p "$dir" || return 1
    unset FAULT_SEEN FAULT_WALL
    declare -gA FAULT_SEEN=() FAULT_WALL=()
    "$@" > "$dir/job.out" 2>&1 &
    lp=$!
    if [ -n "${FAULT_READY:-}" ]; then
        for ((r = 0; r < 1200; r++)); do
            grep -Eq -- "$FAULT_READY" "$dir/out.0" 2> /dev/null && break
            kill -0 "$lp" 2> /dev/null || break
            sleep 0.05
        done
    fi
    sleep "$at"
    t0=$(date +%s.%N)
    eval "$fault"
    while :; do
        alive=0
        kill -0 "$lp" 2> /dev/null && alive=1
        now=$(date +%s.%N)
        for f in "$dir"/out.*; do
            r=${f##*.}
            [ -z "${FAULT_SEEN[$r]:-}" ] && grep -Eq -- "$FAULT_LINE" "$f" 2> /dev/null &&
                FAULT_SEEN[$r]=$(awk -v a="$t0" -v b="$now" 'BEGIN { printf "%.2f", b - a }') &&
                FAULT_WALL[$r]=$now
        done
        [ $alive = 1 ] || break
        sleep 0.05
    done
    wait "$lp"
    FAULT_RC=$?
    FAULT_END=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    FAULT_OUT=$(cat "$dir/job.out")
}

# fault_check WHAT DIR BOUND END_BOUND NAMES_RE RANKS...: after fault_job DIR: each of RANKS
# reported the failure within BOUND seconds of the fault, and some line of sharc's log in its
# output (after "sharc ERROR" or "WARN") matches NAMES_RE (the rank and host it names); the
# job ended within END_BOUND seconds, and nothing crashed (no assertion, abort or segfault
# in any rank's output, no rank killed by a signal it did not get from the test).
fault_check() {
    local what=$1 dir=$2 bound=$3 end_bound=$4 names=$5 r t
    shift 5
    for r in "$@"; do
        t=${FAULT_SEEN[$r]:-}
        if [ -n "$t" ] && awk -v t="$t" -v b="$bound" 'BEGIN { exit !(t <= b) }'; then
            echo "ok: $what: rank $r failed $t s after the fault (bound $bound s)"
        else
            echo "FAIL: $what: rank $r failed ${t:-not at all}${t:+ s after the fault} (bound $bound s)"
            show_out "$(tail -15 "$dir/out.$r" 2> /dev/null)"
            failures=$((failures + 1))
        fi
        if grep -Eq -- "sharc (ERROR|WARN) .*($names)" "$dir/out.$r" 2> /dev/null; then
            echo "ok: $what: rank $r's log names /$names/"
        else
            echo "FAIL: $what: no line of rank $r's log names /$names/; its errors:"
            grep -E "sharc (ERROR|WARN)" "$dir/out.$r" | sed 's/^.*sharc /  /' | sort -u | head -8
            failures=$((failures + 1))
        fi
    done
    if awk -v t="$FAULT_END" -v b="$end_bound" 'BEGIN { exit !(t <= b) }'; then
        echo "ok: $what: the job ended $FAULT_END s after the fault (bound $end_bound s)"
    else
        echo "FAIL: $what: the job ended $FAULT_END s after the fault (bound $end_bound s)"
        failures=$((failures + 1))
    fi
    no_crash "$what" "$dir" "$@"
}

# no_crash WHAT DIR RANKS...: after fault_job DIR, none of RANKS crashed: no assertion, abort
# or segfault in its output, not killed by a signal it did not get from the test.
no_crash() {
    local what=$1 dir=$2 r crashed=""
    shift 2
    for r in "$@"; do
        if grep -Eq "Assertion .* failed|[Bb]acktrace|Segmentation fault|Aborted" "$dir/out.$r" ||
            grep -Eq "^\[rank $r\] exited with status (1[3-9][0-9]|2[0-9][0-9])|task $r: (Aborted|Segmentation|Killed)" \
                "$dir/job.out"; then
            crashed="$crashed $r"
        fi
    done
    if [ -n "$crashed" ]; then
        echo "FAIL: $what: rank(s)$crashed crashed:"
        for r in $crashed; do
            grep -Eh "Assertion .* failed|Segmentation fault|Aborted" "$dir/out.$r" | head -2
            grep -E "^\[rank $r\] exited with status|task $r: " "$dir/job.out"
        done
        failures=$((failures + 1))
    else
        echo "ok: $what: no rank crashed"
    fi
}

finish() {
    if [ $failures -ne 0 ]; then
        echo "$failures failure(s)"
        exit 1
    fi
    exit 0
}
