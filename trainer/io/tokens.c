/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/tokens.c: sharc-llama's token files (layout in tokens.h), mapped read-only and
 * validated in full when opened; every token is checked against the vocabulary as it is
 * copied out. A file truncated by someone else while mapped still faults (SIGBUS): mapping
 * cannot guard against that. Assumes a little-endian host, like the format.
 */
#define _GNU_SOURCE
#include "tokens.h"
#include "../util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trainer/io/tokens.c reads and writes the little-endian tokens in place"
#endif

#define TOK_CHUNK 65536 /* tokens converted and written at once */

static uint32_t tok_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t tok_u64(const unsigned char *p)
{
    return (uint64_t)tok_u32(p) | (uint64_t)tok_u32(p + 4) << 32;
}

static void tok_put_u32(unsigned char *p, uint32_t v)
{
    int i;

    for (i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/* The header at @p h of a file of @p size bytes: SHARC_OK and its fields, or the reason. */
static sharc_status_t tok_check_header(const char *path, const unsigned char *h, uint64_t size,
                                       llama_tokens_t *tok)
{
    uint64_t count, bytes;
    uint32_t version, width;

    if (memcmp(h, LLAMA_TOKENS_MAGIC, 8) != 0) {
        llama_err("%s: not a token file (no %s magic)", path, LLAMA_TOKENS_MAGIC);
        return SHARC_ERR_INVALID;
    }
    version = tok_u32(h + 8);
    if (version != LLAMA_TOKENS_VERSION) {
        llama_err("%s: version %u, this reader knows %d", path, version, LLAMA_TOKENS_VERSION);
        return SHARC_ERR_INVALID;
    }
    width = tok_u32(h + 12);
    if (width != 2 && width != 4) {
        llama_err("%s: token width %u bytes, not 2 or 4", path, width);
        return SHARC_ERR_INVALID;
    }
    count = tok_u64(h + 16);
    if (count == 0) {
        llama_err("%s: no tokens", path);
        return SHARC_ERR_INVALID;
    }
    if (tok_u32(h + 28) != 0) {
        llama_err("%s: reserved header field is %u, not 0", path, tok_u32(h + 28));
        return SHARC_ERR_INVALID;
    }
    if (__builtin_mul_overflow(count, (uint64_t)width, &bytes) ||
        __builtin_add_overflow(bytes, (uint64_t)LLAMA_TOKENS_HEADER, &bytes) || bytes != size ||
        count > SIZE_MAX) {
        llama_err("%s: %llu tokens of %u bytes after the header do not fill its %llu bytes "
                  "exactly",
                  path, (unsigned long long)count, width, (unsigned long long)size);
        return SHARC_ERR_INVALID;
    }
    tok->count = (size_t)count;
    tok->width = (int)width;
    tok->vocab = tok_u32(h + 24);
    return SHARC_OK;
}

sharc_status_t llama_tokens_open(const char *path, llama_tokens_t **tok_p)
{
    sharc_status_t status;
    llama_tokens_t *tok;
    uint64_t size;
    void *map;
    int fd;

    if (path == NULL || tok_p == NULL) {
        llama_err("llama_tokens_open: NULL argument");
        return SHARC_ERR_INVALID;
    }
    fd = llama_open_file(path, &size);
    if (fd < 0) {
        return SHARC_ERR_IO;
    }
    if (size < LLAMA_TOKENS_HEADER) {
        llama_err("%s: %s", path,
                  size == 0 ? "empty file: no tokens" : "shorter than the 32-byte header");
        status = SHARC_ERR_INVALID;
        goto err_close;
    }
    if (size > SIZE_MAX) {
        llama_err("%s: too large to map", path);
        status = SHARC_ERR_INVALID;
        goto err_close;
    }
    tok = calloc(1, sizeof(*tok));
    if (tok == NULL || (tok->path = strdup(path)) == NULL) {
        llama_err("%s: out of memory", path);
        status = SHARC_ERR_NOMEM;
        goto err_free;
    }
    map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        llama_err("%s: mmap of %llu bytes failed: %s", path, (unsigned long long)size,
                  strerror(errno));
        status = SHARC_ERR_IO;
        goto err_free;
    }
    status = tok_check_header(path, map, size, tok);
    if (status != SHARC_OK) {
        goto err_unmap;
    }
    tok->map = map;
    tok->map_bytes = (size_t)size;
    tok->data = (const unsigned char *)map + LLAMA_TOKENS_HEADER;
    close(fd); /* the mapping stays valid */
    *tok_p = tok;
    return SHARC_OK;

err_unmap:
    munmap(map, (size_t)size);
err_free:
    if (tok != NULL) {
        free((char *)tok->path);
    }
    free(tok);
err_close:
    close(fd);
    return status;
}

void llama_tokens_close(llama_tokens_t *tok)
{
    if (tok == NULL) {
        return;
    }
    munmap(tok->map, tok->map_bytes);
    free((char *)tok->path);
    free(tok);
}

sharc_status_t llama_tokens_read(const llama_tokens_t *tok, size_t start, size_t n, uint32_t vocab,
                                 int32_t *out)
{
    const uint16_t *t16;
    const uint32_t *t32;
    uint32_t id, limit;
    size_t i;

    if (tok == NULL || (n > 0 && out == NULL) || vocab == 0) {
        llama_err("llama_tokens_read: NULL argument or a vocabulary of 0");
        return SHARC_ERR_INVALID;
    }
    if (start > tok->count || n > tok->count - start) {
        llama_err("%s: tokens [%zu, %zu + %zu) are past its %zu tokens", tok->path, start, start, n,
                  tok->count);
        return SHARC_ERR_INVALID;
    }
    /* ids go out as int32: one above INT32_MAX cannot be a valid id either */
    limit = tok->vocab != 0 && tok->vocab < vocab ? tok->vocab : vocab;
    limit = limit > (uint32_t)INT32_MAX ? (uint32_t)INT32_MAX + 1 : limit;
    t16 = tok->data;
    t32 = tok->data;
    for (i = 0; i < n; i++) {
        id = tok->width == 2 ? t16[start + i] : t32[start + i];
        if (id >= limit) {
            llama_err("%s: token %zu is %u, not below the vocabulary size %u", tok->path, start + i,
                      id, limit);
            return SHARC_ERR_INVALID;
        }
        out[i] = (int32_t)id;
    }
    return SHARC_OK;
}

/* Header and tokens into @p fd, converted a chunk at a time. */
static sharc_status_t tok_write_all(int fd, const char *tmp, const uint32_t *ids, size_t n,
                                    uint32_t vocab, int width)
{
    unsigned char header[LLAMA_TOKENS_HEADER] = {0};
    sharc_status_t status;
    uint16_t *buf;
    size_t i, k, done;
    uint64_t count = n;

    memcpy(header, LLAMA_TOKENS_MAGIC, 8);
    tok_put_u32(header + 8, LLAMA_TOKENS_VERSION);
    tok_put_u32(header + 12, (uint32_t)width);
    tok_put_u32(header + 16, (uint32_t)count);
    tok_put_u32(header + 20, (uint32_t)(count >> 32));
    tok_put_u32(header + 24, vocab);
    status = llama_write_all(fd, tmp, header, sizeof(header));
    if (status != SHARC_OK || width == 4) {
        return status == SHARC_OK ? llama_write_all(fd, tmp, ids, n * 4) : status;
    }
    buf = malloc(TOK_CHUNK * sizeof(*buf));
    if (buf == NULL) {
        llama_err("%s: out of memory", tmp);
        return SHARC_ERR_NOMEM;
    }
    for (done = 0; done < n && status == SHARC_OK; done += k) {
        k = n - done < TOK_CHUNK ? n - done : TOK_CHUNK;
        for (i = 0; i < k; i++) {
            buf[i] = (uint16_t)ids[done + i];
        }
        status = llama_write_all(fd, tmp, buf, k * sizeof(*buf));
    }
    free(buf);
    return status;
}

/*
 * n == 0 is an error like a file without tokens is on open; so is vocab 0, which no id is
 * below. Every id is checked before anything is created.
 */
sharc_status_t llama_tokens_write(const char *path, const uint32_t *ids, size_t n, uint32_t vocab)
{
    sharc_status_t status;
    size_t i, tmplen;
    char *tmp;
    int fd;

    if (path == NULL || ids == NULL || n == 0 || vocab == 0) {
        llama_err("llama_tokens_write: NULL argument, no tokens or a vocabulary of 0");
        return SHARC_ERR_INVALID;
    }
    if (n > (SIZE_MAX - LLAMA_TOKENS_HEADER) / 4) {
        llama_err("%s: %zu tokens are too many", path, n);
        return SHARC_ERR_INVALID;
    }
    for (i = 0; i < n; i++) {
        if (ids[i] >= vocab) {
            llama_err("%s: token %zu is %u, not below the vocabulary size %u", path, i, ids[i],
                      vocab);
            return SHARC_ERR_INVALID;
        }
    }
    tmplen = strlen(path) + 32;
    tmp = malloc(tmplen);
    if (tmp == NULL) {
        llama_err("%s: out of memory", path);
        return SHARC_ERR_NOMEM;
    }
    snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        llama_err("%s: cannot create: %s", tmp, strerror(errno));
        status = SHARC_ERR_IO;
        goto err_free;
    }
    status = tok_write_all(fd, tmp, ids, n, vocab, vocab <= 65536 ? 2 : 4);
    if (status == SHARC_OK && fsync(fd) != 0) {
        llama_err("%s: fsync failed: %s", tmp, strerror(errno));
        status = SHARC_ERR_IO;
    }
    if (close(fd) != 0 && status == SHARC_OK) {
        llama_err("%s: close failed: %s", tmp, strerror(errno));
        status = SHARC_ERR_IO;
    }
    if (status == SHARC_OK && rename(tmp, path) != 0) {
        llama_err("%s: rename onto %s failed: %s", tmp, path, strerror(errno));
        status = SHARC_ERR_IO;
    }
    if (status != SHARC_OK) {
        unlink(tmp);
    }
err_free:
    free(tmp);
    return status;
}
