/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot_mpi.c: the bootstrap over MPI, for jobs started by mpirun. Exchanges use MPI's
 * nonblocking collectives polled against the bootstrap timeout, so a rank that never
 * arrives gives SHARC_ERR_TIMEOUT instead of a hang. If the application has not initialized
 * MPI, sharc does, and finalizes it at process exit. Built only with MPI
 * (boot_mpi_none.c otherwise).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "boot.h"

#include "../base/log.h"
#include "../base/util.h"

typedef struct {
    sharc_boot_t super;
    MPI_Comm comm;
    int broken; /* a timed-out request is still pending on comm: it cannot be reused */
} sharc_boot_mpi_t;

/* MPI itself is process-wide; so is the count of bootstraps that keep it initialized. */
static pthread_mutex_t sharc_mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int sharc_mpi_users;

/*
 * MPI can be initialized once per process, so when sharc had to initialize it, it finalizes
 * it at exit rather than when its last communicator goes (a later sharc_comm_create could
 * not initialize it again), as mpi4py does. mpirun reports a process that exits without
 * MPI_Finalize as failed, so it must happen.
 */
static void sharc_mpi_finalize_at_exit(void)
{
    int finalized = 1;

    MPI_Finalized(&finalized);
    if (!finalized) {
        MPI_Finalize();
    }
}

static sharc_status_t sharc_mpi_error(const char *call, int ret)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(ret, msg, &len) != MPI_SUCCESS) {
        snprintf(msg, sizeof(msg), "error %d", ret);
    }
    sharc_error("mpi bootstrap: %s failed: %s", call, msg);
    return SHARC_ERR_BACKEND;
}

static sharc_status_t sharc_mpi_acquire(void)
{
    int initialized, finalized, provided, ret;
    sharc_status_t status = SHARC_OK;

    pthread_mutex_lock(&sharc_mpi_lock);
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) {
        sharc_error("mpi bootstrap: MPI has already been finalized in this process");
        status = SHARC_ERR_UNSUPPORTED;
    } else if (!initialized) {
        ret = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (ret != MPI_SUCCESS) {
            status = sharc_mpi_error("MPI_Init_thread", ret);
        } else if (atexit(sharc_mpi_finalize_at_exit) != 0) {
            sharc_warn("mpi bootstrap: cannot register MPI_Finalize at exit; call it yourself");
        }
    }
    if (status == SHARC_OK) {
        sharc_mpi_users++;
    }
    pthread_mutex_unlock(&sharc_mpi_lock);
    return status;
}

static void sharc_mpi_release(void)
{
    pthread_mutex_lock(&sharc_mpi_lock);
    sharc_mpi_users--;
    pthread_mutex_unlock(&sharc_mpi_lock);
}

/* Poll @p req until done or @p timeout; a request left pending sets *broken_p. */
static sharc_status_t sharc_mpi_poll(MPI_Request *req, double timeout, int rank, int *broken_p,
                                     const char *what)
{
    double deadline = sharc_time_now() + timeout;
    long sleep_ns = 1000;
    int done = 0, ret;

    for (;;) {
        ret = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (ret != MPI_SUCCESS) {
            *broken_p = 1;
            return sharc_mpi_error(what, ret);
        }
        if (done) {
            return SHARC_OK;
        }
        if (sharc_time_now() > deadline) {
            *broken_p = 1;
            sharc_error("mpi bootstrap: rank %d timed out after %.1f s in %s: some rank did not "
                        "arrive",
                        rank, timeout, what);
            return SHARC_ERR_TIMEOUT;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        sleep_ns = SHARC_MIN(sleep_ns * 2, 1000000L);
    }
}

static sharc_status_t sharc_mpi_wait(sharc_boot_mpi_t *bm, MPI_Request *req, const char *what)
{
    return sharc_mpi_poll(req, bm->super.timeout, bm->super.rank, &bm->broken, what);
}

static sharc_status_t sharc_mpi_check(sharc_boot_mpi_t *bm)
{
    if (bm->broken) {
        sharc_error("mpi bootstrap: rank %d: an earlier exchange failed; the communicator can "
                    "no longer bootstrap",
                    bm->super.rank);
        return SHARC_ERR_REMOTE;
    }
    return SHARC_OK;
}

static int sharc_mpi_count(size_t bytes)
{
    if (bytes > (size_t)INT32_MAX) {
        sharc_error("mpi bootstrap: %zu bytes are too many for one exchange", bytes);
        return -1;
    }
    return (int)bytes;
}

/* MPI_Iallgather and MPI_Ialltoall share this signature. */
typedef int (*sharc_mpi_xchg_fn_t)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype,
                                   MPI_Comm, MPI_Request *);

/*
 * MPI works on private copies of the caller's buffers: a collective that times out stays
 * pending inside MPI and may still write when a late rank arrives, long after the caller
 * has freed its buffers. On timeout the copies are leaked with the communicator.
 */
static sharc_status_t sharc_bm_exchange(sharc_boot_t *boot, sharc_mpi_xchg_fn_t fn,
                                        const char *fn_name, const char *what, const void *sendbuf,
                                        size_t send_bytes, void *recvbuf, size_t recv_bytes,
                                        int count)
{
    sharc_boot_mpi_t *bm = (sharc_boot_mpi_t *)boot;
    sharc_status_t status;
    MPI_Request req;
    char *tmp;
    int ret;

    if (sharc_mpi_check(bm) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    tmp = malloc(send_bytes + recv_bytes + 1);
    if (tmp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    memcpy(tmp, sendbuf, send_bytes);
    ret = fn(tmp, count, MPI_BYTE, tmp + send_bytes, count, MPI_BYTE, bm->comm, &req);
    if (ret != MPI_SUCCESS) {
        free(tmp);
        return sharc_mpi_error(fn_name, ret);
    }
    status = sharc_mpi_wait(bm, &req, what);
    if (status == SHARC_OK) {
        memcpy(recvbuf, tmp + send_bytes, recv_bytes);
    }
    if (!bm->broken) {
        free(tmp);
    }
    return status;
}

static sharc_status_t sharc_bm_allgather(sharc_boot_t *boot, const void *sendbuf, void *recvbuf,
                                         size_t bytes)
{
    int count = sharc_mpi_count(bytes);

    return count < 0
               ? SHARC_ERR_INVALID
               : sharc_bm_exchange(boot, MPI_Iallgather, "MPI_Iallgather", "allgather", sendbuf,
                                   bytes, recvbuf, bytes * (size_t)boot->size, count);
}

static sharc_status_t sharc_bm_alltoall(sharc_boot_t *boot, const void *sendbuf, void *recvbuf,
                                        size_t bytes)
{
    int count = sharc_mpi_count(bytes);

    return count < 0 ? SHARC_ERR_INVALID
                     : sharc_bm_exchange(boot, MPI_Ialltoall, "MPI_Ialltoall", "alltoall", sendbuf,
                                         bytes * (size_t)boot->size, recvbuf,
                                         bytes * (size_t)boot->size, count);
}

static sharc_status_t sharc_bm_bcast(sharc_boot_t *boot, void *buf, size_t bytes, int root)
{
    sharc_boot_mpi_t *bm = (sharc_boot_mpi_t *)boot;
    int count = sharc_mpi_count(bytes), ret;
    sharc_status_t status;
    MPI_Request req;
    char *tmp;

    if (count < 0) {
        return SHARC_ERR_INVALID;
    }
    if (sharc_mpi_check(bm) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    tmp = malloc(bytes + 1); /* a private copy, as in sharc_bm_exchange */
    if (tmp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    memcpy(tmp, buf, bytes);
    ret = MPI_Ibcast(tmp, count, MPI_BYTE, root, bm->comm, &req);
    if (ret != MPI_SUCCESS) {
        free(tmp);
        return sharc_mpi_error("MPI_Ibcast", ret);
    }
    status = sharc_mpi_wait(bm, &req, "broadcast");
    if (status == SHARC_OK) {
        memcpy(buf, tmp, bytes);
    }
    if (!bm->broken) {
        free(tmp);
    }
    return status;
}

static sharc_status_t sharc_bm_barrier(sharc_boot_t *boot)
{
    sharc_boot_mpi_t *bm = (sharc_boot_mpi_t *)boot;
    MPI_Request req;
    int ret;

    if (sharc_mpi_check(bm) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    ret = MPI_Ibarrier(bm->comm, &req);
    return (ret != MPI_SUCCESS) ? sharc_mpi_error("MPI_Ibarrier", ret)
                                : sharc_mpi_wait(bm, &req, "barrier");
}

static sharc_status_t sharc_bm_wrap(const sharc_cfg_t *cfg, double timeout, MPI_Comm comm,
                                    sharc_boot_t **boot_p);

static sharc_status_t sharc_bm_split(sharc_boot_t *boot, int color, int key, int new_rank,
                                     int new_size, sharc_boot_t **new_p)
{
    sharc_boot_mpi_t *bm = (sharc_boot_mpi_t *)boot;
    MPI_Comm comm;
    sharc_status_t status;
    int ret;

    if (sharc_mpi_check(bm) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    /* Blocking, but safe: the comm layer's allgather of colors has seen every rank arrive. */
    ret = MPI_Comm_split(bm->comm, color == SHARC_COMM_SPLIT_NOCOLOR ? MPI_UNDEFINED : color,
                         new_rank, &comm);
    if (ret != MPI_SUCCESS) {
        return sharc_mpi_error("MPI_Comm_split", ret);
    }
    if (comm == MPI_COMM_NULL) {
        *new_p = NULL;
        return SHARC_OK;
    }
    status = sharc_bm_wrap(NULL, boot->timeout, comm, new_p);
    if (status != SHARC_OK) {
        MPI_Comm_free(&comm);
    }
    return status;
}

/*
 * Wait, bounded by the timeout, until every member of a group has arrived: each tells the
 * first member, which answers each once all have (point-to-point on the parent, under a tag of
 * the group's). MPI_Comm_create_group itself cannot be bounded; after this it cannot hang.
 */
static sharc_status_t sharc_bm_group_arrive(sharc_boot_mpi_t *bm, const int *ranks, int n, int tag)
{
    double deadline = sharc_time_now() + bm->super.timeout;
    sharc_status_t status = SHARC_OK;
    MPI_Request req;
    char token = 1;
    int ret;

    for (int step = 0; step < 2 && status == SHARC_OK; step++) {
        /* step 0: the others arrive at the first member; step 1: it lets them go */
        int leader = bm->super.rank == ranks[0];
        int recv = (step == 0) == leader;

        for (int i = leader ? 1 : 0; i < (leader ? n : 1) && status == SHARC_OK; i++) {
            ret = recv ? MPI_Irecv(&token, 1, MPI_CHAR, ranks[i], tag, bm->comm, &req)
                       : MPI_Isend(&token, 1, MPI_CHAR, ranks[i], tag, bm->comm, &req);
            status = (ret != MPI_SUCCESS)
                         ? sharc_mpi_error(recv ? "MPI_Irecv" : "MPI_Isend", ret)
                         : sharc_mpi_poll(&req, SHARC_MAX(deadline - sharc_time_now(), 0.0),
                                          bm->super.rank, &bm->broken, "a group's arrival");
        }
    }
    return status;
}

/* MPI_Comm_create_group: collective over the members only (MPI-3). Its tag tells apart
 * groups made at the same time; MPI guarantees tags up to 32767. */
static sharc_status_t sharc_bm_group(sharc_boot_t *boot, const int *ranks, int n, int new_rank,
                                     uint64_t id, sharc_boot_t **new_p)
{
    sharc_boot_mpi_t *bm = (sharc_boot_mpi_t *)boot;
    int tag = (int)(id % 32768), ret;
    MPI_Group all, members;
    MPI_Comm comm = MPI_COMM_NULL;
    sharc_status_t status;

    if (sharc_mpi_check(bm) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    status = sharc_bm_group_arrive(bm, ranks, n, tag);
    if (status != SHARC_OK) {
        return status;
    }
    ret = MPI_Comm_group(bm->comm, &all);
    if (ret != MPI_SUCCESS) {
        return sharc_mpi_error("MPI_Comm_group", ret);
    }
    ret = MPI_Group_incl(all, n, ranks, &members);
    MPI_Group_free(&all);
    if (ret != MPI_SUCCESS) {
        return sharc_mpi_error("MPI_Group_incl", ret);
    }
    ret = MPI_Comm_create_group(bm->comm, members, tag, &comm);
    MPI_Group_free(&members);
    if (ret != MPI_SUCCESS) {
        return sharc_mpi_error("MPI_Comm_create_group", ret);
    }
    status = sharc_bm_wrap(NULL, boot->timeout, comm, new_p);
    if (status != SHARC_OK) {
        MPI_Comm_free(&comm);
    }
    return status;
}

static void sharc_bm_destroy(sharc_boot_t *boot)
{
    sharc_boot_mpi_t *bm = (sharc_boot_mpi_t *)boot;

    /* A communicator with a timed-out request pending cannot be freed safely: leak it. */
    if (!bm->broken) {
        MPI_Comm_free(&bm->comm);
    }
    free(bm);
    sharc_mpi_release();
}

static const sharc_boot_ops_t sharc_boot_mpi_ops = {
    .name = "mpi",
    .allgather = sharc_bm_allgather,
    .alltoall = sharc_bm_alltoall,
    .bcast = sharc_bm_bcast,
    .barrier = sharc_bm_barrier,
    .split = sharc_bm_split,
    .group = sharc_bm_group,
    .destroy = sharc_bm_destroy,
};

/* MPI communicators this process made; every rank makes them in the same order, so the
 * n-th has one name on every rank ("mpi.<n>", for flight dumps). */
static unsigned sharc_bm_made;

/* Wrap @p comm (owned from now on) in a bootstrap; takes an MPI user reference. */
static sharc_status_t sharc_bm_wrap(const sharc_cfg_t *cfg, double timeout, MPI_Comm comm,
                                    sharc_boot_t **boot_p)
{
    sharc_boot_mpi_t *bm;
    sharc_status_t status;

    status = sharc_mpi_acquire();
    if (status != SHARC_OK) {
        return status;
    }
    bm = calloc(1, sizeof(*bm));
    if (bm == NULL) {
        sharc_mpi_release();
        return SHARC_ERR_NOMEM;
    }
    bm->super.ops = &sharc_boot_mpi_ops;
    bm->super.mode = SHARC_BOOTSTRAP_MPI;
    bm->super.timeout = timeout;
    snprintf(bm->super.name, sizeof(bm->super.name), "mpi.%u",
             __atomic_fetch_add(&sharc_bm_made, 1, __ATOMIC_RELAXED));
    bm->comm = comm;
    MPI_Comm_rank(comm, &bm->super.rank);
    MPI_Comm_size(comm, &bm->super.size);
    *boot_p = &bm->super;
    return SHARC_OK;
}

sharc_status_t sharc_boot_mpi_create(const sharc_cfg_t *cfg, sharc_boot_t **boot_p)
{
    sharc_status_t status;
    MPI_Request req;
    MPI_Comm comm;
    int ret, rank = -1, broken = 0;

    /* Hold MPI initialized across the dup; sharc_bm_wrap takes its own reference. */
    status = sharc_mpi_acquire();
    if (status != SHARC_OK) {
        return status;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* A private communicator, so sharc's traffic never matches the application's; the
     * nonblocking dup keeps a rank that never arrives from hanging the others. */
    ret = MPI_Comm_idup(MPI_COMM_WORLD, &comm, &req);
    if (ret != MPI_SUCCESS) {
        status = sharc_mpi_error("MPI_Comm_idup", ret);
    } else if ((status = sharc_mpi_poll(&req, sharc_boot_cfg(cfg)->timeout, rank, &broken,
                                        "duplicating MPI_COMM_WORLD")) != SHARC_OK) {
        /* the pending dup is leaked: MPI offers no way to cancel it */
    } else {
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        status = sharc_bm_wrap(cfg, sharc_boot_cfg(cfg)->timeout, comm, boot_p);
        if (status != SHARC_OK) {
            MPI_Comm_free(&comm);
        }
    }
    sharc_mpi_release();
    return status;
}
