/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_cuda.c: gpu.h over the CUDA runtime (and the one driver entry point for dmabuf export),
 * the one place outside transport/nccl and kernels/cuda that calls it. cudaError_t becomes a
 * sharc_status_t here, logged once.
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "gpu.h"
#include "log.h"

static sharc_status_t sharc_gpu_check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess) {
        return SHARC_OK;
    }
    sharc_error("cuda: %s: %s", what, cudaGetErrorString(err));
    return err == cudaErrorMemoryAllocation ? SHARC_ERR_NOMEM : SHARC_ERR_BACKEND;
}

sharc_memtype_t sharc_gpu_memtype(const void *ptr)
{
    struct cudaPointerAttributes attr;
    cudaError_t err;

    if (ptr == NULL) {
        return SHARC_MEMTYPE_HOST;
    }
    err = cudaPointerGetAttributes(&attr, ptr);
    if (err != cudaSuccess) {
        cudaGetLastError(); /* no driver, no device, or a foreign pointer: host memory */
        return SHARC_MEMTYPE_HOST;
    }
    switch (attr.type) {
    case cudaMemoryTypeDevice: return SHARC_MEMTYPE_CUDA;
    case cudaMemoryTypeManaged: return SHARC_MEMTYPE_CUDA_MANAGED;
    default: return SHARC_MEMTYPE_HOST; /* unregistered or page-locked host memory */
    }
}

sharc_status_t sharc_gpu_current_busid(char *busid, size_t len)
{
    int dev;

    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetPCIBusId(busid, (int)len, dev) != cudaSuccess) {
        cudaGetLastError();
        return SHARC_ERR_UNSUPPORTED;
    }
    for (char *c = busid; *c != '\0'; c++) {
        *c = (char)tolower((unsigned char)*c);
    }
    return SHARC_OK;
}

sharc_status_t sharc_gpu_stream_create(void **stream_p)
{
    cudaStream_t s;
    sharc_status_t status =
        sharc_gpu_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream create");

    if (status == SHARC_OK) {
        *stream_p = s;
    }
    return status;
}

void sharc_gpu_stream_destroy(void *stream)
{
    if (stream != NULL) {
        cudaStreamDestroy((cudaStream_t)stream);
    }
}

sharc_status_t sharc_gpu_stream_sync(void *stream)
{
    return sharc_gpu_check(cudaStreamSynchronize((cudaStream_t)stream), "stream synchronize");
}

sharc_status_t sharc_gpu_event_create(int timing, void **event_p)
{
    cudaEvent_t e;
    sharc_status_t status = sharc_gpu_check(
        cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
        "event create");

    if (status == SHARC_OK) {
        *event_p = e;
    }
    return status;
}

void sharc_gpu_event_destroy(void *event)
{
    if (event != NULL) {
        cudaEventDestroy((cudaEvent_t)event);
    }
}

sharc_status_t sharc_gpu_event_record(void *event, void *stream)
{
    return sharc_gpu_check(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream),
                           "event record");
}

sharc_status_t sharc_gpu_event_query(void *event)
{
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);

    if (err == cudaErrorNotReady) {
        return SHARC_INPROGRESS;
    }
    return sharc_gpu_check(err, "event query");
}

sharc_status_t sharc_gpu_stream_wait(void *stream, void *event)
{
    return sharc_gpu_check(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0),
                           "stream wait event");
}

sharc_status_t sharc_gpu_event_elapsed(void *start, void *end, double *seconds_p)
{
    float ms = 0;
    sharc_status_t status = sharc_gpu_check(
        cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end), "event elapsed time");

    if (status == SHARC_OK) {
        *seconds_p = ms * 1e-3;
    }
    return status;
}

sharc_status_t sharc_gpu_alloc(size_t bytes, void **ptr_p)
{
    void *p = NULL;
    sharc_status_t status = sharc_gpu_check(cudaMalloc(&p, bytes), "device allocation");

    if (status == SHARC_OK) {
        *ptr_p = p;
    }
    return status;
}

void sharc_gpu_free(void *ptr)
{
    if (ptr != NULL) {
        cudaFree(ptr);
    }
}

sharc_status_t sharc_gpu_alloc_async(size_t bytes, void *stream, void **ptr_p)
{
    void *p = NULL;
    sharc_status_t status = sharc_gpu_check(cudaMallocAsync(&p, bytes, (cudaStream_t)stream),
                                            "stream-ordered device allocation");

    if (status == SHARC_OK) {
        *ptr_p = p;
    }
    return status;
}

void sharc_gpu_free_async(void *ptr, void *stream)
{
    if (ptr != NULL) {
        cudaFreeAsync(ptr, (cudaStream_t)stream);
    }
}

sharc_status_t sharc_gpu_host_alloc(size_t bytes, void **ptr_p)
{
    void *p = NULL;
    sharc_status_t status =
        sharc_gpu_check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "pinned allocation");

    if (status == SHARC_OK) {
        *ptr_p = p;
    }
    return status;
}

void sharc_gpu_host_free(void *ptr)
{
    if (ptr != NULL) {
        cudaFreeHost(ptr);
    }
}

sharc_status_t sharc_gpu_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    if (bytes == 0) {
        return SHARC_OK;
    }
    return sharc_gpu_check(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream), "copy");
}

sharc_status_t sharc_gpu_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t rows, void *stream)
{
    if (width == 0 || rows == 0) {
        return SHARC_OK;
    }
    return sharc_gpu_check(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows,
                                             cudaMemcpyDefault, (cudaStream_t)stream),
                           "strided copy");
}

sharc_status_t sharc_gpu_memset(void *ptr, int value, size_t bytes, void *stream)
{
    if (bytes == 0) {
        return SHARC_OK;
    }
    return sharc_gpu_check(cudaMemsetAsync(ptr, value, bytes, (cudaStream_t)stream), "memset");
}

sharc_status_t sharc_gpu_managed_alloc(size_t bytes, void **ptr_p)
{
    void *p = NULL;
    sharc_status_t status =
        sharc_gpu_check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal), "managed allocation");

    if (status == SHARC_OK) {
        *ptr_p = p;
    }
    return status;
}

sharc_status_t sharc_gpu_managed_check(char *why, size_t len)
{
    int dev = 0, managed = 0, concurrent = 0;

    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev) !=
            cudaSuccess) {
        snprintf(why, len, "the device's attributes cannot be read (%s)",
                 cudaGetErrorString(cudaGetLastError()));
        return SHARC_ERR_UNSUPPORTED;
    }
    if (!managed || !concurrent) {
        snprintf(why, len,
                 "device %d has %s (cudaDevAttrManagedMemory %d, "
                 "cudaDevAttrConcurrentManagedAccess %d)",
                 dev, !managed ? "no managed memory" : "no concurrent managed access", managed,
                 concurrent);
        return SHARC_ERR_UNSUPPORTED;
    }
    return SHARC_OK;
}

/* Where managed memory goes: the host, or the current device. */
#if CUDART_VERSION >= 12020
static struct cudaMemLocation sharc_gpu_location(int to_host)
{
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeHost, .id = 0};

    if (!to_host) {
        loc.type = cudaMemLocationTypeDevice;
        cudaGetDevice(&loc.id);
    }
    return loc;
}
#else
static int sharc_gpu_location(int to_host)
{
    int dev = cudaCpuDeviceId;

    if (!to_host) {
        cudaGetDevice(&dev);
    }
    return dev;
}
#endif

sharc_status_t sharc_gpu_mem_advise(void *ptr, size_t bytes, sharc_gpu_advice_t advice)
{
    int host = advice == SHARC_GPU_ADVISE_PREFER_HOST;
    enum cudaMemoryAdvise a = host ? cudaMemAdviseSetPreferredLocation : cudaMemAdviseSetAccessedBy;

#if CUDART_VERSION >= 13000
    return sharc_gpu_check(cudaMemAdvise(ptr, bytes, a, sharc_gpu_location(host)), "memory advice");
#elif CUDART_VERSION >= 12020
    return sharc_gpu_check(cudaMemAdvise_v2(ptr, bytes, a, sharc_gpu_location(host)),
                           "memory advice");
#else
    return sharc_gpu_check(cudaMemAdvise(ptr, bytes, a, sharc_gpu_location(host)), "memory advice");
#endif
}

sharc_status_t sharc_gpu_prefetch(const void *ptr, size_t bytes, int to_host, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;

#if CUDART_VERSION >= 13000
    return sharc_gpu_check(cudaMemPrefetchAsync(ptr, bytes, sharc_gpu_location(to_host), 0, s),
                           "prefetch");
#elif CUDART_VERSION >= 12020
    return sharc_gpu_check(cudaMemPrefetchAsync_v2(ptr, bytes, sharc_gpu_location(to_host), 0, s),
                           "prefetch");
#else
    return sharc_gpu_check(cudaMemPrefetchAsync(ptr, bytes, sharc_gpu_location(to_host), s),
                           "prefetch");
#endif
}

sharc_status_t sharc_gpu_dmabuf_export(void *addr, size_t bytes, int *fd_p, size_t *offset_p)
{
#if CUDART_VERSION >= 12000
    typedef CUresult (*get_handle_fn)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
                                      unsigned long long);
    get_handle_fn get_handle = NULL;
    enum cudaDriverEntryPointQueryResult q;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr, base = a & ~(uintptr_t)(page - 1);
    size_t len = (a + bytes - base + page - 1) & ~(page - 1);
    int fd = -1;

    /* the driver's entry point, found at run time: the runtime has no wrapper for it */
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", (void **)&get_handle,
                                         12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || get_handle == NULL) {
        return SHARC_ERR_UNSUPPORTED;
    }
#else
    if (cudaGetDriverEntryPoint("cuMemGetHandleForAddressRange", (void **)&get_handle,
                                cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || get_handle == NULL) {
        return SHARC_ERR_UNSUPPORTED;
    }
#endif
    if (get_handle(&fd, (CUdeviceptr)base, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) !=
        CUDA_SUCCESS) {
        return SHARC_ERR_UNSUPPORTED;
    }
    *fd_p = fd;
    *offset_p = a - base;
    return SHARC_OK;
#else /* dmabuf export needs CUDA 12: peer memory only */
    return SHARC_ERR_UNSUPPORTED;
#endif
}
