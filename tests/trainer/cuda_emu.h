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

/* ---- threads as fibers, barriers ---------------------------------------------------------- */

namespace cuda_emu
{
const size_t stack_bytes = 256 << 10;

#if defined(__x86_64__)
/* save rbp, rbx, r12-r15 and the stack pointer into *save_sp, take load_sp's (System V) */
extern "C" void cuda_emu_switch(void **save_sp, void *load_sp);
asm(".text\n"
    ".globl cuda_emu_switch\n"
    ".type cuda_emu_switch, @function\n"
    "cuda_emu_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size cuda_emu_switch, .-cuda_emu_switch\n");

struct context {
    void *sp;
};

inline void ctx_switch(context *from, context *to)
{
    cuda_emu_switch(&from->sp, to->sp);
}

/* a context that starts fn (which never returns) on the stack: six zero registers and fn as
 * the return address, 16-byte aligned as after a call */
inline void ctx_make(context *c, void *stack, size_t bytes, void (*fn)())
{
    void **top = (void **)(((uintptr_t)stack + bytes) & ~(uintptr_t)15);

    top -= 2;
    top[0] = (void *)fn;
    top[1] = NULL;
    for (int i = 1; i <= 6; i++) {
        top[-i] = NULL;
    }
    c->sp = top - 6;
}
#else
typedef ucontext_t context;

inline void ctx_switch(context *from, context *to)
{
    swapcontext(from, to);
}

inline void ctx_make(context *c, void *stack, size_t bytes, void (*fn)())
{
    getcontext(c);
    c->uc_stack.ss_sp = stack;
    c->uc_stack.ss_size = bytes;
    c->uc_link = NULL;
    makecontext(c, fn, 0);
}
#endif

struct fiber {
    context ctx;
    void *stack;
    bool done;
};

inline context sched;
inline std::vector<fiber> fibers;
inline int cur, ndone;
inline const std::function<void()> *body;
inline unsigned long block_gen, warp_gen[32];
inline unsigned block_arrived, warp_arrived[32];
inline unsigned char *smem;
inline float xf[1024];
inline double xd[1024];

inline void yield()
{
    ctx_switch(&fibers[cur].ctx, &sched);
}

/* done threads count as arrived: a barrier after a thread's return does not wait for it */
inline unsigned warp_size(unsigned w)
{
    unsigned n = blockDim.x - 32 * w;
    return n < 32 ? n : 32;
}

/* a thread's life: the kernel, then done, and back to the scheduler for good */
inline void entry()
{
    (*body)();
    fibers[cur].done = true;
    ndone++;
    unsigned w = threadIdx.x / 32;
    if (block_arrived > 0 && block_arrived + ndone == blockDim.x) {
        block_arrived = 0;
        block_gen++;
    }
    unsigned wdone = 0;
    for (unsigned t = 32 * w; t < 32 * w + warp_size(w); t++) {
        wdone += fibers[t].done;
    }
    if (warp_arrived[w] > 0 && warp_arrived[w] + wdone == warp_size(w)) {
        warp_arrived[w] = 0;
        warp_gen[w]++;
    }
    ctx_switch(&fibers[cur].ctx, &sched);
    abort(); /* a done fiber is never resumed */
}
} // namespace cuda_emu

inline void __syncthreads()
{
    using namespace cuda_emu;
    unsigned long gen = block_gen;

    if (++block_arrived + ndone == blockDim.x) {
        block_arrived = 0;
        block_gen++;
        return;
    }
    while (block_gen == gen) {
        yield();
    }
}

inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    using namespace cuda_emu;
    unsigned w = threadIdx.x / 32, wdone = 0;
    unsigned long gen = warp_gen[w];

    (void)mask;
    for (unsigned t = 32 * w; t < 32 * w + warp_size(w); t++) {
        wdone += fibers[t].done;
    }
    if (++warp_arrived[w] + wdone == warp_size(w)) {
        warp_arrived[w] = 0;
        warp_gen[w]++;
        return;
    }
    while (warp_gen[w] == gen) {
        yield();
    }
}

/* publish, wait for the warp, read the partner's, wait again before the slot is reused */
inline float __shfl_xor_sync(unsigned mask, float v, int o)
{
    cuda_emu::xf[threadIdx.x] = v;
    __syncwarp(mask);
    float r = cuda_emu::xf[threadIdx.x ^ (unsigned)o];
    __syncwarp(mask);
    return r;
}

inline double __shfl_xor_sync(unsigned mask, double v, int o)
{
    cuda_emu::xd[threadIdx.x] = v;
    __syncwarp(mask);
    double r = cuda_emu::xd[threadIdx.x ^ (unsigned)o];
    __syncwarp(mask);
    return r;
}

#define LLAMA_CUDA_DYN_SMEM(_name) unsigned char *_name = cuda_emu::smem

namespace cuda_emu
{
/*
 * @p kernel as a grid of blocks of @p block threads with @p smem_bytes of dynamic shared
 * memory: each block's threads as fibers, from the highest index down in every round (or up).
 */
inline void launch(dim3 grid, dim3 block, size_t smem_bytes, const std::function<void()> &kernel)
{
    static std::vector<unsigned char> shared;
    static const bool ascending = getenv("SHARCTEST_EMU_ASCENDING") != NULL;

    if (block.x == 0 || block.x > 1024 || grid.x == 0 || grid.y == 0) {
        fprintf(stderr, "cuda_emu: launch of %u x %u blocks of %u threads: invalid\n", grid.x,
                grid.y, block.x);
        abort();
    }
    shared.resize(smem_bytes + 128);
    smem = shared.data() + (128 - (uintptr_t)shared.data() % 128) % 128;
    gridDim = grid;
    blockDim = block;
    body = &kernel;
    if (fibers.size() < block.x) {
        size_t old = fibers.size();
        fibers.resize(block.x);
        for (size_t i = old; i < block.x; i++) {
            fibers[i].stack = mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        }
    }
    for (unsigned by = 0; by < grid.y; by++) {
        for (unsigned bx = 0; bx < grid.x; bx++) {
            blockIdx = dim3(bx, by);
            memset(smem, 0xcd, smem_bytes);
            ndone = 0;
            block_arrived = 0;
            memset(warp_arrived, 0, sizeof(warp_arrived));
            for (unsigned t = 0; t < block.x; t++) {
                fibers[t].done = false;
                ctx_make(&fibers[t].ctx, fibers[t].stack, stack_bytes, entry);
            }
            while (ndone < (int)block.x) {
                unsigned long before = block_gen;
                unsigned long wbefore = 0;
                int done_before = ndone;
                for (int w = 0; w < 32; w++) {
                    wbefore += warp_gen[w];
                }
                for (int i = 0; i < (int)block.x; i++) {
                    int t = ascending ? i : (int)block.x - 1 - i;
                    if (!fibers[t].done) {
                        cur = t;
                        threadIdx = dim3((unsigned)t);
                        ctx_switch(&sched, &fibers[t].ctx);
                    }
                }
                unsigned long wafter = 0;
                for (int w = 0; w < 32; w++) {
                    wafter += warp_gen[w];
                }
                if (ndone == done_before && block_gen == before && wafter == wbefore) {
                    fprintf(stderr,
                            "cuda_emu: block (%u, %u) of %u threads cannot go on: its threads "
                            "wait at barriers that cannot complete\n",
                            bx, by, block.x);
                    abort();
                }
            }
        }
    }
}
} // namespace cuda_emu

#define LLAMA_LAUNCH(_kernel, _grid, _block, _smem, ...)                                           \
    cuda_emu::launch(dim3(_grid), dim3(_block), (_smem), [&] { _kernel(__VA_ARGS__); })

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

/* ---- cuBLAS: column-major GEMMs as plain loops -------------------------------------------- */

typedef struct emu_blas *cublasHandle_t;
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

inline cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    static int dummy;
    *h = (cublasHandle_t)&dummy;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    return CUBLAS_STATUS_SUCCESS;
}
inline const char *cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS         ? "success"
           : s == CUBLAS_STATUS_NOT_SUPPORTED ? "not supported"
                                              : "invalid value";
}

namespace cuda_emu
{
inline float elem(const void *p, cudaDataType_t t, size_t i)
{
    return t == CUDA_R_32F ? ((const float *)p)[i]
                           : __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

inline void set(void *p, cudaDataType_t t, size_t i, float v)
{
    if (t == CUDA_R_32F) {
        ((float *)p)[i] = v;
    } else {
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    }
}

/* C (m,n) = alpha op(A) op(B) + beta C, column-major; C is not read when beta is 0 */
inline cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           float alpha, const void *A, cudaDataType_t at, int lda, const void *B,
                           cudaDataType_t bt, int ldb, float beta, void *C, cudaDataType_t ct,
                           int ldc)
{
    if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float s = 0.0f;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? elem(A, at, i + (size_t)l * lda)
                                            : elem(A, at, l + (size_t)i * lda);
                float b = tb == CUBLAS_OP_N ? elem(B, bt, l + (size_t)j * ldb)
                                            : elem(B, bt, j + (size_t)l * ldb);
                s += a * b;
            }
            size_t c = i + (size_t)j * ldc;
            set(C, ct, c, alpha * s + (beta != 0.0f ? beta * elem(C, ct, c) : 0.0f));
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}
} // namespace cuda_emu

inline cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *alpha, const void *A,
                                   cudaDataType_t at, int lda, const void *B, cudaDataType_t bt,
                                   int ldb, const void *beta, void *C, cudaDataType_t ct, int ldc,
                                   cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    return cuda_emu::gemm(ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb,
                          *(const float *)beta, C, ct, ldc);
}

inline cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const void *alpha, const void *A, cudaDataType_t at,
                           int lda, long long sa, const void *B, cudaDataType_t bt, int ldb,
                           long long sb, const void *beta, void *C, cudaDataType_t ct, int ldc,
                           long long sc, int batch, cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    size_t ea = at == CUDA_R_32F ? 4 : 2, eb = bt == CUDA_R_32F ? 4 : 2;
    size_t ec = ct == CUDA_R_32F ? 4 : 2;

    for (int i = 0; i < batch; i++) {
        cublasStatus_t st =
            cuda_emu::gemm(ta, tb, m, n, k, *(const float *)alpha, (const char *)A + i * sa * ea,
                           at, lda, (const char *)B + i * sb * eb, bt, ldb, *(const float *)beta,
                           (char *)C + i * sc * ec, ct, ldc);
        if (st != CUBLAS_STATUS_SUCCESS) {
            return st;
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuBLASLt: descriptors as structs, products through the same loops ---------------------- */

typedef struct emu_lt *cublasLtHandle_t;
typedef enum {
    CUBLASLT_MATMUL_DESC_TRANSA = 3,
    CUBLASLT_MATMUL_DESC_TRANSB = 4
} cublasLtMatmulDescAttributes_t;
typedef enum {
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
} cublasLtMatmulPreferenceAttributes_t;

struct emu_lt_desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t trans[2]; /* A's, B's (cublasOperation_t, as the attributes' int32) */
};
struct emu_lt_layout {
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
};
struct emu_lt_pref {
    uint64_t max_ws;
    uint32_t align[4]; /* A, B, C, D; cuBLASLt's default is 256 bytes */
};
typedef emu_lt_desc *cublasLtMatmulDesc_t;
typedef emu_lt_layout *cublasLtMatrixLayout_t;
typedef emu_lt_pref *cublasLtMatmulPreference_t;
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    static int dummy;
    *h = (cublasLtHandle_t)&dummy;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                               cudaDataType_t scale)
{
    *d = new emu_lt_desc{c, scale, {CUBLAS_OP_N, CUBLAS_OP_N}};
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    delete d;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                     cublasLtMatmulDescAttributes_t a,
                                                     const void *buf, size_t bytes)
{
    if (buf == NULL || bytes != sizeof(int32_t) ||
        (a != CUBLASLT_MATMUL_DESC_TRANSA && a != CUBLASLT_MATMUL_DESC_TRANSB)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    memcpy(&d->trans[a == CUBLASLT_MATMUL_DESC_TRANSB], buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t t,
                                                 uint64_t rows, uint64_t cols, int64_t ld)
{
    if (ld < (int64_t)rows) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *l = new emu_lt_layout{t, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    delete l;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    *p = new emu_lt_pref{0, {256, 256, 256, 256}};
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    delete p;
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                           cublasLtMatmulPreferenceAttributes_t a,
                                                           const void *buf, size_t bytes)
{
    if (buf == NULL) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && bytes == sizeof(uint64_t)) {
        memcpy(&p->max_ws, buf, bytes);
    } else if (a >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
               a <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES && bytes == sizeof(uint32_t)) {
        memcpy(&p->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, bytes);
    } else {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

namespace cuda_emu
{
/* the workspace the emulated algorithms ask for: some, so that a missing one shows */
const uint64_t lt_ws_need = 1 << 20;
const uint64_t lt_magic = 0x5eed1a7b1a5u;

/* the product's m, n, k from the layouts and transposes; false where they disagree */
inline bool lt_dims(const emu_lt_desc *d, const emu_lt_layout *a, const emu_lt_layout *b,
                    const emu_lt_layout *c, const emu_lt_layout *dd, int *m, int *n, int *k)
{
    uint64_t am = d->trans[0] == CUBLAS_OP_N ? a->rows : a->cols;
    uint64_t ak = d->trans[0] == CUBLAS_OP_N ? a->cols : a->rows;
    uint64_t bk = d->trans[1] == CUBLAS_OP_N ? b->rows : b->cols;
    uint64_t bn = d->trans[1] == CUBLAS_OP_N ? b->cols : b->rows;

    if (am != c->rows || bn != c->cols || ak != bk || c->rows != dd->rows || c->cols != dd->cols ||
        c->type != dd->type || c->ld != dd->ld) {
        return false;
    }
    *m = (int)am;
    *n = (int)bn;
    *k = (int)ak;
    return true;
}

/* the types cuBLASLt multiplies in f32 (the ones sharc-llama uses): f32 throughout, or bf16
 * A and B into bf16 or f32 C */
inline bool lt_types(const emu_lt_desc *d, const emu_lt_layout *a, const emu_lt_layout *b,
                     const emu_lt_layout *c)
{
    return d->compute == CUBLAS_COMPUTE_32F && d->scale == CUDA_R_32F && a->type == b->type &&
           (a->type == CUDA_R_32F ? c->type == CUDA_R_32F : true);
}

inline uint32_t lt_align(const void *p)
{
    uint32_t a = 1;

    while (a < 256 && ((uintptr_t)p & a) == 0) {
        a <<= 1;
    }
    return a;
}
} // namespace cuda_emu

inline cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                               cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                               cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t pref,
                               int requested, cublasLtMatmulHeuristicResult_t *results, int *count)
{
    int m, n, k;
    const char *none = getenv("SHARCTEST_EMU_LT_NOALGO");

    if (requested < 1 || results == NULL || count == NULL ||
        !cuda_emu::lt_dims(d, a, b, c, dd, &m, &n, &k)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *count = 0;
    if (!cuda_emu::lt_types(d, a, b, c) || pref->max_ws < cuda_emu::lt_ws_need ||
        (none != NULL && *none != '\0')) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    memset(&results[0], 0, sizeof(results[0]));
    /* what the algorithm was chosen for, checked where it is used */
    uint64_t *v = results[0].algo.data;
    v[0] = cuda_emu::lt_magic;
    v[1] = (uint64_t)m;
    v[2] = (uint64_t)n;
    v[3] = (uint64_t)k;
    v[4] = (uint64_t)d->trans[0] | (uint64_t)d->trans[1] << 8;
    v[5] = (uint64_t)pref->align[0] | (uint64_t)pref->align[1] << 16 |
           (uint64_t)pref->align[2] << 32 | (uint64_t)pref->align[3] << 48;
    results[0].workspaceSize = cuda_emu::lt_ws_need;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                                     const void *A, cublasLtMatrixLayout_t a, const void *B,
                                     cublasLtMatrixLayout_t b, const void *beta, const void *C,
                                     cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t dd,
                                     const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes,
                                     cudaStream_t s)
{
    int m, n, k;
    uintptr_t ws_start = 0;
    size_t ws_len = 0;

    if (algo == NULL || !cuda_emu::lt_dims(d, a, b, c, dd, &m, &n, &k) ||
        !cuda_emu::lt_types(d, a, b, c)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const uint64_t *v = algo->data;
    if (v[0] != cuda_emu::lt_magic || v[1] != (uint64_t)m || v[2] != (uint64_t)n ||
        v[3] != (uint64_t)k || v[4] != ((uint64_t)d->trans[0] | (uint64_t)d->trans[1] << 8)) {
        return CUBLAS_STATUS_INVALID_VALUE; /* an algorithm chosen for another product */
    }
    /* pointers less aligned than the heuristic was told: its algorithm may not take them */
    const void *ptrs[4] = {A, B, C, D};
    for (int i = 0; i < 4; i++) {
        if (cuda_emu::lt_align(ptrs[i]) < (uint32_t)((v[5] >> (16 * i)) & 0xffff)) {
            return CUBLAS_STATUS_INVALID_VALUE;
        }
    }
    if (ws_bytes < cuda_emu::lt_ws_need ||
        cuda_emu::mem_find(ws, &ws_start, &ws_len) != cuda_emu::MEM_DEVICE ||
        (uintptr_t)ws + ws_bytes > ws_start + ws_len) {
        return CUBLAS_STATUS_INVALID_VALUE; /* the workspace must be device memory */
    }
    float bt = *(const float *)beta;
    size_t ec = c->type == CUDA_R_32F ? 4 : 2;
    if (C != D && bt != 0.0f) {
        for (uint64_t j = 0; j < c->cols; j++) {
            memmove((char *)D + j * dd->ld * ec, (const char *)C + j * c->ld * ec, c->rows * ec);
        }
    }
    cublasOperation_t ta = (cublasOperation_t)d->trans[0], tb = (cublasOperation_t)d->trans[1];
    return cuda_emu::gemm(ta, tb, m, n, k, *(const float *)alpha, A, a->type, (int)a->ld, B,
                          b->type, (int)b->ld, bt, D, dd->type, (int)dd->ld);
}

#endif
