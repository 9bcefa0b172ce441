/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/cuda.cu: the ops table on one GPU: the process's device, stream and cuBLAS
 * and cuBLASLt handles, memory (device buffers, scratch, page-locked staging of host arrays),
 * the bf16 peak of known GPUs for MFU, and the tables (f32; bf16 with each attention, as
 * attn_pick.cu chooses) over the products of gemm.cu and the kernels of elem.cu, attn.cu,
 * flash.cu, optim.cu and cuDNN's attention (cudnn_sdpa.cc); the state they share, and the
 * first-error rule: state.cu.
 * Everything is queued on the one stream; only to_host and to_device wait for it.
 */
#include "cuda.cuh"

#ifndef LLAMA_CUDA_EMU
#include <sharc/sharc_cuda.h>
#endif
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "../../util.h"
}

namespace llama_cuda
{

/* ---- memory ---------------------------------------------------------------------------------- */

static double mem_used_mib(void); /* device memory in use, and the high-water mark's sample */

static void log_no_memory(size_t bytes, cudaError_t err)
{
    size_t free_b = 0, total_b = 0;

    cudaGetLastError(); /* a failed allocation is not sticky; do not let it look like one */
    cudaMemGetInfo(&free_b, &total_b);
    llama_err("cuda: cannot allocate %.1f MiB on GPU %d (%s): %s; %.0f MiB free of %.0f MiB",
              (double)bytes / (1 << 20), g.device, g.name, cudaGetErrorString(err),
              (double)free_b / (1 << 20), (double)total_b / (1 << 20));
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, bytes ? bytes : 256);

    if (err != cudaSuccess) {
        log_no_memory(bytes, err);
        return NULL;
    }
    /* zero-filled, and ordered before anything the stream runs next */
    if (!ok(cudaMemsetAsync(p, 0, bytes, g.stream), "cudaMemsetAsync")) {
        cudaFree(p);
        return NULL;
    }
    mem_used_mib(); /* (the high-water mark's sample) */
    return p;
}

static void dev_free(void *p)
{
    /* cudaFree waits for the device: nothing queued can still use p */
    cudaFree(p);
}

static void dev_zero(void *x, size_t bytes)
{
    ok(cudaMemsetAsync(x, 0, bytes, g.stream), "cudaMemsetAsync");
}

static void dev_put(void *dst, const void *src, size_t bytes)
{
    if (ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g.stream), "copy to device")) {
        ok(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
    }
}

static sharc_status_t dev_get(void *dst, const void *src, size_t bytes)
{
    if (ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g.stream), "copy to host")) {
        ok(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
    }
    return g.failed ? SHARC_ERR_BACKEND : SHARC_OK;
}

/* grown in whole MiB, stream-ordered where the device can, so no step waits for it */
void *scratch(int slot, size_t bytes)
{
    size_t cap;
    void *p = NULL;
    cudaError_t err;

    if (bytes <= g.scratch_cap[slot]) {
        return g.scratch[slot];
    }
    cap = (bytes + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
    if (g.scratch[slot] != NULL) {
        if (g.async_alloc) {
            cudaFreeAsync(g.scratch[slot], g.stream);
        } else {
            cudaFree(g.scratch[slot]);
        }
        g.scratch[slot] = NULL;
        g.scratch_cap[slot] = 0;
    }
    err = g.async_alloc ? cudaMallocAsync(&p, cap, g.stream) : cudaMalloc(&p, cap);
    if (err != cudaSuccess) {
        log_no_memory(cap, err);
        g.failed = 1;
        return NULL;
    }
    g.scratch[slot] = p;
    g.scratch_cap[slot] = cap;
    mem_used_mib();
    return p;
}

/*
 * Host arrays (token ids) reach the device through page-locked slots taken in turn: the copy
 * is queued on the stream, so the host never waits for the device here; it waits only for
 * the copy out of the same slot LLAMA_CUDA_STAGE_SLOTS uploads ago, long done.
 */
const void *stage(const void *host, size_t bytes)
{
    stage_slot_t *s = &g.stage[g.next_stage];

    g.next_stage = (g.next_stage + 1) % LLAMA_CUDA_STAGE_SLOTS;
    if (!ok(cudaEventSynchronize(s->done), "cudaEventSynchronize")) {
        return NULL;
    }
    if (bytes > s->cap) {
        size_t cap = (bytes + 65535) & ~(size_t)65535;
        cudaFreeHost(s->host);
        cudaFree(s->dev); /* waits for the device: its readers are done */
        s->host = s->dev = NULL;
        s->cap = 0;
        if (!ok(cudaMallocHost(&s->host, cap), "cudaMallocHost") ||
            !ok(cudaMalloc(&s->dev, cap), "cudaMalloc")) {
            return NULL;
        }
        s->cap = cap;
    }
    memcpy(s->host, host, bytes);
    if (!ok(cudaMemcpyAsync(s->dev, s->host, bytes, cudaMemcpyHostToDevice, g.stream),
            "copy to device") ||
        !ok(cudaEventRecord(s->done, g.stream), "cudaEventRecord")) {
        return NULL;
    }
    return s->dev;
}

static sharc_status_t wait_req(sharc_request_h req)
{
    /* the stream waits on the device; the host goes on */
    sharc_status_t status = sharc_request_wait_stream(req, g.stream);

    sharc_request_free(req);
    return status;
}

/* ---- figures for the log --------------------------------------------------------------------- */

/*
 * Dense bf16 tensor-core peak, TFLOP/s, from NVIDIA's data sheets (the sparse figures halved);
 * the first name that the device's contains wins, so the specific forms come first.
 */
static const struct {
    const char *match;
    double tflops;
} known_peaks[] = {
    {"H100 PCIe", 756.5}, {"H100 NVL", 835.5}, {"H100", 989.4},      {"H200 NVL", 835.5},
    {"GH200", 989.4},     {"H200", 989.4},     {"H800 PCIe", 756.5}, {"H800", 989.4},
    {"A100", 312.0},      {"A800", 312.0},     {"L40S", 362.05},     {"GB200", 2500.0},
    {"B200", 2250.0},
};

/* A GPU not in the table: the best of a few large bf16 products through cuBLAS, measured. */
static double measure_peak(void)
{
    const int n = 8192;
    size_t bytes = (size_t)n * n * sizeof(bf16);
    void *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    const float one = 1.0f, zero = 0.0f;
    double best = 0.0;

    if (cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess &&
        cudaMalloc(&c, bytes) == cudaSuccess && cudaEventCreate(&e0) == cudaSuccess &&
        cudaEventCreate(&e1) == cudaSuccess) {
        cudaMemsetAsync(a, 0, bytes, g.stream);
        cudaMemsetAsync(b, 0, bytes, g.stream);
        for (int r = 0; r < 12; r++) {
            float ms = 0.0f;
            cudaEventRecord(e0, g.stream);
            cublasGemmEx(g.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b,
                         CUDA_R_16BF, n, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
            cudaEventRecord(e1, g.stream);
            if (cudaEventSynchronize(e1) != cudaSuccess ||
                cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
                break;
            }
            double rate = 2.0 * n * n * (double)n / (ms * 1e-3);
            best = r >= 2 && rate > best ? rate : best; /* after clocks and caches warm */
        }
    }
    cudaGetLastError(); /* an allocation that failed here is no error of the run */
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return best;
}

static double peak_flops(char *what, size_t len)
{
    for (size_t i = 0; i < sizeof(known_peaks) / sizeof(known_peaks[0]); i++) {
        if (strstr(g.name, known_peaks[i].match) != NULL) {
            snprintf(what, len, "%s, bf16 dense peak from its name", g.name);
            return known_peaks[i].tflops * 1e12;
        }
    }
    snprintf(what, len,
             "%s (not a GPU sharc-llama knows: a bf16 product measured; "
             "--peak-tflops gives the data sheet's)",
             g.name);
    return measure_peak();
}

/* the most device memory seen in use: the high-water mark, with a sample after each of the
 * table's allocations (memory others allocate, the shard engine's, stays: later samples see
 * it) */
static double mem_peak_seen;

static double mem_used_mib(void)
{
    size_t free_b = 0, total_b = 0;
    double used = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess
                      ? (double)(total_b - free_b) / (1 << 20)
                      : 0.0;

    mem_peak_seen = used > mem_peak_seen ? used : mem_peak_seen;
    return used;
}

static double mem_peak_mib(void)
{
    mem_used_mib();
    return mem_peak_seen;
}

/* ---- the tables ------------------------------------------------------------------------------ */

/* filled at the first open: [0] f32, [1] bf16 with the tiled attention, [2] bf16 with the
 * probabilities materialized, [3] bf16 with cuDNN's attention (a build with cuDNN) */
enum { TABLE_F32, TABLE_FLASH, TABLE_GEMM, TABLE_CUDNN, TABLE_LAST };
static llama_ops_t tables[TABLE_LAST];

template <typename T> static void fill_table(llama_ops_t *t, const char *name, sharc_dtype_t dt)
{
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->act_dtype = dt;
    /* (emulated: libsharc's CUDA layer runs over the same emulation, tests/gpu_emu.h) */
    t->memtype = SHARC_MEMTYPE_CUDA;
    t->alloc = dev_alloc;
    t->free = dev_free;
    t->zero = dev_zero;
    t->to_device = dev_put;
    t->to_host = dev_get;
    t->cast = cast;
    t->acc = acc;
    t->wait = wait_req;
    t->matmul_fwd = matmul_fwd<T>;
    t->matmul_bwd = matmul_bwd<T>;
    t->rmsnorm_fwd = rmsnorm_fwd<T>;
    t->rmsnorm_bwd = rmsnorm_bwd<T>;
    t->rope_fwd = rope_fwd<T>;
    t->rope_bwd = rope_bwd<T>;
    t->attention_fwd = attention_fwd<T>;
    t->attention_bwd = attention_bwd<T>;
    t->swiglu_fwd = swiglu_fwd<T>;
    t->swiglu_bwd = swiglu_bwd<T>;
    t->embed_fwd = embed_fwd<T>;
    t->embed_bwd = embed_bwd<T>;
    t->xent = xent<T>;
    t->add = add<T>;
    t->sumsq = sumsq;
    t->adamw = adamw;
    t->peak_flops = peak_flops;
    t->mem_used_mib = mem_used_mib;
    t->mem_peak_mib = mem_peak_mib;
    t->event_create = event_create;
    t->event_destroy = event_destroy;
    t->event_record = event_record;
    t->event_elapsed = event_elapsed;
}

static void teardown(void)
{
    if (g.stream != NULL) {
        cudaStreamSynchronize(g.stream);
    }
#ifdef LLAMA_CUDA_CUDNN
    cudnn_teardown(); /* its plans and handle, before the stream they run on */
#endif
    for (int i = 0; i < SCRATCH_LAST; i++) {
        cudaFree(g.scratch[i]);
    }
    for (int i = 0; i < LLAMA_CUDA_STAGE_SLOTS; i++) {
        cudaFreeHost(g.stage[i].host);
        cudaFree(g.stage[i].dev);
        if (g.stage[i].done != NULL) {
            cudaEventDestroy(g.stage[i].done);
        }
    }
    gemm_teardown(); /* its plans, before the handle they were made with */
    cudaFree(g.lt_ws);
    if (g.lt != NULL) {
        cublasLtDestroy(g.lt);
    }
    if (g.blas != NULL) {
        cublasDestroy(g.blas);
    }
    if (g.stream != NULL) {
        cudaStreamDestroy(g.stream);
    }
    free(g.sort_keys);
    free(g.buckets);
    memset(&g, 0, sizeof(g));
}

static sharc_status_t setup(int device)
{
    cudaDeviceProp prop;
    int pools = 0;

    g.device = device;
    if (!ok(cudaSetDevice(device), "cudaSetDevice") ||
        !ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties") ||
        !ok(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "stream create") ||
        !ok_blas(cublasCreate(&g.blas), "cublasCreate") ||
        !ok_blas(cublasSetStream(g.blas, g.stream), "cublasSetStream")) {
        return SHARC_ERR_BACKEND;
    }
    /* cuBLASLt for the linear layers' products (gemm.cu); without it, or without its
     * workspace, cublasGemmEx computes them all */
    if (cublasLtCreate(&g.lt) != CUBLAS_STATUS_SUCCESS) {
        g.lt = NULL;
        llama_info("cuda: cuBLASLt does not start here; the products go through cublasGemmEx");
    } else if (cudaMalloc(&g.lt_ws, GEMM_WORKSPACE_BYTES) != cudaSuccess) {
        cudaGetLastError(); /* not sticky: the run goes on without the workspace */
        g.lt_ws = NULL;
        llama_info("cuda: no room for cuBLASLt's workspace; the products go through "
                   "cublasGemmEx");
    }
    snprintf(g.name, sizeof(g.name), "%s", prop.name);
    if (prop.major < 8) {
        llama_err("--device cuda: GPU %d (%s) is compute capability %d.%d; sharc-llama's bf16 "
                  "kernels need 8.0 or newer",
                  device, g.name, prop.major, prop.minor);
        return SHARC_ERR_UNSUPPORTED;
    }
    cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device);
    g.async_alloc = pools != 0;
    if (cudaDeviceGetAttribute(&g.max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
        cudaSuccess) {
        cudaGetLastError();
        g.max_smem = 48 << 10; /* what every block may use */
    }
    for (int i = 0; i < LLAMA_CUDA_STAGE_SLOTS; i++) {
        if (!ok(cudaEventCreateWithFlags(&g.stage[i].done, cudaEventDisableTiming),
                "cudaEventCreate")) {
            return SHARC_ERR_BACKEND;
        }
    }
    fill_table<float>(&tables[TABLE_F32], "cuda-f32", SHARC_DTYPE_F32);
    fill_table<bf16>(&tables[TABLE_FLASH], "cuda-bf16", SHARC_DTYPE_BF16);
    tables[TABLE_FLASH].attention_fwd = attention_fwd_flash;
    tables[TABLE_FLASH].attention_bwd = attention_bwd_flash;
    tables[TABLE_FLASH].attention_bytes = attention_bytes_flash;
    fill_table<bf16>(&tables[TABLE_GEMM], "cuda-bf16-gemm-attention", SHARC_DTYPE_BF16);
#ifdef LLAMA_CUDA_CUDNN
    fill_table<bf16>(&tables[TABLE_CUDNN], "cuda-bf16-cudnn-attention", SHARC_DTYPE_BF16);
    tables[TABLE_CUDNN].attention_fwd = attention_fwd_cudnn;
    tables[TABLE_CUDNN].attention_bwd = attention_bwd_cudnn;
    tables[TABLE_CUDNN].attention_bytes = attention_bytes_cudnn;
#endif
    return SHARC_OK;
}

} // namespace llama_cuda

using namespace llama_cuda;

extern "C" sharc_status_t llama_cuda_pick_device(void)
{
    static const char *const vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                       "MPI_LOCALRANKID"};
    int ndev = 0, local = 0;
    cudaError_t err = cudaGetDeviceCount(&ndev);

    if (err != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        llama_err("--device cuda: no CUDA device is usable here (%s)",
                  err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return SHARC_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0') {
            local = atoi(v);
            break;
        }
    }
    err = cudaSetDevice((local < 0 ? 0 : local) % ndev);
    if (err != cudaSuccess) {
        llama_err("--device cuda: cannot use GPU %d: %s", local % ndev, cudaGetErrorString(err));
        return SHARC_ERR_BACKEND;
    }
    return SHARC_OK;
}

extern "C" sharc_status_t llama_cuda_open(sharc_comm_h comm, sharc_dtype_t act_dtype,
                                          llama_cuda_attention_t attention,
                                          const llama_cuda_attn_shape_t *shape,
                                          const llama_ops_t **ops_p, void **stream_p)
{
    int ndev = 0, device;
    cudaError_t err;
    sharc_status_t status;
    llama_cuda_attention_t picked;

    if (act_dtype != SHARC_DTYPE_F32 && act_dtype != SHARC_DTYPE_BF16) {
        llama_err("--device cuda computes in f32 or bf16, not %s",
                  sharc_dtype_name(act_dtype) ? sharc_dtype_name(act_dtype) : "?");
        return SHARC_ERR_INVALID;
    }
    err = cudaGetDeviceCount(&ndev);
    if (err != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        llama_err("--device cuda: no CUDA device is usable here (%s)",
                  err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return SHARC_ERR_UNSUPPORTED;
    }
    device = (comm != NULL ? sharc_comm_local_rank(comm) : 0) % ndev;
    if (g.refs == 0) {
        int current = 0;
        cudaGetDevice(&current);
        if (comm != NULL && current != device) {
            /* the communicator's NCCL is on the current device, not this rank's */
            llama_err("--device cuda: local rank %d computes on GPU %d, but its communicator "
                      "was made on GPU %d: set LOCAL_RANK for each process (torchrun, mpirun "
                      "and srun set theirs), or one visible GPU per process",
                      sharc_comm_local_rank(comm), device, current);
            return SHARC_ERR_INVALID;
        }
        if (comm != NULL && sharc_comm_local_size(comm) > ndev) {
            llama_info("--device cuda: %d ranks on this node share %d GPU(s); NCCL needs one GPU "
                       "per rank (SHARC_CUDA_BACKEND=staged runs them through host memory)",
                       sharc_comm_local_size(comm), ndev);
        }
        status = setup(device);
        if (status != SHARC_OK) {
            teardown();
            return status;
        }
    } else if (device != g.device) {
        llama_err("--device cuda: GPU %d asked for, but this process already computes on GPU %d",
                  device, g.device);
        return SHARC_ERR_INVALID;
    }
    picked = attention_pick(act_dtype, attention, shape);
    if (picked == LLAMA_CUDA_ATTENTION_AUTO) {
        if (g.refs == 0) {
            teardown();
        }
        return SHARC_ERR_UNSUPPORTED;
    }
    /* collectives on device buffers of this communicator follow the compute stream */
    if (comm != NULL && sharc_comm_set_cuda_stream(comm, g.stream) != SHARC_OK) {
        llama_err("--device cuda: the communicator does not take the compute stream");
        if (g.refs == 0) {
            teardown();
        }
        return SHARC_ERR_BACKEND;
    }
    g.refs++;
    *ops_p = &tables[act_dtype == SHARC_DTYPE_F32           ? TABLE_F32
                     : picked == LLAMA_CUDA_ATTENTION_CUDNN ? TABLE_CUDNN
                     : picked == LLAMA_CUDA_ATTENTION_FLASH ? TABLE_FLASH
                                                            : TABLE_GEMM];
    *stream_p = g.stream;
    return SHARC_OK;
}

extern "C" void llama_cuda_close(void)
{
    if (g.refs > 0 && --g.refs == 0) {
        teardown();
    }
}
