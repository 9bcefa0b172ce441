/*
 * post.c: posting a collective: the checks every rank makes before communicating,
 * SHARC_CHECK's comparison across ranks, the task and its algorithm (host algorithms from
 * select.c; on CUDA buffers the collective backend, or staging through host memory), and
 * its place in the queue. Blocking calls are post + wait + free. The public collective
 * functions are the core's (core/comm_coll.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/base/gpu.h"
#include "../src/base/log.h"
#include "../src/base/util.h"
#include "coll.h"

/* Do [a, a + alen) and [b, b + blen) overlap? */
static int sharc_coll_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

/* The checks every rank makes before communicating: a bad call fails on its own rank. */
static sharc_status_t sharc_coll_check(const sharc_coll_comm_t *cc, const sharc_coll_args_t *a)
{
    const char *name = sharc_coll_name(a->type);
    size_t esize = sharc_dtype_size(a->dtype), n = (size_t)cc->size;
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
        if (a->root < 0 || a->root >= cc->size) {
            sharc_error("broadcast: root %d is not a rank of this %d-rank communicator", a->root,
                        cc->size);
            return SHARC_ERR_INVALID;
        }
        rbytes = a->count * esize;
        sbytes = (cc->rank == a->root) ? rbytes : 0;
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
        if (a->sendbuf != (char *)a->recvbuf + (size_t)cc->rank * sbytes &&
            sharc_coll_overlap(a->sendbuf, sbytes, a->recvbuf, rbytes)) {
            sharc_error("allgather: sendbuf overlaps recvbuf but is not recvbuf + rank * count");
            return SHARC_ERR_INVALID;
        }
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        if (a->recvbuf != (const char *)a->sendbuf + (size_t)cc->rank * rbytes &&
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

    snprintf(buf, size, "%s(%llu %s", sharc_coll_name((sharc_coll_type_t)s->type),
             (unsigned long long)s->count, dt ? dt : "?");
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
static sharc_status_t sharc_coll_check_peers(sharc_coll_comm_t *cc, const sharc_coll_args_t *a)
{
    sharc_coll_sig_t mine = {cc->seq, a->count, a->type, a->dtype, a->op, a->root}, *all;
    sharc_status_t status;
    char d0[96], d1[96];

    if (a->type != SHARC_COLL_BROADCAST) {
        mine.root = 0;
    }
    if (a->type != SHARC_COLL_REDUCE_SCATTER && a->type != SHARC_COLL_ALLREDUCE) {
        mine.op = 0;
    }
    all = calloc((size_t)cc->size, sizeof(*all));
    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_boot_allgather(cc->boot, &mine, all, sizeof(mine));
    for (int r = 1; status == SHARC_OK && r < cc->size; r++) {
        if (memcmp(&all[r], &all[0], sizeof(mine)) != 0) {
            sharc_coll_describe(&all[r], d1, sizeof(d1));
            sharc_coll_describe(&all[0], d0, sizeof(d0));
            sharc_error("SHARC_CHECK: rank %d called %s, rank 0 called %s, seq %llu", r, d1, d0,
                        (unsigned long long)all[0].seq);
            status = SHARC_ERR_REMOTE;
            sharc_coll_fail(cc, status, "SHARC_CHECK found ranks calling different collectives");
        }
    }
    free(all);
    return status;
}

/*
 * Who runs the collective: on host buffers a host algorithm over the point-to-point
 * transport; on CUDA buffers (either side) the collective backend (NCCL) where it has the
 * collective, else staging through host memory.
 */
static sharc_status_t sharc_coll_route(sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                       const sharc_coll_algo_t **algo_p)
{
    int p2p = cc->size == 1 || (cc->tp_ops != NULL && cc->tp_ops->send != NULL);
    int gpu =
        a->type != SHARC_COLL_BARRIER && (sharc_gpu_memtype(a->sendbuf) != SHARC_MEMTYPE_HOST ||
                                          sharc_gpu_memtype(a->recvbuf) != SHARC_MEMTYPE_HOST);

    if (gpu && a->type != SHARC_COLL_ALLTOALL) {
        if (cc->gpu_ops != NULL) {
            *algo_p = &sharc_coll_backend;
            return SHARC_OK;
        }
        if (cc->gpu_failed != SHARC_OK) {
            sharc_error("%s on CUDA buffers: SHARC_CUDA_BACKEND=nccl, but NCCL could not be "
                        "opened for this communicator (%s)",
                        sharc_coll_name(a->type), sharc_status_string(cc->gpu_failed));
            return cc->gpu_failed;
        }
    }
    if (!p2p) {
        sharc_error("%s: this communicator of %d ranks has no point-to-point transport "
                    "(SHARC_TRANSPORT, and was sharc built with UCX?)",
                    sharc_coll_name(a->type), cc->size);
        return SHARC_ERR_UNSUPPORTED;
    }
    if (gpu) {
        *algo_p = &sharc_coll_staged;
        return SHARC_OK;
    }
    return sharc_coll_select(cc, a, algo_p);
}

sharc_status_t sharc_coll_queue(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    if (cc->failed != SHARC_OK) {
        sharc_status_t failed = cc->failed;

        sharc_error("%s: the communicator failed earlier: %s (%s)",
                    sharc_coll_name(task->args.type), cc->why, sharc_status_string(failed));
        free(task);
        return failed;
    }
    /* (SHARC_CHECK's exchange: never on a task handed over, see sharc_coll_hand_over) */
    if (cc->cfg->check && (status = sharc_coll_check_peers(cc, &task->args)) != SHARC_OK) {
        free(task);
        return status;
    }
    /* tags are 40 bits in the narrowest transport; wrapping after 2^40 collectives is safe.
     * An algorithm with sub-tasks takes a range, the same on every rank. */
    task->seq = cc->seq & SHARC_TP_TAG_MAX;
    cc->seq += 1 + (task->algo->tags != NULL ? task->algo->tags(task) : 0);
    status = task->algo->init(task);
    if (status != SHARC_OK) {
        sharc_coll_scratch_put(task);
        sharc_coll_release(task);
        return status;
    }
    sharc_coll_enqueue(task);
    return SHARC_OK;
}

sharc_status_t sharc_coll_start(sharc_coll_comm_t *cc, const sharc_coll_args_t *args,
                                sharc_request_h *req_p)
{
    return sharc_coll_start_lane(cc, args, 0, req_p);
}

sharc_status_t sharc_coll_start_lane(sharc_coll_comm_t *cc, const sharc_coll_args_t *args, int lane,
                                     sharc_request_h *req_p)
{
    sharc_coll_task_t *task;
    sharc_status_t status;

    if (lane < 0 || lane >= SHARC_COLL_LANES) {
        sharc_error("%s: completion lane %d is not in 0 .. %d", sharc_coll_name(args->type), lane,
                    SHARC_COLL_LANES - 1);
        return SHARC_ERR_INVALID;
    }
    status = sharc_coll_check(cc, args);
    if (status != SHARC_OK) {
        return status;
    }
    task = calloc(1, sizeof(*task));
    if (task == NULL) {
        return SHARC_ERR_NOMEM;
    }
    task->cc = cc;
    task->args = *args;
    task->lane = lane;
    status = sharc_coll_route(cc, args, &task->algo);
    if (status != SHARC_OK) {
        free(task);
        return status;
    }
    task->await_peer = -1;
    task->status = SHARC_INPROGRESS;
    if (!sharc_coll_hand_over(task)) { /* (the lock is held) */
        if (cc->failed == SHARC_OK && cc->head == NULL) {
            sharc_coll_progress(cc); /* an idle communicator still hears of a rank that is gone */
        }
        status = sharc_coll_queue(task);
        pthread_mutex_unlock(&cc->lock);
        if (status != SHARC_OK) {
            return status;
        }
    }
    sharc_trace("%s #%llu posted: %zu %s", sharc_coll_name(args->type),
                (unsigned long long)task->seq, args->count, sharc_dtype_name(args->dtype));
    if (req_p != NULL) {
        *req_p = task;
        return SHARC_OK;
    }
    status = sharc_request_wait(task);
    sharc_request_free(task);
    return status;
}
