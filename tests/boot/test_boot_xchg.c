/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_boot_xchg.c: one rank of a multi-rank test of the bootstrap's exchanges (allgather,
 * alltoall, broadcast from every root, barrier) with payloads of 0 bytes to 1 MiB, checked
 * byte for byte, on the job's communicator and on a split one.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../../comm/comm.h"
#include "../check.h"

static unsigned char pattern(int src, int dst, size_t i)
{
    return (unsigned char)(src * 131 + dst * 31 + i * 7 + 1);
}

static void exchange(sharc_boot_t *boot)
{
    static const size_t sizes[] = {0, 1, 13, 4097, 1u << 20};
    int rank = boot->rank, n = boot->size;

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t len = sizes[s];
        unsigned char *send = malloc(len * (size_t)n + 1), *recv = malloc(len * (size_t)n + 1);

        /* allgather */
        for (size_t i = 0; i < len; i++) {
            send[i] = pattern(rank, 0, i);
        }
        memset(recv, 0xee, len * (size_t)n);
        CHECK(sharc_boot_allgather(boot, send, recv, len) == SHARC_OK);
        for (int r = 0; r < n; r++) {
            for (size_t i = 0; i < len; i++) {
                CHECK_MSG(recv[(size_t)r * len + i] == pattern(r, 0, i),
                          "allgather %zu bytes: rank %d byte %zu", len, r, i);
                if (recv[(size_t)r * len + i] != pattern(r, 0, i)) {
                    break;
                }
            }
        }
        /* alltoall: block d of my send goes to rank d */
        for (int d = 0; d < n; d++) {
            for (size_t i = 0; i < len; i++) {
                send[(size_t)d * len + i] = pattern(rank, d, i);
            }
        }
        CHECK(sharc_boot_alltoall(boot, send, recv, len) == SHARC_OK);
        for (int r = 0; r < n; r++) {
            for (size_t i = 0; i < len; i++) {
                if (recv[(size_t)r * len + i] != pattern(r, rank, i)) {
                    CHECK_MSG(0, "alltoall %zu bytes: from rank %d byte %zu", len, r, i);
                    break;
                }
            }
        }
        /* broadcast from every root */
        for (int root = 0; root < n; root++) {
            for (size_t i = 0; i < len; i++) {
                send[i] = (rank == root) ? pattern(root, 9, i) : 0;
            }
            CHECK(sharc_boot_bcast(boot, send, len, root) == SHARC_OK);
            for (size_t i = 0; i < len; i++) {
                if (send[i] != pattern(root, 9, i)) {
                    CHECK_MSG(0, "bcast %zu bytes from %d: byte %zu", len, root, i);
                    break;
                }
            }
        }
        CHECK(sharc_boot_barrier(boot) == SHARC_OK);
        free(send);
        free(recv);
    }
}

int main(void)
{
    sharc_context_h ctx;
    sharc_comm_h comm, half = NULL;

    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    CHECK(sharc_comm_create(ctx, NULL, &comm) == SHARC_OK);
    if (check_failures == 0) {
        exchange(comm->boot);
        CHECK(sharc_comm_split(comm, comm->rank % 2, 0, &half) == SHARC_OK);
        if (half != NULL) {
            exchange(half->boot);
        }
        sharc_comm_destroy(half);
        sharc_comm_destroy(comm);
    }
    sharc_context_destroy(ctx);
    return check_result("test_boot_xchg");
}
