/*
 * nccl.h: the NCCL backend's state: a collective backend for CUDA buffers. One NCCL
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

#include "../transport.h"

struct sharc_tp_comm {
    ncclComm_t nccl;
    int rank, size, device, version; /* version: ncclGetVersion's code */
    const sharc_cfg_t *cfg;
    cudaStream_t stream;         /* the communication stream, owned */
    sharc_tp_req_t *head, *tail; /* in flight, in posting order */
    cudaEvent_t *events;         /* free completion events */
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

SHARC_HIDDEN sharc_status_t sharc_tp_nccl_coll(sharc_tp_comm_t *tp,
                                               const sharc_tp_coll_args_t *args,
                                               sharc_tp_req_t *req);
SHARC_HIDDEN int sharc_tp_nccl_progress(sharc_tp_comm_t *tp);
SHARC_HIDDEN void sharc_tp_nccl_abort(sharc_tp_comm_t *tp);

SHARC_HIDDEN sharc_status_t sharc_tp_nccl_mem_reg(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                                  sharc_memtype_t memtype, sharc_tp_mem_t **mem_p);
SHARC_HIDDEN void sharc_tp_nccl_mem_dereg(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem);
SHARC_HIDDEN sharc_status_t sharc_tp_nccl_mem_alloc(sharc_tp_comm_t *tp, size_t bytes,
                                                    sharc_memtype_t memtype, void **ptr_p);
SHARC_HIDDEN void sharc_tp_nccl_mem_free(sharc_tp_comm_t *tp, void *ptr);

#endif
