/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/optim.cu: the optimizer on the f32 shards in device memory: the sum of
 * squares of the gradients (f64, per-block partials added in a fixed order, so the norm
 * repeats bit for bit) and AdamW as model/optim.c describes it, the clip factor read on the device
 * from the all-reduced sum, so no host waits between the norm and the update.
 */
#include "cuda.cuh"

namespace llama_cuda
{

__global__ void sumsq_kernel(double *partial, const float *x, size_t n)
{
    __shared__ double shared[32];
    double s = 0.0;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        s += (double)x[i] * x[i];
    }
    s = block_sum(s, shared);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s;
    }
}

void sumsq(double *acc, const float *x, size_t n)
{
    unsigned nb = llama_geom_blocks(n, LLAMA_GEOM_THREADS, LLAMA_GEOM_MAX_PARTIALS);
    double *partial = (double *)scratch(SCRATCH_PARTIALS, nb * sizeof(double));

    if (partial == NULL || n == 0) {
        return;
    }
    LLAMA_LAUNCH(sumsq_kernel, nb, LLAMA_GEOM_THREADS, 0, partial, x, n);
    launched("gradient sum of squares");
    LLAMA_LAUNCH(add_sum_kernel<double>, 1, 1024, 0, acc, partial, (int)nb);
    launched("gradient sum of squares (partials)");
}

/*
 * the AdamW of ops/cpu/cpu.c element by element, one pass over the shard (the weight decay,
 * the clip and the moments fused); the decay ranges do not overlap.
 * Floor: p, g, m, v read and p, m, v written: 28 bytes a parameter at the copy rate.
 */
__global__ void adamw_kernel(llama_adamw_t a, float *p, const float *gr, float *m, float *v,
                             size_t n, const double *sumsq)
{
    float clip = llama_clip_factor(*sumsq, a.replicas, a.grad_clip);

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float pi = p[i];
        for (int r = 0; r < a.nranges; r++) {
            if (i >= a.start[r] && i - a.start[r] < a.count[r]) {
                pi *= a.keep;
            }
        }
        float gi = gr[i] * clip;
        float mi = a.beta1 * m[i] + (1.0f - a.beta1) * gi;
        float vi = a.beta2 * v[i] + (1.0f - a.beta2) * gi * gi;
        pi -= a.step_size * mi / (sqrtf(vi) / a.bc2_sqrt + a.eps);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
    }
}

void adamw(const llama_adamw_t *a, float *p, const float *gr, float *m, float *v, size_t n,
           const double *sumsq)
{
    if (n == 0) {
        return;
    }
    LLAMA_LAUNCH(adamw_kernel, llama_geom_blocks(n, LLAMA_GEOM_THREADS, LLAMA_GEOM_MAX_BLOCKS),
                 LLAMA_GEOM_THREADS, 0, *a, p, gr, m, v, n, sumsq);
    launched("AdamW");
}

} // namespace llama_cuda
