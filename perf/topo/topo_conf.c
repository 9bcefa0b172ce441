/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_conf.c: the syntax of the settings the doctor reads: NCCL device lists ("^", "=",
 * ":port"), values compared as sets of names, and the NCCL conf file (KEY=VALUE lines).
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_tool.h"

/* ---- NCCL device lists */

void sharc_topo_spec_parse(const char *value, sharc_topo_spec_t *spec)
{
    const char *p = value;

    memset(spec, 0, sizeof(*spec));
    if (*p == '^') {
        spec->exclude = 1;
        p++;
    }
    if (*p == '=') {
        spec->exact = 1;
        p++;
    }
    while (*p != '\0' && spec->nentries < SHARC_TOPO_SPEC_MAX) {
        const char *comma = strchr(p, ',');
        size_t len = (comma != NULL) ? (size_t)(comma - p) : strlen(p);
        char item[SHARC_TOPO_NAME_MAX + 16];
        char *colon;

        snprintf(item, sizeof(item), "%.*s", (int)SHARC_MIN(len, sizeof(item) - 1), p);
        p += len + (comma != NULL);
        if (item[0] == '\0') {
            continue;
        }
        spec->entries[spec->nentries].port = -1;
        colon = strchr(item, ':');
        if (colon != NULL) {
            *colon = '\0';
            spec->entries[spec->nentries].port = atoi(colon + 1);
        }
        sharc_snprintf(spec->entries[spec->nentries].name, SHARC_TOPO_NAME_MAX, "%s", item);
        spec->nentries++;
    }
}

int sharc_topo_spec_entry_matches(const sharc_topo_spec_t *spec, int i, const char *name)
{
    const char *entry = spec->entries[i].name;

    return spec->exact ? strcmp(name, entry) == 0 : strncmp(name, entry, strlen(entry)) == 0;
}

/* A value as a sorted list of its comma-separated items after the NCCL prefixes ^ and =,
 * so that "a,b" and "b,a" compare equal. */
typedef struct {
    char prefix[3];
    char items[SHARC_TOPO_SPEC_MAX][SHARC_TOPO_NAME_MAX + 8];
    int nitems;
} sharc_topo_items_t;

static int sharc_topo_item_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void sharc_topo_items(const char *value, int nocase, sharc_topo_items_t *items)
{
    size_t np = strspn(value, "^=");

    memset(items, 0, sizeof(*items));
    snprintf(items->prefix, sizeof(items->prefix), "%.*s", (int)SHARC_MIN(np, 2), value);
    for (const char *p = value + np; *p != '\0' && items->nitems < SHARC_TOPO_SPEC_MAX;) {
        size_t len = strcspn(p, ",");
        char *item = items->items[items->nitems];

        snprintf(item, sizeof(items->items[0]), "%.*s",
                 (int)SHARC_MIN(len, sizeof(items->items[0]) - 1), p);
        for (char *c = item; nocase && *c != '\0'; c++) {
            *c = (char)tolower((unsigned char)*c);
        }
        items->nitems += (item[0] != '\0');
        p += len + (p[len] == ',');
    }
    qsort(items->items, (size_t)items->nitems, sizeof(items->items[0]), sharc_topo_item_cmp);
}

int sharc_topo_same_value(const char *key, const char *a, const char *b)
{
    /* sharc's own knobs take names in any case */
    int nocase = strncmp(key, "SHARC_", 6) == 0;
    sharc_topo_items_t *x = malloc(2 * sizeof(*x)), *y = x + 1;
    int same;

    if (x == NULL) {
        return strcmp(a, b) == 0;
    }
    sharc_topo_items(a, nocase, x);
    sharc_topo_items(b, nocase, y);
    same = strcmp(x->prefix, y->prefix) == 0 && x->nitems == y->nitems &&
           memcmp(x->items, y->items, (size_t)x->nitems * sizeof(x->items[0])) == 0;
    free(x);
    return same;
}

/* ---- the NCCL conf file */

int sharc_topo_parse_conf(const char *text, const char *source, sharc_topo_setting_t *settings,
                          int n, int max)
{
    const char *p = text;

    while (*p != '\0' && n < max) {
        const char *nl = strchr(p, '\n');
        size_t len = (nl != NULL) ? (size_t)(nl - p) : strlen(p);
        char line[512], *eq, *key, *value, *e;
        int dup = 0;

        snprintf(line, sizeof(line), "%.*s", (int)SHARC_MIN(len, sizeof(line) - 1), p);
        p += len + (nl != NULL);
        key = line;
        while (isspace((unsigned char)*key)) {
            key++;
        }
        eq = strchr(key, '=');
        if (*key == '#' || eq == NULL) {
            continue;
        }
        *eq = '\0';
        value = eq + 1;
        while (isspace((unsigned char)*value)) {
            value++;
        }
        for (e = eq - 1; e >= key && isspace((unsigned char)*e); e--) {
            *e = '\0';
        }
        for (e = value + strlen(value) - 1; e >= value && isspace((unsigned char)*e); e--) {
            *e = '\0';
        }
        if (*key == '\0' || strlen(key) >= sizeof(settings[0].key)) {
            continue;
        }
        for (int s = 0; s < n; s++) {
            dup |= (strcmp(settings[s].key, key) == 0);
        }
        if (dup) {
            continue; /* the environment wins, as in NCCL */
        }
        snprintf(settings[n].key, sizeof(settings[n].key), "%s", key);
        snprintf(settings[n].value, sizeof(settings[n].value), "%s", value);
        snprintf(settings[n].source, sizeof(settings[n].source), "%s", source);
        n++;
    }
    return n;
}
