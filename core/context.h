/*
 * context.h: the context as the rest of the library sees it: a reference-counted holder of
 * one parsed configuration and the table of its shareable buffers.
 */
#ifndef SHARC_CONTEXT_INT_H
#define SHARC_CONTEXT_INT_H

#include <sharc/context.h>

#include "../src/base/config_int.h"
#include "../src/base/def_int.h"
#include "../src/base/mem.h"

/* SHARC_TUNE_FILE's rules (coll/tune.h), loaded through coll/api.h, read by selection. */
typedef struct sharc_coll_tune sharc_coll_tune_t;

struct sharc_context {
    int refs; /* atomic: the caller's plus one per communicator */
    sharc_config_h config;
    const sharc_cfg_t *cfg;  /* parsed view of config */
    sharc_mem_table_t *mem;  /* buffers from sharc_mem_alloc */
    sharc_coll_tune_t *tune; /* SHARC_TUNE_FILE's rules, or NULL for none */
};

/* ---- the configuration object (config.c) */

/** The parsed view of a configuration. */
SHARC_HIDDEN const sharc_cfg_t *sharc_config_parsed(sharc_config_h config);

/** A deep copy (used by contexts so the caller may free theirs). */
SHARC_HIDDEN sharc_status_t sharc_config_dup(sharc_config_h config, sharc_config_h *copy_p);

/** Warn about SHARC_* environment variables that name no knob (typos). */
SHARC_HIDDEN void sharc_config_warn_unknown_env(void);

/* SHARC_CUDA_BACKEND's values, as sharc_cfg_t.cuda_backend holds them. */
enum { SHARC_CUDA_BACKEND_AUTO = 0, SHARC_CUDA_BACKEND_NCCL, SHARC_CUDA_BACKEND_STAGED };

/* ---- contexts (context.c) */

SHARC_HIDDEN void sharc_context_get(sharc_context_h ctx);
SHARC_HIDDEN void sharc_context_put(sharc_context_h ctx);

#endif
