/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx_mem.c: memory registration through ucp_mem_map, for buffers a caller reuses (the
 * shard engine's units): a registered buffer's handle goes with each send and receive, so
 * UCP need not look it up or register it again. Unregistered buffers work too; UCP then
 * registers through its own cache when a protocol needs it.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>

#include "../../base/log.h"
#include "ucx.h"

sharc_status_t sharc_tp_ucx_mem_reg(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                    sharc_memtype_t memtype, sharc_tp_mem_t **mem_p)
{
    ucp_mem_map_params_t params = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = addr,
        .length = bytes,
    };
    sharc_tp_mem_t *mem;
    ucs_status_t ustatus;

    if (memtype != SHARC_MEMTYPE_HOST) {
        sharc_error("ucx: this UCX build reaches host memory only, not %s memory",
                    sharc_memtype_name(memtype));
        return SHARC_ERR_UNSUPPORTED;
    }
    mem = calloc(1, sizeof(*mem));
    if (mem == NULL) {
        return SHARC_ERR_NOMEM;
    }
    pthread_mutex_lock(&tp->base.lock);
    ustatus = ucp_mem_map(tp->context, &params, &mem->memh);
    pthread_mutex_unlock(&tp->base.lock);
    if (ustatus != UCS_OK) {
        sharc_error("ucx: ucp_mem_map(%p, %zu bytes) failed: %s", addr, bytes,
                    ucs_status_string(ustatus));
        free(mem);
        return sharc_tp_ucx_status(ustatus);
    }
    mem->addr = addr;
    mem->bytes = bytes;
    *mem_p = mem;
    return SHARC_OK;
}

void sharc_tp_ucx_mem_dereg(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem)
{
    if (mem == NULL) {
        return;
    }
    pthread_mutex_lock(&tp->base.lock);
    ucp_mem_unmap(tp->context, mem->memh);
    pthread_mutex_unlock(&tp->base.lock);
    free(mem);
}
