/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * context.h: the context as the rest of the library sees it: a reference-counted holder of
 * one parsed configuration and the table of its shareable buffers.
 */
#ifndef SHARC_CONTEXT_INT_H
#define SHARC_CONTEXT_INT_H

#include <pthread.h>
#include <sharc/context.h>

#include "../base/config_int.h"
#include "../base/def_int.h"
#include "../base/mem.h"

/* SHARC_TUNE_FILE's rules (coll/algorithms/tune.h), loaded through coll/api.h, read by selection.
 */
typedef struct sharc_coll_tune sharc_coll_tune_t;
/* The watchdog of the context's communicators (coll/api.h). */
typedef struct sharc_coll_watchdog sharc_coll_watchdog_t;
/* The metrics exporter of the context's communicators (coll/api.h). */
typedef struct sharc_coll_exporter sharc_coll_exporter_t;

struct sharc_context {
    int refs; /* atomic: the caller's plus one per communicator */
    sharc_config_h config;
    const sharc_cfg_t *cfg;  /* parsed view of config */
    sharc_mem_table_t *mem;  /* buffers from sharc_mem_alloc */
    sharc_coll_tune_t *tune; /* SHARC_TUNE_FILE's rules, or NULL for none */
    pthread_mutex_t lock;    /* its watchdog's making */
    sharc_coll_watchdog_t
        *watchdog; /* made with its first communicator (coll/diagnostics/watchdog.c) */
    /* its metrics exporter (coll/diagnostics/metrics_export.c), made with its first
     * communicator when SHARC_METRICS_PORT or SHARC_METRICS_FILE asks for one; NULL: off */
    sharc_coll_exporter_t *exporter;
    int exporter_made; /* (whether it was asked for: made once, or NULL for good) */
};

/* ---- the communicators' knob (comm_cfg.c) */

/* SHARC_CUDA_BACKEND's values, as sharc_core_cfg_t.cuda_backend holds them. */
enum { SHARC_CUDA_BACKEND_AUTO = 0, SHARC_CUDA_BACKEND_NCCL, SHARC_CUDA_BACKEND_STAGED };

typedef struct {
    int cuda_backend; /* SHARC_CUDA_BACKEND_* */
} sharc_core_cfg_t;

extern SHARC_HIDDEN const sharc_cfg_table_t sharc_core_cfg_table;

static inline const sharc_core_cfg_t *sharc_core_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_core_cfg_t *)sharc_cfg_get(cfg, &sharc_core_cfg_table);
}

/* ---- contexts (context.c; their creation is the library root's, lib/context.c) */

SHARC_HIDDEN void sharc_context_get(sharc_context_h ctx);
SHARC_HIDDEN void sharc_context_put(sharc_context_h ctx);

/* The context's watchdog, made with its first communicator. */
SHARC_HIDDEN sharc_status_t sharc_context_watchdog(sharc_context_h ctx,
                                                   sharc_coll_watchdog_t **wd_p);

/* The context's metrics exporter, made with its first communicator (@p rank, @p local_rank,
 * @p local_size: that communicator's, which name its file and port); *ex_p NULL: metrics are off. A
 * failure (a port taken) is the communicator's, and the next one tries again. */
SHARC_HIDDEN sharc_status_t sharc_context_exporter(sharc_context_h ctx, int rank, int local_rank,
                                                   int local_size, sharc_coll_exporter_t **ex_p);

#endif
