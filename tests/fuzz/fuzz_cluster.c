/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_cluster.c: libFuzzer harness for what `sharc-perf predict` reads from files: each
 * input is a cluster file (key = value lines) and a sharc-topo --json capture that names a
 * cluster, and a model's Hugging Face config.json (perf/predict/predict_input.c), whose size
 * and cost are then asked. Any bytes must be taken or refused with a message: never a fault,
 * an overflow or a leak. SHARC_FUZZ_SEEDS=<dir>
 * writes seeds there and exits. Built by tools/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "predict/predict.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* (.json: the model reader takes a path by its suffix) */
static char fz_path[] = "/tmp/fuzz_cluster.XXXXXX.json";

static void fz_write_seeds(const char *dir)
{
    static const char *const seeds[] = {
        "# a cluster\npreset = p5\nnodes = 16\ngpus_per_node = 8\nnic_Gbps = 100\n"
        "nic_lat_us = 20\nintra_GBps = 360\nnics = 32\nnic_eff = 0.8\nmfu = 0.5\n",
        "preset = local\nnodes=2\n  queues = 1 # one thread\ncall_us = 10\nshared_cores = 1\n",
        "{\"gpus\": [{\"name\": \"H100\"}, {\"name\": \"H100\"}], \"intra\": \"nvswitch\","
        " \"nics\": [{\"ports\": [{\"active\": true, \"rate_gbps\": 400}]}]}",
        "{\"hidden_size\": 4096, \"num_hidden_layers\": 32, \"num_attention_heads\": 32,"
        " \"num_key_value_heads\": 8, \"intermediate_size\": 14336, \"vocab_size\": 128256}",
    };
    fz_put_seeds(dir, seeds, sizeof(seeds) / sizeof(seeds[0]), "");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init(fz_write_seeds, fz_path, 5);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pred_cluster_t c;
    pred_model_t m;

    fz_put(fz_path, data, size);
    memset(&c, 0, sizeof(c));
    (void)pred_cluster_load(fz_path, &c);
    memset(&c, 0, sizeof(c));
    (void)pred_cluster_from_topo(fz_path, &c);
    memset(&m, 0, sizeof(m));
    if (pred_model_load(fz_path, &m) == 0) { /* what predict then asks of the shape */
        volatile double use = (double)pred_model_params(&m) + pred_model_flops_per_token(&m, 4096);

        (void)use;
    }
    return 0;
}
