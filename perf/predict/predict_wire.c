/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_wire.c: what the quantized wires (int8, fp8) and hpZ's secondary shards change in
 * `sharc-perf predict`: bytes per value on each hop, the (de)quantizations' memory-bound
 * cost, the backward's gather inside the node, and the bytes each GPU sends between nodes.
 * The collectives' own alpha-beta times are predict_cost.c's; docs/predict.md writes these
 * formulas out.
 */
#include "config.h"

#include "predict.h"

/* Bytes a value takes on @p wire: the dtype's, or a one-byte code and a 4-byte scale a block. */
static double pred_wire_value(sharc_wire_t wire, int block, int dtype_bytes)
{
    return wire == SHARC_WIRE_FULL ? dtype_bytes : 1.0 + 4.0 / (block > 0 ? block : 256);
}

/* Seconds to read and write @p bytes at the (de)quantizers' memory rate (0: free). */
static double pred_quant_s(const pred_cluster_t *c, double bytes)
{
    return c->quant_bw > 0 ? bytes / c->quant_bw : 0;
}

/* A step between nodes of @p n ranks' exchange: (n-1) alphas, and @p bytes at the GPU's
 * share of its node's NICs. */
static double pred_xchg(const pred_cluster_t *c, int n, double bytes)
{
    double bw = c->nics * c->nic_bw * c->nic_eff / (c->gpus_per_node > 0 ? c->gpus_per_node : 1);

    return n <= 1 || bw <= 0 ? 0 : (n - 1) * c->nic_lat + bytes / bw;
}

double pred_wire_ag_time(const pred_cluster_t *c, const pred_engine_t *e, const pred_group_t *grp,
                         double padded)
{
    int n = grp->nodes * grp->per_node;
    double w = pred_wire_value(e->pwire, e->wire_block, e->pbytes);

    if (e->pwire == SHARC_WIRE_FULL) {
        return pred_coll_time(c, e->algo, PRED_AG, grp, padded * e->pbytes);
    }
    /* this rank's shard quantized (read it, write its codes), the segments gathered, every
     * segment dequantized into the unit (read the codes, write the param dtype) */
    return pred_quant_s(c, padded / n * (e->pbytes + w)) +
           pred_coll_time(c, e->algo, PRED_AG, grp, padded * w) +
           pred_quant_s(c, padded * (w + e->pbytes));
}

double pred_wire_rs_time(const pred_cluster_t *c, const pred_engine_t *e, const pred_group_t *grp,
                         double padded)
{
    int nn = grp->nodes, g = grp->per_node, n = nn * g;
    double w = pred_wire_value(e->rwire, e->wire_block, e->rbytes);
    pred_group_t node = {1, g};

    if (e->rwire == SHARC_WIRE_FULL || nn == 1) { /* one node: summed at full precision */
        return pred_coll_time(c, e->algo, PRED_RS, grp, padded * e->rbytes);
    }
    if (g == 1) { /* flat: every block quantized, one all-to-all, the sum */
        return pred_quant_s(c, padded * (e->rbytes + w)) +
               pred_xchg(c, n, (n - 1.0) / n * padded * w) +
               pred_quant_s(c, padded / n * (n * w + e->rbytes));
    }
    /* full precision inside the node (the ring's reduce-scatter of the unit), then the node's
     * N partial sums (padded / g elements, f32) quantized, exchanged with the rank in this
     * place on every other node, dequantized and summed onto this node's own */
    return pred_coll_time(c, e->algo, PRED_RS, &node, padded * e->rbytes) +
           pred_quant_s(c, padded / g * (4.0 + w)) +
           pred_xchg(c, nn, (nn - 1.0) / nn * padded / g * w) +
           pred_quant_s(c, padded / n * (nn * w + e->rbytes));
}

double pred_node_ag_time(const pred_cluster_t *c, const pred_engine_t *e, const pred_group_t *grp,
                         double padded)
{
    pred_group_t node = {1, grp->per_node};

    return pred_coll_time(c, e->algo, PRED_AG, &node, padded * e->pbytes);
}

void pred_wire_unit(const pred_engine_t *e, const pred_group_t *grp, double padded, pred_unit_t *u)
{
    int nn = grp->nodes, g = grp->per_node; /* (e->hpz's gathers count nothing here) */
    double wp = pred_wire_value(e->pwire, e->wire_block, e->pbytes);
    double wr = pred_wire_value(e->rwire, e->wire_block, e->rbytes);
    double across = nn > 1 ? (nn - 1.0) / nn * padded / g : 0; /* values a GPU sends out */

    /* (the hierarchical accounting: a GPU moves its node's share of each level once) */
    u->xnode_ag = across * wp;
    u->xnode_red = across * wr;
    u->secondary_bytes = e->hpz ? padded / g * e->pbytes : 0;
}
