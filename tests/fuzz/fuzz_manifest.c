/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_manifest.c: libFuzzer harness for sharded checkpoints' metadata (sharc-shard.json),
 * through the public API: a one-rank shard group of two units saves a checkpoint once; then
 * each input replaces its metadata and sharc_shard_load reads it, with the real shard files
 * beside it (so a metadata file that passes goes on to their sizes, checksums and headers).
 * Any text must load or fail with a status: never a fault, a leak or a read outside its
 * files. SHARC_FUZZ_SEEDS=<dir> writes the saved metadata there as the seed and exits.
 * Built against a clang build of libsharc by tools/fuzz.sh.
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

static char fz_dir[] = "/tmp/fuzz_manifest.XXXXXX";
static sharc_shard_group_h fz_group;

static void fz_check(sharc_status_t status, const char *what)
{
    if (status != SHARC_OK) {
        fprintf(stderr, "fuzz_manifest: %s failed (%s)\n", what, sharc_status_string(status));
        abort();
    }
}

/* A one-rank group of two units (100 and 37 values), and a checkpoint of it in fz_dir. */
static void fz_setup(void)
{
    static float a[100], b[37];
    sharc_shard_param_t params[2] = {
        {.name = "a", .count = 100, .ndim = 2, .shape = {10, 10}, .unit = 0, .init = a},
        {.name = "b", .count = 37, .unit = 1, .init = b},
    };
    sharc_shard_params_t cfg = {.field_mask = SHARC_SHARD_PARAM_NUM_UNITS, .num_units = 2};
    sharc_config_h config;
    sharc_context_h ctx;
    sharc_comm_h comm;

    for (int i = 0; i < 100; i++) {
        a[i] = (float)i;
    }
    fz_check(sharc_config_create(SHARC_CONFIG_NO_ENV, &config), "config");
    fz_check(sharc_config_set(config, "BOOTSTRAP", "single"), "config");
    fz_check(sharc_config_set(config, "LOG_LEVEL", "error"), "config");
    fz_check(sharc_context_create(config, &ctx), "context");
    fz_check(sharc_comm_create(ctx, NULL, &comm), "communicator");
    fz_check(sharc_shard_create(comm, params, 2, &cfg, &fz_group), "group");
    if (mkdtemp(fz_dir) == NULL) {
        abort();
    }
    fz_check(sharc_shard_save(fz_group, fz_dir, 42), "save");
    sharc_config_destroy(config);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *seeds = getenv("SHARC_FUZZ_SEEDS");
    char cmd[8192];

    (void)argc;
    (void)argv;
    fz_setup();
    if (seeds != NULL && *seeds) {
        snprintf(cmd, sizeof(cmd), "cp %s/sharc-shard.json %s/saved.json", fz_dir, seeds);
        exit(system(cmd) == 0 ? 0 : 1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[4096];
    uint64_t step = 0;

    snprintf(path, sizeof(path), "%s/sharc-shard.json", fz_dir);
    fz_put(path, data, size);
    (void)sharc_shard_load(fz_group, fz_dir, &step); /* any status; never a fault */
    return 0;
}
