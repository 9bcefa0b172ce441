/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/data.c: random windows of a token file, addressed by sequence number (data.h).
 */
#include "data.h"
#include "tokens.h"
#include "../util.h"

#include <stdlib.h>

struct llama_data {
    llama_tokens_t *tok;
    uint32_t vocab;
    int seq;
    uint64_t seed;
    int32_t *window; /* seq + 1 tokens */
};

sharc_status_t llama_data_open(const char *path, uint32_t vocab, int seq, uint64_t seed,
                               llama_data_t **data_p)
{
    llama_data_t *d = calloc(1, sizeof(*d));
    sharc_status_t status;

    if (d == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = llama_tokens_open(path, &d->tok);
    if (status != SHARC_OK) {
        free(d);
        return status;
    }
    if (d->tok->count < (size_t)seq + 1) {
        llama_err("%s: %zu tokens, fewer than one window of %d + 1", path, d->tok->count, seq);
        llama_data_close(d);
        return SHARC_ERR_INVALID;
    }
    d->window = malloc(((size_t)seq + 1) * sizeof(*d->window));
    if (d->window == NULL) {
        llama_data_close(d);
        return SHARC_ERR_NOMEM;
    }
    d->vocab = vocab;
    d->seq = seq;
    d->seed = seed;
    *data_p = d;
    return SHARC_OK;
}

void llama_data_close(llama_data_t *d)
{
    if (d == NULL) {
        return;
    }
    llama_tokens_close(d->tok);
    free(d->window);
    free(d);
}

uint32_t llama_data_vocab(const llama_data_t *d)
{
    return d->tok->vocab;
}

sharc_status_t llama_data_batch(llama_data_t *d, uint64_t first, int batch, int32_t *x, int32_t *y)
{
    size_t T = (size_t)d->seq, starts = d->tok->count - T; /* windows of T + 1 tokens */

    for (int b = 0; b < batch; b++) {
        size_t pos =
            (size_t)(llama_splitmix64(d->seed ^ llama_splitmix64(first + (uint64_t)b)) % starts);
        sharc_status_t status = llama_tokens_read(d->tok, pos, T + 1, d->vocab, d->window);
        if (status != SHARC_OK) {
            return status;
        }
        for (size_t t = 0; t < T; t++) {
            x[(size_t)b * T + t] = d->window[t];
            y[(size_t)b * T + t] = d->window[t + 1];
        }
    }
    return SHARC_OK;
}
