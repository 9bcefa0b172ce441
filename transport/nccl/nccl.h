/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl.h: the NCCL backend's state: a CUDA backend. One NCCL
 * communicator per sharc communicator (unique id through the sharc bootstrap, non-blocking
 * initialization bounded by SHARC_BOOTSTRAP_TIMEOUT; ncclCommSplit for splits), one
 * communication stream of high priority, and the operations in flight in posting order, each
 * finished by an event on that stream.
 */
#ifndef SHARC_TP_NCCL_H
#define SHARC_TP_NCCL_H

#include <cuda_runtime.h>
/* nccl.h declares ncclGroupStart() and a few others without (void) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "../backend.h"

/* The NCCL functions the backend calls, opened at run time (nccl_lib.c), one a line. */
/* clang-format off */
#define SHARC_TP_NCCL_FNS(X) \
    X(ncclGetVersion) \
    X(ncclGetUniqueId) \
    X(ncclCommInitRankConfig) \
    X(ncclCommSplit) \
    X(ncclCommGetAsyncError) \
    X(ncclCommAbort) \
    X(ncclCommDestroy) \
    X(ncclCommFinalize) \
    X(ncclGetErrorString) \
    X(ncclGetLastError) \
    X(ncclAllGather) \
    X(ncclReduceScatter) \
    X(ncclAllReduce) \
    X(ncclBroadcast) \
    X(ncclReduce) \
    X(ncclMemAlloc) \
    X(ncclMemFree) \
    X(ncclCommRegister) \
    X(ncclCommDeregister) \
    X(ncclGroupStart) \
    X(ncclGroupEnd) \
    X(ncclSend) \
    X(ncclRecv)
/* clang-format on */

typedef struct {
#define SHARC_TP_NCCL_PTR(fn) __typeof__(fn) *fn;
    SHARC_TP_NCCL_FNS(SHARC_TP_NCCL_PTR)
#undef SHARC_TP_NCCL_PTR
} sharc_tp_nccl_lib_t;

SHARC_HIDDEN extern sharc_tp_nccl_lib_t sharc_tp_nccl_lib;

/* A call into NCCL, through the table: SHARC_NCCL(ncclAllReduce)(...). */
#define SHARC_NCCL(fn) (sharc_tp_nccl_lib.fn)

/* Open NCCL (once): SHARC_OK, or SHARC_ERR_UNSUPPORTED where it cannot be loaded (logged
 * as information: CUDA buffers are then staged). */
SHARC_HIDDEN sharc_status_t sharc_tp_nccl_load(void);

struct sharc_tp_comm {
    ncclComm_t nccl;
    int rank, size, device, version; /* version: ncclGetVersion's code */
    double timeout;            /* SHARC_TIMEOUT: a call that takes longer aborts the communicator */
    double boot_timeout;       /* SHARC_BOOTSTRAP_TIMEOUT: for creating and splitting it */
    cudaStream_t stream;       /* the communication stream, owned */
    sharc_tp_queue_t inflight; /* in posting order */
    cudaEvent_t *events;       /* free completion events */
    int nevents, cap;
    sharc_status_t failed; /* SHARC_OK, or why the communicator stopped (aborted) */
};

struct sharc_tp_mem {
    void *handle; /* ncclCommRegister's */
};

/* ncclResult_t -> sharc status, logged with NCCL's last error, at this boundary only. */
SHARC_HIDDEN sharc_status_t sharc_tp_nccl_status(sharc_tp_comm_t *tp, ncclResult_t res,
                                                 const char *what);

/*
 * Wait until a non-blocking NCCL call on @p tp's communicator has finished (it returned
 * @p res: ncclInProgress, or ncclSuccess with work that may still run), for at most
 * @p timeout seconds (then the communicator is aborted: SHARC_ERR_TIMEOUT).
 */
SHARC_HIDDEN sharc_status_t sharc_tp_nccl_settle(sharc_tp_comm_t *tp, ncclResult_t res,
                                                 double timeout, const char *what);

/* nccl_coll.c: NCCL's type for @p dtype: 0, or -1 for none. */
SHARC_HIDDEN int sharc_tp_nccl_dtype(sharc_dtype_t dtype, ncclDataType_t *out);
/* nccl_coll.c: a completion event from the free list (or a new one; NULL when CUDA cannot),
 * and its return. */
SHARC_HIDDEN cudaEvent_t sharc_tp_nccl_event_get(sharc_tp_comm_t *tp);
SHARC_HIDDEN void sharc_tp_nccl_event_put(sharc_tp_comm_t *tp, cudaEvent_t e);
/* nccl_coll.c: the communication stream waits for the work queued on @p caller up to now,
 * through @p ready (an event of the free list, given back). */
SHARC_HIDDEN sharc_status_t sharc_tp_nccl_follow(sharc_tp_comm_t *tp, cudaStream_t caller,
                                                 cudaEvent_t ready);

SHARC_HIDDEN sharc_tp_coll_fn_t sharc_tp_nccl_coll;
SHARC_HIDDEN sharc_tp_p2p_fn_t sharc_tp_nccl_p2p;
SHARC_HIDDEN sharc_tp_progress_fn_t sharc_tp_nccl_progress;
SHARC_HIDDEN sharc_tp_abort_fn_t sharc_tp_nccl_abort;

SHARC_HIDDEN sharc_tp_mem_reg_fn_t sharc_tp_nccl_mem_reg;
SHARC_HIDDEN sharc_tp_mem_dereg_fn_t sharc_tp_nccl_mem_dereg;
SHARC_HIDDEN sharc_tp_mem_alloc_fn_t sharc_tp_nccl_mem_alloc;
SHARC_HIDDEN sharc_tp_mem_free_fn_t sharc_tp_nccl_mem_free;

#endif
