/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_layout.c: the shard math on its own (internal API): for units of every size up
 * to a few hundred elements and some large and odd ones, on 1..8 ranks, every element is
 * owned by exactly one rank, shards are aligned and equal, padding stays under one aligned
 * block per rank, and parameters sit aligned, in order, without overlap. Also the automatic
 * packing by bucket size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard/engine/shard_engine.h"
#include "../check.h"

static void check_count(size_t count, int n)
{
    size_t shard = sharc_shard_count(count, n), padded = shard * (size_t)n;
    size_t owned = 0;

    CHECK_MSG(shard % SHARC_SHARD_ALIGN == 0 && shard > 0, "count %zu, %d ranks", count, n);
    CHECK_MSG(padded >= count && padded - count < (size_t)n * SHARC_SHARD_ALIGN,
              "count %zu, %d ranks: padded to %zu", count, n, padded);
    /* rank r owns [r * shard, (r + 1) * shard): the real elements each rank holds add up */
    for (int r = 0; r < n; r++) {
        size_t lo = (size_t)r * shard, hi = lo + shard;
        owned += (lo < count) ? ((hi < count ? hi : count) - lo) : 0;
    }
    CHECK_MSG(owned == count, "count %zu, %d ranks: %zu elements owned", count, n, owned);
    /* the smallest shard that is aligned and covers the unit */
    CHECK(shard == SHARC_SHARD_ALIGN || (shard - SHARC_SHARD_ALIGN) * (size_t)n < count);
}

static void check_layout(void)
{
    static const size_t counts[] = {5, 1, 16, 17, 4097, 3, 1000000 + 3};
    sharc_shard_param_t in[7];
    char names[7][8];
    sharc_shard_param_info_t *params = NULL;
    sharc_shard_unit_t *units = NULL;
    int nunits = 0;

    for (int i = 0; i < 7; i++) {
        snprintf(names[i], sizeof(names[i]), "p%d", i);
        in[i] = (sharc_shard_param_t){.name = names[i], .count = counts[i], .unit = i < 3 ? 0 : 1};
    }
    for (int n = 1; n <= 8; n++) {
        CHECK(sharc_shard_layout(in, 7, 2, 0, 4, n, &params, &units, &nunits) == SHARC_OK);
        CHECK(nunits == 2 && units[0].nparams == 3 && units[1].first_param == 3);
        for (int i = 0; i < 7; i++) {
            const sharc_shard_param_info_t *p = &params[i];
            CHECK(p->offset % SHARC_SHARD_ALIGN == 0 && p->count == counts[i]);
            CHECK(i == 0 || i == 3 || p->offset >= params[i - 1].offset + params[i - 1].count);
            CHECK(strcmp(p->name, names[i]) == 0);
        }
        CHECK(units[0].count == 32 + 16 && units[1].count == params[6].offset + counts[6]);
        for (int u = 0; u < nunits; u++) {
            CHECK(units[u].shard == sharc_shard_count(units[u].count, n));
            CHECK(units[u].padded == units[u].shard * (size_t)n);
        }
        sharc_shard_layout_free(params, 7);
        free(units);
    }
    /* automatic packing: 64 KiB buckets of f32 (16384 elements) */
    for (int i = 0; i < 7; i++) {
        in[i].unit = SHARC_SHARD_UNIT_AUTO;
    }
    CHECK(sharc_shard_layout(in, 7, 0, 65536, 4, 3, &params, &units, &nunits) == SHARC_OK);
    /* p0..p5 fit one bucket (aligned: 16+16+16+32+4112+16 elements); p6 alone */
    CHECK_MSG(nunits == 2 && units[0].nparams == 6 && units[1].nparams == 1, "%d units", nunits);
    sharc_shard_layout_free(params, 7);
    free(units);
}

int main(void)
{
    for (int n = 1; n <= 8; n++) {
        for (size_t count = 1; count <= 400; count++) {
            check_count(count, n);
        }
        check_count(1u << 20, n);
        check_count((1u << 20) + 3, n);
        check_count(7919 * 13, n);
    }
    check_layout();
    return check_result("test_shard_layout");
}
