/*
 * trainer/cli/train.c: sharc-llama, the reference FSDP Llama trainer. `sharc-llama train` trains a
 * named config (or a Hugging Face checkpoint) on token files with every rank of the job, the
 * model sharded by sharc's shard engine; `configs` lists the named configs and `flops`
 * accounts FLOPs and memory for one. Launch it with mpirun, torchrun-style variables or srun
 * like any sharc program. --device cuda computes on the GPU of each rank's local rank.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "../io/data.h"
#include "../model/llama.h"
#include "metrics.h"
#include "../io/jsonl.h"
#include "../ops/ops.h"
#include "../ops/ops_cuda.h"
#include "../model/optim.h"
#include "../util.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *config, *hf, *data_dir, *train_path, *val_path, *log_path, *trace_path;
    const char *save_dir, *resume_dir, *export_dir;
    llama_run_t run;
    llama_optim_cfg_t optim;
    int accum, steps, stop_at, val_every, val_seqs, save_every, threads, vocab, print_every;
    uint64_t seed, data_seed;
    double peak_gflops;
    sharc_dtype_t export_dtype;
} opts_t;

static void usage(FILE *f)
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
            "  --recompute          recompute each block's activations in backward\n"
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
            "  --attention A        flash (tiled, memory-efficient; cuda, bf16) or gemm (the\n"
            "                       probabilities materialized); default flash where it runs\n");
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
    O_PREFETCH,
    O_SEED,
    O_VALEVERY,
    O_VALSEQ,
    O_LOG,
    O_TRACE,
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
    {"prefetch", 1, 0, O_PREFETCH},
    {"seed", 1, 0, O_SEED},
    {"val-every", 1, 0, O_VALEVERY},
    {"val-seqs", 1, 0, O_VALSEQ},
    {"log", 1, 0, O_LOG},
    {"trace", 1, 0, O_TRACE},
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

/* 0: ok; 1: --help; -1: bad arguments (the message is out) */
static int parse_opts(int argc, char **argv, opts_t *o, int *ranks)
{
    int c, ival;
    double d;

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
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        const char *name = "?";
        for (const struct option *lo = long_opts; lo->name != NULL; lo++) {
            name = lo->val == c ? lo->name : name;
        }
        int bad = 0;
        switch (c) {
        case O_CONFIG: o->config = optarg; break;
        case O_HF: o->hf = optarg; break;
        case O_DATA: o->data_dir = optarg; break;
        case O_TRAIN: o->train_path = optarg; break;
        case O_VAL: o->val_path = optarg; break;
        case O_LOG: o->log_path = optarg; break;
        case O_TRACE: o->trace_path = optarg; break;
        case O_SAVE: o->save_dir = optarg; break;
        case O_RESUME: o->resume_dir = optarg; break;
        case O_EXPORT: o->export_dir = optarg; break;
        case O_RECOMP: o->run.recompute = 1; break;
        case O_VOCAB: bad = parse_int(name, optarg, 2, &o->vocab); break;
        case O_BATCH: bad = parse_int(name, optarg, 1, &o->run.batch); break;
        case O_SEQ: bad = parse_int(name, optarg, 1, &o->run.seq); break;
        case O_ACCUM: bad = parse_int(name, optarg, 1, &o->accum); break;
        case O_STEPS: bad = parse_int(name, optarg, 0, &o->steps); break;
        case O_STOP: bad = parse_int(name, optarg, 1, &o->stop_at); break;
        case O_WARMUP: bad = parse_int(name, optarg, 0, &o->optim.warmup); break;
        case O_HSDP: bad = parse_int(name, optarg, 1, &o->run.shard_size); break;
        case O_PREFETCH:
            if (strcmp(optarg, "auto") == 0) {
                o->run.prefetch = SHARC_SHARD_PREFETCH_AUTO;
            } else {
                bad = parse_int(name, optarg, 1, &o->run.prefetch);
            }
            break;
        case O_VALEVERY: bad = parse_int(name, optarg, 0, &o->val_every); break;
        case O_VALSEQ: bad = parse_int(name, optarg, 0, &o->val_seqs); break;
        case O_PRINT: bad = parse_int(name, optarg, 1, &o->print_every); break;
        case O_SAVEEVERY: bad = parse_int(name, optarg, 1, &o->save_every); break;
        case O_THREADS: bad = parse_int(name, optarg, 1, &o->threads); break;
        case O_RANKS: bad = parse_int(name, optarg, 1, ranks); break;
        case O_SEED:
        case O_DSEED:
            bad = parse_int(name, optarg, 0, &ival);
            *(c == O_SEED ? &o->seed : &o->data_seed) = (uint64_t)ival;
            break;
        case O_LR:
            bad = parse_num(name, optarg, 0, &d);
            o->optim.lr = (float)d;
            break;
        case O_MINLR:
            bad = parse_num(name, optarg, 0, &d);
            o->optim.min_lr = (float)d;
            break;
        case O_WD:
            bad = parse_num(name, optarg, 0, &d);
            o->optim.weight_decay = (float)d;
            break;
        case O_B1:
            bad = parse_num(name, optarg, 0, &d);
            o->optim.beta1 = (float)d;
            break;
        case O_B2:
            bad = parse_num(name, optarg, 0, &d);
            o->optim.beta2 = (float)d;
            break;
        case O_CLIP:
            bad = parse_num(name, optarg, 0, &d);
            o->optim.grad_clip = (float)d;
            break;
        case O_PEAK: bad = parse_num(name, optarg, 0, &o->peak_gflops); break;
        case O_PEAKT:
            bad = parse_num(name, optarg, 0, &d);
            o->peak_gflops = d * 1e3;
            break;
        case O_DEVICE:
            bad = strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0;
            o->run.device = strcmp(optarg, "cuda") == 0 ? LLAMA_DEVICE_CUDA : LLAMA_DEVICE_CPU;
            if (bad) {
                llama_err("--device: '%s' is not cpu or cuda", optarg);
            }
            break;
        case O_CDT: bad = parse_dtype(name, optarg, &o->run.compute_dtype); break;
        case O_ATTN:
            bad = strcmp(optarg, "auto") != 0 && strcmp(optarg, "gemm") != 0 &&
                  strcmp(optarg, "flash") != 0;
            o->run.attention = strcmp(optarg, "gemm") == 0    ? LLAMA_ATTENTION_GEMM
                               : strcmp(optarg, "flash") == 0 ? LLAMA_ATTENTION_FLASH
                                                              : LLAMA_ATTENTION_AUTO;
            if (bad) {
                llama_err("--attention: '%s' is not auto, flash or gemm", optarg);
            }
            break;
        case O_PDT: bad = parse_dtype(name, optarg, &o->run.param_dtype); break;
        case O_RDT: bad = parse_dtype(name, optarg, &o->run.reduce_dtype); break;
        case O_EXPDT: bad = parse_dtype(name, optarg, &o->export_dtype); break;
        case O_HELP:
        case 'h': return 1;
        default: llama_err("unknown option (see --help)"); return -1;
        }
        if (bad) {
            return -1;
        }
    }
    if (optind < argc) {
        llama_err("unexpected argument '%s' (see --help)", argv[optind]);
        return -1;
    }
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
    o->optim.steps = o->steps;
    if (o->stop_at == 0 || o->stop_at > o->steps) {
        o->stop_at = o->steps;
    }
    return 0;
}

/* ---- flops: accounting for configs too big to train here ---------------------------------- */

static int cmd_flops(int argc, char **argv)
{
    opts_t o;
    llama_config_t cfg;
    int ranks = 8, rc = parse_opts(argc, argv, &o, &ranks);

    if (rc != 0) {
        return rc > 0 ? 0 : 2;
    }
    if (llama_config_named(o.config, &cfg) != SHARC_OK) {
        return 2;
    }
    int T = o.run.seq ? o.run.seq : cfg.max_seq, B = o.run.batch;
    double P = (double)llama_config_params(&cfg), block = 0.0;
    double C = cfg.dim, F = cfg.hidden_dim, HD = (double)cfg.n_heads * cfg.head_dim;
    double KVD = (double)cfg.n_kv_heads * cfg.head_dim;
    block = 2 * C * HD + 2 * C * KVD + 3 * C * F + 2 * C;
    /* f32 activations kept per block by step.c without recomputation, per token */
    double act = 4 * C + 2 + 2 * HD + 2 * KVD + (double)cfg.n_heads * T + 3 * F;
    double gib = 1024.0 * 1024.0 * 1024.0;
    printf("config %s: %.3f B parameters (%.3f B without the embedding), seq %d\n", cfg.name,
           P / 1e9, (double)llama_config_params_nonembed(&cfg) / 1e9, T);
    printf("  training FLOPs per token: %.4g (6N + 12 L H hd T); per step of %d x %d per rank "
           "on %d ranks: %.4g\n",
           llama_config_flops_per_token(&cfg, T), B, T, ranks,
           llama_config_flops_per_token(&cfg, T) * B * T * ranks);
    printf("  per rank on %d ranks: masters + grads + AdamW moments %.2f GiB (16 B / parameter "
           "/ rank)\n",
           ranks, 16.0 * P / ranks / gib);
    printf("  one gathered block: %.2f GiB bf16 params + %.2f GiB f32 grads; f32 activations "
           "%.2f GiB per block (%.2f GiB all blocks, %.2f GiB with --recompute; half in bf16)\n",
           2 * block / gib, 4 * block / gib, 4 * act * B * T / gib,
           4 * act * B * T * cfg.n_layers / gib,
           4 * (act * B * T + C * B * T * cfg.n_layers) / gib);
    /* bf16 on CUDA with the tiled attention: no (H, T) probabilities per token, a float of
     * log-sum-exp per head instead */
    double tiled = 2 * (act - (double)cfg.n_heads * T) + 4.0 * cfg.n_heads;
    printf("  --device cuda, bf16, tiled attention: activations %.2f GiB per block (%.2f GiB all "
           "blocks, %.2f GiB with --recompute)\n",
           tiled * B * T / gib, tiled * B * T * cfg.n_layers / gib,
           (tiled * B * T + 2 * C * B * T * cfg.n_layers) / gib);
    return 0;
}

/* ---- train ---------------------------------------------------------------------------------- */

static int compute_threads(const opts_t *o, sharc_comm_h comm)
{
    cpu_set_t set;
    int cpus = 1;

    if (o->threads > 0) {
        return o->threads;
    }
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        cpus = CPU_COUNT(&set);
    }
    int per = cpus / sharc_comm_local_size(comm);
    return per > 0 ? per : 1;
}

static const char *path_in(char *buf, size_t len, const char *dir, const char *file)
{
    snprintf(buf, len, "%s/%s", dir, file);
    return buf;
}

/* every rank's status becomes the worst one, so all ranks leave together */
static sharc_status_t agree(sharc_comm_h comm, sharc_status_t status)
{
    int mine = (int)status, worst = 0;

    if (sharc_allreduce(&mine, &worst, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, comm, NULL) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    return (sharc_status_t)worst;
}

static sharc_status_t validate(llama_model_t *m, llama_data_t *val, const opts_t *o,
                               sharc_comm_h comm, int32_t *x, int32_t *y, float *loss_p)
{
    int rank = sharc_comm_rank(comm), world = sharc_comm_size(comm), B = o->run.batch;
    int batches = (o->val_seqs + world * B - 1) / (world * B); /* per rank */
    double sum = 0.0, total = 0.0;
    sharc_status_t status = SHARC_OK;

    /* sequences 0 .. batches * world * B - 1 of the validation file, rank-interleaved */
    for (int k = 0; k < batches && status == SHARC_OK; k++) {
        float loss;
        status = llama_data_batch(val, ((uint64_t)k * world + rank) * B, B, x, y);
        if (status == SHARC_OK) {
            status = llama_model_eval(m, x, y, &loss, NULL);
        }
        sum += loss;
    }
    status = agree(comm, status);
    if (status != SHARC_OK) {
        return status;
    }
    sum /= batches;
    status = sharc_allreduce(&sum, &total, 1, SHARC_DTYPE_F64, SHARC_OP_AVG, comm, NULL);
    *loss_p = (float)total;
    return status;
}

typedef struct {
    double step_s, data_s, exposed_s, opt_s, tokens_per_s;
} step_time_t;

/* One training run, from its setup to its summary. */
typedef struct {
    const opts_t *o;
    sharc_comm_h comm;
    int rank, world, threads;
    llama_config_t cfg;
    llama_run_t run;
    llama_data_t *train_data, *val_data;
    llama_model_t *model;
    sharc_shard_group_h sg; /* the model's shard group */
    llama_optim_t *optim;
    llama_jsonl_t *log; /* rank 0's JSON lines, or NULL */
    int32_t *x, *y;     /* (B, T) token ids and their targets */
    size_t N;           /* tokens of one micro-batch on one rank: B * T */
    step_time_t *times; /* [steps] */
    int nsteps;
    uint64_t start_step;
    double peak; /* FLOP/s per rank, for MFU */
    char peak_what[320];
    double fpt;          /* FLOPs per token of a training step */
    double dev_peak_mib; /* most device memory in use at a step's end (GPU) */
    float val_loss;
    double final_loss; /* the last step's loss, averaged over the ranks */
} train_t;

/*
 * The model's shape (named, or the checkpoint's config.json) and the data: a named config
 * takes its vocabulary from the data (or --vocab). 0, or 2 for a usage error (no config, no
 * data), or 1.
 */
static int train_open(train_t *t)
{
    const opts_t *o = t->o;
    const char *train_path = o->train_path, *val_path = o->val_path;
    char pbuf[4096], tbuf[4096], vbuf[4096];
    sharc_status_t status;

    status = o->hf
                 ? llama_config_load_hf(path_in(pbuf, sizeof(pbuf), o->hf, "config.json"), &t->cfg)
                 : llama_config_named(o->config, &t->cfg);
    if (status != SHARC_OK) {
        return 2;
    }
    if (t->run.seq == 0) {
        t->run.seq = t->cfg.max_seq < 256 ? t->cfg.max_seq : 256;
    }
    if (o->data_dir != NULL) {
        train_path =
            train_path ? train_path : path_in(tbuf, sizeof(tbuf), o->data_dir, "train.bin");
        val_path = val_path ? val_path : path_in(vbuf, sizeof(vbuf), o->data_dir, "val.bin");
    }
    if (train_path == NULL) {
        llama_err("no training data: give --data DIR or --train FILE");
        return 2;
    }
    status = llama_data_open(train_path, 0, t->run.seq, o->data_seed, &t->train_data);
    if (status != SHARC_OK) {
        return 2;
    }
    if (o->hf == NULL) {
        if (o->vocab > 0) {
            t->cfg.vocab = o->vocab;
        } else if (llama_data_vocab(t->train_data) > 0) {
            t->cfg.vocab = (int)llama_data_vocab(t->train_data);
        }
    }
    llama_data_close(t->train_data);
    t->train_data = NULL;
    status = llama_data_open(train_path, (uint32_t)t->cfg.vocab, t->run.seq, o->data_seed,
                             &t->train_data);
    if (status == SHARC_OK && val_path != NULL && o->val_seqs > 0) {
        status = llama_data_open(val_path, (uint32_t)t->cfg.vocab, t->run.seq, o->data_seed + 1,
                                 &t->val_data);
    }
    return (status == SHARC_OK) ? 0 : 1;
}

/* Compute threads, buffers, the model (resumed from a checkpoint if asked), the optimizer
 * and rank 0's log; every rank agrees on the outcome. */
static sharc_status_t train_setup(train_t *t)
{
    const opts_t *o = t->o;
    sharc_status_t status;

    t->threads = compute_threads(o, t->comm);
    llama_ops_cpu.set_threads(t->threads);
    t->fpt = llama_config_flops_per_token(&t->cfg, t->run.seq);
    t->N = (size_t)t->run.batch * t->run.seq;
    t->x = malloc(t->N * sizeof(*t->x));
    t->y = malloc(t->N * sizeof(*t->y));
    t->times = calloc((size_t)o->steps + 1, sizeof(*t->times));
    if (t->x == NULL || t->y == NULL || t->times == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status =
        llama_model_create(t->comm, &t->cfg, &t->run, o->hf ? LLAMA_INIT_HF : LLAMA_INIT_RANDOM,
                           o->hf, o->seed, &t->model);
    if (status != SHARC_OK) {
        return status;
    }
    t->sg = llama_model_group(t->model);
    snprintf(t->peak_what, sizeof(t->peak_what), "--peak-gflops");
    t->peak = o->peak_gflops > 0
                  ? o->peak_gflops * 1e9
                  : llama_peak_flops(llama_model_ops(t->model), t->peak_what, sizeof(t->peak_what));
    status = llama_optim_create(t->model, &o->optim, &t->optim);
    if (status == SHARC_OK && o->resume_dir != NULL) {
        status = sharc_shard_load(t->sg, o->resume_dir, &t->start_step);
        if (status != SHARC_OK) {
            llama_err("cannot resume from %s (see the messages above)", o->resume_dir);
        }
    }
    if (status == SHARC_OK && t->rank == 0) {
        status = llama_jsonl_open(o->log_path, &t->log);
    }
    return agree(t->comm, status);
}

static void train_log_start(const train_t *t)
{
    const opts_t *o = t->o;
    const llama_config_t *cfg = &t->cfg;
    const llama_run_t *run = &t->run;

    llama_info("sharc-llama: %s, %.2fM params, %d ranks x batch %d x seq %d x accum %d = %zu "
               "tokens/step; params %s, reduce %s%s%s",
               cfg->name, (double)llama_config_params(cfg) / 1e6, t->world, run->batch, run->seq,
               o->accum, t->N * o->accum * t->world, sharc_dtype_name(run->param_dtype),
               sharc_dtype_name(run->reduce_dtype), run->recompute ? ", recompute" : "",
               run->shard_size > 0 ? ", HSDP" : "");
    if (run->device == LLAMA_DEVICE_CUDA) {
        llama_info("compute: cuda (%s), %s; MFU against %.1f TFLOP/s/rank (%s)",
                   llama_model_ops(t->model)->name, sharc_dtype_name(run->compute_dtype),
                   t->peak / 1e12, t->peak_what);
    } else {
        llama_info("compute: cpu, f32, %d thread(s)/rank; MFU against %.1f GFLOP/s/rank (%s)",
                   t->threads, t->peak / 1e9, t->peak_what);
    }
    if (t->start_step > 0) {
        llama_info("resumed from %s at step %llu", o->resume_dir,
                   (unsigned long long)t->start_step);
    }
    llama_jsonl_begin(t->log, "start");
    llama_jsonl_num(t->log, "params", (double)llama_config_params(cfg));
    llama_jsonl_int(t->log, "world", t->world);
    llama_jsonl_int(t->log, "batch", run->batch);
    llama_jsonl_int(t->log, "seq", run->seq);
    llama_jsonl_int(t->log, "accum", o->accum);
    llama_jsonl_int(t->log, "vocab", cfg->vocab);
    llama_jsonl_int(t->log, "threads", t->threads);
    llama_jsonl_str(t->log, "config", cfg->name);
    llama_jsonl_num(t->log, "gemm_peak_gflops", t->peak / 1e9);
    llama_jsonl_str(t->log, "device", run->device == LLAMA_DEVICE_CUDA ? "cuda" : "cpu");
    llama_jsonl_str(t->log, "compute_dtype", sharc_dtype_name(run->compute_dtype));
    llama_jsonl_str(t->log, "peak_source", t->peak_what);
    llama_jsonl_end(t->log);
}

/* The micro-batches of one step through the model, and the step's reductions; the
 * summed loss over them in *loss_sum_p (read once, after the last), the time spent reading
 * data in *data_s_p. */
static sharc_status_t train_forward_backward(train_t *t, int step, double *loss_sum_p,
                                             double *data_s_p)
{
    const opts_t *o = t->o;
    sharc_status_t status = SHARC_OK;
    float loss;

    for (int k = 0; k < o->accum && status == SHARC_OK; k++) {
        uint64_t micro = (uint64_t)step * o->accum + k;
        double td = llama_now();

        status = llama_data_batch(t->train_data, (micro * t->world + t->rank) * t->run.batch,
                                  t->run.batch, t->x, t->y);
        *data_s_p += llama_now() - td;
        if (status == SHARC_OK) {
            int last = k == o->accum - 1;
            status =
                llama_model_step(t->model, t->x, t->y, 1.0f / o->accum, last, last ? &loss : NULL);
            *loss_sum_p += last ? (double)loss * o->accum : 0.0;
        }
    }
    if (status == SHARC_OK) {
        status = sharc_shard_finish(t->sg);
    }
    return agree(t->comm, status);
}

/* The step's figures: a line every print_every steps and a JSON record every step. */
static void train_log_step(train_t *t, int step, const step_time_t *tm, double mean_loss, float lr,
                           float norm, double comm_s)
{
    const opts_t *o = t->o;
    double tps_rank = tm->tokens_per_s / t->world;
    double mfu = t->peak > 0 ? t->fpt * tps_rank / t->peak : 0;
    double compute_s = tm->step_s - tm->data_s - tm->exposed_s;
    double dev_mib = llama_device_mem_mib(llama_model_ops(t->model));

    t->dev_peak_mib = dev_mib > t->dev_peak_mib ? dev_mib : t->dev_peak_mib;
    if ((step + 1) % o->print_every == 0 || step == (int)t->start_step || step + 1 == o->steps) {
        llama_info("step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s (%.0f/rank) | "
                   "mfu %.1f%% | %.3f s: compute %.3f, exposed comm %.3f, data %.3f",
                   step + 1, o->steps, mean_loss, lr, norm, tm->tokens_per_s, tps_rank, 100.0 * mfu,
                   tm->step_s, compute_s, tm->exposed_s, tm->data_s);
    }
    llama_jsonl_begin(t->log, "step");
    llama_jsonl_int(t->log, "step", step + 1);
    llama_jsonl_num(t->log, "loss", mean_loss);
    llama_jsonl_num(t->log, "lr", (double)lr);
    llama_jsonl_num(t->log, "grad_norm", (double)norm);
    llama_jsonl_num(t->log, "tokens_per_s", tm->tokens_per_s);
    llama_jsonl_num(t->log, "tokens_per_s_rank", tps_rank);
    llama_jsonl_num(t->log, "mfu", mfu);
    llama_jsonl_num(t->log, "step_s", tm->step_s);
    llama_jsonl_num(t->log, "compute_s", compute_s);
    llama_jsonl_num(t->log, "comm_exposed_s", tm->exposed_s);
    llama_jsonl_num(t->log, "comm_s", comm_s);
    llama_jsonl_num(t->log, "data_s", tm->data_s);
    llama_jsonl_num(t->log, "optim_s", tm->opt_s);
    llama_jsonl_num(t->log, "peak_rss_mib", llama_peak_rss_mib());
    if (t->run.device == LLAMA_DEVICE_CUDA) {
        llama_jsonl_num(t->log, "gpu_mem_mib", dev_mib);
    }
    llama_jsonl_end(t->log);
}

/* After step @p step: validation and a checkpoint, when they are due. */
static sharc_status_t train_after_step(train_t *t, int step)
{
    const opts_t *o = t->o;
    int last = step + 1 == o->stop_at;
    sharc_status_t status;

    if (t->val_data != NULL && ((o->val_every > 0 && (step + 1) % o->val_every == 0) || last)) {
        status = validate(t->model, t->val_data, o, t->comm, t->x, t->y, &t->val_loss);
        if (status != SHARC_OK) {
            return status;
        }
        llama_info("step %5d/%d | val loss %.4f", step + 1, o->steps, t->val_loss);
        llama_jsonl_begin(t->log, "val");
        llama_jsonl_int(t->log, "step", step + 1);
        llama_jsonl_num(t->log, "val_loss", (double)t->val_loss);
        llama_jsonl_end(t->log);
    }
    if (o->save_dir != NULL && ((o->save_every > 0 && (step + 1) % o->save_every == 0) || last)) {
        status = sharc_shard_save(t->sg, o->save_dir, (uint64_t)step + 1);
        if (status != SHARC_OK) {
            llama_err("checkpoint at step %d into %s failed", step + 1, o->save_dir);
            return status;
        }
        llama_info("step %5d/%d | saved %s", step + 1, o->steps, o->save_dir);
    }
    return SHARC_OK;
}

/* One training step: forward and backward of its micro-batches, the optimizer, the figures,
 * and what is due after it. */
static sharc_status_t train_step(train_t *t, int step)
{
    const opts_t *o = t->o;
    double t0 = llama_now(), data_s = 0.0, loss_sum = 0.0, mean_loss = 0.0, local_loss;
    sharc_shard_stats_t st;
    sharc_status_t status;
    float norm, lr;

    status = train_forward_backward(t, step, &loss_sum, &data_s);
    if (status != SHARC_OK) {
        llama_err("step %d failed: %s", step, sharc_status_string(status));
        return status;
    }
    double to = llama_now();
    status = llama_optim_step(t->optim, step, &norm, &lr);
    if (status == SHARC_OK) {
        status = sharc_shard_zero_grads(t->sg);
    }
    local_loss = loss_sum / o->accum;
    if (status == SHARC_OK) {
        status = sharc_allreduce(&local_loss, &mean_loss, 1, SHARC_DTYPE_F64, SHARC_OP_AVG, t->comm,
                                 NULL);
    }
    if (status != SHARC_OK) {
        llama_err("optimizer step %d failed: %s", step, sharc_status_string(status));
        return status;
    }
    double t1 = llama_now();
    step_time_t *tm = &t->times[t->nsteps++];

    sharc_shard_stats(t->sg, -1, &st);
    tm->step_s = t1 - t0;
    tm->data_s = data_s;
    tm->exposed_s = st.exposed_s;
    tm->opt_s = t1 - to;
    tm->tokens_per_s = (double)(t->N * o->accum * t->world) / tm->step_s;
    train_log_step(t, step, tm, mean_loss, lr, norm, st.comm_s);
    t->final_loss = mean_loss;
    return train_after_step(t, step);
}

/* Medians over the steps after the first two (schedule recording, warm caches). */
static sharc_status_t train_summary(train_t *t)
{
    int skip = t->nsteps > 4 ? 2 : 0, n = t->nsteps - skip, world = t->world;
    double *v = malloc(sizeof(double) * (size_t)n * 5), rss = llama_peak_rss_mib(), rss_max;
    double dev_max = 0.0;

    if (v == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        const step_time_t *tm = &t->times[skip + i];

        v[i] = tm->tokens_per_s;
        v[n + i] = tm->step_s;
        v[2 * n + i] = tm->exposed_s;
        v[3 * n + i] = tm->data_s;
        v[4 * n + i] = tm->exposed_s / tm->step_s;
    }
    double tps = llama_median(v, n), step_s = llama_median(v + n, n);
    double exposed = llama_median(v + 2 * n, n), data_s = llama_median(v + 3 * n, n);
    double share = llama_median(v + 4 * n, n);
    double mfu = t->peak > 0 ? t->fpt * tps / world / t->peak : 0;
    free(v);
    sharc_allreduce(&rss, &rss_max, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, t->comm, NULL);
    sharc_allreduce(&t->dev_peak_mib, &dev_max, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, t->comm, NULL);
    llama_info("summary: %d ranks | %.0f tok/s (%.0f/rank) | step %.3f s | exposed comm "
               "%.1f%% | mfu %.1f%% | peak rss %.0f MiB/rank | final loss %.4f",
               world, tps, tps / world, step_s, 100.0 * share, 100.0 * mfu, rss_max, t->final_loss);
    if (t->run.device == LLAMA_DEVICE_CUDA) {
        llama_info("summary: peak GPU memory %.0f MiB/rank (device memory in use at a step's end)",
                   dev_max);
    }
    if (t->val_loss >= 0) {
        llama_info("summary: val loss %.4f", (double)t->val_loss);
    }
    llama_jsonl_begin(t->log, "summary");
    llama_jsonl_int(t->log, "world", world);
    llama_jsonl_num(t->log, "tokens_per_s", tps);
    llama_jsonl_num(t->log, "tokens_per_s_rank", tps / world);
    llama_jsonl_num(t->log, "step_s", step_s);
    llama_jsonl_num(t->log, "comm_exposed_s", exposed);
    llama_jsonl_num(t->log, "comm_exposed_share", share);
    llama_jsonl_num(t->log, "data_s", data_s);
    llama_jsonl_num(t->log, "mfu", mfu);
    llama_jsonl_num(t->log, "gemm_peak_gflops", t->peak / 1e9);
    llama_jsonl_num(t->log, "peak_rss_mib", rss_max);
    if (t->run.device == LLAMA_DEVICE_CUDA) {
        llama_jsonl_num(t->log, "peak_gpu_mem_mib", dev_max);
    }
    llama_jsonl_num(t->log, "val_loss", (double)t->val_loss);
    llama_jsonl_int(t->log, "steps", t->nsteps);
    llama_jsonl_end(t->log);
    return SHARC_OK;
}

static void train_close(train_t *t)
{
    llama_jsonl_close(t->log);
    llama_optim_destroy(t->optim);
    llama_model_destroy(t->model);
    llama_data_close(t->train_data);
    llama_data_close(t->val_data);
    free(t->x);
    free(t->y);
    free(t->times);
}

/* The run: setup, the step loop, the export and the summary. 0, 1 (failed) or 2 (usage). */
static int train(const opts_t *o, sharc_comm_h comm)
{
    train_t t = {.o = o,
                 .comm = comm,
                 .rank = sharc_comm_rank(comm),
                 .world = sharc_comm_size(comm),
                 .run = o->run,
                 .val_loss = -1.0f};
    sharc_status_t status;
    int rc = train_open(&t);

    if (rc != 0) {
        train_close(&t);
        return rc;
    }
    status = train_setup(&t);
    if (status == SHARC_OK) {
        train_log_start(&t);
    }
    for (int step = (int)t.start_step; status == SHARC_OK && step < o->stop_at; step++) {
        status = train_step(&t, step);
    }
    if (status == SHARC_OK && o->export_dir != NULL) {
        status = llama_model_export(t.model, comm, o->export_dir, o->export_dtype);
        if (status == SHARC_OK) {
            llama_info("exported %s/model.safetensors and config.json", o->export_dir);
        }
    }
    if (status == SHARC_OK && t.nsteps > 0) {
        status = train_summary(&t);
    }
    train_close(&t);
    return (status == SHARC_OK) ? 0 : 1;
}

static int cmd_train(int argc, char **argv)
{
    opts_t o;
    int ranks = 0, rc = parse_opts(argc, argv, &o, &ranks);
    sharc_config_h config = NULL;
    sharc_context_h ctx = NULL;
    sharc_comm_h comm = NULL;

    if (rc != 0) {
        if (rc > 0) {
            usage(stdout);
        }
        return rc > 0 ? 0 : 2;
    }
    /* the GPU first: sharc opens NCCL on the current device when it makes the communicator */
    if (o.run.device == LLAMA_DEVICE_CUDA && llama_cuda_pick_device() != SHARC_OK) {
        return 1;
    }
    /* host overlap needs the progress thread; the user's SHARC_PROGRESS_THREAD wins */
    if (sharc_config_create(0, &config) != SHARC_OK ||
        (getenv("SHARC_PROGRESS_THREAD") == NULL &&
         sharc_config_set(config, "PROGRESS_THREAD", "yes") != SHARC_OK) ||
        (o.trace_path != NULL &&
         sharc_config_set(config, "SHARD_TRACE", o.trace_path) != SHARC_OK) ||
        sharc_context_create(config, &ctx) != SHARC_OK) {
        sharc_config_destroy(config);
        llama_err("cannot create the sharc context (see the log)");
        return 1;
    }
    sharc_config_destroy(config);
    if (sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        llama_err("cannot create the communicator (see the log)");
        sharc_context_destroy(ctx);
        return 1;
    }
    llama_log_rank = sharc_comm_rank(comm);
    rc = train(&o, comm);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "configs") == 0) {
        llama_config_list(stdout);
        return 0;
    }
    if (strcmp(argv[1], "flops") == 0) {
        return cmd_flops(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "train") == 0) {
        /* The loops between the BLAS calls run on OpenMP threads, which by default spin after
         * each loop and take the cores from BLAS's own threads (a 40% slower step, measured).
         * libgomp reads its wait policy when it loads, so ask for passive waiting by starting
         * once more with it set, unless the user chose one. */
        if (getenv("OMP_WAIT_POLICY") == NULL && setenv("OMP_WAIT_POLICY", "passive", 1) == 0) {
            execv("/proc/self/exe", argv);
            /* not possible here: go on with spinning threads */
        }
        return cmd_train(argc - 1, argv + 1);
    }
    llama_err("unknown command '%s' (train, configs, flops; see --help)", argv[1]);
    return 2;
}
