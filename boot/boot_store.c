/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot_store.c: the bootstrap over sharc's TCP store (env, slurm and explicit modes).
 * Rank 0 of the job serves the store; every rank, rank 0 included, talks to it through its
 * own connection per communicator. Keys are "<namespace>/<op><seq>/...": the namespace names
 * the communicator ("w0" for the job's first, "w0.3c1" for the fourth split's color 1,
 * "w0.g<id>" for a group of some ranks) and seq counts the calls on it, which every rank
 * makes in the same order.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
#include "boot.h"
#include "store.h"

/* What the communicators split from one job share: the address, and rank 0's server. */
typedef struct {
    int refs;   /* atomic */
    int failed; /* atomic: a communicator of the job failed */
    sharc_store_server_t *server;
    char host[256];
    int port;
    char digest[17];
    size_t max_msg;
} sharc_store_shared_t;

typedef struct {
    sharc_boot_t super;
    sharc_store_shared_t *shared;
    sharc_store_client_t *client;
    char ns[128];
    unsigned seq;
    int server_rank; /* the rank whose process serves the store (-1: none, or not known) */
} sharc_boot_store_t;

/*
 * Generation of the next job-wide store per address. Every rank of a job creates its
 * communicators from one store address in the same order, so "w<generation>" names the same
 * communicator on every rank, and a rank that is fast to create the next one cannot join
 * the previous store while rank 0 is still closing it (the server admits only its own
 * generation's names). Process-wide by nature: it counts what this process did.
 */
static pthread_mutex_t sharc_store_gen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sharc_store_gen {
    char addr[272];
    unsigned next;
    struct sharc_store_gen *next_entry;
} * sharc_store_gens;

static int sharc_store_next_generation(const char *host, int port, unsigned *gen_p)
{
    struct sharc_store_gen *g;
    char addr[272];

    snprintf(addr, sizeof(addr), "%s:%d", host, port);
    pthread_mutex_lock(&sharc_store_gen_lock);
    for (g = sharc_store_gens; g != NULL && strcmp(g->addr, addr) != 0; g = g->next_entry) {
    }
    if (g == NULL && (g = calloc(1, sizeof(*g))) != NULL) {
        snprintf(g->addr, sizeof(g->addr), "%s", addr);
        g->next_entry = sharc_store_gens;
        sharc_store_gens = g;
    }
    if (g != NULL) {
        *gen_p = g->next++;
    }
    pthread_mutex_unlock(&sharc_store_gen_lock);
    return g != NULL ? 0 : -1;
}

static void sharc_store_shared_put(sharc_store_shared_t *shared, double linger)
{
    if (__atomic_sub_fetch(&shared->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        /* a failed job: the ranks still connected may be unreachable; a second is enough for
         * those that only read their last answer */
        if (__atomic_load_n(&shared->failed, __ATOMIC_ACQUIRE) && linger > 1.0) {
            linger = 1.0;
        }
        sharc_store_server_stop(shared->server, linger);
        free(shared);
    }
}

static sharc_status_t sharc_boot_store_open(sharc_store_shared_t *shared, const char *ns, int rank,
                                            int size, double timeout, int server_rank,
                                            sharc_boot_t **boot_p);

static sharc_status_t sharc_bs_allgather(sharc_boot_t *boot, const void *sendbuf, void *recvbuf,
                                         size_t bytes)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;
    char prefix[192], key[208], what[224];
    sharc_status_t status;

    snprintf(prefix, sizeof(prefix), "%s/ag%u", bs->ns, bs->seq++);
    snprintf(key, sizeof(key), "%s/%d", prefix, boot->rank);
    snprintf(what, sizeof(what), "allgather #%u of communicator '%s'", bs->seq - 1, bs->ns);
    status = sharc_store_set(bs->client, key, sendbuf, bytes);
    if (status != SHARC_OK) {
        return status;
    }
    return sharc_store_gather(bs->client, prefix, (uint32_t)boot->size, (uint32_t)boot->size, -1,
                              recvbuf, bytes, what);
}

static sharc_status_t sharc_bs_alltoall(sharc_boot_t *boot, const void *sendbuf, void *recvbuf,
                                        size_t bytes)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;
    char prefix[192], key[224], what[224];
    unsigned seq = bs->seq++;
    sharc_status_t status;

    for (int dst = 0; dst < boot->size; dst++) {
        snprintf(key, sizeof(key), "%s/a2a%u/d%d/%d", bs->ns, seq, dst, boot->rank);
        status =
            sharc_store_set(bs->client, key, (const char *)sendbuf + (size_t)dst * bytes, bytes);
        if (status != SHARC_OK) {
            return status;
        }
    }
    snprintf(prefix, sizeof(prefix), "%s/a2a%u/d%d", bs->ns, seq, boot->rank);
    snprintf(what, sizeof(what), "alltoall #%u of communicator '%s'", seq, bs->ns);
    return sharc_store_gather(bs->client, prefix, (uint32_t)boot->size, 1, -1, recvbuf, bytes,
                              what);
}

static sharc_status_t sharc_bs_bcast(sharc_boot_t *boot, void *buf, size_t bytes, int root)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;
    char prefix[192], key[208], what[224];
    unsigned seq = bs->seq++;
    sharc_status_t status;

    snprintf(prefix, sizeof(prefix), "%s/bc%u", bs->ns, seq);
    if (boot->rank == root) {
        snprintf(key, sizeof(key), "%s/0", prefix);
        status = sharc_store_set(bs->client, key, buf, bytes);
        if (status != SHARC_OK) {
            return status;
        }
    }
    snprintf(what, sizeof(what), "broadcast #%u from rank %d of communicator '%s'", seq, root,
             bs->ns);
    /* One key, read by every rank: the root's index in the reply is 0, not its rank. */
    return sharc_store_gather(bs->client, prefix, 1, (uint32_t)boot->size, root, buf, bytes, what);
}

static sharc_status_t sharc_bs_barrier(sharc_boot_t *boot)
{
    char *scratch = malloc((size_t)boot->size);
    char one = 1;
    sharc_status_t status;

    if (scratch == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_bs_allgather(boot, &one, scratch, 1);
    free(scratch);
    return status;
}

/* Connect the bootstrap of a communicator made from @p bs's, named @p ns (a child of its
 * namespace: on the same server, which admits it without a new rendezvous). */
static sharc_status_t sharc_bs_child(sharc_boot_store_t *bs, char *ns, size_t ns_size, int rank,
                                     int size, int server_rank, sharc_boot_t **new_p)
{
    if (strlen(ns) >= sizeof(bs->ns)) {
        /* deep trees of communicators: a hash keeps names short and distinct, under the
         * job's root */
        unsigned long long h = sharc_hash64(SHARC_HASH_SEED, ns, strlen(ns));
        size_t root_len = strcspn(bs->ns, ".");

        snprintf(ns, ns_size, "%.*s.h%016llx", (int)root_len, bs->ns, h);
    }
    return sharc_boot_store_open(bs->shared, ns, rank, size, bs->super.timeout, server_rank, new_p);
}

static sharc_status_t sharc_bs_split(sharc_boot_t *boot, int color, int key, int new_rank,
                                     int new_size, sharc_boot_t **new_p)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;
    unsigned seq = bs->seq++;
    char ns[160];

    if (color == SHARC_COMM_SPLIT_NOCOLOR) {
        *new_p = NULL;
        return SHARC_OK;
    }
    snprintf(ns, sizeof(ns), "%s.%uc%d", bs->ns, seq, color);
    /* (where the server's rank went in the split, this rank does not know) */
    return sharc_bs_child(bs, ns, sizeof(ns), new_rank, new_size, -1, new_p);
}

/* Only the members call it, so the parent's call count (seq) cannot name the group: its id
 * does, which the members agree on without talking. */
static sharc_status_t sharc_bs_group(sharc_boot_t *boot, const int *ranks, int n, int new_rank,
                                     uint64_t id, sharc_boot_t **new_p)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;
    int server_rank = -1;
    char ns[160];

    for (int i = 0; bs->server_rank >= 0 && i < n; i++) {
        server_rank = (ranks[i] == bs->server_rank) ? i : server_rank;
    }
    snprintf(ns, sizeof(ns), "%s.g%016llx", bs->ns, (unsigned long long)id);
    return sharc_bs_child(bs, ns, sizeof(ns), new_rank, n, server_rank, new_p);
}

static void sharc_bs_destroy(sharc_boot_t *boot)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;

    if (boot->failed) {
        __atomic_store_n(&bs->shared->failed, 1, __ATOMIC_RELEASE);
    }
    sharc_store_close(bs->client);
    sharc_store_shared_put(bs->shared, boot->timeout);
    free(bs);
}

/* A store that closed its connection names its server's rank gone, where that rank is in this
 * communicator; one that fell silent names no rank (this rank may be the one cut off). */
static sharc_status_t sharc_bs_check(sharc_boot_t *boot, sharc_boot_loss_t *loss_p)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;
    int closed = 0;
    sharc_status_t status =
        sharc_store_poll(bs->client, &loss_p->lost, &loss_p->by, &loss_p->store, &closed);

    if (status != SHARC_OK && loss_p->lost < 0 && closed && bs->server_rank >= 0) {
        loss_p->lost = loss_p->by = bs->server_rank;
    }
    return status;
}

static void sharc_bs_report(sharc_boot_t *boot, int rank)
{
    sharc_store_report(((sharc_boot_store_t *)boot)->client, rank);
}

static void sharc_bs_keepalive(sharc_boot_t *boot, double interval, double silent_max)
{
    sharc_store_keepalive(((sharc_boot_store_t *)boot)->client, interval, silent_max);
}

static void sharc_bs_stall(sharc_boot_t *boot, uint64_t ordinal)
{
    sharc_store_stall(((sharc_boot_store_t *)boot)->client, ordinal);
}

static int sharc_bs_round(sharc_boot_t *boot, uint32_t *round_p, uint64_t *ordinal_p)
{
    return sharc_store_round(((sharc_boot_store_t *)boot)->client, round_p, ordinal_p);
}

static sharc_status_t sharc_bs_exchange(sharc_boot_t *boot, uint32_t round, const void *mine,
                                        void *all, size_t len, double timeout,
                                        unsigned char *present)
{
    sharc_boot_store_t *bs = (sharc_boot_store_t *)boot;
    char prefix[160];

    snprintf(prefix, sizeof(prefix), "%s/v%u", bs->ns, round);
    return sharc_store_exchange(bs->client, prefix, (uint32_t)boot->size, (uint32_t)boot->rank,
                                mine, all, len, timeout, present);
}

static const sharc_boot_ops_t sharc_boot_store_ops = {
    .name = "store",
    .allgather = sharc_bs_allgather,
    .alltoall = sharc_bs_alltoall,
    .bcast = sharc_bs_bcast,
    .barrier = sharc_bs_barrier,
    .split = sharc_bs_split,
    .group = sharc_bs_group,
    .destroy = sharc_bs_destroy,
    .check = sharc_bs_check,
    .report = sharc_bs_report,
    .keepalive = sharc_bs_keepalive,
    .stall = sharc_bs_stall,
    .round = sharc_bs_round,
    .exchange = sharc_bs_exchange,
};

/* Connect one communicator's bootstrap; takes a reference on @p shared on success. */
static sharc_status_t sharc_boot_store_open(sharc_store_shared_t *shared, const char *ns, int rank,
                                            int size, double timeout, int server_rank,
                                            sharc_boot_t **boot_p)
{
    sharc_boot_store_t *bs = calloc(1, sizeof(*bs));
    sharc_status_t status;

    if (bs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    bs->super.ops = &sharc_boot_store_ops;
    bs->super.rank = rank;
    bs->super.size = size;
    bs->super.timeout = timeout;
    bs->server_rank = server_rank;
    snprintf(bs->ns, sizeof(bs->ns), "%s", ns);
    snprintf(bs->super.name, sizeof(bs->super.name), "%s", ns);
    status = sharc_store_connect(shared->host, shared->port, shared->digest, ns, rank, size,
                                 timeout, shared->max_msg, &bs->client);
    if (status != SHARC_OK) {
        free(bs);
        return status;
    }
    bs->shared = shared;
    __atomic_add_fetch(&shared->refs, 1, __ATOMIC_ACQ_REL);
    *boot_p = &bs->super;
    return SHARC_OK;
}

sharc_status_t sharc_boot_store_create(const sharc_cfg_t *cfg, const sharc_launch_t *launch,
                                       sharc_boot_t **boot_p)
{
    sharc_store_shared_t *shared;
    sharc_status_t status;
    const sharc_boot_cfg_t *bc = sharc_boot_cfg(cfg);
    const char *bind;
    char ns[32];
    unsigned gen;

    if (sharc_store_next_generation(launch->store_host, launch->store_port, &gen) != 0) {
        return SHARC_ERR_NOMEM;
    }
    snprintf(ns, sizeof(ns), "w%u", gen);
    shared = calloc(1, sizeof(*shared));
    if (shared == NULL) {
        return SHARC_ERR_NOMEM;
    }
    shared->refs = 1; /* this function's, dropped at the end */
    snprintf(shared->host, sizeof(shared->host), "%s", launch->store_host);
    shared->port = launch->store_port;
    shared->max_msg = bc->max_msg;
    sharc_store_digest(launch->token, shared->digest);
    if (launch->rank == 0) {
        bind = (bc->bind_addr[0] != '\0') ? bc->bind_addr : shared->host;
        status = sharc_store_server_start(bind, shared->port, shared->digest, ns, bc->timeout,
                                          bc->max_msg, &shared->server);
        if (status != SHARC_OK) {
            sharc_error("rank 0: cannot serve the bootstrap store at %s:%d (from %s)", bind,
                        shared->port, launch->store_from);
            free(shared);
            return status;
        }
    }
    sharc_info("%s bootstrap: rank %d of %d, store %s:%d (from %s)",
               sharc_bootstrap_name(launch->mode), launch->rank, launch->size, shared->host,
               shared->port, launch->store_from);
    /* rank 0 serves the job's store (above) */
    status = sharc_boot_store_open(shared, ns, launch->rank, launch->size, bc->timeout, 0, boot_p);
    if (status == SHARC_OK) {
        (*boot_p)->mode = launch->mode;
    }
    /* On failure rank 0 stops its server at once: nobody can complete this job anyway. */
    sharc_store_shared_put(shared, status == SHARC_OK ? bc->timeout : 0.0);
    return status;
}
