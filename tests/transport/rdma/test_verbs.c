/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs.c: the verbs operations sharc's ib transport is built from, on a real device
 * (soft-RoCE in the test guest, tests/transport/rdma/vm.sh): device and port query, the RoCE v2 GID
 * of an IPv4 address, two reliable-connected QPs brought up to each other (INIT, RTR, RTS),
 * an RDMA write with immediate into a posted receive, checked byte for byte; and the faults:
 * registering memory that is not mapped, a QP forced into the error state (its work flushed
 * with an error completion). Without a device it skips (77).
 */
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../../check.h"

#define TV_BYTES (1u << 20)

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    uint8_t port;
    int gid_index;
    union ibv_gid gid;
    enum ibv_mtu mtu;
    uint16_t lid;
} tv_dev_t;

/* the GID table entry of type RoCE v2 with an IPv4-mapped address (::ffff:a.b.c.d) */
static int tv_roce_v2_gid(tv_dev_t *d, int table_len)
{
    for (int i = 0; i < table_len; i++) {
        struct ibv_gid_entry e;

        if (ibv_query_gid_ex(d->ctx, d->port, (uint32_t)i, &e, 0) != 0) {
            continue;
        }
        if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
            d->gid = e.gid;
            return i;
        }
    }
    return -1;
}

static int tv_open(tv_dev_t *d)
{
    struct ibv_device **list;
    struct ibv_port_attr pa;
    const char *want = getenv("SHARC_IB_HCA");
    int n = 0;

    memset(d, 0, sizeof(*d));
    list = ibv_get_device_list(&n);
    if (list == NULL || n == 0) {
        printf("SKIP: no RDMA device (%s)\n", list == NULL ? strerror(errno) : "none listed");
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return 77;
    }
    for (int i = 0; i < n && d->ctx == NULL; i++) {
        if (want == NULL || strcmp(ibv_get_device_name(list[i]), want) == 0) {
            d->ctx = ibv_open_device(list[i]);
            printf("device %s\n", ibv_get_device_name(list[i]));
        }
    }
    ibv_free_device_list(list);
    CHECK(d->ctx != NULL);
    if (d->ctx == NULL) {
        return 1;
    }
    d->port = 1;
    CHECK(ibv_query_port(d->ctx, d->port, &pa) == 0);
    CHECK_MSG(pa.state == IBV_PORT_ACTIVE, "port state %d", pa.state);
    d->mtu = pa.active_mtu;
    d->lid = pa.lid;
    if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
        d->gid_index = tv_roce_v2_gid(d, pa.gid_tbl_len);
        CHECK_MSG(d->gid_index >= 0, "no RoCE v2 GID with an IPv4 address in %d entries",
                  pa.gid_tbl_len);
    }
    printf("port %u: %s, mtu %d, gid index %d\n", d->port,
           pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand",
           128 << d->mtu, d->gid_index);
    d->pd = ibv_alloc_pd(d->ctx);
    d->cq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
    CHECK(d->pd != NULL && d->cq != NULL);
    return d->pd != NULL && d->cq != NULL ? 0 : 1;
}

static struct ibv_qp *tv_qp(tv_dev_t *d)
{
    struct ibv_qp_init_attr a = {
        .send_cq = d->cq,
        .recv_cq = d->cq,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
    };
    struct ibv_qp *qp = ibv_create_qp(d->pd, &a);
    struct ibv_qp_attr m = {.qp_state = IBV_QPS_INIT,
                            .pkey_index = 0,
                            .port_num = d->port,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};

    CHECK(qp != NULL);
    if (qp != NULL) {
        CHECK(ibv_modify_qp(qp, &m,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ==
              0);
    }
    return qp;
}

/* INIT -> RTR -> RTS toward the peer QP number (the other QP on the same port) */
static int tv_connect(tv_dev_t *d, struct ibv_qp *qp, uint32_t peer_qpn, uint32_t psn)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = d->mtu,
        .dest_qp_num = peer_qpn,
        .rq_psn = psn,
        .max_dest_rd_atomic = 1,
        .min_rnr_timer = 12,
        .ah_attr = {.dlid = d->lid, .port_num = d->port},
    };

    if (d->gid_index >= 0 && d->lid == 0) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = d->gid;
        a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = psn;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* wait for n completions (5 s at most); their statuses into st[] */
static int tv_poll(tv_dev_t *d, int n, struct ibv_wc *wc)
{
    struct timespec t0, t1;
    int got = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (got < n) {
        int k = ibv_poll_cq(d->cq, n - got, wc + got);
        if (k < 0) {
            return -1;
        }
        got += k;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 5) {
            break;
        }
    }
    return got;
}

static void test_write_imm(tv_dev_t *d)
{
    unsigned char *src = malloc(TV_BYTES), *dst = calloc(1, TV_BYTES);
    struct ibv_mr *smr = ibv_reg_mr(d->pd, src, TV_BYTES, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr *dmr =
        ibv_reg_mr(d->pd, dst, TV_BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_qp *a = tv_qp(d), *b = tv_qp(d);
    struct ibv_wc wc[2];

    CHECK(smr != NULL && dmr != NULL && a != NULL && b != NULL);
    if (smr == NULL || dmr == NULL || a == NULL || b == NULL) {
        return;
    }
    for (size_t i = 0; i < TV_BYTES; i++) {
        src[i] = (unsigned char)(i * 7 + 3);
    }
    CHECK(tv_connect(d, a, b->qp_num, 100) == 0);
    CHECK(tv_connect(d, b, a->qp_num, 100) == 0);

    struct ibv_recv_wr rr = {.wr_id = 2}, *bad_r;
    CHECK(ibv_post_recv(b, &rr, &bad_r) == 0);
    struct ibv_sge sge = {.addr = (uintptr_t)src, .length = TV_BYTES, .lkey = smr->lkey};
    struct ibv_send_wr wr = {.wr_id = 1,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                             .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = htobe32(0x5a5a1234)},
                       *bad_s;
    wr.wr.rdma.remote_addr = (uintptr_t)dst;
    wr.wr.rdma.rkey = dmr->rkey;
    CHECK(ibv_post_send(a, &wr, &bad_s) == 0);
    CHECK(tv_poll(d, 2, wc) == 2);
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(wc[i].status == IBV_WC_SUCCESS, "wr %llu: %s", (unsigned long long)wc[i].wr_id,
                  ibv_wc_status_str(wc[i].status));
        if (wc[i].wr_id == 2) {
            CHECK(wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
            CHECK(be32toh(wc[i].imm_data) == 0x5a5a1234 && wc[i].byte_len == TV_BYTES);
        }
    }
    CHECK(memcmp(src, dst, TV_BYTES) == 0);
    printf("rdma write with immediate of %u bytes: ok\n", TV_BYTES);

    /* a QP forced into the error state: what is posted completes with a flush error */
    struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
    CHECK(ibv_modify_qp(a, &err, IBV_QP_STATE) == 0);
    CHECK(ibv_post_send(a, &wr, &bad_s) == 0);
    CHECK(tv_poll(d, 1, wc) == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR);
    printf("QP in error: %s\n", ibv_wc_status_str(wc[0].status));

    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    ibv_dereg_mr(smr);
    ibv_dereg_mr(dmr);
    free(src);
    free(dst);
}

/* registering memory that is not mapped fails, and says why */
static void test_bad_reg(tv_dev_t *d)
{
    void *p = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct ibv_mr *mr;

    CHECK(p != MAP_FAILED);
    munmap(p, 1 << 16); /* now nothing is there */
    errno = 0;
    mr = ibv_reg_mr(d->pd, p, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
    CHECK_MSG(mr == NULL, "an unmapped range was registered");
    if (mr != NULL) {
        ibv_dereg_mr(mr);
    } else {
        printf("registering an unmapped range: %s\n", strerror(errno));
    }
}

int main(void)
{
    tv_dev_t d;
    int st = tv_open(&d);

    if (st != 0) {
        return st == 77 ? 77 : check_result("test_verbs");
    }
    test_write_imm(&d);
    test_bad_reg(&d);
    ibv_destroy_cq(d.cq);
    ibv_dealloc_pd(d.pd);
    ibv_close_device(d.ctx);
    return check_result("test_verbs");
}
