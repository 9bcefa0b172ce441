/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/shard.h: the sharding engine (FSDP / ZeRO-3). A shard group owns a model's
 * parameters as units: one flat buffer per unit (a transformer block, say), sharded evenly
 * over the data-parallel ranks. Each rank keeps its shard of every unit as f32 master
 * weights with an f32 gradient shard; the engine gathers a unit's parameters before the
 * caller computes with them, releases them afterwards, and reduce-scatters the unit's
 * gradients into the gradient shards, overlapping all of it with the caller's compute by
 * prefetching along the order it recorded in the first step.
 *
 * The lifecycle of one training step:
 *
 *     for each unit u in forward order:   sharc_shard_forward_begin(g, u);
 *                                         ... compute with sharc_shard_param_ptr() views ...
 *                                         sharc_shard_forward_end(g, u);
 *     for each unit u in backward order:  sharc_shard_backward_begin(g, u);
 *                                         ... write gradients through sharc_shard_grad_ptr() ...
 *                                         sharc_shard_backward_end(g, u);
 *     sharc_shard_finish(g);              every gradient shard is reduced
 *     ... optimizer on sharc_shard_local() shards ...;  sharc_shard_zero_grads(g);
 *
 * The primitives under those calls (unshard, wait, reshard, reduce_grads) are public too. One
 * thread at a time drives a group; its communication progresses in that thread's calls or in
 * the communicator's progress thread (SHARC_PROGRESS_THREAD=1: host-memory overlap needs it).
 */
#ifndef SHARC_SHARD_H
#define SHARC_SHARD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/types.h>
#include <sharc/comm.h>

SHARC_BEGIN_DECLS

typedef struct sharc_shard_group *sharc_shard_group_h;

/** Most dimensions a parameter's shape may have. */
#define SHARC_SHARD_MAX_DIMS 8

/** A parameter's unit: packed automatically by the group's bucket size. */
#define SHARC_SHARD_UNIT_AUTO (-1)

/**
 * Elements every parameter's offset in its unit, and every shard's length, is a multiple of
 * (so each parameter and each shard starts 64-byte aligned in f32, 32-byte in bf16).
 */
#define SHARC_SHARD_ALIGN 16

/** One parameter, as the caller describes it to sharc_shard_create. */
typedef struct {
    const char *name; /**< unique within the group (copied) */
    size_t count;     /**< elements, > 0 */
    int ndim;         /**< 0 for a flat parameter, else the dimensions in shape[] */
    size_t shape[SHARC_SHARD_MAX_DIMS]; /**< their product is count */
    /**
     * Unit id, 0 .. num_units-1 (params.num_units; a unit's parameters are listed together,
     * and every unit has some), or SHARC_SHARD_UNIT_AUTO for every parameter of the group:
     * then consecutive parameters are packed into units of at most bucket_bytes each (a
     * larger parameter gets a unit of its own).
     */
    int unit;
    /**
     * count initial values, or NULL for zeros. Read during sharc_shard_create only; each rank
     * keeps its shard. With HSDP the shard group whose replica rank is 0 sets the values of
     * every replica (they are broadcast over the replica group).
     */
    const float *init;
} sharc_shard_param_t;

/** Which fields of sharc_shard_params_t are set. */
enum {
    SHARC_SHARD_PARAM_NUM_UNITS = 1u << 0,
    SHARC_SHARD_PARAM_PARAM_DTYPE = 1u << 1,
    SHARC_SHARD_PARAM_REDUCE_DTYPE = 1u << 2,
    SHARC_SHARD_PARAM_GRAD_OP = 1u << 3,
    SHARC_SHARD_PARAM_BUCKET_BYTES = 1u << 4,
    SHARC_SHARD_PARAM_PREFETCH = 1u << 5,
    SHARC_SHARD_PARAM_MAX_UNSHARDED = 1u << 6,
    SHARC_SHARD_PARAM_RESHARD_AFTER_FORWARD = 1u << 7,
    SHARC_SHARD_PARAM_SHARD_SIZE = 1u << 8,
    SHARC_SHARD_PARAM_ASSIGN_GRADS = 1u << 9,
    SHARC_SHARD_PARAM_MEMTYPE = 1u << 10,
    SHARC_SHARD_PARAM_STREAM = 1u << 11,
    SHARC_SHARD_PARAM_OFFLOAD = 1u << 12,
    SHARC_SHARD_PARAM_OFFLOAD_FRACTION = 1u << 13,
    SHARC_SHARD_PARAM_PARAM_WIRE = 1u << 14,
    SHARC_SHARD_PARAM_REDUCE_WIRE = 1u << 15,
    SHARC_SHARD_PARAM_WIRE_BLOCK = 1u << 16,
};

/**
 * Where a CUDA group keeps the f32 state of its units (master shards, gradient shards,
 * optimizer states): sharc_shard_params_t.offload, SHARC_SHARD_OFFLOAD. The device always
 * holds what a step needs: the unsharded parameters and gradients in flight, and with HOST
 * each offloaded unit's shard in the param dtype, which its gathers send.
 */
typedef enum {
    SHARC_SHARD_OFFLOAD_NONE = 0, /**< on the device (default) */
    /**
     * Page-locked host memory (optimizer states: pageable). A unit's reduced gradients go down
     * on a copy stream of the engine as its reduction ends (overlapping the next units'
     * backward), the host adds them to its shard, and the updated parameters go up ahead of
     * its next gather. With sharc_shard_adamw_create the CPU updates each unit as soon as its
     * gradient is there (vectorized, on SHARC_SHARD_OFFLOAD_THREADS threads).
     */
    SHARC_SHARD_OFFLOAD_HOST = 1,
    /**
     * CUDA managed memory preferring the host and mapped by the device (pages prefetched to
     * the host before the CPU reads them): gathers read the masters and reductions add into
     * the gradient shards over the link (Grace Hopper's NVLink-C2C); the CPU updates as for
     * HOST. A device without concurrent managed access runs the group as HOST (a warning).
     */
    SHARC_SHARD_OFFLOAD_MANAGED = 2,
} sharc_shard_offload_t;

/**
 * sharc_shard_params_t.reshard_after_forward: after a unit's forward, keep a node-local
 * secondary shard of its parameters (ZeRO++'s hpZ, FSDP2's reshard_after_forward=<ranks per
 * node>): this rank's 1/local_size of the gathered unit, in the param dtype, so that the
 * backward gathers within the node from them, not across nodes from the masters, with the
 * forward's values (a quantized param_wire's too). They are dropped once gathered and at
 * finish (their peak: peak_secondary_bytes). Needs as many of the group's ranks on every
 * node; otherwise the group reshards fully after forward (a warning).
 */
#define SHARC_SHARD_RESHARD_NODE 2

/**
 * sharc_shard_params_t.prefetch (and SHARC_SHARD_PREFETCH=auto): adaptive prefetch. The
 * depth starts at 1; after each step the ranks agree on the longest time any of them waited
 * for all-gathers (an all-reduce posted at finish and completed at the next step's first
 * begin, so every rank changes the depth at the same point of the same step), and the depth
 * goes up by one while those waits are exposed (over 1% of the step) and the bound on
 * unsharded units admits one more ahead (depth <= max_unsharded - 1). A raise that does not
 * cut the waits by 5% is taken back, and so is one step of depth after a step where the
 * bound evicted a prefetched unit or held a prefetch back (memory is the limit); then the
 * depth stays (until the schedule is recorded anew). The depth in use is in the statistics
 * (prefetch_depth) and the trace.
 */
#define SHARC_SHARD_PREFETCH_AUTO (-1)

/** How a group is built; only the fields named in field_mask are read, the rest default. */
typedef struct {
    unsigned field_mask;
    /** Units when parameters carry unit ids (required then). */
    int num_units;
    /** dtype of the gathered parameters: f32 (default), bf16 or f16. Masters stay f32. */
    sharc_dtype_t param_dtype;
    /** dtype of the unsharded gradients and their reduction: f32 (default) or bf16. */
    sharc_dtype_t reduce_dtype;
    /** SHARC_OP_AVG (default: mean over every data-parallel rank) or SHARC_OP_SUM. */
    sharc_op_t grad_op;
    /** Automatic packing: bytes of param dtype per unit. Default SHARC_SHARD_BUCKET. */
    size_t bucket_bytes;
    /**
     * Units gathered ahead of the one in use, or SHARC_SHARD_PREFETCH_AUTO: the engine sets
     * the depth itself from how long the caller waited for gathers (see
     * SHARC_SHARD_PREFETCH_AUTO). Default SHARC_SHARD_PREFETCH (1).
     */
    int prefetch;
    /**
     * Most units whose parameters are unsharded (gathered or being gathered) at once, >= 1.
     * Default SHARC_SHARD_MAX_UNSHARDED; 0 there means prefetch + 1 when units are resharded
     * after forward (with SHARC_SHARD_PREFETCH_AUTO: 4, a depth of up to 3), and every unit
     * when they are not.
     */
    int max_unsharded;
    /**
     * Release a unit's parameters at the end of its forward: 1 (default), 0 (keep them), or
     * SHARC_SHARD_RESHARD_NODE (keep a node-local secondary shard for the backward).
     */
    int reshard_after_forward;
    /**
     * HSDP: ranks per shard group, a divisor of the communicator's size. Consecutive ranks
     * form a shard group (rank / shard_size); the ranks with the same place in their groups
     * form a replica group. Gradients are reduce-scattered within the shard group and
     * all-reduced across replicas. Default: every rank (plain FSDP, one replica).
     */
    int shard_size;
    /**
     * 0 (default): a unit's gradient buffer comes zeroed and the caller adds its gradients
     * to it. 1: the caller assigns every parameter's gradient in the first backward after
     * the unit's last reduction (adding only in later micro-batches of an accumulation), as
     * PyTorch does after zero_grad(set_to_none=True); the buffer is then not zeroed, which
     * saves a pass over it (only the gaps between parameters and the padding are).
     */
    int assign_grads;
    /**
     * Where the group's memory lives: SHARC_MEMTYPE_HOST (default) or SHARC_MEMTYPE_CUDA
     * (the current CUDA device: shards, optimizer states and unsharded buffers in device
     * memory, collectives through NCCL, no host synchronization in a step). On CUDA the
     * pointers sharc_shard_local, _state_ptr, _param_ptr and _grad_ptr give are device
     * pointers, and initial values are still read from host memory.
     */
    sharc_memtype_t memtype;
    /**
     * CUDA: the caller's compute stream (a cudaStream_t; NULL: the legacy default stream).
     * Begins make it wait on the device for the unit's gather; ends, reductions and the
     * release of buffers follow what is queued on it; finish makes it wait for every
     * reduction, so the optimizer queued after finish sees reduced gradients.
     */
    void *stream;
    /**
     * CUDA groups: where the units' f32 state lives (sharc_shard_offload_t). Default
     * SHARC_SHARD_OFFLOAD (none); a host group takes none only (its state is in host memory).
     */
    sharc_shard_offload_t offload;
    /**
     * With offload: the share of the model's elements offloaded, in (0, 1] (default
     * SHARC_SHARD_OFFLOAD_FRACTION, 1). The rest stays on the device with a GPU update
     * (DeepSpeed's Twin-Flow): the units of the lowest ids whose elements make up at most
     * 1 - offload_fraction of the total, which in a model listed in forward order are
     * those reduced last in the backward, whose CPU update could not overlap anything.
     */
    double offload_fraction;
    /**
     * How the parameters' all-gather travels (sharc_wire_t): SHARC_WIRE_FULL (the param
     * dtype), or INT8 / FP8 block-quantized from each rank's shard (ZeRO++'s qwZ), every rank
     * computing with the same values; masters, optimizer, checkpoints unchanged. Default:
     * SHARC_SHARD_PARAM_WIRE (full).
     */
    sharc_wire_t param_wire;
    /**
     * How the gradients' reduce-scatter travels: SHARC_WIRE_FULL (the reduce dtype) or INT8 /
     * FP8, ZeRO++'s qgZ: full precision within a node, quantized between nodes, summed in f32.
     * HSDP's all-reduce across replicas stays full. Default: SHARC_SHARD_REDUCE_WIRE.
     */
    sharc_wire_t reduce_wire;
    /** Values per scale of the quantized wires. Default: SHARC_SHARD_WIRE_BLOCK (256). */
    size_t wire_block;
} sharc_shard_params_t;

/** Facts about one unit. Counts are elements. */
typedef struct {
    int first_param, nparams; /**< its parameters are first_param .. first_param+nparams-1 */
    size_t count;             /**< end of its last parameter (padding between them included) */
    size_t padded_count;      /**< shard_count * shard_size: the unsharded buffer's length */
    size_t shard_count;       /**< elements each rank holds */
    size_t shard_offset;      /**< this rank's first element in the unit */
} sharc_shard_unit_info_t;

/** Facts about one parameter. */
typedef struct {
    const char *name; /**< owned by the group */
    int unit;
    size_t offset; /**< elements from the start of its unit */
    size_t count;
    int ndim;
    size_t shape[SHARC_SHARD_MAX_DIMS];
} sharc_shard_param_info_t;

/** The phases of a step, for the schedule. */
typedef enum {
    SHARC_SHARD_FORWARD = 0,
    SHARC_SHARD_BACKWARD = 1,
    SHARC_SHARD_PHASE_LAST
} sharc_shard_phase_t;

/**
 * Counters of one step (from one sharc_shard_finish to the next), for the whole group or
 * one unit. Bytes are those of the unsharded buffers the collectives produced (a unit's
 * padded count times its dtype size), per rank.
 */
typedef struct {
    uint64_t allgathers, reduce_scatters, allreduces;
    uint64_t bytes_gathered, bytes_reduced;
    uint64_t prefetches; /**< all-gathers issued ahead of their unit's begin */
    uint64_t evictions;  /**< prefetched units released unused, to stay within the bound */
    double step_s;       /**< wall time of the step (whole group only) */
    /** time at least one collective was in flight (the union of their intervals) */
    double comm_s;
    /** time the caller spent blocked in sharc waiting for communication (CUDA: the time the
     *  caller's stream waited for it) */
    double exposed_s;
    /** comm_s - exposed_s: communication that ran while the caller computed */
    double hidden_s;
    /**
     * time the caller spent inside the step calls (begins, ends, finish), exposed_s
     * included: the engine's whole cost on the caller's thread
     */
    double engine_s;
    size_t peak_unsharded_bytes; /**< gathered parameters plus unreduced gradients */
    int peak_units_alive;        /**< most units with unsharded parameters at once */
    int units_alive;             /**< now */
    /** the part of exposed_s the caller waited for all-gathers (what adaptive prefetch reads) */
    double gather_wait_s;
    int prefetch_depth; /**< units gathered ahead during the step (auto: the depth it chose) */
    /** reshard_after_forward SHARC_SHARD_RESHARD_NODE: most bytes of node-local secondary
     *  shards held at once (on top of peak_unsharded_bytes) */
    size_t peak_secondary_bytes;
} sharc_shard_stats_t;

/**
 * Create a shard group over @p comm. Collective over @p comm: every rank passes the same
 * parameter list (names, counts, units) and parameters; a rank that disagrees fails every
 * rank with SHARC_ERR_REMOTE, naming the first difference.
 * @param[in]  comm     data-parallel communicator (the group splits it, @p comm stays the
 *                      caller's).
 * @param[in]  params   @p nparams parameters, in the order units lay them out.
 * @param[in]  cfg      NULL for the defaults.
 * @param[out] group_p  the group; set only on success.
 * @return SHARC_OK; SHARC_ERR_INVALID (a name twice, an empty name, count 0, a unit id out
 *         of range or a unit with no parameters, a unit's parameters not listed together, a mix of
 *         unit ids and AUTO, a shape whose
 *         product is not count, an unsupported dtype, a shard_size that does not divide
 *         the communicator: the log says which); SHARC_ERR_NOMEM; SHARC_ERR_REMOTE; or a
 *         communication error. On failure nothing is left behind.
 */
SHARC_API sharc_status_t sharc_shard_create(sharc_comm_h comm, const sharc_shard_param_t *params,
                                            int nparams, const sharc_shard_params_t *cfg,
                                            sharc_shard_group_h *group_p);

/**
 * Destroy a group. Communication still in flight is completed first (bounded by
 * SHARC_TIMEOUT) with a warning. Not collective. NULL is a no-op.
 */
SHARC_API void sharc_shard_destroy(sharc_shard_group_h group);

/** Number of units and parameters. */
SHARC_API int sharc_shard_num_units(sharc_shard_group_h group);
SHARC_API int sharc_shard_num_params(sharc_shard_group_h group);

/** Unit facts. SHARC_ERR_INVALID for a unit out of range. */
SHARC_API sharc_status_t sharc_shard_unit_info(sharc_shard_group_h group, int unit,
                                               sharc_shard_unit_info_t *info_p);

/** Parameter facts by index (0 .. nparams-1). SHARC_ERR_INVALID when out of range. */
SHARC_API sharc_status_t sharc_shard_param_info(sharc_shard_group_h group, int index,
                                                sharc_shard_param_info_t *info_p);

/** Index of the parameter called @p name, or SHARC_ERR_INVALID (not logged: a query). */
SHARC_API sharc_status_t sharc_shard_param_find(sharc_shard_group_h group, const char *name,
                                                int *index_p);

/* ---- per unit ------------------------------------------------------------------------ */

/**
 * Start gathering a unit's parameters: its f32 master shard is cast to the param dtype and
 * all-gathered into the unit's unsharded buffer. Nonblocking. Nothing to do when the unit
 * is gathered or on its way. Counts against max_unsharded: when that many units are
 * unsharded already, a unit that was prefetched but not yet used is released first; if
 * every one is in use, SHARC_ERR_INVALID (reshard one first).
 */
SHARC_API sharc_status_t sharc_shard_unshard(sharc_shard_group_h group, int unit);

/**
 * Wait until the unit's parameters are gathered; sharc_shard_param_ptr views are valid from
 * then until the unit is resharded. SHARC_ERR_INVALID when the unit is not being gathered.
 */
SHARC_API sharc_status_t sharc_shard_wait(sharc_shard_group_h group, int unit);

/** Release a unit's unsharded parameters (a no-op when it holds none). Waits for a gather
 *  still in flight. */
SHARC_API sharc_status_t sharc_shard_reshard(sharc_shard_group_h group, int unit);

/**
 * Start reducing the unit's gradients (written through sharc_shard_grad_ptr): a
 * reduce-scatter in the reduce dtype within the shard group (then, with HSDP, an all-reduce
 * of the shard across replicas), whose result is added to the f32 gradient shard, divided
 * by the number of data-parallel ranks for SHARC_OP_AVG. Nonblocking; the unsharded
 * gradients are released when it completes. SHARC_ERR_INVALID when the unit has no
 * gradients since its last reduction.
 */
SHARC_API sharc_status_t sharc_shard_reduce_grads(sharc_shard_group_h group, int unit);

/**
 * End the step's communication: wait for every reduction in flight and apply it to the
 * gradient shards, and take the step's statistics. Parameters still gathered stay so
 * (reshard_after_forward off). Then the optimizer may read sharc_shard_local().
 * CUDA: returns at once; the caller's stream waits for every reduction, and the host waits
 * (at most SHARC_TIMEOUT per collective) for the collectives of the step before, so the host
 * runs at most one step ahead and a peer that died is reported here. After
 * sharc_shard_adamw_step: also the global gradient norm (every unit's gradient landed, one
 * all-reduce over the shard group) and the updates still due, queued (not waited for).
 */
SHARC_API sharc_status_t sharc_shard_finish(sharc_shard_group_h group);

/**
 * Zero every gradient shard (after the optimizer step, before the next accumulation). From
 * then until the step's reductions have landed, the gradient shards are sharc's: the first
 * reduction of a unit may write its shard instead of adding to it. CUDA: queued on the
 * caller's stream. Offloaded units (and a host group's, with the engine's AdamW): no pass
 * over the memory, the shards count as zero (the next landing writes them; the engine's
 * update may still be reading them), and sharc_shard_local hands them out zeroed.
 */
SHARC_API sharc_status_t sharc_shard_zero_grads(sharc_shard_group_h group);

/* ---- the step, with prefetch ------------------------------------------------------- */

/**
 * Before a unit's forward compute: gather it (unless it was prefetched), start gathering
 * the next `prefetch` units of the schedule within max_unsharded, and wait for this one.
 * The first step records the order of the begin calls as the schedule; later steps follow
 * it, and a step whose order differs is recorded anew (logged at info).
 */
SHARC_API sharc_status_t sharc_shard_forward_begin(sharc_shard_group_h group, int unit);

/** After a unit's forward compute: reshard it if reshard_after_forward (kept when it is
 *  the first unit of the backward). */
SHARC_API sharc_status_t sharc_shard_forward_end(sharc_shard_group_h group, int unit);

/** Before a unit's backward compute: as forward_begin, and its gradient buffer is ready. */
SHARC_API sharc_status_t sharc_shard_backward_begin(sharc_shard_group_h group, int unit);

/**
 * After a unit's backward compute: reshard it, and reduce its gradients unless gradient
 * synchronization is off (sharc_shard_set_sync), in which case they stay in the unit's
 * unsharded gradient buffer and the next micro-batch adds to them.
 */
SHARC_API sharc_status_t sharc_shard_backward_end(sharc_shard_group_h group, int unit);

/**
 * Gradient accumulation without communication: with @p sync 0, backward_end keeps each
 * unit's gradients unsharded for the next micro-batch to add to; set it back to 1 for the
 * last micro-batch, whose backward_end reduces the sum. Default 1.
 */
SHARC_API sharc_status_t sharc_shard_set_sync(sharc_shard_group_h group, int sync);

/**
 * Set the schedule of a phase explicitly (instead of recording it): @p n units, each at most
 * once. SHARC_ERR_INVALID for a unit out of range or repeated.
 */
SHARC_API sharc_status_t sharc_shard_set_order(sharc_shard_group_h group, sharc_shard_phase_t phase,
                                               const int *units, int n);

/**
 * The schedule of a phase: up to @p max units into @p units, and their number (which may be
 * larger than @p max) into *n_p. 0 while nothing is recorded.
 */
SHARC_API sharc_status_t sharc_shard_get_order(sharc_shard_group_h group, sharc_shard_phase_t phase,
                                               int *units, int max, int *n_p);

/** Print the schedule: each phase's units, with the prefetch depth and the memory bound. */
SHARC_API void sharc_shard_schedule_print(sharc_shard_group_h group, FILE *stream);

/** Advance the group's communication without blocking (for callers with no progress
 *  thread, between pieces of compute). */
SHARC_API sharc_status_t sharc_shard_progress(sharc_shard_group_h group);

/* ---- buffers ------------------------------------------------------------------------- */

/**
 * Pointer to a parameter inside its unit's unsharded buffer (param dtype), valid from
 * sharc_shard_wait (or a begin) until the unit is resharded. SHARC_ERR_INVALID when the unit
 * is not gathered.
 */
SHARC_API sharc_status_t sharc_shard_param_ptr(sharc_shard_group_h group, int index, void **ptr_p);

/**
 * Pointer to a parameter's gradient inside its unit's unsharded gradient buffer (reduce
 * dtype). The buffer is created at the first call after the unit's last reduction (which
 * needs the unit gathered: gradients come from a backward), zeroed for the caller to add to
 * (or, with assign_grads, for the caller to write first), and released when its reduction
 * completes. A reduction still in flight from the last micro-batch is waited for first.
 */
SHARC_API sharc_status_t sharc_shard_grad_ptr(sharc_shard_group_h group, int index, void **ptr_p);

/**
 * This rank's shard of a unit: f32 master weights and f32 gradients, @p count_p elements
 * each (shard_count; elements past the unit's parameters, and between them, are padding:
 * zero, with zero gradients, so an optimizer may update them as it likes). Valid for the
 * group's lifetime. Any output may be NULL. Where they live: sharc_shard_unit_memtype (an
 * offloaded unit's are host pointers). For an offloaded unit the call first waits for the
 * host's work on it (landings, the engine's update), and asking for the master counts as
 * writing it: the unit's device copy is refreshed before its next gather.
 */
SHARC_API sharc_status_t sharc_shard_local(sharc_shard_group_h group, int unit, float **master_p,
                                           float **grad_p, size_t *count_p);

/**
 * Re-broadcast every master shard from replica rank 0 over its replica group, so that the
 * replicas of an HSDP group hold the same parameters after the caller wrote shards
 * directly. Collective over the group. No-op without replicas.
 */
SHARC_API sharc_status_t sharc_shard_sync_replicas(sharc_shard_group_h group);

/* ---- statistics ---------------------------------------------------------------------- */

/**
 * Statistics of the last finished step: the whole group (@p unit -1) or one unit. Before any
 * step has finished, the current one's counters so far.
 */
SHARC_API sharc_status_t sharc_shard_stats(sharc_shard_group_h group, int unit,
                                           sharc_shard_stats_t *stats_p);

/** Print the last step's statistics, the group's and then one line per unit. */
SHARC_API void sharc_shard_stats_print(sharc_shard_group_h group, FILE *stream);

/**
 * Where a unit's master, gradient shard and optimizer states live: SHARC_MEMTYPE_HOST (a host
 * group, or offloaded to host memory), SHARC_MEMTYPE_CUDA, or SHARC_MEMTYPE_CUDA_MANAGED;
 * what sharc_shard_local and sharc_shard_state_ptr point to.
 */
SHARC_API sharc_status_t sharc_shard_unit_memtype(sharc_shard_group_h group, int unit,
                                                  sharc_memtype_t *memtype_p);

/**
 * Bytes of memory the group holds now: on the device (shards kept there, unsharded buffers,
 * pooled ones included, the offloaded units' param-dtype shards), and in host memory
 * (offloaded shards and states, page-locked slots; a host group's shards). Either output
 * may be NULL.
 */
SHARC_API sharc_status_t sharc_shard_memory(sharc_shard_group_h group, size_t *device_bytes_p,
                                            size_t *host_bytes_p);

SHARC_END_DECLS

/* what a group keeps across steps: the engine's AdamW, optimizer states, checkpoints */
#include <sharc/shard_state.h>

#endif
