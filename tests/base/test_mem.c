/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mem.c: shareable host memory (sharc_mem_alloc/free) and the context's table the
 * transports look buffers up in: arguments, alignment, zero fill, lookups at and across the
 * edges of several buffers, frees of foreign pointers, and a forked process mapping a buffer
 * through /proc the way the shm transport does.
 */
#include "config.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../../comm/context.h"
#include "../../base/mem.h"
#include "../check.h"

/* A child opens the parent's buffer through /proc and reads it. */
static int child_reads(const sharc_mem_region_t *r, pid_t parent)
{
    char path[64];
    const char *p;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)parent, r->fd);
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        return 2;
    }
    p = mmap(NULL, r->bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        return 3;
    }
    return strcmp(p + 100, "written by the parent") == 0 ? 0 : 4;
}

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    sharc_context_h ctx, other;
    sharc_mem_region_t r;
    char *bufs[5], *x;
    void *p = &p;
    int status;
    pid_t pid;

    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    CHECK(sharc_context_create(NULL, &other) == SHARC_OK);

    CHECK(sharc_mem_alloc(NULL, 16, &p) == SHARC_ERR_INVALID);
    CHECK(sharc_mem_alloc(ctx, 16, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_mem_alloc(ctx, 0, &p) == SHARC_OK && p == NULL);
    CHECK(sharc_mem_alloc(ctx, SIZE_MAX, &p) == SHARC_ERR_NOMEM);
    CHECK(sharc_mem_free(ctx, NULL) == SHARC_OK);

    /* several buffers of odd sizes: aligned, zeroed, writable, each found by its own range */
    for (int i = 0; i < 5; i++) {
        size_t bytes = 1 + (size_t)i * 5000;

        CHECK(sharc_mem_alloc(ctx, bytes, (void **)&bufs[i]) == SHARC_OK);
        CHECK(((uintptr_t)bufs[i] % page) == 0);
        for (size_t k = 0; k < bytes; k++) {
            if (bufs[i][k] != 0) {
                CHECK_MSG(0, "buffer %d byte %zu not zero", i, k);
                break;
            }
        }
        memset(bufs[i], 0x5a, bytes);
    }
    for (int i = 0; i < 5; i++) {
        memset(&r, 0, sizeof(r));
        CHECK(sharc_mem_table_find(ctx->mem, bufs[i] + 1, 0, &r) == 1 && r.base == bufs[i]);
        CHECK(r.bytes % page == 0 && r.fd >= 0 && r.id != 0);
        CHECK(sharc_mem_table_find(ctx->mem, bufs[i], r.bytes, &r) == 1);
        CHECK(sharc_mem_table_find(ctx->mem, bufs[i], r.bytes + 1, &r) == 0); /* past the end */
        CHECK(sharc_mem_table_find(ctx->mem, bufs[i] - 1, 2, &r) == 0 ||
              r.base != bufs[i]); /* starts before it: at most another buffer's tail */
        CHECK(sharc_mem_table_find(other->mem, bufs[i], 1, &r) == 0);
    }
    CHECK(sharc_mem_table_find(ctx->mem, &page, sizeof(page), &r) == 0); /* the stack */

    /* frees: only the base pointer, only on the owning context */
    CHECK(sharc_mem_free(ctx, bufs[2] + 1) == SHARC_ERR_INVALID);
    CHECK(sharc_mem_free(other, bufs[2]) == SHARC_ERR_INVALID);
    CHECK(sharc_mem_free(ctx, &page) == SHARC_ERR_INVALID);
    CHECK(sharc_mem_free(ctx, bufs[2]) == SHARC_OK);
    CHECK(sharc_mem_table_find(ctx->mem, bufs[2], 1, &r) == 0 || r.base != bufs[2]);
    CHECK(sharc_mem_free(ctx, bufs[2]) == SHARC_ERR_INVALID); /* twice */

    /* another process maps it as a peer on the node does */
    CHECK(sharc_mem_alloc(ctx, 3 * page, (void **)&x) == SHARC_OK);
    strcpy(x + 100, "written by the parent");
    CHECK(sharc_mem_table_find(ctx->mem, x, 3 * page, &r) == 1);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        _exit(child_reads(&r, getppid()));
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    CHECK(sharc_mem_free(ctx, x) == SHARC_OK);

    /* buffers left over go with the context (a warning, no leak) */
    sharc_context_destroy(ctx);
    sharc_context_destroy(other);
    return check_result("test_mem");
}
