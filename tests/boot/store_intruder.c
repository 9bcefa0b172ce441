/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_intruder.c: a foreign client for the fault tests. It connects to a bootstrap store
 * again and again while a job starts, and sends what a stray or hostile process might:
 * garbage, a valid header with a wrong token, an oversized message, a truncated message,
 * a request before HELLO, or nothing at all. It exits 0 after @p seconds; the test checks
 * that the job still succeeds.
 *   usage: store_intruder HOST PORT SECONDS
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../boot/sock.h"
#include "../../boot/store_proto.h"
#include "../../base/util.h"

static void send_hdr(int fd, uint8_t kind, uint32_t klen, uint32_t vlen)
{
    sharc_store_hdr_t h = {.magic = htonl(SHARC_STORE_MAGIC),
                           .kind = kind,
                           .key_len = htonl(klen),
                           .val_len = htonl(vlen)};

    sharc_sock_send(fd, &h, sizeof(h), sharc_time_now() + 1.0);
}

int main(int argc, char **argv)
{
    double end;
    unsigned attempt = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: store_intruder HOST PORT SECONDS\n");
        return 2;
    }
    end = sharc_time_now() + atof(argv[3]);
    while (sharc_time_now() < end) {
        int fd;
        unsigned char hello[12] = {0};
        uint32_t v[3] = {htonl(SHARC_STORE_VERSION), htonl(0), htonl(1)};

        if (sharc_sock_connect(argv[1], atoi(argv[2]), sharc_time_now() + 0.2, "the store", &fd) !=
            SHARC_OK) {
            continue; /* not up yet */
        }
        switch (attempt++ % 6) {
        case 0: /* garbage */
            sharc_sock_send(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27, sharc_time_now() + 1);
            break;
        case 1: /* well formed, wrong token, claiming rank 0 */
            memcpy(hello, v, sizeof(v));
            send_hdr(fd, SHARC_STORE_MSG_HELLO, 16, sizeof(hello));
            sharc_sock_send(fd, "0123456789abcdef", 16, sharc_time_now() + 1);
            sharc_sock_send(fd, hello, sizeof(hello), sharc_time_now() + 1);
            break;
        case 2: /* oversized */ send_hdr(fd, SHARC_STORE_MSG_SET, 8, 0x7fffffffu); break;
        case 3: /* truncated: a header announcing more than is sent */
            send_hdr(fd, SHARC_STORE_MSG_HELLO, 16, 12);
            sharc_sock_send(fd, "0123", 4, sharc_time_now() + 1);
            break;
        case 4: /* a request before HELLO */
            send_hdr(fd, SHARC_STORE_MSG_SET, 3, 1);
            sharc_sock_send(fd, "w/xz", 4, sharc_time_now() + 1);
            break;
        case 5: /* connect and say nothing for a while */ usleep(200000); break;
        }
        usleep(20000);
        close(fd);
    }
    return 0;
}
