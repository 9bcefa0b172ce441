/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_p2p_memtype.c: one rank of the test of how sends and receives choose their path by
 * memory, on the emulated CUDA runtime (tests/gpu_emu.h: its device memory is host memory
 * that sharc takes for CUDA buffers; there is no NCCL, so sends and receives with data on it
 * are refused). Ranks 0 and 1:
 *   - messages of no data match whatever their buffers are (NULL, host, emulated device),
 *     outside a group and inside one: they travel on the host transport;
 *   - inside a group, a message with data on device memory after one on host memory is refused
 *     at once, naming the mix (SHARC_ERR_INVALID), and the group's host message completes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../../base/gpu.h"
#include "../check.h"

static sharc_comm_h comm;
static int me;

/* A zero-element exchange from rank 0 to rank 1 with these buffers. */
static void zero(void *sbuf, void *rbuf, int grouped, const char *what)
{
    sharc_request_h req = NULL;
    sharc_status_t s;

    if (grouped) {
        CHECK(sharc_p2p_group_start(comm) == SHARC_OK);
    }
    if (me == 0) {
        s = sharc_send(sbuf, 0, SHARC_DTYPE_F32, 1, 5, comm, &req);
    } else {
        s = sharc_recv(rbuf, 0, SHARC_DTYPE_F32, 0, 5, comm, &req);
    }
    if (grouped) {
        CHECK(sharc_p2p_group_end(comm) == SHARC_OK);
    }
    CHECK_MSG(s == SHARC_OK, "%s: rank %d: posted: %s", what, me, sharc_status_string(s));
    if (s == SHARC_OK) {
        s = sharc_request_wait(req);
        CHECK_MSG(s == SHARC_OK, "%s: rank %d: %s", what, me, sharc_status_string(s));
        sharc_request_free(req);
    }
}

static void test_zero(void)
{
    void *dev = NULL;
    float host[1];

    CHECK(sharc_gpu_alloc(64, &dev) == SHARC_OK);
    CHECK(sharc_gpu_memtype(dev) == SHARC_MEMTYPE_CUDA);
    zero(dev, NULL, 0, "device send of nothing, receive into NULL");
    zero(NULL, dev, 0, "send of NULL, device receive of nothing");
    zero(dev, host, 0, "device send of nothing, host receive");
    zero(dev, NULL, 1, "the same in a group");
    sharc_gpu_free(dev);
    if (me == 0) {
        printf("messages of no data match whatever their buffers\n");
    }
}

static void test_mixed_group(void)
{
    float host[4] = {1, 2, 3, 4}, got[4] = {0};
    void *dev = NULL;
    sharc_request_h req = NULL, bad = NULL;
    char errs[512] = "";
    unsigned long before = sharc_log_errors(0, NULL, 0);
    sharc_status_t s;

    CHECK(sharc_gpu_alloc(sizeof(host), &dev) == SHARC_OK);
    CHECK(sharc_p2p_group_start(comm) == SHARC_OK);
    if (me == 0) {
        CHECK(sharc_send(host, 4, SHARC_DTYPE_F32, 1, 6, comm, &req) == SHARC_OK);
        s = sharc_send(dev, 4, SHARC_DTYPE_F32, 1, 7, comm, &bad);
    } else {
        CHECK(sharc_recv(got, 4, SHARC_DTYPE_F32, 0, 6, comm, &req) == SHARC_OK);
        s = sharc_recv(dev, 4, SHARC_DTYPE_F32, 0, 7, comm, &bad);
    }
    CHECK(sharc_p2p_group_end(comm) == SHARC_OK);
    CHECK_MSG(s == SHARC_ERR_INVALID && bad == NULL,
              "rank %d: a device message in a host group: %s", me, sharc_status_string(s));
    CHECK(sharc_log_errors(before, errs, sizeof(errs)) > before);
    CHECK_MSG(strstr(errs, "a CUDA buffer in a group of sends and receives on host memory") != NULL,
              "rank %d: the refusal says: %s", me, errs);
    CHECK(sharc_request_wait(req) == SHARC_OK);
    sharc_request_free(req);
    CHECK(me == 0 || memcmp(got, host, sizeof(host)) == 0);
    /* the next group takes either kind again */
    CHECK(sharc_p2p_group_start(comm) == SHARC_OK);
    s = (me == 0) ? sharc_send(dev, 4, SHARC_DTYPE_F32, 1, 8, comm, &bad)
                  : sharc_recv(dev, 4, SHARC_DTYPE_F32, 0, 8, comm, &bad);
    CHECK(sharc_p2p_group_end(comm) == SHARC_OK);
    CHECK_MSG(s == SHARC_ERR_UNSUPPORTED, "rank %d: a device message alone, without NCCL: %s", me,
              sharc_status_string(s));
    sharc_gpu_free(dev);
    if (me == 0) {
        printf("a group mixing host and device buffers is refused at once\n");
    }
}

int main(void)
{
    sharc_context_h ctx;

    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_p2p_memtype: no communicator\n");
        return 1;
    }
    me = sharc_comm_rank(comm);
    if (sharc_comm_size(comm) >= 2 && me < 2) {
        test_zero();
        test_mixed_group();
    }
    CHECK(sharc_barrier(comm, NULL) == SHARC_OK);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_p2p_memtype");
}
