/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_none.c: gpu.h in a build without CUDA: every buffer is host memory, and whatever
 * would need a GPU reports SHARC_ERR_UNSUPPORTED (logged once per call site's caller).
 */
#include "config.h"

#include <stdio.h>

#include "gpu.h"
#include "log.h"

static sharc_status_t sharc_gpu_none(const char *what)
{
    sharc_error("%s needs CUDA, and this sharc was built without it", what);
    return SHARC_ERR_UNSUPPORTED;
}

sharc_status_t sharc_gpu_current_busid(char *busid, size_t len)
{
    (void)busid;
    (void)len;
    return SHARC_ERR_UNSUPPORTED;
}

sharc_memtype_t sharc_gpu_memtype(const void *ptr)
{
    return SHARC_MEMTYPE_HOST;
}

sharc_status_t sharc_gpu_stream_create(void **stream_p)
{
    return sharc_gpu_none("a CUDA stream");
}

void sharc_gpu_stream_destroy(void *stream)
{
}

sharc_status_t sharc_gpu_stream_sync(void *stream)
{
    return sharc_gpu_none("a CUDA stream");
}

sharc_status_t sharc_gpu_event_create(int timing, void **event_p)
{
    return sharc_gpu_none("a CUDA event");
}

void sharc_gpu_event_destroy(void *event)
{
}

sharc_status_t sharc_gpu_event_record(void *event, void *stream)
{
    return sharc_gpu_none("a CUDA event");
}

sharc_status_t sharc_gpu_event_query(void *event)
{
    return sharc_gpu_none("a CUDA event");
}

sharc_status_t sharc_gpu_stream_wait(void *stream, void *event)
{
    return sharc_gpu_none("a CUDA stream");
}

sharc_status_t sharc_gpu_event_elapsed(void *start, void *end, double *seconds_p)
{
    return sharc_gpu_none("a CUDA event");
}

sharc_status_t sharc_gpu_alloc(size_t bytes, void **ptr_p)
{
    return sharc_gpu_none("device memory");
}

void sharc_gpu_free(void *ptr)
{
}

sharc_status_t sharc_gpu_alloc_async(size_t bytes, void *stream, void **ptr_p)
{
    return sharc_gpu_none("device memory");
}

void sharc_gpu_free_async(void *ptr, void *stream)
{
}

sharc_status_t sharc_gpu_host_alloc(size_t bytes, void **ptr_p)
{
    return sharc_gpu_none("page-locked memory");
}

void sharc_gpu_host_free(void *ptr)
{
}

sharc_status_t sharc_gpu_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    return sharc_gpu_none("a device copy");
}

sharc_status_t sharc_gpu_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t rows, void *stream)
{
    return sharc_gpu_none("a device copy");
}

sharc_status_t sharc_gpu_memset(void *ptr, int value, size_t bytes, void *stream)
{
    return sharc_gpu_none("a device memset");
}

sharc_status_t sharc_gpu_managed_alloc(size_t bytes, void **ptr_p)
{
    return sharc_gpu_none("managed memory");
}

sharc_status_t sharc_gpu_managed_check(char *why, size_t len)
{
    snprintf(why, len, "this sharc was built without CUDA");
    return SHARC_ERR_UNSUPPORTED;
}

sharc_status_t sharc_gpu_mem_advise(void *ptr, size_t bytes, sharc_gpu_advice_t advice)
{
    return sharc_gpu_none("managed memory");
}

sharc_status_t sharc_gpu_prefetch(const void *ptr, size_t bytes, int to_host, void *stream)
{
    return sharc_gpu_none("managed memory");
}

sharc_status_t sharc_gpu_dmabuf_export(void *addr, size_t bytes, int *fd_p, size_t *offset_p)
{
    return SHARC_ERR_UNSUPPORTED;
}
