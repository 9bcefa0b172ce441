/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tune.c: libFuzzer harness for the tune file (SHARC_TUNE_FILE), through the public
 * API: each input is written as the file a context is created with; when the context takes
 * it, a one-rank communicator runs a collective of each kind under its rules. Any text must
 * be taken or refused with a status naming the line: never a fault or a leak.
 * SHARC_FUZZ_SEEDS=<dir> writes seed files there and exits. Built against a clang build of
 * libsharc by tools/fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include <sharc/sharc.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_path[] = "/tmp/fuzz_tune.XXXXXX";

static void fz_write_seeds(const char *dir)
{
    static const char *const seeds[] = {
        "# sharc tune file v1\n# fingerprint 0123\n"
        "allgather       2      0          65535                 direct\n"
        "allgather       *      65536      1048575               ring\n"
        "reduce_scatter  *      0          18446744073709551615  ring\n"
        "allreduce       4      0          4096                  recursive_doubling\n"
        "broadcast       *      0          99                    binomial\n"
        "alltoall        *      100        200                   pairwise\n",
        "allreduce 1 0 10 ring\n\n   # a comment\nbroadcast 1 5 4 chain\n",
    };
    fz_put_seeds(dir, seeds, sizeof(seeds) / sizeof(seeds[0]), ".tune");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init(fz_write_seeds, fz_path, 0);
    return 0;
}

/* Every collective once on a one-rank communicator, under the file's rules. */
static void fz_run(sharc_context_h ctx)
{
    float x[64] = {0}, y[64];
    sharc_comm_h comm;

    if (sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        abort();
    }
    sharc_allgather(x, y, 64, SHARC_DTYPE_F32, comm, NULL);
    sharc_reduce_scatter(x, y, 64, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
    sharc_allreduce(x, y, 64, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
    sharc_broadcast(x, y, 64, SHARC_DTYPE_F32, 0, comm, NULL);
    sharc_alltoall(x, y, 64, SHARC_DTYPE_F32, comm, NULL);
    sharc_comm_destroy(comm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sharc_config_h config;
    sharc_context_h ctx;

    fz_put(fz_path, data, size);
    if (sharc_config_create(SHARC_CONFIG_NO_ENV, &config) != SHARC_OK ||
        sharc_config_set(config, "BOOTSTRAP", "single") != SHARC_OK ||
        sharc_config_set(config, "LOG_LEVEL", "error") != SHARC_OK ||
        sharc_config_set(config, "TUNE_FILE", fz_path) != SHARC_OK) {
        abort();
    }
    if (sharc_context_create(config, &ctx) == SHARC_OK) {
        fz_run(ctx);
        sharc_context_destroy(ctx);
    }
    sharc_config_destroy(config);
    return 0;
}
