#!/bin/bash
# fuzz.sh [SECONDS] [BUILD_DIR]: builds every libFuzzer harness of tests/fuzz/ with clang and
# ASan+UBSan and runs each for SECONDS (default 30):
#   smi xml fi_info   the topology parsers (nvidia-smi text, NCCL XML, the EFA doctor's fi_info
#                     text and plugin version scan; seeds: the captures in tests/topo/)
#   safetensors tokens  the trainer's file readers (seeds written by the harnesses, plus
#                     tests/trainer/hf_tiny*/ when present)
#   hf_config         the trainer's Hugging Face config.json reader and shape check
#   cluster           sharc-perf predict's cluster file, topology capture and model config
#   store             the bootstrap store server's message parser, in-process
#   manifest          sharded checkpoints' metadata, through sharc_shard_load
#   tune              the tune file, through a context and its collectives
# Each links a static clang build of the library with the same sanitizers (BUILD_DIR/fuzz/lib,
# configured without the optional backends; json-c and xxHash needed). Every input a harness
# once crashed on is kept in tests/fuzz/regress/NAME/ and run before the harness fuzzes.
# Binaries, corpora, logs and crash inputs go to BUILD_DIR/fuzz (default build/). FUZZ_HARNESSES="smi store" picks some. Exits
# 77 when clang or libFuzzer is missing (or no harness could be built for want of its
# libraries), 1 when a harness found a crash (with the log's tail).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-30}
builddir=${2:-$top/build}
clang=${CLANG:-clang}
harnesses=${FUZZ_HARNESSES:-smi xml fi_info safetensors tokens hf_config cluster store manifest tune}
if ! command -v "$clang" > /dev/null; then
    echo "fuzz: no clang; skipped"
    exit 77
fi
out="$builddir/fuzz"
mkdir -p "$out"
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        "$clang" -fsanitize=fuzzer -x c - -o "$out/probe" 2> /dev/null; then
    echo "fuzz: $clang cannot link libFuzzer (-fsanitize=fuzzer); skipped"
    exit 77
fi
# shellcheck disable=SC2054 # the commas are in one -fsanitize= list
flags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$top/include")
# shellcheck disable=SC2054
lib_san=(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined)
topo_srcs=("$top/perf/topo/topo_classify.c" "$top/perf/topo/topo_smi.c"
           "$top/perf/topo/topo_xml.c" "$top/perf/topo/topo_libs.c")

# Keywords of the safetensors header and index, for the mutator.
write_st_dict() {
    local w
    for w in '"dtype"' '"shape"' '"data_offsets"' '"__metadata__"' '"weight_map"' '"metadata"' \
            '"F32"' '"F16"' '"BF16"' '"I32"' '"I64"' '"F64"' '"U8"' '"s1.safetensors"' \
            '"s2.safetensors"' '"in.safetensors"' '"../s1.safetensors"' '18446744073709551615' \
            '4294967296' '[]' '{}' '\u0000'; do
        printf 'kw="%s"\n' "$(printf '%s' "$w" | sed 's/\\/\\\\/g; s/"/\\"/g')"
    done
}

# Keywords of the JSON the harnesses read (Hugging Face config, checkpoint metadata, topology
# capture); json-c's lookups are hashed, so the mutator would not find them by comparison.
write_json_dict() {
    local w
    for w in hidden_size num_hidden_layers num_attention_heads num_key_value_heads \
            intermediate_size vocab_size head_dim max_position_embeddings rms_norm_eps \
            rope_theta rope_scaling rope_type factor original_max_position_embeddings \
            high_freq_factor low_freq_factor llama3 tie_word_embeddings torch_dtype \
            format sharc-shard-checkpoint version generation step world_size shard_size \
            replicas align dtype states master units count shard_count params name offset \
            shape files shard_rank bytes xxh3 gpus nics ports active rate_gbps intra nvswitch; do
        printf 'kw="\\"%s\\""\n' "$w"
    done
}

# The library built with clang and the fuzzing sanitizers, once (static, no optional backends
# beyond json-c and xxHash, no metrics endpoint): BUILD_DIR/fuzz/lib. Returns 2 when it cannot
# be configured.
lib_built=
build_lib() {
    [ -n "$lib_built" ] && return "$lib_built"
    lib_built=2
    mkdir -p "$out/lib"
    if [ ! -f "$out/lib/config.status" ] &&
        ! (cd "$out/lib" && CC=$clang CFLAGS="-g -O1 ${lib_san[*]}" "$top/configure" \
            --without-cuda --without-nccl --without-ucx --without-verbs --without-mpi \
            --without-hwloc --without-libxml2 --without-blas --without-microhttpd \
            --with-jsonc --with-xxhash --disable-shared > "$out/lib/configure.out" 2>&1); then
        echo "fuzz: the library's clang build could not be configured (json-c and xxHash are" \
            "needed; $out/lib/config.log says why)" >&2
        return 2
    fi
    if ! make -C "$out/lib" -j"$(nproc)" libsharc_core.la > "$out/lib/make.out" 2>&1; then
        tail -20 "$out/lib/make.out" >&2
        lib_built=1
        return 1
    fi
    lib_built=0
}

# build_harness NAME: compiles tests/fuzz/fuzz_NAME.c; returns 2 when a library it needs is
# missing, 1 when it does not compile.
build_harness() {
    local h=$1 cflags libs
    build_lib || return $?
    cflags="-I$out/lib -I$out/lib/include $(pkg-config --cflags json-c)"
    libs="$out/lib/.libs/libsharc_core.a $(pkg-config --libs json-c) -lxxhash -lpthread -lm -lrt"
    case $h in
    smi | xml | fi_info)
        cflags="$cflags $(pkg-config --cflags libxml-2.0 2> /dev/null)" || return 2
        libs="$(pkg-config --libs libxml-2.0) $libs"
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags "$top/tests/fuzz/fuzz_$h.c" "${topo_srcs[@]}" \
            -o "$out/fuzz_$h" $libs
        ;;
    safetensors)
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags -I"$top/trainer" "$top/tests/fuzz/fuzz_$h.c" \
            "$top"/trainer/io/safetensors_{header,read,write}.c "$top/trainer/util.c" \
            -o "$out/fuzz_$h" $libs
        ;;
    tokens)
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags -I"$top/trainer" "$top/tests/fuzz/fuzz_$h.c" \
            "$top/trainer/io/tokens.c" "$top/trainer/util.c" -o "$out/fuzz_$h" $libs
        ;;
    hf_config)
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags -I"$top/trainer" "$top/tests/fuzz/fuzz_$h.c" \
            "$top/trainer/model/config.c" "$top/trainer/util.c" -o "$out/fuzz_$h" $libs
        ;;
    cluster)
        # predict's sources but its main (what the cluster reader reaches grows with predict)
        local predict=()
        for f in "$top"/perf/predict/predict_*.c; do
            [ "$(basename "$f")" = predict_main.c ] || predict+=("$f")
        done
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags -I"$top" -I"$top/perf" "$top/tests/fuzz/fuzz_$h.c" \
            "${predict[@]}" "$top/shard/plan/shard_plan.c" "$top/shard/plan/shard_plan_auto.c" \
            "$top/perf/common/perf_util.c" -o "$out/fuzz_$h" $libs
        ;;
    store | manifest | tune)
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags "$top/tests/fuzz/fuzz_$h.c" -o "$out/fuzz_$h" $libs
        ;;
    *)
        echo "fuzz: no harness $h" >&2
        exit 1
        ;;
    esac
}

# seed NAME CORPUS: the harness's starting inputs; extra libFuzzer options on stdout.
seed() {
    local h=$1 corpus=$2 f
    case $h in
    smi) cp "$top"/tests/topo/smi_*.txt "$corpus/" ;;
    fi_info) cp "$top"/tests/topo/fi_info_*.txt "$corpus/" ;;
    xml) cp "$top"/tests/topo/*.xml "$corpus/" ;;
    safetensors | tokens | hf_config | cluster | store | manifest | tune)
        if ! SHARC_FUZZ_SEEDS="$corpus" "$out/fuzz_$h" > "$out/seed_$h.log" 2>&1; then
            echo "fuzz: fuzz_$h could not write its seeds:" >&2
            tail -20 "$out/seed_$h.log" >&2
            return 1
        fi
        ;;
    esac
    case $h in
    smi | xml | fi_info) echo "-max_len=65536" ;;
    safetensors)
        for f in "$top"/tests/trainer/hf_tiny*/*.safetensors; do
            [ -f "$f" ] && cp "$f" "$corpus/$(basename "$(dirname "$f")")_$(basename "$f")"
        done
        write_st_dict > "$out/safetensors.dict"
        # room for the fixtures (~150 KB); the trainer's readers log every rejected input:
        # stderr is discarded (libFuzzer and the sanitizers keep their own copy)
        echo "-max_len=262144 -dict=$out/safetensors.dict -close_fd_mask=2"
        ;;
    tokens) echo "-max_len=65536 -close_fd_mask=2" ;;
    hf_config | cluster | manifest)
        write_json_dict > "$out/json.dict"
        echo "-max_len=16384 -dict=$out/json.dict -close_fd_mask=2"
        ;;
    store | tune) echo "-max_len=16384 -close_fd_mask=2" ;;
    esac
}

rc=0
ran=0
for h in $harnesses; do
    built=0
    build_harness "$h" || built=$?
    if [ $built -eq 2 ]; then
        echo "fuzz: fuzz_$h not built (a library it needs is missing); skipped"
        continue
    elif [ $built -ne 0 ]; then
        echo "fuzz: fuzz_$h does not compile" >&2
        exit 1
    fi
    corpus="$out/corpus_$h"
    mkdir -p "$corpus"
    opts=$(seed "$h" "$corpus")
    regress=("$top/tests/fuzz/regress/$h"/*)
    if [ -e "${regress[0]}" ]; then
        # shellcheck disable=SC2086
        if ! "$out/fuzz_$h" $opts "${regress[@]}" > "$out/regress_$h.log" 2>&1; then
            echo "fuzz: fuzz_$h fails on an input it once crashed on (tests/fuzz/regress/$h):"
            tail -40 "$out/regress_$h.log"
            rc=1
            continue
        fi
        echo "fuzz: fuzz_$h: ${#regress[@]} regression inputs pass"
    fi
    echo "fuzz: fuzz_$h for $secs s"
    ran=$((ran + 1))
    # shellcheck disable=SC2086
    if ! "$out/fuzz_$h" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix="$out/fuzz_$h-" $opts "$corpus" > "$out/fuzz_$h.log" 2>&1; then
        echo "fuzz: fuzz_$h found a crash:"
        tail -40 "$out/fuzz_$h.log"
        rc=1
    else
        grep -aE "stat::number_of_executed_units|cov:" "$out/fuzz_$h.log" | tail -2
    fi
done
if [ $ran -eq 0 ]; then
    echo "fuzz: no harness could be built; skipped"
    exit 77
fi
exit $rc
