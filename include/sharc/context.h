/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/context.h: a context holds one parsed configuration and the resources shared by the
 * communicators created on it (transport contexts, later CUDA streams and registration
 * caches). No global state: a process may hold several contexts.
 */
#ifndef SHARC_CONTEXT_H
#define SHARC_CONTEXT_H

#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/config.h>

SHARC_BEGIN_DECLS

typedef struct sharc_context *sharc_context_h;

/**
 * Create a context.
 * @param[in]  config  settings to use (copied; the caller may destroy it afterwards), or NULL
 *                     for the defaults overlaid with the SHARC_* environment variables.
 * @param[out] ctx_p   the new context; set only on success.
 * @return SHARC_OK, SHARC_ERR_INVALID (a bad environment value, logged), SHARC_ERR_NOMEM.
 * Thread safety: contexts are independent; one context may be used from several threads.
 */
SHARC_API sharc_status_t sharc_context_create(sharc_config_h config, sharc_context_h *ctx_p);

/**
 * Release the caller's reference to a context. Communicators created on it hold references
 * of their own, so the context is freed when the last of them is destroyed. NULL is a no-op.
 */
SHARC_API void sharc_context_destroy(sharc_context_h ctx);

SHARC_END_DECLS

#endif
