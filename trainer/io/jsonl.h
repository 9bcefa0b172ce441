/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/jsonl.h: a JSONL log, one JSON object per line (sharc-llama's --log, written by
 * rank 0): a line is begun, given members and ended, which writes and flushes it. Not a JSON
 * reader.
 */
#ifndef SHARC_LLAMA_JSONL_H
#define SHARC_LLAMA_JSONL_H

#include <sharc/sharc.h>

typedef struct llama_jsonl llama_jsonl_t;

/** Open @p path for appending (NULL path: a log that writes nothing). */
sharc_status_t llama_jsonl_open(const char *path, llama_jsonl_t **log_p);
void llama_jsonl_close(llama_jsonl_t *log);
/**
 * One line: begin, add members, end (which writes it). Without a file (NULL path, or a rank
 * that does not log) every call does nothing.
 */
void llama_jsonl_begin(llama_jsonl_t *log, const char *event);
void llama_jsonl_int(llama_jsonl_t *log, const char *key, long long value);
void llama_jsonl_num(llama_jsonl_t *log, const char *key, double value);
void llama_jsonl_str(llama_jsonl_t *log, const char *key, const char *value);
void llama_jsonl_end(llama_jsonl_t *log);

#endif
