/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/prof.h: the profile of a training step (sharc-llama train --profile): every op
 * site of the step timed through the ops table's events (ops.h: CUDA events on the table's
 * stream, the host's clock on the CPU), read once after the step, with each site's FLOPs and
 * bytes from the model's shapes (prof_cost.c). The table, floors and JSON are the program's
 * (cli/profile.c). Off, a site costs the model one test of a NULL pointer.
 */
#ifndef SHARC_LLAMA_PROF_H
#define SHARC_LLAMA_PROF_H

#include <stddef.h>

#include "../ops/ops.h"

/** The op sites of a step, in the order the table lists them. */
typedef enum {
    LLAMA_SITE_EMBED_FWD,    /**< token embedding */
    LLAMA_SITE_NORM_FWD,     /**< RMSNorm: the blocks' two and the final one */
    LLAMA_SITE_QKV_FWD,      /**< GEMM: q, k, v projections */
    LLAMA_SITE_ROPE_FWD,     /**< rotary embedding of q and k */
    LLAMA_SITE_ATTN_FWD,     /**< causal attention */
    LLAMA_SITE_ATTN_OUT_FWD, /**< GEMM: attention output projection (o_proj) */
    LLAMA_SITE_ADD,          /**< the residual adds */
    LLAMA_SITE_GATE_UP_FWD,  /**< GEMM: gate and up projections */
    LLAMA_SITE_SWIGLU_FWD,   /**< silu(gate) * up */
    LLAMA_SITE_DOWN_FWD,     /**< GEMM: down projection */
    LLAMA_SITE_HEAD_FWD,     /**< GEMM: the output head (lm_head) */
    LLAMA_SITE_XENT,         /**< cross-entropy and its gradient */
    LLAMA_SITE_HEAD_BWD,
    LLAMA_SITE_DOWN_BWD,
    LLAMA_SITE_SWIGLU_BWD,
    LLAMA_SITE_GATE_UP_BWD,
    LLAMA_SITE_NORM_BWD,
    LLAMA_SITE_ATTN_OUT_BWD,
    LLAMA_SITE_ATTN_BWD,
    LLAMA_SITE_ROPE_BWD,
    LLAMA_SITE_QKV_BWD,
    LLAMA_SITE_EMBED_BWD,
    LLAMA_SITE_ZERO,        /**< buffers zeroed: the residual gradient, the loss, the grads */
    LLAMA_SITE_CAST_PARAMS, /**< a gathered unit cast to the compute dtype */
    LLAMA_SITE_CAST_GRADS,  /**< a unit's f32 gradients added into the bf16 reduce buffer */
    LLAMA_SITE_GATHER,      /**< shard engine: forward/backward begin (the unit's gather), and
                                 forward end (its release) */
    LLAMA_SITE_REDUCE,      /**< shard engine: backward end (the reduce-scatter posted) and
                                 finish (every reduction done) */
    LLAMA_SITE_SUMSQ,       /**< the gradient's sum of squares */
    LLAMA_SITE_ALLREDUCE,   /**< the all-reduces of the sum of squares and of the loss */
    LLAMA_SITE_ADAMW,       /**< AdamW on the shards (with offload: the engine's, awaited) */
    LLAMA_SITE_READBACK,    /**< the loss and the norm read back: the host waits for them */
    LLAMA_SITE_DATA,        /**< the batch read from the token file */
    LLAMA_SITE_HOST,        /**< host gaps: time between sites (on CUDA: the stream idle) */
    LLAMA_SITE_LAST
} llama_site_t;

/** How a site's floor is taken. */
typedef enum {
    LLAMA_SITE_FLOPS, /**< its FLOPs over the measured GEMM rate (and its bytes over the copy's) */
    LLAMA_SITE_BYTES, /**< its bytes over the measured copy rate */
    LLAMA_SITE_WAIT,  /**< no floor: waiting (communication, the host, the data) */
} llama_site_kind_t;

/** A site's name in the table and the JSON ("qkv_fwd"), and its kind. */
const char *llama_site_name(llama_site_t site);
llama_site_kind_t llama_site_kind(llama_site_t site);

typedef struct llama_prof llama_prof_t;

/** One step's figures: seconds and calls per site, the step's seconds (first mark to last). */
typedef struct {
    double s[LLAMA_SITE_LAST];
    int calls[LLAMA_SITE_LAST];
    double step_s;
} llama_prof_step_t;

/** One span of the timeline: a site's call, in seconds of the host's monotonic clock (on CUDA
 *  the device's times, placed from the step's first mark). */
typedef struct {
    double t0, t1;
    int site, step;
} llama_prof_span_t;

/**
 * A profile timing through @p ops's events, keeping the spans of the last @p span_steps steps
 * for a timeline (0: none). SHARC_ERR_UNSUPPORTED (logged) when the table has no events.
 */
sharc_status_t llama_prof_create(const llama_ops_t *ops, int span_steps, llama_prof_t **prof_p);
/** Its events go back to the table (before the table closes); the figures stay. */
void llama_prof_release(llama_prof_t *prof);
void llama_prof_destroy(llama_prof_t *prof);

/** Marks from here on belong to a step (the first mark is taken now). NULL: nothing. */
void llama_prof_step_begin(llama_prof_t *prof);
/**
 * NULL: nothing. The step's last mark, then its figures read (call it after the step's own wait for
 * the device: on CUDA the events are complete by then) and kept. SHARC_ERR_NOMEM (logged) when the
 * marks found no room; an event the table could not read is the table's error (on CUDA, reported by
 * its next to_host).
 */
sharc_status_t llama_prof_step_end(llama_prof_t *prof);

/* The marks themselves (prof.c); the model calls them through the inline functions below. */
void llama_prof_mark(llama_prof_t *prof, llama_site_t site);

/** What follows, up to the next mark, is @p site's (and what came before has ended). */
static inline void llama_prof_at(llama_prof_t *prof, llama_site_t site)
{
    if (prof != NULL) {
        llama_prof_mark(prof, site);
    }
}

/** The open site ends: what follows is the host's, up to the next mark. */
static inline void llama_prof_end(llama_prof_t *prof)
{
    llama_prof_at(prof, LLAMA_SITE_HOST);
}

void llama_prof_anchor_mark(llama_prof_t *prof);

/**
 * A moment both timelines know, for placing the op spans in the shard engine's trace: the
 * engine's next call, sharc_shard_forward_begin of unit 0 (its call span starts at it), is
 * made now. The last one of the steps counts (cli/profile_trace.c).
 */
static inline void llama_prof_anchor_here(llama_prof_t *prof)
{
    if (prof != NULL) {
        llama_prof_anchor_mark(prof);
    }
}

/** The steps kept, in order. */
int llama_prof_steps(const llama_prof_t *prof, const llama_prof_step_t **steps_p);
/** The spans kept (those of the last span_steps steps), in order. */
size_t llama_prof_spans(const llama_prof_t *prof, const llama_prof_span_t **spans_p);
/** The host's clock at the last llama_prof_anchor_here of a step; 0 without one. */
double llama_prof_anchor(const llama_prof_t *prof);

#endif
