/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nodelist.c: expansion of Slurm host lists as found in SLURM_JOB_NODELIST:
 * "node[01-04,07],login1,rack[1-2]-n[1-3]". Zero padding follows the lower bound of each
 * range ("08-10" gives 08 09 10); several bracket groups in one name multiply out.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/util.h"
#include "boot.h"

typedef struct {
    char **hosts;
    size_t n, cap, max;
} sharc_hostvec_t;

static sharc_status_t sharc_hostvec_push(sharc_hostvec_t *v, const char *name, size_t len)
{
    char *copy;

    if (v->n == v->max) {
        return SHARC_ERR_INVALID;
    }
    if (sharc_array_grow(&v->hosts, &v->cap, v->n, sizeof(*v->hosts), 16) != 0) {
        return SHARC_ERR_NOMEM;
    }
    copy = strndup(name, len);
    if (copy == NULL) {
        return SHARC_ERR_NOMEM;
    }
    v->hosts[v->n++] = copy;
    return SHARC_OK;
}

static int sharc_all_digits(const char *s, size_t len)
{
    if (len == 0 || len > 18) {
        return 0; /* also keeps the numbers far from overflow */
    }
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}

/* Expand one host expression of @p len bytes (no top-level commas). */
static sharc_status_t sharc_expand_one(sharc_hostvec_t *v, const char *s, size_t len)
{
    const char *open = memchr(s, '[', len), *close, *p;
    sharc_status_t status;

    if (open == NULL) {
        if (memchr(s, ']', len) != NULL || len == 0) {
            return SHARC_ERR_INVALID;
        }
        return sharc_hostvec_push(v, s, len);
    }
    close = memchr(open, ']', len - (size_t)(open - s));
    if (close == NULL || memchr(open + 1, '[', (size_t)(close - open - 1)) != NULL ||
        close == open + 1) {
        return SHARC_ERR_INVALID;
    }
    /* For each comma-separated range inside the brackets. */
    for (p = open + 1; p < close;) {
        const char *end = memchr(p, ',', (size_t)(close - p)), *dash;
        unsigned long long lo, hi;
        size_t width;

        if (end == NULL) {
            end = close;
        }
        dash = memchr(p, '-', (size_t)(end - p));
        width = (size_t)((dash ? dash : end) - p);
        if (!sharc_all_digits(p, width) ||
            (dash != NULL && !sharc_all_digits(dash + 1, (size_t)(end - dash - 1)))) {
            return SHARC_ERR_INVALID;
        }
        lo = strtoull(p, NULL, 10);
        hi = dash ? strtoull(dash + 1, NULL, 10) : lo;
        if (hi < lo || hi - lo >= v->max) {
            return SHARC_ERR_INVALID;
        }
        for (unsigned long long x = lo; x <= hi; x++) {
            size_t plen = (size_t)(open - s), rlen = len - (size_t)(close + 1 - s);
            char num[32], *name;
            int nlen = snprintf(num, sizeof(num), "%0*llu", (int)width, x);

            name = malloc(plen + (size_t)nlen + rlen + 1);
            if (name == NULL) {
                return SHARC_ERR_NOMEM;
            }
            memcpy(name, s, plen);
            memcpy(name + plen, num, (size_t)nlen);
            memcpy(name + plen + (size_t)nlen, close + 1, rlen);
            name[plen + (size_t)nlen + rlen] = '\0';
            status = sharc_expand_one(v, name, plen + (size_t)nlen + rlen);
            free(name);
            if (status != SHARC_OK) {
                return status;
            }
        }
        p = (end == close) ? close : end + 1;
        if (end != close && p == close) {
            return SHARC_ERR_INVALID; /* "[1,]" */
        }
    }
    return SHARC_OK;
}

void sharc_nodelist_free(char **hosts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(hosts[i]);
    }
    free(hosts);
}

sharc_status_t sharc_nodelist_expand(const char *list, size_t max, char ***hosts_p, size_t *n_p)
{
    sharc_hostvec_t v = {NULL, 0, 0, max};
    sharc_status_t status = SHARC_OK;
    const char *item;
    int depth = 0;

    if (list == NULL || *list == '\0') {
        return SHARC_ERR_INVALID;
    }
    item = list;
    for (const char *p = list;; p++) {
        if (*p == '[') {
            depth++;
        } else if (*p == ']') {
            depth--;
        }
        if (depth < 0 || depth > 1) {
            status = SHARC_ERR_INVALID;
            break;
        }
        if ((*p == ',' && depth == 0) || *p == '\0') {
            status =
                (depth != 0) ? SHARC_ERR_INVALID : sharc_expand_one(&v, item, (size_t)(p - item));
            if (status != SHARC_OK || *p == '\0') {
                break;
            }
            item = p + 1;
        }
    }
    if (status != SHARC_OK) {
        sharc_nodelist_free(v.hosts, v.n);
        return status;
    }
    *hosts_p = v.hosts;
    *n_p = v.n;
    return SHARC_OK;
}
