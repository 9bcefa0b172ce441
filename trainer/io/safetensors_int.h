/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/safetensors_int.h: what the three parts of the safetensors code share: the header
 * parser (safetensors_header.c: dtypes, JSON, one file's tensor table), the reader of sets
 * (safetensors_read.c) and the writer (safetensors_write.c). Not for the files' users, who
 * have safetensors.h.
 */
#ifndef SHARC_LLAMA_SAFETENSORS_INT_H
#define SHARC_LLAMA_SAFETENSORS_INT_H

#include "safetensors.h"

#include <json.h>

#define LLAMA_ST_CHUNK    (1u << 20) /* bytes read or written through a bounce buffer at once */
#define LLAMA_ST_META_KEY "__metadata__"

/* Element size of a dtype the format has and sharc_dtype_t too (0 for another): the fuzzers
 * build these files without libsharc. */
size_t llama_st_dtype_size(sharc_dtype_t dtype);
/* The format's name of such a dtype ("?" for another). */
const char *llama_st_dtype_name(sharc_dtype_t dtype);

/* A JSON string without an embedded NUL (which the C string of json-c would cut short); NULL
 * for anything else. */
const char *llama_st_json_str(json_object *o);

/* Parse @p len bytes of @p text (from @p path) as one JSON object followed by whitespace only,
 * with no duplicate top-level key. */
sharc_status_t llama_st_parse_object(const char *path, const char *text, size_t len,
                                     json_object **root_p);

/*
 * The tensors of one file's header of @p hlen bytes, checked in full and sorted by offset;
 * @p data_start is the file offset of the data section, @p data_bytes its length, @p file the
 * file's index in its set. *tensors_p: *n_p tensors (names allocated), for
 * llama_st_free_tensors.
 */
sharc_status_t llama_st_parse_header(const char *path, const char *header, size_t hlen,
                                     uint64_t data_start, uint64_t data_bytes, int file,
                                     llama_st_tensor_t **tensors_p, int *n_p);
void llama_st_free_tensors(llama_st_tensor_t *tensors, int n);

#endif
