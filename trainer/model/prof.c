/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/prof.c: the profile's marks. Each mark is one event of the ops table (pooled:
 * created in the first step, reused by every later one) recorded where a site begins; a site
 * lasts until the next mark, LLAMA_SITE_HOST's marks open the gaps between sites. After the
 * step the events are read once, against the step's first: on CUDA the device's times, so a
 * site is the stream's time from the end of the work before it to the end of its own, and a
 * gap the stream's time idle while the host went on. Not here: the sites' costs
 * (prof_cost.c) and the table (cli/profile.c).
 */
#include "prof.h"
#include "../util.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    llama_site_kind_t kind;
} sites[LLAMA_SITE_LAST] = {
    [LLAMA_SITE_EMBED_FWD] = {"embed_fwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_NORM_FWD] = {"rmsnorm_fwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_QKV_FWD] = {"qkv_fwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_ROPE_FWD] = {"rope_fwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_ATTN_FWD] = {"attention_fwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_ATTN_OUT_FWD] = {"attn_out_fwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_ADD] = {"residual_add", LLAMA_SITE_BYTES},
    [LLAMA_SITE_GATE_UP_FWD] = {"gate_up_fwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_SWIGLU_FWD] = {"swiglu_fwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_DOWN_FWD] = {"down_fwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_HEAD_FWD] = {"lm_head_fwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_XENT] = {"cross_entropy", LLAMA_SITE_BYTES},
    [LLAMA_SITE_HEAD_BWD] = {"lm_head_bwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_DOWN_BWD] = {"down_bwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_SWIGLU_BWD] = {"swiglu_bwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_GATE_UP_BWD] = {"gate_up_bwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_NORM_BWD] = {"rmsnorm_bwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_ATTN_OUT_BWD] = {"attn_out_bwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_ATTN_BWD] = {"attention_bwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_ROPE_BWD] = {"rope_bwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_QKV_BWD] = {"qkv_bwd", LLAMA_SITE_FLOPS},
    [LLAMA_SITE_EMBED_BWD] = {"embed_bwd", LLAMA_SITE_BYTES},
    [LLAMA_SITE_ZERO] = {"zero_fill", LLAMA_SITE_WAIT},
    [LLAMA_SITE_CAST_PARAMS] = {"cast_params", LLAMA_SITE_BYTES},
    [LLAMA_SITE_CAST_GRADS] = {"cast_grads", LLAMA_SITE_BYTES},
    [LLAMA_SITE_GATHER] = {"shard_gather", LLAMA_SITE_WAIT},
    [LLAMA_SITE_REDUCE] = {"shard_reduce", LLAMA_SITE_WAIT},
    [LLAMA_SITE_SUMSQ] = {"grad_sumsq", LLAMA_SITE_BYTES},
    [LLAMA_SITE_ALLREDUCE] = {"allreduce", LLAMA_SITE_WAIT},
    [LLAMA_SITE_ADAMW] = {"adamw", LLAMA_SITE_BYTES},
    [LLAMA_SITE_READBACK] = {"readback", LLAMA_SITE_WAIT},
    [LLAMA_SITE_DATA] = {"data", LLAMA_SITE_WAIT},
    [LLAMA_SITE_HOST] = {"host_gaps", LLAMA_SITE_WAIT},
};

struct llama_prof {
    const llama_ops_t *ops;
    int recording;  /* between step_begin and step_end */
    void **events;  /* [cap] the pool: mark i of a step records events[i] */
    int *site;      /* [cap] the site each mark opens */
    double host_t0; /* the host's clock at the step's first mark */
    double anchor;  /* the host's clock at the last llama_prof_anchor_here (prof.h) */
    int nmarks, cap, failed;
    llama_prof_step_t *steps; /* [nsteps] */
    int nsteps, steps_cap;
    llama_prof_span_t *spans; /* the last span_steps steps' */
    size_t nspans, spans_cap;
    size_t *span_starts; /* where each step held begins in spans[] */
    int span_steps, nheld;
};

const char *llama_site_name(llama_site_t site)
{
    return site >= 0 && site < LLAMA_SITE_LAST ? sites[site].name : "?";
}

llama_site_kind_t llama_site_kind(llama_site_t site)
{
    return site >= 0 && site < LLAMA_SITE_LAST ? sites[site].kind : LLAMA_SITE_WAIT;
}

sharc_status_t llama_prof_create(const llama_ops_t *ops, int span_steps, llama_prof_t **prof_p)
{
    llama_prof_t *p;

    if (ops->event_create == NULL || ops->event_record == NULL || ops->event_elapsed == NULL ||
        ops->event_destroy == NULL) {
        llama_err("--profile: the %s ops cannot time their work (no events)", ops->name);
        return SHARC_ERR_UNSUPPORTED;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return SHARC_ERR_NOMEM;
    }
    p->ops = ops;
    p->span_steps = span_steps > 0 ? span_steps : 0;
    if (p->span_steps > 0) {
        p->span_starts = calloc(2 * (size_t)p->span_steps + 1, sizeof(*p->span_starts));
        if (p->span_starts == NULL) {
            free(p);
            return SHARC_ERR_NOMEM;
        }
    }
    *prof_p = p;
    return SHARC_OK;
}

void llama_prof_release(llama_prof_t *p)
{
    if (p == NULL) {
        return;
    }
    for (int i = 0; i < p->cap; i++) {
        if (p->events[i] != NULL) {
            p->ops->event_destroy(p->events[i]);
        }
    }
    free(p->events);
    free(p->site);
    p->events = NULL;
    p->site = NULL;
    p->cap = p->nmarks = 0;
    p->recording = 0;
}

void llama_prof_destroy(llama_prof_t *p)
{
    if (p == NULL) {
        return;
    }
    llama_prof_release(p);
    free(p->steps);
    free(p->spans);
    free(p->span_starts);
    free(p);
}

/* room for one more mark: the pool grows by doubling, its events made once */
static int mark_room(llama_prof_t *p)
{
    if (p->nmarks < p->cap) {
        return 1;
    }
    int cap = p->cap ? 2 * p->cap : 256;
    void **events = realloc(p->events, (size_t)cap * sizeof(*events));
    if (events != NULL) {
        p->events = events;
    }
    int *site = events != NULL ? realloc(p->site, (size_t)cap * sizeof(*site)) : NULL;
    if (site == NULL) {
        return 0;
    }
    p->site = site;
    for (int i = p->cap; i < cap; i++) {
        p->events[i] = p->ops->event_create();
        if (p->events[i] == NULL) {
            p->cap = i; /* keep the ones made, for release */
            return 0;
        }
    }
    p->cap = cap;
    return 1;
}

/* a mark of @p site; a gap goes on while the host's marks follow each other, unless @p force
 * (the step's last) */
static void mark(llama_prof_t *p, llama_site_t site, int force)
{
    if (!p->recording) {
        return; /* outside a step: validation, evaluation */
    }
    if (!force && site == LLAMA_SITE_HOST && p->nmarks > 0 &&
        p->site[p->nmarks - 1] == LLAMA_SITE_HOST) {
        return;
    }
    if (!mark_room(p)) {
        p->failed = 1;
        p->recording = 0;
        return;
    }
    p->site[p->nmarks] = site;
    p->ops->event_record(p->events[p->nmarks++]);
}

void llama_prof_mark(llama_prof_t *p, llama_site_t site)
{
    mark(p, site, 0);
}

void llama_prof_step_begin(llama_prof_t *p)
{
    if (p == NULL) {
        return;
    }
    p->nmarks = 0;
    p->recording = 1;
    mark(p, LLAMA_SITE_HOST, 1);
    /* the device's times are placed from here: the stream is idle at a step's start (the last
     * one ended waiting for it), so the first event completes about when it is recorded */
    p->host_t0 = llama_now();
}

/* the step's spans after the ones held; the oldest span_steps dropped once twice as many are
 * held, so that a step rarely moves memory */
static int keep_spans(llama_prof_t *p, const double *t)
{
    size_t need = p->nspans + (size_t)p->nmarks;

    if (need > p->spans_cap) {
        size_t cap = need * 2;
        llama_prof_span_t *spans = realloc(p->spans, cap * sizeof(*spans));
        if (spans == NULL) {
            return 0;
        }
        p->spans = spans;
        p->spans_cap = cap;
    }
    p->span_starts[p->nheld++] = p->nspans;
    for (int k = 0; k + 1 < p->nmarks; k++) {
        if (p->site[k] != LLAMA_SITE_HOST && t[k + 1] > t[k]) {
            p->spans[p->nspans++] = (llama_prof_span_t){.t0 = p->host_t0 + t[k],
                                                        .t1 = p->host_t0 + t[k + 1],
                                                        .site = p->site[k],
                                                        .step = p->nsteps - 1};
        }
    }
    if (p->nheld == 2 * p->span_steps) {
        size_t cut = p->span_starts[p->span_steps];
        memmove(p->spans, p->spans + cut, (p->nspans - cut) * sizeof(*p->spans));
        p->nspans -= cut;
        for (int i = p->span_steps; i < p->nheld; i++) {
            p->span_starts[i - p->span_steps] = p->span_starts[i] - cut;
        }
        p->nheld -= p->span_steps;
    }
    return 1;
}

sharc_status_t llama_prof_step_end(llama_prof_t *p)
{
    llama_prof_step_t *st;
    double *t;

    if (p == NULL) {
        return SHARC_OK;
    }
    mark(p, LLAMA_SITE_HOST, 1); /* (the last mark only closes the one before) */
    p->recording = 0;
    if (p->failed) {
        llama_err("--profile: out of memory or events for the step's marks");
        return SHARC_ERR_NOMEM;
    }
    if (p->nsteps == p->steps_cap) {
        int cap = p->steps_cap ? 2 * p->steps_cap : 64;
        llama_prof_step_t *steps = realloc(p->steps, (size_t)cap * sizeof(*steps));
        if (steps == NULL) {
            return SHARC_ERR_NOMEM;
        }
        p->steps = steps;
        p->steps_cap = cap;
    }
    t = malloc((size_t)p->nmarks * sizeof(*t));
    if (t == NULL) {
        return SHARC_ERR_NOMEM;
    }
    /* every mark against the first: on CUDA one read each, the stream long past them */
    st = &p->steps[p->nsteps++];
    memset(st, 0, sizeof(*st));
    t[0] = 0.0;
    for (int k = 1; k < p->nmarks; k++) {
        t[k] = p->ops->event_elapsed(p->events[0], p->events[k]);
    }
    for (int k = 0; k + 1 < p->nmarks; k++) {
        st->s[p->site[k]] += t[k + 1] - t[k];
        st->calls[p->site[k]]++;
    }
    st->step_s = t[p->nmarks - 1];
    if (p->span_steps > 0 && !keep_spans(p, t)) {
        free(t);
        return SHARC_ERR_NOMEM;
    }
    free(t);
    return SHARC_OK;
}

int llama_prof_steps(const llama_prof_t *p, const llama_prof_step_t **steps_p)
{
    *steps_p = p->steps;
    return p->nsteps;
}

size_t llama_prof_spans(const llama_prof_t *p, const llama_prof_span_t **spans_p)
{
    *spans_p = p->spans;
    return p->nspans;
}

void llama_prof_anchor_mark(llama_prof_t *p)
{
    if (p->recording) {
        p->anchor = llama_now();
    }
}

double llama_prof_anchor(const llama_prof_t *p)
{
    return p->anchor;
}
