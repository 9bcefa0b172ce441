/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_store.c: libFuzzer harness for the bootstrap store server's message parser,
 * in-process. Each input is what one connection sends (any number of messages, whole or
 * cut); the server's state (no socket, no thread: store_srv.h) reads it from one end of a
 * socketpair as its loop would, answering on it, then hears the connection close, expires
 * its gathers and sweeps. Any bytes must be answered, refused or dropped: never a fault, a
 * leak or a hang. SHARC_FUZZ_SEEDS=<dir> writes seeds there (a HELLO with the job's token,
 * then each request) and exits. Built against a clang build of libsharc by tools/fuzz.sh.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../base/util.h"
#include "../../boot/store_srv.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_digest[17];

/* One message as a client sends it. */
static size_t fz_msg(unsigned char *out, uint8_t kind, const char *key, const void *val,
                     uint32_t len)
{
    sharc_store_hdr_t h = {.magic = htonl(SHARC_STORE_MAGIC),
                           .kind = kind,
                           .key_len = htonl((uint32_t)strlen(key)),
                           .val_len = htonl(len)};

    memcpy(out, &h, sizeof(h));
    memcpy(out + sizeof(h), key, strlen(key));
    memcpy(out + sizeof(h) + strlen(key), val, len);
    return sizeof(h) + strlen(key) + len;
}

/* HELLO as rank @p rank of 2 in "w0". */
static size_t fz_hello(unsigned char *out, int rank)
{
    unsigned char v[14];
    uint32_t w[3] = {htonl(SHARC_STORE_VERSION), htonl((uint32_t)rank), htonl(2)};

    memcpy(v, w, 12);
    memcpy(v + 12, "w0", 2);
    return fz_msg(out, SHARC_STORE_MSG_HELLO, fz_digest, v, sizeof(v));
}

static void fz_seed(const char *dir, const char *name, const unsigned char *b, size_t n)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        abort();
    }
}

static void fz_write_seeds(const char *dir)
{
    unsigned char b[4096];
    uint32_t gather[4] = {htonl(2), htonl(2), htonl(10), htonl(SHARC_STORE_GATHER_PARTIAL)};
    uint32_t hb[2] = {htonl(2000), htonl(15000)}, lost = htonl(1);
    uint64_t ordinal = htobe64(7);
    size_t n;

    n = fz_hello(b, 0);
    fz_seed(dir, "hello", b, n);
    n += fz_msg(b + n, SHARC_STORE_MSG_SET, "w0/ag0/0", "abcd", 4);
    n += fz_msg(b + n, SHARC_STORE_MSG_SET, "w0/ag0/1", "efgh", 4);
    n += fz_msg(b + n, SHARC_STORE_MSG_GATHER, "w0/ag0", gather, 12);
    fz_seed(dir, "gather", b, n);
    n += fz_msg(b + n, SHARC_STORE_MSG_GATHER, "w0/x", gather, 16);
    n += fz_msg(b + n, SHARC_STORE_MSG_HEARTBEAT, "", hb, sizeof(hb));
    n += fz_msg(b + n, SHARC_STORE_MSG_STALL, "", &ordinal, sizeof(ordinal));
    fz_seed(dir, "partial_heartbeat_stall", b, n);
    n = fz_hello(b, 1);
    n += fz_msg(b + n, SHARC_STORE_MSG_REPORT, "", &lost, sizeof(lost));
    n += fz_msg(b + n, SHARC_STORE_MSG_BYE, "", "", 0);
    fz_seed(dir, "report_bye", b, n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *seeds = getenv("SHARC_FUZZ_SEEDS");

    (void)argc;
    (void)argv;
    sharc_store_digest("fuzz", fz_digest);
    if (seeds != NULL && *seeds) {
        fz_write_seeds(seeds);
        exit(0);
    }
    return 0;
}

/* What the server answered: read and dropped, so that its replies never wait for room. */
static void fz_drain(int fd)
{
    char buf[65536];

    while (read(fd, buf, sizeof(buf)) > 0) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sharc_store_server_t *srv;
    int fds[2], buf = 4 << 20;
    size_t off = 0;

    if (sharc_store_server_new(fz_digest, "w0", 5.0, 65536, &srv) != SHARC_OK ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) {
        abort();
    }
    setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    if (sharc_store_adopt(srv, fds[0]) != SHARC_OK) {
        abort();
    }
    /* the bytes in pieces, the server reading between them, as a slow sender's */
    while (off < size && srv->nconns > 0 && !srv->conns[0]->dead) {
        ssize_t n = write(fds[1], data + off, SHARC_MIN(size - off, (size_t)4096));

        off += (n > 0) ? (size_t)n : 0;
        sharc_store_read(srv, srv->conns[0]);
        fz_drain(fds[1]);
    }
    shutdown(fds[1], SHUT_WR); /* the end of the connection, maybe in the middle of a message */
    if (srv->nconns > 0 && !srv->conns[0]->dead) {
        sharc_store_read(srv, srv->conns[0]);
    }
    sharc_store_scan_waiters(srv, "\x01", sharc_time_now() + 1e6); /* every gather expires */
    fz_drain(fds[1]);
    sharc_store_sweep(srv, sharc_time_now() + 1e6);
    sharc_store_server_free(srv);
    close(fds[1]);
    return 0;
}
