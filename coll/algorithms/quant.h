/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quant.h: collectives over a quantized wire (quant.c: checks, the table choosing an
 * algorithm, the steps the one-level algorithms share; allgather_quant.c,
 * reduce_scatter_quant*.c, quant_device.c). Their state is the task's u.quant (coll.h).
 */
#ifndef SHARC_COLL_QUANT_H
#define SHARC_COLL_QUANT_H

#include "algorithms.h"

/* ---- collectives over a quantized wire (quant.c) */

/* The checks of @p a's wire (format, block, dtype, op; none for SHARC_WIRE_FULL), logged. */
SHARC_HIDDEN sharc_status_t sharc_coll_wire_check(const sharc_coll_args_t *a);

/* The host algorithm for a collective over a quantized wire (quant.c's table); on one node a
 * hierarchical reduce-scatter is the full-precision one sharc_coll_select picks. */
SHARC_HIDDEN sharc_status_t sharc_coll_select_wire(sharc_coll_comm_t *cc,
                                                   const sharc_coll_args_t *a,
                                                   const sharc_coll_algo_t **algo_p);

/* A step of a collective over a quantized wire. */
typedef sharc_status_t (*sharc_coll_quant_fn_t)(sharc_coll_task_t *task);

/* The progress of the one-level ones: @p start (quantize, start the sub-task exchanging the
 * segments: task->u.quant.child) in the first progress (with a progress thread: off the
 * caller's time), then the sub-task's progress, then @p finish (dequantize). */
SHARC_HIDDEN sharc_status_t sharc_coll_quant_progress(sharc_coll_task_t *task,
                                                      sharc_coll_quant_fn_t start,
                                                      sharc_coll_quant_fn_t finish);

/* Their finalize: the sub-task that exchanged the wire (task->u.quant.child). */
SHARC_HIDDEN void sharc_coll_quant_finalize(sharc_coll_task_t *task);

/* Over a quantized wire (chosen by quant.c, not by SHARC_<COLL>_ALGO: they compute less
 * exactly than what the knob's algorithms compute). */
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgather_quant;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_quant;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_quant_hier;

#endif
