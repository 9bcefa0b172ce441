/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_p2p_match.c: how test_p2p's point-to-point messages match their receives: by tag, and
 * without overtaking within a tag across message sizes; receives from any rank (several
 * senders; MPI's order against receives naming the peer); sends and receives completing
 * before a collective posted earlier. Part of test_p2p (its main: test_p2p.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../elem.h"
#include "test_p2p.h"

/*
 * Every rank sends each other rank (itself too) three tags in the order 3, 2, 1, each tag
 * four messages alternating small and large (eager and rendezvous); the receiver posts tag 1
 * first, then 2, then 3, each tag's receives in order: tags match exactly, and within a tag
 * the messages arrive in the order they were sent, whatever their sizes.
 */
void run_tags(sharc_comm_h comm)
{
    enum { NT = 3, NK = 4 };
    size_t sizes[NK] = {5, 70000, 3, 130001}, total = 0;
    sharc_request_h *reqs = malloc(sizeof(*reqs) * (size_t)nranks * NT * NK * 2);
    int32_t **sbuf = malloc(sizeof(*sbuf) * NT * NK), **rbuf;
    size_t nreq = 0;

    rbuf = malloc(sizeof(*rbuf) * (size_t)nranks * NT * NK);
    for (int i = 0; i < NT * NK; i++) {
        sbuf[i] = alloc_bytes(sizes[i % NK] * 4);
        fill(sbuf[i], SHARC_DTYPE_I32, sizes[i % NK], me, i / NK + 1, i % NK);
    }
    for (int src = 0; src < nranks; src++) {
        for (int t = 1; t <= NT; t++) {
            for (int k = 0; k < NK; k++) {
                int32_t **r = &rbuf[(src * NT + t - 1) * NK + k];

                *r = alloc_bytes(sizes[k] * 4);
                CHECK(sharc_recv(*r, sizes[k], SHARC_DTYPE_I32, src, t, comm, &reqs[nreq++]) ==
                      SHARC_OK);
            }
        }
    }
    for (int dst = 0; dst < nranks; dst++) {
        for (int t = NT; t >= 1; t--) {
            for (int k = 0; k < NK; k++) {
                CHECK(sharc_send(sbuf[(t - 1) * NK + k], sizes[k], SHARC_DTYPE_I32, dst, t, comm,
                                 &reqs[nreq++]) == SHARC_OK);
            }
        }
    }
    for (size_t i = nreq; i-- > 0;) { /* newest first: each completes on its own */
        CHECK(sharc_request_wait(reqs[i]) == SHARC_OK);
    }
    for (int src = 0; src < nranks; src++) {
        for (int i = 0; i < NT * NK; i++) {
            total += wrong(rbuf[src * NT * NK + i], SHARC_DTYPE_I32, sizes[i % NK], src, i / NK + 1,
                           i % NK);
            free_bytes(rbuf[src * NT * NK + i]);
        }
    }
    CHECK_MSG(total == 0, "tags and order: %zu wrong elements", total);
    for (size_t i = 0; i < nreq; i++) {
        sharc_request_free(reqs[i]);
    }
    for (int i = 0; i < NT * NK; i++) {
        free_bytes(sbuf[i]);
    }
    free(sbuf);
    free(rbuf);
    free(reqs);
}

/*
 * Receives from any rank with several senders: every other rank sends rank 0 two messages
 * with tag 9 (a small one, then a large one); rank 0's receives from any rank take all of
 * them, each sender's in order, and name their senders.
 */
void run_any_source(sharc_comm_h comm)
{
    size_t sizes[2] = {17, 100003};
    int n = 2 * (nranks - 1), *got = calloc((size_t)nranks, sizeof(int));
    int32_t *buf = alloc_bytes(sizes[1] * 4);

    if (me != 0) {
        for (int k = 0; k < 2; k++) {
            fill(buf, SHARC_DTYPE_I32, sizes[k], me, 9, k);
            CHECK(sharc_send(buf, sizes[k], SHARC_DTYPE_I32, 0, 9, comm, NULL) == SHARC_OK);
        }
    }
    for (int m = 0; me == 0 && m < n; m++) {
        sharc_recv_info_t info = {-1, -1, 0, 0};
        sharc_request_h req;

        CHECK(sharc_recv(buf, sizes[1], SHARC_DTYPE_I32, SHARC_ANY_SOURCE, 9, comm, &req) ==
              SHARC_OK);
        CHECK(sharc_request_wait(req) == SHARC_OK);
        CHECK(sharc_request_recv_info(req, &info) == SHARC_OK);
        sharc_request_free(req);
        if (info.source <= 0 || info.source >= nranks || got[info.source] > 1) {
            CHECK_MSG(0, "any source: a message from rank %d", info.source);
            continue;
        }
        /* each sender's first message is the small one: they do not overtake */
        CHECK_MSG(info.count == sizes[got[info.source]] && info.tag == 9 &&
                      wrong(buf, SHARC_DTYPE_I32, info.count, info.source, 9, got[info.source]) ==
                          0,
                  "any source: message %d of rank %d (%zu elements) is wrong", got[info.source],
                  info.source, info.count);
        got[info.source]++;
    }
    for (int r = 1; me == 0 && r < nranks; r++) {
        CHECK_MSG(got[r] == 2, "any source: %d messages of rank %d", got[r], r);
    }
    free(got);
    free_bytes(buf);
}

/* Rank 0's four receives of run_any_order: (any, peer) with tag 11, (peer, any) with 12. */
static void any_order_post(sharc_comm_h comm, int peer, int32_t (*buf)[64], sharc_request_h *req)
{
    CHECK(sharc_recv(buf[0], 64, SHARC_DTYPE_I32, SHARC_ANY_SOURCE, 11, comm, &req[0]) == SHARC_OK);
    CHECK(sharc_recv(buf[1], 64, SHARC_DTYPE_I32, peer, 11, comm, &req[1]) == SHARC_OK);
    CHECK(sharc_recv(buf[2], 64, SHARC_DTYPE_I32, peer, 12, comm, &req[2]) == SHARC_OK);
    CHECK(sharc_recv(buf[3], 64, SHARC_DTYPE_I32, SHARC_ANY_SOURCE, 12, comm, &req[3]) == SHARC_OK);
}

/*
 * MPI's order between receives from any rank and receives naming the peer: the oldest
 * receive that accepts a message gets it. The last rank sends rank 0 two messages with tag
 * 11 and two with tag 12; rank 0 posted (any, then the sender) for 11 and (the sender, then
 * any) for 12: the first message of each tag goes to the first receive. Once with the
 * receives posted before the messages leave, once with the messages there first.
 */
void run_any_order(sharc_comm_h comm)
{
    int peer = nranks - 1, x = 0;
    int32_t buf[4][64];
    sharc_request_h req[4] = {NULL}; /* (a failed post leaves its slot NULL) */

    for (int first = 0; nranks > 1 && (me == 0 || me == peer) && first < 2; first++) {
        if (me == peer) {
            if (!first) { /* rank 0's receives are posted */
                CHECK(sharc_recv(&x, 1, SHARC_DTYPE_I32, 0, 10, comm, NULL) == SHARC_OK);
            }
            for (int k = 0; k < 4; k++) {
                fill(buf[0], SHARC_DTYPE_I32, 64, peer, 11 + k / 2, k % 2);
                CHECK(sharc_send(buf[0], 64, SHARC_DTYPE_I32, 0, 11 + k / 2, comm, &req[k]) ==
                      SHARC_OK);
                CHECK(sharc_request_wait(req[k]) == SHARC_OK);
                sharc_request_free(req[k]);
            }
            if (first) { /* they are on their way, in order */
                CHECK(sharc_send(&x, 1, SHARC_DTYPE_I32, 0, 10, comm, NULL) == SHARC_OK);
            }
            continue;
        }
        if (first) {
            CHECK(sharc_recv(&x, 1, SHARC_DTYPE_I32, peer, 10, comm, NULL) == SHARC_OK);
            usleep(20 * 1000);
        }
        any_order_post(comm, peer, buf, req);
        if (!first) {
            CHECK(sharc_send(&x, 1, SHARC_DTYPE_I32, peer, 10, comm, NULL) == SHARC_OK);
        }
        for (int k = 0; k < 4; k++) {
            CHECK(sharc_request_wait(req[k]) == SHARC_OK);
            check_info(req[k], peer, 11 + k / 2, 64, "any source and named");
            sharc_request_free(req[k]);
            CHECK_MSG(wrong(buf[k], SHARC_DTYPE_I32, 64, peer, 11 + k / 2, k % 2) == 0,
                      "receive %d of tags 11/12 got the wrong message (%s)", k,
                      first ? "messages first" : "receives first");
        }
    }
}

/*
 * Completion does not follow posting order: rank 0 posts an all-reduce that cannot finish
 * (rank 1 posts its own only later) and then a receive from rank 1; rank 1 sends, and posts
 * its all-reduce only after rank 0's answer, which rank 0 sends once its receive completed.
 * A receive completed in posting order would wait for the all-reduce, which waits for it.
 */
void run_unordered(sharc_comm_h comm)
{
    float v[256], x = 0;
    sharc_request_h coll, req;

    for (int i = 0; i < 256; i++) {
        v[i] = 1.0f;
    }
    if (nranks < 2 || me > 1) {
        CHECK(sharc_allreduce(v, v, 256, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL) == SHARC_OK);
        return;
    }
    if (me == 0) {
        CHECK(sharc_allreduce(v, v, 256, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, &coll) == SHARC_OK);
        CHECK(sharc_recv(&x, 1, SHARC_DTYPE_F32, 1, 40, comm, &req) == SHARC_OK);
        CHECK_MSG(sharc_request_wait(req) == SHARC_OK, "a receive waited for a collective");
        CHECK_MSG(sharc_request_test(coll) == SHARC_INPROGRESS, "the all-reduce finished early");
        CHECK(sharc_send(&x, 1, SHARC_DTYPE_F32, 1, 41, comm, NULL) == SHARC_OK);
        CHECK(sharc_request_wait(coll) == SHARC_OK);
        sharc_request_free(req);
        sharc_request_free(coll);
    } else {
        x = 7.0f;
        CHECK(sharc_send(&x, 1, SHARC_DTYPE_F32, 0, 40, comm, NULL) == SHARC_OK);
        CHECK(sharc_recv(&x, 1, SHARC_DTYPE_F32, 0, 41, comm, NULL) == SHARC_OK);
        CHECK(x == 7.0f);
        CHECK(sharc_allreduce(v, v, 256, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL) == SHARC_OK);
    }
    CHECK_MSG(v[0] == (float)nranks && v[255] == (float)nranks, "all-reduce: %g", v[0]);
}
