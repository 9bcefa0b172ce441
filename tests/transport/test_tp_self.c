/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tp_self.c: the self transport through the registry and its ops table: matching in
 * either posting order, tags, ordering of equal tags, truncation, zero bytes, callbacks.
 */
#include "config.h"

#include <string.h>

#include "../../base/config_int.h"
#include "../../comm/context.h"
#include "../../transport/transport.h"
#include "../check.h"

static int cb_calls;

static void count_cb(sharc_tp_req_t *req)
{
    cb_calls++;
}

int main(void)
{
    sharc_config_h config;
    const sharc_tp_ops_t *ops = NULL;
    sharc_tp_comm_t *tp = NULL;
    sharc_tp_comm_params_t params = {0};
    static const int node_of[2] = {0, 0};
    sharc_tp_req_t s1 = {0}, s2 = {0}, r1 = {0}, r2 = {0};
    char a[16] = "first", b[16] = "second", x[16], y[16], small[4];

    CHECK(sharc_config_create(SHARC_CONFIG_NO_ENV, &config) == SHARC_OK);
    params.cfg = sharc_config_parsed(config);
    params.node_of = node_of;
    params.size = 1;
    CHECK(sharc_tp_open(&params, &ops, &tp) == SHARC_OK && ops != NULL && tp != NULL);
    CHECK(ops == sharc_tp_find("self") && ops->version == SHARC_TP_OPS_VERSION);
    CHECK(ops->p2p != NULL && ops->p2p->send != NULL && ops->coll == NULL);
    ops->comm_destroy(tp);
    /* self never serves more than one rank, chosen by name or not */
    CHECK(sharc_config_set(config, "TRANSPORT", "self") == SHARC_OK);
    params.cfg = sharc_config_parsed(config);
    params.size = 2;
    CHECK(sharc_tp_open(&params, &ops, &tp) == SHARC_ERR_UNSUPPORTED && ops == NULL);
    ops = sharc_tp_find("self");
    CHECK(ops->comm_create(&params, &tp) == SHARC_ERR_INVALID);
    params.size = 1;
    CHECK(ops->comm_create(&params, &tp) == SHARC_OK);

    /* send first, then receive */
    CHECK(ops->p2p->send(tp, 0, 7, a, 6, NULL, &s1) == SHARC_INPROGRESS);
    CHECK(sharc_tp_req_status(&s1) == SHARC_INPROGRESS);
    CHECK(ops->p2p->recv(tp, 0, 7, x, sizeof(x), NULL, &r1) == SHARC_OK);
    CHECK(sharc_tp_req_status(&s1) == SHARC_OK && sharc_tp_req_status(&r1) == SHARC_OK);
    CHECK(r1.bytes == 6 && strcmp(x, "first") == 0);

    /* receive first, tags matched exactly, callbacks called once */
    memset(&r1, 0, sizeof(r1));
    memset(&s1, 0, sizeof(s1));
    r1.cb = r2.cb = s1.cb = s2.cb = count_cb;
    CHECK(ops->p2p->recv(tp, 0, 1, x, sizeof(x), NULL, &r1) == SHARC_INPROGRESS);
    CHECK(ops->p2p->recv(tp, 0, 2, y, sizeof(y), NULL, &r2) == SHARC_INPROGRESS);
    CHECK(ops->p2p->send(tp, 0, 2, b, 7, NULL, &s2) == SHARC_OK);
    CHECK(sharc_tp_req_status(&r2) == SHARC_OK && strcmp(y, "second") == 0);
    CHECK(sharc_tp_req_status(&r1) == SHARC_INPROGRESS);
    CHECK(ops->p2p->send(tp, 0, 1, a, 6, NULL, &s1) == SHARC_OK);
    CHECK(sharc_tp_req_status(&r1) == SHARC_OK && strcmp(x, "first") == 0);
    CHECK(cb_calls == 4);

    /* equal tags match in posting order */
    memset(&s1, 0, sizeof(s1));
    memset(&s2, 0, sizeof(s2));
    memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    CHECK(ops->p2p->send(tp, 0, 9, a, 6, NULL, &s1) == SHARC_INPROGRESS);
    CHECK(ops->p2p->send(tp, 0, 9, b, 7, NULL, &s2) == SHARC_INPROGRESS);
    CHECK(ops->p2p->recv(tp, 0, 9, x, sizeof(x), NULL, &r1) == SHARC_OK && strcmp(x, "first") == 0);
    CHECK(ops->p2p->recv(tp, 0, 9, y, sizeof(y), NULL, &r2) == SHARC_OK &&
          strcmp(y, "second") == 0);

    /* truncation fails the receive, zero bytes are fine, bad peers are refused */
    memset(&s1, 0, sizeof(s1));
    memset(&r1, 0, sizeof(r1));
    CHECK(ops->p2p->send(tp, 0, 3, b, 7, NULL, &s1) == SHARC_INPROGRESS);
    CHECK(ops->p2p->recv(tp, 0, 3, small, sizeof(small), NULL, &r1) == SHARC_OK);
    CHECK(sharc_tp_req_status(&r1) == SHARC_ERR_INVALID && sharc_tp_req_status(&s1) == SHARC_OK);
    memset(&s1, 0, sizeof(s1));
    memset(&r1, 0, sizeof(r1));
    CHECK(ops->p2p->recv(tp, 0, 4, NULL, 0, NULL, &r1) == SHARC_INPROGRESS);
    CHECK(ops->p2p->send(tp, 0, 4, NULL, 0, NULL, &s1) == SHARC_OK);
    CHECK(sharc_tp_req_status(&r1) == SHARC_OK && r1.bytes == 0);
    memset(&s1, 0, sizeof(s1));
    CHECK(ops->p2p->send(tp, 1, 4, a, 1, NULL, &s1) == SHARC_ERR_INVALID);
    CHECK(ops->p2p->recv(tp, -1, 4, x, 1, NULL, &r1) == SHARC_ERR_INVALID);

    ops->comm_destroy(tp);
    sharc_config_destroy(config);
    return check_result("test_tp_self");
}
