/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/main.c: sharc-llama, the reference FSDP Llama trainer. `sharc-llama train`
 * trains a named config (or a Hugging Face checkpoint) on token files with every rank of the
 * job, the model sharded by sharc's shard engine; `configs` lists the named configs and
 * `flops` accounts FLOPs and memory for one. Launch it with mpirun, torchrun-style variables or
 * srun like any sharc program. --device cuda computes on the GPU of each rank's local rank.
 * Here: the commands, and the sharc context a training run gets (the run itself: train.c).
 */
#include "opts.h"
#include "train.h"
#include "../ops/ops_cuda.h"
#include "../util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- flops: accounting for configs too big to train here ---------------------------------- */

static int cmd_flops(int argc, char **argv)
{
    llama_opts_t o;
    llama_config_t cfg;
    int ranks = 8, rc = llama_opts_parse(argc, argv, &o, &ranks);

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
    /* f32 activations kept per block by model/step.c without recomputation, per token */
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
    printf("  --offload host|managed: those in host memory, and on the GPU the param-dtype "
           "shard the gathers send: %.2f GiB bf16 (2 B / parameter / rank)\n",
           2.0 * P / ranks / gib);
    printf("  one gathered block: %.2f GiB bf16 params + %.2f GiB f32 grads; f32 activations "
           "%.2f GiB per block (%.2f GiB all blocks, %.2f GiB with --recompute; half in bf16)\n",
           2 * block / gib, 4 * block / gib, 4 * act * B * T / gib,
           4 * act * B * T * cfg.n_layers / gib,
           4 * (act * B * T + C * B * T * cfg.n_layers) / gib);
    /* bf16 on CUDA with the tiled or cuDNN's attention: no (H, T) probabilities per token, a
     * float of log-sum-exp per head instead */
    double tiled = 2 * (act - (double)cfg.n_heads * T) + 4.0 * cfg.n_heads;
    printf("  --device cuda, bf16, tiled or cuDNN attention: activations %.2f GiB per block "
           "(%.2f GiB all blocks, %.2f GiB with --recompute)\n",
           tiled * B * T / gib, tiled * B * T * cfg.n_layers / gib,
           (tiled * B * T + 2 * C * B * T * cfg.n_layers) / gib);
    return 0;
}

/* ---- train ---------------------------------------------------------------------------------- */

static int cmd_train(int argc, char **argv)
{
    llama_opts_t o;
    int ranks = 0, rc = llama_opts_parse(argc, argv, &o, &ranks);
    sharc_config_h config = NULL;
    sharc_context_h ctx = NULL;
    sharc_comm_h comm = NULL;

    if (rc != 0) {
        if (rc > 0) {
            llama_usage(stdout);
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
    rc = llama_train(&o, comm);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        llama_usage(argc < 2 ? stderr : stdout);
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
