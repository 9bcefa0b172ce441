/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_store.c: the bootstrap store in one process: a server and clients in threads.
 * Gathers with several ranks, keys freed after the last reader, the HELLO checks (token,
 * rank range, duplicate rank, size disagreement), timeouts that name the missing ranks,
 * length mismatches, replies without delay, and a server that goes away.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../../boot/store.h"
#include "../../base/util.h"
#include "../check.h"

#define NRANKS  4
#define MAX_MSG (1u << 20)

static int port;
static char digest[17];

typedef struct {
    int rank;
    sharc_status_t status;
    int out[NRANKS];
} rank_arg_t;

static void *rank_main(void *p)
{
    rank_arg_t *a = p;
    sharc_store_client_t *c;
    char key[64];
    int mine = 100 + a->rank;

    a->status =
        sharc_store_connect("127.0.0.1", port, digest, "w", a->rank, NRANKS, 10.0, MAX_MSG, &c);
    if (a->status != SHARC_OK) {
        return NULL;
    }
    /* two rounds on distinct prefixes, as the bootstrap's seq numbers make them */
    for (int round = 0; round < 2 && a->status == SHARC_OK; round++) {
        snprintf(key, sizeof(key), "w/ag%d/%d", round, a->rank);
        a->status = sharc_store_set(c, key, &mine, sizeof(mine));
        if (a->status == SHARC_OK) {
            snprintf(key, sizeof(key), "w/ag%d", round);
            a->status = sharc_store_gather(c, key, NRANKS, NRANKS, -1, a->out, sizeof(int), "test");
        }
    }
    sharc_store_close(c);
    return NULL;
}

static void test_gather(void)
{
    pthread_t th[NRANKS];
    rank_arg_t args[NRANKS];

    for (int r = 0; r < NRANKS; r++) {
        args[r].rank = r;
        pthread_create(&th[r], NULL, rank_main, &args[r]);
    }
    for (int r = 0; r < NRANKS; r++) {
        pthread_join(th[r], NULL);
        CHECK_MSG(args[r].status == SHARC_OK, "rank %d: %s", r,
                  sharc_status_string(args[r].status));
        for (int i = 0; i < NRANKS; i++) {
            CHECK(args[r].out[i] == 100 + i);
        }
    }
}

static void test_hello(void)
{
    sharc_store_client_t *c = NULL, *c2 = NULL;
    char wrong[17];

    sharc_store_digest("another job", wrong);
    CHECK(strcmp(wrong, digest) != 0);
    CHECK(sharc_store_connect("127.0.0.1", port, wrong, "w.h", 0, 2, 2.0, MAX_MSG, &c) ==
          SHARC_ERR_REMOTE);
    CHECK(c == NULL);
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.h", 2, 2, 2.0, MAX_MSG, &c) ==
          SHARC_ERR_INVALID);
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.h", 0, 2, 2.0, MAX_MSG, &c) ==
          SHARC_OK);
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.h", 0, 2, 2.0, MAX_MSG, &c2) ==
          SHARC_ERR_INVALID); /* duplicate rank 0 */
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.h", 1, 3, 2.0, MAX_MSG, &c2) ==
          SHARC_ERR_INVALID); /* size disagrees with rank 0's */
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.h", 1, 2, 2.0, MAX_MSG, &c2) ==
          SHARC_OK);
    /* another generation's communicator is told to come back: it times out here */
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w1", 0, 2, 0.3, MAX_MSG, &c) ==
          SHARC_ERR_TIMEOUT);
    sharc_store_close(c2);
    sharc_store_close(c);
}

static void test_timeout(void)
{
    sharc_store_client_t *c;
    int v = 1, out[3];
    double t0;

    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.t", 1, 3, 0.5, MAX_MSG, &c) ==
          SHARC_OK);
    CHECK(sharc_store_set(c, "w.t/x/1", &v, sizeof(v)) == SHARC_OK);
    t0 = sharc_time_now();
    /* ranks 0 and 2 never come: the error names them (see the log) */
    CHECK(sharc_store_gather(c, "w.t/x", 3, 3, -1, out, sizeof(int), "a gather nobody joins") ==
          SHARC_ERR_TIMEOUT);
    CHECK(sharc_time_now() - t0 < 3.0);
    sharc_store_close(c);

    /* a value larger than the limit is refused before it is sent */
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.m", 0, 1, 2.0, 4096, &c) == SHARC_OK);
    {
        static char big[8192];
        CHECK(sharc_store_set(c, "w.m/x/0", big, sizeof(big)) == SHARC_ERR_INVALID);
        CHECK(sharc_store_set(c, "w.m/x/0", big, 4096) == SHARC_OK);
    }
    /* a gather over more ranks than the communicator has: the server drops the client */
    CHECK(sharc_store_gather(c, "w.m/x", 5, 1, -1, out, sizeof(int), "too wide") ==
          SHARC_ERR_REMOTE);
    sharc_store_close(c);

    /* a contribution of the wrong size is the remote's fault */
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.l", 0, 1, 2.0, MAX_MSG, &c) ==
          SHARC_OK);
    CHECK(sharc_store_set(c, "w.l/x/0", "abc", 3) == SHARC_OK);
    CHECK(sharc_store_gather(c, "w.l/x", 1, 1, -1, out, sizeof(int), "mismatch") ==
          SHARC_ERR_REMOTE);
    sharc_store_close(c);
}

/*
 * Replies come at once: 50 gathers that each bring back a value take well under the 40 ms a
 * reply once waited for the client's delayed acknowledgement (Nagle's algorithm on the
 * server's side held the value back behind the header): 2 s then, milliseconds now.
 */
static void test_round_trips(void)
{
    sharc_store_client_t *c;
    char key[64];
    int v = 42, out = 0;
    double t0;

    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w.r", 0, 1, 2.0, MAX_MSG, &c) ==
          SHARC_OK);
    t0 = sharc_time_now();
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "w.r/x%d/0", i);
        CHECK(sharc_store_set(c, key, &v, sizeof(v)) == SHARC_OK);
        snprintf(key, sizeof(key), "w.r/x%d", i);
        CHECK(sharc_store_gather(c, key, 1, 1, -1, &out, sizeof(out), "round trip") == SHARC_OK);
    }
    CHECK_MSG(sharc_time_now() - t0 < 1.0, "50 round trips took %.2f s", sharc_time_now() - t0);
    CHECK(out == 42);
    sharc_store_close(c);
}

int main(void)
{
    sharc_store_server_t *srv;
    sharc_store_client_t *c;
    int v = 0, lost = -1, by = -1;
    const char *why = NULL;
    int closed = 0;

    sharc_store_digest("test job", digest);
    CHECK(sharc_store_server_start("127.0.0.1", 0, digest, "w", 5.0, MAX_MSG, &srv) == SHARC_OK);
    port = sharc_store_server_port(srv);
    CHECK(port > 0);
    test_gather();
    test_hello();
    test_timeout();
    test_round_trips();
    sharc_store_server_stop(srv, 2.0);

    /* nobody serves: connecting times out, naming the address */
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w", 1, 2, 0.3, MAX_MSG, &c) ==
          SHARC_ERR_TIMEOUT);
    /* the server goes away under a connected client */
    CHECK(sharc_store_server_start("127.0.0.1", 0, digest, "w", 5.0, MAX_MSG, &srv) == SHARC_OK);
    port = sharc_store_server_port(srv);
    CHECK(sharc_store_connect("127.0.0.1", port, digest, "w", 1, 2, 2.0, MAX_MSG, &c) == SHARC_OK);
    sharc_store_server_stop(srv, 0.1); /* rank 1 is still connected: closes after 0.1 s */
    CHECK(sharc_store_gather(c, "w/x", 2, 2, -1, &v, sizeof(v), "after the server left") ==
          SHARC_ERR_REMOTE);
    CHECK(sharc_store_set(c, "w/y/0", &v, sizeof(v)) == SHARC_ERR_REMOTE); /* broken for good */
    /* and a check says so without a request, naming the store's address and the cause: closed
     * by the server's side (the bootstrap names its rank gone) */
    CHECK(sharc_store_poll(c, &lost, &by, &why, &closed) == SHARC_ERR_REMOTE && lost == -1 &&
          by == -1 && closed);
    CHECK_MSG(why != NULL && strstr(why, "lost the store at 127.0.0.1:") != NULL,
              "the loss of the store says: %s", why ? why : "(nothing)");
    sharc_store_close(c);
    return check_result("test_store");
}
