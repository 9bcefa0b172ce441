/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_step.c: a model's step for `sharc-perf predict`: its units with their compute,
 * collective and offload times (the schedule the simulation replays, from predict_cost.c's,
 * predict_wire.c's and predict_offload.c's models), the memory it holds, and the prediction
 * of one cluster size. docs/predict.md writes the formulas out.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict.h"

/* SHARC_SHARD_ALIGN of sharc/shard.h: a shard's elements are a multiple of it. */
#define PRED_ALIGN 16

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

/* Activation bytes a GPU keeps for the backward (the trainer's bf16, tiled attention:
 * sharc-llama flops's accounting), and the logits. */
static double pred_activations(const pred_model_t *m, const pred_engine_t *e)
{
    double C = m->dim, F = m->hidden_dim, HD = (double)m->n_heads * m->head_dim;
    double KVD = (double)m->n_kv_heads * m->head_dim, tokens = (double)e->batch * e->seq;
    double block = 2 * (4 * C + 2 + 2 * HD + 2 * KVD + 3 * F) + 4.0 * m->n_heads;

    if (m->syn_params > 0) {
        return 0;
    }
    return tokens *
           ((e->recompute ? block + 2 * C * m->n_layers : block * m->n_layers) + 2.0 * m->vocab);
}

void pred_memory(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e, int nodes,
                 pred_row_t *row)
{
    pred_sched_t s;
    double big = 0, state = 0, host = 0;
    int bound = e->max_unsharded > 0 ? e->max_unsharded : e->prefetch < 0 ? 4 : e->prefetch + 1;

    row->fits = -1;
    if (pred_sched_build(m, c, e, nodes, &s) != 0) {
        return;
    }
    for (int u = 0; u < s.nunits; u++) {
        double n = s.units[u].padded / s.shard;

        big = s.units[u].padded > big ? s.units[u].padded : big;
        if (!s.units[u].host) {
            state += 16.0 * n; /* master, gradient, two moments: f32 */
        } else {
            state += e->offload == 1 ? e->pbytes * n : 0;
            host += 16.0 * n * c->gpus_per_node;
        }
    }
    /* gathered units within the bound, a unit's gradients open and one reducing */
    row->gpu_bytes = state + bound * big * e->pbytes + 2.0 * big * e->rbytes +
                     pred_activations(m, e) + c->gpu_overhead;
    row->host_bytes = host;
    if (c->gpu_mem > 0) {
        row->fits = row->gpu_bytes <= c->gpu_mem && (c->host_mem <= 0 || host <= c->host_mem);
    }
    pred_sched_free(&s);
}
