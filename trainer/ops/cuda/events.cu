/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/events.cu: the table's timing marks (ops.h event_*): CUDA events recorded
 * on the one stream, read after the host has waited for the stream anyway. What they time and
 * when they are read is the profile's (model/prof.c); here only the runtime calls.
 */
#include "cuda.cuh"

namespace llama_cuda
{

void *event_create(void)
{
    cudaEvent_t e = NULL;

    /* timing events (no cudaEventDisableTiming); blocking sync is not asked for: a read
     * after the step's own wait finds them complete */
    return ok(cudaEventCreate(&e), "cudaEventCreate") ? (void *)e : NULL;
}

void event_destroy(void *event)
{
    if (event != NULL) {
        cudaEventDestroy((cudaEvent_t)event);
    }
}

void event_record(void *event)
{
    ok(cudaEventRecord((cudaEvent_t)event, g.stream), "cudaEventRecord");
}

double event_elapsed(void *from, void *to)
{
    float ms = 0.0f;

    if (!ok(cudaEventSynchronize((cudaEvent_t)to), "cudaEventSynchronize") ||
        !ok(cudaEventElapsedTime(&ms, (cudaEvent_t)from, (cudaEvent_t)to),
            "cudaEventElapsedTime")) {
        return 0.0;
    }
    return 1e-3 * (double)ms;
}

} // namespace llama_cuda
