/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_mem.c: memory for zero-copy collectives: ncclMemAlloc (buffers NCCL can register
 * and map between GPUs) and ncclCommRegister, where the NCCL found at run time has them
 * (2.19 and later); SHARC_ERR_UNSUPPORTED otherwise, so callers fall back to cudaMalloc and
 * unregistered buffers on every rank alike. A failure of a supported call is an error: NCCL
 * forbids some ranks passing registered buffers to a collective while others do not.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>

#include "../../base/log.h"
#include "nccl.h"

#define SHARC_NCCL_REG_VERSION 21900 /* ncclMemAlloc and ncclCommRegister */

sharc_status_t sharc_tp_nccl_mem_reg(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                     sharc_memtype_t memtype, sharc_tp_mem_t **mem_p)
{
    sharc_tp_mem_t *mem;
    sharc_status_t status;

    if (memtype != SHARC_MEMTYPE_CUDA || tp->version < SHARC_NCCL_REG_VERSION || tp->nccl == NULL) {
        return SHARC_ERR_UNSUPPORTED;
    }
    mem = calloc(1, sizeof(*mem));
    if (mem == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_tp_nccl_status(
        tp, SHARC_NCCL(ncclCommRegister)(tp->nccl, addr, bytes, &mem->handle), "ncclCommRegister");
    if (status != SHARC_OK) {
        free(mem);
        return status;
    }
    *mem_p = mem;
    return SHARC_OK;
}

void sharc_tp_nccl_mem_dereg(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem)
{
    if (mem != NULL) {
        if (tp->nccl != NULL) {
            SHARC_NCCL(ncclCommDeregister)(tp->nccl, mem->handle);
        }
        free(mem);
    }
}

sharc_status_t sharc_tp_nccl_mem_alloc(sharc_tp_comm_t *tp, size_t bytes, sharc_memtype_t memtype,
                                       void **ptr_p)
{
    void *p = NULL;

    if (memtype != SHARC_MEMTYPE_CUDA || tp->version < SHARC_NCCL_REG_VERSION) {
        return SHARC_ERR_UNSUPPORTED;
    }
    if (SHARC_NCCL(ncclMemAlloc)(&p, bytes) != ncclSuccess) {
        sharc_error("nccl: ncclMemAlloc of %zu bytes failed: %s", bytes,
                    SHARC_NCCL(ncclGetLastError)(tp->nccl));
        return SHARC_ERR_NOMEM;
    }
    *ptr_p = p;
    return SHARC_OK;
}

void sharc_tp_nccl_mem_free(sharc_tp_comm_t *tp, void *ptr)
{
    if (ptr != NULL) {
        SHARC_NCCL(ncclMemFree)(ptr);
    }
}
