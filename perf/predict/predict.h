/*
 * predict.h: `sharc-perf predict`, what-if scaling of an FSDP Llama step. The inputs (a model,
 * a cluster, the engine's settings: predict_input.c) become one step's schedule of units with
 * compute and collective times (the alpha-beta cost model: predict_cost.c); a discrete-event
 * simulation replays the sharding engine's own schedule decisions (shard/shard_plan.c) with a
 * virtual clock (predict_sim.c); predict_main.c sweeps nodes and settings and writes the table,
 * JSON and a gnuplot picture. Everything it prints is a prediction, and says so.
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
    double optim_s; /* the optimizer after finish */
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

/* ---- the model's step as a schedule (predict_sim.c) ------------------------------------ */

/* Build the schedule of @p m on @p nodes nodes; units freed by pred_sched_free. */
int pred_sched_build(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e,
                     int nodes, pred_sched_t *s);
void pred_sched_free(pred_sched_t *s);

/* One configuration's prediction. */
typedef struct {
    int nodes, gpus;
    pred_step_t step;
    double tokens_per_s_gpu, mfu, efficiency; /* efficiency: per GPU against the first row */
    double ag_s, rs_s;                        /* the largest block unit's collectives */
} pred_row_t;

int pred_predict(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e, int nodes,
                 pred_row_t *row);

#endif
