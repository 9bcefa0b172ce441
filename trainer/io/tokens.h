/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/tokens.h: sharc-llama's token files. Layout (little-endian):
 *
 *     0  char[8]  magic "SHARCTOK"
 *     8  uint32   version (1)
 *    12  uint32   token width in bytes (2 or 4)
 *    16  uint64   number of tokens
 *    24  uint32   vocabulary size (every token is below it; 0: not recorded)
 *    28  uint32   reserved (0)
 *    32  tokens
 *
 * The file's size must be exactly 32 + count * width. Written by
 * trainer/scripts/prepare_data.py and llama_tokens_write; read by memory mapping.
 */
#ifndef SHARC_LLAMA_TOKENS_H
#define SHARC_LLAMA_TOKENS_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/sharc.h>

#define LLAMA_TOKENS_MAGIC   "SHARCTOK"
#define LLAMA_TOKENS_VERSION 1
#define LLAMA_TOKENS_HEADER  32

typedef struct {
    const char *path; /**< copied */
    size_t count;     /**< tokens */
    int width;        /**< bytes per token */
    uint32_t vocab;   /**< from the header; 0 when not recorded */
    const void *data; /**< the mapped tokens */
    void *map;        /**< mapping base and length, for close */
    size_t map_bytes;
} llama_tokens_t;

/**
 * Open and validate a token file (magic, version, width, size against count). An empty
 * file (count 0) is an error too: there is nothing to train on.
 * @return SHARC_OK; SHARC_ERR_IO (missing, unreadable); SHARC_ERR_INVALID (the message names
 *         the file and what is wrong); SHARC_ERR_NOMEM.
 */
sharc_status_t llama_tokens_open(const char *path, llama_tokens_t **tok_p);
void llama_tokens_close(llama_tokens_t *tok); /**< NULL is a no-op */

/**
 * Copy tokens [start, start + n) into @p out, checking each against @p vocab (the model's;
 * also the file's, when recorded): SHARC_ERR_INVALID naming the file, position and id for a
 * token >= vocab or a range past the end.
 */
sharc_status_t llama_tokens_read(const llama_tokens_t *tok, size_t start, size_t n, uint32_t vocab,
                                 int32_t *out);

/** Write @p n tokens (width 2 when vocab <= 65536, else 4) atomically (temp file + rename). */
sharc_status_t llama_tokens_write(const char *path, const uint32_t *ids, size_t n, uint32_t vocab);

#endif
