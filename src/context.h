/*
 * context.h: the context as the rest of the library sees it: a reference-counted holder of
 * one parsed configuration and the table of its shareable buffers.
 */
#ifndef SHARC_CONTEXT_INT_H
#define SHARC_CONTEXT_INT_H

#include <sharc/context.h>

#include "base/config_int.h"
#include "base/def_int.h"
#include "base/mem.h"

/* SHARC_TUNE_FILE's rules (coll/tune.h), read by algorithm selection. */
typedef struct sharc_coll_tune sharc_coll_tune_t;

/*
 * Read the tune file at @p path. Any fault (unreadable file, a bad line) is logged with the
 * file, line and cause and gives SHARC_ERR_INVALID; *tune_p is set only on success.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_tune_load(const char *path, sharc_coll_tune_t **tune_p);
SHARC_HIDDEN void sharc_coll_tune_destroy(sharc_coll_tune_t *tune); /* NULL: no-op */

struct sharc_context {
    int refs; /* atomic: the caller's plus one per communicator */
    sharc_config_h config;
    const sharc_cfg_t *cfg;  /* parsed view of config */
    sharc_mem_table_t *mem;  /* buffers from sharc_mem_alloc */
    sharc_coll_tune_t *tune; /* SHARC_TUNE_FILE's rules, or NULL for none */
};

SHARC_HIDDEN void sharc_context_get(sharc_context_h ctx);
SHARC_HIDDEN void sharc_context_put(sharc_context_h ctx);

#endif
