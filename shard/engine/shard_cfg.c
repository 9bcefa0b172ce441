/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_cfg.c: the sharding engine's knobs (SHARC_SHARD_*): the defaults a group takes for
 * what its sharc_shard_params_t leaves unset, the reduction queue, the trace, and offload.
 */
#include "config.h"

#include "base/util.h"
#include "shard/shard.h"

/* SHARC_SHARD_OFFLOAD's values, in sharc_shard_offload_t's order. */
const char *const sharc_shard_offload_names[] = {"none", "host", "managed", NULL};
static const char *const sharc_shard_reshard_names[] = {"no", "yes", "node"};

/* The wire formats' names, as sharc_wire_name gives them. */
static const char *sharc_shard_wire_choice(int arg, int i)
{
    return sharc_wire_name((sharc_wire_t)i);
}

static const sharc_cfg_field_t sharc_shard_cfg_fields[] = {
    {.name = "SHARD_BUCKET",
     .dflt = "64m",
     .type = SHARC_CFG_SIZE,
     .min = 4096,
     .max = 1L << 40,
     .offset = offsetof(sharc_shard_cfg_t, bucket),
     .doc = "Sharding engine: bytes of gathered parameters per unit when units are packed "
            "automatically (a larger parameter gets a unit of its own)."},
    {.name = "SHARD_PREFETCH",
     .dflt = "1",
     .type = SHARC_CFG_AUTO,
     .min = 0,
     .max = 1024,
     .offset = offsetof(sharc_shard_cfg_t, prefetch),
     .doc = "Sharding engine: units gathered ahead of the one in use, along the schedule "
            "recorded in the first step (0: gather each unit when it begins); auto: start at 1 "
            "and go deeper while the caller waits for gathers and the bound on unsharded units "
            "(SHARC_SHARD_MAX_UNSHARDED) admits it, decided alike on every rank from the waits "
            "the ranks exchange at each step's end."},
    {.name = "SHARD_MAX_UNSHARDED",
     .dflt = "0",
     .type = SHARC_CFG_INT,
     .min = 0,
     .max = 1 << 20,
     .offset = offsetof(sharc_shard_cfg_t, max_unsharded),
     .doc = "Sharding engine: most units with gathered parameters at once, the bound on "
            "unsharded memory; 0: prefetch + 1 when units are resharded after forward (4 with "
            "prefetch auto), else every unit."},
    {.name = "SHARD_RESHARD_AFTER_FORWARD",
     .dflt = "yes",
     .type = SHARC_CFG_ENUM,
     .names = sharc_shard_reshard_names,
     .nnames = 3,
     .offset = offsetof(sharc_shard_cfg_t, reshard_after_forward),
     .doc = "Sharding engine: release a unit's gathered parameters after its forward and gather "
            "them again for its backward (yes); keep them (no), trading memory for one "
            "all-gather per unit; or keep a node-local secondary shard, this rank's "
            "1/local_size of the unit, so that the backward gathers within the node only "
            "(node: ZeRO++'s hpZ)."},
    {.name = "SHARD_PARAM_WIRE",
     .dflt = "full",
     .type = SHARC_CFG_ENUM,
     .choice = sharc_shard_wire_choice,
     .offset = offsetof(sharc_shard_cfg_t, param_wire),
     .doc = "Sharding engine: how the parameters' all-gathers travel: full (the param dtype), "
            "int8 (block-wise absmax scales) or fp8 (e4m3, a scale per block), quantized once "
            "from each rank's shard (ZeRO++'s qwZ); the masters stay f32."},
    {.name = "SHARD_REDUCE_WIRE",
     .dflt = "full",
     .type = SHARC_CFG_ENUM,
     .choice = sharc_shard_wire_choice,
     .offset = offsetof(sharc_shard_cfg_t, reduce_wire),
     .doc = "Sharding engine: how the gradients' reduce-scatters travel: full (the reduce "
            "dtype), int8 or fp8: full precision within each node, quantized once between "
            "nodes, summed in f32 (ZeRO++'s qgZ)."},
    {.name = "SHARD_WIRE_BLOCK",
     .dflt = "256",
     .type = SHARC_CFG_INT,
     .min = 1,
     .max = SHARC_WIRE_BLOCK_MAX,
     .offset = offsetof(sharc_shard_cfg_t, wire_block),
     .doc = "Sharding engine: values per scale of the quantized wires (SHARC_SHARD_PARAM_WIRE, "
            "SHARC_SHARD_REDUCE_WIRE): smaller blocks follow the values more closely and cost "
            "4 bytes more per block."},
    {.name = "SHARD_REDUCE_QUEUE",
     .dflt = "yes",
     .type = SHARC_CFG_BOOL,
     .offset = offsetof(sharc_shard_cfg_t, reduce_queue),
     .doc = "Sharding engine: gradient reductions complete through a queue of their own, so "
            "that a prefetched all-gather never completes behind a reduce-scatter posted before "
            "it: on the host a completion lane of the shard group's communicator (its one "
            "progress thread drives both), on CUDA a communicator of their own (its own NCCL "
            "communicator and stream). no: one queue for both, in posting order."},
    {.name = "SHARD_TRACE",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_shard_cfg_t, trace),
     .doc = "Sharding engine: write a timeline of every rank's last steps to this file as Chrome "
            "trace JSON (open it in Perfetto or chrome://tracing; tools/trace-plot draws it as a "
            "PNG): per unit the post, start, end and completion of its collectives, the "
            "caller's waits, calls and compute, and the prefetch decisions; one track per rank "
            "and per queue. Rank 0 creates the file with the group and writes it when the group "
            "is destroyed, which then is collective. Empty: no trace."},
    {.name = "SHARD_TRACE_STEPS",
     .dflt = "50",
     .type = SHARC_CFG_INT,
     .min = 1,
     .max = 1 << 20,
     .offset = offsetof(sharc_shard_cfg_t, trace_steps),
     .doc = "Sharding engine: steps the trace keeps (the last ones; each step's events are kept "
            "in memory until the group is destroyed)."},
    {.name = "SHARD_OFFLOAD",
     .dflt = "none",
     .type = SHARC_CFG_ENUM,
     .offset = offsetof(sharc_shard_cfg_t, offload),
     .names = sharc_shard_offload_names,
     .nnames = 3,
     .doc = "Sharding engine, CUDA groups: where the f32 master shards, gradient shards and "
            "optimizer states live. none: on the GPU. host: page-locked host memory; gradients "
            "go down as each unit's reduction ends, the CPU updates the unit (the engine's "
            "AdamW), its parameters go up before its next gather. managed: CUDA managed memory "
            "preferring the host (Grace Hopper and other coherent systems), falling back to "
            "host where the GPU cannot share it. Host groups ignore it; callers that update "
            "the shards themselves find where they are with sharc_shard_unit_memtype."},
    {.name = "SHARD_OFFLOAD_FRACTION",
     .dflt = "1",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_shard_cfg_t, offload_fraction),
     .doc = "Sharding engine, with offload: the share of the model's elements offloaded, in "
            "(0, 1]; the units of the lowest ids (reduced last in the backward) making up the "
            "rest stay on the GPU with a GPU update (Twin-Flow)."},
    {.name = "SHARD_OFFLOAD_THREADS",
     .dflt = "auto",
     .type = SHARC_CFG_AUTO,
     .min = 1,
     .max = 1024,
     .offset = offsetof(sharc_shard_cfg_t, offload_threads),
     .doc = "Sharding engine: threads of a rank for the host's work on its units (landing "
            "offloaded gradients, the engine's AdamW on the CPU); auto: the CPUs the rank may "
            "run on, shared among the ranks of its node."},
};

const sharc_cfg_table_t sharc_shard_cfg_table =
    SHARC_CFG_TABLE("sharding engine (shard)", sharc_shard_cfg_fields, sharc_shard_cfg_t);
