/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * why.c: sharc_flight_why, the stall verdict of a failed or killed job from its flight dumps
 * (flight_dump.c writes them, one per rank and communicator): the heads of every
 * communicator's ranks are read back and given to the same verdict the live ranks work out
 * (verdict.c); a rank without a dump counts as one that did not answer. Built with json-c
 * (why_none.c without it).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/comm.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "diagnostics.h"

/* A communicator's heads, as its dumps give them. */
typedef struct {
    char name[128];
    int size;
    sharc_coll_head_t *heads; /* [size] */
} sharc_why_comm_t;

static int sharc_why_type(const char *name)
{
    for (int t = 0; t < SHARC_COLL_LAST; t++) {
        if (name != NULL && strcmp(sharc_coll_name((sharc_coll_type_t)t), name) == 0) {
            return t;
        }
    }
    return -1;
}

static int sharc_why_dtype(const char *name)
{
    sharc_dtype_t dt = SHARC_DTYPE_F32;

    return (name != NULL && sharc_dtype_from_name(name, &dt) == SHARC_OK) ? (int)dt : -1;
}

static const char *sharc_why_str(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static double sharc_why_num(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1.0;
}

/* The dump's "last": what the rank posted last, and its state. */
static void sharc_why_last(json_object *last, sharc_coll_head_t *h)
{
    const char *state = sharc_why_str(last, "state");

    h->last_type = sharc_why_type(sharc_why_str(last, "op"));
    h->last_dtype = sharc_why_dtype(sharc_why_str(last, "dtype"));
    h->last_count = (uint64_t)sharc_why_num(last, "count");
    h->last_age = sharc_why_num(last, "posted_s_ago");
    h->last_done_age = sharc_why_num(last, "done_s_ago");
    h->last_status = SHARC_OK;
    h->last_state = SHARC_COLL_TASK_COMPLETE;
    if (state != NULL && strcmp(state, "failed") == 0) {
        h->last_status = SHARC_ERR_REMOTE;
    } else if (state != NULL && strcmp(state, "complete") != 0 && strcmp(state, "done") != 0) {
        h->last_state = SHARC_COLL_TASK_RUNNING;
    }
}

/* The dump's "oldest_incomplete": the stalled collective and whom it waits for. */
static void sharc_why_stalled(json_object *st, sharc_coll_head_t *h)
{
    json_object *peers;

    h->stalled = (uint64_t)sharc_why_num(st, "ordinal");
    h->st_type = sharc_why_type(sharc_why_str(st, "op"));
    h->st_dtype = sharc_why_dtype(sharc_why_str(st, "dtype"));
    h->st_count = (uint64_t)sharc_why_num(st, "count");
    h->st_lane = (int32_t)sharc_why_num(st, "lane");
    h->st_age = sharc_why_num(st, "posted_s_ago");
    if (json_object_object_get_ex(st, "waits_for", &peers) &&
        json_object_is_type(peers, json_type_array)) {
        for (size_t i = 0;
             i < json_object_array_length(peers) && h->npending < SHARC_COLL_HEAD_PEERS; i++) {
            h->pending[h->npending++] = json_object_get_int(json_object_array_get_idx(peers, i));
        }
    }
}

/* A dump's head; 0, or -1 for a file that is not one (logged). */
static int sharc_why_head(json_object *d, const char *path, sharc_coll_head_t *h)
{
    json_object *head, *last, *st;
    const char *host = sharc_why_str(d, "host");

    if (!json_object_object_get_ex(d, "head", &head) || sharc_why_num(head, "posted") < 0) {
        sharc_warn("why: %s has no head: not a sharc flight dump", path);
        return -1;
    }
    memset(h, 0, sizeof(*h));
    h->answered = 1;
    h->rank = (int32_t)sharc_why_num(d, "rank");
    h->posted = (uint64_t)sharc_why_num(head, "posted");
    h->stalled = h->posted;
    snprintf(h->host, sizeof(h->host), "%s", host ? host : "?");
    if (json_object_object_get_ex(head, "last", &last) &&
        json_object_is_type(last, json_type_object)) {
        sharc_why_last(last, h);
    }
    if (json_object_object_get_ex(head, "oldest_incomplete", &st) &&
        json_object_is_type(st, json_type_object)) {
        sharc_why_stalled(st, h);
    }
    return 0;
}

/* The communicator @p name of @p size ranks in @p comms, added when new; NULL: no memory or
 * a size that disagrees. */
static sharc_why_comm_t *sharc_why_comm(sharc_why_comm_t **comms, size_t *n, size_t *cap,
                                        const char *name, int size)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*comms)[i].name, name) == 0) {
            return ((*comms)[i].size == size) ? &(*comms)[i] : NULL;
        }
    }
    if (size <= 0 || size > (1 << 24) ||
        sharc_array_grow(comms, cap, *n, sizeof(**comms), 8) != 0) {
        return NULL;
    }
    sharc_why_comm_t *c = &(*comms)[(*n)++];
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->size = size;
    c->heads = calloc((size_t)size, sizeof(*c->heads));
    return c->heads != NULL ? c : NULL;
}

/* Read one dump into its communicator's heads. */
static void sharc_why_read(const char *path, sharc_why_comm_t **comms, size_t *n, size_t *cap)
{
    json_object *d = json_object_from_file(path);
    const char *name = d ? sharc_why_str(d, "comm") : NULL;
    int rank = d ? (int)sharc_why_num(d, "rank") : -1, size = d ? (int)sharc_why_num(d, "size") : 0;
    sharc_why_comm_t *c;
    sharc_coll_head_t h;

    if (name == NULL || rank < 0 || rank >= size) {
        sharc_warn("why: %s is not a sharc flight dump (or it is truncated)", path);
    } else if ((c = sharc_why_comm(comms, n, cap, name, size)) == NULL) {
        sharc_warn("why: %s: communicator %s of %d ranks does not match its other dumps", path,
                   name, size);
    } else if (sharc_why_head(d, path, &h) == 0) {
        c->heads[rank] = h;
    }
    json_object_put(d);
}

sharc_status_t sharc_flight_why(const char *dir, char *buf, size_t size)
{
    sharc_why_comm_t *comms = NULL;
    size_t n = 0, cap = 0, len = 0;
    struct dirent *e;
    DIR *d;

    if (dir == NULL || buf == NULL || size == 0) {
        sharc_error("sharc_flight_why: %s is NULL", dir == NULL ? "dir" : "buf");
        return SHARC_ERR_INVALID;
    }
    d = opendir(dir);
    if (d == NULL) {
        sharc_error("sharc_flight_why: cannot read directory %s: %m", dir);
        return SHARC_ERR_IO;
    }
    while ((e = readdir(d)) != NULL) {
        char path[4096];

        if (strncmp(e->d_name, "sharc-flight.", 13) == 0 && strlen(e->d_name) > 18 &&
            strcmp(e->d_name + strlen(e->d_name) - 5, ".json") == 0 &&
            sharc_snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) == 0) {
            sharc_why_read(path, &comms, &n, &cap);
        }
    }
    closedir(d);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char verdict[2048];

        sharc_coll_verdict(comms[i].heads, comms[i].size, NULL, comms[i].name, 0, verdict,
                           sizeof(verdict));
        len += (size_t)snprintf(buf + SHARC_MIN(len, size - 1), size - SHARC_MIN(len, size - 1),
                                "%s\n", verdict);
        free(comms[i].heads);
    }
    free(comms);
    if (n == 0) {
        sharc_error("sharc_flight_why: no flight dumps (sharc-flight.*.json) in %s", dir);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}
