/*
 * select.c: which algorithm runs a collective on host memory: the one SHARC_<COLL>_ALGO
 * names, else the first fitting rule of SHARC_TUNE_FILE (tune.c), else a built-in data table
 * by size and rank count; and the collectives' names.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <string.h>

#include "../src/base/log.h"
#include "../src/base/util.h"
#include "coll.h"
#include "tune.h"

const char *const sharc_coll_names[SHARC_COLL_LAST] = {
    [SHARC_COLL_ALLGATHER] = "allgather", [SHARC_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [SHARC_COLL_ALLREDUCE] = "allreduce", [SHARC_COLL_BROADCAST] = "broadcast",
    [SHARC_COLL_ALLTOALL] = "alltoall",   [SHARC_COLL_BARRIER] = "barrier",
};

/*
 * Algorithm selection: the first rule that fits the collective, its size (nccl-tests' size:
 * bytes of the larger side) and the rank count wins. SHARC_<COLL>_ALGO names one instead, and
 * a tune file's rules come before these.
 * The thresholds come from sharc-perf sweeps on shared memory (docs/perf.md): one-step
 * algorithms win while latency dominates, the pipelined ring once bandwidth does.
 */
typedef struct {
    sharc_coll_type_t type;
    size_t max_bytes; /* the rule applies up to this size */
    int pow2;         /* only for power-of-two rank counts */
    const sharc_coll_algo_t *algo;
} sharc_coll_rule_t;

static const sharc_coll_rule_t sharc_coll_rules[] = {
    {SHARC_COLL_ALLGATHER, 64 << 10, 0, &sharc_coll_allgather_direct},
    {SHARC_COLL_ALLGATHER, 512 << 10, 1, &sharc_coll_allgather_recursive_doubling},
    {SHARC_COLL_ALLGATHER, SIZE_MAX, 0, &sharc_coll_allgather_ring},
    {SHARC_COLL_REDUCE_SCATTER, 64 << 10, 0, &sharc_coll_reduce_scatter_direct},
    {SHARC_COLL_REDUCE_SCATTER, 512 << 10, 1, &sharc_coll_reduce_scatter_recursive_halving},
    {SHARC_COLL_REDUCE_SCATTER, SIZE_MAX, 0, &sharc_coll_reduce_scatter_ring},
    {SHARC_COLL_ALLREDUCE, 64 << 10, 1, &sharc_coll_allreduce_recursive_doubling},
    {SHARC_COLL_ALLREDUCE, SIZE_MAX, 0, &sharc_coll_allreduce_ring},
    {SHARC_COLL_BROADCAST, 64 << 10, 0, &sharc_coll_broadcast_binomial},
    {SHARC_COLL_BROADCAST, SIZE_MAX, 0, &sharc_coll_broadcast_chain},
    /* alltoall: equal up to ~256 KiB on 2 and 4 ranks; above, pairwise's few messages in
     * flight (and, in place, its few blocks of scratch) win */
    {SHARC_COLL_ALLTOALL, 256 << 10, 0, &sharc_coll_alltoall_direct},
    {SHARC_COLL_ALLTOALL, SIZE_MAX, 0, &sharc_coll_alltoall_pairwise},
    {SHARC_COLL_BARRIER, SIZE_MAX, 0, &sharc_coll_barrier_dissemination},
};

/* Every algorithm, for SHARC_<COLL>_ALGO by name. */
static const struct {
    sharc_coll_type_t type;
    const sharc_coll_algo_t *algo;
    int pow2;
} sharc_coll_named[] = {
    {SHARC_COLL_ALLGATHER, &sharc_coll_allgather_ring, 0},
    {SHARC_COLL_ALLGATHER, &sharc_coll_allgather_recursive_doubling, 1},
    {SHARC_COLL_ALLGATHER, &sharc_coll_allgather_direct, 0},
    {SHARC_COLL_REDUCE_SCATTER, &sharc_coll_reduce_scatter_ring, 0},
    {SHARC_COLL_REDUCE_SCATTER, &sharc_coll_reduce_scatter_direct, 0},
    {SHARC_COLL_REDUCE_SCATTER, &sharc_coll_reduce_scatter_recursive_halving, 1},
    {SHARC_COLL_ALLREDUCE, &sharc_coll_allreduce_ring, 0},
    {SHARC_COLL_ALLREDUCE, &sharc_coll_allreduce_recursive_doubling, 1},
    {SHARC_COLL_BROADCAST, &sharc_coll_broadcast_chain, 0},
    {SHARC_COLL_BROADCAST, &sharc_coll_broadcast_binomial, 0},
    {SHARC_COLL_ALLTOALL, &sharc_coll_alltoall_direct, 0},
    {SHARC_COLL_ALLTOALL, &sharc_coll_alltoall_pairwise, 0},
};

const char *const *const sharc_coll_algo_names[SHARC_COLL_BARRIER] = {
    [SHARC_COLL_ALLGATHER] = sharc_cfg_allgather_algos,
    [SHARC_COLL_REDUCE_SCATTER] = sharc_cfg_reduce_scatter_algos,
    [SHARC_COLL_ALLREDUCE] = sharc_cfg_allreduce_algos,
    [SHARC_COLL_BROADCAST] = sharc_cfg_broadcast_algos,
    [SHARC_COLL_ALLTOALL] = sharc_cfg_alltoall_algos,
};

/* The knob of each collective, for the selection log. */
static const char *const sharc_coll_algo_knobs[SHARC_COLL_BARRIER] = {
    [SHARC_COLL_ALLGATHER] = "SHARC_ALLGATHER_ALGO",
    [SHARC_COLL_REDUCE_SCATTER] = "SHARC_REDUCE_SCATTER_ALGO",
    [SHARC_COLL_ALLREDUCE] = "SHARC_ALLREDUCE_ALGO",
    [SHARC_COLL_BROADCAST] = "SHARC_BROADCAST_ALGO",
    [SHARC_COLL_ALLTOALL] = "SHARC_ALLTOALL_ALGO",
};

/* sharc_cfg_t.algo is indexed by sharc_coll_type_t: every collective before the barrier */
_Static_assert(SHARC_ARRAY_SIZE(((sharc_cfg_t *)0)->algo) == SHARC_COLL_BARRIER,
               "SHARC_<COLL>_ALGO knobs and sharc_coll_type_t disagree");

/* nccl-tests' size of a collective: bytes of its larger side (alltoall: all blocks). */
static size_t sharc_coll_size(const sharc_comm_h comm, const sharc_coll_args_t *a)
{
    size_t bytes = a->count * sharc_dtype_size(a->dtype);

    return (a->type == SHARC_COLL_ALLGATHER || a->type == SHARC_COLL_REDUCE_SCATTER ||
            a->type == SHARC_COLL_ALLTOALL)
               ? bytes * (size_t)comm->size
               : bytes;
}

const sharc_coll_algo_t *sharc_coll_algo_find(sharc_coll_type_t type, const char *name, int *pow2_p)
{
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_coll_named); i++) {
        if (sharc_coll_named[i].type == type && strcmp(sharc_coll_named[i].algo->name, name) == 0) {
            *pow2_p = sharc_coll_named[i].pow2;
            return sharc_coll_named[i].algo;
        }
    }
    return NULL;
}

/*
 * SHARC_<COLL>_ALGO first, then the tune file's rules (coll/tune.c), then the built-in
 * table. Each choice is logged at debug level with where it came from; the line is
 * formatted only when debug logging of coll is on.
 */
sharc_status_t sharc_coll_select(sharc_comm_h comm, const sharc_coll_args_t *a,
                                 const sharc_coll_algo_t **algo_p)
{
    int pow2 = (comm->size & (comm->size - 1)) == 0, forced = 0, needs_pow2;
    size_t size = sharc_coll_size(comm, a);
    const sharc_coll_tune_rule_t *tuned;
    const sharc_coll_algo_t *algo;

    if (a->type < SHARC_COLL_BARRIER) { /* the collectives with a SHARC_<COLL>_ALGO knob */
        forced = comm->ctx->cfg->algo[a->type];
    }
    if (forced != 0) {
        const char *name = sharc_coll_algo_names[a->type][forced];

        algo = sharc_coll_algo_find(a->type, name, &needs_pow2);
        if (algo != NULL) {
            if (needs_pow2 && !pow2) {
                sharc_error("%s: algorithm %s needs a power-of-two rank count, not %d",
                            sharc_coll_names[a->type], name, comm->size);
                return SHARC_ERR_UNSUPPORTED;
            }
            sharc_debug("%s %zu B on %d ranks: %s (%s)", sharc_coll_names[a->type], size,
                        comm->size, algo->name, sharc_coll_algo_knobs[a->type]);
            *algo_p = algo;
            return SHARC_OK;
        }
    }
    tuned = sharc_coll_tune_lookup(comm->ctx->tune, a->type, comm->size, size);
    if (tuned != NULL) {
        sharc_debug("%s %zu B on %d ranks: %s (tune file %s line %zu)", sharc_coll_names[a->type],
                    size, comm->size, tuned->algo->name, comm->ctx->tune->path, tuned->line);
        *algo_p = tuned->algo;
        return SHARC_OK;
    }
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_coll_rules); i++) {
        const sharc_coll_rule_t *rule = &sharc_coll_rules[i];

        if (rule->type == a->type && size <= rule->max_bytes && (pow2 || !rule->pow2)) {
            sharc_debug("%s %zu B on %d ranks: %s (built-in rule)", sharc_coll_names[a->type], size,
                        comm->size, rule->algo->name);
            *algo_p = rule->algo;
            return SHARC_OK;
        }
    }
    return SHARC_ERR_UNSUPPORTED; /* unreachable: every collective ends with a catch-all */
}
