/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_adamw.c: the engine's AdamW (sharc/shard.h), torch.optim.AdamW after
 * clip_grad_norm_. Each unit is updated where its state lives: a host unit by the host
 * worker (the vectorized kernel of kernels/cpu over slices of its shard on the worker's
 * threads), a device unit by the CUDA kernel on the engine's stream. Armed by
 * sharc_shard_adamw_step, a unit's next reduction is its step's gradient; once it has landed
 * its sum of squares is taken and, without clipping, its update queued at once (overlapping
 * the rest of the backward). Finish adds every unit's sum (one all-reduce over the shard
 * group: every replica holds the same gradients), and with clipping queues the updates then,
 * in forward order, so that the next step's first gathers wait for the first updates only.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/engine/shard_engine.h"
#include "shard/offload/offload.h"

/* Elements an update takes between looks at the landings queued meanwhile (16 MiB of f32). */
#define SHARC_SHARD_SLICE (4u << 20)

/* The kernel's view of this step with gradient factor @p clip (the trainer's arithmetic:
 * float, powf). keep is the decayed runs'. */
static sharc_kern_adamw_t sharc_shard_adamw_kern(const sharc_shard_adamw_t *hp, float clip)
{
    float t = (float)hp->step;
    sharc_kern_adamw_t a = {.beta1 = hp->beta1,
                            .beta2 = hp->beta2,
                            .eps = hp->eps,
                            .keep = 1.0f - hp->lr * hp->weight_decay,
                            .step_size = hp->lr / (1.0f - powf(hp->beta1, t)),
                            .bc2_sqrt = sqrtf(1.0f - powf(hp->beta2, t)),
                            .clip = clip};

    return a;
}

/* Each unit's runs of decay and no decay over its shard (gaps and padding join the run
 * before them: they are zeros, which AdamW leaves zero). */
static sharc_status_t sharc_shard_adamw_segs(sharc_shard_group_t *g, sharc_shard_adamw_state_t *s,
                                             const unsigned char *decay)
{
    int n = 0;

    s->segs = calloc((size_t)g->nparams + 1, sizeof(*s->segs));
    s->first = calloc((size_t)g->nunits + 1, sizeof(*s->first));
    if (s->segs == NULL || s->first == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int ui = 0; ui < g->nunits; ui++) {
        const sharc_shard_unit_t *u = &g->units[ui];
        size_t lo = (size_t)g->shard_rank * u->shard, hi = lo + u->shard;

        s->first[ui] = n;
        for (int i = u->first_param; i < u->first_param + u->nparams; i++) {
            const sharc_shard_param_info_t *p = &g->params[i];
            size_t a = SHARC_MAX(lo, p->offset), b = SHARC_MIN(hi, p->offset + p->count);
            int d = (decay == NULL) || decay[i] != 0;

            if (a >= b) {
                continue;
            }
            if (n > s->first[ui] && s->segs[n - 1].decay == d) {
                s->segs[n - 1].count = b - lo - s->segs[n - 1].start;
            } else {
                s->segs[n++] = (sharc_shard_seg_t){.start = a - lo, .count = b - a, .decay = d};
            }
        }
    }
    s->first[g->nunits] = n;
    return SHARC_OK;
}

/* An existing state of that name, or a new one. */
static sharc_status_t sharc_shard_adamw_state(sharc_shard_group_t *g, const char *name,
                                              int *index_p)
{
    for (int s = 0; s < g->nstates; s++) {
        if (strcmp(g->state_names[s], name) == 0) {
            *index_p = s;
            return SHARC_OK;
        }
    }
    return sharc_shard_state_add(g, name, index_p);
}

sharc_status_t sharc_shard_adamw_create(sharc_shard_group_h g, const unsigned char *decay)
{
    sharc_shard_adamw_state_t *s;
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_adamw_create");
    int host = 0, device = 0;

    if (status != SHARC_OK) {
        return status;
    }
    if (g->adamw != NULL) {
        sharc_error("sharc_shard_adamw_create: the group has its AdamW already");
        return SHARC_ERR_INVALID;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return SHARC_ERR_NOMEM;
    }
    g->adamw = s;
    s->norm = NAN;
    for (int i = 0; i < g->nunits; i++) {
        host += sharc_shard_host_unit(g, &g->units[i]);
    }
    device = g->nunits - host;
    status = sharc_shard_adamw_segs(g, s, decay);
    if (status == SHARC_OK) {
        status = sharc_shard_adamw_state(g, "exp_avg", &s->exp_avg);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_adamw_state(g, "exp_avg_sq", &s->exp_avg_sq);
    }
    if (status == SHARC_OK && g->cuda && device > 0) {
        status =
            sharc_gpu_alloc((1 + SHARC_KERN_SUMSQ_SCRATCH) * sizeof(double), (void **)&s->dsum);
    }
    if (status == SHARC_OK && host > 0) {
        status = sharc_shard_host_start(g);
    }
    if (status != SHARC_OK) {
        sharc_shard_adamw_free(g);
        return status;
    }
    sharc_info("AdamW on the group: %d unit(s) updated on the host, %d on the device", host,
               device);
    return SHARC_OK;
}

void sharc_shard_adamw_free(sharc_shard_group_t *g)
{
    sharc_shard_adamw_state_t *s = g->adamw;

    if (s == NULL) {
        return;
    }
    sharc_gpu_free(s->dsum);
    free(s->segs);
    free(s->first);
    free(s);
    g->adamw = NULL;
}

sharc_status_t sharc_shard_adamw_step(sharc_shard_group_h g, const sharc_shard_adamw_t *hp)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_adamw_step");

    if (status != SHARC_OK) {
        return status;
    }
    if (g->adamw == NULL || hp == NULL) {
        sharc_error("sharc_shard_adamw_step: %s",
                    hp == NULL ? "no settings (hp is NULL)" : "no sharc_shard_adamw_create yet");
        return SHARC_ERR_INVALID;
    }
    if (!(hp->lr >= 0) || !(hp->beta1 >= 0 && hp->beta1 < 1) ||
        !(hp->beta2 >= 0 && hp->beta2 < 1) || !(hp->eps > 0) || !(hp->weight_decay >= 0) ||
        !(hp->max_norm >= 0) || hp->step < 1) {
        sharc_error("sharc_shard_adamw_step: lr %g, betas (%g, %g), eps %g, weight_decay %g, "
                    "max_norm %g, step %lld: lr, weight_decay, max_norm >= 0, betas in [0, 1), "
                    "eps > 0, step >= 1",
                    hp->lr, hp->beta1, hp->beta2, hp->eps, hp->weight_decay, hp->max_norm,
                    (long long)hp->step);
        return SHARC_ERR_INVALID;
    }
    for (int i = 0; i < g->nunits; i++) { /* the last step's tasks that read these are done */
        sharc_shard_ounit_t *ou = &g->off->units[i];

        ou->final = ou->landed = ou->updated = 0;
        ou->sumsq = 0.0;
    }
    if (g->adamw->dsum != NULL) {
        status = sharc_gpu_memset(g->adamw->dsum, 0, sizeof(double), g->estream);
    }
    g->adamw->hp = *hp;
    g->adamw->armed = status == SHARC_OK;
    return status;
}

sharc_status_t sharc_shard_adamw_norm(sharc_shard_group_h g, float *norm_p)
{
    if (g == NULL || g->adamw == NULL || norm_p == NULL) {
        sharc_error("sharc_shard_adamw_norm: no group, no AdamW on it, or no output");
        return SHARC_ERR_INVALID;
    }
    *norm_p = g->adamw->norm;
    return SHARC_OK;
}

sharc_status_t sharc_shard_adamw_posted(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_shard_ounit_t *ou = &g->off->units[u->id];

    if (g->adamw == NULL || !g->adamw->armed) {
        return SHARC_OK;
    }
    if (ou->final) {
        sharc_error("unit %d is reduced twice after sharc_shard_adamw_step: its update takes "
                    "the first; arm the update before the step's last micro-batch only",
                    u->id);
        return SHARC_ERR_INVALID;
    }
    ou->final = 1;
    return SHARC_OK;
}

/* ---- updates ------------------------------------------------------------------------------- */

typedef struct {
    sharc_kern_adamw_t a;
    float *p, *m, *v;
    const float *g;
} sharc_shard_adamw_arg_t;

static void sharc_shard_adamw_chunk(void *arg, size_t chunk, size_t lo, size_t hi)
{
    sharc_shard_adamw_arg_t *x = arg;

    (void)chunk;
    sharc_kern_cpu_ops.adamw(&x->a, x->p + lo, x->g + lo, x->m + lo, x->v + lo, hi - lo, NULL);
}

/* A host unit's update, on the worker's threads. */
static sharc_status_t sharc_shard_task_update(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                              const sharc_shard_task_t *t)
{
    sharc_shard_adamw_state_t *s = g->adamw;

    for (int k = s->first[u->id]; k < s->first[u->id + 1]; k++) {
        const sharc_shard_seg_t *seg = &s->segs[k];

        /* in slices: landings queued meanwhile run between them (sharc_shard_host_for) */
        for (size_t off = 0; off < seg->count; off += SHARC_SHARD_SLICE) {
            size_t at = seg->start + off;
            sharc_shard_adamw_arg_t x = {.a = t->a,
                                         .p = u->master + at,
                                         .m = u->state[s->exp_avg] + at,
                                         .v = u->state[s->exp_avg_sq] + at,
                                         .g = u->grad + at};

            if (sharc_shard_host_cancelled(g)) {
                return SHARC_ERR_REMOTE;
            }
            x.a.keep = seg->decay ? t->a.keep : 1.0f;
            sharc_shard_host_for(g, SHARC_MIN(seg->count - off, (size_t)SHARC_SHARD_SLICE),
                                 64u << 10, sharc_shard_adamw_chunk, &x);
        }
    }
    return SHARC_OK;
}

/* What the worker runs of a task with an update: the update, then (a pinned unit) the upload
 * of the new master. */
static sharc_status_t sharc_shard_adamw_run(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                            const sharc_shard_task_t *t)
{
    sharc_status_t status = SHARC_OK;

    if (t->what & SHARC_SHARD_TASK_UPDATE) {
        status = sharc_shard_task_update(g, u, t);
    }
    if (status == SHARC_OK && !sharc_shard_host_cancelled(g) &&
        (t->what & SHARC_SHARD_TASK_UPLOAD)) {
        status = sharc_shard_task_upload(g, u, t);
    }
    return status;
}

void sharc_shard_adamw_task(sharc_shard_group_t *g, sharc_shard_unit_t *u, sharc_shard_task_t *t)
{
    sharc_shard_adamw_state_t *s = g->adamw;
    sharc_shard_ounit_t *ou = &g->off->units[u->id];

    if (s == NULL || !s->armed || !ou->final) {
        return;
    }
    t->what |= SHARC_SHARD_TASK_SUMSQ;
    if (s->hp.max_norm == 0) { /* nothing to wait for: the update follows the landing */
        t->what |= SHARC_SHARD_TASK_UPDATE;
        t->run = sharc_shard_adamw_run;
        t->a = sharc_shard_adamw_kern(&s->hp, 1.0f);
        ou->updated = 1;
        if (sharc_shard_pinned_unit(g, u)) {
            t->what |= SHARC_SHARD_TASK_UPLOAD;
            ou->dirty = 0;
        }
    }
}

/* A device unit's update, on the engine's stream. */
static sharc_status_t sharc_shard_adamw_on_device(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                  float clip)
{
    sharc_shard_adamw_state_t *s = g->adamw;
    sharc_kern_adamw_t a = sharc_shard_adamw_kern(&s->hp, clip);
    sharc_status_t status = SHARC_OK;

    for (int k = s->first[u->id]; status == SHARC_OK && k < s->first[u->id + 1]; k++) {
        const sharc_shard_seg_t *seg = &s->segs[k];
        sharc_kern_adamw_t sa = a;

        sa.keep = seg->decay ? a.keep : 1.0f;
        status = g->kern->adamw(&sa, u->master + seg->start, u->grad + seg->start,
                                u->state[s->exp_avg] + seg->start,
                                u->state[s->exp_avg_sq] + seg->start, seg->count, g->estream);
    }
    g->off->units[u->id].updated = 1;
    return (status == SHARC_OK) ? SHARC_OK : sharc_shard_fail(g, status, u, "AdamW");
}

sharc_status_t sharc_shard_adamw_device(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_shard_adamw_state_t *s = g->adamw;
    sharc_shard_ounit_t *ou = &g->off->units[u->id];
    sharc_status_t status;

    if (s == NULL || !s->armed || !ou->final) {
        return SHARC_OK;
    }
    /* the sum first: the update changes nothing it reads, but the order of the units' sums
     * is the order of their landings either way */
    status = g->kern->sumsq(s->dsum, u->grad, u->shard, g->estream);
    ou->landed = 1;
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u, "the gradient's sum of squares");
    }
    return (s->hp.max_norm == 0) ? sharc_shard_adamw_on_device(g, u, 1.0f) : SHARC_OK;
}

/* Every unit's sum of squares: those not landed yet are summed now (host units by the
 * worker, device units on the engine's stream), then all of them added on this rank. */
static sharc_status_t sharc_shard_adamw_local_sum(sharc_shard_group_t *g, double *sum_p)
{
    sharc_shard_adamw_state_t *s = g->adamw;
    sharc_status_t status = SHARC_OK;
    int host = 0;
    double sum = 0.0;

    for (int i = 0; status == SHARC_OK && i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];
        sharc_shard_ounit_t *ou = &g->off->units[i];
        sharc_shard_task_t t = {.unit = i, .what = SHARC_SHARD_TASK_SUMSQ, .slot = -1};

        host |= sharc_shard_host_unit(g, u);
        if (ou->landed || ou->final) { /* landed, or landing: its task sums it */
            continue;
        }
        if (sharc_shard_host_unit(g, u)) {
            status = sharc_shard_host_queue(g, &t);
        } else {
            status = g->kern->sumsq(s->dsum, u->grad, u->shard, g->estream);
            ou->landed = 1;
        }
    }
    if (status == SHARC_OK && host) {
        status = sharc_shard_host_wait_landed(g);
    }
    if (status == SHARC_OK && s->dsum != NULL) { /* the device's sum: the host waits for it */
        status = sharc_shard_copy(g, &s->hsum, s->dsum, sizeof(double));
        sum = s->hsum;
    }
    for (int i = 0; i < g->nunits; i++) { /* in unit order: the same sum on every run */
        sum += sharc_shard_host_unit(g, &g->units[i]) ? g->off->units[i].sumsq : 0.0;
    }
    *sum_p = sum;
    return status;
}

/* The units in forward order (the schedule's, as recorded or seen), then any others. */
static void sharc_shard_adamw_order(const sharc_shard_group_t *g, int *order)
{
    const sharc_shard_plan_t *p = &g->plan;
    int f = SHARC_SHARD_FORWARD, n = 0;
    const int *fwd = p->norder[f] > 0 ? p->order[f] : p->seen[f];
    int nf = p->norder[f] > 0 ? p->norder[f] : p->nseen[f];
    unsigned char *listed = calloc((size_t)g->nunits, 1);

    for (int i = 0; listed != NULL && i < nf; i++) {
        if (!listed[fwd[i]]) {
            listed[fwd[i]] = 1;
            order[n++] = fwd[i];
        }
    }
    for (int i = 0; i < g->nunits; i++) {
        if (listed == NULL || !listed[i]) {
            order[n++] = i;
        }
    }
    free(listed);
}

sharc_status_t sharc_shard_adamw_finish(sharc_shard_group_t *g)
{
    sharc_shard_adamw_state_t *s = g->adamw;
    double mine = 0.0, total = 0.0;
    sharc_status_t status;
    float norm, clip = 1.0f;
    int *order;

    if (s == NULL || !s->armed) {
        return SHARC_OK;
    }
    s->armed = 0;
    status = sharc_shard_adamw_local_sum(g, &mine);
    if (status == SHARC_OK) { /* blocking, on the host: every rank has its sum by now */
        sharc_coll_args_t a = {.type = SHARC_COLL_ALLREDUCE,
                               .sendbuf = &mine,
                               .recvbuf = &total,
                               .count = 1,
                               .dtype = SHARC_DTYPE_F64,
                               .op = SHARC_OP_SUM};

        status = sharc_coll_post(g->shard_comm->coll, &a, NULL);
    }
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, NULL, "the gradients' global norm");
    }
    norm = (float)sqrt(total);
    s->norm = norm;
    if (s->hp.max_norm > 0 && norm > s->hp.max_norm) {
        clip = s->hp.max_norm / (norm + 1e-6f);
    }
    order = malloc(sizeof(*order) * (size_t)g->nunits);
    if (order == NULL) {
        return SHARC_ERR_NOMEM;
    }
    sharc_shard_adamw_order(g, order);
    for (int k = 0; status == SHARC_OK && k < g->nunits; k++) {
        sharc_shard_unit_t *u = &g->units[order[k]];
        sharc_shard_ounit_t *ou = &g->off->units[u->id];
        sharc_shard_task_t t = {.unit = u->id,
                                .what = SHARC_SHARD_TASK_UPDATE,
                                .slot = -1,
                                .run = sharc_shard_adamw_run};

        if (ou->updated) {
            continue;
        }
        if (!sharc_shard_host_unit(g, u)) {
            status = sharc_shard_adamw_on_device(g, u, clip);
            continue;
        }
        t.a = sharc_shard_adamw_kern(&s->hp, clip);
        if (sharc_shard_pinned_unit(g, u)) {
            t.what |= SHARC_SHARD_TASK_UPLOAD;
            ou->dirty = 0;
        }
        ou->updated = 1;
        status = sharc_shard_host_queue(g, &t);
    }
    free(order);
    return status;
}
