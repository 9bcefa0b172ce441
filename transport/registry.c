/*
 * registry.c: the one list of transport backends built into this library, in order of
 * preference, and the selection rule. `#ifdef HAVE_<backend>` appears here and in the build
 * files only.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <string.h>

#include "../src/log.h"
#include "../src/util.h"
#include "transport.h"

extern const sharc_tp_ops_t sharc_tp_self_ops;
#ifdef HAVE_UCX
extern const sharc_tp_ops_t sharc_tp_ucx_ops;
#endif

/* In order of preference; later backends slot in here (nccl, ib). */
static const sharc_tp_ops_t *const sharc_tp_backends[] = {
    &sharc_tp_self_ops,
#ifdef HAVE_UCX
    &sharc_tp_ucx_ops,
#endif
    NULL,
};

const sharc_tp_ops_t *sharc_tp_find(const char *name)
{
    for (size_t i = 0; sharc_tp_backends[i] != NULL; i++) {
        if (sharc_name_index(&sharc_tp_backends[i]->name, 1, name) == 0) {
            return sharc_tp_backends[i];
        }
    }
    return NULL;
}

/* Could this backend serve a communicator of @p size here? */
static int sharc_tp_fits(const sharc_tp_ops_t *ops, const sharc_cfg_t *cfg, int size)
{
    if (ops->version != SHARC_TP_OPS_VERSION) {
        sharc_warn("transport %s was written for ops version %u, this library has %u: skipped",
                   ops->name, ops->version, SHARC_TP_OPS_VERSION);
        return 0;
    }
    if (size > 1 && strcmp(ops->name, "self") == 0) {
        return 0; /* self reaches only its own rank */
    }
    return ops->query == NULL || ops->query(cfg) == SHARC_OK;
}

sharc_status_t sharc_tp_select(const sharc_cfg_t *cfg, int size, const sharc_tp_ops_t **ops_p)
{
    const char *name = sharc_cfg_transport_names[cfg->transport];
    const sharc_tp_ops_t *ops;

    if (cfg->transport != SHARC_CFG_TRANSPORT_AUTO) {
        ops = sharc_tp_find(name);
        if (ops == NULL) {
            sharc_error("SHARC_TRANSPORT=%s: this sharc was built without it", name);
            return SHARC_ERR_UNSUPPORTED;
        }
        if (!sharc_tp_fits(ops, cfg, size)) {
            sharc_error("SHARC_TRANSPORT=%s cannot serve a communicator of %d ranks here", name,
                        size);
            return SHARC_ERR_UNSUPPORTED;
        }
        *ops_p = ops;
        return SHARC_OK;
    }
    /* self is first in the list, so one rank alone always gets it */
    for (size_t i = 0; sharc_tp_backends[i] != NULL; i++) {
        if (sharc_tp_fits(sharc_tp_backends[i], cfg, size)) {
            *ops_p = sharc_tp_backends[i];
            return SHARC_OK;
        }
    }
    sharc_info("no data transport fits a communicator of %d ranks; it has its bootstrap only",
               size);
    *ops_p = NULL;
    return SHARC_OK;
}
