/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * context.c: contexts as the layers use them: references (one per communicator), the
 * shareable memory they hand out, their end. Creating one is the library root's
 * (lib/context.c), which knows every layer's knobs.
 */
#include "config.h"

#include <stdlib.h>

#include <sharc/mem.h>

#include "../coll/api.h"
#include "context.h"
#include "../base/log.h"

void sharc_context_get(sharc_context_h ctx)
{
    __atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);
}

sharc_status_t sharc_context_watchdog(sharc_context_h ctx, sharc_coll_watchdog_t **wd_p)
{
    sharc_status_t status = SHARC_OK;

    pthread_mutex_lock(&ctx->lock);
    if (ctx->watchdog == NULL) {
        status = sharc_coll_watchdog_create(ctx->cfg, &ctx->watchdog);
    }
    *wd_p = ctx->watchdog;
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

sharc_status_t sharc_context_exporter(sharc_context_h ctx, int rank, int local_rank, int local_size,
                                      sharc_coll_exporter_t **ex_p)
{
    sharc_status_t status = SHARC_OK;

    pthread_mutex_lock(&ctx->lock);
    if (!ctx->exporter_made) {
        status = sharc_coll_exporter_create(ctx->cfg, rank, local_rank, local_size, &ctx->exporter);
        ctx->exporter_made = status == SHARC_OK;
    }
    *ex_p = ctx->exporter;
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

void sharc_context_put(sharc_context_h ctx)
{
    if (__atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        sharc_coll_exporter_destroy(ctx->exporter); /* (every communicator has left it) */
        sharc_coll_watchdog_destroy(ctx->watchdog); /* (every communicator has left it) */
        pthread_mutex_destroy(&ctx->lock);
        sharc_coll_tune_destroy(ctx->tune);
        sharc_mem_table_destroy(ctx->mem);
        sharc_config_destroy(ctx->config);
        free(ctx);
    }
}

sharc_status_t sharc_mem_alloc(sharc_context_h ctx, size_t bytes, void **ptr_p)
{
    if (ctx == NULL || ptr_p == NULL) {
        sharc_error("sharc_mem_alloc: %s is NULL", ctx == NULL ? "ctx" : "ptr_p");
        return SHARC_ERR_INVALID;
    }
    return sharc_mem_table_alloc(ctx->mem, bytes, ptr_p);
}

sharc_status_t sharc_mem_free(sharc_context_h ctx, void *ptr)
{
    if (ptr == NULL) {
        return SHARC_OK;
    }
    if (ctx == NULL) {
        sharc_error("sharc_mem_free: ctx is NULL");
        return SHARC_ERR_INVALID;
    }
    return sharc_mem_table_free(ctx->mem, ptr);
}

void sharc_context_destroy(sharc_context_h ctx)
{
    if (ctx != NULL) {
        sharc_context_put(ctx);
    }
}
