/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * post.c: posting a collective: the checks every rank makes before communicating (check.c),
 * the task and who runs it (host algorithms from select.c; on CUDA buffers the collective
 * backend, or staging through host memory), and how a routed task enters the engine (under
 * the lock, or handed to a running pass; SHARC_CHECK's comparison across ranks first).
 * Blocking calls are post + wait + free. The public collective functions are comm/'s
 * (comm/comm_coll.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/gpu.h"
#include "../base/log.h"
#include "../base/util.h"
#include "coll.h"
#include "algorithms/quant.h"

/* How a post enters the queue (sharc_coll_enter). */
typedef enum {
    SHARC_COLL_ENTER_LOCKED, /* the caller holds the lock now, and starts the task itself */
    SHARC_COLL_ENTER_HANDED, /* a running pass starts it; the lock is not held */
} sharc_coll_enter_t;

/*
 * How a post enters: with a progress thread whose pass holds the lock now, the task is
 * handed over (pushed for the pass to start as it ends) instead of waiting for the lock,
 * which a pass may hold for milliseconds of copies. Otherwise the caller takes the lock.
 * SHARC_CHECK's exchange must run in the posting caller: no hand-over then.
 */
static sharc_coll_enter_t sharc_coll_enter(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_coll_task_t *head;

    if (cc->driver != SHARC_COLL_DRIVER_THREAD || cc->cfg->check) {
        sharc_coll_lock(cc);
        return SHARC_COLL_ENTER_LOCKED;
    }
    if (pthread_mutex_trylock(&cc->lock) == 0) {
        return SHARC_COLL_ENTER_LOCKED;
    }
    /* Busy: push first, then look (both sequentially consistent, as the pass's end: leave
     * RUNNING, then take the list). Seen in a running pass: that pass, or a later one, takes
     * it when it ends. Not in one: the holder is brief (the thread between passes, a caller
     * freeing): wait for the lock and start it here. */
    task->state = SHARC_COLL_TASK_HANDED;
    head = __atomic_load_n(&cc->incoming, __ATOMIC_SEQ_CST);
    do {
        task->next = head;
    } while (!__atomic_compare_exchange_n(&cc->incoming, &head, task, 0, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST));
    if (__atomic_load_n(&cc->pass, __ATOMIC_SEQ_CST) == SHARC_COLL_PASS_RUNNING) {
        return SHARC_COLL_ENTER_HANDED;
    }
    sharc_coll_lock(cc);
    sharc_coll_take_over(cc);
    sharc_coll_driver_kick(cc);
    sharc_coll_unlock(cc);
    return SHARC_COLL_ENTER_HANDED;
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

sharc_status_t sharc_coll_task_post(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status = SHARC_OK;

    if (sharc_coll_enter(task) == SHARC_COLL_ENTER_HANDED) {
        return SHARC_OK;
    }
    if (cc->failed == SHARC_OK && cc->head == NULL) {
        sharc_coll_progress(cc); /* an idle communicator still hears of a rank that is gone */
    }
    if (cc->cfg->check && cc->failed == SHARC_OK && task->kind == SHARC_COLL_KIND_COLL) {
        status = sharc_coll_check_peers(cc, &task->args); /* (a send is one rank's) */
    }
    if (status == SHARC_OK) {
        status = sharc_coll_task_start(task);
    }
    if (status != SHARC_OK) {
        sharc_coll_task_free(task);
    } else if (cc->driver == SHARC_COLL_DRIVER_THREAD) {
        sharc_coll_driver_kick(cc); /* the thread moves it, off the caller's time */
    } else {
        sharc_coll_progress(cc); /* small collectives often finish here */
    }
    sharc_coll_unlock(cc);
    return status;
}

/* Which of this rank's buffers (those it uses: sharc_coll_bytes) are in host memory. */
typedef struct {
    int send, recv;
} sharc_coll_host_t;

/* For the CUDA backend (NCCL, device buffers only): both buffers on the device, or a
 * refusal at once naming the host one (NCCL given a host pointer fails on the device, or waits
 * for peers that took another path, until SHARC_TIMEOUT). The staged path takes either. */
static sharc_status_t sharc_coll_device_only(const sharc_coll_args_t *a, sharc_coll_host_t host)
{
    if (!host.send && !host.recv) {
        return SHARC_OK;
    }
    sharc_error("%s: %s in host memory and %s on the GPU: the CUDA backend (NCCL) takes "
                "device buffers on both sides; copy the host one to the device first",
                sharc_coll_name(a->type), host.send ? "sendbuf" : "recvbuf",
                host.send ? "recvbuf" : "sendbuf");
    return SHARC_ERR_INVALID;
}

/*
 * Who runs the collective: on host buffers a host algorithm over the point-to-point
 * transport; on CUDA buffers (either side it uses) the CUDA backend (NCCL) where it
 * has the collective (both sides on the device), else staging through host memory (the
 * collectives with even blocks; the rooted and uneven ones need NCCL on CUDA buffers).
 */
static sharc_status_t sharc_coll_route(sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                       const sharc_coll_algo_t **algo_p)
{
    int p2p = cc->size == 1 || cc->tp_ops != NULL;
    size_t sbytes = 0, rbytes = 0;
    sharc_coll_host_t host;
    int gpu;

    sharc_coll_bytes(cc, a, &sbytes, &rbytes); /* (checked: sharc_coll_check) */
    host.send = sbytes == 0 || sharc_gpu_memtype(a->sendbuf) == SHARC_MEMTYPE_HOST;
    host.recv = rbytes == 0 || sharc_gpu_memtype(a->recvbuf) == SHARC_MEMTYPE_HOST;
    gpu = a->type != SHARC_COLL_BARRIER && (!host.send || !host.recv);
    if (gpu && sbytes == 0) { /* (a side this rank does not use is not host memory) */
        host.send = 0;
    }
    if (gpu && rbytes == 0) {
        host.recv = 0;
    }

    if (gpu && a->wire != SHARC_WIRE_FULL) {
        if (cc->cuda_ops != NULL && sharc_kern_cuda() != NULL) {
            *algo_p = &sharc_coll_quant_device;
            return sharc_coll_device_only(a, host);
        }
        sharc_error("%s over a %s wire on CUDA buffers needs the CUDA backend (NCCL), "
                    "which this communicator does not have",
                    sharc_coll_name(a->type), sharc_wire_name(a->wire));
        return SHARC_ERR_UNSUPPORTED;
    }
    if (gpu && a->type != SHARC_COLL_ALLTOALL) {
        if (cc->cuda_ops != NULL) {
            *algo_p = &sharc_coll_cuda_backend;
            return sharc_coll_device_only(a, host);
        }
        if (cc->cuda_failed != SHARC_OK) {
            sharc_error("%s on CUDA buffers: SHARC_CUDA_BACKEND=nccl, but NCCL could not be "
                        "opened for this communicator (%s)",
                        sharc_coll_name(a->type), sharc_status_string(cc->cuda_failed));
            return cc->cuda_failed;
        }
    }
    if (!p2p) {
        sharc_error("%s: this communicator of %d ranks has no point-to-point transport "
                    "(SHARC_TRANSPORT, and was sharc built with UCX?)",
                    sharc_coll_name(a->type), cc->size);
        return SHARC_ERR_UNSUPPORTED;
    }
    if (gpu && a->type > SHARC_COLL_BARRIER) {
        sharc_error("%s on CUDA buffers needs the CUDA backend (NCCL), which this "
                    "communicator does not have (SHARC_CUDA_BACKEND=staged, or sharc built "
                    "without it): only the even collectives are staged through host memory",
                    sharc_coll_name(a->type));
        return SHARC_ERR_UNSUPPORTED;
    }
    if (gpu) {
        *algo_p = &sharc_coll_staged;
        return SHARC_OK;
    }
    return (a->wire != SHARC_WIRE_FULL) ? sharc_coll_select_wire(cc, a, algo_p)
                                        : sharc_coll_select(cc, a, algo_p);
}

sharc_status_t sharc_coll_post(sharc_coll_comm_t *cc, const sharc_coll_args_t *args,
                               sharc_request_h *req_p)
{
    return sharc_coll_post_lane(cc, args, 0, req_p);
}

sharc_status_t sharc_coll_post_lane(sharc_coll_comm_t *cc, const sharc_coll_args_t *args, int lane,
                                    sharc_request_h *req_p)
{
    sharc_coll_task_t *task;
    sharc_status_t status;

    if (lane < 0 || lane >= SHARC_COLL_LANES) {
        sharc_error("%s: completion lane %d is not in 0 .. %d", sharc_coll_name(args->type), lane,
                    SHARC_COLL_LANES - 1);
        return SHARC_ERR_INVALID;
    }
    if (cc->group_depth > 0) {
        sharc_error("%s: called inside a point-to-point group (sharc_p2p_group_start) on this "
                    "communicator; end the group first",
                    sharc_coll_name(args->type));
        return SHARC_ERR_INVALID;
    }
    status = sharc_coll_check(cc, args);
    if (status != SHARC_OK) {
        return status;
    }
    task = sharc_coll_task_new(cc, args, lane);
    if (task == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_coll_route(cc, args, &task->algo);
    if (status == SHARC_OK) {
        status = sharc_coll_task_post(task);
    } else {
        sharc_coll_task_free(task);
    }
    if (status != SHARC_OK) {
        return status;
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
