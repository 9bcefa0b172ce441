/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter_quant_hier.c: reduce-scatter over a quantized wire in two levels (ZeRO++'s
 * hierarchical qgZ): full precision within each node, quantized between nodes. Needs L > 1
 * ranks on each of N > 1 nodes. Computes: rank i's recvbuf = the sum (AVG: / n) of every
 * rank's block i; its node's ranks' blocks exact, each other node's partial sum within
 * sharc_wire_t's bound.
 * Steps: (1) within the node, one direct exchange at full precision: this rank sends each
 * node-mate the N blocks of the ranks in the mate's place on every node (straight from
 * sendbuf), receives its own N from each mate, and sums them onto its own in f32: N partial
 * sums, one per node. (2) Between nodes: the partial sum for node k is quantized once and
 * sent to the rank in this rank's place on node k; the N-1 segments received are
 * dequantized and summed onto this node's own partial sum, rounded once into recvbuf.
 * Bytes per rank: (L-1) N recvcount * esize each way within the node; (N-1) segments of
 * recvcount * (1 + 4 / block) each way between nodes (a flat ring sends (n-1) recvcount *
 * esize through each node's link). Extra memory: (L-1) N received blocks, N + 1 f32 blocks,
 * 2N segments. In place: sendbuf is read in step 1, recvbuf written at the end.
 */
#include "config.h"

#include <stdlib.h>

#include "../algorithms.h"
#include "../quant.h"

/* Where the scratch's parts begin (bytes): received blocks, partial sums, a widened block,
 * the segments sent, the segments received. */
typedef struct {
    size_t recv, partial, tmp, send, wire, end;
} sharc_rs_hier_map_t;

static sharc_rs_hier_map_t sharc_rs_hier_map(const sharc_coll_task_t *task)
{
    const sharc_coll_comm_t *cc = task->cc;
    size_t n_nodes = (size_t)cc->nnodes, mates = (size_t)cc->node_size - 1;
    size_t block = task->args.count * sharc_dtype_size(task->args.dtype);
    size_t f32 = task->args.count * sizeof(float);
    sharc_rs_hier_map_t m;

    m.recv = 0;
    m.partial = SHARC_ALIGN_UP(mates * n_nodes * block, 16);
    m.tmp = m.partial + SHARC_ALIGN_UP(n_nodes * f32, 16);
    m.send = m.tmp + SHARC_ALIGN_UP(f32, 16);
    m.wire = m.send + n_nodes * task->u.quant.seg;
    m.end = m.wire + n_nodes * task->u.quant.seg;
    return m;
}

static sharc_status_t sharc_rs_hier_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *cc = task->cc;
    size_t nodes = (size_t)cc->nnodes, mates = (size_t)cc->node_size - 1;

    task->u.quant.phase = 0;
    task->u.quant.seg = sharc_wire_size(a->wire, a->count, a->block, a->dtype);
    task->nreqs = 2 * mates * nodes + 2 * (nodes - 1);
    task->reqs = calloc(task->nreqs, sizeof(*task->reqs));
    if (task->reqs == NULL || sharc_coll_scratch(task, sharc_rs_hier_map(task).end + 16) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

/* Step 1's messages: N blocks to and from each node-mate. */
static sharc_status_t sharc_rs_hier_post_node(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *cc = task->cc;
    int nodes = cc->nnodes, me = cc->local_index, r = 0;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    char *recv = task->scratch + sharc_rs_hier_map(task).recv;
    sharc_tp_req_t *sreq = task->reqs + (size_t)(cc->node_size - 1) * nodes;
    sharc_status_t status = SHARC_OK;

    for (int j = 0; j < cc->node_size && status == SHARC_OK; j++) {
        int peer = sharc_coll_node_rank(cc, cc->node_index, j);

        for (int k = 0; k < nodes && j != me && status == SHARC_OK; k++, r++) {
            const char *block =
                (const char *)a->sendbuf + (size_t)sharc_coll_node_rank(cc, k, j) * bytes;

            status = sharc_coll_sendrecv(task, peer, block, bytes, &sreq[r], peer,
                                         recv + (size_t)r * bytes, bytes, &task->reqs[r]);
        }
    }
    return status;
}

/* acc (f32) += @p count values of @p block in @p dtype (@p tmp: room for them in f32). */
static void sharc_rs_hier_add(float *acc, const void *block, sharc_dtype_t dtype, size_t count,
                              float *tmp)
{
    if (dtype != SHARC_DTYPE_F32) {
        sharc_kern_cpu_ops.cast(tmp, SHARC_DTYPE_F32, block, dtype, count, NULL);
        block = tmp;
    }
    sharc_kern_cpu_ops.reduce(acc, acc, block, count, SHARC_DTYPE_F32, SHARC_OP_SUM, NULL);
}

/* The node's partial sums, quantized; step 2's messages posted. */
static sharc_status_t sharc_rs_hier_post_nodes(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *cc = task->cc;
    sharc_rs_hier_map_t m = sharc_rs_hier_map(task);
    int nodes = cc->nnodes, mates = cc->node_size - 1, me = cc->local_index;
    size_t bytes = a->count * sharc_dtype_size(a->dtype), seg = task->u.quant.seg;
    sharc_tp_req_t *reqs = task->reqs + 2 * (size_t)mates * nodes;
    float *partial = (float *)(void *)(task->scratch + m.partial);
    float *tmp = (float *)(void *)(task->scratch + m.tmp);
    sharc_kern_wire_t w = {a->wire, a->block};
    sharc_status_t status = SHARC_OK;

    for (int k = 0; k < nodes; k++) {
        float *acc = partial + (size_t)k * a->count;

        sharc_kern_cpu_ops.cast(acc, SHARC_DTYPE_F32,
                                (const char *)a->sendbuf +
                                    (size_t)sharc_coll_node_rank(cc, k, me) * bytes,
                                a->dtype, a->count, NULL);
        for (int j = 0; j < mates; j++) {
            sharc_rs_hier_add(acc, task->scratch + m.recv + ((size_t)j * nodes + k) * bytes,
                              a->dtype, a->count, tmp);
        }
    }
    status = sharc_kern_cpu_ops.quantize(task->scratch + m.send, w, partial, SHARC_DTYPE_F32,
                                         a->count, nodes, NULL);
    for (int k = 0, r = 0; k < nodes && status == SHARC_OK; k++) {
        int peer = sharc_coll_node_rank(cc, k, me);

        if (k != cc->node_index) {
            status = sharc_coll_sendrecv(task, peer, task->scratch + m.send + (size_t)k * seg, seg,
                                         &reqs[nodes - 1 + r], peer,
                                         task->scratch + m.wire + (size_t)k * seg, seg, &reqs[r]);
            r++;
        }
    }
    return status;
}

static sharc_status_t sharc_rs_hier_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *cc = task->cc;
    size_t first = 2 * (size_t)(cc->node_size - 1) * cc->nnodes;
    sharc_rs_hier_map_t m = sharc_rs_hier_map(task);
    sharc_kern_wire_t w = {a->wire, a->block};
    sharc_status_t status = SHARC_OK;

    if (a->count == 0) {
        return SHARC_OK;
    }
    switch (task->u.quant.phase) {
    case 0:
        status = sharc_rs_hier_post_node(task);
        task->u.quant.phase = 1;
        /* fall through */
    case 1:
        if (status == SHARC_OK &&
            (status = sharc_coll_reqs_status(task->reqs, first)) == SHARC_OK) {
            status = sharc_rs_hier_post_nodes(task);
            task->u.quant.phase = 2;
        }
        if (status != SHARC_OK) {
            return status;
        }
        /* fall through */
    default:
        status = sharc_coll_reqs_status(task->reqs + first, task->nreqs - first);
        if (status != SHARC_OK) {
            return status;
        }
        return sharc_kern_cpu_ops.dequantize_sum(
            a->recvbuf, a->dtype,
            (const float *)(void *)(task->scratch + m.partial) + (size_t)cc->node_index * a->count,
            task->scratch + m.wire, w, a->count, cc->nnodes, cc->node_index,
            a->op == SHARC_OP_AVG ? 1.0 / cc->size : 1.0, NULL);
    }
}

const sharc_coll_algo_t sharc_coll_reduce_scatter_quant_hier = {
    .info = {.name = "quant_hier", .flags = 0},
    .type = SHARC_COLL_REDUCE_SCATTER,
    .init = sharc_rs_hier_init,
    .progress = sharc_rs_hier_progress,
};
