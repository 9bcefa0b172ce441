/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune.c: SHARC_TUNE_FILE, a per-size algorithm table written by `sharc-perf tune` (or by
 * hand), read once when a context is created. It only changes which host algorithm runs a
 * collective: SHARC_<COLL>_ALGO still overrides it, and the built-in table (select.c) still
 * covers whatever it leaves out. The format, one rule a line:
 *
 *   # sharc tune file v1
 *   # collective    ranks  min_bytes  max_bytes             algorithm
 *   allgather       2      0          65535                 direct
 *   allgather       2      65536      1048575               ring
 *   reduce_scatter  *      0          18446744073709551615  ring
 *
 * - '#' starts a comment that runs to the end of the line; blank lines are skipped. The
 *   tuner's header lines (version, fingerprint) are comments to the loader.
 * - Five fields separated by blanks: the collective (allgather, reduce_scatter, allreduce,
 *   broadcast or alltoall); the rank count the rule is for (a positive integer, or * for
 *   any); the smallest and the largest size it is for, inclusive, in decimal bytes (min <=
 *   max; nccl-tests' size, as select.c measures it: bytes of the larger side, all blocks of
 *   an alltoall); and an algorithm SHARC_<COLL>_ALGO accepts for that collective, not auto.
 *   Names are matched without regard to case, as the knobs match them.
 * - The first rule that fits the collective, rank count and size wins. A rule whose
 *   algorithm needs a power-of-two rank count is passed over at other counts.
 * - At most SHARC_COLL_TUNE_MAX_RULES rules, SHARC_COLL_TUNE_MAX_LINE characters a line.
 * Anything else (a file that cannot be read, an unknown name, a bad or overflowing number,
 * min > max, a missing or an extra field) fails context creation with SHARC_ERR_INVALID and
 * one message naming the file, the line and the cause: a table is applied whole or not at all.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../base/config_int.h"
#include "../../base/log.h"
#include "../../base/util.h"
#include "tune.h"

#define SHARC_COLL_TUNE_FIELDS 5

/*
 * Field @p what of line @p lineno: decimal bytes, digits only (no sign, suffix or blanks), up
 * to SIZE_MAX. 0, or -1 (logged).
 */
static int sharc_coll_tune_parse_bytes(const char *path, size_t lineno, const char *what,
                                       const char *s, size_t *out_p)
{
    unsigned long long v = 0;
    char *end = NULL;

    if (isdigit((unsigned char)*s)) {
        errno = 0;
        v = strtoull(s, &end, 10);
    }
    if (end == NULL || errno != 0 || *end != '\0' || v > SIZE_MAX) {
        sharc_error("tune file %s line %zu: %s '%s' is not a decimal byte count from 0 to %zu",
                    path, lineno, what, s, (size_t)SIZE_MAX);
        return -1;
    }
    *out_p = (size_t)v;
    return 0;
}

/* "a, b or c": the algorithms of @p type, as the error of an unknown name lists them. */
static const char *sharc_coll_tune_list(sharc_coll_type_t type, char *buf, size_t size)
{
    const sharc_coll_algo_t *algo;
    size_t len = 0;

    buf[0] = '\0';
    for (int i = 0; (algo = sharc_coll_algo_at(type, i)) != NULL; i++) {
        const char *sep = (i == 0) ? "" : (sharc_coll_algo_at(type, i + 1) == NULL) ? " or " : ", ";
        int ret = snprintf(buf + len, size - len, "%s%s", sep, algo->info.name);

        if (ret < 0 || (size_t)ret >= size - len) {
            break;
        }
        len += (size_t)ret;
    }
    return buf;
}

/* The collective a tune file names (allgather .. alltoall; the barrier has no algorithms), or
 * -1. */
static int sharc_coll_tune_type(const char *name)
{
    for (int type = 0; type < SHARC_COLL_BARRIER; type++) {
        if (strcasecmp(sharc_coll_name((sharc_coll_type_t)type), name) == 0) {
            return type;
        }
    }
    return -1;
}

/*
 * Read line @p lineno into @p buf (of SHARC_COLL_TUNE_MAX_LINE + 1 bytes), without its
 * newline: 1 a line, 0 the end of the file, -1 a fault (logged). getc rather than fgets, so
 * that a NUL byte is seen rather than silently cutting the line short.
 */
static int sharc_coll_tune_read_line(FILE *f, const char *path, size_t lineno, char *buf)
{
    size_t len = 0;
    int c;

    while ((c = getc(f)) != EOF && c != '\n') {
        if (c == '\0') {
            sharc_error("tune file %s line %zu: a NUL byte (is it a text file?)", path, lineno);
            return -1;
        }
        if (len == SHARC_COLL_TUNE_MAX_LINE) {
            sharc_error("tune file %s line %zu: longer than %d characters", path, lineno,
                        SHARC_COLL_TUNE_MAX_LINE);
            return -1;
        }
        buf[len++] = (char)c;
    }
    if (ferror(f)) {
        sharc_error("tune file %s line %zu: cannot read: %m", path, lineno);
        return -1;
    }
    buf[len] = '\0';
    return (c == EOF && len == 0) ? 0 : 1;
}

/* Line @p lineno, @p text, into @p rule: 1 a rule, 0 none (blank, comment), -1 a fault. */
static int sharc_coll_tune_parse_line(const char *path, size_t lineno, char *text,
                                      sharc_coll_tune_rule_t *rule)
{
    static const char *const fields[SHARC_COLL_TUNE_FIELDS] = {
        "collective", "rank count", "min_bytes", "max_bytes", "algorithm"};
    char *field[SHARC_COLL_TUNE_FIELDS + 1], *save = NULL, *hash = strchr(text, '#'), buf[256];
    int nfields = 0, type;
    long nranks = 0;

    if (hash != NULL) {
        *hash = '\0';
    }
    for (char *tok = strtok_r(text, " \t\r\v\f", &save);
         tok != NULL && nfields <= SHARC_COLL_TUNE_FIELDS;
         tok = strtok_r(NULL, " \t\r\v\f", &save)) {
        field[nfields++] = tok;
    }
    if (nfields == 0) {
        return 0;
    }
    if (nfields > SHARC_COLL_TUNE_FIELDS) {
        sharc_error("tune file %s line %zu: unexpected field '%s' after the algorithm", path,
                    lineno, field[SHARC_COLL_TUNE_FIELDS]);
        return -1;
    }
    if (nfields < SHARC_COLL_TUNE_FIELDS) {
        sharc_error("tune file %s line %zu: %d of %d fields (collective, rank count, "
                    "min_bytes, max_bytes, algorithm): no %s",
                    path, lineno, nfields, SHARC_COLL_TUNE_FIELDS, fields[nfields]);
        return -1;
    }

    type = sharc_coll_tune_type(field[0]);
    if (type < 0) {
        sharc_error("tune file %s line %zu: unknown collective '%s' (expected allgather, "
                    "reduce_scatter, allreduce, broadcast or alltoall)",
                    path, lineno, field[0]);
        return -1;
    }
    if (strcmp(field[1], "*") != 0 && sharc_cfg_parse_long(field[1], 1, INT_MAX, &nranks) != 0) {
        sharc_error("tune file %s line %zu: rank count '%s' is not a positive integer or *", path,
                    lineno, field[1]);
        return -1;
    }
    if (sharc_coll_tune_parse_bytes(path, lineno, "min_bytes", field[2], &rule->min_bytes) != 0 ||
        sharc_coll_tune_parse_bytes(path, lineno, "max_bytes", field[3], &rule->max_bytes) != 0) {
        return -1;
    }
    if (rule->min_bytes > rule->max_bytes) {
        sharc_error("tune file %s line %zu: min_bytes %zu is above max_bytes %zu", path, lineno,
                    rule->min_bytes, rule->max_bytes);
        return -1;
    }
    rule->algo = sharc_coll_algo_find((sharc_coll_type_t)type, field[4]);
    if (rule->algo == NULL) {
        sharc_error("tune file %s line %zu: %s has no algorithm '%s' (expected %s)", path, lineno,
                    sharc_coll_name((sharc_coll_type_t)type), field[4],
                    sharc_coll_tune_list((sharc_coll_type_t)type, buf, sizeof(buf)));
        return -1;
    }
    if (nranks != 0 && !sharc_coll_algo_fits(rule->algo, (int)nranks)) {
        sharc_warn("tune file %s line %zu: %s needs a power-of-two rank count: this rule for %ld "
                   "ranks never applies",
                   path, lineno, rule->algo->info.name, nranks);
    }
    rule->type = (sharc_coll_type_t)type;
    rule->nranks = (int)nranks;
    rule->line = lineno;
    return 1;
}

/* By collective, and by line within one (lines are unique: a stable order). */
static int sharc_coll_tune_cmp(const void *a, const void *b)
{
    const sharc_coll_tune_rule_t *x = a, *y = b;

    if (x->type != y->type) {
        return (x->type < y->type) ? -1 : 1;
    }
    return (x->line > y->line) - (x->line < y->line);
}

/* Group the rules by collective, so that a lookup reads only its own collective's. */
static void sharc_coll_tune_index(sharc_coll_tune_t *tune)
{
    if (tune->nrules > 0) {
        qsort(tune->rules, tune->nrules, sizeof(*tune->rules), sharc_coll_tune_cmp);
    }
    for (size_t i = tune->nrules; i-- > 0;) {
        tune->first[tune->rules[i].type] = i;
        tune->count[tune->rules[i].type]++;
    }
}

sharc_status_t sharc_coll_tune_load(const char *path, sharc_coll_tune_t **tune_p)
{
    char line[SHARC_COLL_TUNE_MAX_LINE + 1];
    sharc_status_t status = SHARC_ERR_INVALID;
    sharc_coll_tune_rule_t rule;
    sharc_coll_tune_t *tune;
    size_t lineno = 0, cap = 0;
    FILE *f;
    int ret;

    f = fopen(path, "r");
    if (f == NULL) {
        sharc_error("tune file %s (SHARC_TUNE_FILE): cannot open: %m", path);
        return SHARC_ERR_INVALID;
    }
    tune = calloc(1, sizeof(*tune));
    if (tune == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_close;
    }
    tune->path = strdup(path);
    if (tune->path == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_destroy;
    }
    while ((ret = sharc_coll_tune_read_line(f, path, lineno + 1, line)) > 0) {
        lineno++;
        ret = sharc_coll_tune_parse_line(path, lineno, line, &rule);
        if (ret < 0) {
            goto err_destroy;
        } else if (ret == 0) {
            continue;
        }
        if (tune->nrules == SHARC_COLL_TUNE_MAX_RULES) {
            sharc_error("tune file %s line %zu: more than %d rules", path, lineno,
                        SHARC_COLL_TUNE_MAX_RULES);
            goto err_destroy;
        }
        if (sharc_array_grow(&tune->rules, &cap, tune->nrules, sizeof(*tune->rules), 64) != 0) {
            status = SHARC_ERR_NOMEM;
            goto err_destroy;
        }
        tune->rules[tune->nrules++] = rule;
    }
    if (ret < 0) {
        goto err_destroy;
    }
    fclose(f);
    sharc_coll_tune_index(tune);
    sharc_info("tune file %s: %zu rules", path, tune->nrules);
    *tune_p = tune;
    return SHARC_OK;

err_destroy:
    sharc_coll_tune_destroy(tune);
err_close:
    fclose(f);
    return status;
}

void sharc_coll_tune_destroy(sharc_coll_tune_t *tune)
{
    if (tune == NULL) {
        return;
    }
    free(tune->rules);
    free(tune->path);
    free(tune);
}

const sharc_coll_tune_rule_t *sharc_coll_tune_lookup(const sharc_coll_tune_t *tune,
                                                     sharc_coll_type_t type, int nranks,
                                                     size_t bytes)
{
    if (tune == NULL || type >= SHARC_COLL_BARRIER) {
        return NULL;
    }
    for (size_t i = tune->first[type]; i < tune->first[type] + tune->count[type]; i++) {
        const sharc_coll_tune_rule_t *rule = &tune->rules[i];

        if ((rule->nranks == 0 || rule->nranks == nranks) && bytes >= rule->min_bytes &&
            bytes <= rule->max_bytes && sharc_coll_algo_fits(rule->algo, nranks)) {
            return rule;
        }
    }
    return NULL;
}
