/*
 * context.h: the context as the rest of the library sees it: a reference-counted holder of
 * one parsed configuration and the table of its shareable buffers.
 */
#ifndef SHARC_CONTEXT_INT_H
#define SHARC_CONTEXT_INT_H

#include <sharc/context.h>

#include "config_int.h"
#include "def_int.h"
#include "mem.h"

struct sharc_context {
    int refs; /* atomic: the caller's plus one per communicator */
    sharc_config_h config;
    const sharc_cfg_t *cfg; /* parsed view of config */
    sharc_mem_table_t *mem; /* buffers from sharc_mem_alloc */
};

SHARC_HIDDEN void sharc_context_get(sharc_context_h ctx);
SHARC_HIDDEN void sharc_context_put(sharc_context_h ctx);

#endif
