/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict.h: `sharc-perf predict`, what-if scaling of an FSDP Llama step. The inputs (a model,
 * a cluster, the engine's settings: predict_input.c) become one step's schedule of units with
 * compute and collective times (the alpha-beta cost model: predict_cost.c); a discrete-event
 * simulation replays the sharding engine's own schedule decisions (shard/plan/shard_plan.c)
 * with a virtual clock (predict_sim.c); predict_main.c sweeps nodes and settings and writes
 * the table, JSON and a gnuplot picture. Everything it prints is a prediction, and says so.
 */
#ifndef SHARC_PERF_PREDICT_H
#define SHARC_PERF_PREDICT_H

#include <stddef.h>
#include <stdio.h>

#include <sharc/types.h>

/* ---- the simulation's input: one step as units with times ---------------------------- */

/* One unit's times, seconds: compute per pass (forward; backward, recompute included) and
 * its collectives (all-gather of its parameters, reduce-scatter of its gradients, HSDP's
 * all-reduce of the shard across replicas; 0 when there is none). */
typedef struct {
    double fwd_s, bwd_s;
    double ag_s, rs_s, ar_s;
    double grads_s; /* the engine zeroing the unit's gradient buffer, on the caller's time */
    /* offload (predict_offload.c), an offloaded unit: its reduced shard down to the host (or,
     * managed, added into host memory over the link), the host's landing (accumulation and
     * sum of squares) and update (AdamW, cast) on the CPU, its parameters up again; managed:
     * the gather reads the master over the link first. A unit kept on the GPU: its update. */
    int host;
    double down_s, land_s, update_s, up_s, link_ag_s;
    double padded; /* its parameters, padded as sharded */
    /* hpZ: the backward's all-gather inside the node from the secondary shards, and their
     * bytes on each GPU while they are kept (0: no hpZ) */
    double ag_node_s, secondary_bytes;
    /* bytes each GPU sends between nodes for one all-gather of the unit (not one from the
     * secondary shards) and for its reduction */
    double xnode_ag, xnode_red;
} pred_unit_t;

typedef struct {
    int nunits;
    pred_unit_t *units;
    int prefetch;              /* the engine's depth; < 0: auto (SHARC_SHARD_PREFETCH=auto) */
    int max_unsharded;         /* 0: derived as the engine derives it */
    int reshard_after_forward; /* 1 as the engine's default */
    int hpz;                   /* reshard_after_forward = node: secondary shards in the node */
    int queues;                /* 2: reductions on a queue beside the gathers'; 1: one queue */
    int passes;                /* micro-batches per step (gradient accumulation), >= 1; the
                                * last one reduces (sharc_shard_set_sync, as the trainer) */
    double call_s;             /* the engine's cost on the caller's thread per begin/end */
    /* the compute is CPU work on the cores that also run the collectives' copies and
     * reductions, with no core to spare: they cannot overlap, and the step is at least
     * compute plus communication */
    int shared_cores;
    double optim_s; /* the optimizer after finish (device units' updates: gpu_update_s) */
    int clip;       /* offload: the updates wait for the global norm (every landing) */
    int shard;      /* ranks of a shard group */
} pred_sched_t;

typedef struct {
    double step_s;    /* the step, as the second (recorded-schedule) step runs */
    double compute_s; /* compute on the caller's thread (and the engine's calls, optimizer) */
    double comm_s;    /* every collective's time, summed */
    double exposed_s; /* step - compute: the caller waited for communication */
    double gather_wait_s;
    int gathers, prefetches, evictions, deferred, peak_unsharded;
    int depth; /* the prefetch depth of this step (auto: where the engine's decision put it) */
    double peak_secondary_bytes; /* hpZ: most bytes of secondary shards held at once, per GPU */
    double xnode_bytes;          /* bytes each GPU sent between nodes in the step */
} pred_step_t;

/* Replay one step (after a recording step) through the engine's plan. 0, or -1 with a
 * message on stderr (a bound too small for a unit in use, no memory). */
int pred_simulate(const pred_sched_t *s, pred_step_t *out);

/* ---- model, cluster, engine ------------------------------------------------------------ */

typedef struct {
    char name[64];
    int dim, n_layers, n_heads, n_kv_heads, head_dim, hidden_dim, vocab;
    /* synthetic (sharc-perf overlap's): n_layers units of syn_params parameters, no head */
    size_t syn_params;
} pred_model_t;

typedef struct {
    char name[64];
    int nodes, gpus_per_node;
    double intra_bw, intra_lat; /* per GPU inside a node: bytes/s (bus bandwidth), s per step */
    double intra_rs_bw;         /* reduce-scatter's, where the reduction costs (0: intra_bw) */
    int nics;                   /* per node */
    double nic_bw, nic_lat;     /* per NIC: bytes/s line rate, s per step */
    double nic_eff;             /* share of the line rate collectives reach */
    double peak_flops;          /* dense, per GPU, in the compute dtype */
    double mfu;                 /* the compute's achieved share of the peak */
    double unit_fwd_s;          /* > 0: measured forward per transformer block (overrides) */
    int queues;                 /* see pred_sched_t */
    int shared_cores;           /* the compute runs on the cores that copy (a CPU trainer) */
    double call_s;
    double optim_s;  /* the optimizer over the whole model on one GPU; a rank takes its shard's */
    double mem_bw;   /* bytes/s the caller's stream writes memory at (0: free) */
    double quant_bw; /* bytes/s of memory a (de)quantization reads and writes (0: free) */
    /* offload: the host link per GPU and direction (bytes/s, the share of it copies reach),
     * the CPU memory bandwidth of a node the host's work runs at (bytes/s) or, set, the rate
     * of that work per GPU (parameters/s: landing, AdamW, cast); memory per GPU and per node,
     * and what a GPU holds besides the model (context, NCCL, cuBLAS), bytes */
    char host_link[16];
    double host_bw, host_eff, host_mem_bw, cpu_optim_rate;
    double gpu_mem, host_mem, gpu_overhead;
} pred_cluster_t;

typedef enum { PRED_ALGO_AUTO, PRED_ALGO_RING, PRED_ALGO_HIER } pred_algo_t;

typedef struct {
    int batch, seq, passes; /* per GPU: sequences per micro-batch, tokens each */
    int layers_per_unit;
    int prefetch, max_unsharded, reshard_after_forward;
    int shard_size;     /* 0: every rank (full sharding); else HSDP's shard group */
    int pbytes, rbytes; /* param and reduce dtype sizes */
    int recompute;      /* backward recomputes the forward */
    pred_algo_t algo;
    int offload;               /* sharc_shard_offload_t: 0 none, 1 host, 2 managed */
    double offload_fraction;   /* of the elements, (0, 1] */
    int clip;                  /* global-norm clipping (the trainer's default: on) */
    sharc_wire_t pwire, rwire; /* the gathers' and the reductions' wires (sharc_wire_t) */
    int wire_block;            /* values per scale of a quantized wire */
    int hpz;                   /* reshard_after_forward = node (needs reshard_after_forward) */
} pred_engine_t;

/* sharc-perf predict's engine settings before its options: one sequence of 4096 tokens per
 * GPU, a block a unit, prefetch 1, resharded after forward, bf16 parameters, f32 reduction. */
void pred_engine_defaults(pred_engine_t *e);

/* The named models (the trainer's shapes), an HF config.json, or "synthetic:U:P". */
int pred_model_load(const char *spec, pred_model_t *m);
void pred_model_list(FILE *out);
size_t pred_model_params(const pred_model_t *m);
/* Training FLOPs per token at sequence @p seq: 6 N (non-embedding) + 12 L H hd T. */
double pred_model_flops_per_token(const pred_model_t *m, int seq);

/* Presets (p4d, p5, hgx-h100-ib, local), or a key = value file. */
int pred_cluster_preset(const char *name, pred_cluster_t *c);
int pred_cluster_load(const char *spec, pred_cluster_t *c);
int pred_cluster_set(pred_cluster_t *c, const char *key, const char *value, const char *where);
void pred_cluster_print(FILE *out, const pred_cluster_t *c);
/* The node part (GPUs per node, NVLink/PCIe class, NICs) from sharc-topo's JSON. */
int pred_cluster_from_topo(const char *path, pred_cluster_t *c);

/* ---- the cost model (predict_cost.c) ---------------------------------------------------- */

typedef enum { PRED_AG, PRED_RS, PRED_AR } pred_coll_t;

/* A group of ranks: @p per_node of them on each of @p nodes nodes. */
typedef struct {
    int nodes, per_node;
} pred_group_t;

/* Seconds for one collective on @p bytes (the unsharded buffer; all-reduce: the buffer). */
double pred_coll_time(const pred_cluster_t *c, pred_algo_t algo, pred_coll_t type,
                      const pred_group_t *grp, double bytes);

/* ---- the quantized wires and hpZ (predict_wire.c) -------------------------------------- */

/* A unit's all-gather over the param wire, its reduce-scatter over the reduce wire (as
 * coll/ runs them: the gather quantized once and moved by the same algorithm, the
 * reduce-scatter full precision inside a node and quantized between nodes), the backward's
 * gather inside the node from hpZ's secondary shards; @p padded elements of the unit. */
double pred_wire_ag_time(const pred_cluster_t *c, const pred_engine_t *e, const pred_group_t *grp,
                         double padded);
double pred_wire_rs_time(const pred_cluster_t *c, const pred_engine_t *e, const pred_group_t *grp,
                         double padded);
double pred_node_ag_time(const pred_cluster_t *c, const pred_engine_t *e, const pred_group_t *grp,
                         double padded);

/* The unit's bytes each GPU sends between nodes (pred_unit_t's xnode_*), and hpZ's secondary
 * shard, under @p e's wires. */
void pred_wire_unit(const pred_engine_t *e, const pred_group_t *grp, double padded, pred_unit_t *u);

/* The shard and replica groups of @p nodes nodes under the engine's settings. */
void pred_groups(const pred_cluster_t *c, const pred_engine_t *e, int nodes, pred_group_t *shard_p,
                 pred_group_t *replica_p);

/* ---- the model's step (predict_step.c) --------------------------------------------------- */

/* Build the schedule of @p m on @p nodes nodes (predict_sim.c replays it); units freed by
 * pred_sched_free. */
int pred_sched_build(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e,
                     int nodes, pred_sched_t *s);
void pred_sched_free(pred_sched_t *s);

/* One configuration's prediction. */
typedef struct {
    int nodes, gpus;
    pred_step_t step;
    double tokens_per_s_gpu, mfu, efficiency; /* efficiency: per GPU against the first row */
    double ag_s, rs_s;                        /* the largest block unit's collectives */
    double gpu_bytes, host_bytes;             /* memory per GPU, and per node on the host */
    int fits;                                 /* both fit (-1: capacity unknown) */
} pred_row_t;

/* ---- offload (predict_offload.c) -------------------------------------------------------- */

/* The host link presets (pcie4, pcie5, c2c): its rate per direction into c (host_bw). */
int pred_host_link(pred_cluster_t *c, const char *name, const char *where);

/* A preset's host (its link, memory, CPU memory bandwidth), into @p c. */
void pred_offload_preset(pred_cluster_t *c, const char *preset);

/* A cluster key of offload's (host_GBps, host_eff, host_mem_GBps, cpu_optim_Gparams,
 * gpu_mem_GiB, host_mem_GiB, gpu_overhead_GiB) = @p v: 1, or 0 when the key is not one. */
int pred_offload_set(pred_cluster_t *c, const char *key, double v);

/* Which units of @p s are offloaded (the lowest ids stay on the GPU, as the engine places
 * them) and their offload times. */
void pred_offload_units(const pred_cluster_t *c, const pred_engine_t *e, pred_sched_t *s);

/* The head's line on offload and the host. */
void pred_print_offload(FILE *out, const pred_cluster_t *c, const pred_engine_t *e);

/* ---- the prediction (predict_step.c) ------------------------------------------------------ */

/* Memory a GPU holds (the model's state, unsharded buffers, activations, the rest) and a node's
 * host memory for offloaded state; fits: 1, 0, or -1 when the capacity is not known. */
void pred_memory(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e, int nodes,
                 pred_row_t *row);

/* One configuration's prediction: its schedule simulated, its memory. 0, or -1 (said). */
int pred_predict(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e, int nodes,
                 pred_row_t *row);

#endif
