/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/jsonl.c: the JSONL log (jsonl.h). json-c writes the lines, so strings are
 * escaped and non-finite numbers do not break the file.
 */
#include "jsonl.h"
#include "../util.h"

#include <errno.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct llama_jsonl {
    FILE *f;
    struct json_object *line; /* being built */
};

sharc_status_t llama_jsonl_open(const char *path, llama_jsonl_t **log_p)
{
    llama_jsonl_t *log = calloc(1, sizeof(*log));

    if (log == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (path != NULL) {
        log->f = fopen(path, "a");
        if (log->f == NULL) {
            llama_err("cannot open the log %s: %s", path, strerror(errno));
            free(log);
            return SHARC_ERR_IO;
        }
    }
    *log_p = log;
    return SHARC_OK;
}

void llama_jsonl_close(llama_jsonl_t *log)
{
    if (log == NULL) {
        return;
    }
    if (log->f != NULL) {
        fclose(log->f);
    }
    json_object_put(log->line);
    free(log);
}

void llama_jsonl_begin(llama_jsonl_t *log, const char *event)
{
    if (log == NULL || log->f == NULL) {
        return;
    }
    json_object_put(log->line);
    log->line = json_object_new_object();
    llama_jsonl_str(log, "event", event);
}

static void add(llama_jsonl_t *log, const char *key, struct json_object *v)
{
    if (log == NULL || log->line == NULL) {
        json_object_put(v);
        return;
    }
    json_object_object_add(log->line, key, v);
}

void llama_jsonl_int(llama_jsonl_t *log, const char *key, long long value)
{
    add(log, key, json_object_new_int64(value));
}

void llama_jsonl_num(llama_jsonl_t *log, const char *key, double value)
{
    add(log, key, json_object_new_double(value));
}

void llama_jsonl_str(llama_jsonl_t *log, const char *key, const char *value)
{
    add(log, key, json_object_new_string(value));
}

void llama_jsonl_end(llama_jsonl_t *log)
{
    if (log == NULL || log->line == NULL) {
        return;
    }
    fprintf(log->f, "%s\n", json_object_to_json_string_ext(log->line, JSON_C_TO_STRING_PLAIN));
    fflush(log->f);
    json_object_put(log->line);
    log->line = NULL;
}
