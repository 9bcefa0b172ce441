/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_init.c: the NCCL backend's setup and teardown: rank 0's unique id through the sharc
 * bootstrap, a non-blocking ncclCommInitRankConfig polled against SHARC_BOOTSTRAP_TIMEOUT
 * (a rank that never arrives aborts the others' initialization instead of hanging it),
 * ncclCommSplit for sub-communicators, and the ops table.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "nccl.h"

static sharc_status_t sharc_tp_nccl_query(const sharc_cfg_t *cfg)
{
    int ndev = 0; /* cudaGetDeviceCount leaves it alone when it fails */
    cudaError_t err = cudaGetDeviceCount(&ndev);

    if (err != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        sharc_info("nccl: no CUDA device here (%s)",
                   err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return SHARC_ERR_UNSUPPORTED;
    }
    return sharc_tp_nccl_load();
}

/* State without an NCCL communicator yet: device, version, stream. */
static sharc_status_t sharc_tp_nccl_new(const sharc_tp_comm_params_t *params,
                                        sharc_tp_comm_t **tp_p)
{
    sharc_tp_comm_t *tp = calloc(1, sizeof(*tp));
    int lo = 0, hi = 0;
    cudaError_t err;

    if (tp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    tp->rank = params->rank;
    tp->size = params->size;
    tp->timeout = params->timeout;
    tp->boot_timeout = sharc_boot_cfg(params->cfg)->timeout;
    SHARC_NCCL(ncclGetVersion)(&tp->version);
    cudaGetDevice(&tp->device);
    /* the highest priority: collectives are scheduled ahead of the compute they overlap */
    cudaDeviceGetStreamPriorityRange(&lo, &hi);
    err = cudaStreamCreateWithPriority(&tp->stream, cudaStreamNonBlocking, hi);
    if (err != cudaSuccess) {
        sharc_error("nccl: cannot create the communication stream on device %d: %s", tp->device,
                    cudaGetErrorString(err));
        free(tp);
        return SHARC_ERR_BACKEND;
    }
    *tp_p = tp;
    return SHARC_OK;
}

static void sharc_tp_nccl_free(sharc_tp_comm_t *tp)
{
    for (int i = 0; i < tp->nevents; i++) {
        cudaEventDestroy(tp->events[i]);
    }
    free(tp->events);
    cudaStreamDestroy(tp->stream);
    free(tp);
}

/* Non-blocking communicators: initialization and collectives are bounded by our timeouts. */
static ncclConfig_t sharc_tp_nccl_config(void)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;

    config.blocking = 0;
    return config;
}

static sharc_status_t sharc_tp_nccl_comm_create(const sharc_tp_comm_params_t *params,
                                                sharc_tp_comm_t **tp_p)
{
    struct {
        int32_t status, pad;
        ncclUniqueId id;
    } hello = {0};
    ncclConfig_t config = sharc_tp_nccl_config();
    sharc_tp_comm_t *tp;
    sharc_status_t status;
    ncclResult_t res;

    if (params->rank == 0) {
        res = SHARC_NCCL(ncclGetUniqueId)(&hello.id);
        hello.status = sharc_tp_nccl_status(NULL, res, "ncclGetUniqueId");
    }
    /* rank 0's id and its status together: a failure there fails every rank at once */
    status = sharc_boot_bcast(params->boot, &hello, sizeof(hello), 0);
    if (status == SHARC_OK && hello.status != SHARC_OK) {
        if (params->rank != 0) {
            sharc_error("nccl: rank 0 could not make the communicator's unique id");
        }
        status = SHARC_ERR_REMOTE;
    }
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_tp_nccl_new(params, &tp);
    if (status != SHARC_OK) {
        return status;
    }
    res = SHARC_NCCL(ncclCommInitRankConfig)(&tp->nccl, params->size, hello.id, params->rank,
                                             &config);
    status = sharc_tp_nccl_settle(tp, res, tp->boot_timeout, "ncclCommInitRank");
    if (status != SHARC_OK) {
        if (tp->nccl != NULL) {
            SHARC_NCCL(ncclCommAbort)(tp->nccl);
        }
        sharc_tp_nccl_free(tp);
        return status;
    }
    sharc_info("nccl: rank %d of %d on device %d, NCCL %d.%d.%d", tp->rank, tp->size, tp->device,
               tp->version / 10000, tp->version / 100 % 100, tp->version % 100);
    *tp_p = tp;
    return SHARC_OK;
}

static sharc_status_t sharc_tp_nccl_comm_split(sharc_tp_comm_t *tp, int color, int key,
                                               const sharc_tp_comm_params_t *params,
                                               sharc_tp_comm_t **new_p)
{
    ncclConfig_t config = sharc_tp_nccl_config();
    sharc_tp_comm_t *child = NULL;
    ncclComm_t comm = NULL;
    sharc_status_t status;
    ncclResult_t res;

    if (tp->failed != SHARC_OK || tp->nccl == NULL) {
        sharc_error("nccl: cannot split a failed communicator");
        return tp->failed != SHARC_OK ? tp->failed : SHARC_ERR_REMOTE;
    }
    if (color >= 0) {
        status = sharc_tp_nccl_new(params, &child);
        if (status != SHARC_OK) {
            return status;
        }
    }
    /* the split writes comm from NCCL's thread when done: settled (or aborted) before return */
    res = SHARC_NCCL(ncclCommSplit)(tp->nccl, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &comm,
                                    &config);
    status = sharc_tp_nccl_settle(tp, res, tp->boot_timeout, "ncclCommSplit");
    if (status == SHARC_OK && color >= 0 && comm == NULL) {
        sharc_error("nccl: ncclCommSplit finished without a communicator for color %d", color);
        status = SHARC_ERR_BACKEND;
    }
    if (status == SHARC_OK && comm != NULL) {
        /* the child's own initialization finishes on its own communicator */
        child->nccl = comm;
        status =
            sharc_tp_nccl_settle(child, ncclSuccess, tp->boot_timeout, "ncclCommSplit (child)");
    }
    if (status != SHARC_OK) {
        if (child != NULL) {
            if (child->nccl != NULL) {
                SHARC_NCCL(ncclCommAbort)(child->nccl);
            }
            sharc_tp_nccl_free(child);
        }
        return status;
    }
    *new_p = child;
    return SHARC_OK;
}

void sharc_tp_nccl_abort(sharc_tp_comm_t *tp)
{
    if (tp->nccl != NULL) {
        sharc_warn("nccl: rank %d aborts its NCCL communicator", tp->rank);
        SHARC_NCCL(ncclCommAbort)(tp->nccl);
        tp->nccl = NULL;
    }
    if (tp->failed == SHARC_OK) {
        tp->failed = SHARC_ERR_REMOTE;
    }
    sharc_tp_nccl_progress(tp); /* fails what is in flight */
}

static void sharc_tp_nccl_comm_destroy(sharc_tp_comm_t *tp)
{
    if (tp->nccl != NULL) {
        /* finalize flushes what is in flight; bounded, then abort */
        ncclResult_t res = SHARC_NCCL(ncclCommFinalize)(tp->nccl);

        if (sharc_tp_nccl_settle(tp, res, tp->timeout, "ncclCommFinalize") == SHARC_OK) {
            SHARC_NCCL(ncclCommDestroy)(tp->nccl);
        } else if (tp->nccl != NULL) {
            SHARC_NCCL(ncclCommAbort)(tp->nccl);
        }
    }
    sharc_tp_nccl_free(tp);
}

static const sharc_tp_coll_ops_t sharc_tp_nccl_coll_ops = {
    .run = sharc_tp_nccl_coll,
    .sendrecv = sharc_tp_nccl_p2p,
};

const sharc_tp_ops_t sharc_tp_nccl_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "nccl",
    .caps = SHARC_TP_CAP_CUDA_MEM | SHARC_TP_CAP_REMOTE,
    .query = sharc_tp_nccl_query,
    .comm_create = sharc_tp_nccl_comm_create,
    .comm_destroy = sharc_tp_nccl_comm_destroy,
    .comm_split = sharc_tp_nccl_comm_split,
    .abort = sharc_tp_nccl_abort,
    .mem_reg = sharc_tp_nccl_mem_reg,
    .mem_dereg = sharc_tp_nccl_mem_dereg,
    .mem_alloc = sharc_tp_nccl_mem_alloc,
    .mem_free = sharc_tp_nccl_mem_free,
    .progress = sharc_tp_nccl_progress,
    .coll = &sharc_tp_nccl_coll_ops,
};
