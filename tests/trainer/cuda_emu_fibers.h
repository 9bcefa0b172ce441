/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_emu_fibers.h: how the host emulation of CUDA (cuda_emu.h, which includes it after
 * dim3 and the thread indices) runs a launch: a block's threads as fibers run in turn on one
 * thread, its barriers and warp exchanges, blocks one after another. Not included alone.
 */
#ifndef SHARC_TEST_CUDA_EMU_FIBERS_H
#define SHARC_TEST_CUDA_EMU_FIBERS_H

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

#endif
