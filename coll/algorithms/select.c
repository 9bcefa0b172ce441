/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * select.c: which algorithm runs a collective on host memory: the one SHARC_<COLL>_ALGO
 * names, else the first fitting rule of SHARC_TUNE_FILE (tune.c), else a built-in data table
 * by size and rank count.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <string.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "algorithms.h"
#include "tune.h"

/*
 * Algorithm selection: the first rule that fits the collective, its size (nccl-tests' size:
 * bytes of the larger side) and the rank count wins. SHARC_<COLL>_ALGO names one instead, and
 * a tune file's rules come before these.
 * The thresholds come from sharc-perf sweeps on shared memory (docs/perf.md): one-step
 * algorithms win while latency dominates, the pipelined ring once bandwidth does.
 */
typedef struct {
    sharc_coll_type_t type;
    size_t max_bytes; /* the rule applies up to this size, at rank counts the algorithm fits */
    const sharc_coll_algo_t *algo;
    int min_ranks; /* ... and from this many ranks (0: any) */
} sharc_coll_rule_t;

static const sharc_coll_rule_t sharc_coll_rules[] = {
    {SHARC_COLL_ALLGATHER, 64 << 10, &sharc_coll_allgather_direct, 0},
    {SHARC_COLL_ALLGATHER, 512 << 10, &sharc_coll_allgather_recursive_doubling, 0},
    {SHARC_COLL_ALLGATHER, SIZE_MAX, &sharc_coll_allgather_ring, 0},
    {SHARC_COLL_REDUCE_SCATTER, 64 << 10, &sharc_coll_reduce_scatter_direct, 0},
    {SHARC_COLL_REDUCE_SCATTER, 512 << 10, &sharc_coll_reduce_scatter_recursive_halving, 0},
    {SHARC_COLL_REDUCE_SCATTER, SIZE_MAX, &sharc_coll_reduce_scatter_ring, 0},
    /* two ranks: past one eager message the ring's halves stream, and each rank combines
     * what arrives while the other sends; recursive doubling exchanges the whole buffer and
     * then writes into it while the peer's copy of it is in the peer's cache (64 KiB: 30 us
     * against the ring's 16) */
    {SHARC_COLL_ALLREDUCE, 4 << 10, &sharc_coll_allreduce_recursive_doubling, 0},
    {SHARC_COLL_ALLREDUCE, 64 << 10, &sharc_coll_allreduce_recursive_doubling, 3},
    {SHARC_COLL_ALLREDUCE, SIZE_MAX, &sharc_coll_allreduce_ring, 0},
    {SHARC_COLL_BROADCAST, 64 << 10, &sharc_coll_broadcast_binomial, 0},
    {SHARC_COLL_BROADCAST, SIZE_MAX, &sharc_coll_broadcast_chain, 0},
    /* alltoall: equal up to ~256 KiB on 2 and 4 ranks; above, pairwise's few messages in
     * flight (and, in place, its few blocks of scratch) win */
    {SHARC_COLL_ALLTOALL, 256 << 10, &sharc_coll_alltoall_direct, 0},
    {SHARC_COLL_ALLTOALL, SIZE_MAX, &sharc_coll_alltoall_pairwise, 0},
    {SHARC_COLL_BARRIER, SIZE_MAX, &sharc_coll_barrier_dissemination, 0},
    /* one algorithm each, no knob: a root's messages, or blocks of any size */
    {SHARC_COLL_REDUCE, SIZE_MAX, &sharc_coll_reduce_binomial, 0},
    {SHARC_COLL_GATHER, SIZE_MAX, &sharc_coll_gather_direct, 0},
    {SHARC_COLL_SCATTER, SIZE_MAX, &sharc_coll_scatter_direct, 0},
    {SHARC_COLL_ALLGATHERV, SIZE_MAX, &sharc_coll_allgatherv_direct, 0},
    {SHARC_COLL_REDUCE_SCATTERV, SIZE_MAX, &sharc_coll_reduce_scatterv_direct, 0},
    {SHARC_COLL_ALLTOALLV, SIZE_MAX, &sharc_coll_alltoallv_direct, 0},
};

/* sharc_coll_cfg_t.algo is indexed by sharc_coll_type_t: every collective before the barrier */
_Static_assert(SHARC_ARRAY_SIZE(((sharc_coll_cfg_t *)0)->algo) == SHARC_COLL_BARRIER,
               "SHARC_<COLL>_ALGO knobs and sharc_coll_type_t disagree");

size_t sharc_coll_size(int nranks, const sharc_coll_args_t *a)
{
    size_t bytes = a->count * sharc_dtype_size(a->dtype);

    return (a->type == SHARC_COLL_ALLGATHER || a->type == SHARC_COLL_REDUCE_SCATTER ||
            a->type == SHARC_COLL_ALLTOALL || a->type == SHARC_COLL_GATHER ||
            a->type == SHARC_COLL_SCATTER)
               ? bytes * (size_t)nranks
               : bytes; /* (the uneven ones: count is the sum of the blocks) */
}

/*
 * SHARC_<COLL>_ALGO first, then the tune file's rules (coll/algorithms/tune.c), then the built-in
 * table. Each choice is logged at debug level with where it came from; the line is
 * formatted only when debug logging of coll is on.
 */
sharc_status_t sharc_coll_select(sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                 const sharc_coll_algo_t **algo_p)
{
    int forced = 0;
    size_t size = sharc_coll_size(cc->size, a);
    const char *coll = sharc_coll_name(a->type);
    const sharc_coll_tune_rule_t *tuned;
    const sharc_coll_algo_t *algo;

    if (a->type < SHARC_COLL_BARRIER) { /* the collectives with a SHARC_<COLL>_ALGO knob */
        forced = cc->cfg->algo[a->type];
    }
    if (forced != 0) { /* the knob's values: "auto", then the table's algorithms */
        algo = sharc_coll_algo_at(a->type, forced - 1);
        if (algo != NULL) {
            if (!sharc_coll_algo_fits(algo, cc->size)) {
                sharc_error("%s: algorithm %s needs a power-of-two rank count, not %d", coll,
                            algo->info.name, cc->size);
                return SHARC_ERR_UNSUPPORTED;
            }
            sharc_debug("%s %zu B on %d ranks: %s (%s)", coll, size, cc->size, algo->info.name,
                        sharc_coll_algo_knob(a->type));
            *algo_p = algo;
            return SHARC_OK;
        }
    }
    tuned = sharc_coll_tune_lookup(cc->tune, a->type, cc->size, size);
    if (tuned != NULL) {
        sharc_debug("%s %zu B on %d ranks: %s (tune file %s line %zu)", coll, size, cc->size,
                    tuned->algo->info.name, cc->tune->path, tuned->line);
        *algo_p = tuned->algo;
        return SHARC_OK;
    }
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_coll_rules); i++) {
        const sharc_coll_rule_t *rule = &sharc_coll_rules[i];

        if (rule->type == a->type && size <= rule->max_bytes && cc->size >= rule->min_ranks &&
            sharc_coll_algo_fits(rule->algo, cc->size)) {
            sharc_debug("%s %zu B on %d ranks: %s (built-in rule)", coll, size, cc->size,
                        rule->algo->info.name);
            *algo_p = rule->algo;
            return SHARC_OK;
        }
    }
    return SHARC_ERR_UNSUPPORTED; /* unreachable: every collective ends with a catch-all */
}
