/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot.h: the internal bootstrap API. A bootstrap connects the ranks of one communicator
 * before any data transport exists, and carries the small exchanges every layer needs at
 * setup: UCX worker addresses, NCCL unique ids, QP numbers, node names. It is slow by design
 * (a TCP store or MPI) and every call is bounded by SHARC_BOOTSTRAP_TIMEOUT.
 * All calls are collective over the bootstrap's ranks unless said otherwise.
 */
#ifndef SHARC_BOOT_H
#define SHARC_BOOT_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/comm.h>
#include <sharc/launch.h>

#include "../base/config_int.h"
#include "../base/def_int.h"

typedef struct sharc_boot sharc_boot_t;

/* The bootstrap's knobs (SHARC_BOOTSTRAP_*; boot_cfg.c holds their table). */
typedef struct {
    int mode;          /* sharc_bootstrap_t */
    double timeout;    /* seconds, for every bootstrap step */
    const char *token; /* "" for derived */
    const char *bind_addr;
    int port;                 /* 0: derive */
    size_t max_msg;           /* bytes */
    double heartbeat;         /* seconds between heartbeats to the store */
    double heartbeat_timeout; /* a silence this long names a rank, or the store, gone */
} sharc_boot_cfg_t;

extern SHARC_HIDDEN const sharc_cfg_table_t sharc_boot_cfg_table;

static inline const sharc_boot_cfg_t *sharc_boot_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_boot_cfg_t *)sharc_cfg_get(cfg, &sharc_boot_cfg_table);
}

/* What a rank knows of a loss in its communicator (check()). */
typedef struct {
    int lost, by;      /* the rank named gone and the rank that reported it (the same when its
                        * process died); -1 and -1 when no rank was named */
    const char *store; /* NULL or, when this rank lost the bootstrap's store itself, where and
                        * why (valid while the bootstrap is): cut off from it, the rank can no
                        * longer hear which ranks live */
} sharc_boot_loss_t;

typedef struct {
    const char *name;
    /** Every rank contributes @p bytes; recvbuf gets size * bytes in rank order. */
    sharc_status_t (*allgather)(sharc_boot_t *boot, const void *sendbuf, void *recvbuf,
                                size_t bytes);
    /** Block i of sendbuf (@p bytes each) goes to rank i; block j of recvbuf came from j. */
    sharc_status_t (*alltoall)(sharc_boot_t *boot, const void *sendbuf, void *recvbuf,
                               size_t bytes);
    /** @p buf of @p root is copied to every rank. */
    sharc_status_t (*bcast)(sharc_boot_t *boot, void *buf, size_t bytes, int root);
    /** Returns once every rank has entered. */
    sharc_status_t (*barrier)(sharc_boot_t *boot);
    /**
     * Make the bootstrap of a sub-group. Called by every rank of @p boot; ranks with
     * color SHARC_COMM_SPLIT_NOCOLOR get NULL. The comm layer has already computed the
     * group (it allgathers the colors and keys): @p new_rank and @p new_size.
     */
    sharc_status_t (*split)(sharc_boot_t *boot, int color, int key, int new_rank, int new_size,
                            sharc_boot_t **new_p);
    /**
     * Optional (NULL: this bootstrap cannot). Make the bootstrap of a group of @p n ranks of
     * @p boot, called by those ranks only: new rank i is @p ranks[i], this rank is
     * ranks[@p new_rank]. @p id is the same on every member and differs from that of every
     * other group made from @p boot (the comm layer derives it from the list, the caller's
     * tag and how many groups of both came before).
     */
    sharc_status_t (*group)(sharc_boot_t *boot, const int *ranks, int n, int new_rank, uint64_t id,
                            sharc_boot_t **new_p);
    /** Release this rank's side. Not collective. */
    void (*destroy)(sharc_boot_t *boot);
    /**
     * Optional (NULL: this bootstrap cannot tell). Not collective, never blocks: whether a
     * rank of the communicator is known to be gone, from anyone's report (its process died,
     * or a peer's transport lost it), or this rank lost the means to hear of it (the store).
     * SHARC_OK, or SHARC_ERR_REMOTE with what is known in *loss_p.
     */
    sharc_status_t (*check)(sharc_boot_t *boot, sharc_boot_loss_t *loss_p);
    /** Optional. Not collective: tell every rank that @p rank is gone (this rank's transport
     *  lost it), so that their collectives fail at once too. */
    void (*report)(sharc_boot_t *boot, int rank);
    /**
     * Optional (NULL: this bootstrap has no liveness of its own). From a thread of the
     * rank's own, every half interval or so: heartbeats both ways (sharc_store_keepalive),
     * so that a rank or a store that falls silent is named gone through check(). Never
     * blocks on a request of another thread.
     */
    void (*keepalive)(sharc_boot_t *boot, double interval, double silent_max);
    /**
     * Optional (NULL: no live verdict). The stall verdict's exchange (coll/diagnostics/stall.c):
     * stall() asks every rank for its head about collective @p ordinal; round() says, without
     * blocking, that such a round was asked for (1, with its number and ordinal); exchange()
     * gives this rank's head of @p len bytes and gathers every rank's within @p timeout,
     * present[r] = 0 for ranks that did not answer.
     */
    void (*stall)(sharc_boot_t *boot, uint64_t ordinal);
    int (*round)(sharc_boot_t *boot, uint32_t *round_p, uint64_t *ordinal_p);
    sharc_status_t (*exchange)(sharc_boot_t *boot, uint32_t round, const void *mine, void *all,
                               size_t len, double timeout, unsigned char *present);
} sharc_boot_ops_t;

struct sharc_boot {
    const sharc_boot_ops_t *ops;
    sharc_bootstrap_t mode;
    int rank, size;
    double timeout; /* seconds, for every wait */
    char name[128]; /* the communicator's, alike on every rank: "w0", "w0.3c1", "mpi.2" */
    int failed;     /* set before destroy when its communicator failed: nobody waits for
                     * the others to leave (the store's rank 0 stops at once) */
};

/*
 * What the launcher told this process, parsed from the environment (or the caller's
 * params) by sharc_launch_read. -1 marks what the launcher did not say.
 */
typedef struct {
    sharc_bootstrap_t mode;
    int rank, size;
    int node_hint; /* launcher's node index, or -1 */
    int local_rank, local_size;
    char store_host[256];
    int store_port;
    const char *store_from; /* where the address came from, for messages */
    char token[256];
} sharc_launch_t;

/**
 * Decide the bootstrap and read the launch variables for it. Errors name the variable.
 */
SHARC_HIDDEN sharc_status_t sharc_launch_read(const sharc_cfg_t *cfg,
                                              const sharc_comm_params_t *params,
                                              sharc_launch_t *launch);

/**
 * The launcher whose variables are set, in the order the auto bootstrap looks (mpirun only
 * when @p mpirun is nonzero: a build without MPI looks past it). Reads the environment only.
 */
SHARC_HIDDEN sharc_launcher_t sharc_launch_launcher(int mpirun);

/** The bootstrap that reads @p launcher's variables (single for none). */
SHARC_HIDDEN sharc_bootstrap_t sharc_launch_mode(sharc_launcher_t launcher);

/**
 * Read the integer launch variable @p var into *out_p, within [@p min, @p max]; errors are
 * logged as "<mode> bootstrap: ..." naming the variable and its value.
 * @return 0 when set and valid; 1 when unset and not @p required; -1 on error.
 */
SHARC_HIDDEN int sharc_launch_int(const char *mode, const char *var, long min, long max,
                                  int required, int *out_p);

/** Create the bootstrap of the whole job described by @p launch. */
SHARC_HIDDEN sharc_status_t sharc_boot_create(const sharc_cfg_t *cfg, const sharc_launch_t *launch,
                                              sharc_boot_t **boot_p);

/* Per-mode constructors, called by sharc_boot_create. */
SHARC_HIDDEN sharc_status_t sharc_boot_single_create(const sharc_cfg_t *cfg, sharc_boot_t **boot_p);
SHARC_HIDDEN sharc_status_t sharc_boot_store_create(const sharc_cfg_t *cfg,
                                                    const sharc_launch_t *launch,
                                                    sharc_boot_t **boot_p);
SHARC_HIDDEN sharc_status_t sharc_boot_mpi_create(const sharc_cfg_t *cfg, sharc_boot_t **boot_p);

static inline sharc_status_t sharc_boot_allgather(sharc_boot_t *boot, const void *sendbuf,
                                                  void *recvbuf, size_t bytes)
{
    return boot->ops->allgather(boot, sendbuf, recvbuf, bytes);
}

static inline sharc_status_t sharc_boot_alltoall(sharc_boot_t *boot, const void *sendbuf,
                                                 void *recvbuf, size_t bytes)
{
    return boot->ops->alltoall(boot, sendbuf, recvbuf, bytes);
}

static inline sharc_status_t sharc_boot_bcast(sharc_boot_t *boot, void *buf, size_t bytes, int root)
{
    return boot->ops->bcast(boot, buf, bytes, root);
}

static inline sharc_status_t sharc_boot_barrier(sharc_boot_t *boot)
{
    return boot->ops->barrier(boot);
}

static inline sharc_status_t sharc_boot_split(sharc_boot_t *boot, int color, int key, int new_rank,
                                              int new_size, sharc_boot_t **new_p)
{
    return boot->ops->split(boot, color, key, new_rank, new_size, new_p);
}

/* SHARC_ERR_UNSUPPORTED (not logged) where the bootstrap has no groups of some ranks. */
static inline sharc_status_t sharc_boot_group(sharc_boot_t *boot, const int *ranks, int n,
                                              int new_rank, uint64_t id, sharc_boot_t **new_p)
{
    return (boot->ops->group != NULL) ? boot->ops->group(boot, ranks, n, new_rank, id, new_p)
                                      : SHARC_ERR_UNSUPPORTED;
}

/* check(), or SHARC_OK for a bootstrap that cannot tell; *loss_p is filled either way (-1, -1,
 * NULL for nothing known). */
static inline sharc_status_t sharc_boot_check(sharc_boot_t *boot, sharc_boot_loss_t *loss_p)
{
    *loss_p = (sharc_boot_loss_t){.lost = -1, .by = -1};
    return (boot->ops->check != NULL) ? boot->ops->check(boot, loss_p) : SHARC_OK;
}

static inline void sharc_boot_report(sharc_boot_t *boot, int rank)
{
    if (boot->ops->report != NULL) {
        boot->ops->report(boot, rank);
    }
}

static inline void sharc_boot_keepalive(sharc_boot_t *boot, double interval, double silent_max)
{
    if (boot->ops->keepalive != NULL) {
        boot->ops->keepalive(boot, interval, silent_max);
    }
}

static inline void sharc_boot_destroy(sharc_boot_t *boot)
{
    if (boot != NULL) {
        boot->ops->destroy(boot);
    }
}

/*
 * Slurm host lists ("node[01-04,07],gpu-a[1-2]x"): expand into *hosts_p (an array of
 * *n_p malloc'ed strings, free with sharc_nodelist_free). At most @p max hosts.
 * SHARC_ERR_INVALID for malformed lists (unbalanced brackets, reversed or non-numeric ranges).
 */
SHARC_HIDDEN sharc_status_t sharc_nodelist_expand(const char *list, size_t max, char ***hosts_p,
                                                  size_t *n_p);
SHARC_HIDDEN void sharc_nodelist_free(char **hosts, size_t n);

#endif
