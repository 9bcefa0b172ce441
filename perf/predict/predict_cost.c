/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_cost.c: the alpha-beta cost model of `sharc-perf predict`, per algorithm and per
 * level (inside a node, between nodes), and a model's step as units with times (the
 * schedule the simulation replays). docs/predict.md writes the formulas out; a change here
 * changes them there.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict.h"

/* SHARC_SHARD_ALIGN of sharc/shard.h: a shard's elements are a multiple of it. */
#define PRED_ALIGN 16

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

/* Elements of a unit of @p count sharded over @p n ranks, padded (the engine's rule). */
static double pred_padded(size_t count, int n)
{
    size_t shard = (count + (size_t)n - 1) / (size_t)n;

    shard = (shard + PRED_ALIGN - 1) / PRED_ALIGN * PRED_ALIGN;
    return (double)shard * n;
}

/* Parameters and forward FLOPs per token of one transformer block. */
static double pred_block_params(const pred_model_t *m)
{
    double C = m->dim, hd = m->head_dim;

    return C * hd * m->n_heads * 2 + C * hd * m->n_kv_heads * 2 + 3.0 * C * m->hidden_dim + 2 * C;
}

int pred_sched_build(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e,
                     int nodes, pred_sched_t *s)
{
    int syn = m->syn_params > 0, lpu = e->layers_per_unit > 0 ? e->layers_per_unit : 1;
    int blocks = (m->n_layers + lpu - 1) / lpu, n = syn ? m->n_layers : blocks + 2;
    double tokens = (double)e->batch * e->seq, rate = c->peak_flops * c->mfu;
    double block_fl = 2.0 * pred_block_params(m) + 4.0 * e->seq * m->n_heads * m->head_dim;
    pred_group_t sg, rg;

    memset(s, 0, sizeof(*s));
    if (e->shard_size > 0 && e->shard_size < nodes * c->gpus_per_node &&
        (c->gpus_per_node % e->shard_size != 0 && e->shard_size % c->gpus_per_node != 0)) {
        fprintf(stderr,
                "sharc-perf predict: --shard-size %d must divide the GPUs of a node (%d) "
                "or be a multiple of them\n",
                e->shard_size, c->gpus_per_node);
        return -1;
    }
    if (e->shard_size > c->gpus_per_node && e->shard_size < nodes * c->gpus_per_node &&
        (nodes * c->gpus_per_node) % e->shard_size != 0) {
        fprintf(stderr, "sharc-perf predict: --shard-size %d does not divide %d GPUs\n",
                e->shard_size, nodes * c->gpus_per_node);
        return -1;
    }
    pred_groups(c, e, nodes, &sg, &rg);
    s->units = calloc((size_t)n, sizeof(pred_unit_t));
    if (s->units == NULL) {
        return -1;
    }
    s->nunits = n;
    s->prefetch = e->prefetch;
    s->max_unsharded = e->max_unsharded;
    s->reshard_after_forward = e->reshard_after_forward;
    s->hpz = e->hpz && e->reshard_after_forward;
    s->queues = c->queues;
    s->shared_cores = c->shared_cores;
    s->passes = e->passes > 0 ? e->passes : 1;
    s->call_s = c->call_s;
    s->optim_s = c->optim_s / (sg.nodes * sg.per_node); /* each rank steps its shard */
    s->shard = sg.nodes * sg.per_node;
    for (int u = 0; u < n; u++) {
        pred_unit_t *pu = &s->units[u];
        double count, fl; /* parameters; forward FLOPs per token */
        int layers = 0;

        if (syn) {
            count = (double)m->syn_params;
            fl = 0;
            layers = 1;
        } else if (u == 0) { /* the token embedding: a lookup */
            count = (double)m->vocab * m->dim;
            fl = 0;
        } else if (u == n - 1) { /* the final norm and the output head */
            count = (double)m->vocab * m->dim + m->dim;
            fl = 2.0 * m->vocab * m->dim;
        } else {
            layers = (u < blocks) ? lpu : m->n_layers - (blocks - 1) * lpu;
            count = layers * pred_block_params(m);
            fl = layers * block_fl;
        }
        if (c->unit_fwd_s > 0) { /* measured: a block's time, the rest in proportion */
            pu->fwd_s = syn ? c->unit_fwd_s : c->unit_fwd_s * fl / block_fl;
        } else {
            pu->fwd_s = rate > 0 ? fl * tokens / rate : 0;
        }
        pu->bwd_s = 2.0 * pu->fwd_s + (e->recompute ? pu->fwd_s : 0);
        double padded = pred_padded((size_t)count, sg.nodes * sg.per_node);
        pu->padded = padded;
        pu->ag_s = pred_wire_ag_time(c, e, &sg, padded);
        pu->rs_s = pred_wire_rs_time(c, e, &sg, padded);
        pu->ag_node_s = s->hpz ? pred_node_ag_time(c, e, &sg, padded) : 0;
        pred_wire_unit(e, &sg, padded, pu);
        pu->ar_s =
            pred_coll_time(c, e->algo, PRED_AR, &rg, padded / (sg.nodes * sg.per_node) * e->rbytes);
        pu->grads_s = c->mem_bw > 0 ? padded * e->rbytes / c->mem_bw : 0;
    }
    pred_offload_units(c, e, s); /* offloaded units: their transfers and host work */
    return 0;
}

void pred_sched_free(pred_sched_t *s)
{
    free(s->units);
    s->units = NULL;
}

int pred_predict(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e, int nodes,
                 pred_row_t *row)
{
    pred_sched_t s;
    double tokens = (double)e->batch * e->seq * (e->passes > 0 ? e->passes : 1);
    int ret;

    if (pred_sched_build(m, c, e, nodes, &s) != 0) {
        return -1;
    }
    memset(row, 0, sizeof(*row));
    row->nodes = nodes;
    row->gpus = nodes * c->gpus_per_node;
    ret = pred_simulate(&s, &row->step);
    if (ret == 0) {
        int mid = s.nunits > 2 ? s.nunits / 2 : 0;

        row->tokens_per_s_gpu = tokens / row->step.step_s;
        row->mfu =
            (m->syn_params > 0 || c->peak_flops <= 0)
                ? 0
                : pred_model_flops_per_token(m, e->seq) * row->tokens_per_s_gpu / c->peak_flops;
        row->ag_s = s.units[mid].ag_s;
        row->rs_s = s.units[mid].rs_s;
        pred_memory(m, c, e, nodes, row);
    }
    pred_sched_free(&s);
    return ret;
}
