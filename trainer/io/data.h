/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/data.h: batches of (input, target) windows from a token file. Sequence g of a
 * stream starts at a position drawn from (seed, g) alone, so a global batch is the same set
 * of windows whatever the world size, and a run resumed at step k reads what an
 * uninterrupted run would have.
 */
#ifndef SHARC_LLAMA_DATA_H
#define SHARC_LLAMA_DATA_H

#include <stdint.h>
#include <sharc/sharc.h>

typedef struct llama_data llama_data_t;

/**
 * Open a token file for windows of @p seq + 1 tokens, every token checked against @p vocab
 * as it is read. SHARC_ERR_INVALID for a file too short for one window.
 */
sharc_status_t llama_data_open(const char *path, uint32_t vocab, int seq, uint64_t seed,
                               llama_data_t **data_p);
void llama_data_close(llama_data_t *data);
/** The vocabulary size recorded in the file (0 when not recorded). */
uint32_t llama_data_vocab(const llama_data_t *data);

/**
 * Sequences first .. first + batch - 1 of the stream: inputs into @p x and next tokens into
 * @p y, each (batch, seq).
 */
sharc_status_t llama_data_batch(llama_data_t *data, uint64_t first, int batch, int32_t *x,
                                int32_t *y);

#endif
