/*
 * hybrid.c: one point-to-point transport made of two: a node-local one (shm) for the ranks
 * of this node and a remote one (ucx) for the others, chosen per peer by node. Both were set
 * up over the whole communicator and take its ranks as they are, so no rank is translated.
 * It knows the two only through their ops tables; sharc_tp_open builds it.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../src/base/log.h"
#include "hybrid.h"

typedef struct {
    const sharc_tp_ops_t *ops;
    sharc_tp_comm_t *tp;
} sharc_tp_part_t;

struct sharc_tp_comm {
    sharc_tp_part_t local, remote;
    int *local_peer; /* [size]: 1 for ranks on this node */
    int size;
};

/* A registration with each part that registers memory. */
struct sharc_tp_mem {
    sharc_tp_mem_t *local, *remote;
};

static const sharc_tp_part_t *sharc_tp_hybrid_route(const sharc_tp_comm_t *tp, int peer,
                                                    sharc_tp_mem_t *mem, sharc_tp_mem_t **part_mem)
{
    int local = peer >= 0 && peer < tp->size && tp->local_peer[peer];

    *part_mem = (mem == NULL) ? NULL : local ? mem->local : mem->remote;
    return local ? &tp->local : &tp->remote; /* the remote part reports a bad peer */
}

static void sharc_tp_hybrid_destroy(sharc_tp_comm_t *tp)
{
    tp->local.ops->comm_destroy(tp->local.tp);
    tp->remote.ops->comm_destroy(tp->remote.tp);
    free(tp->local_peer);
    free(tp);
}

static void sharc_tp_hybrid_mem_dereg(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem)
{
    if (mem->local != NULL) {
        tp->local.ops->mem_dereg(tp->local.tp, mem->local);
    }
    if (mem->remote != NULL) {
        tp->remote.ops->mem_dereg(tp->remote.tp, mem->remote);
    }
    free(mem);
}

static sharc_status_t sharc_tp_hybrid_mem_reg(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                              sharc_memtype_t memtype, sharc_tp_mem_t **mem_p)
{
    sharc_tp_mem_t *mem = calloc(1, sizeof(*mem));
    sharc_status_t status = SHARC_OK;

    if (mem == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (tp->local.ops->mem_reg != NULL) {
        status = tp->local.ops->mem_reg(tp->local.tp, addr, bytes, memtype, &mem->local);
    }
    if (status == SHARC_OK && tp->remote.ops->mem_reg != NULL) {
        status = tp->remote.ops->mem_reg(tp->remote.tp, addr, bytes, memtype, &mem->remote);
    }
    if (status != SHARC_OK) {
        sharc_tp_hybrid_mem_dereg(tp, mem);
        return status;
    }
    *mem_p = mem;
    return SHARC_OK;
}

static sharc_status_t sharc_tp_hybrid_send(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                           const void *buf, size_t bytes, sharc_tp_mem_t *mem,
                                           sharc_tp_req_t *req)
{
    sharc_tp_mem_t *pm;
    const sharc_tp_part_t *part = sharc_tp_hybrid_route(tp, peer, mem, &pm);

    return part->ops->send(part->tp, peer, tag, buf, bytes, pm, req);
}

static sharc_status_t sharc_tp_hybrid_recv_reduce(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                                  void *dst, const void *src, size_t count,
                                                  sharc_dtype_t dtype, sharc_op_t op,
                                                  sharc_tp_req_t *req)
{
    sharc_tp_mem_t *pm;
    const sharc_tp_part_t *part = sharc_tp_hybrid_route(tp, peer, NULL, &pm);

    if (part->ops->recv_reduce == NULL) {
        return SHARC_ERR_UNSUPPORTED; /* this peer's part cannot: the caller reduces */
    }
    return part->ops->recv_reduce(part->tp, peer, tag, dst, src, count, dtype, op, req);
}

static sharc_status_t sharc_tp_hybrid_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                           size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_tp_mem_t *pm;
    const sharc_tp_part_t *part = sharc_tp_hybrid_route(tp, peer, mem, &pm);

    return part->ops->recv(part->tp, peer, tag, buf, bytes, pm, req);
}

static int sharc_tp_hybrid_progress_part(const sharc_tp_part_t *part)
{
    return part->ops->progress != NULL ? part->ops->progress(part->tp) : 0;
}

static int sharc_tp_hybrid_progress(sharc_tp_comm_t *tp)
{
    int a = sharc_tp_hybrid_progress_part(&tp->local);
    int b = sharc_tp_hybrid_progress_part(&tp->remote);

    if (a < 0 || b < 0) {
        return a < 0 ? a : b;
    }
    return a > 0 || b > 0;
}

/* Each part that can give up does (the other's requests wait for the communicator's end). */
static void sharc_tp_hybrid_abort(sharc_tp_comm_t *tp)
{
    const sharc_tp_part_t *parts[] = {&tp->local, &tp->remote};

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(parts); i++) {
        if (parts[i]->ops->abort != NULL) {
            parts[i]->ops->abort(parts[i]->tp);
        }
    }
}

const sharc_tp_ops_t sharc_tp_hybrid_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "hybrid",
    .caps = SHARC_TP_CAP_P2P | SHARC_TP_CAP_HOST_MEM | SHARC_TP_CAP_REMOTE,
    .query = NULL,
    .comm_create = NULL, /* built from two parts by sharc_tp_hybrid_create */
    .comm_destroy = sharc_tp_hybrid_destroy,
    .mem_reg = sharc_tp_hybrid_mem_reg,
    .mem_dereg = sharc_tp_hybrid_mem_dereg,
    .send = sharc_tp_hybrid_send,
    .recv = sharc_tp_hybrid_recv,
    .recv_reduce = sharc_tp_hybrid_recv_reduce,
    .coll = NULL,
    .progress = sharc_tp_hybrid_progress,
    .abort = sharc_tp_hybrid_abort,
};

sharc_status_t sharc_tp_hybrid_create(const sharc_tp_comm_params_t *params,
                                      const sharc_tp_ops_t *local_ops, sharc_tp_comm_t *local_tp,
                                      const sharc_tp_ops_t *remote_ops, sharc_tp_comm_t *remote_tp,
                                      sharc_tp_comm_t **tp_p)
{
    sharc_tp_comm_t *tp = calloc(1, sizeof(*tp));

    if (tp == NULL || (tp->local_peer = calloc((size_t)params->size, sizeof(int))) == NULL) {
        free(tp);
        return SHARC_ERR_NOMEM;
    }
    for (int r = 0; r < params->size; r++) {
        tp->local_peer[r] = params->node_of[r] == params->node_of[params->rank];
    }
    tp->size = params->size;
    tp->local = (sharc_tp_part_t){local_ops, local_tp};
    tp->remote = (sharc_tp_part_t){remote_ops, remote_tp};
    sharc_info("transport: %s within the node, %s between nodes", local_ops->name,
               remote_ops->name);
    *tp_p = tp;
    return SHARC_OK;
}
