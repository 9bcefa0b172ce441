/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_offload.c: where a group's f32 state lives (sharc_shard_offload_t) and how it moves.
 * Placement: a host group's units are host units; a CUDA group keeps its units on the device,
 * or offloads them all (offload_fraction 1) or all but the lowest ids (Twin-Flow), to
 * page-locked host memory (host) or managed memory preferring the host (managed, which falls
 * back to host where the device cannot share it). Movement, for an offloaded unit: its
 * reduced gradients go down on the download stream into a slot the host worker adds to the
 * shard (managed: added on the device, straight into the managed shard); its parameters go
 * up on the upload stream into a param-dtype shard on the device, which gathers send, after
 * every update and whenever the master may have changed (creation, load, a caller's write).
 * Here: the settings, the placement, each unit's shards in memory (masters, gradients and
 * the optimizer states sharc_shard_state_add adds) and the bytes held; the movement itself
 * is shard_offload_move.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/engine/shard_engine.h"
#include "shard/offload/offload.h"

/* ---- settings and placement ------------------------------------------------------------ */

/* The host's threads: the knob, or the CPUs this rank may run on shared among its node's
 * ranks. */
static int sharc_shard_offload_threads(const sharc_shard_group_t *g, int knob)
{
    cpu_set_t set;
    int cpus = 1, local = g->comm->local_size > 0 ? g->comm->local_size : 1;

    if (knob > 0) {
        return knob;
    }
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        cpus = CPU_COUNT(&set);
    }
    return cpus / local > 0 ? cpus / local : 1;
}

sharc_status_t sharc_shard_offload_settings(sharc_shard_group_t *g, const sharc_shard_params_t *cfg)
{
    const sharc_shard_cfg_t *k = sharc_shard_cfg(g->ctx->cfg);
    unsigned mask = (cfg != NULL) ? cfg->field_mask : 0;
    sharc_shard_off_t *off = calloc(1, sizeof(*off));
    char *end = NULL;

    if (off == NULL) {
        return SHARC_ERR_NOMEM;
    }
    g->off = off;
    /* the knob is for CUDA groups (a host group's state is in host memory already) */
    off->mode = (mask & SHARC_SHARD_PARAM_OFFLOAD) ? cfg->offload
                : g->cuda                          ? (sharc_shard_offload_t)k->offload
                                                   : SHARC_SHARD_OFFLOAD_NONE;
    if ((unsigned)off->mode > SHARC_SHARD_OFFLOAD_MANAGED) {
        sharc_error("offload must be SHARC_SHARD_OFFLOAD_NONE, _HOST or _MANAGED, not %d",
                    (int)off->mode);
        return SHARC_ERR_INVALID;
    }
    if (off->mode != SHARC_SHARD_OFFLOAD_NONE && !g->cuda) {
        sharc_error("offload %s is for groups on CUDA (memtype SHARC_MEMTYPE_CUDA): a host "
                    "group's state is in host memory already",
                    sharc_shard_offload_names[off->mode]);
        return SHARC_ERR_INVALID;
    }
    if (mask & SHARC_SHARD_PARAM_OFFLOAD_FRACTION) {
        off->fraction = cfg->offload_fraction;
    } else {
        off->fraction = strtod(k->offload_fraction, &end);
        if (end == k->offload_fraction || *end != '\0') {
            off->fraction = -1.0;
        }
    }
    if (!(off->fraction > 0.0 && off->fraction <= 1.0)) {
        if (mask & SHARC_SHARD_PARAM_OFFLOAD_FRACTION) {
            sharc_error("offload_fraction must be a number in (0, 1], not %g", off->fraction);
        } else {
            sharc_error("SHARC_SHARD_OFFLOAD_FRACTION must be a number in (0, 1], not '%s'",
                        k->offload_fraction);
        }
        return SHARC_ERR_INVALID;
    }
    off->threads = sharc_shard_offload_threads(g, k->offload_threads);
    return SHARC_OK;
}

/* Where each unit lives: the lowest ids on the device up to 1 - fraction of the elements. */
static void sharc_shard_offload_place(sharc_shard_group_t *g, sharc_memtype_t where)
{
    size_t total = 0, kept = 0;

    for (int i = 0; i < g->nunits; i++) {
        total += g->units[i].count;
    }
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_ounit_t *ou = &g->off->units[i];
        size_t n = g->units[i].count;

        if (!g->cuda) {
            ou->where = SHARC_MEMTYPE_HOST;
        } else if (g->off->mode == SHARC_SHARD_OFFLOAD_NONE ||
                   (double)(kept + n) <= (1.0 - g->off->fraction) * (double)total) {
            ou->where = SHARC_MEMTYPE_CUDA;
            kept += (g->off->mode == SHARC_SHARD_OFFLOAD_NONE) ? 0 : n;
        } else {
            ou->where = where;
            kept = total; /* the rest goes: device units stay a prefix */
        }
    }
}

/* Managed memory where the device can share it with the host, else host (logged). */
static void sharc_shard_offload_check_managed(sharc_shard_group_t *g)
{
    char why[256];

    if (g->off->mode == SHARC_SHARD_OFFLOAD_MANAGED &&
        sharc_gpu_managed_check(why, sizeof(why)) != SHARC_OK) {
        sharc_warn("offload managed: %s; running as offload host (page-locked host memory)", why);
        g->off->mode = SHARC_SHARD_OFFLOAD_HOST;
    }
}

/* An offloaded unit's device side: its param-dtype shard and its copies' events. */
static sharc_status_t sharc_shard_offload_unit_setup(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_shard_ounit_t *ou = &g->off->units[u->id];
    sharc_status_t status = sharc_gpu_event_create(0, &ou->land_ev);

    if (status == SHARC_OK && ou->where == SHARC_MEMTYPE_HOST) {
        status = sharc_gpu_alloc(u->shard * g->pesize, &ou->dparam);
        if (status == SHARC_OK) {
            status = sharc_gpu_event_create(0, &ou->up_ev);
        }
        ou->dirty = 1; /* the masters get their values next: uploaded before the first gather */
    }
    return status;
}

sharc_status_t sharc_shard_offload_setup(sharc_shard_group_t *g)
{
    sharc_shard_off_t *off = g->off;
    int pinned = 0, managed = 0;
    sharc_status_t status = SHARC_OK;

    off->units = calloc((size_t)g->nunits, sizeof(*off->units));
    if (off->units == NULL) {
        return SHARC_ERR_NOMEM;
    }
    sharc_shard_offload_check_managed(g);
    sharc_shard_offload_place(g, off->mode == SHARC_SHARD_OFFLOAD_MANAGED
                                     ? SHARC_MEMTYPE_CUDA_MANAGED
                                     : SHARC_MEMTYPE_HOST);
    for (int i = 0; i < g->nunits; i++) {
        off->max_shard = SHARC_MAX(off->max_shard, g->units[i].shard);
        pinned += sharc_shard_pinned_unit(g, &g->units[i]);
        managed += off->units[i].where == SHARC_MEMTYPE_CUDA_MANAGED;
    }
    if (pinned > 0) {
        status = sharc_gpu_stream_create(&off->down);
        if (status == SHARC_OK) {
            status = sharc_gpu_stream_create(&off->up);
        }
    }
    for (int i = 0; status == SHARC_OK && (pinned || managed) && i < g->nunits; i++) {
        if (sharc_shard_host_unit(g, &g->units[i])) {
            status = sharc_shard_offload_unit_setup(g, &g->units[i]);
        }
    }
    if (status == SHARC_OK && (pinned || managed)) {
        status = sharc_shard_host_start(g);
    }
    if (status == SHARC_OK && off->mode != SHARC_SHARD_OFFLOAD_NONE) {
        sharc_info("offload %s: %d of %d units on the host (%d on the GPU), %d host threads",
                   sharc_shard_offload_names[off->mode], pinned + managed, g->nunits,
                   g->nunits - pinned - managed, off->threads);
    }
    return status;
}

void sharc_shard_offload_free(sharc_shard_group_t *g)
{
    sharc_shard_off_t *off = g->off;

    if (off == NULL) {
        return;
    }
    sharc_shard_host_stop(g);
    for (int i = 0; off->units != NULL && i < g->nunits; i++) {
        sharc_gpu_free(off->units[i].dparam);
        sharc_gpu_event_destroy(off->units[i].up_ev);
        sharc_gpu_event_destroy(off->units[i].land_ev);
    }
    sharc_gpu_stream_destroy(off->down);
    sharc_gpu_stream_destroy(off->up);
    free(off->units);
    free(off);
    g->off = NULL;
}

/* ---- memory ------------------------------------------------------------------------------ */

/* Managed memory that prefers the host and that the device maps, zeroed on the host. */
static sharc_status_t sharc_shard_managed_alloc(size_t bytes, void **ptr_p)
{
    void *p = NULL;
    sharc_status_t status = sharc_gpu_managed_alloc(bytes, &p);

    if (status == SHARC_OK) {
        status = sharc_gpu_mem_advise(p, bytes, SHARC_GPU_ADVISE_PREFER_HOST);
    }
    if (status == SHARC_OK) {
        status = sharc_gpu_mem_advise(p, bytes, SHARC_GPU_ADVISE_ACCESSED_BY_DEVICE);
    }
    if (status != SHARC_OK) {
        sharc_gpu_free(p);
        return status;
    }
    memset(p, 0, bytes);
    *ptr_p = p;
    return SHARC_OK;
}

sharc_status_t sharc_shard_unit_alloc(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                      sharc_shard_mem_t kind, float **ptr_p)
{
    size_t bytes = u->shard * sizeof(float);
    void *p = NULL;
    sharc_status_t status;

    if (!g->cuda || !sharc_shard_host_unit(g, u)) { /* the group's own memory */
        return sharc_shard_alloc_shard(g, u->shard, kind == SHARC_SHARD_MEM_MASTER, ptr_p);
    }
    switch (sharc_shard_unit_where(g, u)) {
    case SHARC_MEMTYPE_HOST:
        /* what the copies move is page-locked; the optimizer's states never leave the host
         * (pinning them would only take memory the system cannot page) */
        if (kind == SHARC_SHARD_MEM_STATE) {
            p = calloc(u->shard, sizeof(float));
            status = (p == NULL) ? SHARC_ERR_NOMEM : SHARC_OK;
        } else if ((status = sharc_gpu_host_alloc(bytes, &p)) == SHARC_OK) {
            memset(p, 0, bytes);
        }
        break;
    default: status = sharc_shard_managed_alloc(bytes, &p); break;
    }
    if (status == SHARC_OK) {
        *ptr_p = p;
    }
    return status;
}

void sharc_shard_unit_free(sharc_shard_group_t *g, sharc_shard_unit_t *u, sharc_shard_mem_t kind,
                           float *ptr)
{
    if (!g->cuda || !sharc_shard_host_unit(g, u)) {
        sharc_shard_free_shard(g, ptr, kind == SHARC_SHARD_MEM_MASTER);
    } else if (sharc_shard_unit_where(g, u) == SHARC_MEMTYPE_CUDA_MANAGED) {
        sharc_gpu_free(ptr);
    } else if (kind == SHARC_SHARD_MEM_STATE) {
        free(ptr);
    } else {
        sharc_gpu_host_free(ptr);
    }
}

/* sharc/shard.h: a new optimizer state, a shard of it for every unit where its placement says */
sharc_status_t sharc_shard_state_add(sharc_shard_group_h g, const char *name, int *index_p)
{
    char **names, *copy;

    if (g == NULL || name == NULL || name[0] == '\0' || strcmp(name, "master") == 0) {
        sharc_error("sharc_shard_state_add: %s", g == NULL ? "group is NULL"
                                                 : (name == NULL || name[0] == '\0')
                                                     ? "the state needs a name"
                                                     : "'master' is the master weights' name");
        return SHARC_ERR_INVALID;
    }
    for (int s = 0; s < g->nstates; s++) {
        if (strcmp(g->state_names[s], name) == 0) {
            sharc_error("sharc_shard_state_add: state '%s' exists already", name);
            return SHARC_ERR_INVALID;
        }
    }
    names = realloc(g->state_names, sizeof(*names) * (size_t)(g->nstates + 1));
    if (names == NULL) {
        return SHARC_ERR_NOMEM;
    }
    g->state_names = names;
    copy = strdup(name);
    if (copy == NULL) {
        return SHARC_ERR_NOMEM;
    }
    /* every unit gets the new state before the count goes up, so a failure changes nothing */
    for (int ui = 0; ui < g->nunits; ui++) {
        sharc_shard_unit_t *u = &g->units[ui];
        float **states = realloc(u->state, sizeof(*states) * (size_t)(g->nstates + 1));

        if (states != NULL) {
            u->state = states;
            states[g->nstates] = NULL;
            sharc_shard_unit_alloc(g, u, SHARC_SHARD_MEM_STATE, &states[g->nstates]);
        }
        if (states == NULL || states[g->nstates] == NULL) {
            for (int vi = 0; vi < ui; vi++) {
                sharc_shard_unit_free(g, &g->units[vi], SHARC_SHARD_MEM_STATE,
                                      g->units[vi].state[g->nstates]);
            }
            free(copy);
            return SHARC_ERR_NOMEM;
        }
    }
    g->state_names[g->nstates] = copy;
    if (index_p != NULL) {
        *index_p = g->nstates;
    }
    g->nstates++;
    return SHARC_OK;
}

void sharc_shard_offload_bytes(const sharc_shard_group_t *g, size_t *device_p, size_t *host_p)
{
    size_t dev = 0, host = 0;

    for (int i = 0; i < g->nunits; i++) {
        const sharc_shard_unit_t *u = &g->units[i];
        size_t shards = u->shard * sizeof(float) * (size_t)(2 + g->nstates);

        if (g->cuda && !sharc_shard_host_unit(g, u)) {
            dev += shards;
        } else {
            host += shards;
        }
        dev +=
            (g->off->units != NULL && g->off->units[i].dparam != NULL) ? u->shard * g->pesize : 0;
    }
    for (int i = 0; i < g->nbufs; i++) {
        *(g->cuda ? &dev : &host) += g->bufs[i].bytes;
    }
    if (g->scratch != NULL) {
        *(g->cuda ? &dev : &host) += g->off->max_shard * sizeof(float);
    }
    if (g->adamw != NULL && g->adamw->dsum != NULL) {
        dev += (1 + SHARC_KERN_SUMSQ_SCRATCH) * sizeof(double);
    }
    *device_p = dev;
    *host_p = host + sharc_shard_host_slot_bytes(g);
}
