/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/mem.h: host memory the ranks of a node can share. A buffer from sharc_mem_alloc is
 * backed by an anonymous shared file, so a peer on the same node maps it and copies from it
 * directly (one user-space copy at memory speed) when a collective or transfer moves it;
 * buffers from anywhere else are read through the kernel (process_vm_readv), which is about
 * half as fast for large messages. The counterpart of ncclMemAlloc for host memory. Every
 * sharc call accepts both kinds of buffer.
 */
#ifndef SHARC_MEM_H
#define SHARC_MEM_H

#include <stddef.h>

#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/context.h>

SHARC_BEGIN_DECLS

/**
 * Allocate shareable host memory.
 * @param[in]  ctx    the context whose communicators will use it.
 * @param[in]  bytes  size; 0 gives NULL.
 * @param[out] ptr_p  page-aligned, zero-filled memory, or NULL for 0 bytes; set on success.
 * @return SHARC_OK, SHARC_ERR_INVALID (NULL argument), SHARC_ERR_NOMEM (no memory, or the
 *         system refused a shared file: logged with the reason).
 * Thread safety: safe.
 */
SHARC_API sharc_status_t sharc_mem_alloc(sharc_context_h ctx, size_t bytes, void **ptr_p);

/**
 * Free memory from sharc_mem_alloc on the same context. NULL is a no-op. Buffers still
 * allocated when the context goes are freed with it (with a warning).
 * @return SHARC_OK, or SHARC_ERR_INVALID when @p ptr did not come from sharc_mem_alloc on
 *         @p ctx (logged; nothing is freed).
 */
SHARC_API sharc_status_t sharc_mem_free(sharc_context_h ctx, void *ptr);

SHARC_END_DECLS

#endif
