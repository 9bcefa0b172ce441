/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_emu.h: enough of CUDA, on the host, to compile sharc-llama's CUDA ops (the .cu files of
 * trainer/ops/cuda/, with LLAMA_CUDA_EMU defined) as C++ and run them: the kernels, their
 * launches, their cuBLAS calls and the runtime calls around them, unchanged.
 *
 * - A block's threads are fibers run in turn on one thread, the highest index first (the
 *   lowest first with SHARCTEST_EMU_ASCENDING set): each runs until it waits at
 *   __syncthreads or __syncwarp, which are real barriers (a barrier that can never complete
 *   aborts, naming it). A missing barrier shows as a read of memory another thread has not
 *   written yet, in one order or the other. Blocks and launches run one after another, at the
 *   launch: "device" work is done when the call returns. Fibers switch by swapping the
 *   callee-saved registers on x86-64 (ucontext, which costs a system call per switch,
 *   elsewhere). Include this header in one file of a program.
 * - Shuffles go through a per-warp exchange; static __shared__ arrays are static (one block
 *   at a time); dynamic shared memory is a buffer filled with garbage before each block.
 * - bf16 rounds to nearest even. A WMMA fragment holds its whole 16x16 tile in every lane;
 *   loads and products are per lane, stores are written by lane 0 (so a lane that reads a
 *   stored tile without waiting for the warp sees stale memory, as on a GPU).
 * - Memory is host memory, registered by kind (device, page-locked, managed: cudaMemGetInfo
 *   counts the device's; new device memory reads as NaN until written); copies are memcpy;
 *   streams do nothing (one order); an event holds the host's clock when it was recorded;
 *   the opt-in shared memory of a block is an H100's 227 KiB, or SHARCTEST_EMU_SMEM bytes;
 *   cuBLAS's GEMMs are plain loops with f32 accumulation, with cuBLAS's column-major
 *   arguments (transposes, leading dimensions, batch strides) as documented; cuBLASLt's
 *   descriptors are checked against each other (layouts against transposes, attribute sizes,
 *   the heuristic's algorithm, workspace and alignments against the call that uses them) and
 *   its products are the same loops; SHARCTEST_EMU_LT_NOALGO set: its heuristic offers none.
 * For tests; slow; it checks what the code computes and where it synchronizes, not timing.
 */
#ifndef SHARC_TEST_CUDA_EMU_H
#define SHARC_TEST_CUDA_EMU_H

#define LLAMA_CUDA_EMU 1
/* few blocks where the kernels loop over the rest (trainer/ops/cuda/geom.h): their loops run */
#define LLAMA_GEOM_MAX_BLOCKS    3
#define LLAMA_GEOM_COLSUM_BLOCKS 3
#define LLAMA_GEOM_MAX_PARTIALS  3

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include <sharc/sharc.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(_n) alignas(_n)
#define __shared__    static
#define CUDART_CB

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c)
    {
    }
};

/* the fiber running now sees its own indices: the scheduler sets these before it switches */
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

/* ---- threads as fibers, barriers, launches (cuda_emu_fibers.h) ---------------------------- */

#include "cuda_emu_fibers.h"

/* ---- types ------------------------------------------------------------------------------- */

struct uint4 {
    unsigned x, y, z, w;
};

inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
    return uint4{x, y, z, w};
}

/* the upper half of an f32, rounded to nearest even; a NaN stays a NaN */
struct __nv_bfloat16 {
    uint16_t bits;
};

inline float __bfloat162float(__nv_bfloat16 b)
{
    uint32_t u = (uint32_t)b.bits << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return __nv_bfloat16{(uint16_t)((u >> 16) | 0x40)};
    }
    u += 0x7fffu + ((u >> 16) & 1);
    return __nv_bfloat16{(uint16_t)(u >> 16)};
}

/* ---- WMMA --------------------------------------------------------------------------------- */

namespace nvcuda
{
namespace wmma
{
struct matrix_a {
};
struct matrix_b {
};
struct accumulator {
};
struct row_major {
};
struct col_major {
};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static const int num_elements = 256;
    float x[256]; /* [row][col] */
};

template <typename Use, typename T, typename L>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, float v)
{
    for (int i = 0; i < 256; i++) {
        f.x[i] = v;
    }
}

inline float emu_load(const __nv_bfloat16 *p, size_t i)
{
    return __bfloat162float(p[i]);
}

inline float emu_load(const float *p, size_t i)
{
    return p[i];
}

/* element (r, c): row-major at p[r * ldm + c], column-major at p[c * ldm + r] */
template <typename Use, typename T>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, row_major> &f, const T *p, unsigned ldm)
{
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 16; c++) {
            f.x[r * 16 + c] = emu_load(p, (size_t)r * ldm + c);
        }
    }
}

template <typename Use, typename T>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, col_major> &f, const T *p, unsigned ldm)
{
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 16; c++) {
            f.x[r * 16 + c] = emu_load(p, (size_t)c * ldm + r);
        }
    }
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                             unsigned ldm, layout_t layout)
{
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 16; c++) {
            size_t i = layout == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r;
            f.x[r * 16 + c] = p[i];
        }
    }
}

inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                              unsigned ldm, layout_t layout)
{
    if (threadIdx.x % 32 != 0) {
        return;
    }
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 16; c++) {
            size_t i = layout == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r;
            p[i] = f.x[r * 16 + c];
        }
    }
}

/* d = a b + c in f32 (products of bf16 values are exact in f32) */
template <typename LA, typename LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                     const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
                     const fragment<accumulator, 16, 16, 16, float> &c)
{
    float out[256];

    for (int r = 0; r < 16; r++) {
        for (int n = 0; n < 16; n++) {
            float s = c.x[r * 16 + n];
            for (int k = 0; k < 16; k++) {
                s += a.x[r * 16 + k] * b.x[k * 16 + n];
            }
            out[r * 16 + n] = s;
        }
    }
    memcpy(d.x, out, sizeof(out));
}
} // namespace wmma
} // namespace nvcuda

/* ---- the runtime: host memory, everything done at the call ----------------------------------- */

typedef enum {
    cudaSuccess = 0,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidValue = 1,
    cudaErrorInvalidResourceHandle = 400
} cudaError_t;
typedef struct emu_stream *cudaStream_t;
typedef struct emu_event *cudaEvent_t;
typedef enum {
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice
} cudaMemcpyKind;
typedef enum {
    cudaDevAttrMemoryPoolsSupported,
    cudaDevAttrMaxSharedMemoryPerBlockOptin
} cudaDeviceAttr;
typedef enum { cudaFuncAttributeMaxDynamicSharedMemorySize } cudaFuncAttribute;
typedef enum { CUDA_R_32F = 0, CUDA_R_16BF = 14 } cudaDataType_t;
#define cudaStreamNonBlocking  1
#define cudaEventDisableTiming 2

struct cudaDeviceProp {
    char name[256];
    int major, minor;
};

inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "emulated error";
}
inline cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d)
{
    return d == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaGetDevice(int *d)
{
    *d = 0;
    return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
    snprintf(p->name, sizeof(p->name), "emulated GPU (tests/trainer/cuda_emu.h)");
    p->major = 9;
    p->minor = 0;
    return cudaSuccess;
}
/* shared memory a block may opt in to: an H100's, or SHARCTEST_EMU_SMEM bytes (another GPU) */
inline int emu_max_smem(void)
{
    const char *v = getenv("SHARCTEST_EMU_SMEM");

    return v != NULL && *v != '\0' ? atoi(v) : 227 * 1024;
}
inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d)
{
    *v = a == cudaDevAttrMaxSharedMemoryPerBlockOptin ? emu_max_smem() : 1;
    return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    static int dummy;
    *s = (cudaStream_t)&dummy;
    return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    return cudaSuccess;
}
/* Memory: host memory registered by kind (device, page-locked, managed), so that a pointer's
 * kind can be asked (cudaPointerGetAttributes, and sharc's runtime layer: tests/gpu_emu.h) and
 * device memory in use counted (cudaMemGetInfo: an 80 GB device). New device and managed
 * memory is filled with 0xff bytes (NaN as f32): a read before a write shows. */
namespace cuda_emu
{
enum mem_kind { MEM_DEVICE, MEM_PINNED, MEM_MANAGED, MEM_KINDS };
struct mem_block {
    size_t bytes;
    mem_kind kind;
};
inline std::mutex mem_lock;
inline std::map<uintptr_t, mem_block> mem_blocks;
inline size_t mem_used[MEM_KINDS], mem_peak[MEM_KINDS];
const size_t mem_total = (size_t)80 << 30;

inline void *mem_alloc(size_t bytes, mem_kind kind)
{
    size_t len = ((bytes ? bytes : 1) + 255) & ~(size_t)255;
    void *p = aligned_alloc(256, len);

    if (p == NULL) {
        return NULL;
    }
    if (kind != MEM_PINNED) { /* (page-locked memory is the host's: as malloc leaves it) */
        memset(p, 0xff, len);
    }
    std::lock_guard<std::mutex> g(mem_lock);
    mem_blocks[(uintptr_t)p] = {bytes, kind};
    mem_used[kind] += bytes;
    mem_peak[kind] = mem_used[kind] > mem_peak[kind] ? mem_used[kind] : mem_peak[kind];
    return p;
}

/* The block @p p lies in: its kind, or -1 for memory the emulation did not hand out. */
inline int mem_find(const void *p, uintptr_t *start_p = NULL, size_t *bytes_p = NULL)
{
    std::lock_guard<std::mutex> g(mem_lock);
    auto it = mem_blocks.upper_bound((uintptr_t)p);

    if (p == NULL || it == mem_blocks.begin()) {
        return -1;
    }
    --it;
    if ((uintptr_t)p >= it->first + (it->second.bytes ? it->second.bytes : 1)) {
        return -1;
    }
    if (start_p != NULL) {
        *start_p = it->first;
    }
    if (bytes_p != NULL) {
        *bytes_p = it->second.bytes;
    }
    return it->second.kind;
}

inline int mem_free(void *p)
{
    std::lock_guard<std::mutex> g(mem_lock);
    auto it = mem_blocks.find((uintptr_t)p);

    if (it == mem_blocks.end()) {
        return -1;
    }
    mem_used[it->second.kind] -= it->second.bytes;
    mem_blocks.erase(it);
    free(p);
    return 0;
}
} // namespace cuda_emu

inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = cuda_emu::mem_alloc(bytes, cuda_emu::MEM_DEVICE);
    return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
    return cudaMalloc(p, bytes);
}
inline cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    *p = cuda_emu::mem_alloc(bytes, cuda_emu::MEM_PINNED);
    return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFree(void *p)
{
    return (p == NULL || cuda_emu::mem_free(p) == 0) ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    return cudaFree(p);
}
inline cudaError_t cudaFreeHost(void *p)
{
    return cudaFree(p);
}
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
    memset(p, v, bytes);
    return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t bytes, cudaMemcpyKind k,
                                   cudaStream_t st)
{
    memmove(d, s, bytes);
    return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    std::lock_guard<std::mutex> g(cuda_emu::mem_lock);

    *total_b = cuda_emu::mem_total;
    *free_b = cuda_emu::mem_total - cuda_emu::mem_used[cuda_emu::MEM_DEVICE];
    return cudaSuccess;
}
/* Events: work is done when it is queued, so an event recorded holds the host's clock then;
 * the elapsed time between two is the host's time between their records. As CUDA does, a
 * timing read of an event never recorded, or made with cudaEventDisableTiming, fails. */
struct emu_event {
    double t;
    bool recorded, timing;
};
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    *e = new emu_event{0.0, false, (flags & cudaEventDisableTiming) == 0};
    return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, 0);
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    e->t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    e->recorded = true;
    return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    if (!a->recorded || !b->recorded || !a->timing || !b->timing) {
        return cudaErrorInvalidResourceHandle;
    }
    *ms = (float)((b->t - a->t) * 1e3);
    return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}
template <typename K> inline cudaError_t cudaFuncSetAttribute(K k, cudaFuncAttribute a, int v)
{
    return v <= emu_max_smem() ? cudaSuccess : cudaErrorInvalidValue;
}

/* sharc_cuda.h's, for host buffers: the host waits */
inline sharc_status_t sharc_request_wait_stream(sharc_request_h req, cudaStream_t s)
{
    return sharc_request_wait(req);
}
inline sharc_status_t sharc_comm_set_cuda_stream(sharc_comm_h comm, cudaStream_t s)
{
    return SHARC_OK;
}

/* ---- cuBLAS and cuBLASLt (cuda_emu_blas.h) ---------------------------------------------- */

#include "cuda_emu_blas.h"

#endif
