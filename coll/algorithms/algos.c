/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * algos.c: the one table of host algorithms. Each algorithm's file defines its descriptor
 * (name, constraints, init, progress, finalize); this list orders them per collective as
 * SHARC_<COLL>_ALGO lists its values, and everything that names algorithms reads it: the
 * configuration table (sharc_coll_algo_choice), selection and tune files (find, fits), and
 * the public listing (sharc_coll_algo) that sharc-perf and bindings use.
 */
#include "config.h"

#include <strings.h>

#include "algorithms.h"

static const char *const sharc_coll_algo_knobs[SHARC_COLL_BARRIER] = {
    [SHARC_COLL_ALLGATHER] = "SHARC_ALLGATHER_ALGO",
    [SHARC_COLL_REDUCE_SCATTER] = "SHARC_REDUCE_SCATTER_ALGO",
    [SHARC_COLL_ALLREDUCE] = "SHARC_ALLREDUCE_ALGO",
    [SHARC_COLL_BROADCAST] = "SHARC_BROADCAST_ALGO",
    [SHARC_COLL_ALLTOALL] = "SHARC_ALLTOALL_ALGO",
};

/* Every host algorithm with a SHARC_<COLL>_ALGO name, by collective, in the knob's order.
 * The barrier's one algorithm has no knob and is not listed. */
static const sharc_coll_algo_t *const sharc_coll_algos[] = {
    &sharc_coll_allgather_ring,
    &sharc_coll_allgather_recursive_doubling,
    &sharc_coll_allgather_direct,
    &sharc_coll_reduce_scatter_ring,
    &sharc_coll_reduce_scatter_recursive_halving,
    &sharc_coll_reduce_scatter_direct,
    &sharc_coll_allreduce_ring,
    &sharc_coll_allreduce_recursive_doubling,
    &sharc_coll_broadcast_chain,
    &sharc_coll_broadcast_binomial,
    &sharc_coll_alltoall_direct,
    &sharc_coll_alltoall_pairwise,
};

const char *sharc_coll_algo_knob(sharc_coll_type_t type)
{
    return ((unsigned)type < SHARC_COLL_BARRIER) ? sharc_coll_algo_knobs[type] : "";
}

const sharc_coll_algo_t *sharc_coll_algo_at(sharc_coll_type_t type, int index)
{
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_coll_algos); i++) {
        if (sharc_coll_algos[i]->type == type && index-- == 0) {
            return sharc_coll_algos[i];
        }
    }
    return NULL;
}

const sharc_coll_algo_info_t *sharc_coll_algo(sharc_coll_type_t coll, int index)
{
    const sharc_coll_algo_t *algo = (index >= 0) ? sharc_coll_algo_at(coll, index) : NULL;

    return (algo != NULL) ? &algo->info : NULL;
}

const char *sharc_coll_algo_choice(int coll, int index)
{
    const sharc_coll_algo_t *algo;

    if (index == 0) {
        return "auto";
    }
    algo = (index > 0) ? sharc_coll_algo_at((sharc_coll_type_t)coll, index - 1) : NULL;
    return (algo != NULL) ? algo->info.name : NULL;
}

const sharc_coll_algo_t *sharc_coll_algo_find(sharc_coll_type_t type, const char *name)
{
    const sharc_coll_algo_t *algo;

    for (int i = 0; (algo = sharc_coll_algo_at(type, i)) != NULL; i++) {
        if (strcasecmp(algo->info.name, name) == 0) {
            return algo;
        }
    }
    return NULL;
}

int sharc_coll_algo_fits(const sharc_coll_algo_t *algo, int nranks)
{
    return !(algo->info.flags & SHARC_COLL_ALGO_POW2) || (nranks & (nranks - 1)) == 0;
}
