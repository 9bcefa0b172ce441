/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_emu.h: libsharc's CUDA runtime layer (base/gpu.h) and its CUDA kernels' table
 * (kernels/kernels.h) over the host emulation of tests/trainer/cuda_emu.h, so that a test
 * program linking the convenience library (libsharc_core) runs the sharding engine's CUDA
 * mode, offload included, without a GPU: these definitions take the place of gpu_cuda.c's
 * and kernels/cuda's (the linker takes a member of the library only for what is still
 * undefined). Include it once in a program, after cuda_emu.h, in C++.
 *
 * - Memory is cuda_emu.h's: sharc_gpu_memtype answers by the kind a block was allocated
 *   with; copies and memsets check their ranges against the blocks they touch, memsets and
 *   kernels that they run on device or managed memory (a kernel on page-locked host memory,
 *   or a range past a block's end, aborts naming it); advice and prefetch take managed memory
 *   only. SHARCTEST_EMU_NO_MANAGED=1: the device shares no managed memory with the host
 *   (offload managed falls back to host).
 * - Streams and events run in one order: work is done when it is queued, an event is
 *   complete once recorded (timing: the host's clock between the two records). Ordering
 *   between streams is therefore not checked here: a GPU run does.
 * - The CUDA kernels are the host kernels (kernels/cpu) behind the same table, their operands
 *   checked to be device memory.
 * - Collectives on emulated device memory are staged through host memory
 *   (SHARC_CUDA_BACKEND=staged and SHARC_STAGE_CHUNK=256k are set at load unless the
 *   environment sets them): a GPU machine's NCCL must not see host pointers.
 */
#ifndef SHARC_TEST_GPU_EMU_H
#define SHARC_TEST_GPU_EMU_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "../kernels/kernels.h"
#include "../base/gpu.h"
}

namespace gpu_emu
{
/* collectives on emulated device memory go through host memory, not a real NCCL; in chunks of
 * 256 KiB: the engine keeps many collectives in flight, each with page-locked staging of up
 * to 4 chunks a side (SHARC_STAGE_CHUNK, 4 MiB by default: up to 32 MiB a large collective) */
inline int staged =
    setenv("SHARC_CUDA_BACKEND", "staged", 0) + setenv("SHARC_STAGE_CHUNK", "256k", 0);

struct event {
    double t;
};

inline double now()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* [p, p + bytes) inside one block when it starts in one (else plain host memory); a block of
 * the kinds in @p kinds (a mask of 1 << kind; 0: any, or none) */
inline void check(const void *p, size_t bytes, unsigned kinds, const char *what)
{
    uintptr_t start = 0;
    size_t len = 0;
    int kind = cuda_emu::mem_find(p, &start, &len);

    if (kind < 0 && kinds != 0) {
        fprintf(stderr, "gpu_emu: %s on %p, which is not device or managed memory\n", what, p);
        abort();
    }
    if (kind >= 0 && kinds != 0 && !(kinds & (1u << kind))) {
        fprintf(stderr, "gpu_emu: %s on %p, memory of the wrong kind (%d)\n", what, p, kind);
        abort();
    }
    if (kind >= 0 && (uintptr_t)p + bytes > start + len) {
        fprintf(stderr, "gpu_emu: %s of %zu bytes at %p runs past its %zu-byte block\n", what,
                bytes, p, len);
        abort();
    }
}

const unsigned on_device = (1u << cuda_emu::MEM_DEVICE) | (1u << cuda_emu::MEM_MANAGED);
} // namespace gpu_emu

/* ---- base/gpu.h ---------------------------------------------------------------------------
 */

extern "C" {

sharc_memtype_t sharc_gpu_memtype(const void *ptr)
{
    switch (cuda_emu::mem_find(ptr)) {
    case cuda_emu::MEM_DEVICE: return SHARC_MEMTYPE_CUDA;
    case cuda_emu::MEM_MANAGED: return SHARC_MEMTYPE_CUDA_MANAGED;
    default: return SHARC_MEMTYPE_HOST;
    }
}

sharc_status_t sharc_gpu_current_busid(char *busid, size_t len)
{
    return SHARC_ERR_UNSUPPORTED;
}

sharc_status_t sharc_gpu_stream_create(void **stream_p)
{
    *stream_p = new int(0);
    return SHARC_OK;
}

void sharc_gpu_stream_destroy(void *stream)
{
    delete (int *)stream;
}

sharc_status_t sharc_gpu_stream_sync(void *stream)
{
    return SHARC_OK;
}

sharc_status_t sharc_gpu_event_create(int timing, void **event_p)
{
    *event_p = new gpu_emu::event{gpu_emu::now()};
    return SHARC_OK;
}

void sharc_gpu_event_destroy(void *event)
{
    delete (gpu_emu::event *)event;
}

sharc_status_t sharc_gpu_event_record(void *event, void *stream)
{
    ((gpu_emu::event *)event)->t = gpu_emu::now();
    return SHARC_OK;
}

sharc_status_t sharc_gpu_event_query(void *event)
{
    return SHARC_OK;
}

sharc_status_t sharc_gpu_stream_wait(void *stream, void *event)
{
    return SHARC_OK;
}

sharc_status_t sharc_gpu_event_elapsed(void *start, void *end, double *seconds_p)
{
    *seconds_p = ((gpu_emu::event *)end)->t - ((gpu_emu::event *)start)->t;
    return SHARC_OK;
}

sharc_status_t sharc_gpu_alloc(size_t bytes, void **ptr_p)
{
    void *p = cuda_emu::mem_alloc(bytes, cuda_emu::MEM_DEVICE);

    if (p == NULL) {
        return SHARC_ERR_NOMEM;
    }
    *ptr_p = p;
    return SHARC_OK;
}

void sharc_gpu_free(void *ptr)
{
    if (ptr != NULL && cuda_emu::mem_free(ptr) != 0) {
        fprintf(stderr, "gpu_emu: freeing %p, which no allocation returned\n", ptr);
        abort();
    }
}

/* stream-ordered: work runs when queued, so the allocation is the plain one */
sharc_status_t sharc_gpu_alloc_async(size_t bytes, void *stream, void **ptr_p)
{
    return sharc_gpu_alloc(bytes, ptr_p);
}

void sharc_gpu_free_async(void *ptr, void *stream)
{
    sharc_gpu_free(ptr);
}

sharc_status_t sharc_gpu_host_alloc(size_t bytes, void **ptr_p)
{
    void *p = cuda_emu::mem_alloc(bytes, cuda_emu::MEM_PINNED);

    if (p == NULL) {
        return SHARC_ERR_NOMEM;
    }
    *ptr_p = p;
    return SHARC_OK;
}

void sharc_gpu_host_free(void *ptr)
{
    sharc_gpu_free(ptr);
}

sharc_status_t sharc_gpu_managed_alloc(size_t bytes, void **ptr_p)
{
    void *p = cuda_emu::mem_alloc(bytes, cuda_emu::MEM_MANAGED);

    if (p == NULL) {
        return SHARC_ERR_NOMEM;
    }
    *ptr_p = p;
    return SHARC_OK;
}

sharc_status_t sharc_gpu_managed_check(char *why, size_t len)
{
    const char *no = getenv("SHARCTEST_EMU_NO_MANAGED");

    if (no != NULL && no[0] != '\0' && strcmp(no, "0") != 0) {
        snprintf(why, len,
                 "device 0 has no concurrent managed access (emulated: "
                 "SHARCTEST_EMU_NO_MANAGED)");
        return SHARC_ERR_UNSUPPORTED;
    }
    return SHARC_OK;
}

sharc_status_t sharc_gpu_mem_advise(void *ptr, size_t bytes, sharc_gpu_advice_t advice)
{
    gpu_emu::check(ptr, bytes, 1u << cuda_emu::MEM_MANAGED, "cudaMemAdvise");
    return SHARC_OK;
}

sharc_status_t sharc_gpu_prefetch(const void *ptr, size_t bytes, int to_host, void *stream)
{
    gpu_emu::check(ptr, bytes, 1u << cuda_emu::MEM_MANAGED, "cudaMemPrefetchAsync");
    return SHARC_OK;
}

sharc_status_t sharc_gpu_dmabuf_export(void *addr, size_t bytes, int *fd_p, size_t *offset_p)
{
    return SHARC_ERR_UNSUPPORTED;
}

sharc_status_t sharc_gpu_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    gpu_emu::check(dst, bytes, 0, "a copy's destination");
    gpu_emu::check(src, bytes, 0, "a copy's source");
    memmove(dst, src, bytes);
    return SHARC_OK;
}

sharc_status_t sharc_gpu_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t rows, void *stream)
{
    for (size_t r = 0; r < rows; r++) {
        sharc_gpu_copy((char *)dst + r * dpitch, (const char *)src + r * spitch, width, stream);
    }
    return SHARC_OK;
}

sharc_status_t sharc_gpu_memset(void *ptr, int value, size_t bytes, void *stream)
{
    if (bytes > 0) {
        gpu_emu::check(ptr, bytes, gpu_emu::on_device, "cudaMemsetAsync");
        memset(ptr, value, bytes);
    }
    return SHARC_OK;
}

/* For tests: emulated device memory in use now and at most so far, in bytes. */
void gpu_emu_device_bytes(size_t *now_p, size_t *peak_p)
{
    std::lock_guard<std::mutex> g(cuda_emu::mem_lock);

    *now_p = cuda_emu::mem_used[cuda_emu::MEM_DEVICE];
    *peak_p = cuda_emu::mem_peak[cuda_emu::MEM_DEVICE];
}

} /* extern "C" */

/* ---- kernels/cuda: the host kernels on emulated device memory ------------------------------ */

namespace gpu_emu
{
inline sharc_status_t cast(void *dst, sharc_dtype_t dt, const void *src, sharc_dtype_t st,
                           size_t count, void *stream)
{
    check(dst, count * sharc_dtype_size(dt), on_device, "the cast kernel");
    check(src, count * sharc_dtype_size(st), on_device, "the cast kernel");
    return sharc_kern_cpu_ops.cast(dst, dt, src, st, count, stream);
}

inline sharc_status_t reduce(void *dst, const void *a, const void *b, size_t count,
                             sharc_dtype_t dtype, sharc_op_t op, void *stream)
{
    size_t bytes = count * sharc_dtype_size(dtype);

    check(dst, bytes, on_device, "the reduce kernel");
    check(a, bytes, on_device, "the reduce kernel");
    check(b, bytes, on_device, "the reduce kernel");
    return sharc_kern_cpu_ops.reduce(dst, a, b, count, dtype, op, stream);
}

inline sharc_status_t scale(void *buf, size_t count, sharc_dtype_t dtype, double factor,
                            void *stream)
{
    check(buf, count * sharc_dtype_size(dtype), on_device, "the scale kernel");
    return sharc_kern_cpu_ops.scale(buf, count, dtype, factor, stream);
}

inline sharc_status_t adamw(const sharc_kern_adamw_t *a, float *p, const float *g, float *m,
                            float *v, size_t count, void *stream)
{
    const void *all[] = {p, g, m, v};

    for (const void *x : all) {
        check(x, count * sizeof(float), on_device, "the AdamW kernel");
    }
    return sharc_kern_cpu_ops.adamw(a, p, g, m, v, count, stream);
}

inline sharc_status_t sumsq(double *acc, const float *x, size_t count, void *stream)
{
    check(acc, (1 + SHARC_KERN_SUMSQ_SCRATCH) * sizeof(double), on_device, "the sumsq kernel");
    check(x, count * sizeof(float), on_device, "the sumsq kernel");
    return sharc_kern_cpu_ops.sumsq(acc, x, count, stream);
}

/* The bytes of @p nseg wire segments of @p count values each (their layout's). */
inline size_t wire_bytes(sharc_kern_wire_t w, size_t count, int nseg, sharc_dtype_t dtype)
{
    return (size_t)(nseg > 0 ? nseg : 0) * sharc_wire_size(w.format, count, w.block, dtype);
}

inline sharc_status_t quantize(void *seg, sharc_kern_wire_t w, const void *src,
                               sharc_dtype_t src_dtype, size_t count, int nseg, void *stream)
{
    size_t n = (size_t)(nseg > 0 ? nseg : 0) * count;

    check(seg, wire_bytes(w, count, nseg, src_dtype), on_device, "the quantize kernel");
    check(src, n * sharc_dtype_size(src_dtype), on_device, "the quantize kernel");
    return sharc_kern_cpu_ops.quantize(seg, w, src, src_dtype, count, nseg, stream);
}

inline sharc_status_t dequantize(void *dst, sharc_dtype_t dst_dtype, const void *seg,
                                 sharc_kern_wire_t w, size_t count, int nseg, void *stream)
{
    size_t n = (size_t)(nseg > 0 ? nseg : 0) * count;

    check(dst, n * sharc_dtype_size(dst_dtype), on_device, "the dequantize kernel");
    check(seg, wire_bytes(w, count, nseg, dst_dtype), on_device, "the dequantize kernel");
    return sharc_kern_cpu_ops.dequantize(dst, dst_dtype, seg, w, count, nseg, stream);
}

inline sharc_status_t dequantize_sum(void *dst, sharc_dtype_t dst_dtype, const float *base,
                                     const void *seg, sharc_kern_wire_t w, size_t count, int nseg,
                                     int skip, double factor, void *stream)
{
    check(dst, count * sharc_dtype_size(dst_dtype), on_device, "the dequantize-sum kernel");
    if (base != NULL) {
        check(base, count * sizeof(float), on_device, "the dequantize-sum kernel");
    }
    check(seg, wire_bytes(w, count, nseg, dst_dtype), on_device, "the dequantize-sum kernel");
    return sharc_kern_cpu_ops.dequantize_sum(dst, dst_dtype, base, seg, w, count, nseg, skip,
                                             factor, stream);
}
} // namespace gpu_emu

extern "C" const sharc_kern_ops_t sharc_kern_cuda_ops = {
    "cuda (emulated: the host kernels)",
    gpu_emu::cast,
    gpu_emu::reduce,
    gpu_emu::scale,
    sharc_kern_cpu_ops.pack,
    sharc_kern_cpu_ops.unpack,
    gpu_emu::adamw,
    gpu_emu::sumsq,
    gpu_emu::quantize,
    gpu_emu::dequantize,
    gpu_emu::dequantize_sum,
};

extern "C" const sharc_kern_ops_t *sharc_kern_cuda(void)
{
    return &sharc_kern_cuda_ops;
}

#endif
