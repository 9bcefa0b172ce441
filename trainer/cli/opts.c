/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/opts.c: sharc-llama's options (opts.h): the usage text, the option table, the
 * parsing of each value (integers, numbers, dtypes, names) with a message naming the option,
 * and the checks between options (dtypes and offload that follow --device). No model or data
 * here.
 */
#include "opts.h"
#include "../ops/ops_cuda.h"
#include "../util.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

void llama_usage(FILE *f)
{
    fprintf(f,
            "usage: sharc-llama train [options]     train (every rank of the job runs this)\n"
            "       sharc-llama configs             list the named model configs\n"
            "       sharc-llama flops --config NAME [--seq T] [--batch B] [--ranks N]\n"
            "                                       FLOPs per token and memory per rank\n"
            "model:\n"
            "  --config NAME        named config (default 15m; see `configs`)\n"
            "  --hf DIR             start from a Hugging Face checkpoint (config.json and\n"
            "                       model.safetensors or its index) instead of random weights\n"
            "  --vocab V            vocabulary of a named config (default: the data's)\n"
            "data:\n"
            "  --data DIR           DIR/train.bin and DIR/val.bin (trainer/scripts/"
            "prepare_data.py)\n"
            "  --train F, --val F   token files given one by one\n"
            "  --batch B            sequences per rank per micro-batch (default 8)\n"
            "  --seq T              sequence length (default: the config's, at most 256)\n"
            "  --accum K            micro-batches per step (gradient accumulation; default 1)\n"
            "  --data-seed S        which windows the batches take (default 1234)\n"
            "optimizer:\n"
            "  --steps N            optimizer steps (default 100)\n"
            "  --stop-at K          stop after step K of the N (the schedule stays N's; with\n"
            "                       --save, a planned interruption to --resume from)\n"
            "  --lr X --min-lr X    peak and final learning rate (default 1e-3, 1e-4)\n"
            "  --warmup N           linear warmup steps (default 10)\n"
            "  --weight-decay X     AdamW decay of matrices (default 0.1)\n"
            "  --beta1 X --beta2 X  (default 0.9, 0.95)\n"
            "  --clip X             global gradient-norm clip, 0 off (default 1.0)\n"
            "sharding:\n"
            "  --param-dtype D      f32 or bf16: dtype parameters are gathered in (default f32)\n"
            "  --reduce-dtype D     f32 or bf16: gradient reduction (default f32)\n"
            "  --hsdp S             shard groups of S ranks, replicated across groups\n"
            "  --param-wire W       full, int8 or fp8: how gathers travel (default: sharc's,\n"
            "                       full); int8/fp8 quantize blocks of values (ZeRO++ qwZ)\n"
            "  --reduce-wire W      full, int8 or fp8: how reductions travel between nodes\n"
            "                       (full precision within a node; ZeRO++ qgZ)\n"
            "  --wire-block N       values per scale of a quantized wire (default 256)\n"
            "  --reshard-after-forward yes|no|node  what a unit keeps after its forward:\n"
            "                       nothing, everything, or a node-local shard (ZeRO++ hpZ)\n"
            "  --recompute          recompute each block's activations in backward\n"
            "  --head-rows N        rows of logits the head computes at once (default: as\n"
            "                       many as fit 256 MiB; the loss is the same either way)\n"
            "  --prefetch K|auto    units gathered ahead (default sharc's, 1); auto: the\n"
            "                       engine deepens it while gathers are waited for\n"
            "  --seed S             initialisation seed (default 1)\n"
            "measure and keep:\n"
            "  --val-every N        validation loss every N steps and at the end (default 50)\n"
            "  --val-seqs S         validation sequences, the same S whatever the number of\n"
            "                       ranks (rounded up to a multiple of ranks x batch; default 64)\n"
            "  --log FILE           JSONL metrics (one object per step / validation / summary)\n"
            "  --trace FILE         the shard engine's timeline of the last steps, every rank's,\n"
            "                       as Chrome trace JSON (SHARC_SHARD_TRACE; tools/trace-plot)\n"
            "  --print-every N      console line every N steps (default 1)\n"
            "  --profile            time every op site of each step (CUDA events on the GPU,\n"
            "                       the clock on the CPU) and print, at the end, rank 0's\n"
            "                       table: calls, ms and share of the step (medians), the\n"
            "                       achieved rate, the floor (FLOPs over a GEMM rate, bytes\n"
            "                       over a copy rate, both measured at start) and the gap;\n"
            "                       with --trace the op spans are a track of its timeline\n"
            "  --profile-json FILE  the table as JSON too (implies --profile)\n"
            "  --save DIR           sharded checkpoint every --save-every steps and at the end\n"
            "  --save-every N       (default: only at the end)\n"
            "  --resume DIR         continue from a checkpoint (weights, moments, step)\n"
            "  --export DIR         write a Hugging Face checkpoint at the end\n"
            "  --export-dtype D     f32 or bf16 (default f32)\n"
            "  --threads N          compute threads per rank (default: cores / ranks on the node)\n"
            "  --peak-gflops X      peak per rank for MFU (default: a GEMM measured at start;\n"
            "                       on a GPU its dense bf16 peak, known from its name)\n"
            "  --peak-tflops X      the same in TFLOP/s\n"
            "device:\n"
            "  --device D           cpu (default) or cuda: one GPU per rank, the local rank's\n"
            "  --compute-dtype D    f32 or bf16 (cuda only): activations and products (default\n"
            "                       f32 on the cpu, bf16 on cuda; --param-dtype defaults to it)\n"
            "  --attention A        cudnn (cuDNN's fused attention; cuda, bf16, head sizes 64\n"
            "                       and 128, a build with cuDNN), flash (sharc's tiled kernel;\n"
            "                       cuda, bf16) or gemm (the probabilities materialized);\n"
            "                       default auto: cudnn where it runs, else flash, else gemm\n"
            "  --offload M          none (default), host or managed (cuda): f32 masters,\n"
            "                       gradient shards and AdamW's moments in host memory (page-\n"
            "                       locked, or CUDA managed memory), AdamW on the CPU\n"
            "  --offload-fraction F the share of the model offloaded, (0, 1] (default 1); the\n"
            "                       first units (embedding, early blocks) stay on the GPU\n");
}

enum {
    O_CONFIG = 256,
    O_HF,
    O_VOCAB,
    O_DATA,
    O_TRAIN,
    O_VAL,
    O_BATCH,
    O_SEQ,
    O_ACCUM,
    O_DSEED,
    O_STEPS,
    O_STOP,
    O_LR,
    O_MINLR,
    O_WARMUP,
    O_WD,
    O_B1,
    O_B2,
    O_CLIP,
    O_PDT,
    O_RDT,
    O_HSDP,
    O_RECOMP,
    O_HEAD_ROWS,
    O_PREFETCH,
    O_SEED,
    O_VALEVERY,
    O_VALSEQ,
    O_LOG,
    O_TRACE,
    O_PROFILE,
    O_PROFJSON,
    O_PRINT,
    O_SAVE,
    O_SAVEEVERY,
    O_RESUME,
    O_EXPORT,
    O_EXPDT,
    O_THREADS,
    O_PEAK,
    O_PEAKT,
    O_DEVICE,
    O_CDT,
    O_ATTN,
    O_RANKS,
    O_OFFLOAD,
    O_OFFFRAC,
    O_PWIRE,
    O_RWIRE,
    O_WBLOCK,
    O_RESHARD,
    O_HELP
};

static const struct option long_opts[] = {
    {"config", 1, 0, O_CONFIG},
    {"hf", 1, 0, O_HF},
    {"vocab", 1, 0, O_VOCAB},
    {"data", 1, 0, O_DATA},
    {"train", 1, 0, O_TRAIN},
    {"val", 1, 0, O_VAL},
    {"batch", 1, 0, O_BATCH},
    {"seq", 1, 0, O_SEQ},
    {"accum", 1, 0, O_ACCUM},
    {"data-seed", 1, 0, O_DSEED},
    {"steps", 1, 0, O_STEPS},
    {"stop-at", 1, 0, O_STOP},
    {"lr", 1, 0, O_LR},
    {"min-lr", 1, 0, O_MINLR},
    {"warmup", 1, 0, O_WARMUP},
    {"weight-decay", 1, 0, O_WD},
    {"beta1", 1, 0, O_B1},
    {"beta2", 1, 0, O_B2},
    {"clip", 1, 0, O_CLIP},
    {"param-dtype", 1, 0, O_PDT},
    {"reduce-dtype", 1, 0, O_RDT},
    {"hsdp", 1, 0, O_HSDP},
    {"recompute", 0, 0, O_RECOMP},
    {"head-rows", 1, 0, O_HEAD_ROWS},
    {"prefetch", 1, 0, O_PREFETCH},
    {"seed", 1, 0, O_SEED},
    {"val-every", 1, 0, O_VALEVERY},
    {"val-seqs", 1, 0, O_VALSEQ},
    {"log", 1, 0, O_LOG},
    {"trace", 1, 0, O_TRACE},
    {"profile", 0, 0, O_PROFILE},
    {"profile-json", 1, 0, O_PROFJSON},
    {"print-every", 1, 0, O_PRINT},
    {"save", 1, 0, O_SAVE},
    {"save-every", 1, 0, O_SAVEEVERY},
    {"resume", 1, 0, O_RESUME},
    {"export", 1, 0, O_EXPORT},
    {"export-dtype", 1, 0, O_EXPDT},
    {"threads", 1, 0, O_THREADS},
    {"peak-gflops", 1, 0, O_PEAK},
    {"peak-tflops", 1, 0, O_PEAKT},
    {"device", 1, 0, O_DEVICE},
    {"compute-dtype", 1, 0, O_CDT},
    {"attention", 1, 0, O_ATTN},
    {"ranks", 1, 0, O_RANKS},
    {"offload", 1, 0, O_OFFLOAD},
    {"offload-fraction", 1, 0, O_OFFFRAC},
    {"param-wire", 1, 0, O_PWIRE},
    {"reduce-wire", 1, 0, O_RWIRE},
    {"wire-block", 1, 0, O_WBLOCK},
    {"reshard-after-forward", 1, 0, O_RESHARD},
    {"help", 0, 0, O_HELP},
    {0, 0, 0, 0},
};

static int parse_int(const char *opt, const char *s, int min, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < min || v > (1L << 30)) {
        llama_err("--%s: '%s' is not an integer >= %d", opt, s, min);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_num(const char *opt, const char *s, double min, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *s == '\0' || *end != '\0' || !(v >= min)) {
        llama_err("--%s: '%s' is not a number >= %g", opt, s, min);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_dtype(const char *opt, const char *s, sharc_dtype_t *out)
{
    if (sharc_dtype_from_name(s, out) != SHARC_OK ||
        (*out != SHARC_DTYPE_F32 && *out != SHARC_DTYPE_BF16)) {
        llama_err("--%s: '%s' is not f32 or bf16", opt, s);
        return -1;
    }
    return 0;
}

static int parse_f32(const char *opt, const char *s, double min, float *out)
{
    double v;

    if (parse_num(opt, s, min, &v) != 0) {
        return -1;
    }
    *out = (float)v;
    return 0;
}

static int parse_device(const char *s, llama_device_t *out)
{
    if (strcmp(s, "cpu") != 0 && strcmp(s, "cuda") != 0) {
        llama_err("--device: '%s' is not cpu or cuda", s);
        return -1;
    }
    *out = strcmp(s, "cuda") == 0 ? LLAMA_DEVICE_CUDA : LLAMA_DEVICE_CPU;
    return 0;
}

static int parse_attention(const char *s, llama_attention_t *out)
{
    /* in llama_attention_t's order */
    static const char *const names[] = {"auto", "gemm", "flash", "cudnn"};

    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (llama_attention_t)i;
            return 0;
        }
    }
    llama_err("--attention: '%s' is not auto, cudnn, flash or gemm", s);
    return -1;
}

static int parse_offload(const char *s, sharc_shard_offload_t *out)
{
    static const char *const names[] = {"none", "host", "managed"};

    for (int i = 0; i < 3; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (sharc_shard_offload_t)i;
            return 0;
        }
    }
    llama_err("--offload: '%s' is not none, host or managed", s);
    return -1;
}

static int parse_wire(const char *opt, const char *s, sharc_wire_t *out)
{
    if (sharc_wire_from_name(s, out) != SHARC_OK) {
        llama_err("--%s: '%s' is not full, int8 or fp8", opt, s);
        return -1;
    }
    return 0;
}

static int parse_reshard(const char *s, llama_reshard_t *out)
{
    static const char *const names[] = {
        [LLAMA_RESHARD_YES] = "yes", [LLAMA_RESHARD_NO] = "no", [LLAMA_RESHARD_NODE] = "node"};

    for (int i = LLAMA_RESHARD_YES; i <= LLAMA_RESHARD_NODE; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (llama_reshard_t)i;
            return 0;
        }
    }
    llama_err("--reshard-after-forward: '%s' is not yes, no or node", s);
    return -1;
}

static int parse_prefetch(const char *opt, const char *s, int *out)
{
    if (strcmp(s, "auto") == 0) {
        *out = SHARC_SHARD_PREFETCH_AUTO;
        return 0;
    }
    return parse_int(opt, s, 1, out);
}

static int parse_seed(const char *opt, const char *s, uint64_t *out)
{
    int v;

    if (parse_int(opt, s, 0, &v) != 0) {
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

static void opts_defaults(llama_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->config = "15m";
    o->run.batch = 8;
    o->run.reduce_dtype = SHARC_DTYPE_F32;
    o->run.param_dtype = o->run.compute_dtype = SHARC_DTYPE_LAST; /* defaults follow --device */
    o->accum = 1;
    o->steps = 100;
    o->optim = (llama_optim_cfg_t){.lr = 1e-3f,
                                   .min_lr = 1e-4f,
                                   .warmup = 10,
                                   .beta1 = 0.9f,
                                   .beta2 = 0.95f,
                                   .eps = 1e-8f,
                                   .weight_decay = 0.1f,
                                   .grad_clip = 1.0f};
    o->val_every = 50;
    o->val_seqs = 64;
    o->print_every = 1;
    o->seed = 1;
    o->data_seed = 1234;
    o->export_dtype = SHARC_DTYPE_F32;
}

/* One option @p c, called @p name, with its value @p arg: 0, 1 for --help, -1 (said why). */
static int parse_one(llama_opts_t *o, int c, const char *name, const char *arg, int *ranks)
{
    switch (c) {
    case O_CONFIG: o->config = arg; return 0;
    case O_HF: o->hf = arg; return 0;
    case O_DATA: o->data_dir = arg; return 0;
    case O_TRAIN: o->train_path = arg; return 0;
    case O_VAL: o->val_path = arg; return 0;
    case O_LOG: o->log_path = arg; return 0;
    case O_TRACE: o->trace_path = arg; return 0;
    case O_PROFILE: o->profile = 1; return 0;
    case O_PROFJSON:
        o->profile = 1;
        o->profile_json = arg;
        return 0;
    case O_SAVE: o->save_dir = arg; return 0;
    case O_RESUME: o->resume_dir = arg; return 0;
    case O_EXPORT: o->export_dir = arg; return 0;
    case O_RECOMP: o->run.recompute = 1; return 0;
    case O_HEAD_ROWS: return parse_int(name, arg, 1, &o->run.head_rows);
    case O_VOCAB: return parse_int(name, arg, 2, &o->vocab);
    case O_BATCH: return parse_int(name, arg, 1, &o->run.batch);
    case O_SEQ: return parse_int(name, arg, 1, &o->run.seq);
    case O_ACCUM: return parse_int(name, arg, 1, &o->accum);
    case O_STEPS: return parse_int(name, arg, 0, &o->steps);
    case O_STOP: return parse_int(name, arg, 1, &o->stop_at);
    case O_WARMUP: return parse_int(name, arg, 0, &o->optim.warmup);
    case O_HSDP: return parse_int(name, arg, 1, &o->run.shard_size);
    case O_PREFETCH: return parse_prefetch(name, arg, &o->run.prefetch);
    case O_VALEVERY: return parse_int(name, arg, 0, &o->val_every);
    case O_VALSEQ: return parse_int(name, arg, 0, &o->val_seqs);
    case O_PRINT: return parse_int(name, arg, 1, &o->print_every);
    case O_SAVEEVERY: return parse_int(name, arg, 1, &o->save_every);
    case O_THREADS: return parse_int(name, arg, 1, &o->threads);
    case O_RANKS: return parse_int(name, arg, 1, ranks);
    case O_SEED: return parse_seed(name, arg, &o->seed);
    case O_DSEED: return parse_seed(name, arg, &o->data_seed);
    case O_LR: return parse_f32(name, arg, 0, &o->optim.lr);
    case O_MINLR: return parse_f32(name, arg, 0, &o->optim.min_lr);
    case O_WD: return parse_f32(name, arg, 0, &o->optim.weight_decay);
    case O_B1: return parse_f32(name, arg, 0, &o->optim.beta1);
    case O_B2: return parse_f32(name, arg, 0, &o->optim.beta2);
    case O_CLIP: return parse_f32(name, arg, 0, &o->optim.grad_clip);
    case O_PEAK: return parse_num(name, arg, 0, &o->peak_gflops);
    case O_PEAKT:
        if (parse_num(name, arg, 0, &o->peak_gflops) != 0) {
            return -1;
        }
        o->peak_gflops *= 1e3;
        return 0;
    case O_DEVICE: return parse_device(arg, &o->run.device);
    case O_CDT: return parse_dtype(name, arg, &o->run.compute_dtype);
    case O_ATTN: return parse_attention(arg, &o->run.attention);
    case O_OFFLOAD: return parse_offload(arg, &o->run.offload);
    case O_OFFFRAC: return parse_num(name, arg, 0, &o->run.offload_fraction);
    case O_PDT: return parse_dtype(name, arg, &o->run.param_dtype);
    case O_RDT: return parse_dtype(name, arg, &o->run.reduce_dtype);
    case O_EXPDT: return parse_dtype(name, arg, &o->export_dtype);
    case O_PWIRE: return parse_wire(name, arg, &o->run.param_wire);
    case O_RWIRE: return parse_wire(name, arg, &o->run.reduce_wire);
    case O_WBLOCK: return parse_int(name, arg, 1, &o->run.wire_block);
    case O_RESHARD: return parse_reshard(arg, &o->run.reshard);
    case O_HELP:
    case 'h': return 1;
    default: llama_err("unknown option (see --help)"); return -1;
    }
}

/* What the options say together: dtypes that follow --device, the step to stop at. */
static int opts_finish(llama_opts_t *o)
{
    if (o->optim.beta1 >= 1.0f || o->optim.beta2 >= 1.0f) {
        llama_err("--beta1 and --beta2 must be below 1");
        return -1;
    }
    if (o->run.compute_dtype == SHARC_DTYPE_LAST) {
        o->run.compute_dtype =
            o->run.device == LLAMA_DEVICE_CUDA ? SHARC_DTYPE_BF16 : SHARC_DTYPE_F32;
    }
    if (o->run.compute_dtype != SHARC_DTYPE_F32 && o->run.device != LLAMA_DEVICE_CUDA) {
        llama_err("--compute-dtype %s needs --device cuda (the CPU computes in f32)",
                  sharc_dtype_name(o->run.compute_dtype));
        return -1;
    }
    if (o->run.param_dtype == SHARC_DTYPE_LAST) {
        o->run.param_dtype = o->run.compute_dtype;
    }
    /* before the GPU is looked for: a build that cannot have it says so first */
    if (o->run.attention == LLAMA_ATTENTION_CUDNN && llama_cuda_cudnn_missing() != NULL) {
        llama_err("--attention cudnn: %s", llama_cuda_cudnn_missing());
        return -1;
    }
    if (o->run.offload != SHARC_SHARD_OFFLOAD_NONE && o->run.device != LLAMA_DEVICE_CUDA) {
        llama_err("--offload needs --device cuda (on the CPU the state is in host memory)");
        return -1;
    }
    if (o->run.offload_fraction != 0 &&
        (o->run.offload == SHARC_SHARD_OFFLOAD_NONE || o->run.offload_fraction > 1)) {
        llama_err("--offload-fraction needs --offload host or managed, and a value in (0, 1]");
        return -1;
    }
    o->optim.steps = o->steps;
    if (o->stop_at == 0 || o->stop_at > o->steps) {
        o->stop_at = o->steps;
    }
    return 0;
}

int llama_opts_parse(int argc, char **argv, llama_opts_t *o, int *ranks)
{
    int c, rc;

    opts_defaults(o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        const char *name = "?";
        for (const struct option *lo = long_opts; lo->name != NULL; lo++) {
            name = lo->val == c ? lo->name : name;
        }
        rc = parse_one(o, c, name, optarg, ranks);
        if (rc != 0) {
            return rc;
        }
    }
    if (optind < argc) {
        llama_err("unexpected argument '%s' (see --help)", argv[optind]);
        return -1;
    }
    return opts_finish(o);
}
