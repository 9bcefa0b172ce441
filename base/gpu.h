/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu.h: the CUDA runtime as the layers use it (memory types, streams,
 * events, copies, allocations), behind void pointers so that no file outside gpu_cuda.c
 * includes CUDA headers. Built without CUDA (gpu_none.c), every buffer is host memory
 * and the rest answers SHARC_ERR_UNSUPPORTED. Errors are translated and logged here.
 */
#ifndef SHARC_GPU_H
#define SHARC_GPU_H

#include <stddef.h>
#include <sharc/types.h>

#include "def_int.h"

/** Where @p ptr lives: CUDA device memory, managed memory, or host memory (also for NULL,
 *  and always without CUDA). Cheap after the first call in a process without a GPU. */
SHARC_HIDDEN sharc_memtype_t sharc_gpu_memtype(const void *ptr);

/** PCI address ("0000:05:00.0", lower case) of the calling thread's current CUDA device:
 *  SHARC_OK, or SHARC_ERR_UNSUPPORTED (no CUDA, no device; not logged). */
SHARC_HIDDEN sharc_status_t sharc_gpu_current_busid(char *busid, size_t len);

/** A non-blocking stream on the current device. */
SHARC_HIDDEN sharc_status_t sharc_gpu_stream_create(void **stream_p);
SHARC_HIDDEN void sharc_gpu_stream_destroy(void *stream);
/** Block until everything queued on @p stream is done. */
SHARC_HIDDEN sharc_status_t sharc_gpu_stream_sync(void *stream);

/** An event that can time (@p timing) or only order. */
SHARC_HIDDEN sharc_status_t sharc_gpu_event_create(int timing, void **event_p);
SHARC_HIDDEN void sharc_gpu_event_destroy(void *event);
SHARC_HIDDEN sharc_status_t sharc_gpu_event_record(void *event, void *stream);
/** SHARC_OK when the work before the event is done, SHARC_INPROGRESS, or an error. */
SHARC_HIDDEN sharc_status_t sharc_gpu_event_query(void *event);
/** @p stream waits on the device for @p event (returns at once). */
SHARC_HIDDEN sharc_status_t sharc_gpu_stream_wait(void *stream, void *event);
/** Seconds from @p start to @p end, both timing events that completed. */
SHARC_HIDDEN sharc_status_t sharc_gpu_event_elapsed(void *start, void *end, double *seconds_p);

/** Device memory on the current device, and its release. */
SHARC_HIDDEN sharc_status_t sharc_gpu_alloc(size_t bytes, void **ptr_p);
SHARC_HIDDEN void sharc_gpu_free(void *ptr);
/** Device memory ordered by @p stream (cudaMallocAsync: from the device's pool, no device
 *  synchronization), and its release after the work queued on @p stream. */
SHARC_HIDDEN sharc_status_t sharc_gpu_alloc_async(size_t bytes, void *stream, void **ptr_p);
SHARC_HIDDEN void sharc_gpu_free_async(void *ptr, void *stream);
/** Page-locked host memory (for staging), and its release. */
SHARC_HIDDEN sharc_status_t sharc_gpu_host_alloc(size_t bytes, void **ptr_p);
SHARC_HIDDEN void sharc_gpu_host_free(void *ptr);

/** Managed (unified) memory, reachable from the host and the current device; freed by
 *  sharc_gpu_free. */
SHARC_HIDDEN sharc_status_t sharc_gpu_managed_alloc(size_t bytes, void **ptr_p);
/**
 * Whether the host may use managed memory while the current device runs work on other
 * managed memory (cudaDevAttrConcurrentManagedAccess, which also means the device maps host
 * pages rather than moving them wholesale): SHARC_OK, or SHARC_ERR_UNSUPPORTED with the
 * reason in @p why (not logged).
 */
SHARC_HIDDEN sharc_status_t sharc_gpu_managed_check(char *why, size_t len);

/** Advice on managed memory (cudaMemAdvise). */
typedef enum {
    SHARC_GPU_ADVISE_PREFER_HOST,        /* its pages live in host memory */
    SHARC_GPU_ADVISE_ACCESSED_BY_DEVICE, /* the current device maps them (no fault on access) */
} sharc_gpu_advice_t;
SHARC_HIDDEN sharc_status_t sharc_gpu_mem_advise(void *ptr, size_t bytes,
                                                 sharc_gpu_advice_t advice);
/** Move managed pages to host memory (@p to_host) or to the current device, queued on
 *  @p stream. */
SHARC_HIDDEN sharc_status_t sharc_gpu_prefetch(const void *ptr, size_t bytes, int to_host,
                                               void *stream);

/**
 * A dmabuf of the device pages under [@p addr, @p addr + @p bytes) for an RDMA NIC to
 * register (ibv_reg_dmabuf_mr): a new file descriptor (the caller closes it) and where
 * @p addr lies in it. SHARC_ERR_UNSUPPORTED (not logged) where the driver, CUDA (12 and
 * later) or the memory cannot.
 */
SHARC_HIDDEN sharc_status_t sharc_gpu_dmabuf_export(void *addr, size_t bytes, int *fd_p,
                                                    size_t *offset_p);

/** Copy @p bytes, any direction (the runtime tells host from device), queued on @p stream. */
SHARC_HIDDEN sharc_status_t sharc_gpu_copy(void *dst, const void *src, size_t bytes, void *stream);
/** @p rows rows of @p width bytes, @p dpitch / @p spitch bytes apart, queued on @p stream. */
SHARC_HIDDEN sharc_status_t sharc_gpu_copy2d(void *dst, size_t dpitch, const void *src,
                                             size_t spitch, size_t width, size_t rows,
                                             void *stream);
SHARC_HIDDEN sharc_status_t sharc_gpu_memset(void *ptr, int value, size_t bytes, void *stream);

#endif
