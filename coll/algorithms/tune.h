/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune.h: SHARC_TUNE_FILE's rules as algorithm selection reads them. The context loads them
 * once (sharc_coll_tune_load, declared in api.h); the format is described in tune.c. A rule
 * whose algorithm does not fit a rank count (sharc_coll_algo_fits) is passed over there.
 */
#ifndef SHARC_COLL_TUNE_H
#define SHARC_COLL_TUNE_H

#include <stddef.h>

#include "algorithms.h"

#define SHARC_COLL_TUNE_MAX_RULES 4096
#define SHARC_COLL_TUNE_MAX_LINE  1024 /* characters of a line, without its newline */

typedef struct {
    sharc_coll_type_t type;
    int nranks;                  /* 0: any rank count */
    size_t min_bytes, max_bytes; /* inclusive; sizes as sharc_coll_select measures them */
    const sharc_coll_algo_t *algo;
    size_t line; /* where the rule is in the file, for the selection log */
} sharc_coll_tune_rule_t;

struct sharc_coll_tune {
    char *path;
    size_t nrules;
    sharc_coll_tune_rule_t *rules; /* [nrules]: by collective, in file order within one */
    size_t first[SHARC_COLL_BARRIER], count[SHARC_COLL_BARRIER]; /* each collective's rules */
};

/*
 * The first rule of @p tune (NULL: none loaded) for collective @p type that fits @p nranks
 * and @p bytes, or NULL to fall through to the built-in table.
 */
SHARC_HIDDEN const sharc_coll_tune_rule_t *sharc_coll_tune_lookup(const sharc_coll_tune_t *tune,
                                                                  sharc_coll_type_t type,
                                                                  int nranks, size_t bytes);

#endif
