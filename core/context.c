/*
 * context.c: contexts. Creating one applies its logging settings process-wide (see
 * sharc/log.h), reads SHARC_TUNE_FILE's rules (coll/tune.c) and warns about SHARC_*
 * variables that name no knob.
 */
#include "config.h"

#include <stdlib.h>

#include <sharc/mem.h>

#include "../coll/api.h"
#include "context.h"
#include "../src/base/log.h"

sharc_status_t sharc_context_create(sharc_config_h config, sharc_context_h *ctx_p)
{
    sharc_context_h ctx;
    sharc_status_t status;

    if (ctx_p == NULL) {
        sharc_error("sharc_context_create: ctx_p is NULL");
        return SHARC_ERR_INVALID;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = (config == NULL) ? sharc_config_create(0, &ctx->config)
                              : sharc_config_dup(config, &ctx->config);
    if (status != SHARC_OK) {
        goto err_free_ctx;
    }
    status = sharc_mem_table_create(&ctx->mem);
    if (status != SHARC_OK) {
        goto err_destroy_config;
    }
    ctx->cfg = sharc_config_parsed(ctx->config);
    ctx->refs = 1;
    /* logging first, so that the tune file's messages go where the user asked */
    sharc_log_configure(ctx->cfg->log_level, ctx->cfg->log_subsys, ctx->cfg->log_file);
    if (ctx->cfg->tune_file[0] != '\0') {
        status = sharc_coll_tune_load(ctx->cfg->tune_file, &ctx->tune);
        if (status != SHARC_OK) {
            goto err_destroy_mem;
        }
    }
    sharc_config_warn_unknown_env();
    *ctx_p = ctx;
    return SHARC_OK;

err_destroy_mem:
    sharc_mem_table_destroy(ctx->mem);
err_destroy_config:
    sharc_config_destroy(ctx->config);
err_free_ctx:
    free(ctx);
    return status;
}

void sharc_context_get(sharc_context_h ctx)
{
    __atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);
}

void sharc_context_put(sharc_context_h ctx)
{
    if (__atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL) == 0) {
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
