/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_kv.c: the store server's key-value table (a hash table with chaining, grown as it
 * fills), and the bookkeeping keys of gathers: how many indexed keys of a prefix are
 * present, how many readers have been served.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/util.h"
#include "store_srv.h"

static size_t sharc_store_bucket(const sharc_store_server_t *srv, const char *key)
{
    return sharc_hash64(SHARC_HASH_SEED, key, strlen(key)) & (srv->table_size - 1);
}

sharc_store_entry_t *sharc_store_lookup(sharc_store_server_t *srv, const char *key)
{
    for (sharc_store_entry_t *e = srv->table[sharc_store_bucket(srv, key)]; e; e = e->next) {
        if (strcmp(e->key, key) == 0) {
            return e;
        }
    }
    return NULL;
}

static void sharc_store_grow(sharc_store_server_t *srv)
{
    size_t old_size = srv->table_size, new_size = old_size * 2;
    sharc_store_entry_t **old = srv->table, **table = calloc(new_size, sizeof(*table));

    if (table == NULL) {
        return; /* keep the longer chains */
    }
    srv->table = table;
    srv->table_size = new_size;
    for (size_t i = 0; i < old_size; i++) {
        while (old[i] != NULL) {
            sharc_store_entry_t *e = old[i];
            size_t b = sharc_store_bucket(srv, e->key);
            old[i] = e->next;
            e->next = table[b];
            table[b] = e;
        }
    }
    free(old);
}

/* Find or create; NULL when out of memory. *created_p tells which. */
sharc_store_entry_t *sharc_store_get_entry(sharc_store_server_t *srv, const char *key,
                                           int *created_p)
{
    sharc_store_entry_t *e = sharc_store_lookup(srv, key);
    size_t b;

    *created_p = 0;
    if (e != NULL) {
        return e;
    }
    if (srv->nentries >= srv->table_size) {
        sharc_store_grow(srv);
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL || (e->key = strdup(key)) == NULL) {
        free(e);
        return NULL;
    }
    b = sharc_store_bucket(srv, key);
    e->next = srv->table[b];
    srv->table[b] = e;
    srv->nentries++;
    *created_p = 1;
    return e;
}

void sharc_store_delete(sharc_store_server_t *srv, const char *key)
{
    for (sharc_store_entry_t **pe = &srv->table[sharc_store_bucket(srv, key)]; *pe;
         pe = &(*pe)->next) {
        if (strcmp((*pe)->key, key) == 0) {
            sharc_store_entry_t *e = *pe;
            *pe = e->next;
            free(e->key);
            free(e->val);
            free(e);
            srv->nentries--;
            return;
        }
    }
}

/* Bookkeeping keys start with a byte no client key can hold (keys are checked for it). */
void sharc_store_meta_key(char *buf, size_t size, char kind, const char *prefix)
{
    snprintf(buf, size, "\x01%c%s", kind, prefix);
}

/* Counted key "P/i": i must be all digits. Returns the length of P, or 0. */
size_t sharc_store_indexed_prefix(const char *key)
{
    const char *slash = strrchr(key, '/');

    if (slash == NULL || slash == key || slash[1] == '\0') {
        return 0;
    }
    for (const char *p = slash + 1; *p; p++) {
        if (*p < '0' || *p > '9') {
            return 0;
        }
    }
    return (size_t)(slash - key);
}

uint32_t sharc_store_count(sharc_store_server_t *srv, char kind, const char *prefix)
{
    char meta[SHARC_STORE_MAX_KEY + 4];
    sharc_store_entry_t *e;

    sharc_store_meta_key(meta, sizeof(meta), kind, prefix);
    e = sharc_store_lookup(srv, meta);
    return e ? e->count : 0;
}

int sharc_store_bump(sharc_store_server_t *srv, char kind, const char *prefix)
{
    char meta[SHARC_STORE_MAX_KEY + 4];
    sharc_store_entry_t *e;
    int created;

    sharc_store_meta_key(meta, sizeof(meta), kind, prefix);
    e = sharc_store_get_entry(srv, meta, &created);
    if (e == NULL) {
        return -1;
    }
    e->count++;
    return (int)e->count;
}

void sharc_store_kv_clear(sharc_store_server_t *srv)
{
    for (size_t i = 0; i < srv->table_size; i++) {
        while (srv->table[i] != NULL) {
            sharc_store_entry_t *e = srv->table[i];
            srv->table[i] = e->next;
            free(e->key);
            free(e->val);
            free(e);
        }
    }
    free(srv->table);
}
