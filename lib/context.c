/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * context.c: creating a context, at the library's root because it starts from every layer's
 * knobs: the configuration (the defaults and SHARC_* variables, or a copy of the caller's),
 * logging applied process-wide (see sharc/log.h), SHARC_TUNE_FILE's rules (coll/algorithms/tune.c),
 * the table of shareable memory, and a warning for SHARC_* variables that name no knob. A
 * context's references and end are the communicators' layer's (comm/context.c).
 */
#include "config.h"

#include <stdlib.h>

#include <sharc/context.h>

#include "../coll/api.h"
#include "../comm/context.h"
#include "../base/log.h"
#include "../base/log_cfg.h"

sharc_status_t sharc_context_create(sharc_config_h config, sharc_context_h *ctx_p)
{
    const sharc_log_cfg_t *log;
    const char *tune_file;
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
    pthread_mutex_init(&ctx->lock, NULL);
    /* logging first, so that the tune file's messages go where the user asked */
    log = sharc_log_cfg(ctx->cfg);
    sharc_log_configure(log->level, log->subsys, log->file);
    tune_file = sharc_coll_cfg(ctx->cfg)->tune_file;
    if (tune_file[0] != '\0') {
        status = sharc_coll_tune_load(tune_file, &ctx->tune);
        if (status != SHARC_OK) {
            goto err_destroy_mem;
        }
    }
    sharc_config_warn_unknown_env(ctx->config);
    *ctx_p = ctx;
    return SHARC_OK;

err_destroy_mem:
    pthread_mutex_destroy(&ctx->lock);
    sharc_mem_table_destroy(ctx->mem);
err_destroy_config:
    sharc_config_destroy(ctx->config);
err_free_ctx:
    free(ctx);
    return status;
}
