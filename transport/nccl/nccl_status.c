/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_status.c: the NCCL boundary: ncclResult_t becomes a sharc status here and nowhere
 * else (logged once, with NCCL's last error), and non-blocking calls are waited for with a
 * deadline, after which the communicator is aborted rather than hung on.
 */
#include "config.h"

#include <sched.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include "../../base/log.h"
#include "../../base/util.h"
#include "nccl.h"

sharc_status_t sharc_tp_nccl_status(sharc_tp_comm_t *tp, ncclResult_t res, const char *what)
{
    const char *last =
        (tp != NULL && tp->nccl != NULL) ? SHARC_NCCL(ncclGetLastError)(tp->nccl) : NULL;

    switch (res) {
    case ncclSuccess: return SHARC_OK;
    case ncclInProgress: return SHARC_INPROGRESS;
    default: break;
    }
    sharc_error("nccl: %s failed: %s%s%s", what, SHARC_NCCL(ncclGetErrorString)(res),
                (last != NULL && last[0] != '\0') ? ": " : "", last != NULL ? last : "");
    switch (res) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: return SHARC_ERR_INVALID;
    case ncclRemoteError: return SHARC_ERR_REMOTE;
    default: return SHARC_ERR_BACKEND;
    }
}

sharc_status_t sharc_tp_nccl_settle(sharc_tp_comm_t *tp, ncclResult_t res, double timeout,
                                    const char *what)
{
    double deadline = sharc_time_now() + timeout;
    long polls = 0;

    /*
     * A non-blocking call can return ncclSuccess with its work still running: ncclCommSplit
     * does (its group ends in ncclInProgress, which it does not return), and writes the new
     * communicator from NCCL's thread when the split is done. The communicator's own state
     * is what says when the call is over, so it is read even after ncclSuccess.
     */
    while ((res == ncclSuccess || res == ncclInProgress) && tp->nccl != NULL) {
        ncclResult_t state = ncclInProgress;

        if (SHARC_NCCL(ncclCommGetAsyncError)(tp->nccl, &state) != ncclSuccess) {
            state = ncclInternalError;
        }
        res = state;
        if (state != ncclInProgress) {
            break;
        }
        if (sharc_time_now() > deadline) {
            sharc_error("nccl: %s did not finish within %.0f s; the communicator is aborted", what,
                        timeout);
            SHARC_NCCL(ncclCommAbort)(tp->nccl);
            tp->nccl = NULL;
            tp->failed = SHARC_ERR_TIMEOUT;
            return SHARC_ERR_TIMEOUT;
        }
        if (++polls > 1000) {
            sched_yield(); /* an initialization takes a while: leave the core to NCCL's threads */
        }
    }
    return sharc_tp_nccl_status(tp, res, what);
}
