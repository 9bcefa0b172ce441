/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_group.c: a shard group's life: settings, layout agreement across ranks, the shard
 * and replica communicators (HSDP), master and gradient shards and their initial values,
 * its end. Its queries are shard_query.c's; the ranks' vote it takes is shard_exchange.c's;
 * communication during steps is in shard_unit.c and shard_sched.c.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include <sharc/mem.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/shard_group.h"

/* The group's settings: cfg's fields where set, else the configuration knobs. */
static sharc_status_t sharc_shard_settings(sharc_shard_group_t *g, const sharc_shard_params_t *cfg,
                                           size_t *bucket_p, int *num_units_p)
{
    const sharc_shard_cfg_t *k = sharc_shard_cfg(g->ctx->cfg);
    unsigned mask = (cfg != NULL) ? cfg->field_mask : 0;

    g->pdtype = (mask & SHARC_SHARD_PARAM_PARAM_DTYPE) ? cfg->param_dtype : SHARC_DTYPE_F32;
    g->rdtype = (mask & SHARC_SHARD_PARAM_REDUCE_DTYPE) ? cfg->reduce_dtype : SHARC_DTYPE_F32;
    g->grad_op = (mask & SHARC_SHARD_PARAM_GRAD_OP) ? cfg->grad_op : SHARC_OP_AVG;
    g->plan.prefetch = (mask & SHARC_SHARD_PARAM_PREFETCH) ? cfg->prefetch : k->prefetch;
    g->plan.max_unsharded =
        (mask & SHARC_SHARD_PARAM_MAX_UNSHARDED) ? cfg->max_unsharded : k->max_unsharded;
    g->shard_size = (mask & SHARC_SHARD_PARAM_SHARD_SIZE) ? cfg->shard_size : g->size;
    g->assign_grads = (mask & SHARC_SHARD_PARAM_ASSIGN_GRADS) ? cfg->assign_grads != 0 : 0;
    g->cuda = (mask & SHARC_SHARD_PARAM_MEMTYPE) && cfg->memtype == SHARC_MEMTYPE_CUDA;
    g->stream = (mask & SHARC_SHARD_PARAM_STREAM) ? cfg->stream : NULL;
    *bucket_p = (mask & SHARC_SHARD_PARAM_BUCKET_BYTES) ? cfg->bucket_bytes : k->bucket;
    *num_units_p = (mask & SHARC_SHARD_PARAM_NUM_UNITS) ? cfg->num_units : 0;

    if (sharc_shard_wire_settings(g, cfg, k, &g->hpz) != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    if (g->pdtype != SHARC_DTYPE_F32 && g->pdtype != SHARC_DTYPE_BF16 &&
        g->pdtype != SHARC_DTYPE_F16) {
        sharc_error("param dtype must be f32, bf16 or f16, not %s",
                    sharc_dtype_name(g->pdtype) ? sharc_dtype_name(g->pdtype) : "(invalid)");
        return SHARC_ERR_INVALID;
    }
    if (g->rdtype != SHARC_DTYPE_F32 && g->rdtype != SHARC_DTYPE_BF16) {
        sharc_error("reduce dtype must be f32 or bf16, not %s",
                    sharc_dtype_name(g->rdtype) ? sharc_dtype_name(g->rdtype) : "(invalid)");
        return SHARC_ERR_INVALID;
    }
    if (g->grad_op != SHARC_OP_AVG && g->grad_op != SHARC_OP_SUM) {
        sharc_error("gradients are averaged or summed, not %s",
                    sharc_op_name(g->grad_op) ? sharc_op_name(g->grad_op) : "(invalid)");
        return SHARC_ERR_INVALID;
    }
    if ((mask & SHARC_SHARD_PARAM_MEMTYPE) && cfg->memtype != SHARC_MEMTYPE_HOST &&
        cfg->memtype != SHARC_MEMTYPE_CUDA) {
        sharc_error("memtype must be SHARC_MEMTYPE_HOST or SHARC_MEMTYPE_CUDA, not %d",
                    (int)cfg->memtype);
        return SHARC_ERR_INVALID;
    }
    if (g->cuda && sharc_kern_cuda() == NULL) {
        sharc_error("memtype SHARC_MEMTYPE_CUDA, but this sharc was built without CUDA");
        return SHARC_ERR_UNSUPPORTED;
    }
    if (g->plan.prefetch == SHARC_SHARD_PREFETCH_AUTO) {
        g->prefetch_auto = 1;
        g->plan.prefetch = 1; /* where the adaptive depth starts */
    }
    if (g->plan.prefetch < 0 || g->plan.max_unsharded < 0 || *bucket_p == 0) {
        sharc_error("prefetch (%d; SHARC_SHARD_PREFETCH_AUTO for auto), max_unsharded (%d) "
                    "and bucket_bytes (%zu) must not be negative or zero",
                    g->plan.prefetch, g->plan.max_unsharded, *bucket_p);
        return SHARC_ERR_INVALID;
    }
    if (g->shard_size <= 0 || g->size % g->shard_size != 0) {
        sharc_error("shard_size %d does not divide the communicator's %d ranks", g->shard_size,
                    g->size);
        return SHARC_ERR_INVALID;
    }
    g->pesize = sharc_dtype_size(g->pdtype);
    g->resize = sharc_dtype_size(g->rdtype);
    g->replicas = g->size / g->shard_size;
    g->shard_rank = g->rank % g->shard_size;
    g->replica_rank = g->rank / g->shard_size;
    g->sync = 1;
    return sharc_shard_offload_settings(g, cfg);
}

static uint64_t sharc_shard_hash(const sharc_shard_group_t *g)
{
    int32_t settings[] = {g->pdtype,
                          g->rdtype,
                          g->grad_op,
                          g->plan.prefetch,
                          g->plan.max_unsharded,
                          g->plan.reshard_after_forward,
                          g->shard_size,
                          g->nparams,
                          g->nunits,
                          g->prefetch_auto,
                          sharc_shard_cfg(g->ctx->cfg)->reduce_queue,
                          g->off->mode,
                          (int32_t)(g->off->fraction * 1e6),
                          g->pwire,
                          g->rwire,
                          (int32_t)g->wire_block,
                          g->hpz};
    uint64_t h = sharc_hash64(SHARC_HASH_SEED, settings, sizeof(settings));

    for (int i = 0; i < g->nparams; i++) {
        const sharc_shard_param_info_t *p = &g->params[i];
        uint64_t fields[3 + SHARC_SHARD_MAX_DIMS] = {p->unit, p->count, (uint64_t)p->ndim};

        for (int d = 0; d < p->ndim; d++) {
            fields[3 + d] = p->shape[d];
        }
        h = sharc_hash64(h, p->name, strlen(p->name) + 1);
        h = sharc_hash64(h, fields, sizeof(fields));
    }
    return h;
}

/*
 * Every rank's checks and layout against every other's: a rank that failed on its own, or
 * built another group, fails all of them together instead of leaving the others to wait in
 * the first collective.
 */
static sharc_status_t sharc_shard_agree(sharc_shard_group_t *g, sharc_status_t mine)
{
    sharc_shard_vote_t vote = {.a = (mine == SHARC_OK) ? sharc_shard_hash(g) : 0}, *all;
    sharc_status_t status;

    all = calloc((size_t)g->size, sizeof(*all));
    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_shard_exchange(g, mine, &vote, all, "creating the shard group");
    for (int r = 0; status == SHARC_OK && r < g->size; r++) {
        if (all[r].a != all[0].a) {
            sharc_error("rank %d passed other parameters or settings than rank 0 "
                        "(names, counts, shapes, units, dtypes, wires, prefetch, bounds)",
                        r);
            status = SHARC_ERR_REMOTE;
        }
    }
    free(all);
    return status;
}

/* This rank's shard of every unit, from the caller's initial values (zeros without). */
static sharc_status_t sharc_shard_alloc_shards(sharc_shard_group_t *g,
                                               const sharc_shard_param_t *in)
{
    size_t max_shard = 0;
    float *host = NULL; /* CUDA: the shard is put together here, then copied over */
    sharc_status_t status = SHARC_OK;

    for (int ui = 0; ui < g->nunits; ui++) {
        max_shard = SHARC_MAX(max_shard, g->units[ui].shard);
    }
    if (g->cuda && (host = malloc(max_shard * sizeof(float))) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int ui = 0; status == SHARC_OK && ui < g->nunits; ui++) {
        sharc_shard_unit_t *u = &g->units[ui];
        size_t lo = (size_t)g->shard_rank * u->shard, hi = lo + u->shard;
        float *dst;

        /* the master is shareable, like the unsharded buffers: the all-gather sends straight
         * from it, and peers on the node copy it through a mapping, not through the kernel
         * (an offloaded unit's are where its placement says: shard_offload.c) */
        status = sharc_shard_unit_alloc(g, u, SHARC_SHARD_MEM_MASTER, &u->master);
        if (status == SHARC_OK) {
            status = sharc_shard_unit_alloc(g, u, SHARC_SHARD_MEM_GRAD, &u->grad);
        }
        if (status != SHARC_OK) {
            break;
        }
        u->grad_zero = 1;
        dst = g->cuda ? host : u->master;
        memset(dst, 0, u->shard * sizeof(float));
        for (int i = u->first_param; i < u->first_param + u->nparams; i++) {
            const sharc_shard_param_info_t *p = &g->params[i];
            size_t a = SHARC_MAX(lo, p->offset), b = SHARC_MIN(hi, p->offset + p->count);

            if (in[i].init != NULL && a < b) {
                memcpy(dst + (a - lo), in[i].init + (a - p->offset), (b - a) * sizeof(float));
            }
        }
        if (g->cuda) {
            status = sharc_shard_copy(g, u->master, host, u->shard * sizeof(float));
        }
    }
    free(host);
    if (status == SHARC_OK && g->rdtype != SHARC_DTYPE_F32) {
        status = sharc_shard_alloc_shard(g, max_shard, 0, &g->scratch);
    }
    return status;
}

/* CUDA: the engine's streams and ordering event. */
static sharc_status_t sharc_shard_cuda_setup(sharc_shard_group_t *g)
{
    sharc_status_t status = sharc_gpu_stream_create(&g->estream);

    if (status == SHARC_OK) {
        status = sharc_gpu_stream_create(&g->tstream);
    }
    if (status == SHARC_OK) {
        status = sharc_gpu_event_create(0, &g->order_ev);
    }
    /* SHARC_CUDA_BACKEND=nccl and a communicator without it: fail now, not at a step */
    if (status == SHARC_OK) {
        status = g->shard_comm->cuda_failed;
    }
    if (status == SHARC_OK && g->replica_comm != NULL) {
        status = g->replica_comm->cuda_failed;
    }
    if (status == SHARC_OK) {
        status = g->reduce_comm->cuda_failed;
    }
    if (status == SHARC_OK) {
        g->kern = sharc_kern_cuda();
        g->step_ev = sharc_shard_stats_mark(g, g->stream); /* the first step starts here */
    }
    return status;
}

sharc_status_t sharc_shard_sync_replicas(sharc_shard_group_h g)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_sync_replicas");

    if (status == SHARC_OK && g->replica_comm != NULL) {
        status = sharc_shard_quiesce(g);  /* the caller's writes to the masters are done (CUDA),
                                           * and the host's updates */
        sharc_shard_offload_dirty_all(g); /* offloaded units: up again before their gathers */
    }
    for (int ui = 0; status == SHARC_OK && g->replica_comm != NULL && ui < g->nunits; ui++) {
        sharc_shard_unit_t *u = &g->units[ui];
        sharc_coll_args_t a = {.type = SHARC_COLL_BROADCAST,
                               .sendbuf = u->master,
                               .recvbuf = u->master,
                               .count = u->shard,
                               .dtype = SHARC_DTYPE_F32,
                               .stream = g->estream};

        status = sharc_coll_post(g->replica_comm->coll, &a, NULL); /* blocking */
    }
    return status;
}

static void sharc_shard_free(sharc_shard_group_t *g)
{
    sharc_shard_host_stop(g); /* the host's worker reads the shards */
    for (int ui = 0; g->units != NULL && ui < g->nunits; ui++) {
        sharc_shard_unit_t *u = &g->units[ui];

        if (g->off == NULL || g->off->units == NULL) { /* failed before placement: none */
            break;
        }
        sharc_shard_unit_free(g, u, SHARC_SHARD_MEM_MASTER, u->master);
        sharc_shard_unit_free(g, u, SHARC_SHARD_MEM_GRAD, u->grad);
        for (int s = 0; u->state != NULL && s < g->nstates; s++) {
            sharc_shard_unit_free(g, u, SHARC_SHARD_MEM_STATE, u->state[s]);
        }
    }
    for (int ui = 0; g->units != NULL && ui < g->nunits; ui++) {
        free(g->units[ui].state);
    }
    sharc_shard_adamw_free(g);
    sharc_shard_offload_free(g);
    if (g->shard_comm != NULL) { /* buffers may be registered with its backend */
        sharc_shard_buf_free_all(g);
    }
    for (int s = 0; s < g->nstates; s++) {
        free(g->state_names[s]);
    }
    free(g->state_names);
    sharc_shard_free_shard(g, g->scratch, 0);
    free(g->spans);
    sharc_shard_stats_free(g);
    free(g->inflight.req);
    free(g->inflight_last.req);
    free(g->retired);
    sharc_gpu_event_destroy(g->order_ev);
    sharc_gpu_stream_destroy(g->estream);
    sharc_gpu_stream_destroy(g->tstream);
    free(g->units);
    sharc_shard_sched_free(g);
    sharc_shard_layout_free(g->params, g->nparams);
    sharc_shard_auto_destroy(g); /* its agreement in flight completes first */
    sharc_shard_trace_close(g);  /* (a creation that failed: nothing written) */
    sharc_comm_destroy(g->replica_comm);
    sharc_shard_node_close(g);
    if (g->reduce_comm != g->shard_comm) {
        sharc_comm_destroy(g->reduce_comm);
    }
    sharc_comm_destroy(g->shard_comm);
    free(g);
}

/* The group's settings and layout, agreed by every rank (a rank that fails fails them all),
 * and the schedule's bound. */
static sharc_status_t sharc_shard_create_layout(sharc_shard_group_t *g,
                                                const sharc_shard_param_t *params, int nparams,
                                                const sharc_shard_params_t *cfg)
{
    sharc_status_t status;
    size_t bucket = 0;
    int num_units = 0;

    status = sharc_shard_settings(g, cfg, &bucket, &num_units);
    if (status == SHARC_OK) {
        status = sharc_shard_layout(params, nparams, num_units, bucket, g->pesize, g->shard_size,
                                    &g->params, &g->units, &g->nunits);
        g->nparams = (status == SHARC_OK) ? nparams : 0;
    }
    if (status == SHARC_OK) {
        status = sharc_shard_trace_open(g); /* rank 0 cannot write the file: every rank fails */
    }
    status = sharc_shard_agree(g, status);
    if (status != SHARC_OK) {
        return status;
    }
    sharc_shard_trace_origin(g); /* the ranks left the exchange together */
    if (g->plan.max_unsharded == 0) {
        g->plan.max_unsharded = !g->plan.reshard_after_forward ? g->nunits
                                : g->prefetch_auto             ? SHARC_SHARD_AUTO_DEPTH_MAX + 1
                                                               : g->plan.prefetch + 1;
    }
    g->pool_max = g->plan.max_unsharded + 2;
    return sharc_shard_sched_init(g);
}

/*
 * The group's communicators, its own: its collectives, posted from inside progress calls
 * (HSDP's all-reduces), never interleave with the caller's on @p comm.
 */
static sharc_status_t sharc_shard_create_comms(sharc_shard_group_t *g, sharc_comm_h comm)
{
    sharc_status_t status;

    status = sharc_comm_split(comm, g->rank / g->shard_size, g->rank, &g->shard_comm);
    if (status == SHARC_OK) {
        g->metrics = sharc_coll_step_metrics(g->shard_comm->coll);
    }
    /* reductions through a queue of their own: collectives complete in posting order, so on
     * one queue a gather prefetched in backward would complete only after the reduce-scatter
     * posted before it. On the host another completion lane of the shard communicator: its
     * one progress thread drives both (a communicator of their own brings a second thread
     * per rank, and on a node with a core per rank the threads take the cores from the
     * callers and from each other: docs/perf.md). On CUDA a communicator of their own: its
     * NCCL stream runs them beside the gathers. */
    g->reduce_comm = g->shard_comm;
    if (status == SHARC_OK && sharc_shard_cfg(g->ctx->cfg)->reduce_queue) {
        if (g->cuda) {
            status = sharc_comm_split(g->shard_comm, 0, g->shard_rank, &g->reduce_comm);
        } else {
            g->reduce_lane = 1;
        }
    }
    if (status == SHARC_OK && g->prefetch_auto) {
        status = sharc_shard_auto_create(g);
    }
    if (status == SHARC_OK && g->replicas > 1) {
        status = sharc_comm_split(comm, g->shard_rank, g->rank, &g->replica_comm);
    }
    if (status == SHARC_OK && g->hpz) {
        status = sharc_shard_node_open(g);
    }
    return status;
}

/* The shards' memory on every rank (or on none), filled from @p params; HSDP's replicas
 * start from replica 0's. */
static sharc_status_t sharc_shard_create_memory(sharc_shard_group_t *g,
                                                const sharc_shard_param_t *params)
{
    sharc_shard_vote_t vote = {0}, *all;
    sharc_status_t status = SHARC_OK;

    if (g->cuda) {
        status = sharc_shard_cuda_setup(g);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_offload_setup(g); /* where each unit's shards go */
    }
    if (status != SHARC_OK) {
        return status;
    }
    all = calloc((size_t)g->size, sizeof(*all));
    /* every rank has its memory, or every rank fails: none waits in the broadcast */
    status = (all == NULL) ? SHARC_ERR_NOMEM
                           : sharc_shard_exchange(g, sharc_shard_alloc_shards(g, params), &vote,
                                                  all, "allocating the shards");
    free(all);
    return (status == SHARC_OK) ? sharc_shard_sync_replicas(g) : status;
}

sharc_status_t sharc_shard_create(sharc_comm_h comm, const sharc_shard_param_t *params, int nparams,
                                  const sharc_shard_params_t *cfg, sharc_shard_group_h *group_p)
{
    sharc_shard_group_t *g;
    sharc_status_t status;

    if (comm == NULL || group_p == NULL) {
        sharc_error("sharc_shard_create: %s is NULL", comm == NULL ? "comm" : "group_p");
        return SHARC_ERR_INVALID;
    }
    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return SHARC_ERR_NOMEM;
    }
    g->comm = comm;
    g->ctx = comm->ctx;
    g->rank = comm->rank;
    g->size = comm->size;
    g->kern = &sharc_kern_cpu_ops;
    status = sharc_shard_create_layout(g, params, nparams, cfg);
    if (status == SHARC_OK) {
        status = sharc_shard_create_comms(g, comm);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_create_memory(g, params);
    }
    if (status != SHARC_OK) {
        sharc_shard_free(g);
        return status;
    }
    g->step_t0 = sharc_time_now();
    sharc_info("%d parameters in %d units over %d ranks (%d per shard group, %d "
               "replicas); param %s over a %s wire, reduce %s over a %s wire, prefetch %d%s, at "
               "most %d unsharded; reductions %s",
               g->nparams, g->nunits, g->size, g->shard_size, g->replicas,
               sharc_dtype_name(g->pdtype), sharc_wire_name(g->pwire), sharc_dtype_name(g->rdtype),
               sharc_wire_name(g->rwire), g->plan.prefetch, g->prefetch_auto ? " (auto)" : "",
               g->plan.max_unsharded,
               (g->reduce_comm != g->shard_comm || g->reduce_lane) ? "on a queue of their own"
                                                                   : "behind gathers");
    *group_p = g;
    return SHARC_OK;
}

void sharc_shard_destroy(sharc_shard_group_h g)
{
    if (g == NULL) {
        return;
    }
    if (g->plan.alive > 0 || g->rhead != NULL) {
        sharc_shard_unit_t *r = g->rhead;
        int reducing = 0;

        for (; r != NULL; r = r->next_reduction) {
            reducing++;
        }
        if (reducing > 0 || g->failed == SHARC_OK) {
            sharc_warn("group destroyed with %d unit(s) unsharded and %d reduction(s) in "
                       "flight; completing them",
                       g->plan.alive, reducing);
        }
    }
    sharc_shard_drain(g);
    sharc_shard_trace_write(g);
    sharc_shard_free(g);
}

/* ---- queries ------------------------------------------------------------------------- */
