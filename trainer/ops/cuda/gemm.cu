/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/gemm.cu: the products of the linear layers through cuBLASLt: row-major
 * buffers seen as their column-major transposes, the transposes in the descriptors (no
 * transposing copies), act-dtype inputs, f32 accumulation, an algorithm from cuBLASLt's
 * heuristic kept per shape with a 32 MiB workspace; cublasGemmEx where cuBLASLt offers none.
 * Not here: attention's batched products (attn.cu) and the peak's measurement (cuda.cu).
 */
#include "cuda.cuh"

#include <string.h>

extern "C" {
#include "../../util.h"
}

namespace llama_cuda
{

/*
 * Floor: a product of (M,K) by (K,N) is 2 M N K FLOPs over the bf16 dense rate (an H100
 * SXM's 989 TFLOP/s, data sheet; the profile measures the rate it reaches at start), since
 * its (M K + K N + M N) elements move in far less time at the shapes of a Llama block. The
 * workspace (GEMM_WORKSPACE_BYTES, host.h) lets cuBLASLt split K (the weight gradients' K is
 * the token count N) across more thread blocks than the output's tiles alone would fill.
 */
/* shapes a step uses: 7 per block forward and backward, the head's, with alignments */
#define GEMM_PLANS 64

/* one product's shape: column-major C (m,n) = op(A) op(B) + beta C, and what decides its plan */
typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc;
    int abtype, ctype; /* cudaDataType_t of A and B, of C */
    int align[3];      /* bytes A, B and C are aligned to (at most 256): the heuristic's rule */
    int accumulate;    /* beta 1: C is read */
} gemm_shape_t;

typedef struct {
    gemm_shape_t shape;
    int usable; /* 0: cuBLASLt offered no algorithm (cublasGemmEx computes this shape) */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} gemm_plan_t;

static gemm_plan_t plans[GEMM_PLANS];
static int nplans, plans_full_logged;

static int align_of(const void *p)
{
    uintptr_t v = (uintptr_t)p;
    int a = 1;

    while (a < 256 && (v & (uintptr_t)a) == 0) {
        a <<= 1;
    }
    return a;
}

static void plan_release(gemm_plan_t *p)
{
    if (p->desc != NULL) {
        cublasLtMatmulDescDestroy(p->desc);
    }
    if (p->a != NULL) {
        cublasLtMatrixLayoutDestroy(p->a);
    }
    if (p->b != NULL) {
        cublasLtMatrixLayoutDestroy(p->b);
    }
    if (p->c != NULL) {
        cublasLtMatrixLayoutDestroy(p->c);
    }
    memset(p, 0, sizeof(*p));
}

/* the descriptors of @p s and the heuristic's first algorithm: false where it offers none */
static bool plan_make(gemm_plan_t *p, const gemm_shape_t *s)
{
    cublasOperation_t ta = (cublasOperation_t)s->ta, tb = (cublasOperation_t)s->tb;
    cudaDataType_t abt = (cudaDataType_t)s->abtype, ct = (cudaDataType_t)s->ctype;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t result;
    size_t ws = GEMM_WORKSPACE_BYTES;
    uint32_t align[3] = {(uint32_t)s->align[0], (uint32_t)s->align[1], (uint32_t)s->align[2]};
    int found = 0;

    memset(&result, 0, sizeof(result));
    p->shape = *s;
    /* the stored shapes of A and B: (rows, cols) before the transpose */
    if (cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&p->a, abt, ta == CUBLAS_OP_N ? s->m : s->k,
                                   ta == CUBLAS_OP_N ? s->k : s->m,
                                   s->lda) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&p->b, abt, tb == CUBLAS_OP_N ? s->k : s->n,
                                   tb == CUBLAS_OP_N ? s->n : s->k,
                                   s->ldb) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&p->c, ct, s->m, s->n, s->ldc) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof(ws)) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                             &align[0],
                                             sizeof(align[0])) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                             &align[1],
                                             sizeof(align[1])) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                             &align[2],
                                             sizeof(align[2])) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                             &align[2],
                                             sizeof(align[2])) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoGetHeuristic(g.lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result,
                                       &found) != CUBLAS_STATUS_SUCCESS) {
        found = 0;
    }
    if (pref != NULL) {
        cublasLtMatmulPreferenceDestroy(pref);
    }
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS ||
        result.workspaceSize > GEMM_WORKSPACE_BYTES) {
        return false;
    }
    p->algo = result.algo;
    return true;
}

/* the plan of @p s, made at its first use; NULL: no cuBLASLt for it (cublasGemmEx) */
static const gemm_plan_t *plan_of(const gemm_shape_t *s)
{
    for (int i = 0; i < nplans; i++) {
        if (memcmp(&plans[i].shape, s, sizeof(*s)) == 0) {
            return plans[i].usable ? &plans[i] : NULL;
        }
    }
    if (g.lt == NULL || g.lt_ws == NULL) {
        return NULL;
    }
    if (nplans == GEMM_PLANS) {
        /* shapes past the table's are heuristic-less (a table that small only fills when
         * the run changes shapes, which sharc-llama's do not) */
        if (!plans_full_logged) {
            llama_info("cuda: more than %d product shapes; the others through cublasGemmEx",
                       GEMM_PLANS);
            plans_full_logged = 1;
        }
        return NULL;
    }
    gemm_plan_t *p = &plans[nplans++];
    if (!plan_make(p, s)) {
        plan_release(p);
        p->shape = *s; /* remembered as heuristic-less */
        return NULL;
    }
    p->usable = 1;
    return p;
}

void gemm_teardown(void)
{
    for (int i = 0; i < nplans; i++) {
        plan_release(&plans[i]);
    }
    nplans = 0;
    plans_full_logged = 0;
}

/*
 * C (m,n) = op(A) op(B) + (accumulate ? C : 0), column-major, A and B of type @p abt, C of
 * @p ct, accumulating in f32: cuBLASLt with the shape's plan, cublasGemmEx without one.
 */
static void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A,
                 int lda, const void *B, int ldb, cudaDataType_t abt, void *C, int ldc,
                 cudaDataType_t ct, int accumulate, const char *what)
{
    const float one = 1.0f, zero = 0.0f;
    gemm_shape_t s;

    if (g.failed) {
        return;
    }
    memset(&s, 0, sizeof(s)); /* (compared as bytes) */
    s.ta = ta;
    s.tb = tb;
    s.m = m;
    s.n = n;
    s.k = k;
    s.lda = lda;
    s.ldb = ldb;
    s.ldc = ldc;
    s.abtype = abt;
    s.ctype = ct;
    s.align[0] = align_of(A);
    s.align[1] = align_of(B);
    s.align[2] = align_of(C);
    s.accumulate = accumulate;
    const gemm_plan_t *p = plan_of(&s);
    if (p != NULL) {
        /* D = C: in place */
        ok_blas(cublasLtMatmul(g.lt, p->desc, &one, A, p->a, B, p->b, accumulate ? &one : &zero, C,
                               p->c, C, p->c, &p->algo, g.lt_ws, GEMM_WORKSPACE_BYTES, g.stream),
                what);
        return;
    }
    ok_blas(cublasGemmEx(g.blas, ta, tb, m, n, k, &one, A, abt, lda, B, abt, ldb,
                         accumulate ? &one : &zero, C, ct, ldc, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            what);
}

/* ---- the linear layers' products ------------------------------------------------------------- */

/*
 * out (N,Cout) = in (N,Cin) @ w^T. Column-major, out^T (Cout,N) = w (Cin,Cout)^T . in^T
 * (Cin,N): w's rows of Cin are the columns of a (Cin,Cout) matrix, transposed.
 */
template <typename T>
void matmul_fwd(float *out, const float *in, const float *w, int N, int Cin, int Cout)
{
    const cudaDataType_t t = dtype_of<T>::cuda;

    gemm(CUBLAS_OP_T, CUBLAS_OP_N, Cout, N, Cin, w, Cin, in, Cin, t, out, Cout, t, 0,
         "matmul forward");
}

/*
 * din (N,Cin) = dout (N,Cout) @ w: din^T (Cin,N) = w^T (Cin,Cout) . dout^T (Cout,N).
 * dw (Cout,Cin) += dout^T @ in: dw^T (Cin,Cout) += in^T (Cin,N) . dout (N,Cout), written in
 * f32 (the gradient dtype) from act-dtype inputs.
 */
template <typename T>
void matmul_bwd(float *din, float *dw, const float *dout, const float *in, const float *w, int N,
                int Cin, int Cout, int din_add)
{
    const cudaDataType_t t = dtype_of<T>::cuda;

    if (din != NULL) {
        gemm(CUBLAS_OP_N, CUBLAS_OP_N, Cin, N, Cout, w, Cin, dout, Cout, t, din, Cin, t, din_add,
             "matmul backward (input)");
    }
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, Cin, Cout, N, in, Cin, dout, Cout, t, dw, Cin, CUDA_R_32F, 1,
         "matmul backward (weight)");
}

template void matmul_fwd<float>(float *, const float *, const float *, int, int, int);
template void matmul_fwd<bf16>(float *, const float *, const float *, int, int, int);
template void matmul_bwd<float>(float *, float *, const float *, const float *, const float *, int,
                                int, int, int);
template void matmul_bwd<bf16>(float *, float *, const float *, const float *, const float *, int,
                               int, int, int);

} // namespace llama_cuda
