/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_layout.c: shard math. Checks the caller's parameter list, assigns parameters to
 * units (the caller's ids, or packing by bucket size), places each parameter in its unit,
 * and sizes the shards by the one padding rule, sharc_shard_count. No communication.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "shard/engine/shard_engine.h"

size_t sharc_shard_count(size_t count, int nranks)
{
    size_t per_rank = (count + (size_t)nranks - 1) / (size_t)nranks;

    return SHARC_MAX(SHARC_ALIGN_UP(per_rank, SHARC_SHARD_ALIGN), (size_t)SHARC_SHARD_ALIGN);
}

void sharc_shard_layout_free(sharc_shard_param_info_t *params, int nparams)
{
    if (params == NULL) {
        return;
    }
    for (int i = 0; i < nparams; i++) {
        free((char *)params[i].name);
    }
    free(params);
}

static int sharc_shard_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One parameter on its own: name, count, shape, unit id against the mode. */
static sharc_status_t sharc_shard_check_param(const sharc_shard_param_t *p, int i, int auto_units,
                                              int num_units)
{
    size_t product = 1;

    if (p->name == NULL || p->name[0] == '\0') {
        sharc_error("parameter %d has no name", i);
        return SHARC_ERR_INVALID;
    }
    if (p->count == 0) {
        sharc_error("parameter '%s' has no elements", p->name);
        return SHARC_ERR_INVALID;
    }
    if (p->count > SIZE_MAX / 64) {
        sharc_error("parameter '%s' has %zu elements, too many", p->name, p->count);
        return SHARC_ERR_INVALID;
    }
    if (p->ndim < 0 || p->ndim > SHARC_SHARD_MAX_DIMS) {
        sharc_error("parameter '%s' has %d dimensions (0 .. %d)", p->name, p->ndim,
                    SHARC_SHARD_MAX_DIMS);
        return SHARC_ERR_INVALID;
    }
    for (int d = 0; d < p->ndim; d++) {
        if (p->shape[d] == 0 || product > p->count / p->shape[d]) {
            product = 0;
            break;
        }
        product *= p->shape[d];
    }
    if (p->ndim > 0 && product != p->count) {
        sharc_error("parameter '%s': its shape does not multiply to its %zu elements", p->name,
                    p->count);
        return SHARC_ERR_INVALID;
    }
    if (auto_units != (p->unit == SHARC_SHARD_UNIT_AUTO)) {
        sharc_error("parameter '%s' %s while parameter 0 %s: give every parameter a unit id, "
                    "or none (SHARC_SHARD_UNIT_AUTO)",
                    p->name, auto_units ? "has a unit id" : "has no unit id",
                    auto_units ? "has none" : "has one");
        return SHARC_ERR_INVALID;
    }
    if (!auto_units && (p->unit < 0 || p->unit >= num_units)) {
        sharc_error("parameter '%s' is in unit %d, out of range (num_units %d)", p->name, p->unit,
                    num_units);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

/* Every name once. */
static sharc_status_t sharc_shard_check_names(const sharc_shard_param_t *in, int nparams)
{
    const char **names = malloc(sizeof(*names) * (size_t)nparams);
    sharc_status_t status = SHARC_OK;

    if (names == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < nparams; i++) {
        names[i] = in[i].name;
    }
    qsort(names, (size_t)nparams, sizeof(*names), sharc_shard_name_cmp);
    for (int i = 1; i < nparams; i++) {
        if (strcmp(names[i - 1], names[i]) == 0) {
            sharc_error("parameter '%s' is listed twice", names[i]);
            status = SHARC_ERR_INVALID;
            break;
        }
    }
    free(names);
    return status;
}

/*
 * Unit of each parameter, in an order that groups units: with caller ids, parameters keep
 * their list order within a unit; automatic packing closes a unit when the next parameter
 * would take it past bucket_bytes.
 */
static int sharc_shard_assign(const sharc_shard_param_t *in, int nparams, int auto_units,
                              size_t bucket_bytes, size_t pesize, int *unit_of)
{
    int nunits = 0;
    size_t bytes = 0;

    for (int i = 0; i < nparams; i++) {
        if (!auto_units) {
            unit_of[i] = in[i].unit;
            continue;
        }
        size_t need = SHARC_ALIGN_UP(in[i].count, SHARC_SHARD_ALIGN) * pesize;
        if (nunits == 0 || (bytes > 0 && bytes + need > bucket_bytes)) {
            nunits++;
            bytes = 0;
        }
        unit_of[i] = nunits - 1;
        bytes += need;
    }
    return nunits;
}

sharc_status_t sharc_shard_layout(const sharc_shard_param_t *in, int nparams, int num_units,
                                  size_t bucket_bytes, size_t pesize, int nranks,
                                  sharc_shard_param_info_t **params_p, sharc_shard_unit_t **units_p,
                                  int *nunits_p)
{
    sharc_shard_param_info_t *params = NULL;
    sharc_shard_unit_t *units = NULL;
    int *unit_of = NULL, auto_units, nunits;
    sharc_status_t status;

    if (in == NULL || nparams <= 0) {
        sharc_error("no parameters (%d)", nparams);
        return SHARC_ERR_INVALID;
    }
    auto_units = in[0].unit == SHARC_SHARD_UNIT_AUTO;
    if (!auto_units && num_units <= 0) {
        sharc_error("parameters carry unit ids but num_units is %d "
                    "(set SHARC_SHARD_PARAM_NUM_UNITS)",
                    num_units);
        return SHARC_ERR_INVALID;
    }
    for (int i = 0; i < nparams; i++) {
        status = sharc_shard_check_param(&in[i], i, auto_units, num_units);
        if (status != SHARC_OK) {
            return status;
        }
    }
    status = sharc_shard_check_names(in, nparams);
    if (status != SHARC_OK) {
        return status;
    }
    unit_of = malloc(sizeof(*unit_of) * (size_t)nparams);
    params = calloc((size_t)nparams, sizeof(*params));
    if (unit_of == NULL || params == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_free;
    }
    nunits = sharc_shard_assign(in, nparams, auto_units, bucket_bytes, pesize, unit_of);
    if (!auto_units) {
        nunits = num_units;
    }
    units = calloc((size_t)nunits, sizeof(*units));
    if (units == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_free;
    }
    /* each unit's parameters lie together in the list, so a unit is a range of indices and
     * every parameter keeps the caller's index */
    for (int i = 0; i < nparams; i++) {
        sharc_shard_unit_t *unit = &units[unit_of[i]];
        sharc_shard_param_info_t *p = &params[i];

        if (unit->nparams > 0 && unit->first_param + unit->nparams != i) {
            sharc_error("parameter '%s' of unit %d is apart from the unit's other "
                        "parameters: list each unit's parameters together",
                        in[i].name, unit_of[i]);
            status = SHARC_ERR_INVALID;
            goto err_free;
        }
        p->name = strdup(in[i].name);
        if (p->name == NULL) {
            status = SHARC_ERR_NOMEM;
            goto err_free;
        }
        if (unit->nparams++ == 0) {
            unit->first_param = i;
        }
        p->unit = unit_of[i];
        p->offset = SHARC_ALIGN_UP(unit->count, SHARC_SHARD_ALIGN);
        p->count = in[i].count;
        p->ndim = in[i].ndim;
        memcpy(p->shape, in[i].shape, sizeof(p->shape));
        unit->count = p->offset + p->count;
    }
    for (int u = 0; u < nunits; u++) {
        sharc_shard_unit_t *unit = &units[u];

        unit->id = u;
        if (unit->nparams == 0) {
            sharc_error("unit %d has no parameters (num_units %d)", u, nunits);
            status = SHARC_ERR_INVALID;
            goto err_free;
        }
        unit->shard = sharc_shard_count(unit->count, nranks);
        unit->padded = unit->shard * (size_t)nranks;
    }
    free(unit_of);
    *params_p = params;
    *units_p = units;
    *nunits_p = nunits;
    return SHARC_OK;

err_free:
    free(units);
    sharc_shard_layout_free(params, nparams);
    free(unit_of);
    return status;
}
