/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_hf_config.c: libFuzzer harness for the trainer's reader of a Hugging Face config.json
 * (llama_config_load_hf, trainer/model/config.c), then its check of the shape it read and
 * the size and cost of a shape it took. Any bytes must be taken or refused with a status:
 * never a fault, an overflow or a leak.
 * SHARC_FUZZ_SEEDS=<dir> writes seeds there (the shapes the trainer names, saved as
 * config.json) and exits. Built by tools/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "model/llama.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_path[] = "/tmp/fuzz_hf_config.XXXXXX";

static void fz_write_seeds(const char *dir)
{
    static const char *const names[] = {"tiny", "15m", "110m", "1b", "llama2-7b", "llama3-8b"};
    char path[4096];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        llama_config_t c;

        if (llama_config_named(names[i], &c) != SHARC_OK) {
            continue; /* (a name this trainer does not have) */
        }
        snprintf(path, sizeof(path), "%s/%s.json", dir, names[i]);
        if (llama_config_save_hf(&c, path) != SHARC_OK) {
            abort();
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init(fz_write_seeds, fz_path, 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llama_config_t c;

    fz_put(fz_path, data, size);
    memset(&c, 0, sizeof(c));
    if (llama_config_load_hf(fz_path, &c) == SHARC_OK && llama_config_check(&c) == SHARC_OK) {
        /* what the trainer then asks of a shape it took: its size must not have wrapped */
        double C = c.dim, hd = c.head_dim;
        double params = c.n_layers * (C * hd * (c.n_heads + c.n_kv_heads) * 2 +
                                      3 * C * c.hidden_dim + 2 * C) +
                        C + 2.0 * c.vocab * C;
        volatile double flops = llama_config_flops_per_token(&c, 4096);

        (void)flops;
        if ((double)llama_config_params(&c) < params * 0.999 ||
            (double)llama_config_params(&c) > params * 1.001) {
            fprintf(stderr, "fuzz_hf_config: %zu parameters taken for %.6g\n",
                    llama_config_params(&c), params);
            abort();
        }
    }
    return 0;
}
