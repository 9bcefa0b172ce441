/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tp_p2p.c: one rank of a multi-rank test of the communicator's point-to-point
 * transport (UCX when built in; SHARC_TRANSPORT picks another). Every rank exchanges with
 * every other rank messages of 0 B to 2 MiB + 5 with 8 in flight per pair under one tag
 * (they must match in order), receives posted before and after the sends, buffers from
 * malloc, registered with the transport, or from sharc_mem_alloc (the verbs transport sends
 * the large ones of the last two zero-copy), checked byte for byte; buffers freed and
 * allocated again (a transport that caches registrations must not use a stale one), and
 * no more than one freed buffer per peer left mapped here (a transport that maps its peers'
 * buffers must let the freed ones go, also after more frees than it is told of one by one);
 * then a truncated receive must fail, copied or zero-copy.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <sharc/sharc.h>

#include "../../comm/comm.h"
#include "../../base/util.h"
#include "../check.h"

#define INFLIGHT 8

static unsigned char pattern(int src, int dst, int k, size_t i)
{
    return (unsigned char)(src * 37 + dst * 11 + k * 5 + i * 3 + 1);
}

/* Progress until every request is done, or fail after 30 s. */
static int wait_all(sharc_comm_h comm, sharc_tp_req_t *reqs, size_t n)
{
    double deadline = sharc_time_now() + 30.0;

    for (;;) {
        size_t done = 0;

        for (size_t i = 0; i < n; i++) {
            done += sharc_tp_req_status(&reqs[i]) != SHARC_INPROGRESS;
        }
        if (done == n) {
            return 0;
        }
        if (sharc_time_now() > deadline) {
            fprintf(stderr, "rank %d: %zu of %zu requests still pending after 30 s\n", comm->rank,
                    n - done, n);
            return -1;
        }
        if (comm->tp_ops->progress != NULL) {
            comm->tp_ops->progress(comm->tp);
        }
    }
}

enum { BUF_MALLOC, BUF_REGISTERED, BUF_SHARED };

static unsigned char *buf_alloc(sharc_comm_h comm, size_t bytes, int kind)
{
    void *p = NULL;

    if (kind == BUF_SHARED) {
        CHECK(sharc_mem_alloc(comm->ctx, bytes, &p) == SHARC_OK);
    } else {
        p = malloc(bytes);
        CHECK(p != NULL);
    }
    return p;
}

static void buf_free(sharc_comm_h comm, void *p, int kind)
{
    if (kind == BUF_SHARED) {
        CHECK(sharc_mem_free(comm->ctx, p) == SHARC_OK);
    } else {
        free(p);
    }
}

static void exchange(sharc_comm_h comm, size_t len, int recv_first, int kind, int k0)
{
    const sharc_tp_ops_t *ops = comm->tp_ops;
    int n = comm->size, me = comm->rank;
    size_t nreq = (size_t)n * INFLIGHT;
    unsigned char *sbuf = buf_alloc(comm, (size_t)n * INFLIGHT * len + 1, kind);
    unsigned char *rbuf = buf_alloc(comm, (size_t)n * INFLIGHT * len + 1, kind);
    sharc_tp_req_t *sreq = calloc(nreq, sizeof(*sreq)), *rreq = calloc(nreq, sizeof(*rreq));
    sharc_tp_mem_t *smem = NULL, *rmem = NULL;
    uint64_t tag = 1000 + len % 977;

    if (kind == BUF_REGISTERED && ops->mem_reg != NULL) {
        CHECK(ops->mem_reg(comm->tp, sbuf, (size_t)n * INFLIGHT * len + 1, SHARC_MEMTYPE_HOST,
                           &smem) == SHARC_OK);
        CHECK(ops->mem_reg(comm->tp, rbuf, (size_t)n * INFLIGHT * len + 1, SHARC_MEMTYPE_HOST,
                           &rmem) == SHARC_OK);
    }
    for (int p = 0; p < n; p++) {
        for (int k = 0; k < INFLIGHT; k++) {
            for (size_t i = 0; i < len; i++) {
                sbuf[((size_t)p * INFLIGHT + k) * len + i] = pattern(me, p, k0 + k, i);
            }
        }
    }
    memset(rbuf, 0, (size_t)n * INFLIGHT * len);
    for (int pass = 0; pass < 2; pass++) {
        int do_recv = (pass == 0) == (recv_first != 0);
        for (int p = 0; p < n; p++) {
            for (int k = 0; k < INFLIGHT; k++) {
                size_t slot = (size_t)p * INFLIGHT + k;
                sharc_status_t st;

                if (do_recv) {
                    st =
                        ops->p2p->recv(comm->tp, p, tag, rbuf + slot * len, len, rmem, &rreq[slot]);
                } else {
                    st =
                        ops->p2p->send(comm->tp, p, tag, sbuf + slot * len, len, smem, &sreq[slot]);
                }
                CHECK_MSG(st == SHARC_OK || st == SHARC_INPROGRESS, "%s to/from %d: %s",
                          do_recv ? "recv" : "send", p, sharc_status_string(st));
            }
        }
    }
    CHECK(wait_all(comm, sreq, nreq) == 0);
    CHECK(wait_all(comm, rreq, nreq) == 0);
    for (size_t s = 0; s < nreq; s++) {
        int p = (int)(s / INFLIGHT), k = (int)(s % INFLIGHT);
        size_t bad = 0;

        CHECK(sharc_tp_req_status(&sreq[s]) == SHARC_OK);
        CHECK_MSG(sharc_tp_req_status(&rreq[s]) == SHARC_OK && rreq[s].bytes == len,
                  "recv from %d #%d: %s, %zu bytes", p, k,
                  sharc_status_string(sharc_tp_req_status(&rreq[s])), rreq[s].bytes);
        for (size_t i = 0; i < len; i++) {
            bad += rbuf[s * len + i] != pattern(p, me, k0 + k, i);
        }
        CHECK_MSG(bad == 0, "%zu bytes from rank %d, message %d: %zu wrong", len, p, k, bad);
    }
    if (smem != NULL) {
        ops->mem_dereg(comm->tp, smem);
        ops->mem_dereg(comm->tp, rmem);
    }
    buf_free(comm, sbuf, kind);
    buf_free(comm, rbuf, kind);
    free(sreq);
    free(rreq);
}

/* How many of its peers' sharc_mem_alloc buffers this process maps (read-only shared
 * mappings of their memfds; its own are writable). */
static int peer_buffers_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], perms[8];
    int n = 0;

    CHECK(f != NULL);
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, "memfd:sharc-mem") != NULL && sscanf(line, "%*s %7s", perms) == 1 &&
             strcmp(perms, "r--s") == 0;
    }
    if (f != NULL) {
        fclose(f);
    }
    return n;
}

/*
 * recv_reduce, where the transport has it: each rank sends @p count f32 to its right and
 * combines what comes from its left with its own operand. @p shared: buffers from
 * sharc_mem_alloc (the receiver reduces from a mapping); @p late: the receive is posted
 * after the message arrived. A message of another size fails the receive.
 */
static void exchange_reduce(sharc_comm_h comm, size_t count, int shared, int late)
{
    const sharc_tp_ops_t *ops = comm->tp_ops;
    int n = comm->size, me = comm->rank, right = (me + 1) % n, left = (me + n - 1) % n;
    float *sbuf, *own, *dst;
    sharc_tp_req_t s = {0}, r = {0};
    sharc_status_t st;
    size_t bad = 0;

    if (shared) {
        CHECK(sharc_mem_alloc(comm->ctx, count * 4 + 4, (void **)&sbuf) == SHARC_OK);
    } else {
        sbuf = malloc(count * 4 + 4);
    }
    own = malloc(count * 4 + 4);
    dst = malloc(count * 4 + 4);
    for (size_t i = 0; i < count; i++) {
        sbuf[i] = (float)(me * 1000 + (int)(i % 997));
        own[i] = (float)(i % 13);
        dst[i] = -1;
    }
    CHECK(ops->p2p->send(comm->tp, right, 33, sbuf, count * 4, NULL, &s) >= SHARC_OK);
    if (late) {
        CHECK(sharc_comm_barrier(comm) == SHARC_OK); /* eager messages have arrived by now */
    }
    st = ops->p2p->recv_reduce(comm->tp, left, 33, dst, own, count, SHARC_DTYPE_F32, SHARC_OP_SUM,
                               &r);
    if (st == SHARC_ERR_UNSUPPORTED) { /* not for this peer (another node): by hand */
        CHECK(ops->p2p->recv(comm->tp, left, 33, dst, count * 4, NULL, &r) >= SHARC_OK);
    }
    CHECK_MSG(st == SHARC_OK || st == SHARC_INPROGRESS || st == SHARC_ERR_UNSUPPORTED,
              "recv_reduce: %s", sharc_status_string(st));
    CHECK(wait_all(comm, &r, 1) == 0 && wait_all(comm, &s, 1) == 0);
    CHECK(sharc_tp_req_status(&r) == SHARC_OK && sharc_tp_req_status(&s) == SHARC_OK);
    for (size_t i = 0; st == SHARC_ERR_UNSUPPORTED && i < count; i++) {
        dst[i] += own[i];
    }
    for (size_t i = 0; i < count; i++) {
        bad += dst[i] != (float)(left * 1000 + (int)(i % 997)) + (float)(i % 13);
    }
    CHECK_MSG(bad == 0, "recv_reduce of %zu f32 (%s, %s): %zu wrong", count,
              shared ? "shared" : "heap", late ? "late" : "early", bad);
    /* the message is one element short of the reduction: the receive fails */
    memset(&s, 0, sizeof(s));
    memset(&r, 0, sizeof(r));
    CHECK(ops->p2p->send(comm->tp, right, 34, sbuf, count * 4 - 4, NULL, &s) >= SHARC_OK);
    st = ops->p2p->recv_reduce(comm->tp, left, 34, dst, own, count, SHARC_DTYPE_F32, SHARC_OP_SUM,
                               &r);
    if (st == SHARC_ERR_UNSUPPORTED) {
        CHECK(ops->p2p->recv(comm->tp, left, 34, dst, count * 4, NULL, &r) >= SHARC_OK);
    }
    wait_all(comm, &r, 1);
    wait_all(comm, &s, 1);
    CHECK_MSG(st == SHARC_ERR_UNSUPPORTED || sharc_tp_req_status(&r) == SHARC_ERR_INVALID,
              "short message: %s", sharc_status_string(sharc_tp_req_status(&r)));
    CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    if (shared) {
        sharc_mem_free(comm->ctx, sbuf);
    } else {
        free(sbuf);
    }
    free(own);
    free(dst);
}

int main(void)
{
    static const size_t sizes[] = {0, 1, 4097, 65536, (1u << 20) + 3, (2u << 20) + 5};
    sharc_context_h ctx;
    sharc_comm_h comm;

    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    CHECK(sharc_comm_create(ctx, NULL, &comm) == SHARC_OK);
    if (check_failures != 0) {
        return check_result("test_tp_p2p");
    }
    if (comm->tp_ops == NULL) {
        printf("SKIP: no point-to-point transport for %d ranks in this build\n", comm->size);
        sharc_comm_destroy(comm);
        sharc_context_destroy(ctx);
        return 77;
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        exchange(comm, sizes[s], (int)(s % 2), (int)(s % 3), 0);
        CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    }
    /* shareable buffers freed and allocated again, likely at the same address, with other
     * contents each time */
    for (int round = 1; round <= 3; round++) {
        exchange(comm, (1u << 20) + 7, round % 2, BUF_SHARED, round);
        CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    }
    /* many rounds of them: what stays mapped is the last round's, at most one per rank (a
     * rank sends to itself too); and so after more frees than a peer is told of by id */
    for (int round = 0; round < 40; round++) {
        exchange(comm, 9000, round % 2, BUF_SHARED, round);
    }
    CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    CHECK_MSG(peer_buffers_mapped() <= comm->size,
              "%d of the peers' freed buffers still mapped after 40 rounds", peer_buffers_mapped());
    for (int i = 0; i < 100; i++) {
        buf_free(comm, buf_alloc(comm, 4096, BUF_SHARED), BUF_SHARED);
    }
    exchange(comm, 9000, 0, BUF_SHARED, 7);
    CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    CHECK_MSG(peer_buffers_mapped() <= comm->size,
              "%d of the peers' freed buffers still mapped after 100 unsent frees",
              peer_buffers_mapped());
    /* a message longer than its receive buffer fails that receive, on the receiver */
    if (comm->size > 1) {
        const sharc_tp_ops_t *ops = comm->tp_ops;
        int right = (comm->rank + 1) % comm->size,
            left = (comm->rank + comm->size - 1) % comm->size;
        char big[100] = {0}, small[10];
        sharc_tp_req_t s = {0}, r = {0};

        CHECK(ops->p2p->send(comm->tp, right, 7, big, sizeof(big), NULL, &s) >= SHARC_OK);
        CHECK(ops->p2p->recv(comm->tp, left, 7, small, sizeof(small), NULL, &r) >= SHARC_OK);
        wait_all(comm, &r, 1);
        wait_all(comm, &s, 1);
        CHECK_MSG(sharc_tp_req_status(&r) == SHARC_ERR_INVALID, "truncated receive: %s",
                  sharc_status_string(sharc_tp_req_status(&r)));
        /* the same with a large shareable buffer (zero-copy where the transport has it): the
         * receive fails; the send completes, with or without an error */
        void *large = buf_alloc(comm, 1u << 20, BUF_SHARED);
        CHECK(ops->p2p->send(comm->tp, right, 8, large, 1u << 20, NULL, &s) >= SHARC_OK);
        CHECK(ops->p2p->recv(comm->tp, left, 8, small, sizeof(small), NULL, &r) >= SHARC_OK);
        wait_all(comm, &r, 1);
        CHECK(wait_all(comm, &s, 1) == 0);
        CHECK_MSG(sharc_tp_req_status(&r) == SHARC_ERR_INVALID, "truncated large receive: %s",
                  sharc_status_string(sharc_tp_req_status(&r)));
        buf_free(comm, large, BUF_SHARED);
        CHECK(ops->p2p->send(comm->tp, comm->size, 7, big, 1, NULL, &s) == SHARC_ERR_INVALID);
        CHECK(ops->p2p->send(comm->tp, right, 1ull << 60, big, 1, NULL, &s) == SHARC_ERR_INVALID);
        CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    }
    /* a registration of memory that is not mapped fails, with the reason logged */
    if (comm->tp_ops->mem_reg != NULL && strcmp(comm->tp_ops->name, "ib") == 0) {
        sharc_tp_mem_t *bad = NULL;
        void *hole = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        CHECK(hole != MAP_FAILED && munmap(hole, 1 << 16) == 0);
        CHECK(comm->tp_ops->mem_reg(comm->tp, hole, 1 << 16, SHARC_MEMTYPE_HOST, &bad) != SHARC_OK);
        CHECK(comm->tp_ops->mem_reg(comm->tp, NULL, 0, SHARC_MEMTYPE_HOST, &bad) ==
              SHARC_ERR_INVALID);
    }
    if (comm->size > 1 && comm->tp_ops->p2p->recv_reduce != NULL) {
        static const size_t counts[] = {1, 1000, 300001};
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            for (int shared = 0; shared < 2; shared++) {
                exchange_reduce(comm, counts[c], shared, (int)c == 1);
            }
        }
        printf("rank %d: recv_reduce ok\n", comm->rank);
    }
    printf("rank %d of %d: transport %s: %s\n", comm->rank, comm->size, comm->tp_ops->name,
           check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_tp_p2p");
}
