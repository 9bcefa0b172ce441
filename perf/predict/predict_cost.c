/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_cost.c: the alpha-beta cost model of `sharc-perf predict`, per algorithm and per
 * level (inside a node, between nodes), and the groups a rank's collectives run in. The
 * step's schedule built from it is predict_step.c's. docs/predict.md writes the formulas
 * out; a change here changes them there.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict.h"

/* Bytes per second a GPU gets between nodes: the node's NICs are shared by its GPUs (every
 * GPU is in some group, and all groups run the same collectives at once). */
static double pred_inter_bw(const pred_cluster_t *c)
{
    return c->nics * c->nic_bw * c->nic_eff / (c->gpus_per_node > 0 ? c->gpus_per_node : 1);
}

/* Inside a node, the reduce-scatter's bandwidth (a CPU's reduction costs; a GPU's hardly). */
static double pred_rs_bw(const pred_cluster_t *c)
{
    return c->intra_rs_bw > 0 ? c->intra_rs_bw : c->intra_bw;
}

/* A ring of @p n ranks: (n-1) steps of alpha, (n-1)/n of the bytes at @p bw (all-gather,
 * reduce-scatter; an all-reduce is both, twice). */
static double pred_ring(int n, double bytes, double alpha, double bw, int twice)
{
    if (n <= 1) {
        return 0;
    }
    return (twice ? 2.0 : 1.0) * ((n - 1) * alpha + (double)(n - 1) / n * bytes / bw);
}

double pred_coll_time(const pred_cluster_t *c, pred_algo_t algo, pred_coll_t type,
                      const pred_group_t *grp, double bytes)
{
    int nn = grp->nodes, g = grp->per_node, n = nn * g;
    double binter = pred_inter_bw(c), t;

    if (n <= 1) {
        return 0;
    }
    if (nn == 1) { /* inside one node */
        return pred_ring(g, bytes, c->intra_lat, type == PRED_AG ? c->intra_bw : pred_rs_bw(c),
                         type == PRED_AR);
    }
    if (g == 1) { /* one rank per node: between nodes only */
        return pred_ring(nn, bytes, c->nic_lat, binter, type == PRED_AR);
    }
    if (algo == PRED_ALGO_RING) {
        /* one ring over every rank (as many rings as NICs): each step waits for its slowest
         * link; a ring enters and leaves a node once, so all of the node's NICs carry it */
        double bnode = binter * c->gpus_per_node;
        double bw = bnode < c->intra_bw ? bnode : c->intra_bw;
        double alpha = c->nic_lat > c->intra_lat ? c->nic_lat : c->intra_lat;

        return pred_ring(n, bytes, alpha, bw, type == PRED_AR);
    }
    /* hierarchical: all-gather between nodes (each rank's node peers' blocks, bytes / g per
     * rank), then inside the node; reduce-scatter the reverse, the same time; all-reduce:
     * reduce-scatter inside, all-reduce between nodes on bytes / g, all-gather inside */
    if (type == PRED_AR) {
        t = 2.0 * pred_ring(g, bytes, c->intra_lat, c->intra_bw, 0) +
            pred_ring(nn, bytes / g, c->nic_lat, binter, 1);
    } else {
        t = pred_ring(nn, bytes / g, c->nic_lat, binter, 0) +
            pred_ring(g, bytes, c->intra_lat, c->intra_bw, 0);
    }
    return t;
}

void pred_groups(const pred_cluster_t *c, const pred_engine_t *e, int nodes, pred_group_t *shard_p,
                 pred_group_t *replica_p)
{
    int G = c->gpus_per_node, total = nodes * G;
    int s = (e->shard_size > 0 && e->shard_size < total) ? e->shard_size : total;

    if (s <= G) { /* shard groups inside a node; replicas: the other groups of the node too */
        *shard_p = (pred_group_t){1, s};
        *replica_p = (pred_group_t){nodes, G / s};
    } else {
        *shard_p = (pred_group_t){s / G, G};
        *replica_p = (pred_group_t){total / s, 1};
    }
}
