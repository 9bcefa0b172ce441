/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_offload_ckpt.c: test_shard_offload's ckpt: a checkpoint saved with offload host
 * loads into a group without offload and the reverse, bit for bit, and the two go on alike.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>

#include "test_shard_offload.h"

void test_ckpt(const char *dir)
{
    config_t host = {
        "host", SHARC_SHARD_OFFLOAD_HOST, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, 0, 0, 0, 0};
    config_t none = host;
    char a[4096], b[4096];
    sharc_shard_group_h gh, gn;
    float *sh[NUNITS][3], *sn[NUNITS][3], norm;
    size_t n[NUNITS];
    uint64_t step = 0;

    none.name = "none";
    none.offload = SHARC_SHARD_OFFLOAD_NONE;
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    gh = make_group(&host);
    gn = make_group(&none);
    if (gh == NULL || gn == NULL) {
        return;
    }
    for (int t = 0; t < 3; t++) {
        CHECK(engine_step(gh, &host, t, &norm) == SHARC_OK);
    }
    CHECK(sharc_shard_save(gh, a, 3) == SHARC_OK);
    CHECK(sharc_shard_load(gn, a, &step) == SHARC_OK && step == 3);
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "saved with offload host, loaded without");
    free_shards(sh);
    free_shards(sn);
    for (int t = 3; t < 5; t++) { /* and they go on alike */
        CHECK(engine_step(gh, &host, t, &norm) == SHARC_OK);
        CHECK(engine_step(gn, &none, t, &norm) == SHARC_OK);
    }
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "two steps after the load");
    free_shards(sh);
    free_shards(sn);
    CHECK(engine_step(gn, &none, 5, &norm) == SHARC_OK);
    CHECK(sharc_shard_save(gn, b, 6) == SHARC_OK);
    CHECK(sharc_shard_load(gh, b, &step) == SHARC_OK && step == 6);
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "saved without offload, loaded with offload host");
    free_shards(sh);
    free_shards(sn);
    CHECK(engine_step(gh, &host, 6, &norm) == SHARC_OK); /* the load's masters went up */
    CHECK(engine_step(gn, &none, 6, &norm) == SHARC_OK);
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "a step after loading into offload host");
    free_shards(sh);
    free_shards(sn);
    sharc_shard_destroy(gh);
    sharc_shard_destroy(gn);
    if (me == 0) {
        printf("checkpoints: offload host -> none -> offload host, bit for bit\n");
    }
}
