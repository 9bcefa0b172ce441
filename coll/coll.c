/*
 * coll.c: the collective API: argument checks (before any communication), tasks and their
 * queue per communicator, algorithm selection, and the progress engine that completes tasks
 * in posting order. Blocking calls are post + wait + free.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/log.h"
#include "../src/util.h"
#include "coll.h"

static const char *const sharc_coll_names[SHARC_COLL_LAST] = {
    [SHARC_COLL_ALLGATHER] = "allgather", [SHARC_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [SHARC_COLL_ALLREDUCE] = "allreduce", [SHARC_COLL_BROADCAST] = "broadcast",
    [SHARC_COLL_ALLTOALL] = "alltoall",   [SHARC_COLL_BARRIER] = "barrier",
};

/*
 * Algorithm selection: the first rule that fits the collective, its size (nccl-tests' size:
 * bytes of the larger side) and the rank count wins. SHARC_<COLL>_ALGO names one instead.
 * The thresholds come from sharc-perf sweeps on shared memory (docs/perf.md): one-step
 * algorithms win while latency dominates, the pipelined ring once bandwidth does.
 */
typedef struct {
    sharc_coll_type_t type;
    size_t max_bytes; /* the rule applies up to this size */
    int pow2;         /* only for power-of-two rank counts */
    const sharc_coll_algo_t *algo;
} sharc_coll_rule_t;

static const sharc_coll_rule_t sharc_coll_rules[] = {
    {SHARC_COLL_ALLGATHER, 64 << 10, 0, &sharc_coll_allgather_direct},
    {SHARC_COLL_ALLGATHER, 512 << 10, 1, &sharc_coll_allgather_recursive_doubling},
    {SHARC_COLL_ALLGATHER, SIZE_MAX, 0, &sharc_coll_allgather_ring},
    {SHARC_COLL_REDUCE_SCATTER, 64 << 10, 0, &sharc_coll_reduce_scatter_direct},
    {SHARC_COLL_REDUCE_SCATTER, 512 << 10, 1, &sharc_coll_reduce_scatter_recursive_halving},
    {SHARC_COLL_REDUCE_SCATTER, SIZE_MAX, 0, &sharc_coll_reduce_scatter_ring},
    {SHARC_COLL_ALLREDUCE, 64 << 10, 1, &sharc_coll_allreduce_recursive_doubling},
    {SHARC_COLL_ALLREDUCE, SIZE_MAX, 0, &sharc_coll_allreduce_ring},
    {SHARC_COLL_BROADCAST, 64 << 10, 0, &sharc_coll_broadcast_binomial},
    {SHARC_COLL_BROADCAST, SIZE_MAX, 0, &sharc_coll_broadcast_chain},
    /* alltoall: equal up to ~256 KiB on 2 and 4 ranks; above, pairwise's few messages in
     * flight (and, in place, its few blocks of scratch) win */
    {SHARC_COLL_ALLTOALL, 256 << 10, 0, &sharc_coll_alltoall_direct},
    {SHARC_COLL_ALLTOALL, SIZE_MAX, 0, &sharc_coll_alltoall_pairwise},
    {SHARC_COLL_BARRIER, SIZE_MAX, 0, &sharc_coll_barrier_dissemination},
};

/* Every algorithm, for SHARC_<COLL>_ALGO by name. */
static const struct {
    sharc_coll_type_t type;
    const sharc_coll_algo_t *algo;
    int pow2;
} sharc_coll_named[] = {
    {SHARC_COLL_ALLGATHER, &sharc_coll_allgather_ring, 0},
    {SHARC_COLL_ALLGATHER, &sharc_coll_allgather_recursive_doubling, 1},
    {SHARC_COLL_ALLGATHER, &sharc_coll_allgather_direct, 0},
    {SHARC_COLL_REDUCE_SCATTER, &sharc_coll_reduce_scatter_ring, 0},
    {SHARC_COLL_REDUCE_SCATTER, &sharc_coll_reduce_scatter_direct, 0},
    {SHARC_COLL_REDUCE_SCATTER, &sharc_coll_reduce_scatter_recursive_halving, 1},
    {SHARC_COLL_ALLREDUCE, &sharc_coll_allreduce_ring, 0},
    {SHARC_COLL_ALLREDUCE, &sharc_coll_allreduce_recursive_doubling, 1},
    {SHARC_COLL_BROADCAST, &sharc_coll_broadcast_chain, 0},
    {SHARC_COLL_BROADCAST, &sharc_coll_broadcast_binomial, 0},
    {SHARC_COLL_ALLTOALL, &sharc_coll_alltoall_direct, 0},
    {SHARC_COLL_ALLTOALL, &sharc_coll_alltoall_pairwise, 0},
};

static const char *const *const sharc_coll_algo_names[] = {
    [SHARC_COLL_ALLGATHER] = sharc_cfg_allgather_algos,
    [SHARC_COLL_REDUCE_SCATTER] = sharc_cfg_reduce_scatter_algos,
    [SHARC_COLL_ALLREDUCE] = sharc_cfg_allreduce_algos,
    [SHARC_COLL_BROADCAST] = sharc_cfg_broadcast_algos,
    [SHARC_COLL_ALLTOALL] = sharc_cfg_alltoall_algos,
};

/* sharc_cfg_t.algo is indexed by sharc_coll_type_t: every collective before the barrier */
_Static_assert(SHARC_ARRAY_SIZE(((sharc_cfg_t *)0)->algo) == SHARC_COLL_BARRIER &&
                   SHARC_ARRAY_SIZE(sharc_coll_algo_names) == SHARC_COLL_BARRIER,
               "SHARC_<COLL>_ALGO knobs and sharc_coll_type_t disagree");

/* nccl-tests' size of a collective: bytes of its larger side (alltoall: all blocks). */
static size_t sharc_coll_size(const sharc_comm_h comm, const sharc_coll_args_t *a)
{
    size_t bytes = a->count * sharc_dtype_size(a->dtype);

    return (a->type == SHARC_COLL_ALLGATHER || a->type == SHARC_COLL_REDUCE_SCATTER ||
            a->type == SHARC_COLL_ALLTOALL)
               ? bytes * (size_t)comm->size
               : bytes;
}

static sharc_status_t sharc_coll_select(sharc_comm_h comm, const sharc_coll_args_t *a,
                                        const sharc_coll_algo_t **algo_p)
{
    int pow2 = (comm->size & (comm->size - 1)) == 0, forced = 0;
    size_t size = sharc_coll_size(comm, a);

    if (a->type < SHARC_COLL_BARRIER) { /* the collectives with a SHARC_<COLL>_ALGO knob */
        forced = comm->ctx->cfg->algo[a->type];
    }
    if (forced != 0) {
        const char *name = sharc_coll_algo_names[a->type][forced];

        for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_coll_named); i++) {
            if (sharc_coll_named[i].type == a->type &&
                strcmp(sharc_coll_named[i].algo->name, name) == 0) {
                if (sharc_coll_named[i].pow2 && !pow2) {
                    sharc_error("%s: algorithm %s needs a power-of-two rank count, not %d",
                                sharc_coll_names[a->type], name, comm->size);
                    return SHARC_ERR_UNSUPPORTED;
                }
                *algo_p = sharc_coll_named[i].algo;
                return SHARC_OK;
            }
        }
    }
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_coll_rules); i++) {
        const sharc_coll_rule_t *rule = &sharc_coll_rules[i];

        if (rule->type == a->type && size <= rule->max_bytes && (pow2 || !rule->pow2)) {
            *algo_p = rule->algo;
            return SHARC_OK;
        }
    }
    return SHARC_ERR_UNSUPPORTED; /* unreachable: every collective ends with a catch-all */
}

static void *sharc_coll_thread(void *arg);

sharc_status_t sharc_coll_comm_create(sharc_comm_h comm)
{
    sharc_coll_comm_t *cc = calloc(1, sizeof(*cc));
    pthread_mutexattr_t attr;
    int ret;

    if (cc == NULL) {
        return SHARC_ERR_NOMEM;
    }
    /* recursive: transport callbacks inside progress may reach the engine again */
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&cc->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_cond_init(&cc->cond, NULL);
    comm->coll = cc;
    if (comm->ctx->cfg->progress_thread) {
        ret = pthread_create(&cc->thread, NULL, sharc_coll_thread, comm);
        if (ret != 0) {
            errno = ret;
            sharc_error("cannot start the progress thread (SHARC_PROGRESS_THREAD): %m");
            pthread_cond_destroy(&cc->cond);
            pthread_mutex_destroy(&cc->lock);
            free(cc);
            comm->coll = NULL;
            return SHARC_ERR_NOMEM;
        }
        cc->thread_running = 1;
    }
    return SHARC_OK;
}

/* ---- progress ---------------------------------------------------------------------- */

char *sharc_coll_scratch(sharc_coll_task_t *task, size_t bytes)
{
    sharc_coll_comm_t *cc = task->comm->coll;

    if (!cc->scratch_busy) {
        if (cc->scratch_bytes < bytes) {
            free(cc->scratch);
            cc->scratch = malloc(bytes);
            cc->scratch_bytes = (cc->scratch != NULL) ? bytes : 0;
        }
        if (cc->scratch != NULL) {
            cc->scratch_busy = 1;
            task->scratch_cached = 1;
            task->scratch = cc->scratch;
            return task->scratch;
        }
    }
    task->scratch = malloc(bytes);
    return task->scratch;
}

/* The task no longer needs its scratch (lock held). */
static void sharc_coll_scratch_put(sharc_coll_task_t *task)
{
    if (task->scratch_cached) {
        task->comm->coll->scratch_busy = 0;
        task->scratch_cached = 0;
    } else {
        free(task->scratch);
    }
    task->scratch = NULL;
}

static void sharc_coll_release(sharc_coll_task_t *task)
{
    /* whatever state the algorithm allocated lives in these fields (NULL when unused) */
    free(task->reqs);
    free(task->scratch); /* a done task's is NULL: sharc_coll_scratch_put took it */
    sharc_coll_ring_cleanup(&task->ring);
    free(task);
}

/*
 * Called with the lock held. Drives every task, then completes those at the head in order.
 * Returns whether anything moved (messages in the transport, a task finishing): pollers
 * back off when nothing does.
 */
static int sharc_coll_progress(sharc_comm_h comm)
{
    sharc_coll_comm_t *cc = comm->coll;
    int moved = 0;

    if (comm->tp_ops != NULL && comm->tp_ops->progress != NULL) {
        int ret = comm->tp_ops->progress(comm->tp);
        if (ret < 0 && cc->failed == SHARC_OK) {
            cc->failed = (sharc_status_t)ret;
        }
        moved = ret > 0;
    }
    for (sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
        if (t->done) {
            continue;
        }
        t->status = (cc->failed != SHARC_OK) ? cc->failed : t->algo->progress(t);
        if (t->status != SHARC_INPROGRESS) {
            moved = 1;
            t->done = 1;
            t->t_done = sharc_time_now();
            sharc_coll_scratch_put(t);
            if (t->status != SHARC_OK && cc->failed == SHARC_OK) {
                /* the ranks no longer agree on what is in flight: stop the rest */
                cc->failed = t->status;
            }
        }
    }
    while (cc->head != NULL && cc->head->done) {
        sharc_coll_task_t *t = cc->head;

        cc->head = t->next;
        if (cc->head == NULL) {
            cc->tail = NULL;
        }
        t->next = NULL;
        t->complete = 1;
        if (t->freed) {
            sharc_coll_release(t);
        }
    }
    return moved;
}

/*
 * A poller's pause when a pass moved nothing: a few yields, then sleeps that grow to
 * SHARC_COLL_IDLE_MAX_US. Ranks often outnumber cores (and the progress thread doubles the
 * pollers); a poller that spins on nothing takes the core from the thread that has work:
 * the caller computing, or the peer it waits for.
 */
#define SHARC_COLL_IDLE_SPINS  32
#define SHARC_COLL_IDLE_MAX_US 200

static void sharc_coll_idle(int moved, int *idle)
{
    if (moved) {
        *idle = 0;
        return;
    }
    if (++*idle <= SHARC_COLL_IDLE_SPINS) {
        sched_yield();
    } else {
        int shift = SHARC_MIN(*idle - SHARC_COLL_IDLE_SPINS, 5);
        struct timespec ts = {0, 1000L * SHARC_MIN(SHARC_COLL_IDLE_MAX_US, 10 << shift)};

        nanosleep(&ts, NULL);
    }
}

/*
 * SHARC_PROGRESS_THREAD: progress the queue while it holds tasks, so that collectives
 * complete while the caller computes; sleep on the condition variable while it is empty.
 */
static void *sharc_coll_thread(void *arg)
{
    sharc_comm_h comm = arg;
    sharc_coll_comm_t *cc = comm->coll;
    int idle = 0, moved;

    pthread_mutex_lock(&cc->lock);
    while (!cc->stop) {
        if (cc->head == NULL) {
            pthread_cond_wait(&cc->cond, &cc->lock);
            idle = 0;
            continue;
        }
        moved = sharc_coll_progress(comm);
        pthread_mutex_unlock(&cc->lock);
        sharc_coll_idle(moved, &idle);
        /* A mutex is not fair: relocking at once would starve a caller that waits to post
         * or test, for as long as there is work. Callers first. */
        while (__atomic_load_n(&cc->waiters, __ATOMIC_ACQUIRE) > 0 &&
               !__atomic_load_n(&cc->stop, __ATOMIC_ACQUIRE)) {
            sched_yield();
        }
        pthread_mutex_lock(&cc->lock);
    }
    pthread_mutex_unlock(&cc->lock);
    return NULL;
}

/* The lock, for callers: the progress thread lets them in ahead of its next pass. */
static void sharc_coll_lock(sharc_coll_comm_t *cc)
{
    __atomic_add_fetch(&cc->waiters, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&cc->lock);
    __atomic_sub_fetch(&cc->waiters, 1, __ATOMIC_ACQ_REL);
}

sharc_status_t sharc_request_test(sharc_request_h req)
{
    sharc_coll_comm_t *cc;
    sharc_status_t status;

    if (req == NULL) {
        sharc_error("sharc_request_test: request is NULL");
        return SHARC_ERR_INVALID;
    }
    cc = req->comm->coll;
    sharc_coll_lock(cc);
    /* With a progress thread, a test only looks: progressing here would move message data
     * (copies, reductions) on the caller's time, which the thread exists to take off it. */
    if (!req->complete && !cc->thread_running) {
        sharc_coll_progress(req->comm);
    }
    status = req->complete ? req->status : SHARC_INPROGRESS;
    pthread_mutex_unlock(&cc->lock);
    return status;
}

/* Progress from a caller that blocks anyway (sharc_request_wait): it may as well help. */
static sharc_status_t sharc_coll_wait_step(sharc_request_h req, int *moved_p)
{
    sharc_coll_comm_t *cc = req->comm->coll;
    sharc_status_t status;

    sharc_coll_lock(cc);
    *moved_p = !req->complete ? sharc_coll_progress(req->comm) : 1;
    status = req->complete ? req->status : SHARC_INPROGRESS;
    pthread_mutex_unlock(&cc->lock);
    return status;
}

sharc_status_t sharc_request_wait(sharc_request_h req)
{
    double timeout, deadline;
    sharc_status_t status;
    int moved, idle = 0;

    if (req == NULL) {
        sharc_error("sharc_request_wait: request is NULL");
        return SHARC_ERR_INVALID;
    }
    timeout = req->comm->ctx->cfg->timeout;
    deadline = sharc_time_now() + timeout;
    while ((status = sharc_coll_wait_step(req, &moved)) == SHARC_INPROGRESS) {
        if (sharc_time_now() > deadline) {
            sharc_coll_comm_t *cc = req->comm->coll;

            char peer[48] = "";

            sharc_coll_lock(cc);
            if (req->await_peer >= 0) {
                snprintf(peer, sizeof(peer), ": waiting for rank %d", req->await_peer);
            }
            sharc_error("rank %d: %s #%llu (%zu %s) did not complete within %.0f s "
                        "(SHARC_TIMEOUT)%s; the communicator is failed",
                        req->comm->rank, sharc_coll_names[req->args.type],
                        (unsigned long long)req->seq, req->args.count,
                        sharc_dtype_name(req->args.dtype), timeout, peer);
            if (cc->failed == SHARC_OK) {
                cc->failed = SHARC_ERR_TIMEOUT;
            }
            pthread_mutex_unlock(&cc->lock);
            return SHARC_ERR_TIMEOUT;
        }
        sharc_coll_idle(moved, &idle); /* several ranks may share few cores */
    }
    return status;
}

void sharc_request_free(sharc_request_h req)
{
    sharc_coll_comm_t *cc;

    if (req == NULL) {
        return;
    }
    if (!req->complete) {
        sharc_request_wait(req); /* its buffers must be left alone once it is freed */
    }
    cc = req->comm->coll;
    sharc_coll_lock(cc);
    if (req->complete) {
        sharc_coll_release(req);
    } else {
        req->freed = 1; /* timed out: the engine releases it if it ever completes */
    }
    pthread_mutex_unlock(&cc->lock);
}

void sharc_coll_comm_destroy(sharc_comm_h comm)
{
    sharc_coll_comm_t *cc = comm->coll;

    if (cc == NULL) {
        return;
    }
    if (cc->thread_running) {
        sharc_coll_lock(cc);
        cc->stop = 1;
        pthread_cond_signal(&cc->cond);
        pthread_mutex_unlock(&cc->lock);
        pthread_join(cc->thread, NULL);
    }
    if (cc->head != NULL) {
        sharc_warn("rank %d: communicator destroyed with collectives in flight; completing them",
                   comm->rank);
        while (cc->head != NULL) {
            sharc_coll_task_t *t = cc->head;
            if (sharc_request_wait(t) != SHARC_OK) {
                break;
            }
        }
    }
    /* Tasks the caller has not freed are the caller's leak; those freed are released. */
    for (sharc_coll_task_t *t = cc->head, *next; t != NULL; t = next) {
        next = t->next;
        if (t->freed) {
            sharc_coll_release(t);
        }
    }
    pthread_cond_destroy(&cc->cond);
    pthread_mutex_destroy(&cc->lock);
    if (!cc->scratch_busy) { /* else a task that never finished holds it: leaked with it */
        free(cc->scratch);
    }
    free(cc);
    comm->coll = NULL;
}

/* ---- transport helpers ------------------------------------------------------------- */

sharc_status_t sharc_coll_send(sharc_coll_task_t *task, int peer, const void *buf, size_t bytes,
                               sharc_tp_req_t *req)
{
    sharc_comm_h comm = task->comm;
    sharc_status_t status;

    memset(req, 0, sizeof(*req));
    status = comm->tp_ops->send(comm->tp, peer, task->seq, buf, bytes, NULL, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_recv(sharc_coll_task_t *task, int peer, void *buf, size_t bytes,
                               sharc_tp_req_t *req)
{
    sharc_comm_h comm = task->comm;
    sharc_status_t status;

    memset(req, 0, sizeof(*req));
    status = comm->tp_ops->recv(comm->tp, peer, task->seq, buf, bytes, NULL, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_recv_reduce(sharc_coll_task_t *task, int peer, void *dst, const void *src,
                                      size_t count, sharc_tp_req_t *req)
{
    sharc_comm_h comm = task->comm;
    sharc_status_t status;

    if (comm->tp_ops->recv_reduce == NULL) {
        return SHARC_ERR_UNSUPPORTED;
    }
    memset(req, 0, sizeof(*req));
    status = comm->tp_ops->recv_reduce(comm->tp, peer, task->seq, dst, src, count, task->args.dtype,
                                       task->args.op, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_sendrecv(sharc_coll_task_t *task, int to, const void *sbuf, size_t sbytes,
                                   sharc_tp_req_t *sreq, int from, void *rbuf, size_t rbytes,
                                   sharc_tp_req_t *rreq)
{
    sharc_status_t status = sharc_coll_recv(task, from, rbuf, rbytes, rreq);

    return (status == SHARC_OK) ? sharc_coll_send(task, to, sbuf, sbytes, sreq) : status;
}

sharc_status_t sharc_coll_reqs_status(const sharc_tp_req_t *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sharc_status_t status = sharc_tp_req_status(&reqs[i]);
        if (status != SHARC_OK) {
            return status;
        }
    }
    return SHARC_OK;
}

/* ---- posting ----------------------------------------------------------------------- */

/* Do [a, a + alen) and [b, b + blen) overlap? */
static int sharc_coll_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

/* The checks every rank makes before communicating: a bad call fails on its own rank. */
static sharc_status_t sharc_coll_check(sharc_comm_h comm, const sharc_coll_args_t *a)
{
    const char *name = sharc_coll_names[a->type];
    size_t esize = sharc_dtype_size(a->dtype), n = (size_t)comm->size;
    size_t sbytes = 0, rbytes = 0;

    if (a->type != SHARC_COLL_BARRIER) {
        if (esize == 0) {
            sharc_error("%s: dtype %d is not a sharc_dtype_t", name, (int)a->dtype);
            return SHARC_ERR_INVALID;
        }
        if ((a->type == SHARC_COLL_REDUCE_SCATTER || a->type == SHARC_COLL_ALLREDUCE) &&
            !sharc_kern_op_valid(a->dtype, a->op)) {
            sharc_error("%s: op %s is not defined for %s", name,
                        sharc_op_name(a->op) ? sharc_op_name(a->op) : "(invalid)",
                        sharc_dtype_name(a->dtype));
            return SHARC_ERR_INVALID;
        }
        if (a->count > SIZE_MAX / esize / n) {
            sharc_error("%s: %zu elements of %s on %zu ranks overflow the address space", name,
                        a->count, sharc_dtype_name(a->dtype), n);
            return SHARC_ERR_INVALID;
        }
    }
    switch (a->type) {
    case SHARC_COLL_ALLGATHER:
        sbytes = a->count * esize;
        rbytes = sbytes * n;
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        rbytes = a->count * esize;
        sbytes = rbytes * n;
        break;
    case SHARC_COLL_ALLREDUCE: sbytes = rbytes = a->count * esize; break;
    case SHARC_COLL_ALLTOALL: sbytes = rbytes = a->count * esize * n; break;
    case SHARC_COLL_BROADCAST:
        if (a->root < 0 || a->root >= comm->size) {
            sharc_error("broadcast: root %d is not a rank of this %d-rank communicator", a->root,
                        comm->size);
            return SHARC_ERR_INVALID;
        }
        rbytes = a->count * esize;
        sbytes = (comm->rank == a->root) ? rbytes : 0;
        break;
    default: break;
    }
    if ((sbytes > 0 && a->sendbuf == NULL) || (rbytes > 0 && a->recvbuf == NULL)) {
        sharc_error("%s: %s is NULL with %zu elements", name,
                    a->recvbuf == NULL ? "recvbuf" : "sendbuf", a->count);
        return SHARC_ERR_INVALID;
    }
    /* the only overlaps allowed are the in-place forms of the buffer contract */
    switch (a->type) {
    case SHARC_COLL_ALLGATHER:
        if (a->sendbuf != (char *)a->recvbuf + (size_t)comm->rank * sbytes &&
            sharc_coll_overlap(a->sendbuf, sbytes, a->recvbuf, rbytes)) {
            sharc_error("allgather: sendbuf overlaps recvbuf but is not recvbuf + rank * count");
            return SHARC_ERR_INVALID;
        }
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        if (a->recvbuf != (const char *)a->sendbuf + (size_t)comm->rank * rbytes &&
            sharc_coll_overlap(a->sendbuf, sbytes, a->recvbuf, rbytes)) {
            sharc_error("reduce_scatter: recvbuf overlaps sendbuf but is not sendbuf + rank * "
                        "recvcount");
            return SHARC_ERR_INVALID;
        }
        break;
    case SHARC_COLL_ALLREDUCE:
    case SHARC_COLL_BROADCAST:
    case SHARC_COLL_ALLTOALL:
        if (a->sendbuf != a->recvbuf &&
            sharc_coll_overlap(a->sendbuf, sbytes, a->recvbuf, rbytes)) {
            sharc_error("%s: sendbuf and recvbuf overlap without being equal", name);
            return SHARC_ERR_INVALID;
        }
        break;
    default: break;
    }
    return SHARC_OK;
}

/* What SHARC_CHECK compares across ranks. */
typedef struct {
    uint64_t seq, count;
    int32_t type, dtype, op, root;
} sharc_coll_sig_t;

static void sharc_coll_describe(const sharc_coll_sig_t *s, char *buf, size_t size)
{
    const char *dt = sharc_dtype_name((sharc_dtype_t)s->dtype);

    snprintf(buf, size, "%s(%llu %s", sharc_coll_names[s->type], (unsigned long long)s->count,
             dt ? dt : "?");
    if (s->type == SHARC_COLL_REDUCE_SCATTER || s->type == SHARC_COLL_ALLREDUCE) {
        snprintf(buf + strlen(buf), size - strlen(buf), ", %s",
                 sharc_op_name((sharc_op_t)s->op) ? sharc_op_name((sharc_op_t)s->op) : "?");
    } else if (s->type == SHARC_COLL_BROADCAST) {
        snprintf(buf + strlen(buf), size - strlen(buf), ", root %d", s->root);
    }
    snprintf(buf + strlen(buf), size - strlen(buf), ")");
}

/*
 * SHARC_CHECK: every rank shows the others the collective it is about to post, through the
 * bootstrap. Called with the lock held, before the sequence number is taken. A mismatch
 * fails the communicator on every rank, and every rank names the same two ranks.
 */
static sharc_status_t sharc_coll_check_peers(sharc_comm_h comm, const sharc_coll_args_t *a)
{
    sharc_coll_comm_t *cc = comm->coll;
    sharc_coll_sig_t mine = {cc->seq, a->count, a->type, a->dtype, a->op, a->root}, *all;
    sharc_status_t status;
    char d0[96], d1[96];

    if (a->type != SHARC_COLL_BROADCAST) {
        mine.root = 0;
    }
    if (a->type != SHARC_COLL_REDUCE_SCATTER && a->type != SHARC_COLL_ALLREDUCE) {
        mine.op = 0;
    }
    all = calloc((size_t)comm->size, sizeof(*all));
    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_boot_allgather(comm->boot, &mine, all, sizeof(mine));
    for (int r = 1; status == SHARC_OK && r < comm->size; r++) {
        if (memcmp(&all[r], &all[0], sizeof(mine)) != 0) {
            sharc_coll_describe(&all[r], d1, sizeof(d1));
            sharc_coll_describe(&all[0], d0, sizeof(d0));
            sharc_error("SHARC_CHECK: rank %d called %s, rank 0 called %s, seq %llu", r, d1, d0,
                        (unsigned long long)all[0].seq);
            status = SHARC_ERR_REMOTE;
            cc->failed = status;
        }
    }
    free(all);
    return status;
}

static sharc_status_t sharc_coll_post(sharc_comm_h comm, const sharc_coll_args_t *args,
                                      sharc_request_h *req_p)
{
    sharc_coll_comm_t *cc;
    sharc_coll_task_t *task;
    sharc_status_t status;

    if (comm == NULL) {
        sharc_error("%s: communicator is NULL", sharc_coll_names[args->type]);
        return SHARC_ERR_INVALID;
    }
    status = sharc_coll_check(comm, args);
    if (status != SHARC_OK) {
        return status;
    }
    if (comm->size > 1 && (comm->tp_ops == NULL || comm->tp_ops->send == NULL)) {
        sharc_error("%s: this communicator of %d ranks has no point-to-point transport "
                    "(SHARC_TRANSPORT, and was sharc built with UCX?)",
                    sharc_coll_names[args->type], comm->size);
        return SHARC_ERR_UNSUPPORTED;
    }
    task = calloc(1, sizeof(*task));
    if (task == NULL) {
        return SHARC_ERR_NOMEM;
    }
    task->comm = comm;
    task->args = *args;
    status = sharc_coll_select(comm, args, &task->algo);
    if (status != SHARC_OK) {
        free(task);
        return status;
    }
    task->await_peer = -1;
    task->status = SHARC_INPROGRESS;
    cc = comm->coll;
    sharc_coll_lock(cc);
    if (cc->failed != SHARC_OK) {
        pthread_mutex_unlock(&cc->lock);
        free(task);
        sharc_error("%s: an earlier collective on this communicator failed (%s)",
                    sharc_coll_names[args->type], sharc_status_string(cc->failed));
        return cc->failed;
    }
    if (comm->ctx->cfg->check && (status = sharc_coll_check_peers(comm, args)) != SHARC_OK) {
        pthread_mutex_unlock(&cc->lock);
        free(task);
        return status;
    }
    /* tags are 40 bits in the narrowest transport; wrapping after 2^40 collectives is safe */
    task->seq = cc->seq++ & ((1ull << 40) - 1);
    status = task->algo->init(task);
    if (status != SHARC_OK) {
        sharc_coll_scratch_put(task);
        pthread_mutex_unlock(&cc->lock);
        sharc_coll_release(task);
        return status;
    }
    if (cc->tail != NULL) {
        cc->tail->next = task;
    } else {
        cc->head = task;
    }
    cc->tail = task;
    if (cc->thread_running) {
        pthread_cond_signal(&cc->cond); /* the thread moves it, off the caller's time */
    } else {
        sharc_coll_progress(comm); /* small collectives often finish here */
    }
    pthread_mutex_unlock(&cc->lock);
    sharc_trace("%s #%llu posted: %zu %s", sharc_coll_names[args->type],
                (unsigned long long)task->seq, args->count, sharc_dtype_name(args->dtype));
    if (req_p != NULL) {
        *req_p = task;
        return SHARC_OK;
    }
    status = sharc_request_wait(task);
    sharc_request_free(task);
    return status;
}

sharc_status_t sharc_allgather(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_ALLGATHER, sendbuf, recvbuf, count, dtype, SHARC_OP_SUM, 0};

    return sharc_coll_post(comm, &a, req_p);
}

sharc_status_t sharc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                                    sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0};

    return sharc_coll_post(comm, &a, req_p);
}

sharc_status_t sharc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                               sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0};

    return sharc_coll_post(comm, &a, req_p);
}

sharc_status_t sharc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, int root, sharc_comm_h comm,
                               sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_BROADCAST, sendbuf, recvbuf, count, dtype,
                           SHARC_OP_SUM,         root};

    return sharc_coll_post(comm, &a, req_p);
}

sharc_status_t sharc_alltoall(const void *sendbuf, void *recvbuf, size_t count, sharc_dtype_t dtype,
                              sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, SHARC_OP_SUM, 0};

    return sharc_coll_post(comm, &a, req_p);
}

sharc_status_t sharc_barrier(sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_BARRIER, NULL, NULL, 0, SHARC_DTYPE_U8, SHARC_OP_SUM, 0};

    return sharc_coll_post(comm, &a, req_p);
}
