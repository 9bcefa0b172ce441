/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_unasked.c: the messages the store sends a connection unasked (a rank of the
 * communicator is gone, a heartbeat's answer, a verdict round): which headers they have, and
 * what a reader notes of them, whether it meets one while it waits for a reply
 * (store_client.c) or between requests (store_watch.c).
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <string.h>

#include "../base/util.h"
#include "store_client.h"

int sharc_store_is_unasked(uint8_t kind, uint32_t key_len, uint32_t val_len)
{
    return key_len == 0 && ((kind == SHARC_STORE_MSG_NOTICE && val_len == 8) ||
                            (kind == SHARC_STORE_MSG_HEARTBEAT && val_len == 0) ||
                            (kind == SHARC_STORE_MSG_VERDICT && val_len == 12));
}

sharc_status_t sharc_store_take_unasked(sharc_store_client_t *c, uint8_t kind, double deadline)
{
    unsigned char v[12];
    sharc_status_t status = SHARC_OK;
    uint32_t u[2];

    c->hb_ack = sharc_time_now();         /* the store speaks: it is alive */
    if (kind == SHARC_STORE_MSG_NOTICE) { /* who is lost, and who said so; the first one counts */
        status = sharc_sock_recv(c->fd, u, sizeof(u), deadline);
        if (status == SHARC_OK && c->lost_rank < 0) {
            c->lost_rank = (int)ntohl(u[0]);
            c->lost_by = (int)ntohl(u[1]);
        }
    } else if (kind == SHARC_STORE_MSG_VERDICT) { /* u32 round, u64 ordinal */
        status = sharc_sock_recv(c->fd, v, sizeof(v), deadline);
        if (status == SHARC_OK) {
            memcpy(u, v, 4);
            memcpy(&c->round_ordinal, v + 4, 8);
            c->round_ordinal = be64toh(c->round_ordinal);
            c->round = ntohl(u[0]);
            c->round_pending = 1;
        }
    }
    return status;
}
